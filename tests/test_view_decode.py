"""One topic mixing Rubin versions, decoded by Spark into the filter view: real LSSTCam v10.0 and
Operations Rehearsal v7.4 alerts (their own bytes, in Rubin's wire format) beside simulated v11.1,
each read with its own schema and resolved into the fields asked for, against fastavro + plain Python."""

from __future__ import annotations

import io
import re
from pathlib import Path

import fastavro
import pytest

from alertsieve.alerts.replay import read_raw_records
from alertsieve.alerts.schemas import frame, load_rubin_schema
from alertsieve.alerts.view import build_view
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import rubin_decoder

REAL = Path(__file__).parent / "data" / "real"
VERSIONS = {"7.4": 704, "10.0": 1000, "11.1": 1101}
PATHS = [
    "alertId",
    "diaSourceId",
    "diaSource.diaSourceId",
    "diaSource.snr",
    "diaSource.psfFlux",
    "diaSource.reliability",
    "diaSource.exposureTime",
    "diaSource.midpointMjdTai",
    "prvDiaSources[].psfFlux",
    "prvDiaSources[].midpointMjdTai",
    "diaObject.nDiaSources",
    "ssSource.ssObjectId",
    "ssObject.ssObjectId",
]


def _messages() -> list[tuple[str, bytes]]:
    """(version, framed message): the real files' record bytes as they are, and 8 simulated."""
    out = []
    for name, version in (
        ("rubin-lsstcam-v10_0.avro", "10.0"),
        ("rubin-opsrehearsal-v7_4.avro", "7.4"),
    ):
        out += [(version, frame(VERSIONS[version], r.body)) for r in read_raw_records(REAL / name)]
    sim = AlertSimulator(SimulationConfig(schema_version="11.1", stamp_size=0, seed=5))
    schema = load_rubin_schema("11.1")
    out += [("11.1", frame(1101, schema.encode(a))) for a in sim.visit_alerts(0, count=8)]
    return out


def _nest(record: dict) -> dict:
    """The projection as the view's nested struct would show it: a record or array the version has
    is there (with null for the fields it lacks), one it lacks is null."""
    out: dict = {}
    for path in PATHS:
        head, _, rest = path.partition(".")
        key = head.removesuffix("[]")
        value = record.get(key)
        if not rest or value is None:
            out[key] = value
        elif head.endswith("[]"):
            items = out.setdefault(key, [{} for _ in value])
            for item, source in zip(items, value, strict=True):
                item[rest] = source.get(rest)
        else:
            out.setdefault(key, {})[rest] = value.get(rest)
    return out


@pytest.fixture(scope="module")
def decoded(spark):
    messages = _messages()
    raw = message_frame(spark, [m for _, m in messages])
    decoder = rubin_decoder(
        DecodeSettings(topic="mixed", survey="rubin", schema_versions=tuple(VERSIONS))
    )
    assert decoder.view == build_view(list(VERSIONS))
    frame_ = decoder.decode(raw, PATHS).orderBy("_offset")
    return messages, frame_


def test_a_topic_mixing_versions_decodes_into_one_view_equal_to_fastavro(decoded):
    messages, frame_ = decoded
    rows = frame_.collect()
    assert len(rows) == len(messages) == 6 + 6 + 8
    for (version, message), row in zip(messages, rows, strict=True):
        schema = load_rubin_schema(version)
        record = fastavro.schemaless_reader(io.BytesIO(message[5:]), schema.parsed, None)
        assert (row["_schema_id"], row["_reason"]) == (VERSIONS[version], None)
        assert row["alert"].asDict(recursive=True) == _nest(record), version


def test_versions_lacking_a_field_read_it_as_null(decoded):
    messages, frame_ = decoded
    rows = frame_.collect()
    by_version = {
        v: [r["alert"] for (vv, _), r in zip(messages, rows, strict=True) if vv == v]
        for v in VERSIONS
    }
    assert all(a["alertId"] is None and a["diaSourceId"] is not None for a in by_version["10.0"])
    assert all(a["alertId"] is not None and a["diaSourceId"] is None for a in by_version["7.4"])
    assert all(
        a["diaSource"]["exposureTime"] is None for v in ("7.4", "10.0") for a in by_version[v]
    )
    assert all(a["ssObject"] is None for a in by_version["11.1"])  # v11 has no ssObject


def test_each_version_is_decoded_once_per_row(decoded):
    _, frame_ = decoded
    plan = frame_._jdf.queryExecution().optimizedPlan().toString()
    assert len(re.findall(r"from_avro\(", plan)) == len(VERSIONS)


def test_every_sample_alert_of_lsst_alert_packet_decodes(spark):
    """lsst-alert-packet's fakeAlert.avro of every version it ships (3.0 to the latest), framed
    with its id, decodes into one view of all versions; each id and position equals fastavro's."""
    from lsst.alert.packet.schema import get_schema_root

    from alertsieve.alerts.schemas import rubin_versions

    messages, expected = [], []
    for version in rubin_versions():
        major, minor = version.split(".")
        path = Path(get_schema_root()) / major / minor / "sample_data" / "fakeAlert.avro"
        with open(path, "rb") as f:
            (record,) = list(fastavro.reader(f))
        (raw,) = list(read_raw_records(path))
        messages.append(frame(load_rubin_schema(version).schema_id, raw.body))
        s = record["diaSource"]
        expected.append(
            (s["diaSourceId"], s["ra"], s.get("dec"))
        )  # "decl" before 4.0: null in the view
    decoder = rubin_decoder(
        DecodeSettings(topic="s", survey="rubin", schema_versions=tuple(rubin_versions()))
    )
    paths = ["diaSource.diaSourceId", "diaSource.ra", "diaSource.dec"]
    rows = decoder.decode(message_frame(spark, messages), paths).orderBy("_offset").collect()
    assert [r["_reason"] for r in rows] == [None] * len(rubin_versions())
    got = [
        (
            r["alert"]["diaSource"]["diaSourceId"],
            r["alert"]["diaSource"]["ra"],
            r["alert"]["diaSource"]["dec"],
        )
        for r in rows
    ]
    assert got == expected
