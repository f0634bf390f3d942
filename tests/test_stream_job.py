"""The filter stream job end to end: real broker, real Spark, outputs checked against an
independent computation (fastavro + plain Python over the very bytes that were produced)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from crafted import REAL, real_messages
from job_helpers import JOB_FILTERS as FILTERS
from kafka_helpers import consume_all
from oracles import contributed_filters_in_plain_python, dayobs

from alertsieve.alerts.schemas import LocalSchemaStore, frame, load_rubin_schema, unframe
from alertsieve.backtest.run import backtest
from alertsieve.backtest.sources import load_alerts
from alertsieve.cli import main
from alertsieve.filtering.discovery import discover
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic, end_offsets
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job


@dataclass
class Run:
    topic: str
    prefix: str
    good: dict[str, dict]  # alert id -> decoded (reader schema)
    raw: dict[str, bytes]  # alert id -> the bytes produced
    where: dict[
        str, tuple[int, int, int]
    ]  # alert id -> (partition, offset, append time ms) on the input
    ran_ms: tuple[float, float]  # the job's run, unix ms before and after
    bad: dict[int, str]  # offset-independent: payload index -> expected reason prefix
    expected: dict[str, set[str]]
    metrics: list[dict]
    delta: str
    cfg: JobConfig
    leftovers: list  # the unfinished checkpoint writes the job started on


def malformed(rng: np.random.Generator, good_framed: bytes) -> list[tuple[bytes, str]]:
    """20 messages that must all be quarantined, with the start of the reason each must get."""
    out: list[tuple[bytes, str]] = []
    for n in (0, 3, 40, 200, 1000):  # random bytes, never starting with the magic 0x00
        body = bytes([int(rng.integers(1, 256))]) + rng.bytes(n)
        out.append((body, "magic byte is 0x" if n + 1 >= 5 else "message of"))
    for cut in (6, 50, 500, len(good_framed) // 2, len(good_framed) - 3):
        out.append((good_framed[:cut], "undecodable Avro body for schema id 1101"))
    for magic in (1, 2, 0x7F, 0xFF, 0x10):
        out.append(
            (bytes([magic]) + good_framed[1:], f"magic byte is 0x{magic:02x}, expected 0x00")
        )
    for sid in (4242, 1, 99, 1_000_000, 12345):
        out.append((frame(sid, good_framed[5:]), f"unknown schema id {sid}"))
    return out


@pytest.fixture(scope="module")
def run(kafka, spark, tmp_path_factory, field_catalog) -> Run:
    tmp = tmp_path_factory.mktemp("stream")
    topic = f"alerts-{uuid.uuid4().hex[:8]}"
    prefix = f"out-{uuid.uuid4().hex[:6]}-"
    schema_dir = str(tmp / "schemas")
    common = dict(
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        interval_s=0,
        stamp_size=16,
        partitions=4,
        progress=False,
        schema_dir=schema_dir,
    )
    assert produce(ProduceConfig(visits=3, alerts_per_visit=200, seed=21, **common)).ok
    assert produce(
        ProduceConfig(visits=1, alerts_per_visit=30, seed=22, schema_version="11.0", **common)
    ).ok
    produced = consume_all(kafka.bootstrap_servers, topic)
    assert len(produced) == 630

    rng = np.random.default_rng(5)
    bad = malformed(rng, produced[0].value())
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i, (value, _) in enumerate(bad):
        p.produce(topic, value=value, key=f"bad-{i}")
    assert p.flush(30) == 0

    store, reader = LocalSchemaStore(schema_dir), load_rubin_schema("11.1")
    good, raw, where = {}, {}, {}
    for m in produced:
        schema_id, body = unframe(m.value())
        alert = store.get(schema_id).decode(body, reader=reader)
        good[str(alert["diaSourceId"])] = alert
        raw[str(alert["diaSourceId"])] = m.value()
        where[str(alert["diaSourceId"])] = (m.partition(), m.offset(), m.timestamp()[1])
    expected = {
        name: {k for k, a in good.items() if test(a)} for name, (_, test) in FILTERS.items()
    }
    assert all(len(v) > 0 for v in expected.values()), {k: len(v) for k, v in expected.items()}

    cfg = JobConfig(
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        available_now=True,
        max_offsets_per_trigger=250,
        output_prefix=prefix,
        output_partitions=2,
        discover_filters=False,
        code_filters=[AlertFilter(name=n, sql=sql) for n, (sql, _) in FILTERS.items()],
        delta_path=str(tmp / "delta"),
        checkpoint=str(tmp / "ckpt"),
        metrics_path=str(tmp / "metrics.jsonl"),
        schema_dir=schema_dir,
        catalog_dir=str(field_catalog),
    )
    leftovers = killed_in_first_batch(tmp / "ckpt") + killed_in_first_batch(tmp / "ckpt-archive")
    before = time.time() * 1000
    run_job(cfg, spark=spark)
    ran_ms = (before, time.time() * 1000)
    metrics = [json.loads(x) for x in (tmp / "metrics.jsonl").read_text().splitlines()]
    return Run(
        topic,
        prefix,
        good,
        raw,
        where,
        ran_ms,
        dict(enumerate(r for _, r in bad)),
        expected,
        metrics,
        str(tmp / "delta"),
        cfg,
        leftovers,
    )


def killed_in_first_batch(checkpoint) -> list:
    """What a job killed -9 while writing its first batch's offsets and commit leaves in its
    checkpoint (as the soak's kill once did): Spark's unfinished writes, hidden temporary files.
    Spark 4.1 refuses such a checkpoint ("should be empty on batch 0") unless they are cleared."""
    paths = []
    for log_name in ("offsets", "commits"):
        name = f"0.{uuid.uuid4()}.tmp"
        (checkpoint / log_name).mkdir(parents=True)
        paths += [checkpoint / log_name / f".{name}", checkpoint / log_name / f"..{name}.crc"]
    for path in paths:
        path.write_bytes(b"")
    return paths


def test_kafka_outputs_equal_the_independent_computation(run, kafka):
    for name, want in run.expected.items():
        messages = consume_all(kafka.bootstrap_servers, f"{run.prefix}{name}")
        keys = [m.key().decode() for m in messages]
        assert sorted(keys) == sorted(want), name  # exactly once in a clean run
        assert (
            len(end_offsets(kafka.bootstrap_servers, f"{run.prefix}{name}")) == 2
        )  # output_partitions
        for m in messages:
            key = m.key().decode()
            assert m.value() == run.raw[key]  # forwarded unchanged
            headers = dict(m.headers())
            assert headers["filter"] == name.encode()
            assert headers["source_topic"] == run.topic.encode()
            # where the alert came from (the archive's exactly-once key) and when it was appended there
            source = tuple(
                int(headers[h]) for h in ("source_partition", "source_offset", "kafka_timestamp_ms")
            )
            assert source == run.where[key], key
            assert run.ran_ms[0] <= int(headers["processed_at_ms"]) <= run.ran_ms[1]


def test_delta_matches_equal_the_independent_computation(run, spark):
    table = spark.read.format("delta").load(f"{run.delta}/matches")
    rows = table.select("filters", "alert_id").collect()
    assert len({r["alert_id"] for r in rows}) == len(rows)  # one row per matched alert
    got = {name: sorted(r["alert_id"] for r in rows if name in r["filters"]) for name in FILTERS}
    assert got == {k: sorted(v) for k, v in run.expected.items()}
    want_any = set().union(*run.expected.values())
    assert {r["alert_id"] for r in rows} == want_any  # and no alert that matched nothing
    assert "cutoutDifference" not in table.columns  # cutouts dropped from tables by default
    one = table.where("array_contains(filters, 'bright')").limit(1).collect()[0]
    assert one["diaSource"]["snr"] == pytest.approx(run.good[one["alert_id"]]["diaSource"]["snr"])
    # The archive keeps the detection whole and, of the rest, the fields the filters read: the
    # history's length (first_seen reads only its size) and diaObject.nDiaSources.
    truth = run.good[one["alert_id"]]
    assert one["diaSource"]["diaSourceId"] == truth["diaSource"]["diaSourceId"]
    assert len(one["prvDiaSources"]) == len(truth["prvDiaSources"] or [])
    got = one["diaObject"] and one["diaObject"].asDict()
    assert got == (truth["diaObject"] and {"nDiaSources": truth["diaObject"]["nDiaSources"]})


def test_a_checkpoint_left_by_a_kill_in_its_first_batch_is_started_from(run):
    """The job above started on checkpoints holding only the unfinished writes of a first batch
    (its outputs are checked exactly by the tests beside this one): they are gone, its first batch
    is batch 0, and both queries committed their batches over them."""
    assert run.leftovers and not any(p.exists() for p in run.leftovers)
    assert min(b["batch_id"] for b in run.metrics) == 0
    for checkpoint in (run.cfg.checkpoint, run.cfg.archive_checkpoint):
        assert "0" in {p.name for p in (Path(checkpoint) / "commits").iterdir()}


def test_every_malformed_message_is_quarantined_with_its_reason(run, spark, kafka):
    q = spark.read.format("delta").load(f"{run.delta}/quarantine").collect()
    assert len(q) == 20
    by_key = {r["key"].decode(): r for r in q}
    for i, reason in run.bad.items():
        assert by_key[f"bad-{i}"]["reason"].startswith(reason), (i, by_key[f"bad-{i}"]["reason"])
        assert by_key[f"bad-{i}"]["topic"] == run.topic
    assert len(consume_all(kafka.bootstrap_servers, f"{run.prefix}quarantine")) == 20


def test_metrics_add_up(run):
    batches = [m for m in run.metrics if m["kind"] == "batch"]
    assert len(batches) >= 3  # 650 messages at 250 per trigger
    assert sum(b["input_rows"] for b in batches) == len(run.good) + 20
    assert sum(b["quarantined_rows"] for b in batches) == 20
    assert sum(b["decoded_rows"] for b in batches) == len(run.good)
    for name, want in run.expected.items():
        assert sum(b["matches"][name] for b in batches) == len(want)
    for b in batches:
        assert b["latency_s"]["max"] >= b["latency_s"]["p50"] > 0
        assert b["rows_per_s"] > 0
    assert any("spark" in b and "addBatch" in b["spark"]["durationMs"] for b in batches)


BREAKS_ON_SOME_ALERTS = '''
from alertsieve.filtering.model import python_filter

FAILS_ON = {ids}

@python_filter(name="breaks_on_some_alerts", columns={{"id": "diaSource.diaSourceId", "snr": "diaSource.snr"}}, max_rate=1.0)
def breaks(alerts):
    """Raises on a chunk of rows holding one of a few alerts from the middle of the stream (never
    among the topic's first or newest, which the start-up check samples), as a filter whose
    calibration table lacks them would."""
    if alerts["id"].isin(FAILS_ON).any():
        raise ValueError("calibration table missing")
    return alerts["snr"] > 0
'''


EVERYTHING = """
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(name="everything", sql="diaSource.snr > 0", description="every detection")
"""


#: Statically fine (no builder inside its lambda), yet 10,000 SHA-512 hashes an alert: about
#: 7 ms of a core (measured 2026-12-06), fourteen times admission's default budget of 0.5 ms.
HEAVY = """
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="heavy",
    sql="exists(sequence(1, 10000), x -> sha2(cast(x + diaSource.diaSourceId AS string), 512) = '')",
)
"""


#: x / 0 on every alert (diaSourceId is never null): suspended after the first batch.
DIVIDES = """
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="divides",
    sql="diaSource.diaSourceId / (diaSource.diaSourceId - diaSource.diaSourceId) > 1",
    max_rate=1.0,
)
"""


SLEEPY = '''
import time

from alertsieve.filtering.model import python_filter


@python_filter(name="sleepy", columns={"snr": "diaSource.snr"})
def sleepy(alerts):
    """A quarter of a second per chunk of rows, as a filter calling a slow model would take."""
    time.sleep(0.25)
    return alerts["snr"] > 1e9
'''


def _batch_id(line: dict) -> int:
    return line["batch_id"]


def _reference(bootstrap: str, schema_dir: str) -> tuple[str, int, int]:
    """A reference topic for admission: 2,000 simulated alerts and the 8 real LSSTCam ones;
    (its name, its alerts, those with diaSource.snr > 0 as fastavro reads them)."""
    topic = f"reference-{uuid.uuid4().hex[:8]}"
    for config in (
        dict(visits=1, alerts_per_visit=2000, seed=77, stamp_size=0),
        dict(
            replay=[
                str(REAL / "rubin-lsstcam-v10_0.avro"),
                str(REAL / "rubin-lsstcam-v10_0-b.avro"),
            ]
        ),
    ):
        assert produce(
            ProduceConfig(
                bootstrap=bootstrap,
                topic=topic,
                interval_s=0,
                partitions=1,
                progress=False,
                schema_dir=schema_dir,
                **config,
            )
        ).ok
    store = LocalSchemaStore(schema_dir)
    snrs = [
        store.get(unframe(m.value())[0]).decode(unframe(m.value())[1])["diaSource"]["snr"]
        for m in consume_all(bootstrap, topic)
    ]
    return topic, len(snrs), sum(1 for x in snrs if x is not None and x > 0)


def test_contributed_filters_run_together_and_equal_plain_python(
    run, spark, kafka, tmp_path, caplog, capsys
):
    """All discovered filters in one job, plus one that raises on some rows at runtime: it loses
    its output for the rows it failed on (the chunk of a batch holding one of a few alerts) and keeps it
    for the others, the error counted; the other filters are exactly the independent computation. The stream is the simulated
    alerts and the real ones of tests/data/real, with edited copies of real alerts that pass each
    filter (tests/crafted.py): the simulator gives some filters nothing to pass, rightly.

    Admission is on (a reference topic of 2,000 simulated alerts and the real LSSTCam ones, 5%,
    on_bad_filter: skip): ``everything`` passes every detection, is refused with its rate and
    publishes nothing; ``heavy`` is refused with its cost per alert, above the budget; the
    failing filter is admitted by its own max_rate of 1. ``divides`` raises on every alert: its
    errors are counted, it is suspended after its first batch (the hot path restarts without
    it, the counts topic says why) and the other filters publish exactly as without it. Each Python
    filter's time is in every batch's metrics; ``sleepy`` (0.25 s a chunk) is named above the
    budget of 0.1 s per 1,000 alerts."""
    (tmp_path / "extra").mkdir()
    fails_on = {int(k) for k in list(run.good)[300:303]}
    (tmp_path / "extra" / "breaks.py").write_text(
        BREAKS_ON_SOME_ALERTS.format(ids=sorted(fails_on))
    )
    (tmp_path / "extra" / "everything.py").write_text(EVERYTHING)
    (tmp_path / "extra" / "heavy.py").write_text(HEAVY)
    (tmp_path / "extra" / "divides.py").write_text(DIVIDES)
    (tmp_path / "extra" / "sleepy.py").write_text(SLEEPY)
    reference, ref_alerts, ref_passing = _reference(kafka.bootstrap_servers, run.cfg.schema_dir)
    source, prefix = f"contrib-{uuid.uuid4().hex[:8]}", "contrib-"
    real = real_messages()
    create_topic(kafka.bootstrap_servers, source, 2)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for key, value in [*run.raw.items(), *real]:
        p.produce(source, value=value, key=key)
    assert p.flush(30) == 0
    alerts = dict(run.good)
    for _, message in real:
        schema_id, body = unframe(message)
        alert = load_rubin_schema(schema_id).decode(body)
        alerts[str(alert["diaSource"]["diaSourceId"])] = alert
    assert len(alerts) == len(run.good) + len(real)
    cfg = JobConfig(
        bootstrap=kafka.bootstrap_servers,
        topic=source,
        available_now=True,
        max_offsets_per_trigger=250,
        output_prefix=prefix,
        discover_filters=True,
        metrics_path=None,
        filter_paths=[str(tmp_path / "extra")],
        delta_path=str(tmp_path / "delta"),
        checkpoint=str(tmp_path / "ckpt"),
        schema_dir=run.cfg.schema_dir,
        admission={"reference": reference, "max_rate": 0.05},
        on_bad_filter="skip",
        python_filter_budget=0.1,
    )
    with caplog.at_level(logging.INFO, logger="alertsieve"):
        lines = run_job(cfg, spark=spark)
    said = [r.getMessage() for r in caplog.records]
    # The cost of each Python filter, every batch; sleepy's at least its sleep, named above budget.
    # The job reads Rubin alerts, so it runs the Python filters written for Rubin or for any survey.
    python = {
        f.name
        for f in discover([tmp_path / "extra"])
        if f.runs_python and f.survey in (None, "rubin")
    }
    assert {"sleepy", "breaks_on_some_alerts"} <= python
    for b in lines:
        assert set(b["filter_seconds"]) == python, b["filter_seconds"]
        assert b["filter_seconds"]["sleepy"] >= 0.25
        per = b["filter_seconds_per_1000"]["sleepy"]
        assert per == round(1000 * b["filter_seconds"]["sleepy"] / b["input_rows"], 4)
        assert any(
            m.startswith(f"batch {b['batch_id']}: python filter sleepy took {per:.2f} s per 1,000")
            for m in said
        ), b["batch_id"]
        assert any(m.startswith(f"batch {b['batch_id']}: ") and "; python: " in m for m in said)
    (refusal,) = [m for m in said if "refused everything" in m]
    assert refusal == (
        f"refused everything: filter 'everything' ({tmp_path / 'extra' / 'everything.py'}) is"
        f" refused by admission: it passes {ref_passing / ref_alerts:.2%} of the reference"
        f" ({ref_passing} of {ref_alerts} alerts of {reference}), above its cap of 5.00%;"
        " narrow its condition, or give it max_rate; left out"
    )
    assert ref_passing / ref_alerts > 0.05 and ref_alerts == 2008
    (heavy,) = [m for m in said if m.startswith("refused heavy: ")]
    assert re.fullmatch(
        rf"refused heavy: filter 'heavy' \({re.escape(str(tmp_path / 'extra' / 'heavy.py'))}\)"
        r" is refused by admission: its condition costs [\d.]+ ms of a core per alert of the"
        rf" reference \({reference}\), above the budget of 500 µs; .*; left out",
        heavy,
    ), heavy
    assert all("everything" not in b["matches"] for b in lines)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    assert f"{prefix}everything" not in admin.list_topics(timeout=10).topics
    records = [
        json.loads(m.value()) for m in consume_all(kafka.bootstrap_servers, f"{prefix}counts")
    ]
    refused = [r for r in records if r["kind"] == "refused"]
    ran = {
        n: f["version"] for r in records if r["kind"] == "counts" for n, f in r["filters"].items()
    }
    assert [set(r["filters"]) for r in refused] == [{"everything", "heavy"}, {"divides"}]
    first = min((b for b in lines if b["filter_error_alerts"].get("divides")), key=_batch_id)
    assert first["filter_error_alerts"]["divides"] == first["decoded_rows"] >= 20
    assert refused[1]["filters"]["divides"]["reason"].startswith(
        f"suspended: its SQL raised an error on {first['decoded_rows']} of the"
        f" {first['decoded_rows']} alerts of batch {first['batch_id']}, above 50%"
    )
    assert "the hot path restarts without divides (suspended)" in said
    first_run = first["spark"]["runId"]  # none of its errors after the restart
    assert all(b["spark"]["runId"] == first_run for b in lines if "divides" in b["filter_errors"])
    deployed = [
        json.loads(m.value()) for m in consume_all(kafka.bootstrap_servers, f"{prefix}deployment")
    ]
    assert "divides" in deployed[0]["filters"] and "divides" not in deployed[-1]["filters"]
    assert (
        deployed[-1]["refused"]["divides"]["reason"] == refused[1]["filters"]["divides"]["reason"]
    )
    expected = contributed_filters_in_plain_python(alerts)
    # filters list, asked about the job: everything refused with its reason, the others running.
    shown = ["everything", *sorted(expected)]
    listed = ["filters", "list", ",".join(shown), "--filter-path", str(tmp_path / "extra")]
    job = ["--bootstrap", kafka.bootstrap_servers, "--output-prefix", prefix]
    capsys.readouterr()
    assert main([*listed, *job]) == 0
    states = [
        line.split("in the job: ", 1)[1]
        for line in capsys.readouterr().out.splitlines()
        if "in the job: " in line
    ]
    reason = refusal.removeprefix("refused everything: ").removesuffix("; left out")
    assert states[0].startswith("refused (") and states[0].endswith(f"): {reason}; not running")
    assert states[1:] == [f"running this version ({ran[n]})" for n in sorted(expected)]
    assert all(len(v) > 0 for v in expected.values()), {k: len(v) for k, v in expected.items()}
    table = spark.read.format("delta").load(str(tmp_path / "delta" / "matches"))
    rows = table.select("filters", "alert_id").collect()
    for name, want in expected.items():
        topic = f"{prefix}{name}"
        assert sorted(
            m.key().decode() for m in consume_all(kafka.bootstrap_servers, topic)
        ) == sorted(want)
        assert sum(b["matches"][name] for b in lines) == len(want)
        assert {r["alert_id"] for r in rows if name in r["filters"]} == want, name
    # fast_risers keeps cutouts (cutouts=True): its matches carry the original FITS bytes, others none.
    images = table.select("alert_id", "filters", "cutoutDifference").collect()
    for r in images:
        if "fast_risers" in r["filters"]:
            assert r["cutoutDifference"] == alerts[r["alert_id"]]["cutoutDifference"]
        else:
            assert r["cutoutDifference"] is None
    # The failing filter: a Python filter runs on one chunk of rows at a time (a batch's rows of one
    # Kafka partition here), so the chunks holding one of its failing alerts lose its output.
    place = {
        m.key().decode(): (m.partition(), m.offset())
        for m in consume_all(kafka.bootstrap_servers, source)
    }
    chunks: dict[tuple[int, int], set[str]] = {}
    start: dict[int, int] = {}
    for b in sorted(lines, key=lambda b: b["batch_id"]):
        end = {int(p): o for p, o in b["spark"]["endOffset"][source].items()}
        for key, (p, o) in place.items():
            if key in alerts and start.get(p, 0) <= o < end[p]:
                chunks.setdefault((b["batch_id"], p), set()).add(key)
        start = end
    failing = {c for c, keys in chunks.items() if any(int(k) in fails_on for k in keys)}
    kept = {
        k
        for c, keys in chunks.items()
        if c not in failing
        for k in keys
        if (alerts[k]["diaSource"]["snr"] or 0) > 0
    }
    assert failing and len(failing) < len(chunks) and kept, (failing, len(chunks))
    published = [
        m.key().decode()
        for m in consume_all(kafka.bootstrap_servers, f"{prefix}breaks_on_some_alerts")
    ]
    assert sorted(published) == sorted(kept)
    assert {r["alert_id"] for r in rows if "breaks_on_some_alerts" in r["filters"]} == kept
    assert sum(b["matches"]["breaks_on_some_alerts"] for b in lines) == len(kept)
    failed = [b for b in lines if "breaks_on_some_alerts" in b["filter_errors"]]
    assert {b["batch_id"] for b in failed} == {
        batch for batch, _ in failing
    }  # counted where it failed
    assert (
        "ValueError: calibration table missing"
        in failed[0]["filter_errors"]["breaks_on_some_alerts"]
    )

    # The archive, backtested: a filter the job never ran, on a field it never archived, decoded
    # from the archived messages; the real alerts' nights only (after the simulated visits').
    archived = {r["alert_id"] for r in rows}
    north = AlertFilter(name="object_north", sql="diaObject.dec > -30")
    assert "diaObject" not in table.columns or "dec" not in table.schema["diaObject"].dataType.names
    since = date(2025, 11, 21)  # the simulated visits are on the night of 2025-11-20
    (row,) = backtest(
        spark,
        [north],
        load_alerts(spark, str(tmp_path / "delta"), schema_dir=cfg.schema_dir),
        since=since,
    )
    later = {k for k in archived if dayobs(alerts[k]["diaSource"]["midpointMjdTai"]) >= since}
    assert 0 < len(later) < len(archived)
    assert (row.alerts, row.archived) == (len(later), True)
    assert row.matches == sum(
        1 for k in later if (alerts[k]["diaObject"] or {}).get("dec", -90) > -30
    )
    assert row.night_alerts == {
        n: sum(dayobs(alerts[k]["diaSource"]["midpointMjdTai"]) == n for k in later)
        for n in {dayobs(alerts[k]["diaSource"]["midpointMjdTai"]) for k in later}
    }
