"""The one place a SparkSession is built, so notebooks, jobs and tests all get the same connectors
(Kafka, Avro, Delta) and the same settings for a small, loopback-only machine."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping
from contextlib import contextmanager

from alertsieve.errors import AlertsieveError
from alertsieve.spark.own_jar import session_jars
from alertsieve.spark.submit import AVRO_PLAIN_READER, java_options, spark_defaults_file

log = logging.getLogger(__name__)

#: Settings every alertsieve session gets unless the caller overrides them.
DEFAULTS: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Small machines: a few shuffle partitions beat Spark's 200 for per-batch aggregates.
    "spark.sql.shuffle.partitions": "4",
    # Delta's default of 50 snapshot partitions makes every local streaming commit slow.
    "spark.databricks.delta.snapshotPartitions": "2",
    # Match tables lead with flat columns (filter, alert id, offsets, times); statistics on
    # the nested alert behind them cost ~0.3 s per commit and buy no useful data skipping.
    "spark.databricks.delta.properties.defaults.dataSkippingNumIndexedCols": "8",
    "spark.sql.session.timeZone": "UTC",
    # Cached batches hold forwarded alert bytes (~100 KB each): Spark's default of 10,000 rows
    # per in-memory column batch would be a gigabyte on the heap at once.
    "spark.sql.inMemoryColumnarStorage.batchSize": "256",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # A Python filter's pandas UDF sees only its declared columns, but Spark queues each whole row
    # (the alert's ~100 KB bytes with it) until Python answers: 1,000 rows an Arrow batch keep
    # that queue near 100 MB a task, not the default 10,000's gigabyte.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
    # Spark keeps each Kafka consumer's last fetch (up to max.partition.fetch.bytes, 16 MB, of
    # alerts per partition) and each producer's buffer pool for the next batch, for 5 minutes by
    # default: a driver that runs several queries in a row (a notebook, `alertsieve bench`, the
    # tests' session) held 1.5 GB of a 3 GB heap in them after five benchmarks, and the next
    # job's broadcast then failed. A minute still serves a running job's every batch.
    "spark.kafka.consumer.cache.timeout": "60s",
    "spark.kafka.consumer.fetchedData.cache.timeout": "60s",
    "spark.kafka.consumer.cache.evictorThreadRunInterval": "10s",
    "spark.kafka.consumer.fetchedData.cache.evictorThreadRunInterval": "10s",
    "spark.kafka.producer.cache.timeout": "60s",
    "spark.kafka.producer.cache.evictorThreadRunInterval": "10s",
    "spark.ui.showConsoleProgress": "false",
    # Spark keeps the last 1,000 jobs, stages and SQL executions in the driver's status store, UI
    # or not, and a streaming job adds a few a minute: its heap would fill with them for hours. A
    # retained SQL execution holds its plan's description, ~0.7 MB for a query over the alert
    # view, and a hundred of them took the first 30 minutes of a million-alert soak to fill (its
    # heap after GC grew 195 to 245 MB meanwhile, then stayed flat). Twenty of each fill within
    # ten minutes and still show the recent batches; the metrics log keeps every batch.
    "spark.ui.retainedJobs": "20",
    "spark.ui.retainedStages": "20",
    "spark.sql.ui.retainedExecutions": "20",
    # Workers must run the same interpreter (and so the same installed alertsieve) as the driver.
    "spark.pyspark.python": sys.executable,
    "spark.pyspark.driver.python": sys.executable,
}

#: Only for sessions we launch ourselves: keep every Spark port on loopback.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.driver.memory": "3g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def launched_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands Python its gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_conf(
    master: str | None = None, conf: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The effective settings: defaults, then loopback and connector jars when we launch Spark,
    then the caller's ``conf`` (which always wins)."""
    settings = dict(DEFAULTS)
    if not launched_by_spark_submit():
        settings.update(LOCAL_DEFAULTS)
        settings["spark.master"] = master or os.environ.get("ALERTSIEVE_SPARK_MASTER", "local[*]")
        settings["spark.jars"] = ",".join(str(j) for j in session_jars())
        # as spark-defaults.conf would give them, were `make setup` not run since they changed
        settings["spark.driver.extraJavaOptions"] = settings["spark.executor.extraJavaOptions"] = (
            java_options()
        )
    elif master:
        settings["spark.master"] = master
    settings.update(conf or {})
    return settings


CONNECTOR_CLASSES = {
    "Kafka": "org.apache.spark.sql.kafka010.KafkaSourceProvider",
    "Avro": "org.apache.spark.sql.avro.AvroDataToCatalyst",
    "Delta": "io.delta.sql.DeltaSparkSessionExtension",
}


class ConnectorsMissing(AlertsieveError, RuntimeError):
    """spark-submit was run without the connector jars on its classpath."""


def _check_connectors(spark) -> None:
    utils = spark.sparkContext._jvm.org.apache.spark.util.Utils
    missing = [name for name, cls in CONNECTOR_CLASSES.items() if not utils.classIsLoadable(cls)]
    if missing:
        raise ConnectorsMissing(
            f"the Spark connectors for {', '.join(missing)} are not on spark-submit's classpath:"
            f" run `make setup` (it writes {spark_defaults_file()}), or pass"
            ' `--jars "$(alertsieve jars --spark)"` to spark-submit'
        )


def get_session(
    app_name: str = "alertsieve",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    log_level: str = "WARN",
):
    """Build (or return the running) SparkSession with the Kafka, Avro and Delta connectors."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    for key, value in session_conf(master, conf).items():
        builder = builder.config(key, value)
    # pyspark takes the workers' interpreter from this variable when the context is created
    # (the spark.pyspark.python setting alone does not reach local-mode workers).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if not launched_by_spark_submit():
        # Spark otherwise picks the first non-loopback interface and warns about the hostname.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if launched_by_spark_submit():
        _check_connectors(spark)
    _check_avro_reader(spark)
    return spark


def _check_avro_reader(spark) -> None:
    """Warn when the driver's Avro would cache a reader for every task's schema, for ever."""
    if spark.sparkContext._jvm.org.apache.avro.generic.GenericData.get().isFastReaderEnabled():
        log.warning(
            "Avro's fast reader is on in this Spark: a streaming job's heap will grow with every batch"
            " (AVRO-4253). Run `make setup` (it writes %s), or add %s to spark.driver.extraJavaOptions"
            " and spark.executor.extraJavaOptions",
            spark_defaults_file(),
            AVRO_PLAIN_READER,
        )


@contextmanager
def command_session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None, given=None
):
    """The session a command runs in: ``given``, or the one already running (a notebook's, a
    test's), left running; or a new one, stopped with its JVM on the way out, while this Python still answers
    the JVM's last calls (a query listener's event after a job returned, seen once as a
    Py4JNetworkException stack printed after a clean run's last line)."""
    from pyspark.sql import SparkSession

    running = given or SparkSession.getActiveSession()
    if running is not None:
        yield running
        return
    spark = get_session(app_name, master=master, conf=conf)
    try:
        yield spark
    finally:
        stop_session(spark)


def driver_heap_mb(spark) -> float:
    """The driver JVM's largest heap (what broadcasts are built in), in MB."""
    return spark._jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20


def stop_session(spark, timeout: float = 60.0) -> None:
    """Stop Spark and wait until its driver JVM has exited. ``spark.stop()`` alone leaves the JVM
    (started by pyspark for this Python process) running until Python exits, so a command that
    returned could still have Spark running behind it, talking to a broker about to go away."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if gateway is not None:
        gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None  # a later session starts a JVM of its own
    if proc is None:  # spark-submit owns the JVM: it exits when this script does
        return
    proc.stdin.close()  # the gateway exits when its parent's pipe closes
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
