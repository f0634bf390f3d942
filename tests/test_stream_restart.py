"""Kill -9 the driver mid-stream, restart from the checkpoint: Delta holds every match exactly
once, Kafka holds every match at least once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from kafka_helpers import consume_all
from test_stream_job import FILTERS

from alertsieve.produce import ProduceConfig, produce
from alertsieve.schemas import LocalSchemaStore, unframe


def _job(kafka, topic, tmp_path, *extra: str) -> list[str]:
    args = [sys.executable, "-m", "alertsieve.cli", "filter", "--bootstrap", kafka.bootstrap_servers,
            "--topic", topic, "--output-prefix", f"{topic}-", "--checkpoint", str(tmp_path / "ckpt"),
            "--delta-path", str(tmp_path / "delta"), "--metrics", str(tmp_path / "metrics.jsonl"),
            "--max-offsets-per-trigger", "60", "--master", "local[2]", *extra]  # fmt: skip
    for name in ("bright", "first_seen", "solar_system"):
        args += ["--sql", f"{name}={FILTERS[name][0]}"]
    return args


def _batches(path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.slow
def test_kill_9_mid_stream_then_restart(kafka, spark, topic_name, tmp_path):
    schema_dir = str(tmp_path / "schemas")
    assert produce(ProduceConfig(bootstrap=kafka.bootstrap_servers, topic=topic_name, visits=1,
                                 alerts_per_visit=420, interval_s=0, stamp_size=0, seed=31,
                                 progress=False, schema_dir=schema_dir)).ok  # fmt: skip
    store = LocalSchemaStore(schema_dir)
    alerts = {}
    for m in consume_all(kafka.bootstrap_servers, topic_name):
        schema_id, body = unframe(m.value())
        alerts[m.key().decode()] = store.get(schema_id).decode(body)
    names = ("bright", "first_seen", "solar_system")
    expected = {n: {k for k, a in alerts.items() if FILTERS[n][1](a)} for n in names}

    first = subprocess.Popen(_job(kafka, topic_name, tmp_path, "--timeout", "300"), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while len(_batches(metrics)) < 2 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.2)
    assert len(_batches(metrics)) >= 2, "the job did not get through two batches"
    os.killpg(first.pid, signal.SIGKILL)  # the driver: Python and its JVM, no goodbye
    first.wait(30)
    done_before = sum(b["input_rows"] for b in _batches(metrics))
    assert done_before < 420  # killed mid-stream, not after the end

    second = subprocess.run(_job(kafka, topic_name, tmp_path, "--available-now"), capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]

    table = spark.read.format("delta").load(str(tmp_path / "delta" / "matches"))
    rows = table.select("filters", "alert_id").collect()
    assert max(Counter(r["alert_id"] for r in rows).values()) == 1  # exactly once
    assert {n: {r["alert_id"] for r in rows if n in r["filters"]} for n in names} == expected

    for n in names:
        keys = [m.key().decode() for m in consume_all(kafka.bootstrap_servers, f"{topic_name}-{n}")]
        assert set(keys) == expected[n]  # at least once: all there, duplicates allowed
