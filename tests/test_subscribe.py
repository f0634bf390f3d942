"""The subscriber's library (alertsieve.subscribe), fast tier: no broker, no Spark.

Oracles are fastavro reading the real alert files directly (tests/data/real, see its SOURCES.md),
astropy reading the stamps, and counts written out by hand. The Kafka consumer is replaced by an
in-memory fake that serves Kafka's offsets, so the until-end snapshot and the command run whole.
"""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from astropy.io import fits

from alertsieve.alerts.schemas import LocalSchemaStore, frame
from alertsieve.cli import listen
from alertsieve.publish import contract
from alertsieve.subscribe import subscriber
from alertsieve.subscribe.cutouts import save_cutouts
from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.parquet import META, read_parquet
from alertsieve.subscribe.records import Match, decode, decode_record, make_match
from alertsieve.subscribe.verify import summary_line, verify
from alertsieve.subscribe.writers import JsonLinesWriter, open_writer

REAL = Path(__file__).parent / "data" / "real"
V10, V74 = "1000", "704"
VERSION = "a1b2c3d4e5f6"


# --- the real alerts, read by fastavro (the oracle) ------------------------------------------


def _read(path: Path) -> tuple[dict, list[dict]]:
    with path.open("rb") as f:
        reader = fastavro.reader(f)
        return reader.writer_schema, list(reader)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> LocalSchemaStore:
    return LocalSchemaStore(tmp_path_factory.mktemp("schemas"))


@pytest.fixture(scope="module")
def rubin() -> dict[int, list[tuple[bytes, dict]]]:
    """Schema id -> [(Confluent-framed message, the record fastavro read)]."""
    out = {}
    for schema_id, name in (
        (1000, "rubin-lsstcam-v10_0.avro"),
        (704, "rubin-opsrehearsal-v7_4.avro"),
    ):
        schema, records = _read(REAL / name)
        parsed = fastavro.parse_schema(schema)
        messages = []
        for record in records:
            body = io.BytesIO()
            fastavro.schemaless_writer(body, parsed, record)
            messages.append((frame(schema_id, body.getvalue()), record))
        out[schema_id] = messages
    return out


@pytest.fixture(scope="module")
def ztf() -> list[tuple[bytes, dict]]:
    out = []
    for path in sorted((REAL / "ztf-3.3").glob("*.avro")):
        _, records = _read(path)
        assert len(records) == 1
        out.append((path.read_bytes(), records[0]))
    return out


def _same(a, b) -> bool:
    """Equality where NaN equals NaN (alerts carry NaN for unmeasured values)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _headers(filter_name="bright", offset=0, payload="alert", version=VERSION, **more) -> dict:
    h = {
        "filter": filter_name,
        "filter_version": version,
        "payload": payload,
        "source_topic": "alerts",
        "source_partition": "0",
        "source_offset": str(offset),
        "kafka_timestamp_ms": "1764046000000",
        "processed_at_ms": "1764046001000",
    }
    return {**h, **more}


def _match(value: bytes, store, offset=0, topic="alertsieve-bright", **headers) -> Match:
    raw = [
        (k, v.encode()) for k, v in _headers(offset=offset, **headers).items()
    ]  # as Kafka gives them
    return make_match(topic, 0, offset, None, value, raw, store)


FIELDS_SCHEMA = {
    "type": "record",
    "name": "bright_fields",
    "namespace": "alertsieve",
    "fields": [
        {"name": "alert_id", "type": "string"},
        {"name": "survey", "type": "string"},
        {"name": "filter", "type": "string"},
        {"name": "filter_version", "type": "string"},
        {"name": "source_topic", "type": "string"},
        {"name": "source_partition", "type": "int"},
        {"name": "source_offset", "type": "long"},
        {"name": "kafka_timestamp_ms", "type": "long"},
        {"name": "processed_at_ms", "type": "long"},
        {"name": "mjd", "type": "double"},
        {"name": "ra", "type": "double"},
        {"name": "dec", "type": "double"},
        {"name": "snr", "type": ["null", "float"]},
        {
            "name": "history",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "point",
                    "fields": [
                        {"name": "mjd", "type": "double"},
                        {"name": "flux", "type": ["null", "float"]},
                    ],
                },
            },
        },
    ],
}


def _fields_record(offset: int, **more) -> dict:
    return {
        "alert_id": f"9{offset}",
        "survey": "rubin",
        "filter": "bright",
        "filter_version": VERSION,
        "source_topic": "alerts",
        "source_partition": 0,
        "source_offset": offset,
        "kafka_timestamp_ms": 1764046000000,
        "processed_at_ms": 1764046001000,
        "mjd": 61000.5,
        "ra": 10.25,
        "dec": -5.5,
        "snr": 60.0,
        "history": [{"mjd": 61000.0, "flux": 1.5}, {"mjd": 61000.25, "flux": None}],
        **more,
    }


# --- decoding -------------------------------------------------------------------------------


@pytest.mark.parametrize("schema_id", [1000, 704])
def test_rubin_alerts_decode_as_fastavro_reads_them(store, rubin, schema_id):
    for message, oracle in rubin[schema_id]:
        assert _same(decode_record(message, _headers(), store), oracle)
        decoded = decode(message, None, store)  # no headers: recognised by the 0x00 framing
        assert _same(decoded.record, oracle)
        assert (decoded.survey, decoded.schema_id) == ("rubin", schema_id)
        assert decoded.alert_id == str(oracle["diaSource"]["diaSourceId"])


def test_ztf_container_decodes_as_fastavro_reads_it(store, ztf):
    for message, oracle in ztf:
        decoded = decode(message, {}, store)
        assert _same(decoded.record, oracle)
        assert (decoded.survey, decoded.alert_id) == ("ztf", str(oracle["candid"]))


def test_fields_records_decode_from_avro_and_json(store):
    schema = store.register(FIELDS_SCHEMA, "alertsieve-bright-value")
    record = _fields_record(42)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(FIELDS_SCHEMA), record)
    avro = frame(schema.schema_id, body.getvalue())
    assert decode_record(avro, _headers(payload="fields", format="avro"), store) == record
    as_json = json.dumps(record).encode()
    decoded = decode(as_json, _headers(payload="fields", format="json"), store)
    assert decoded.record == record
    assert (decoded.survey, decoded.alert_id) == ("rubin", "942")


def test_an_unknown_schema_id_says_where_it_looked_and_the_fix(store, rubin):
    message = frame(4242, rubin[1000][0][0][5:])
    with pytest.raises(SubscribeError) as info:
        decode_record(message, _headers(), store)
    text = str(info.value)
    assert "schema id 4242" in text and str(store.directory) in text and "--schema-dir" in text
    assert "\n" not in text


def test_bytes_that_are_no_alert_are_refused_in_one_line(store):
    with pytest.raises(SubscribeError, match="neither a ZTF Avro container"):
        decode_record(b"hello", {}, store)


def test_a_match_carries_the_headers_and_the_quarantine_its_reason(store, rubin):
    message, oracle = rubin[1000][0]
    match = _match(message, store, offset=7)
    assert (match.filter, match.filter_version, match.payload) == ("bright", VERSION, "alert")
    assert (match.source_topic, match.source_partition, match.source_offset) == ("alerts", 0, 7)
    assert match.alert_id == str(oracle["diaSource"]["diaSourceId"]) and match.survey == "rubin"
    assert match.as_dict()["record"] is match.record
    raw = [
        ("reason", b"unknown schema id 99"),
        ("source_topic", b"alerts"),
        ("source_partition", b"1"),
        ("source_offset", b"3"),
        ("kafka_timestamp_ms", b"1"),
    ]
    quarantined = make_match("alertsieve-quarantine", 0, 0, b"k", b"\x00junk", raw, store)
    assert (quarantined.payload, quarantined.filter, quarantined.reason) == (
        "quarantine",
        None,
        "unknown schema id 99",
    )
    assert quarantined.record["value"] == b"\x00junk" and quarantined.source_partition == 1


# --- writers --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed(store, rubin) -> tuple[list[Match], list[Match]]:
    """Two batches: Rubin v10.0 alerts and an Avro fields record, then Rubin v7.4 alerts and a
    JSON fields record (with an empty list where the Avro one has structs)."""
    schema = store.register(FIELDS_SCHEMA, "alertsieve-bright-value")
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(FIELDS_SCHEMA), _fields_record(300))
    first = [_match(m, store, offset=i) for i, (m, _) in enumerate(rubin[1000])]
    first += [
        _match(
            frame(schema.schema_id, body.getvalue()),
            store,
            offset=300,
            payload="fields",
            format="avro",
        )
    ]
    second = [_match(m, store, offset=200 + i) for i, (m, _) in enumerate(rubin[704])]
    second += [
        _match(
            json.dumps(_fields_record(301, history=[], snr=None)).encode(),
            store,
            offset=301,
            payload="fields",
            format="json",
        )
    ]
    return first, second


def _check_table(table, rubin) -> None:
    rows = table.to_pylist()
    assert len(rows) == 6 + 1 + 6 + 1
    assert table.column_names[: len(META)] == META.names
    alerts = rows[:6] + rows[7:13]
    oracle = [r for _, r in rubin[1000]] + [r for _, r in rubin[704]]
    for row, record in zip(alerts, oracle, strict=True):
        assert row["diaSource"]["diaSourceId"] == record["diaSource"]["diaSourceId"]
        assert row["diaSource"]["ra"] == record["diaSource"]["ra"]
        assert row["diaObject"]["diaObjectId"] == record["diaObject"]["diaObjectId"]
        assert row["cutoutDifference"] == record["cutoutDifference"]
        assert len(row["prvDiaForcedSources"] or []) == len(record["prvDiaForcedSources"] or [])
        assert row["alert_id"] is None and row["ra"] is None  # fields records' columns
    assert [r["diaSourceId"] for r in rows[:6]] == [
        r["diaSourceId"] for _, r in rubin[1000]
    ]  # v10 only
    assert [r["alertId"] for r in rows[7:13]] == [r["alertId"] for _, r in rubin[704]]  # v7.4 only
    assert all(r["alertId"] is None for r in rows[:7]) and all(
        r["diaSourceId"] is None for r in rows[6:]
    )
    fields = [rows[6], rows[13]]
    assert [r["alert_id"] for r in fields] == ["9300", "9301"] and fields[0]["diaSource"] is None
    assert fields[0]["history"] == _fields_record(0)["history"] and fields[1]["history"] == []
    assert [r["snr"] for r in fields] == [60.0, None] and fields[1]["ra"] == 10.25
    assert [r["_source_offset"] for r in rows] == [*range(6), 300, *range(200, 206), 301]
    assert {r["_filter_version"] for r in rows} == {VERSION}
    assert [r["_payload"] for r in rows] == ["alert"] * 6 + ["fields"] + ["alert"] * 6 + ["fields"]
    # typed by the Avro schemas, not by the values: ssSource is null in every alert here
    assert all(r["ssSource"] is None for r in rows)
    assert pa.types.is_struct(table.schema.field("ssSource").type)
    assert table.schema.field("diaSource").type.field("psfFlux").type == pa.float32()  # Avro float


def test_parquet_file_holds_rubin_versions_and_fields_together(tmp_path, mixed, rubin):
    target = tmp_path / "out" / "matches.parquet"
    with open_writer(target) as writer:
        for batch in mixed:
            writer.write(batch)
    assert writer.rows == 14
    assert [p.name for p in target.parent.iterdir()] == ["matches.parquet"]  # parts cleaned up
    _check_table(pq.read_table(target), rubin)


def test_parquet_folder_has_a_part_per_write_and_reads_back_as_one_table(tmp_path, mixed, rubin):
    target = tmp_path / "parts"
    with open_writer(f"{target}/") as writer:
        for batch in mixed:
            writer.write(batch)
        writer.write([])
    assert sorted(p.name for p in target.iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    _check_table(read_parquet(target), rubin)
    with open_writer(target) as again:  # a second run continues the numbering
        again.write(mixed[1][:1])
    assert (target / "part-00002.parquet").exists()


def test_rubin_and_ztf_in_one_file_keep_what_they_share_and_json_the_rest(
    tmp_path, store, rubin, ztf
):
    matches = [_match(m, store, offset=i) for i, (m, _) in enumerate(rubin[1000][:2] + ztf[:2])]
    with open_writer(tmp_path / "both.parquet") as writer:
        writer.write(matches[:2])
        writer.write(matches[2:])
    rows = pq.read_table(tmp_path / "both.parquet").to_pylist()
    assert [r["candid"] for r in rows] == [None, None] + [r["candid"] for _, r in ztf[:2]]
    assert rows[1]["diaSource"]["diaSourceId"] == rubin[1000][1][1]["diaSource"]["diaSourceId"]
    # a cutout is bytes in Rubin, a struct in ZTF: that column is JSON text, bytes as base64
    assert (
        base64.b64decode(json.loads(rows[0]["cutoutScience"])) == rubin[1000][0][1]["cutoutScience"]
    )
    stamp = json.loads(rows[2]["cutoutScience"])
    assert base64.b64decode(stamp["stampData"]) == ztf[0][1]["cutoutScience"]["stampData"]


def test_json_lines_round_trip_with_cutouts_as_base64(tmp_path, store, rubin, ztf):
    matches = [_match(m, store, offset=i) for i, (m, _) in enumerate(rubin[704][:2] + ztf[:1])]
    nan_fields = _match(
        json.dumps(_fields_record(9)).replace("60.0", "NaN").encode(),
        store,
        offset=9,
        payload="fields",
        format="json",
    )
    assert math.isnan(nan_fields.record["snr"])
    with JsonLinesWriter(tmp_path / "m.jsonl") as writer:
        writer.write(matches + [nan_fields])
    lines = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert len(lines) == 4
    for line, (_, record) in zip(lines, rubin[704][:2], strict=False):
        assert line["_filter"] == "bright" and line["_source_topic"] == "alerts"
        assert line["diaSource"]["diaSourceId"] == record["diaSource"]["diaSourceId"]
        assert base64.b64decode(line["cutoutScience"]) == record["cutoutScience"]
    assert (
        base64.b64decode(lines[2]["cutoutTemplate"]["stampData"])
        == ztf[0][1]["cutoutTemplate"]["stampData"]
    )
    assert lines[3]["snr"] is None and lines[3]["history"][1]["flux"] is None


def test_an_unknown_output_suffix_is_refused():
    with pytest.raises(SubscribeError, match=r"\.parquet"):
        open_writer("matches.csv")


# --- cutouts --------------------------------------------------------------------------------


def _fits_data(source) -> list:
    with fits.open(source) as hdus:
        return [None if h.data is None else np.array(h.data) for h in hdus]


def _same_fits(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        (x is None and y is None) or np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a, b, strict=True)
    )


def test_rubin_cutouts_are_the_alerts_fits_files(tmp_path, rubin):
    _, record = rubin[1000][0]
    written = save_cutouts(record, 123, tmp_path)
    names = ["cutoutDifference", "cutoutScience", "cutoutTemplate"]
    assert [p.name for p in written] == [f"123_{n}.fits" for n in names]
    for path, name in zip(written, names, strict=True):
        assert _same_fits(_fits_data(path), _fits_data(io.BytesIO(record[name])))


@pytest.mark.filterwarnings("ignore:Found a SIMPLE card")  # ZTF's stamps, as ZTF made them
def test_ztf_cutouts_are_written_ungzipped(tmp_path, ztf):
    _, record = ztf[0]
    written = save_cutouts(record, record["candid"], tmp_path / "stamps")
    assert len(written) == 3
    for path in written:
        name = path.stem.split("_", 1)[1]
        gz = tmp_path / f"{name}.fits.gz"  # astropy ungzips it itself: the oracle
        gz.write_bytes(record[name]["stampData"])
        assert path.read_bytes()[:9] == b"SIMPLE  ="
        assert _same_fits(_fits_data(path), _fits_data(gz))


def test_fields_records_have_no_cutouts(tmp_path):
    assert save_cutouts(_fields_record(1), "x", tmp_path / "none") == []
    assert not (tmp_path / "none").exists()


# --- verify ---------------------------------------------------------------------------------


def _counts(batch_id, start, end, published, version=VERSION, query="q1", **more_filters) -> dict:
    filters = {"bright": {"version": version, "topic": "alertsieve-bright", "published": published}}
    for name, n in more_filters.items():
        filters[name] = {"version": VERSION, "topic": f"alertsieve-{name}", "published": n}
    return {
        "kind": "counts",
        "query_id": query,
        "batch_id": batch_id,
        "input": {"alerts": {"0": [start, end], "1": [start, end]}},
        "alerts_read": 2 * (end - start),
        "quarantined": 0,
        "filters": filters,
        "quarantine_topic": "alertsieve-quarantine",
        "written_at": 1764046000.0 + batch_id,
    }


def _got(offsets, partition=0, version=VERSION, name="bright") -> list[tuple]:
    return [(name, version, "alerts", partition, o) for o in offsets]


TOPICS = ["alertsieve-bright"]


def test_verify_complete():
    counts = [_counts(0, 0, 10, 3, faint=5), _counts(1, 10, 20, 2, faint=1)]
    received = _got([1, 4]) + _got([9], partition=1) + _got([12, 15])
    report = verify(received, counts, TOPICS)
    assert report == {
        "complete": True,
        "lost_at_source": {},
        "lost": 0,
        "batches": 2,
        "uncounted": 0,
        "filters": {
            "bright": {
                VERSION: {
                    "counted": 5,
                    "received": 5,
                    "distinct": 5,
                    "missing": 0,
                    "duplicates": 0,
                    "withheld": 0,
                }
            }
        },
    }
    assert summary_line(report).startswith("verified: complete, 5 of 5")


def test_verify_missing_is_per_batch():
    # batch 0 got one record too many of its own offsets? impossible; batch 1 lacks one: a surplus
    # elsewhere never hides it.
    counts = [_counts(0, 0, 10, 2), _counts(1, 10, 20, 2)]
    report = verify(_got([1, 2]) + _got([11]), counts, TOPICS)
    stats = report["filters"]["bright"][VERSION]
    assert (report["complete"], stats["missing"], stats["distinct"]) == (False, 1, 3)
    assert "INCOMPLETE, 1 of 4" in summary_line(report) and f"bright@{VERSION} 1" in summary_line(
        report
    )


def test_verify_a_replayed_batch_gives_duplicates_not_missing():
    once = _counts(3, 0, 10, 2)
    report = verify(_got([4, 6, 4, 6]), [once, dict(once)], TOPICS)  # counts written twice too
    assert report["batches"] == 1 and report["complete"]
    assert report["filters"]["bright"][VERSION] == {
        "counted": 2,
        "received": 4,
        "distinct": 2,
        "missing": 0,
        "duplicates": 2,
        "withheld": 0,
    }
    assert "2 duplicates" in summary_line(report)


def test_verify_records_of_a_batch_not_counted_yet_are_uncounted_not_missing():
    report = verify(_got([1, 2]) + _got([25, 26]), [_counts(0, 0, 10, 2)], TOPICS)
    assert report["complete"] and report["uncounted"] == 2
    assert report["filters"]["bright"][VERSION]["received"] == 2
    assert "2 records not counted yet" in summary_line(report)


def test_verify_keeps_the_versions_of_a_redeployed_filter_apart():
    new = "0f0f0f0f0f0f"
    counts = [_counts(0, 0, 10, 2), _counts(1, 10, 20, 3, version=new)]
    # the old version's records are all there; the new one misses one; an old-version record
    # inside the new version's batch is not the new version's
    received = _got([1, 2]) + _got([11, 12], version=new) + _got([13])
    report = verify(received, counts, TOPICS)
    assert report["filters"]["bright"][VERSION] == {
        "counted": 2,
        "received": 2,
        "distinct": 2,
        "missing": 0,
        "duplicates": 0,
        "withheld": 0,
    }
    assert report["filters"]["bright"][new]["missing"] == 1
    assert report["uncounted"] == 1 and not report["complete"]


def test_verify_checks_only_the_topics_read():
    report = verify(_got([1]), [_counts(0, 0, 10, 1, faint=4)], TOPICS)
    assert set(report["filters"]) == {"bright"} and report["complete"]
    report = verify(_got([1]), [_counts(0, 0, 10, 1, faint=4)], [*TOPICS, "alertsieve-faint"])
    assert report["filters"]["faint"][VERSION]["missing"] == 4


# --- the subscriber, over an in-memory Kafka --------------------------------------------------


def test_an_unreachable_broker_is_one_line_within_the_timeout(store):
    sub = subscriber.Subscriber("127.0.0.1:1", "x", store=store, timeout=1.0)
    with pytest.raises(SubscribeError, match="cannot reach Kafka at 127.0.0.1:1") as info:
        sub.open()
    assert "\n" not in str(info.value)


def test_bad_security_settings_are_a_subscribe_error(store):
    sub = subscriber.Subscriber(
        "x:1", "t", store=store, kafka_conf={"security.protocol": "SASL_SSL"}
    )
    with pytest.raises(SubscribeError, match="sasl.username"):
        sub.open()


# --- the command ----------------------------------------------------------------------------


def _listen(*argv: str) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="alertsieve")
    listen.add_parser(parser.add_subparsers(dest="command"))
    return listen.run(parser.parse_args(["listen", *argv]))


def test_listen_errors_before_reading_are_one_line_and_exit_2(capsys):
    assert _listen("--bootstrap", "127.0.0.1:1", "--topic", "alertsieve-bright", "--verify") == 2
    assert _listen("--bootstrap", "127.0.0.1:1", "--topic", "t", "--to", "x.csv") == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("alertsieve listen: error: ") for line in err)
    assert "--from-beginning" in err[0]


def test_the_counts_topic_is_derived_from_the_prefix():
    assert contract.derive_counts_topic("alertsieve-bright") == "alertsieve-counts"
    assert contract.derive_counts_topic("alertsieve-very-bright") == "alertsieve-counts"
    assert contract.derive_counts_topic("bright") == "counts"


def test_verify_counts_withheld_matches_as_accounted_for():
    """A batch after the filter reached its daily quota published nothing and withheld 4."""
    held = _counts(1, 10, 20, 0)
    held["filters"]["bright"]["withheld"] = 4
    report = verify(_got([1, 2]), [_counts(0, 0, 10, 2), held], TOPICS)
    assert report["complete"] and report["filters"]["bright"][VERSION]["withheld"] == 4
    assert summary_line(report).endswith(
        "4 matches withheld (daily quota reached: counted, not published)"
    )
