"""ZTF's wire format: a whole container file per message, read as one Avro record (checked with
fastavro against its own container reader on real ZTF 3.3 alerts)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import fastavro
import pytest

from alertsieve.alerts.ztf import ContainerError, container_schema, writer_of

ZTF = sorted((Path(__file__).parent / "data" / "real" / "ztf-3.3").glob("*.avro"))


@pytest.mark.parametrize("path", ZTF, ids=lambda p: p.stem)
def test_a_ztf_message_is_one_record_of_the_container_schema(path):
    message = path.read_bytes()
    fingerprint, writer = writer_of(message)
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        (expected,) = list(reader)
    schema_json = reader.metadata["avro.schema"]  # the header's schema, as fastavro reads it
    record = fastavro.schemaless_reader(io.BytesIO(message), container_schema(writer), None)
    assert {k: v for k, v in record.items() if not k.startswith("_container")} == expected
    assert (
        record["_container_count"] == 1
        and record["_container_sync"] == record["_container_sync_end"]
    )
    assert (writer.get("namespace"), writer["name"]) == ("ztf", "alert")
    assert fingerprint == hashlib.sha256(schema_json.encode()).hexdigest()
    assert writer == json.loads(schema_json)


def test_all_real_ztf_files_share_one_writer_schema():
    assert len({writer_of(p.read_bytes())[0] for p in ZTF}) == 1


def test_what_cannot_be_read_in_place_is_named(tmp_path):
    with pytest.raises(ContainerError, match="not an Avro container file"):
        writer_of(b"\x00\x00\x00\x03\xe8rubin framing")
    record_schema = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]}
    buffer = io.BytesIO()
    fastavro.writer(buffer, record_schema, [{"x": 1}], codec="deflate")
    with pytest.raises(ContainerError, match="a deflate-compressed container"):
        writer_of(buffer.getvalue())


ZTF_PATHS = [
    "objectId",
    "candid",
    "candidate.magpsf",
    "candidate.jd",
    "candidate.rb",
    "prv_candidates[].jd",
    "prv_candidates[].magpsf",
]


def test_spark_reads_ztf_messages_in_place_equal_to_fastavro(spark):
    """Real ZTF messages (container files as ZTF's Kafka carries them) decoded by the job's ZTF
    decoder, against fastavro; what is not a readable container is quarantined with its reason."""

    from alertsieve.view.samples import message_frame
    from alertsieve.view.surveys import ztf_decoder

    messages = [p.read_bytes() for p in ZTF]
    buffer = io.BytesIO()
    fastavro.writer(
        buffer,
        {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]},
        [{"x": 1}],
        codec="deflate",
    )
    unseen = messages[0].replace(b'"schemavsn"', b'"schemavsN"', 1)  # another schema's header
    bad = [b"not a container", b"", buffer.getvalue(), unseen]
    decoder = ztf_decoder([])  # only the schemas alertsieve ships: ZTF 3.3
    rows = (
        decoder.decode(message_frame(spark, messages + bad), ZTF_PATHS).orderBy("_offset").collect()
    )
    for message, row in zip(messages, rows, strict=False):
        with io.BytesIO(message) as f:
            (a,) = list(fastavro.reader(f))
        assert row["_reason"] is None
        got = row["alert"].asDict(recursive=True)
        assert (got["objectId"], got["candid"]) == (a["objectId"], a["candid"])
        c = a["candidate"]
        assert got["candidate"] == {"magpsf": c["magpsf"], "jd": c["jd"], "rb": c["rb"]}
        prv = a["prv_candidates"] or []
        assert [(p["jd"], p["magpsf"]) for p in got["prv_candidates"] or []] == [
            (p["jd"], p["magpsf"]) for p in prv
        ]
    reasons = [r["_reason"] for r in rows[len(messages) :]]
    assert (
        reasons[0]
        == "not an Avro container file (starts with 0x6e6f7420; ZTF sends one per message)"
    )
    assert reasons[1] == "empty message"
    assert reasons[2] == "a deflate-compressed container: only uncompressed ones are read in place"
    assert reasons[3].startswith("a ZTF container whose writer schema (sha256 ")
    assert reasons[3].endswith(") this job has not learned")
    assert all(r["alert"] is None for r in rows[len(messages) :])
