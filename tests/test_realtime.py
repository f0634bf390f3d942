"""Real-Time Mode end to end: the hot path publishes every match of a live topic, is killed -9,
and restarted from its checkpoint without losing an alert (Kafka: at least once). One of its
filters reads the light-curve features and one crossmatches a catalog (a broadcast stream-static
join): both must keep a filter Real-Time-Mode capable. One divides by zero on every alert: it
must not stop the query, nor change what the others publish."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from field_catalog import NAME as NEAR_FIELD_SOURCE
from job_helpers import (
    NAMES,
    counted_alerts,
    counted_batches,
    expected_matches,
    job_command,
    simulated_visit,
    wait_for,
)
from kafka_helpers import consume_all

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.filtering.model import AlertFilter, FilterError, PythonFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.settings import ConfigError
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import _is_timeout, check_realtime


def _realtime_job(processes, bootstrap: str, topic: str, workdir, catalogs) -> subprocess.Popen:
    """The job in Real-Time Mode (2 partitions, 2 cores), Kafka outputs only, with ``capped``
    (a daily quota of ``QUOTA`` records); what it prints goes to ``workdir/job.log`` (shown if it
    exits while a test waits on it)."""
    config = workdir / "job.yaml"
    config.write_text(json.dumps({"filter_outputs": {"capped": {"quota": {"records": QUOTA}}}}))
    args = job_command(
        bootstrap,
        topic,
        workdir,
        "--trigger",
        "realtime=5s",
        "--sink",
        "kafka",
        "--timeout",
        "300",
        "--config",
        str(config),
        "--sql",
        f"capped={CAPPED}",
        "--sql",
        f"divides={DIVIDES}",
        "--suspend-above",
        "1",  # never suspended: its every error counted (suspension: test_stream_job)
        names=RTM_NAMES,
        catalog_dir=catalogs,
    )
    return processes(args, stdout=(workdir / "job.log").open("ab"), stderr=subprocess.STDOUT)


RTM_NAMES = (*NAMES, "rising", NEAR_FIELD_SOURCE)
CAPPED, QUOTA = "diaSource.snr > 10", 10
#: A user's mistake beside them: x / 0 raises on every alert whose snr is not null (all of the
#: simulated ones). Contained, it matches nothing and the other filters publish as without it.
DIVIDES = "diaSource.snr / (diaSource.diaSourceId - diaSource.diaSourceId) > 1"


def _capped(bootstrap: str, topic: str, schema_dir: str) -> set[str]:
    """The input's alerts ``capped`` passes (plain Python over fastavro)."""
    store = LocalSchemaStore(schema_dir)
    return {
        m.key().decode()
        for m in consume_all(bootstrap, topic)
        if store.get(unframe(m.value())[0]).decode(unframe(m.value())[1])["diaSource"]["snr"] > 10
    }


def _quota_counts(bootstrap: str, topic: str) -> tuple[int, int]:
    """(published, withheld) of ``capped`` on the counts topic, each epoch once."""
    capped = [r["filters"]["capped"] for r in counted_batches(bootstrap, f"{topic}-counts")]
    return sum(c["published"] for c in capped), sum(c["withheld"] for c in capped)


def _published(bootstrap: str, topic: str) -> dict[str, list[str]]:
    return {
        n: [m.key().decode() for m in consume_all(bootstrap, f"{topic}-{n}")] for n in RTM_NAMES
    }


def _all_there(bootstrap: str, topic: str, expected: dict[str, set]) -> bool:
    got = _published(bootstrap, topic)
    return all(set(got[n]) >= expected[n] for n in RTM_NAMES)


@pytest.mark.slow
def test_real_time_mode_publishes_every_match_and_restarts_after_kill_9(
    kafka, topic_name, tmp_path, field_catalog, processes
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    assert simulated_visit(bootstrap, topic_name, 61, schema_dir, 150, partitions=2).ok
    _, first_expected = expected_matches(bootstrap, topic_name, schema_dir, RTM_NAMES)
    assert first_expected["rising"], "the visit has alerts the features filter selects"
    assert first_expected[NEAR_FIELD_SOURCE], "the visit has alerts the crossmatch filter selects"

    first_capped = _capped(bootstrap, topic_name, schema_dir)
    assert len(first_capped) > QUOTA

    job = _realtime_job(processes, bootstrap, topic_name, tmp_path, field_catalog)
    log = tmp_path / "job.log"
    wait_for(
        lambda: _all_there(bootstrap, topic_name, first_expected),
        "the first visit's matches",
        240,
        job,
        log,
    )
    # capped reached its quota with the epoch that read the visit: the query restarts with it
    # withheld, and a second visit's matches of it are counted, not published.
    wait_for(lambda: "the hot path restarts" in log.read_text(), "the restart", 120, job, log)
    assert simulated_visit(bootstrap, topic_name, 63, schema_dir, 150, partitions=2).ok
    _, live_expected = expected_matches(bootstrap, topic_name, schema_dir, RTM_NAMES)
    wait_for(lambda: _all_there(bootstrap, topic_name, live_expected), "visit 2", 240, job, log)
    # An epoch is counted when its checkpoint interval ends: both visits', before the kill.
    counts = f"{topic_name}-counts"
    wait_for(lambda: counted_alerts(bootstrap, counts) == 300, "visit 2 counted", 60, job, log)
    os.killpg(job.pid, signal.SIGKILL)  # mid-stream: the query never ends on its own
    job.wait(30)
    capped_out = [m.key().decode() for m in consume_all(bootstrap, f"{topic_name}-capped")]
    # Overshoot: at most the epoch that reached the quota (the whole first visit, read at once).
    assert QUOTA <= len(set(capped_out)) and set(capped_out) <= first_capped

    assert simulated_visit(
        bootstrap, topic_name, 62, schema_dir, 150, partitions=2
    ).ok  # produced while the job is down
    total, expected = expected_matches(bootstrap, topic_name, schema_dir, RTM_NAMES)
    assert total == 450 and sum(len(expected[n] - live_expected[n]) for n in RTM_NAMES) > 0
    job = _realtime_job(processes, bootstrap, topic_name, tmp_path, field_catalog)
    wait_for(
        lambda: _all_there(bootstrap, topic_name, expected),
        "both visits' matches",
        240,
        job,
        tmp_path / "job.log",
    )
    wait_for(lambda: counted_alerts(bootstrap, counts) == 450, "visit 3 counted", 60, job, log)
    os.killpg(job.pid, signal.SIGTERM)
    job.wait(60)
    got = _published(bootstrap, topic_name)
    assert {n: set(got[n]) for n in RTM_NAMES} == expected  # every match, nothing else
    assert consume_all(bootstrap, f"{topic_name}-divides") == []
    epochs = counted_batches(bootstrap, counts)
    assert sum(e["filters"]["divides"].get("failed_alerts", 0) for e in epochs) == 450
    # The restart the same day read capped's use back: nothing more published; every match of
    # it counted once, published or withheld.
    capped = _capped(bootstrap, topic_name, schema_dir)
    assert {m.key().decode() for m in consume_all(bootstrap, f"{topic_name}-capped")} == set(
        capped_out
    )
    published, withheld = _quota_counts(bootstrap, topic_name)
    assert (published, withheld) == (len(set(capped_out)), len(capped) - len(set(capped_out)))
    assert "reached its quota for" in log.read_text() and "before this start" in log.read_text()


def test_real_time_mode_is_refused_for_python_filters_and_too_few_cores(kafka, spark, topic_name):
    create_topic(kafka.bootstrap_servers, topic_name, 4)
    sql = AlertFilter(name="bright", sql="diaSource.snr > 50")
    python = PythonFilter(
        name="py",
        function=lambda c: c["snr"] > 5,
        columns={"snr": "diaSource.snr"},
        origin="filters/py.py",
    )
    cfg = JobConfig(bootstrap=kafka.bootstrap_servers, topic=topic_name, trigger="realtime")
    with pytest.raises(FilterError) as err:
        check_realtime(spark, cfg, [sql, python])
    assert str(err.value) == (
        "--trigger realtime=5 minutes: filter 'py' (filters/py.py) is a Python function, which Real-Time"
        " Mode cannot run (no Python UDFs); run it in micro-batches (--trigger 0) or write it as SQL"
    )
    with pytest.raises(ConfigError) as err:
        check_realtime(spark, cfg, [sql])
    assert str(err.value) == (
        "the command line: --trigger realtime=5 minutes: the input has 4 partitions and Spark 2 cores;"
        " Real-Time Mode runs a task per partition at once: give Spark at least 4 cores"
        " (--master local[4]) or use micro-batches (--trigger 0)"
    )


def test_only_a_java_timeout_counts_as_the_listener_bus_running_out(spark):
    """The Real-Time Mode stop waits for Spark's listener bus, whose wait throws
    java.util.concurrent's TimeoutException when it runs out (expected: a warning); the stop
    raises any other Java error as its own fault. This checks the test it uses to tell them
    apart, on both kinds thrown by the session's JVM (the bus itself cannot be made to time out
    on demand)."""
    from py4j.protocol import Py4JJavaError

    concurrent = spark._jvm.java.util.concurrent
    with pytest.raises(Py4JJavaError) as timeout:
        concurrent.CompletableFuture().get(1, concurrent.TimeUnit.MILLISECONDS)
    with pytest.raises(Py4JJavaError) as other:
        spark._jvm.java.lang.Class.forName("no.such.Listener")
    assert _is_timeout(timeout.value) and not _is_timeout(other.value)
