"""Replay knows a file's survey by its fields, not its record's name, and reads every Avro codec.

Brokers' ZTF samples are often Spark exports: the alert record is ``topLevelRecord``, its fields
are reordered and its unions flipped. Real ZTF 3.3 alerts and a real Rubin v10.0 file are the
oracle: each file here is written from their records with fastavro, and what replay sends must
decode to exactly those records. Pure Python: no broker, no Spark (the producer's own replay path
is called, short of sending).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from crafted import spark_export

from alertsieve.alerts.export_files import find_inputs
from alertsieve.alerts.exports import ExportError, plan_export, shape_of_avro
from alertsieve.alerts.replay import (
    read_raw_records,
    wire_message,
)
from alertsieve.alerts.schemas import load_rubin_schema, unframe
from alertsieve.alerts.ztf import MAGIC, header, schema_fingerprint, writer_of
from alertsieve.produce.producer import ProduceConfig, _replayed_visits, _schema_ids

REAL = Path(__file__).parent / "data" / "real"
ZTF = sorted((REAL / "ztf-3.3").glob("*.avro"))
RUBIN = REAL / "rubin-lsstcam-v10_0.avro"
CODECS = ("null", "deflate", "snappy", "zstandard", "bzip2", "xz")


def _read(path: Path) -> tuple[bytes, list[dict]]:
    """(writer schema JSON as the header holds it, records) of a container file."""
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return reader.metadata["avro.schema"].encode(), list(reader)


@pytest.fixture(scope="module")
def ztf_alerts() -> tuple[dict, list[dict]]:
    """ZTF's writer schema and the real alerts, in file order."""
    schemas, records = zip(*(_read(p) for p in ZTF), strict=True)
    assert len(set(schemas)) == 1
    return json.loads(schemas[0]), [r for rs in records for r in rs]


def _field(record: dict, name: str) -> Any:
    return next(f["type"] for f in record["fields"] if f["name"] == name)


def _write(path: Path, schema: dict, records: list[dict], codec: str = "null") -> Path:
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec)
    return path


def _produced(
    paths: list[Path], tmp_path: Path
) -> tuple[dict[str, int | None], list[tuple[str, bytes]]]:
    """What ``alertsieve produce --replay`` chooses for each official file (its schema id; None:
    ZTF framing) and the (key, message) pairs it would send."""
    cfg = ProduceConfig(
        bootstrap="unused",
        topic="replayed",
        replay=[str(p) for p in paths],
        schema_dir=str(tmp_path / "schemas"),
    )
    replay = _schema_ids(cfg)
    return replay.official_ids, [
        serialize(item) for batch, serialize in _replayed_visits(cfg, 0, replay) for item in batch
    ]


def _decode_container(message: bytes) -> dict:
    (record,) = list(fastavro.reader(io.BytesIO(message)))
    return record


def test_a_spark_export_of_ztf_alerts_goes_out_as_ztf_sends_it(tmp_path, ztf_alerts):
    """An export's writer schema is not ZTF's: its records go out re-encoded with ZTF's own
    schema (the one its real files carry), each decoding to the very alert."""
    schema, alerts = ztf_alerts
    exported = spark_export(schema)
    assert exported["name"] == "topLevelRecord" and "ztf" not in json.dumps(exported)
    assert [f["name"] for f in exported["fields"]] == [
        f["name"] for f in reversed(schema["fields"])
    ]
    candidate = _field(exported, "candidate")
    assert candidate["namespace"] == "topLevelRecord"
    assert _field(candidate, "diffmaglim") == ["null", "float"]  # ["float", "null"] in ZTF's
    (tmp_path / "export").mkdir()
    path = _write(tmp_path / "export" / "part-00000.avro", exported, alerts, "snappy")
    schema_json, _ = _read(path)

    ids, messages = _produced([tmp_path / "export"], tmp_path)  # --replay FOLDER

    assert ids == {}  # nothing sent byte for byte
    (official,) = (_read(p)[0] for p in ZTF[:1])
    assert official != schema_json
    assert [key for key, _ in messages] == [str(a["candid"]) for a in alerts]
    for (_, message), alert in zip(messages, alerts, strict=True):
        assert message.startswith(MAGIC)
        assert header(message) == {"avro.schema": official, "avro.codec": b"null"}
        assert writer_of(message)[0] == schema_fingerprint(official)
        assert _decode_container(message) == alert


@pytest.mark.parametrize("codec", CODECS)
def test_every_avro_codec_is_read_record_for_record(tmp_path, ztf_alerts, codec):
    schema, alerts = ztf_alerts
    parsed = fastavro.parse_schema(schema)
    path = _write(tmp_path / f"ztf-{codec}.avro", schema, alerts, codec)
    with open(path, "rb") as f:
        assert fastavro.reader(f).codec == codec

    raws = list(read_raw_records(path))

    encoded = []
    for alert in alerts:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, alert)
        encoded.append(out.getvalue())
    assert [r.body for r in raws] == encoded  # the decompressed record bytes, as written
    assert [fastavro.schemaless_reader(io.BytesIO(r.body), parsed, None) for r in raws] == alerts
    assert [(s.official, s.files) for s in find_inputs([path])] == [("ztf", [path])]
    assert [_decode_container(wire_message(r, None)) for r in raws] == alerts


def test_a_file_of_no_survey_is_refused_naming_the_fields_looked_for(tmp_path):
    weather = {"type": "record", "name": "weather", "fields": [{"name": "t", "type": "double"}]}
    path = _write(tmp_path / "weather.avro", weather, [{"t": 12.5}])

    with pytest.raises(ExportError) as refused:
        _schema_ids(
            ProduceConfig(
                bootstrap="unused",
                topic="replayed",
                replay=[str(path)],
                schema_dir=str(tmp_path / "schemas"),
            )
        )

    assert str(refused.value) == (
        f"{path}: neither ZTF alerts (fields objectId, candidate{{jd, fid, magpsf, sigmapsf,"
        " isdiffpos, candid}) nor Rubin alerts (fields diaSource{midpointMjdTai, diaSourceId}),"
        " at the top or inside one column; its fields: t"
    )


def test_a_ztf_alert_without_its_candidate_fields_is_no_ztf_alert(tmp_path, ztf_alerts):
    schema, _ = ztf_alerts
    stripped = spark_export(schema)
    candidate = _field(stripped, "candidate")
    candidate["fields"] = [f for f in candidate["fields"] if f["name"] != "magpsf"]

    with pytest.raises(ExportError, match="partial.avro: neither ZTF alerts"):
        plan_export(shape_of_avro(stripped), "partial.avro")


def test_rubin_alerts_still_go_out_rubin_framed(tmp_path):
    _, alerts = _read(RUBIN)
    official = load_rubin_schema("10.0")

    ids, messages = _produced([RUBIN], tmp_path)

    assert [(s.official, s.files) for s in find_inputs([RUBIN])] == [("rubin", [RUBIN])]
    assert ids == {str(RUBIN): official.schema_id}  # an official file: byte for byte
    assert [key for key, _ in messages] == [str(a["diaSourceId"]) for a in alerts]
    for (_, message), alert in zip(messages, alerts, strict=True):
        schema_id, body = unframe(message)
        assert schema_id == official.schema_id and official.decode(body) == alert


def test_a_spark_export_of_rubin_alerts_is_rubin_by_its_fields(tmp_path):
    exported = spark_export(load_rubin_schema("10.0").definition)
    assert exported["name"] == "topLevelRecord"
    plan = plan_export(shape_of_avro(exported), "rubin-export.avro")
    assert (plan.survey, plan.version) == ("rubin", "11.0")  # 10.0's fields are 11.0's too
