"""One topic mixing Rubin versions, decoded by Spark into the filter view: real LSSTCam v10.0 and
Operations Rehearsal v7.4 alerts (their own bytes, in Rubin's wire format) beside simulated v11.1,
each read with its own schema pruned to the fields asked for, against fastavro + plain Python."""

from __future__ import annotations

import io
import re
from pathlib import Path

import fastavro
import pytest

from alertsieve.alerts.replay import read_raw_records
from alertsieve.alerts.schemas import frame, load_rubin_schema
from alertsieve.alerts.view import build_view, leaves
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.stream.view_decode import decode_view

REAL = Path(__file__).parent / "data" / "real"
VERSIONS = {"7.4": 704, "10.0": 1000, "11.1": 1101}
PATHS = ["alertId", "diaSourceId", "diaSource.diaSourceId", "diaSource.snr", "diaSource.psfFlux",
         "diaSource.reliability", "diaSource.exposureTime", "diaSource.midpointMjdTai",
         "prvDiaSources[].psfFlux", "prvDiaSources[].midpointMjdTai", "diaObject.nDiaSources",
         "ssSource.ssObjectId", "ssObject.ssObjectId"]  # fmt: skip


def _messages() -> list[tuple[str, bytes]]:
    """(version, framed message): the real files' record bytes as they are, and 8 simulated."""
    out = []
    for name, version in (("rubin-lsstcam-v10_0.avro", "10.0"), ("rubin-opsrehearsal-v7_4.avro", "7.4")):
        out += [(version, frame(VERSIONS[version], r.body)) for r in read_raw_records(REAL / name)]
    sim = AlertSimulator(SimulationConfig(schema_version="11.1", stamp_size=0, seed=5))
    schema = load_rubin_schema("11.1")
    out += [("11.1", frame(1101, schema.encode(a))) for a in sim.visit_alerts(0, count=8)]
    return out


def _project(record: dict, path: str):
    """The value at a view path in a fastavro-decoded record; None where the version lacks it."""
    head, _, rest = path.partition(".")
    key = head.removesuffix("[]")
    value = record.get(key)
    if not rest:
        return value
    if value is None:
        return None
    if head.endswith("[]"):
        return [_project(item, rest) for item in value]
    return _project(value, rest)


def _nest(record: dict, has: set[str]) -> dict:
    """The projection as the view's nested struct would show it; ``has``: the version's paths. A
    record of which the version has none of the asked-for fields is null, like a missing one."""
    out: dict = {}
    for path in PATHS:
        head, _, rest = path.partition(".")
        key = head.removesuffix("[]")
        if not rest:
            out[key] = record.get(key)
            continue
        value = record.get(key)
        if value is None or not any(p in has for p in PATHS if p.startswith(f"{head}.")):
            out[key] = None
        elif head.endswith("[]"):
            items = out.setdefault(key, [{} for _ in value])
            for item, source in zip(items, value, strict=True):
                item[rest] = source.get(rest)
        else:
            node = out.setdefault(key, {})
            if node is not None:
                node[rest] = value.get(rest)
    return out


@pytest.fixture(scope="module")
def decoded(spark):
    messages = _messages()
    raw = spark.createDataFrame([(m,) for _, m in messages], "value binary")
    writers = {sid: load_rubin_schema(v) for v, sid in VERSIONS.items()}
    view = build_view(list(VERSIONS))
    frame_ = decode_view(raw, writers, view, PATHS)
    return messages, frame_


def test_a_topic_mixing_versions_decodes_into_one_view_equal_to_fastavro(decoded):
    messages, frame_ = decoded
    rows = frame_.collect()
    assert len(rows) == len(messages) == 6 + 6 + 8
    for (version, message), row in zip(messages, rows, strict=True):
        schema = load_rubin_schema(version)
        record = fastavro.schemaless_reader(io.BytesIO(message[5:]), schema.parsed, None)
        assert row["_schema_id"] == VERSIONS[version]
        has = set(leaves(schema.definition))
        assert row["alert"].asDict(recursive=True) == _nest(record, has), version


def test_versions_lacking_a_field_read_it_as_null(decoded):
    messages, frame_ = decoded
    rows = frame_.collect()
    by_version = {v: [r["alert"] for (vv, _), r in zip(messages, rows, strict=True) if vv == v] for v in VERSIONS}
    assert all(a["alertId"] is None and a["diaSourceId"] is not None for a in by_version["10.0"])
    assert all(a["alertId"] is not None and a["diaSourceId"] is None for a in by_version["7.4"])
    assert all(a["diaSource"]["exposureTime"] is None for v in ("7.4", "10.0") for a in by_version[v])
    assert all(a["ssObject"] is None for a in by_version["11.1"])  # v11 has no ssObject


def test_each_version_is_decoded_once_per_row(decoded):
    _, frame_ = decoded
    plan = frame_._jdf.queryExecution().optimizedPlan().toString()
    assert len(re.findall(r"from_avro\(", plan)) == len(VERSIONS)
