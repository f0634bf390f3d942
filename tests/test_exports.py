"""Brokers' exports of real alerts, read by content: the two real Parquet exports as a broker
wrote them, and the forms tests/export_fixtures.py writes with Spark from real alerts (Avro with
the alert inside ``topLevelRecord.value``, ids as doubles and the broker's map and record columns;
ZTF with ``candid`` only inside ``candidate``, as Avro and as Parquet; a hive-partitioned
``Norder=/Dir=/Npix=`` dataset). The oracle is pyarrow / fastavro and plain Python over the
export's own records: backtests count what it counts, replays send what the survey's official
schema alone decodes to the export's values, and the job over the replay matches what it says."""

from __future__ import annotations

import io
import math
from pathlib import Path

import fastavro
import pyarrow.dataset as ds
import pytest
from export_fixtures import write_exports
from job_helpers import run_sql_job
from kafka_helpers import consume_all

from alertsieve.alerts.conform import conform
from alertsieve.alerts.exports import ExportError, plan_export, shape_of_arrow
from alertsieve.alerts.schemas import load_rubin_schema, unframe
from alertsieve.alerts.ztf import header, shipped_ztf_schemas
from alertsieve.backtest.run import backtest
from alertsieve.backtest.sources import load_alerts
from alertsieve.filtering.model import AlertFilter
from alertsieve.produce.producer import ProduceConfig, produce

RUBIN_SQL, ZTF_SQL = "diaSource.snr > 10", "candidate.magpsf < 18.5"


def rubin_cut(alert: dict) -> bool:
    return (alert["diaSource"].get("snr") or 0) > 10


def ztf_cut(alert: dict) -> bool:
    return alert["candidate"]["magpsf"] < 18.5


@pytest.fixture(scope="module")
def exports(spark, tmp_path_factory) -> dict[str, Path]:
    return write_exports(spark, tmp_path_factory.mktemp("exports"))


def exported(path: Path) -> list[dict]:
    """The export's alerts as pyarrow or fastavro read them (unwrapped from Spark's ``value``)."""
    files = sorted(path.rglob("*.avro")) if path.is_dir() else [path]
    if files and files[0].suffix == ".avro":
        rows = []
        for f in files:
            with open(f, "rb") as handle:
                rows.extend(fastavro.reader(handle))
    else:
        rows = ds.dataset(str(path), format="parquet", partitioning="hive").to_table().to_pylist()
    return [r["value"] if "value" in r else r for r in rows]


def key(alert: dict) -> str:
    if "candidate" in alert:
        return str(alert["candidate"]["candid"])
    return str(
        alert["diaSource"]["diaSourceId"]
    )  # an integer in every export (ids beside it may be doubles)


def same(decoded, given, path: str = "") -> None:
    """``decoded`` (an official record) holds ``given`` (the export's): every field the export has
    equal, numbers to the precision of the official type (floats are 32-bit), ids stored as
    doubles as the integers they round to; fields the export lacks are null, and so is a record the
    export gives as all nulls."""
    if decoded is None and isinstance(given, dict) and _all_null(given):
        return
    if isinstance(decoded, dict):
        given = given or {}
        for name, value in decoded.items():
            if name in given:
                same(value, given[name], f"{path}.{name}")
            elif name != "candid":  # ZTF's top-level candid comes from candidate.candid
                assert value is None, f"{path}.{name}: {value!r} for a field the export lacks"
    elif isinstance(decoded, list):
        assert len(decoded) == len(given or []), path
        for i, (a, b) in enumerate(zip(decoded, given, strict=True)):
            same(a, b, f"{path}[{i}]")
    elif isinstance(decoded, float) and given is not None:
        assert math.isclose(decoded, given, rel_tol=1e-7) or (
            math.isnan(decoded) and math.isnan(given)
        ), (path, decoded, given)
    elif isinstance(decoded, int) and not isinstance(decoded, bool) and given is not None:
        # an id stored as a double is the integer rounded to 53 bits
        assert (decoded if isinstance(given, int) else float(decoded)) == given, (path, given)
    else:
        assert decoded == given, (path, decoded, given)


@pytest.mark.parametrize(
    "name",
    [
        "rubin-v10-export.parquet",
        "rubin-v7_1-export.parquet",
        "rubin-v10-spark.avro",
        "rubin-v7_4-hats",
        "rubin-v10-null-records.avro",
        "ztf-spark.avro",
        "ztf.parquet",
        "ztf-mixed",
    ],
)
def test_a_backtest_of_an_export_counts_as_plain_python(spark, exports, name):
    alerts = exported(exports[name])
    ztf = name.startswith("ztf")
    cut = ztf_cut if ztf else rubin_cut
    expected = sum(cut(a) for a in alerts)
    assert 0 < expected < len(alerts), expected  # the cut splits the export
    sql = ZTF_SQL if ztf else RUBIN_SQL
    (row,) = backtest(
        spark, [AlertFilter(name="cut", sql=sql)], load_alerts(spark, str(exports[name]))
    )
    assert (row.alerts, row.matches, row.errors) == (len(alerts), expected, 0)


def _replay(kafka, topic: str, paths: list[Path], tmp: Path) -> list:
    summary = produce(
        ProduceConfig(
            bootstrap=kafka.bootstrap_servers,
            topic=topic,
            replay=[str(p) for p in paths],
            alerts_per_visit=100,
            interval_s=0,
            partitions=2,
            progress=False,
            schema_dir=str(tmp / "schemas"),
        )
    )
    assert summary.ok
    return consume_all(kafka.bootstrap_servers, topic)


def test_rubin_exports_replay_as_official_messages_and_the_job_matches_plain_python(
    spark, kafka, exports, tmp_path, topic_name
):
    names = [
        "rubin-v10-export.parquet",
        "rubin-v7_1-export.parquet",
        "rubin-v10-spark.avro",
        "rubin-v7_4-hats",
        "rubin-v10-null-records.avro",
    ]
    alerts = [a for n in names for a in exported(exports[n])]
    messages = _replay(kafka, topic_name, [exports[n] for n in names], tmp_path)
    assert len(messages) == len(alerts)
    by_key: dict[str, list[dict]] = {}
    for a in alerts:
        by_key.setdefault(key(a), []).append(a)
    for m in messages:
        schema_id, body = unframe(m.value())
        official = load_rubin_schema(schema_id)  # the official schema of its version, alone
        decoded = fastavro.schemaless_reader(io.BytesIO(body), official.parsed, None)
        assert m.key().decode() in (key(decoded), str(decoded.get("alertId")))
        assert any(_holds(decoded, a) for a in by_key[key(decoded)]), key(decoded)
    assert {unframe(m.value())[0] for m in messages} == {1100, 701, 704, 1000}

    _, lines = run_sql_job(kafka, spark, tmp_path, topic_name, {"cut": (RUBIN_SQL, rubin_cut)})
    assert sum(b["input_rows"] for b in lines) == len(alerts)
    assert sum(b["quarantined_rows"] for b in lines) == 0
    out = sorted(
        m.key().decode() for m in consume_all(kafka.bootstrap_servers, f"{topic_name}-cut")
    )
    assert out == sorted(key(a) for a in alerts if rubin_cut(a))


def test_ztf_exports_replay_as_official_containers_and_the_job_matches_plain_python(
    spark, kafka, exports, tmp_path, topic_name
):
    paths = [exports["ztf-spark.avro"], exports["ztf.parquet"], exports["ztf-mixed"]]
    alerts = [a for p in paths for a in exported(p)]
    assert "candid" not in alerts[0] and all(a["candidate"]["candid"] for a in alerts)
    messages = _replay(kafka, topic_name, paths, tmp_path)
    assert len(messages) == len(alerts)
    (official_text,) = shipped_ztf_schemas()
    by_key = {key(a): a for a in alerts}
    containers = {f.read_bytes() for f in exports["ztf-mixed"].glob("1*.avro")}
    assert len(containers) == 20
    for m in messages:  # the exports made official, the survey's own files byte for byte
        assert header(m.value())["avro.schema"] == official_text or m.value() in containers
        decoded = next(fastavro.reader(io.BytesIO(m.value())))
        assert decoded["candid"] == decoded["candidate"]["candid"] == int(m.key())
        same(decoded, by_key[m.key().decode()])

    _, lines = run_sql_job(kafka, spark, tmp_path, topic_name, {"cut": (ZTF_SQL, ztf_cut)})
    assert sum(b["quarantined_rows"] for b in lines) == 0
    assert sum(b["input_rows"] for b in lines) == len(alerts)
    out = [m.key().decode() for m in consume_all(kafka.bootstrap_servers, f"{topic_name}-cut")]
    # The batch holding the 4.01 containers is read again once the job has learned their schema:
    # what it published before is published again (at least once), nothing else.
    assert set(out) == {key(a) for a in alerts if ztf_cut(a)}


def _all_null(record: dict) -> bool:
    return all(v is None or isinstance(v, dict) and _all_null(v) for v in record.values())


def _holds(decoded: dict, given: dict) -> bool:
    try:
        same(decoded, given)
    except AssertionError:
        return False
    return True


def test_a_value_its_official_type_cannot_hold_is_refused_naming_field_and_value():
    """Pure: a real export's record with one id made fractional, one flux beyond 32 bits."""
    table = ds.dataset(
        str(Path(__file__).parent / "data" / "exports" / "rubin-or4-v7_1-export.parquet")
    ).to_table()
    plan = plan_export(shape_of_arrow(table.schema), "or4")
    assert (plan.survey, plan.version, plan.ignored) == (
        "rubin",
        "7.1",
        ("brokerEndProcessMjd", "brokerIngestMjd", "cdsxmatch"),
    )
    record = table.slice(0, 1).to_pylist()[0]
    assert conform(record, plan)["diaSource"]["diaSourceId"] == record["diaSource"]["diaSourceId"]
    fractional = {**record, "diaSource": {**record["diaSource"], "visit": 12.5}}
    with pytest.raises(
        ExportError, match=r"diaSource.visit: 12.5 is not an integer \(official type long\)"
    ):
        conform(fractional, plan)
    wide = {**record, "diaSource": {**record["diaSource"], "psfFlux": 0.1}}
    with pytest.raises(ExportError, match=r"diaSource.psfFlux: 0.1 is no 32-bit float"):
        conform(wide, plan)
    with pytest.raises(
        ExportError, match=r"or4: neither ZTF alerts .* its fields: brokerIngestMjd"
    ):
        plan_export({"brokerIngestMjd": None}, "or4")
