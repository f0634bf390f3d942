"""Kafka client options for Spark's source and sink, and the headers of published alerts.

Kafka outputs forward the original alert bytes (no re-encode) so a consumer decodes them exactly
like the input; one sink serves every filter through the per-row ``topic`` column.
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
