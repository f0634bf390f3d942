"""Spark's view of an alert topic: the raw Kafka rows, before any decoding."""

from __future__ import annotations

from collections.abc import Mapping


def read_kafka_stream(
    spark,
    bootstrap: str,
    topic: str,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
    options: Mapping[str, str] | None = None,
):
    """A streaming DataFrame of (key, value, topic, partition, offset, timestamp, ...).

    ``topic`` may be a comma-separated list; one Spark task reads each partition.
    """
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        # Topics are created explicitly; a missing one should fail loudly, not wait forever.
        .option("failOnDataLoss", "true")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()
