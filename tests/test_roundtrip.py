"""Kafka -> Spark Structured Streaming: every message arrives exactly once."""

from __future__ import annotations

from confluent_kafka import Producer

from alertsieve.kafka.topics import create_topic, end_offsets
from alertsieve.stream.config import JobConfig
from alertsieve.stream.source import source_options


def test_thousand_messages_four_partitions_each_read_exactly_once(
    kafka, spark, topic_name, tmp_path
):
    assert create_topic(kafka.bootstrap_servers, topic_name, partitions=4)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
    for i in range(1000):
        producer.produce(topic_name, key=f"k{i}", value=f"v{i}".encode())
    assert producer.flush(30) == 0
    per_partition = end_offsets(kafka.bootstrap_servers, topic_name)
    assert sorted(per_partition) == [0, 1, 2, 3]
    assert sum(per_partition.values()) == 1000
    assert all(n > 0 for n in per_partition.values())  # the keys really spread over partitions

    query = (
        spark.readStream.format("kafka")
        .options(
            **source_options(
                JobConfig(
                    bootstrap=kafka.bootstrap_servers, topic=topic_name, max_offsets_per_trigger=300
                )
            )
        )
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition")
        .writeStream.format("memory")
        .queryName("roundtrip")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    rows = spark.table("roundtrip").collect()
    assert len(rows) == 1000
    assert sorted(r.key for r in rows) == sorted(f"k{i}" for i in range(1000))
    assert all(r.value == "v" + r.key[1:] for r in rows)
    seen = {p: sum(1 for r in rows if r.partition == p) for p in per_partition}
    assert seen == per_partition
    # maxOffsetsPerTrigger=300 over 1000 messages: several micro-batches, none lost between them.
    assert len([p for p in query.recentProgress if p["numInputRows"] > 0]) >= 4


def test_created_topic_reports_false_when_it_exists(kafka, topic_name):
    assert create_topic(kafka.bootstrap_servers, topic_name, partitions=2) is True
    assert create_topic(kafka.bootstrap_servers, topic_name, partitions=2) is False
