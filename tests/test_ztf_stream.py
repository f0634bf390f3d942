"""The real ZTF alerts with histories (and edited copies made to pass each contributed ZTF
filter), exported as a broker's Spark job writes them (record ``topLevelRecord``, fields
reordered, unions flipped, snappy blocks), replayed with ``alertsieve produce --replay``, and
filtered by a job that detects the survey from the messages: nothing quarantined, and every ZTF
filter's topic and Delta rows equal its plain-Python oracle over the fastavro-decoded records."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading

import fastavro
from crafted import spark_export, ztf_messages
from job_helpers import counted_alerts, wait_for
from kafka_helpers import consume_all, delivered, listen, send
from webhook_server import FlakyWebhook
from ztf_oracles import ztf_oracles
from ztf_versions import as_ztf_401

from alertsieve.alerts.ztf import header
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import FilterStream, run_job


def _export(folder, messages: list[tuple[str, bytes]]) -> list[dict]:
    """The alerts of ``messages`` written as one snappy Avro file of a Spark export; returns them
    as fastavro reads them back from that file."""
    records = [next(fastavro.reader(io.BytesIO(m))) for _, m in messages]
    schema = spark_export(json.loads(header(messages[0][1])["avro.schema"]))
    folder.mkdir()
    with open(folder / "part-00000.avro", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec="snappy")
    with open(folder / "part-00000.avro", "rb") as f:
        return list(fastavro.reader(f))


def test_a_spark_export_of_real_ztf_alerts_is_replayed_and_filtered_as_plain_python_says(
    kafka, spark, tmp_path, topic_name
):
    bootstrap = kafka.bootstrap_servers
    alerts = _export(tmp_path / "export", ztf_messages())
    create_topic(bootstrap, topic_name, 2)
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            replay=[str(tmp_path / "export")],
            alerts_per_visit=100,
            interval_s=0,
            progress=False,
            schema_dir=str(tmp_path / "schemas"),
        )
    )
    assert summary.ok and summary.acked == len(alerts)

    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=True,
        delta_path=str(tmp_path / "delta"),
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=None,
    )
    lines = run_job(cfg, spark=spark)

    assert sum(b["input_rows"] for b in lines) == len(alerts)
    assert sum(b["quarantined_rows"] for b in lines) == 0
    expected = {
        name: {str(a["candid"]) for a in alerts if oracle(a)}
        for name, oracle in ztf_oracles().items()
    }
    assert all(expected.values()), expected  # each filter passes some real or edited-real alert
    matches = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "matches"))
        .select("alert_id", "filters")
    )
    archived = matches.collect()
    for name, want in expected.items():
        assert {m.key().decode() for m in consume_all(bootstrap, f"{prefix}{name}")} == want, name
        assert sum(b["matches"][name] for b in lines) == len(want), name
        assert {r["alert_id"] for r in archived if name in r["filters"]} == want, name
    assert set(lines[0]["matches"]) == set(expected)  # the job ran the ZTF filters only

    # Once per object: the first match of each object, as plain Python counts the objects.
    name = "ztf_long_variables"
    objects = [a["objectId"] for a in alerts if ztf_oracles()[name](a)]
    assert len(objects) > len(set(objects))  # objects with several matches: the check can fail
    heard = listen(
        "--bootstrap", bootstrap, "--topic", f"{prefix}{name}", "--from-beginning", "--until-end",
        "--once-per", "object",
    )  # fmt: skip
    assert len(delivered(heard)) == len(set(objects))
    assert f"{len(objects) - len(set(objects))} held back" in heard[-1], heard[-1]


def _exported_messages(messages: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The same alerts as ZTF-framed messages under the Spark export's writer schema: a schema
    the job does not ship, known only from the messages."""
    from alertsieve.alerts.ztf import one_alert_container

    schema = spark_export(json.loads(header(messages[0][1])["avro.schema"]))
    text, parsed = json.dumps(schema).encode(), fastavro.parse_schema(schema)
    out = []
    for key, message in messages:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, next(fastavro.reader(io.BytesIO(message))))
        out.append((key, one_alert_container(text, body.getvalue())))
    return out


def _bright(messages: list[tuple[str, bytes]]) -> list[str]:
    """The oracle of ``candidate.magpsf < 17``: fastavro over each message, plain Python."""
    return [
        k for k, m in messages if next(fastavro.reader(io.BytesIO(m)))["candidate"]["magpsf"] < 17
    ]


def _ztf_job(bootstrap: str, topic: str, prefix: str, checkpoint, **settings) -> JobConfig:
    return JobConfig(
        bootstrap=bootstrap,
        topic=topic,
        survey="ztf",
        sinks=["kafka"],
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        code_filters=[AlertFilter(name="bright", sql="candidate.magpsf < 17")],
        checkpoint=str(checkpoint),
        metrics_path=None,
        **settings,
    )


def test_ztf_writer_schemas_met_mid_stream_are_learned_and_read(
    kafka, spark, tmp_path, topic_name, caplog
):
    """Writer schemas a job did not know at start-up, met mid-stream, are read with nothing
    quarantined. Available-now over a topic whose middle holds alerts under the Spark export's
    schema: the batch mixes both, so its task stops at the first new one and the batch is read
    again (what it published before is published again: only alerts before that one). A running
    job (micro-batches), fed real 3.3 alerts, then real alerts under ZTF's 4.01 schema
    (``ztf_versions``), then 3.3 again: every match published once. That job starts before its
    topic exists and waits for it. A subscriber of the topic holding copies gets each match once
    (``_each_match_once``)."""
    bootstrap = kafka.bootstrap_servers
    real = ztf_messages()[:30]
    exported = _exported_messages(real[12:18])
    middle = [*real[:12], *exported, *real[18:]]  # the first and newest messages: 3.3 only
    create_topic(bootstrap, topic_name, 1)
    send(bootstrap, topic_name, middle)
    prefix = f"{topic_name}-a-"
    lines = run_job(
        _ztf_job(bootstrap, topic_name, prefix, tmp_path / "a", available_now=True), spark=spark
    )
    assert sum(b["input_rows"] for b in lines) == len(middle)
    assert sum(b["quarantined_rows"] for b in lines) == 0
    assert consume_all(bootstrap, f"{prefix}quarantine") == []
    published = [m.key().decode() for m in consume_all(bootstrap, f"{prefix}bright")]
    assert set(published) == set(_bright(middle)) and _bright(exported)
    again = {k for k in published if published.count(k) > 1}
    assert again <= set(_bright(real[:12]))  # published before the task met the new schema
    _each_match_once(bootstrap, f"{prefix}bright", published, set(_bright(middle)), tmp_path)

    # The live job starts before its input topic exists: it waits, then reads it from its start.
    live = f"{topic_name}-live"
    prefix = f"{topic_name}-b-"
    streams: list[FilterStream] = []

    def start_and_run() -> None:
        streams.append(
            FilterStream(spark, _ztf_job(bootstrap, live, prefix, tmp_path / "b", trigger="1"))
        )
        streams[0].run()

    job = threading.Thread(target=start_and_run)
    newer = [(k, as_ztf_401(m)) for k, m in real[10:20]]
    sent = []
    try:
        with caplog.at_level(logging.WARNING, logger="alertsieve.stream.input_topics"):
            job.start()
            wait_for(
                lambda: f"waiting for input topic {live} on {bootstrap}" in caplog.text,
                "the wait said",
                60,
            )
        assert not streams  # not planned: there is nothing to plan from yet
        create_topic(bootstrap, live, 1)
        for part in (real[:10], newer, real[20:]):
            send(bootstrap, live, part)
            sent += part
            count = len(sent)
            wait_for(
                lambda count=count: counted_alerts(bootstrap, f"{prefix}counts") == count,
                f"{count} alerts counted",
                120,
            )
    finally:
        wait_for(lambda: streams or not job.is_alive(), "the job planned", 120)
        streams[0].stop()
        job.join(60)
    stream = streams[0]
    assert "4.01" in stream.plan.decoder.versions.values()
    assert consume_all(bootstrap, f"{prefix}quarantine") == []
    published = [m.key().decode() for m in consume_all(bootstrap, f"{prefix}bright")]
    assert sorted(published) == sorted(_bright(sent)) and _bright(newer)


def _each_match_once(bootstrap: str, topic: str, published: list[str], want: set[str], tmp_path):
    """``topic`` holds some matches twice (a batch read again): ``listen`` delivers each once
    and ``--verify`` proves it complete with the copies it dropped (the break: with
    ``--keep-duplicates`` the copies come through); a webhook refusing one request in five and
    down for 10 s receives each once; a follower killed -9 and restarted from its state file
    delivers nothing twice."""
    copies = len(published) - len(set(published))
    assert set(published) == want and copies, "the topic holds copies: the checks can fail"
    read = ["--bootstrap", bootstrap, "--topic", topic, "--from-beginning", "--until-end"]
    lines = listen(*read, "--verify")
    assert sorted(delivered(lines)) == sorted(want)
    assert f"{copies} duplicates dropped" in lines[-2], lines[-2]
    assert lines[-1].startswith(f"verified: complete, {len(want)} of {len(want)} counted"), lines
    assert f"{copies} duplicates" in lines[-1]
    assert sorted(delivered(listen(*read, "--keep-duplicates"))) == sorted(published)

    hook = FlakyWebhook(refuse_every=5, down_after=2, down_for=10)
    state = tmp_path / "hook.state"
    try:
        listen(*read, "--to", hook.url, "--state", str(state), timeout=300)
        assert hook.outages == 1 and hook.requests > len(want)
        assert sorted(entry["alert_id"] for entry in hook.log) == sorted(want)  # each once
        assert delivered(listen(*read, "--to", hook.url, "--state", str(state))) == []
        assert len(hook.log) == len(want)  # the restart resumed: nothing posted again
    finally:
        hook.close()

    out, state = tmp_path / "mine.jsonl", tmp_path / "mine.state"
    follower = subprocess.Popen(
        [sys.executable, "-m", "alertsieve.cli", "listen", *read[:-1], "--to", str(out),
         "--state", str(state)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(
            lambda: out.exists() and len(out.read_text().splitlines()) == len(want)
            and '"offsets"' in state.read_text(),
            "the follower saved every match", 120, follower,
        )  # fmt: skip
    finally:
        os.killpg(follower.pid, signal.SIGKILL)  # no goodbye: the state file is all it keeps
        follower.wait(30)
    assert delivered(listen(*read, "--to", str(out), "--state", str(state))) == []
    saved = [json.loads(line)["candid"] for line in out.read_text().splitlines()]
    assert sorted(map(str, saved)) == sorted(want)
