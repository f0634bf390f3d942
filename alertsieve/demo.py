"""`make demo`: the whole stack on this machine, end to end, in under a minute.

Starts an embedded broker in a throwaway directory, writes a few messages to a partitioned
topic, reads them back with a Spark streaming query and says what it saw; then stops everything.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from alertsieve import kafka_local
from alertsieve.kafka_source import read_kafka_stream
from alertsieve.spark import get_session
from alertsieve.topics import create_topic, end_offsets


def run_demo(messages: int = 200, partitions: int = 4) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="alertsieve-demo-"))
    spark = None
    t0 = time.monotonic()
    try:
        cluster = kafka_local.start(workdir / "kafka")
        print(
            f"Kafka     : broker up at {cluster.bootstrap_servers} ({time.monotonic() - t0:.1f}s)"
        )
        topic = "demo-alerts"
        create_topic(cluster.bootstrap_servers, topic, partitions)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(messages):
            producer.produce(topic, key=f"alert-{i}", value=f"payload {i}".encode())
        producer.flush(30)
        del producer  # closed now, so it does not chatter about the broker going away later
        per_partition = end_offsets(cluster.bootstrap_servers, topic)
        print(f"Produce   : {messages} messages to '{topic}', per partition {per_partition}")

        t1 = time.monotonic()
        spark = get_session("alertsieve-demo", conf={"spark.ui.enabled": "false"})
        took = time.monotonic() - t1
        print(f"Spark     : {spark.version} session with Kafka, Avro, Delta ({took:.1f}s)")
        rows = read_kafka_stream(spark, cluster.bootstrap_servers, topic)
        query = (
            rows.selectExpr("CAST(key AS STRING) AS key", "partition")
            .writeStream.format("memory")
            .queryName("demo_seen")
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        seen = spark.sql(
            "SELECT partition, count(*) AS n, count(DISTINCT key) AS keys"
            " FROM demo_seen GROUP BY partition ORDER BY partition"
        ).collect()
        total = sum(r.n for r in seen)
        distinct = sum(r.keys for r in seen)
        print(
            f"Stream    : read {total} messages ({distinct} distinct keys) in {len(seen)} partitions"
        )
        print(
            f"Verdict   : {'every message read exactly once' if total == distinct == messages else 'MISMATCH'}"
        )
        return {"produced": messages, "read": total, "distinct": distinct}
    finally:
        if spark is not None:
            spark.stop()
        stopped = kafka_local.stop(workdir / "kafka")
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"Cleanup   : stopped broker pid(s) {stopped}; total {time.monotonic() - t0:.1f}s")
