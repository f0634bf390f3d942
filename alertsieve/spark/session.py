"""The one place a SparkSession is built, so notebooks, jobs and tests all get the same connectors
(Kafka, Avro, Delta) and the same settings for a small, loopback-only machine."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from alertsieve.spark.jars import spark_connector_jars

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
    "spark.ui.showConsoleProgress": "false",
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
        settings["spark.jars"] = ",".join(str(j) for j in spark_connector_jars().jars)
    elif master:
        settings["spark.master"] = master
    settings.update(conf or {})
    return settings


CONNECTOR_CLASSES = {
    "Kafka": "org.apache.spark.sql.kafka010.KafkaSourceProvider",
    "Avro": "org.apache.spark.sql.avro.AvroDataToCatalyst",
    "Delta": "io.delta.sql.DeltaSparkSessionExtension",
}


class ConnectorsMissing(RuntimeError):
    """spark-submit was run without the connector jars on its classpath."""


def spark_defaults_file() -> Path:
    """The spark-defaults.conf that pip-installed pyspark's spark-submit reads."""
    import pyspark

    conf_dir = os.environ.get("SPARK_CONF_DIR")
    return Path(conf_dir or Path(pyspark.__file__).parent / "conf") / "spark-defaults.conf"


def install_spark_defaults() -> Path:
    """Point spark-submit at the connector jars, so `spark-submit jobs/filter_stream.py` works
    with no --packages flag. Lines we did not write are kept."""
    path = spark_defaults_file()
    jars = ",".join(str(j) for j in spark_connector_jars().jars)
    kept = []
    if path.exists():
        kept = [ln for ln in path.read_text().splitlines() if not ln.startswith("spark.jars ")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([*kept, f"spark.jars {jars}"]) + "\n")
    return path


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
    return spark
