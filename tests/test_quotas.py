"""Daily quotas: a filter that reaches its quota for the UTC day has its matches withheld, counted
on the counts topic, until the next UTC day. The bookkeeping (``alertsieve.stream.quotas``) is
pure and checked here on plain data; then a real job on the session broker: three visits past the
quota, a kill -9 and a restart the same day (nothing more published), and a run whose clock
crosses UTC midnight (published again). The oracle: the alerts as fastavro decodes them from the
input topic, the cut in plain Python."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import threading

import pytest
import yaml
from job_helpers import counted_alerts, counted_batches, job_command, simulated_visit, wait_for
from kafka_helpers import consume_all

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.cli import main
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import FilterStream
from alertsieve.stream.quota_gate import QuotaGate
from alertsieve.stream.quotas import QuotaBook
from alertsieve.stream.redeploy import settings_changed

TODAY = dt.date(2026, 11, 27)
CUT = "diaSource.snr > 10"
QUOTA = 25


def _counts(batch: int, day: dt.date, published: int, query: str = "q") -> dict:
    at = dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC).timestamp() + batch
    return {
        "kind": "counts",
        "query_id": query,
        "batch_id": batch,
        "filters": {"bright": {"published": published, "bytes": 100 * published}},
        "written_at": at,
    }


def test_a_quota_is_reached_once_and_a_new_day_releases_it():
    book = QuotaBook({"bright": {"records": 25}, "big": {"bytes": 1000}}, TODAY)
    assert book.add({"bright": 20}, {"bright": 2000, "big": 400}) == []
    assert book.add({"bright": 6}, {"big": 600}) == ["bright", "big"]  # 26 records, 1000 bytes
    assert book.add({"bright": 3}, {}) == [] and book.withheld == {"bright", "big"}
    assert book.used["bright"] == {"records": 29, "bytes": 2000}
    book.set_limits({"bright": {"records": 30}, "big": {"bytes": 900}})  # a deployment
    assert book.withheld == {"big"}  # bright's quota raised past its use: it publishes again
    assert not book.roll(TODAY)
    assert book.roll(TODAY + dt.timedelta(days=1)) and book.withheld == set() and not book.used


def test_a_restart_reads_todays_use_back_from_the_counts_topic():
    yesterday = TODAY - dt.timedelta(days=1)
    records = [
        _counts(0, yesterday, 40),  # another day: not today's use
        _counts(1, TODAY, 10),
        _counts(2, TODAY, 9),
        _counts(2, TODAY, 9),  # the same batch written twice (run again after a crash): once
        {"kind": "refused", "filters": {}, "written_at": _counts(3, TODAY, 0)["written_at"]},
    ]
    book = QuotaBook.restore({"bright": {"records": 25}}, TODAY, records)
    assert book.used["bright"] == {"records": 19, "bytes": 1900} and not book.withheld
    book = QuotaBook.restore({"bright": {"records": 19}}, TODAY, records)
    assert book.withheld == {"bright"}


def test_each_batch_decides_after_the_one_before_it_is_counted():
    """The race the gate closes: Spark reports batch N after N+1 may have started, so N+1 waits
    for N's report before deciding (a fake clock, a recorded wait)."""
    now = {"t": dt.datetime(2026, 11, 27, 23, 59, tzinfo=dt.UTC)}
    waits = []
    book = QuotaBook({"bright": {"records": 25}}, TODAY)
    gate = QuotaGate(book, None, dict, lambda: now["t"], lambda b, t: waits.append(b) or True)
    gate.new_query()
    assert gate.decide(7) == frozenset() and waits == []  # the query's first batch waits for none
    book.add({"bright": 30}, {})  # batch 7's report, counted before batch 8 decides
    assert gate.decide(8) == {"bright"} and waits == [7]
    assert gate.withheld_in(8) == {"bright"} and gate.withheld_in(7) == frozenset()
    now["t"] += dt.timedelta(minutes=2)  # the next UTC day: released at the next batch
    assert gate.decide(9) == frozenset() and waits == [7, 8]
    # Real-Time Mode: planned into the query; a quota reached, or a new day, means a restart.
    assert gate.new_query(realtime=True) == frozenset() and not gate.restart_due()
    book.add({"bright": 25}, {})
    assert gate.restart_due() and gate.new_query(realtime=True) == {"bright"}
    assert not gate.restart_due() and gate.withheld_in(12) == {"bright"}
    now["t"] += dt.timedelta(days=1)
    assert gate.restart_due() and gate.new_query(realtime=True) == frozenset()


def test_a_deployment_says_which_readers_and_quotas_changed():
    """Under --watch, a plan that matches the same alerts changes no query: only what it says."""
    readers = ({"a": ["User:bob"], "b": None}, {"a": ["User:bob"], "b": ["User:carol"]})
    quotas = ({"a": {"records": 25}}, {"a": {"records": 50}, "c": {"bytes": 10}})
    assert settings_changed(readers, quotas) == ["readers of b", "daily quotas of a, c"]
    assert settings_changed((readers[0], readers[0]), (quotas[1], quotas[1])) == []


def _passing(bootstrap: str, topic: str, schema_dir: str) -> dict[int, str]:
    """{offset: alert id} of the input's alerts the cut passes (plain Python over fastavro)."""
    store = LocalSchemaStore(schema_dir)
    out = {}
    for m in consume_all(bootstrap, topic):
        schema_id, body = unframe(m.value())
        if (store.get(schema_id).decode(body)["diaSource"]["snr"] or 0) > 10:
            out[m.offset()] = m.key().decode()
    return out


@pytest.mark.slow
def test_a_quota_withholds_past_its_records_until_the_next_utc_day(
    kafka, spark, topic_name, tmp_path, processes, capsys
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    prefix, out = f"{topic_name}-", tmp_path / "job.out"
    topic_out, counts_topic = f"{prefix}quota_me", f"{prefix}counts"
    config = tmp_path / "job.yaml"
    config.write_text(
        yaml.safe_dump({"filter_outputs": {"quota_me": {"quota": {"records": QUOTA}}}})
    )
    command = job_command(
        bootstrap,
        topic_name,
        tmp_path,
        "--config",
        str(config),
        "--sql",
        f"quota_me={CUT}",
        "--sink",
        "kafka",
        "--trigger",
        "0",
        "--timeout",
        "300",
        names=(),
        per_batch=20,
    )
    for seed in (1, 2, 3):  # three visits of 60 alerts
        assert simulated_visit(bootstrap, topic_name, seed, schema_dir, 60, partitions=1).ok
    with open(out, "w") as log:
        job = processes(command, stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: counted_alerts(bootstrap, counts_topic) == 180, "three visits", 240, job, out)
    passing = _passing(bootstrap, topic_name, schema_dir)
    assert 2 * QUOTA < len(passing) < 180  # the cut splits the visits
    batches = sorted(
        counted_batches(bootstrap, counts_topic), key=lambda r: r["input"][topic_name]["0"][0]
    )
    published = [b["filters"]["quota_me"]["published"] for b in batches]
    withheld = [b["filters"]["quota_me"]["withheld"] for b in batches]
    on_topic = [m.key().decode() for m in consume_all(bootstrap, topic_out)]
    # Published until the batch that reached the quota, nothing after it, though the batches ran
    # back to back over a backlog: an overshoot of at most that batch's matches (of 20 alerts).
    # Every match counted: published, or withheld.
    reached = next(i for i in range(len(published)) if sum(published[: i + 1]) >= QUOTA)
    assert sum(published[reached + 1 :]) == 0, published
    assert len(on_topic) == sum(published) and QUOTA <= len(on_topic) < QUOTA + 20
    end = batches[reached]["input"][topic_name]["0"][1]  # every match of the batches before it
    assert sorted(on_topic) == sorted(k for o, k in passing.items() if o < end)
    assert sum(withheld) == len(passing) - len(on_topic)
    records = [json.loads(m.value()) for m in consume_all(bootstrap, counts_topic)]
    (quota,) = [r for r in records if r["kind"] == "quota"]
    assert (quota["filter"], quota["quota"], quota["used"]["records"]) == (
        "quota_me",
        {"records": QUOTA},
        sum(published[: reached + 1]),
    )
    assert "quota: quota_me reached its quota" in out.read_text()
    verify = ["listen", "--bootstrap", bootstrap, "--topic", topic_out, "--from-beginning"]
    assert main([*verify, "--until-end", "--verify", "--schema-dir", schema_dir]) == 0
    said = capsys.readouterr().out
    assert f"verified: complete, {len(on_topic)} of {len(on_topic)}" in said
    assert f"{sum(withheld)} matches withheld" in said

    # kill -9, a fourth visit, a restart the same day: it reads its use back, publishes nothing.
    os.killpg(job.pid, signal.SIGKILL)
    job.wait(30)
    assert simulated_visit(bootstrap, topic_name, 4, schema_dir, 60, partitions=1).ok
    with open(out, "a") as log:
        job = processes(command, stdout=log, stderr=subprocess.STDOUT)
    wait_for(
        lambda: counted_alerts(bootstrap, counts_topic) >= 240, "the fourth visit", 240, job, out
    )
    os.killpg(job.pid, signal.SIGTERM)
    job.wait(90)
    assert sorted(m.key().decode() for m in consume_all(bootstrap, topic_out)) == sorted(on_topic)
    fourth = [k for o, k in _passing(bootstrap, topic_name, schema_dir).items() if o >= 180]
    after = [
        b["filters"]["quota_me"]
        for b in counted_batches(bootstrap, counts_topic)
        if b["input"][topic_name]["0"][0] >= 180
    ]
    assert sum(f["published"] for f in after) == 0
    assert sum(f["withheld"] for f in after) == len(fourth) > 0
    assert "before this start" in out.read_text()  # the restart read its use back

    # Across UTC midnight (the job's clock moved): the same day still withheld, then published.
    now = {"t": dt.datetime.now(dt.UTC).replace(hour=23, minute=59, second=0)}
    stream = FilterStream(
        spark,
        JobConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            output_prefix=prefix,
            sql_filters=[{"name": "quota_me", "sql": CUT}],
            filter_outputs={"quota_me": {"quota": {"records": QUOTA}}},
            discover_filters=False,
            sinks=["kafka"],
            trigger="1",
            max_offsets_per_trigger=20,
            checkpoint=str(tmp_path / "ckpt"),
            metrics_path=None,
            schema_dir=schema_dir,
        ),
        clock=lambda: now["t"],
    )
    assert stream.quotas.book.withheld == {"quota_me"}  # read back from today's counts
    thread = threading.Thread(target=stream.run)
    thread.start()
    try:
        assert simulated_visit(bootstrap, topic_name, 5, schema_dir, 20, partitions=1).ok
        wait_for(lambda: counted_alerts(bootstrap, counts_topic) >= 260, "a fifth visit", 120)
        assert sorted(m.key().decode() for m in consume_all(bootstrap, topic_out)) == sorted(
            on_topic
        )
        now["t"] += dt.timedelta(minutes=2)  # 00:01 the next day
        assert simulated_visit(bootstrap, topic_name, 6, schema_dir, 20, partitions=1).ok
        wait_for(lambda: counted_alerts(bootstrap, counts_topic) >= 280, "a sixth visit", 120)
    finally:
        stream.stop()
        thread.join(120)
    sixth = [k for o, k in _passing(bootstrap, topic_name, schema_dir).items() if o >= 260]
    assert 0 < len(sixth) < QUOTA
    assert sorted(m.key().decode() for m in consume_all(bootstrap, topic_out)) == sorted(
        on_topic + sixth
    )
