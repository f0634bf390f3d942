"""Kill -9 the driver mid-stream, restart from the checkpoint: Delta holds every match exactly
once, Kafka holds every match at least once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from job_helpers import (
    NAMES,
    assert_outputs,
    assert_reads_as_success,
    batches,
    expected_matches,
    job_command,
    rows_read,
    wait_for,
)
from kafka_helpers import consume_all

from alertsieve.produce.producer import ProduceConfig, produce


@pytest.mark.slow
def test_kill_9_mid_stream_then_restart(kafka, spark, topic_name, tmp_path, processes):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    def visit(seed: int, alerts: int) -> None:
        assert produce(ProduceConfig(bootstrap=bootstrap, topic=topic_name, visits=1, alerts_per_visit=alerts,
                                     interval_s=0, stamp_size=0, seed=seed, progress=False,
                                     schema_dir=schema_dir)).ok  # fmt: skip

    visit(31, 420)
    first = processes(job_command(bootstrap, topic_name, tmp_path, "--timeout", "300"),
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    wait_for(lambda: len(batches(tmp_path)) >= 2, "two batches", 240, first)
    os.killpg(first.pid, signal.SIGKILL)  # the driver: Python and its JVM, no goodbye
    first.wait(30)
    # Mid-stream by construction, not by winning a race with the job: the stream goes on after the kill.
    visit(32, 180)
    total, expected = expected_matches(bootstrap, topic_name, schema_dir)
    assert total == 600 and 0 < rows_read(tmp_path) <= 420  # the rest is read by the restart

    second = subprocess.run(job_command(bootstrap, topic_name, tmp_path, "--available-now"),
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert_reads_as_success(second.stdout + second.stderr)  # the restart recovers without alarm
    assert_outputs(spark, bootstrap, topic_name, tmp_path, expected)

    # A subscriber checks what it got against the counts topic: nothing missing, and the records
    # the killed batch had published before it was run again counted as duplicates, not hidden.
    topics = [f"{topic_name}-{name}" for name in NAMES]
    records = [m for t in topics for m in consume_all(bootstrap, t)]
    sources = {(m.topic(), *(dict(m.headers())[h] for h in ("source_partition", "source_offset"))) for m in records}
    duplicates = len(records) - len(sources)
    listen = subprocess.run([sys.executable, "-m", "alertsieve.cli", "listen", "--bootstrap", bootstrap,
                             "--topic", ",".join(topics), "--from-beginning", "--until-end", "--verify",
                             "--counts-topic", f"{topic_name}-counts", "--schema-dir", schema_dir],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert listen.returncode == 0, listen.stdout[-2000:] + listen.stderr[-2000:]
    verdict = listen.stdout.splitlines()[-1]
    assert verdict.startswith(f"verified: complete, {len(sources)} of {len(sources)} counted records received"), verdict
    assert (f"{duplicates} duplicates" in verdict) if duplicates else ("duplicates" not in verdict), verdict
