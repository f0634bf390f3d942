"""The suite's JVM census tells a JVM from the tools that start one (tests/jvm_census.py): the
count item 8 of issue 34 is judged by must not count Spark's launcher as a driver."""

from jvm_census import LAUNCHER, TOOL, kind_of

JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"


def test_each_kind_is_told_by_its_main_class():
    submit = [
        JAVA,
        "-cp",
        "/x/jars/*",
        "-Xmx1g",
        "org.apache.spark.deploy.SparkSubmit",
        "--conf",
        "a=b",
        "pyspark-shell",
    ]
    assert kind_of(submit) == "Spark driver"
    assert (
        kind_of([JAVA, "-Xmx1g", "-cp", "k/*", "kafka.Kafka", "server.properties"])
        == "Kafka broker"
    )
    assert kind_of(
        [JAVA, "-cp", "j/*", "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:7077"]
    ) == ("Spark cluster master/worker")
    assert (
        kind_of([JAVA, "-cp", "j/*", "org.apache.spark.executor.CoarseGrainedExecutorBackend"])
        == "Spark executor"
    )
    assert kind_of([JAVA, "-cp", "k/*", "kafka.tools.StorageTool", "format"]) == TOOL


def test_spark_s_launcher_is_a_tool_though_it_names_the_class_it_launches():
    """spark-class runs ``java ... org.apache.spark.launcher.Main <main class> ...`` to build the
    real command, then execs it: the launcher names SparkSubmit (or Master, Worker) too."""
    for main in ("org.apache.spark.deploy.SparkSubmit", "org.apache.spark.deploy.master.Master"):
        launcher = [
            JAVA,
            "-Xmx128m",
            "-cp",
            "/x/jars/*",
            "org.apache.spark.launcher.Main",
            main,
            "--conf",
            "a=b",
        ]
        assert kind_of(launcher) == LAUNCHER
