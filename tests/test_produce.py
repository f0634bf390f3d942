"""The visit producer against a real broker: every alert accounted for, bytes as promised."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import fastavro
import pytest
from kafka_helpers import consume_all

from alertsieve.alerts.replay import alert_key
from alertsieve.alerts.schemas import LocalSchemaStore, load_rubin_schema, unframe
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

CLI = [sys.executable, "-m", "alertsieve.cli"]


def test_simulated_visits_arrive_complete_and_decodable(kafka, topic_name, tmp_path):
    metrics = tmp_path / "produce.jsonl"
    cfg = ProduceConfig(
        bootstrap=kafka.bootstrap_servers,
        topic=topic_name,
        visits=2,
        alerts_per_visit=300,
        interval_s=0,
        producers=2,
        partitions=3,
        stamp_size=16,
        seed=11,
        metrics_path=str(metrics),
        progress=False,
        schema_dir=str(tmp_path / "schemas"),
    )
    summary = produce(cfg)
    assert summary.ok and summary.acked == 600 and summary.failed == 0
    assert sorted((r.visit, r.producer) for r in summary.reports) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [x["kind"] for x in lines].count("producer_visit") == 4
    assert lines[-1]["kind"] == "producer_summary" and lines[-1]["acked"] == 600
    assert sum(x["alerts"] for x in lines if x["kind"] == "producer_visit") == 600

    messages = consume_all(kafka.bootstrap_servers, topic_name)
    assert len(messages) == 600 and len({m.partition() for m in messages}) == 3
    sim = AlertSimulator(SimulationConfig(alerts_per_visit=300, stamp_size=16, seed=11))
    expected = {str(a["diaSourceId"]): a for v in range(2) for a in sim.visit_alerts(v)}
    store = LocalSchemaStore(tmp_path / "schemas")
    for m in messages:
        schema_id, body = unframe(m.value())
        assert schema_id == 1101
        assert store.get(schema_id).decode(body) == expected[m.key().decode()]
    assert {m.key().decode() for m in messages} == set(expected)


def test_visits_follow_the_cadence(kafka, topic_name):
    called = time.time()
    summary = produce(
        ProduceConfig(
            bootstrap=kafka.bootstrap_servers,
            topic=topic_name,
            visits=3,
            alerts_per_visit=20,
            interval_s=2.0,
            stamp_size=0,
            progress=False,
        )
    )
    starts = {}
    for r in summary.reports:  # each producer's share of each visit
        starts.setdefault(r.visit, []).append(r.started_at)
    assert sorted(starts) == [0, 1, 2]
    first = min(starts[0])
    assert (
        called <= first
    )  # after the producers' start-up (processes, schemas), never before the call
    for visit, times in starts.items():
        for started in times:  # on its slot, never early, and late by far less than a slot
            assert 0 <= started - (first + 2.0 * visit) < 0.5, (visit, started - first)


#: Made-up schemas with each survey's fields (replay knows a survey by its fields, not a name).
_CANDIDATE = {
    "type": "record",
    "name": "candidate",
    "fields": [
        {"name": n, "type": t}
        for n, t in (
            ("jd", "double"),
            ("fid", "int"),
            ("magpsf", "float"),
            ("sigmapsf", "float"),
            ("isdiffpos", "string"),
        )
    ],
}
ZTF_LIKE = {
    "type": "record",
    "name": "alert",
    "namespace": "ztf",
    "fields": [
        {"name": "objectId", "type": "string"},
        {"name": "candid", "type": "long"},
        {"name": "candidate", "type": _CANDIDATE},
        {"name": "prv_candidates", "type": ["null", {"type": "array", "items": "candidate"}]},
        {"name": "cutout", "type": ["null", "bytes"]},
    ],
}


def _ztf_records(n: int, start: int = 0) -> list[dict]:
    return [
        {
            "objectId": f"ZTF26aa{i:05d}",
            "candid": 10_000 + i,
            "candidate": {
                "jd": 2461000.5 + i,
                "fid": 1 + i % 3,
                "magpsf": 18.5 + i / 64,
                "sigmapsf": 0.125,
                "isdiffpos": "t",
            },
            "prv_candidates": None,
            "cutout": bytes([i % 256]) * 50,
        }
        for i in range(start, start + n)
    ]


def _replay_folder(tmp_path, schema: dict, records: list[dict]):
    folder = tmp_path / "archive"
    folder.mkdir()
    with open(folder / "a.avro", "wb") as f:
        fastavro.writer(f, schema, records[:70], codec="deflate", sync_interval=2000)
    with open(folder / "b.avro", "wb") as f:
        fastavro.writer(f, schema, records[70:])
    return folder


def _replay(kafka, topic_name, tmp_path, folder) -> None:
    summary = produce(
        ProduceConfig(
            bootstrap=kafka.bootstrap_servers,
            topic=topic_name,
            replay=[str(folder)],
            alerts_per_visit=50,
            interval_s=0,
            producers=2,
            progress=False,
            schema_dir=str(tmp_path / "schemas"),
        )
    )
    assert summary.ok and summary.expected == summary.acked == 120


def test_replayed_official_rubin_files_are_sent_confluent_framed_byte_for_byte(
    kafka, topic_name, tmp_path
):
    """Files written with Rubin's own schema go out as they are (a broker's export of another
    writer schema is re-encoded: test_exports.py)."""
    official = load_rubin_schema("10.0")
    records = list(
        AlertSimulator(SimulationConfig(schema_version="10.0", stamp_size=4, seed=3)).visit_alerts(
            0, count=120
        )
    )
    _replay(kafka, topic_name, tmp_path, _replay_folder(tmp_path, official.definition, records))

    def body_of(rec: dict) -> bytes:  # independent: encode each record on its own
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(official.definition), rec)
        return buf.getvalue()

    want = {str(r["diaSourceId"]): body_of(r) for r in records}
    got = {}
    for m in consume_all(kafka.bootstrap_servers, topic_name):
        schema_id, body = unframe(m.value())
        assert schema_id == official.schema_id == 1000
        got[m.key().decode()] = body
    assert got == want


def test_replayed_ztf_files_are_sent_as_ztf_does_one_container_per_alert(
    kafka, topic_name, tmp_path
):
    records = _ztf_records(120)
    _replay(kafka, topic_name, tmp_path, _replay_folder(tmp_path, ZTF_LIKE, records))
    got = {}
    for m in consume_all(kafka.bootstrap_servers, topic_name):
        reader = fastavro.reader(io.BytesIO(m.value()))
        assert reader.codec == "null"  # uncompressed, so Spark reads it in place
        assert reader.writer_schema["name"] == "ztf.alert"
        (record,) = list(reader)  # exactly one alert per message
        got[m.key().decode()] = record
    assert got == {str(r["candid"]): r for r in records}


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "produce", *args], capture_output=True, text=True, timeout=120)


def test_unknown_schema_version_fails_before_sending(kafka, topic_name):
    out = _run_cli(
        "--bootstrap", kafka.bootstrap_servers, "--topic", topic_name, "--schema-version", "42.0"
    )
    assert out.returncode == 2
    assert "Rubin alert schema 42.0 is not shipped by lsst-alert-packet" in out.stderr
    assert topic_name not in consume_topics(kafka.bootstrap_servers)


def consume_topics(bootstrap: str) -> set[str]:
    from alertsieve.kafka.topics import admin

    return set(admin(bootstrap).list_topics(timeout=10).topics)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"this is not avro at all",
            "is neither an Avro container file (no 'Obj\\x01' header) nor a Parquet file",
        ),
        (b"Obj\x01\x04garbage", "is not a readable Avro container file"),
    ],
)
def test_unreadable_replay_file_is_named(kafka, topic_name, tmp_path, content, message):
    bad = tmp_path / "bad.avro"
    bad.write_bytes(content)
    out = _run_cli(
        "--bootstrap", kafka.bootstrap_servers, "--topic", topic_name, "--replay", str(bad)
    )
    assert out.returncode == 2
    assert f"{bad} {message}" in out.stderr


def test_missing_replay_path_is_named(kafka, topic_name, tmp_path):
    out = _run_cli(
        "--bootstrap",
        kafka.bootstrap_servers,
        "--topic",
        topic_name,
        "--replay",
        str(tmp_path / "nope"),
    )
    assert out.returncode == 2 and f"{tmp_path / 'nope'} does not exist" in out.stderr


@pytest.mark.integration
def test_unreachable_broker_reports_nothing_acknowledged(topic_name):
    out = _run_cli("--bootstrap", "127.0.0.1:1", "--topic", topic_name, "--alerts-per-visit", "5")
    assert out.returncode == 2
    assert "cannot reach Kafka at 127.0.0.1:1" in out.stderr
    assert "nothing was sent: 0 alerts acknowledged" in out.stderr


def _journal_lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_a_producer_killed_mid_visit_reports_exactly_what_was_acknowledged(
    kafka, topic_name, tmp_path
):
    import os
    import signal
    import threading

    import psutil

    journal = tmp_path / "acks"
    cfg = ProduceConfig(
        bootstrap=kafka.bootstrap_servers,
        topic=topic_name,
        visits=1,
        alerts_per_visit=3000,
        interval_s=0,
        producers=2,
        partitions=2,
        stamp_size=84,
        seed=71,
        progress=False,
        schema_dir=str(tmp_path / "s"),
        ack_journal_dir=str(journal),
    )
    result: dict = {}
    sender = threading.Thread(target=lambda: result.setdefault("summary", produce(cfg)))
    sender.start()
    victim_journal = journal / "producer-1.acked"
    deadline = time.monotonic() + 120
    while len(_journal_lines(victim_journal)) < 200:  # some of its share acknowledged
        assert time.monotonic() < deadline and sender.is_alive(), "producer 1 never got going"
        time.sleep(0.01)
    victim = next(
        p
        for p in psutil.Process().children()
        if any(f.path == str(victim_journal) for f in p.open_files())
    )
    # Frozen first, so what it had acknowledged is fixed before it dies: the kill is mid-visit
    # by construction (checked), not by winning a race against the producer.
    os.kill(victim.pid, signal.SIGSTOP)
    acknowledged_by_victim = _journal_lines(victim_journal)
    # Each producer sends the alerts of its detectors: the simulator, run again, says which.
    sim = AlertSimulator(
        SimulationConfig(
            alerts_per_visit=3000,
            max_history=cfg.max_history,
            max_forced=cfg.max_history,
            stamp_size=84,
            seed=71,
        )
    )
    shares = [{alert_key(a) for a in sim.visit_alerts(0, part=k, parts=2)} for k in (0, 1)]
    assert len(shares[0]) + len(shares[1]) == 3000 and shares[0] and shares[1]
    assert set(acknowledged_by_victim) < shares[1], "stopped before it had sent its whole share"
    os.kill(victim.pid, signal.SIGKILL)
    sender.join(180)
    summary = result["summary"]

    assert _journal_lines(victim_journal) == acknowledged_by_victim  # nothing after the stop
    assert summary.crashed == [1] and not summary.ok
    assert summary.acked_before_crash == {1: len(acknowledged_by_victim)}
    assert summary.acked == len(shares[0]) + len(
        acknowledged_by_victim
    )  # producer 0 finished its share
    assert "died, after {1: " in summary.line()
    in_kafka = {m.key().decode() for m in consume_all(kafka.bootstrap_servers, topic_name)}
    # Everything reported acknowledged is in Kafka; what else is there was in flight when the
    # producer died (written by the broker, its acknowledgement never received).
    assert set(acknowledged_by_victim) <= in_kafka
    assert set(_journal_lines(journal / "producer-0.acked")) == shares[0] <= in_kafka
    assert len(in_kafka) >= summary.acked
