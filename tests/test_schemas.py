"""Rubin schema versions, ids, the Confluent wire format and the schema stores."""

from __future__ import annotations

import json

import pytest

from alertsieve.alerts import schemas
from alertsieve.alerts.schemas import (
    LocalSchemaStore,
    SchemaError,
    WireFormatError,
    frame,
    load_rubin_schema,
    unframe,
)


def test_versions_and_ids_follow_rubins_rule():
    versions = schemas.rubin_versions()
    assert "11.1" in versions and "3.0" in versions
    assert schemas.latest_rubin_version() == versions[-1]
    # The ids Rubin's Kafka carries (Confluent framing): 1101 for v11.1, 1000 for v10.0, 704 for
    # v7.4, taken from lsst-alert-packet's Schema.get_schema_id rather than our own rule.
    assert load_rubin_schema("11.1").schema_id == 1101
    assert load_rubin_schema("10.0").schema_id == 1000
    assert load_rubin_schema("7.4").schema_id == 704
    assert load_rubin_schema(1101).definition == load_rubin_schema("11.1").definition
    assert load_rubin_schema("v11_1").name == "lsst.v11_1.alert"
    assert load_rubin_schema().name == f"lsst.v{versions[-1].replace('.', '_')}.alert"


def test_shipped_rubin_schemas_are_lsst_alert_packets_and_load_as_it_loads_them():
    """The oracle is the pinned lsst-alert-packet itself: its files byte for byte (examples aside),
    and for every version its ``Schema.from_file`` definition and ``get_schema_id``."""
    from pathlib import Path

    from lsst.alert.packet import Schema
    from lsst.alert.packet.schema import get_latest_schema_version, get_schema_root

    theirs, ours = Path(get_schema_root()), schemas.rubin_schema_root()
    files = ["latest.txt", *(p.relative_to(theirs).as_posix() for p in theirs.glob("*/*/*.avsc"))]
    files = [f for f in files if not f.startswith("examples/")]
    shipped = ["latest.txt", *(p.relative_to(ours).as_posix() for p in ours.glob("*/*/*.avsc"))]
    assert sorted(shipped) == sorted(files) and len(files) > 90
    for name in files:
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    assert schemas.latest_rubin_version() == "{}.{}".format(*get_latest_schema_version())
    for version in schemas.rubin_versions():
        major, minor = version.split(".")
        official = Schema.from_file(
            str(theirs / major / minor / f"lsst.v{major}_{minor}.alert.avsc")
        )
        loaded = load_rubin_schema(version)
        assert loaded.definition == schemas._strip_fastavro_keys(official.definition), version
        assert loaded.schema_id == official.get_schema_id(), version


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("12.0", "Rubin alert schema 12.0 is not shipped by lsst-alert-packet; available: 3.0"),
        ("eleven", "schema version 'eleven' is neither 'MAJOR.MINOR'"),
        (99, "schema version 99 is neither"),
    ],
)
def test_unknown_versions_name_the_problem(version, message):
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_rubin_schema(version)


def test_wire_format_header():
    framed = frame(1101, b"avro-body")
    assert framed[:5] == b"\x00\x00\x00\x04\x4d"
    assert unframe(framed) == (1101, b"avro-body")
    with pytest.raises(WireFormatError, match="magic byte is 0x07, expected 0x00"):
        unframe(b"\x07" + framed[1:])
    with pytest.raises(
        WireFormatError, match="message of 3 bytes is shorter than the 5-byte header"
    ):
        unframe(b"\x00\x00\x00")


def test_local_store_is_seeded_with_rubin_and_registers_deterministically(tmp_path):
    store = LocalSchemaStore(tmp_path)
    assert {load_rubin_schema(v).schema_id for v in schemas.rubin_versions()} <= set(store.ids())
    assert store.get(1101).definition == load_rubin_schema("11.1").definition
    other = {
        "type": "record",
        "name": "ztf.alert",
        "fields": [{"name": "objectId", "type": "string"}],
    }
    first = store.register(other, "ztf-value")
    again = LocalSchemaStore(tmp_path).register(json.loads(json.dumps(other)), "ztf-value")
    assert first.schema_id == again.schema_id >= schemas.LOCAL_ID_BASE
    assert store.get(first.schema_id).definition == other
    with pytest.raises(SchemaError, match=f"schema id 42 is not in the local store {tmp_path}"):
        store.get(42)


def test_an_official_rubin_schema_registers_under_its_rubin_id(tmp_path):
    """A replayed LSSTCam file (its header's schema) goes out with the id Rubin would give it."""
    from pathlib import Path

    from alertsieve.alerts.replay import writer_schema

    real = Path(__file__).parent / "data" / "real"
    store = LocalSchemaStore(tmp_path)
    assert store.register(writer_schema(real / "rubin-lsstcam-v10_0.avro")).schema_id == 1000
    assert store.register(writer_schema(real / "rubin-opsrehearsal-v7_4.avro")).schema_id == 704
    changed = json.loads(json.dumps(load_rubin_schema("10.0").definition))
    changed["fields"] = changed["fields"][:-1]  # named like v10.0 but not it: a local id
    assert store.register(changed).schema_id >= schemas.LOCAL_ID_BASE
