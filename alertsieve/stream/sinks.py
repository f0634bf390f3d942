"""Where a batch's results go: a Kafka topic per filter, Delta tables, the quarantine.

Kafka outputs forward the original alert bytes (no re-encode) so a consumer decodes them exactly
like the input; one write per batch serves every filter through the per-row ``topic`` column.
Delta writes carry (txnAppId, txnVersion=batch id): a batch replayed after a crash is skipped by
Delta itself, which is what makes them exactly-once.
"""

from __future__ import annotations

from collections.abc import Mapping

from alertsieve.kafka.client_security import java_conf


def kafka_options(bootstrap: str, extra: Mapping[str, str]) -> dict[str, str]:
    """Spark Kafka options: bootstrap plus ``extra`` (security settings in the Java client's
    spelling, see alertsieve.kafka.client_security) as ``kafka.key``."""
    java = java_conf(extra)
    return {"kafka.bootstrap.servers": bootstrap, **{f"kafka.{k}": v for k, v in java.items()}}


def headers(**columns):
    """Kafka headers (array<struct<key,value>>) from named string-able columns."""
    from pyspark.sql import functions as F

    return F.array(
        *[
            F.struct(F.lit(name).alias("key"), col.cast("string").cast("binary").alias("value"))
            for name, col in columns.items()
        ]
    )


def write_kafka(rows, options: Mapping[str, str]) -> None:
    """``rows`` has key, value, topic and headers columns."""
    rows.write.format("kafka").options(**options).save()


def write_delta_once(rows, path: str, app_id: str, batch_id: int) -> None:
    """Append ``rows`` once per (app_id, batch_id), as one file: matches are a few percent of a
    batch, and a Parquet writer for a Rubin alert (~400 leaf columns) is costly to open."""
    (
        rows.coalesce(1)
        .write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(path)
    )
