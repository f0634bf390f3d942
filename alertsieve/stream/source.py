"""The job's Kafka source: what it subscribes to, from where, how much per batch, and fetch sizes
made for ~100 KB records."""

from __future__ import annotations

from datetime import datetime

from alertsieve.stream.config import JobConfig
from alertsieve.stream.sinks import kafka_options


def source_options(cfg: JobConfig) -> dict[str, str]:
    opts = kafka_options(cfg.bootstrap, cfg.kafka_conf)
    if cfg.topic:
        opts["subscribe"] = cfg.topic
    else:
        opts["subscribePattern"] = cfg.topic_pattern
    if cfg.starting_offsets in ("earliest", "latest"):
        opts["startingOffsets"] = cfg.starting_offsets
    else:
        millis = int(datetime.fromisoformat(cfg.starting_offsets).timestamp() * 1000)
        opts["startingTimestamp"] = str(millis)
    if cfg.max_offsets_per_trigger and not cfg.realtime:  # Real-Time Mode reads as data comes
        opts["maxOffsetsPerTrigger"] = str(cfg.max_offsets_per_trigger)
    if cfg.realtime:  # an idle partition's fetch returns after 10 ms, not 500
        opts.setdefault("kafka.fetch.max.wait.ms", "10")
    # continue: Spark goes on from the earliest offset held; the job counts what it skipped
    # (alertsieve.stream.source_loss).
    opts["failOnDataLoss"] = str(cfg.on_source_loss == "fail").lower()
    return with_fetch_sizes(opts)


def with_fetch_sizes(opts: dict[str, str]) -> dict[str, str]:
    """``opts`` with fetches made for ~100 KB alerts: the client's 1 MB per-partition fetch
    would mean ten alerts a round trip, and Java's receive buffer is 64 KB."""
    opts.setdefault("kafka.max.partition.fetch.bytes", str(16 * 1024 * 1024))
    opts.setdefault("kafka.fetch.max.bytes", str(64 * 1024 * 1024))
    opts.setdefault("kafka.receive.buffer.bytes", str(8 * 1024 * 1024))
    return opts


def source_columns() -> list:
    """Where an alert came from, as output tables name it."""
    from pyspark.sql import functions as F

    return [
        F.col("_topic").alias("topic"),
        F.col("_partition").alias("partition"),
        F.col("_offset").alias("offset"),
        F.col("_timestamp").alias("kafka_timestamp"),
    ]
