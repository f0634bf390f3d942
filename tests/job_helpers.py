"""The filter job as a separate process, and the checks every fault test makes of its outputs:
Delta holds each match exactly once, Kafka each match at least once, both equal to a plain-Python
evaluation of the same filters over the alerts as fastavro decodes them from the input topic."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from field_catalog import CATALOG_FILTERS
from kafka_helpers import consume_all
from oracles import FILTERS

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.filtering.model import AlertFilter
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job
from alertsieve.stream.metrics import read_lines

NAMES = ("bright", "first_seen", "solar_system")
#: Every filter a job test may run: SQL and the same science in plain Python.
JOB_FILTERS = {**FILTERS, **CATALOG_FILTERS}


#: Alerts a test job reads a batch: enough batches in a visit of a few hundred to kill a job among.
PER_BATCH = 100
#: A run that only finishes what others left (a final ``--available-now`` run, an archive drain) reads
#: it in one batch: a batch costs seconds of its own (an archive's MERGE ~7 s), whatever its size.
WHOLE_BACKLOG = 100_000


def job_command(
    bootstrap: str,
    topic: str,
    workdir: Path,
    *extra: str,
    names: tuple[str, ...] = NAMES,
    catalog_dir: Path | None = None,
    per_batch: int = PER_BATCH,
) -> list[str]:
    args = [
        sys.executable,
        "-m",
        "alertsieve.cli",
        "filter",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--output-prefix",
        f"{topic}-",
        "--checkpoint",
        str(workdir / "ckpt"),
        "--delta-path",
        str(workdir / "delta"),
        "--metrics",
        str(workdir / "metrics.jsonl"),
        "--max-offsets-per-trigger",
        str(per_batch),
        "--master",
        "local[2]",
        "--no-discover",
        *extra,
    ]
    for name in names:
        args += ["--sql", f"{name}={JOB_FILTERS[name][0]}"]
    return args + (["--catalog-dir", str(catalog_dir)] if catalog_dir else [])


def archive_command(
    bootstrap: str,
    topic: str,
    workdir: Path,
    *extra: str,
    names: tuple[str, ...] = NAMES,
    per_batch: int = PER_BATCH,
) -> list[str]:
    """`alertsieve archive` with the job's own settings: the filters' topics into Delta."""
    args = job_command(bootstrap, topic, workdir, *extra, names=names, per_batch=per_batch)
    args[args.index("filter")] = "archive"
    return args


def drain_archive(
    spark, bootstrap: str, topic: str, workdir: Path, *extra: str, names: tuple[str, ...] = NAMES
) -> None:
    """Archive everything the job published so far (after the job was stopped or killed): the
    ``alertsieve archive --available-now`` command line, run in this process on the tests'
    session (the drain's checks are on Delta's rows; a process of its own would cost a JVM)."""
    from pyspark.sql import SparkSession

    from alertsieve.cli import main

    args = archive_command(
        bootstrap, topic, workdir, "--available-now", *extra, names=names, per_batch=WHOLE_BACKLOG
    )
    # The command runs in the active session and leaves it running (command_session).
    assert SparkSession.getActiveSession() is spark
    assert main(args[args.index("archive") :]) == 0


#: A frame of a Java stack trace, as log4j and py4j print them.
JAVA_FRAME = re.compile(r"^\s+at [\w$.]+\([\w$.]*(:\d+)?\)", re.M)


def run_command(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """A command that starts processes of its own (a benchmark's jobs, in their own groups), run to
    its end. Past ``timeout`` it gets Ctrl-C, so that its own clean-up stops what it started, then
    TimeoutExpired: a kill would leave its jobs running on the machine's two cores."""
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=120)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        raise
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def assert_reads_as_success(output: str) -> None:
    """What a run that succeeded prints: no ERROR line and no Java stack trace (either would read
    as a failure to the person who ran it)."""
    assert not re.search(r"\bERROR\b", output) and not JAVA_FRAME.search(output), output[-3000:]


def batches(workdir: Path) -> list[dict]:
    return read_lines(workdir / "metrics.jsonl")


def rows_read(workdir: Path) -> int:
    return sum(b["input_rows"] for b in batches(workdir))


def wait_for(condition, what: str, timeout: float, process=None, log: Path | None = None) -> None:
    """Poll ``condition`` until true; fail if ``process`` exits first (with the last lines of its
    ``log``, when it writes one) or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"the job exited while waiting: {what}\n{tail}")
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting: {what}"
        time.sleep(0.2)


def expected_matches(
    bootstrap: str, topic: str, schema_dir: str, names: tuple[str, ...] = NAMES
) -> tuple[int, dict[str, set]]:
    """(alerts in the topic, {filter: alert ids it must match}) from the test's own decoding."""
    store = LocalSchemaStore(schema_dir)
    alerts = {}
    messages = consume_all(bootstrap, topic)
    for m in messages:
        schema_id, body = unframe(m.value())
        alerts[m.key().decode()] = store.get(schema_id).decode(body)
    assert len(alerts) == len(messages), "alert ids are unique in the input"
    return len(messages), {n: {k for k, a in alerts.items() if JOB_FILTERS[n][1](a)} for n in names}


def assert_outputs(spark, bootstrap: str, topic: str, workdir: Path, expected: dict) -> Counter:
    """Delta exactly once, Kafka at least once; returns how often each (filter, alert) pair
    appears on Kafka, for tests that bound the duplicates."""
    table = spark.read.format("delta").load(str(workdir / "delta" / "matches"))
    rows = table.select("filters", "alert_id").collect()
    assert max(Counter(r["alert_id"] for r in rows).values()) == 1  # exactly once
    assert {n: {r["alert_id"] for r in rows if n in r["filters"]} for n in NAMES} == expected
    seen: Counter = Counter()
    for n in NAMES:
        keys = [m.key().decode() for m in consume_all(bootstrap, f"{topic}-{n}")]
        assert set(keys) == expected[n]  # at least once: all there
        seen.update((n, k) for k in keys)
    return seen


def run_sql_job(
    kafka, spark, tmp: Path, topic: str, filters: dict, extra_filters=(), **settings
) -> tuple[JobConfig, list]:
    """The job, available-now, with SQL filters ``{name: (sql, oracle)}`` over ``topic`` (and
    ``extra_filters``, filters as they are): its settings and its batches' metrics lines."""
    cfg = JobConfig(
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        available_now=True,
        output_prefix=f"{topic}-",
        output_partitions=1,
        discover_filters=False,
        code_filters=[
            *[AlertFilter(name=n, sql=sql) for n, (sql, _) in filters.items()],
            *extra_filters,
        ],
        delta_path=str(tmp / "delta"),
        checkpoint=str(tmp / "ckpt"),
        metrics_path=str(tmp / "metrics.jsonl"),
        **settings,
    )
    run_job(cfg, spark=spark)
    metrics = [json.loads(x) for x in (tmp / "metrics.jsonl").read_text().splitlines()]
    return cfg, [m for m in metrics if m["kind"] == "batch"]


def counted_batches(bootstrap: str, counts_topic: str) -> list[dict]:
    """The job's counts records of each batch (or epoch), once: a batch run again writes its
    counts again, and the last is kept (as ``listen --verify`` reads them)."""
    records = [json.loads(m.value()) for m in consume_all(bootstrap, counts_topic)]
    return list(
        {(r["query_id"], r["batch_id"]): r for r in records if r["kind"] == "counts"}.values()
    )


def counted_alerts(bootstrap: str, counts_topic: str) -> int:
    """Alerts the job's counted batches read."""
    return sum(r["alerts_read"] for r in counted_batches(bootstrap, counts_topic))


def simulated_visit(
    bootstrap: str,
    topic: str,
    seed: int,
    schema_dir: str,
    alerts: int,
    partitions: int = 4,
    producers: int = 1,
):
    """One simulated visit of ``alerts`` alerts without stamps, sent back to back; the
    producer's result (``.ok`` when every alert was acknowledged)."""
    return produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic,
            visits=1,
            alerts_per_visit=alerts,
            interval_s=0,
            stamp_size=0,
            seed=seed,
            partitions=partitions,
            producers=producers,
            progress=False,
            schema_dir=schema_dir,
        )
    )
