"""One topic mixing good alerts with every kind of bad input, read by the real job: it never
stops, every bad message is quarantined with its reason, every good alert (odd but valid ones
included: NaN and infinities, null cutouts, a 10 MB alert) is filtered, and the counts add up."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import fastavro
import numpy as np
from confluent_kafka import Producer
from kafka_helpers import consume_all

from alertsieve.alerts.schemas import (
    LocalSchemaStore,
    frame,
    latest_rubin_version,
    load_rubin_schema,
    unframe,
)
from alertsieve.filtering.model import AlertFilter
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job

#: A real alert of an older schema version (tests/data/real: Rubin Operations Rehearsal, v7.4).
REAL_V7_4 = Path(__file__).parent / "data" / "real" / "rubin-opsrehearsal-v7_4.avro"

OTHER = {
    "type": "record",
    "name": "NotAnAlert",
    "namespace": "elsewhere",
    "fields": [{"name": "x", "type": "long"}, {"name": "note", "type": "string"}],
}
BRIGHT = "diaSource.snr > 50 AND diaSource.reliability > 0.9"


def _other_avro() -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(OTHER), {"x": 7, "note": "hello"})
    return out.getvalue()


def test_bad_input_corpus(kafka, spark, topic_name, tmp_path):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            alerts_per_visit=200,
            interval_s=0,
            stamp_size=0,
            seed=81,
            partitions=2,
            progress=False,
            schema_dir=schema_dir,
        )
    ).ok
    schema = load_rubin_schema()
    store = LocalSchemaStore(schema_dir)
    other_id = store.register(OTHER, f"{topic_name}-value").schema_id  # a wrong schema, registered

    sim = AlertSimulator(SimulationConfig(stamp_size=84, seed=82))
    odd = list(sim.visit_alerts(0, count=3))
    nan, nulls, huge = odd
    nan["diaSource"] |= {
        "snr": math.nan,
        "reliability": 0.95,
        "psfFlux": math.inf,
        "psfFluxErr": -math.inf,
    }
    nulls |= {"cutoutDifference": None, "cutoutScience": None, "cutoutTemplate": None}
    huge["diaSource"] |= {"snr": 1000.0, "reliability": 0.99}
    huge["cutoutScience"] = np.random.default_rng(1).bytes(10_000_000)  # a 10 MB alert
    good_odd = {str(a["diaSourceId"]): frame(schema.schema_id, schema.encode(a)) for a in odd}
    assert len(good_odd[str(huge["diaSourceId"])]) > 10_000_000

    sample = consume_all(bootstrap, topic_name)[0].value()
    older = load_rubin_schema("7.4")
    with open(REAL_V7_4, "rb") as f:
        real_older = older.encode(next(iter(fastavro.reader(f))))
    latest = latest_rubin_version()
    bad = {
        "empty": (b"", "empty message"),
        "random": (b"\x9c" + np.random.default_rng(2).bytes(700), "magic byte is 0x9c"),
        "truncated": (sample[: len(sample) // 2], "undecodable Avro body for schema id"),
        "wrong magic": (b"\x01" + sample[1:], "magic byte is 0x01, expected 0x00"),
        "unknown id": (frame(777_777, sample[5:]), "unknown schema id 777777"),
        "other schema, its own id": (
            frame(other_id, _other_avro()),
            f"schema id {other_id} (elsewhere.NotAnAlert) is not a Rubin alert schema",
        ),
        "version not read": (
            frame(older.schema_id, real_older),
            f"schema id {older.schema_id} ({older.name}) is not"
            f" among the versions this job reads ({latest}); add 7.4 to schema_versions",
        ),
        "other schema, alert id": (frame(schema.schema_id, _other_avro()), "undecodable Avro body"),
    }
    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 16 * 1024 * 1024})
    for key, value in good_odd.items():
        p.produce(topic_name, value=value, key=key)
    for name, (value, _) in bad.items():
        p.produce(topic_name, value=value, key=f"bad:{name}")
    assert p.flush(60) == 0

    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        max_offsets_per_trigger=70,
        output_prefix=f"{topic_name}-",
        discover_filters=False,
        code_filters=[AlertFilter(name="bright", sql=BRIGHT)],
        schema_versions=[latest],
        delta_path=str(tmp_path / "delta"),
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=str(tmp_path / "m.jsonl"),
        schema_dir=schema_dir,
    )
    run_job(cfg, spark=spark)
    metrics = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]

    # The counts add up: 203 good alerts decoded, 8 bad ones quarantined, nothing else.
    assert sum(b["input_rows"] for b in metrics) == 211
    assert sum(b["decoded_rows"] for b in metrics) == 203
    assert sum(b["quarantined_rows"] for b in metrics) == 8

    quarantined = {
        m.key().decode(): dict(m.headers())
        for m in consume_all(bootstrap, f"{topic_name}-quarantine")
    }
    assert set(quarantined) == {f"bad:{n}" for n in bad}
    for name, (_, reason) in bad.items():
        assert reason in quarantined[f"bad:{name}"]["reason"].decode(), name

    # Every good alert filtered: the expected matches from the test's own decoding. Spark SQL
    # orders NaN above every number, so the NaN alert passes `snr > 50` (see docs/filters.md).
    def bright(a) -> bool:
        s = a["diaSource"]
        snr_passes = math.isnan(s["snr"]) or s["snr"] > 50
        return snr_passes and s["reliability"] > 0.9

    alerts = {}
    for m in consume_all(bootstrap, topic_name):
        if not m.key().decode().startswith("bad:"):
            schema_id, body = unframe(m.value())
            alerts[m.key().decode()] = store.get(schema_id).decode(body)
    want = {k for k, a in alerts.items() if bright(a)}
    assert {str(nan["diaSourceId"]), str(huge["diaSourceId"])} <= want
    out = consume_all(bootstrap, f"{topic_name}-bright")
    assert sorted(m.key().decode() for m in out) == sorted(want)
    forwarded = {m.key().decode(): m.value() for m in out}
    assert (
        forwarded[str(huge["diaSourceId"])] == good_odd[str(huge["diaSourceId"])]
    )  # 10 MB, intact
    table = spark.read.format("delta").load(str(tmp_path / "delta" / "matches"))
    assert sorted(r["alert_id"] for r in table.select("alert_id").collect()) == sorted(want)
