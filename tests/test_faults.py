"""Faults a night brings, with real processes: a broker killed mid-stream in a 3-broker cluster,
the driver killed -9 again and again at points reached as conditions and restarted from its
checkpoint. Each test asserts exact counts: nothing lost, Delta exactly once, Kafka duplicates only
where a batch was interrupted, and a subscriber's `listen --verify` saying so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from job_helpers import (
    NAMES,
    WHOLE_BACKLOG,
    assert_outputs,
    assert_reads_as_success,
    batches,
    drain_archive,
    expected_matches,
    job_command,
    rows_read,
    simulated_visit,
    wait_for,
)
from kafka_helpers import consume_all, delivered

from alertsieve.kafka import embedded
from alertsieve.kafka.topics import admin, create_topic, end_offsets

CLI = [sys.executable, "-m", "alertsieve.cli"]


def _cli(*args: str, code: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == code, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory, kafka):
    """Three brokers, replication factor 3, min.insync.replicas 2: one may die. Started as a user
    does, by ``alertsieve kafka start --brokers 3`` in a process of its own, beside the session's
    broker (started by this process): the command's own checks are made on this cluster at its
    start and its stop, so one cluster serves them and the faults (three brokers, not seven)."""
    data_dir = tmp_path_factory.mktemp("kafka3")
    bootstrap = _cli("kafka", "start", "--brokers", "3", "--data-dir", str(data_dir)).stdout.strip()
    try:
        assert len(bootstrap.split(",")) == 3
        assert len(admin(bootstrap).list_topics(timeout=30).brokers) == 3
        status = json.loads(_cli("kafka", "status", "--data-dir", str(data_dir)).stdout)
        assert status["running"] is True and status["bootstrap_servers"] == bootstrap
        # Clusters started by different processes do not collide: their own ports, their topics.
        assert not set(bootstrap.split(",")) & set(kafka.bootstrap_servers.split(","))
        assert embedded.status(kafka.data_dir)["running"] is True
        own = f"own-{data_dir.name}"
        for each in (bootstrap, kafka.bootstrap_servers):
            create_topic(each, own, partitions=1)
        # A second start from a running cluster's directory refuses, naming the way out.
        again = _cli("kafka", "start", "--brokers", "3", "--data-dir", str(data_dir), code=2)
        assert f"already running from {data_dir}" in again.stderr and "--data-dir" in again.stderr
        yield data_dir, embedded.Cluster.load(data_dir)
    finally:
        stopped = _cli("kafka", "stop", "--purge", "--data-dir", str(data_dir)).stdout
    assert stopped.startswith("stopped 3 broker(s)") and not data_dir.exists()
    assert embedded.status(data_dir)["running"] is False


def _leader(bootstrap: str, topic: str, partition: int = 0) -> int:
    return (
        admin(bootstrap).list_topics(topic, timeout=10).topics[topic].partitions[partition].leader
    )


@pytest.mark.slow
@pytest.mark.integration  # a three-broker cluster
def test_a_broker_killed_mid_stream_loses_nothing(cluster3, spark, topic_name, tmp_path, processes):
    data_dir, cluster = cluster3
    bootstrap, schema_dir = cluster.bootstrap_servers, str(tmp_path / "schemas")
    assert simulated_visit(bootstrap, topic_name, 41, schema_dir, 300, producers=2).ok
    job = processes(
        job_command(bootstrap, topic_name, tmp_path, "--timeout", "400"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: rows_read(tmp_path) > 0, "the job's first alerts", 240, job)
        # Kill the leader of partition 0 while the second visit is being produced and read.
        victim = _leader(bootstrap, topic_name)
        second: dict = {}
        sender = threading.Thread(
            target=lambda: second.setdefault(
                "s", simulated_visit(bootstrap, topic_name, 42, schema_dir, 300, producers=2)
            )
        )
        sender.start()
        embedded.kill_node(data_dir, victim)
        sender.join(180)
        assert second["s"].ok, second["s"].line()  # acks=all, 2 of 3 in sync: every alert acked
        wait_for(
            lambda: rows_read(tmp_path) == 600, "both visits read with a broker down", 240, job
        )
        embedded.restart_node(data_dir, victim)
        assert simulated_visit(bootstrap, topic_name, 43, schema_dir, 300, producers=2).ok
        wait_for(lambda: rows_read(tmp_path) == 900, "the third visit, broker back", 240, job)
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
    drain_archive(
        spark, bootstrap, topic_name, tmp_path
    )  # the archive's own clock had not caught up
    total, expected = expected_matches(bootstrap, topic_name, schema_dir)
    assert total == 900  # the idempotent producer wrote each alert once, broker death or not
    assert sum(b["quarantined_rows"] for b in batches(tmp_path)) == 0
    seen = assert_outputs(spark, bootstrap, topic_name, tmp_path, expected)
    assert max(seen.values()) == 1  # the job was never interrupted: no duplicates either


def _interrupted_range(checkpoint: Path, topic: str) -> set[tuple[int, int]] | None:
    """The (partition, offset) pairs of the batch planned but not committed when the driver
    died, from the checkpoint: the only alerts a restart may publish to Kafka twice."""

    def offsets(n: int) -> dict[int, int]:
        lines = (checkpoint / "offsets" / str(n)).read_text().splitlines()
        return {int(p): o for p, o in json.loads(lines[-1])[topic].items()}

    planned = sorted(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    committed = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    open_batches = [n for n in planned if n not in committed]
    if not open_batches:
        return None
    n = open_batches[-1]
    end = offsets(n)
    start = offsets(n - 1) if n > 0 else {p: 0 for p in end}
    return {(p, o) for p in end for o in range(start.get(p, 0), end[p])}


def _committed_batches(checkpoint: Path) -> int:
    return sum(1 for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


@pytest.mark.slow
def test_the_driver_killed_again_and_again(kafka, spark, topic_name, tmp_path, processes):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    for seed in (51, 52):
        assert simulated_visit(bootstrap, topic_name, seed, schema_dir, 400, producers=2).ok
    replayable: set[tuple[int, int]] = set()
    committed_before, sent = 0, 800
    # Kill points spread over the stream, reached as conditions (alerts read), never timed:
    # the job reads 100 alerts a batch, so each kill leaves hundreds of the 1,200 still to read.
    # The third visit is sent while the job is down: the stream goes on after a kill.
    for kill_after, then_send in ((150, 53), (600, None)):
        job = processes(
            job_command(bootstrap, topic_name, tmp_path, "--timeout", "400"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(
            lambda n=kill_after: rows_read(tmp_path) >= n, f"{kill_after} alerts read", 240, job
        )
        os.killpg(job.pid, signal.SIGKILL)  # the driver: Python and its JVM, no goodbye
        job.wait(30)
        assert rows_read(tmp_path) < sent, "killed mid-stream"
        committed = _committed_batches(tmp_path / "ckpt")
        assert committed > committed_before, "each run went on from the last one's checkpoint"
        committed_before = committed
        replayable |= _interrupted_range(tmp_path / "ckpt", topic_name) or set()
        if then_send:
            assert simulated_visit(
                bootstrap, topic_name, then_send, schema_dir, 400, producers=2
            ).ok
            sent += 400
    total, expected = expected_matches(bootstrap, topic_name, schema_dir)
    final = subprocess.run(
        job_command(bootstrap, topic_name, tmp_path, "--available-now", per_batch=WHOLE_BACKLOG),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert final.returncode == 0, final.stdout[-2000:] + final.stderr[-2000:]
    assert_reads_as_success(final.stdout + final.stderr)  # the restart recovers without alarm
    seen = assert_outputs(spark, bootstrap, topic_name, tmp_path, expected)
    # Duplicates on Kafka only for alerts of the batches that were interrupted.
    topics = [f"{topic_name}-{n}" for n in NAMES]
    records = [m for t in topics for m in consume_all(bootstrap, t)]
    for m in records:
        if seen[(m.topic().removeprefix(f"{topic_name}-"), m.key().decode())] > 1:
            h = dict(m.headers())
            assert (int(h["source_partition"]), int(h["source_offset"])) in replayable
    assert sum(end_offsets(bootstrap, topic_name).values()) == total == 1200

    # A subscriber checks what it got against the counts topic: nothing missing, and the records
    # the killed batches had published before they were run again counted as duplicates, not hidden.
    sources = {
        (m.topic(), *(dict(m.headers())[h] for h in ("source_partition", "source_offset")))
        for m in records
    }
    duplicates = len(records) - len(sources)
    listen = subprocess.run(
        [
            sys.executable,
            "-m",
            "alertsieve.cli",
            "listen",
            "--bootstrap",
            bootstrap,
            "--topic",
            ",".join(topics),
            "--from-beginning",
            "--until-end",
            "--verify",
            "--counts-topic",
            f"{topic_name}-counts",
            "--schema-dir",
            schema_dir,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listen.returncode == 0, listen.stdout[-2000:] + listen.stderr[-2000:]
    assert len(delivered(listen.stdout.splitlines())) == len(sources)  # each match once
    verdict = listen.stdout.splitlines()[-1]
    assert verdict.startswith(
        f"verified: complete, {len(sources)} of {len(sources)} counted records received"
    ), verdict
    assert (
        (f"{duplicates} duplicates" in verdict) if duplicates else ("duplicates" not in verdict)
    ), verdict


def test_a_missing_input_topic_is_named(kafka, topic_name, tmp_path):
    """``--available-now`` on a topic not there exits 2 naming it, before any JVM starts; a
    query failed because its input topic went is told which (``input_topics.gone``). The job
    that waits for its topic is ``test_ztf_stream``'s live job."""
    from alertsieve.stream.config import JobConfig
    from alertsieve.stream.input_topics import gone

    missing = f"{topic_name}-v99"
    done = subprocess.run(
        job_command(kafka.bootstrap_servers, missing, tmp_path, "--available-now"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"input topic {missing} does not exist on {kafka.bootstrap_servers}" in done.stderr
    cfg = JobConfig(bootstrap=kafka.bootstrap_servers, topic=missing)
    spark_says = "UnknownTopicOrPartitionException: This server does not host this topic-partition."
    assert f"input topic {missing} no longer exists" in gone(cfg, spark_says)
    create_topic(kafka.bootstrap_servers, missing, partitions=1)
    assert gone(cfg, spark_says) == ""  # there: the failure was something else
