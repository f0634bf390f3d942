"""The same job on a Spark standalone cluster (a master and two workers started with pyspark's
spark-class) gives the same outputs as in local mode."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import Producer
from kafka_helpers import consume_all
from oracles import FILTERS

from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.spark import standalone


def _run_job(kafka, topic: str, out, master: str) -> None:
    args = [sys.executable, "-m", "alertsieve.cli", "filter", "--bootstrap", kafka.bootstrap_servers,
            "--topic", topic, "--available-now", "--master", master, "--max-offsets-per-trigger", "200",
            "--output-prefix", f"{out.name}-", "--checkpoint", str(out / "ckpt"),
            "--delta-path", str(out / "delta"), "--no-discover"]  # fmt: skip
    for name in ("bright", "first_seen", "solar_system"):
        args += ["--sql", f"{name}={FILTERS[name][0]}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _outputs(spark, kafka, out) -> dict:
    matches = spark.read.format("delta").load(str(out / "delta" / "matches"))
    quarantine = spark.read.format("delta").load(str(out / "delta" / "quarantine"))
    return {
        "delta": sorted(
            (sorted(r["filters"]), r["alert_id"])
            for r in matches.select("filters", "alert_id").collect()
        ),
        "quarantine": sorted(
            (r["offset"], r["reason"]) for r in quarantine.select("offset", "reason").collect()
        ),
        "kafka": {
            name: sorted(
                m.key().decode() for m in consume_all(kafka.bootstrap_servers, f"{out.name}-{name}")
            )
            for name in ("bright", "first_seen", "solar_system")
        },
    }


@pytest.mark.slow
def test_standalone_cluster_matches_local_mode(kafka, spark, topic_name, tmp_path):
    assert produce(ProduceConfig(bootstrap=kafka.bootstrap_servers, topic=topic_name, visits=1,
                                 alerts_per_visit=300, interval_s=0, stamp_size=16, seed=41,
                                 progress=False)).ok  # fmt: skip
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for value in (b"", b"\x01garbage", b"\x00\x00\x00\x10\x92junk"):
        p.produce(topic_name, value=value)
    assert p.flush(30) == 0

    local, remote = tmp_path / "local", tmp_path / "cluster"
    _run_job(kafka, topic_name, local, "local[2]")
    cluster = standalone.start(tmp_path / "spark-cluster", workers=2, cores=1, memory="1g")
    try:
        assert cluster.alive_workers() == 2
        _run_job(kafka, topic_name, remote, cluster.master_url)
        app_logs = list((tmp_path / "spark-cluster").glob("work-*/app-*"))
        assert len(app_logs) == 2  # the job really ran executors on both workers
    finally:
        cluster.stop()
    got_local, got_cluster = _outputs(spark, kafka, local), _outputs(spark, kafka, remote)
    assert len(got_local["delta"]) > 0 and len(got_local["quarantine"]) == 3
    assert got_cluster == got_local
