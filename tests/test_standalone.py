"""The job on a Spark standalone cluster (a master and two workers started with pyspark's
spark-class): its executors run on both workers, and its Kafka topics and Delta tables hold
exactly what plain Python over the fastavro-decoded alerts selects, the undecodable messages
quarantined."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import Producer
from job_helpers import JOB_FILTERS, NAMES, assert_outputs, expected_matches

from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.spark import standalone

JUNK = (b"", b"\x01garbage", b"\x00\x00\x00\x10\x92junk")


def _run_job(kafka, topic: str, out, master: str) -> None:
    args = [
        sys.executable,
        "-m",
        "alertsieve.cli",
        "filter",
        "--bootstrap",
        kafka.bootstrap_servers,
        "--topic",
        topic,
        "--available-now",
        "--master",
        master,
        "--max-offsets-per-trigger",
        "200",
        "--output-prefix",
        f"{topic}-",
        "--checkpoint",
        str(out / "ckpt"),
        "--delta-path",
        str(out / "delta"),
        "--no-discover",
    ]
    for name in NAMES:
        args += ["--sql", f"{name}={JOB_FILTERS[name][0]}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow
def test_a_standalone_cluster_publishes_and_archives_what_plain_python_selects(
    kafka, spark, topic_name, tmp_path
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            visits=1,
            alerts_per_visit=300,
            interval_s=0,
            stamp_size=16,
            seed=41,
            progress=False,
            schema_dir=schema_dir,
        )
    ).ok
    total, expected = expected_matches(bootstrap, topic_name, schema_dir)
    assert total == 300 and all(expected.values())
    p = Producer({"bootstrap.servers": bootstrap})
    for value in JUNK:
        p.produce(topic_name, value=value)
    assert p.flush(30) == 0

    out = tmp_path / "cluster"
    cluster = standalone.start(tmp_path / "spark-cluster", workers=2, cores=1, memory="1g")
    try:
        assert cluster.alive_workers() == 2
        _run_job(kafka, topic_name, out, cluster.master_url)
        app_logs = list((tmp_path / "spark-cluster").glob("work-*/app-*"))
        assert len(app_logs) == 2  # the job really ran executors on both workers
    finally:
        cluster.stop()
    published = assert_outputs(spark, bootstrap, topic_name, out, expected)
    assert set(published.values()) == {1}  # one run, no restart: each match once on Kafka too
    quarantine = spark.read.format("delta").load(str(out / "delta" / "quarantine")).collect()
    assert sorted(bytes(r["value"] or b"") for r in quarantine) == sorted(JUNK)
    assert all(r["reason"] for r in quarantine)
