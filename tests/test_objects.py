"""Objects, not only alerts, without a broker: which filters read object state or annotations,
what runs them, the annotation contract, and each object's state (the JVM processor, in Spark's
transformWithState over static DataFrames), checked against plain Python over the real ZTF
histories (tests/data/real) and the 47 real LSSTCam alerts (tests/data/rubin-light-curves) as
fastavro reads them (origins in their SOURCES.md)."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import defaultdict
from pathlib import Path

import fastavro
import pytest

from alertsieve.cli import build_parser
from alertsieve.filtering.model import AlertFilter, FilterError, python_filter
from alertsieve.filtering.objects import annotators_read, check_triggers, reads_objects
from alertsieve.publish.annotations import AnnotationError, annotation_record
from alertsieve.stream import object_state

REAL = Path(__file__).parent / "data" / "real"
RUBIN = Path(__file__).parent / "data" / "rubin-light-curves"
ZTF_BANDS = {1: "g", 2: "r", 3: "i"}


def ztf_alerts() -> list[dict]:
    """The real ZTF 3.3 alerts with histories, each as its detection's summary values."""
    out = []
    for path in sorted((REAL / "ztf-3.3-histories").glob("*.avro")):
        for a in fastavro.reader(path.open("rb")):
            c = a["candidate"]
            out.append(
                {"object": a["objectId"], "mjd": c["jd"] - 2400000.5, "band": ZTF_BANDS.get(c["fid"]),
                 "mag": c["magpsf"], "flux": None, "id": str(a["candid"])}
            )  # fmt: skip
    return out


def rubin_alerts() -> list[dict]:
    """The real LSSTCam v10.0 alerts, each as its detection's summary values: a solar-system
    source's object is its ssObject (its diaObjectId is 0)."""
    out = []
    for a in fastavro.reader((RUBIN / "rubin-lsstcam-v10_0.avro").open("rb")):
        s = a["diaSource"]
        out.append(
            {"object": str(s["diaObjectId"] or s["ssObjectId"]),
             "mjd": s["midpointMjdTai"], "band": s["band"], "mag": None, "flux": s["psfFlux"],
             "id": str(s["diaSourceId"])}
        )  # fmt: skip
    return out


def oracle(alerts: list[dict]) -> dict[str, dict]:
    """Each object's summary, plain Python: how many alerts, first and last MJD, per band the
    latest detection's and the brightest's (a ZTF magnitude's flux: 10^(-0.4 (m - 31.4)) nJy)."""
    by_object = defaultdict(list)
    for a in alerts:
        by_object[a["object"]].append(a)
    out = {}
    for name, mine in by_object.items():
        bands = {}
        for band in {a["band"] for a in mine}:
            seen = [a for a in mine if a["band"] == band]
            flux = [
                a["flux"] if a["flux"] is not None else 10 ** (-0.4 * (a["mag"] - 31.4))
                for a in seen
            ]
            latest = max(range(len(seen)), key=lambda i: seen[i]["mjd"])
            brightest = max(range(len(seen)), key=lambda i: flux[i])
            bands[band] = {
                "latest_flux": flux[latest],
                "latest_mjd": seen[latest]["mjd"],
                "brightest_flux": flux[brightest],
                "brightest_mjd": seen[brightest]["mjd"],
            }
        out[name] = {
            "alerts": len(mine),
            "first_mjd": min(a["mjd"] for a in mine),
            "last_mjd": max(a["mjd"] for a in mine),
            "bands": bands,
        }
    return out


def assert_summary_equal(got: dict, want: dict) -> None:
    """One object's summary (its `object` as filters read it) equals the oracle's."""
    assert got["alerts"] == want["alerts"]
    assert got["first_mjd"] == pytest.approx(want["first_mjd"], abs=1e-9)
    assert got["last_mjd"] == pytest.approx(want["last_mjd"], abs=1e-9)
    assert set(got["bands"]) == set(want["bands"])
    for band, w in want["bands"].items():
        g = got["bands"][band]
        for key, value in w.items():
            assert g[key] == pytest.approx(value, rel=1e-6), (band, key)
        if g["latest_flux"] > 0:
            assert g["latest_mag"] == pytest.approx(31.4 - 2.5 * math.log10(w["latest_flux"]))


def rows_of(alerts: list[dict], reverse: bool = False) -> list[dict]:
    """The alerts as rows into the state, arriving in their order (``reverse``: last first)."""
    t0 = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
    n = len(alerts)
    return [
        {"_object": a["object"], "_kind": "alert", "_mjd": a["mjd"], "_band": a["band"],
         "_mag": a["mag"], "_flux": a["flux"], "_scores": None, "_view": {"id": a["id"]},
         "_annotator": None, "_class": None, "_score": None, "_attributes": None, "_time": None,
         "_topic": "alerts", "_partition": 0, "_offset": i,
         "_timestamp": t0 + dt.timedelta(seconds=n - i if reverse else i),
         "_key": None, "_alert_size": 100, "_schema_id": None, "_reason": None, "_value": None}
        for i, a in enumerate(alerts)
    ]  # fmt: skip


def note_of(name: str, annotator: str, klass: str, at: dt.datetime, offset: int) -> dict:
    """An annotation's row into the state, arriving at ``at``."""
    return {
        "_object": name, "_kind": "annotation", "_mjd": None, "_band": None, "_mag": None,
        "_flux": None, "_scores": None, "_view": None, "_annotator": annotator, "_class": klass,
        "_score": 0.5, "_attributes": {"name": "2019x"},
        "_time": dt.datetime(2026, 12, 6, tzinfo=dt.UTC), "_topic": f"p-annotations-{annotator}",
        "_partition": 0, "_offset": offset, "_timestamp": at, "_key": None, "_alert_size": None,
        "_schema_id": None, "_reason": None, "_value": None,
    }  # fmt: skip


INPUT_TYPE = (
    "_object string, _kind string, _mjd double, _band string, _mag double, _flux double,"
    " _scores string, _view struct<id: string>, _annotator string, _class string,"
    " _score double, _attributes map<string, string>, _time timestamp, _topic string, _partition int, _offset bigint,"
    " _timestamp timestamp, _key binary, _alert_size int, _schema_id bigint, _reason string,"
    " _value binary"
)


def through_state(spark, rows: list[dict]) -> dict[str, list[dict]]:
    """``rows`` in one batch through each object's state (Spark's transformWithState, on a
    static DataFrame): each object's rows out, in the order they arrived."""
    spark.streams  # noqa: B018 - starts the state stores' coordinator, as a first query would
    frame = spark.createDataFrame(
        [tuple(r[c] for c in object_state.INPUT_COLUMNS) for r in rows], INPUT_TYPE
    )
    out = defaultdict(list)
    for row in object_state.transform(frame, ttl_ms=86_400_000).collect():
        out[row["_object"]].append(row.asDict(recursive=True))
    for mine in out.values():
        mine.sort(key=lambda o: o["_timestamp"])
    return out


@pytest.mark.parametrize(
    ("alerts", "objects"), [(ztf_alerts, 104), (rubin_alerts, 47)], ids=["ztf", "lsstcam"]
)
def test_each_objects_state_is_plain_python_over_its_alerts(spark, alerts, objects):
    alerts = alerts()
    want = oracle(alerts)
    assert len(want) == objects  # ZTF: 124 alerts of 104 objects; LSSTCam: one alert each
    end = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
    notes = [note_of(name, "tns", "SN Ia", end, i) for i, name in enumerate(want)]
    for reverse in (False, True):  # in time order; each object's alerts last first
        rows = rows_of(alerts, reverse)
        outs = through_state(spark, rows + notes)
        assert set(outs) == set(want)
        for name, out in outs.items():
            *seen, noted = out
            assert [o["_trigger"] for o in out] == ["alert"] * len(seen) + ["annotation"]
            assert_summary_equal(noted["_summary"], want[name])
            counts = [o["_summary"]["alerts"] for o in seen]
            assert counts == list(range(1, want[name]["alerts"] + 1))  # this alert included
            mine = {r["_offset"]: r for r in rows if r["_object"] == name}
            for o in seen:  # each alert's row carries that alert, whatever order they came in
                assert o["_view"] == mine[o["_at_offset"]]["_view"]
                assert o["_at_offset"] == o["_offset"]
            latest = max((a for a in alerts if a["object"] == name), key=lambda a: a["mjd"])
            assert noted["_view"] == {"id": latest["id"]}  # the latest alert kept


def test_an_annotation_waits_for_its_object_and_a_later_one_replaces_it(spark):
    (alert,) = rows_of([ztf_alerts()[0]])
    name, at = alert["_object"], alert["_timestamp"]
    note = note_of(name, "tns", "SN II", at - dt.timedelta(seconds=1), 0)
    later = note_of(name, "tns", "SN Ia", at + dt.timedelta(seconds=1), 1)
    (out,) = through_state(spark, [later, alert, note]).values()
    assert [o["_trigger"] for o in out] == ["pending", "alert", "annotation"]
    assert [o["_annotator"] for o in out] == ["tns", None, "tns"]
    assert out[1]["_annotations"]["tns"]["class"] == "SN II"  # seen with it
    kept = out[2]["_annotations"]["tns"]
    assert kept == {"class": "SN Ia", "score": 0.5, "attributes": {"name": "2019x"},
                    "time": dt.datetime(2026, 12, 6)}  # fmt: skip
    assert (out[2]["_topic"], out[2]["_offset"]) == ("p-annotations-tns", 1)  # the trigger's place
    assert (out[2]["_at_topic"], out[2]["_at_offset"]) == ("alerts", 0)  # the alert it carries


def test_which_filters_read_objects_and_which_annotators():
    assert not reads_objects(AlertFilter(name="a", sql="candidate.magpsf < 18"))
    assert not reads_objects(
        AlertFilter(name="a", sql="candidate.magpsf < 18 AND 'object.alerts' = ''")
    )
    assert reads_objects(AlertFilter(name="a", sql="object.alerts > 3"))
    assert reads_objects(AlertFilter(name="a", sql="x > 1", fields={"n": "object.alerts"}))
    tns = AlertFilter(
        name="a", sql="annotations.tns.class = 'SN Ia' AND annotations['ml'].score > 0.5"
    )
    assert reads_objects(tns) and annotators_read(tns) == {"tns", "ml"}
    assert annotators_read(AlertFilter(name="a", sql="size(annotations) > 0")) is None

    @python_filter(name="py", columns={"n": "object.alerts"}, triggers=("alert", "annotation"))
    def py(columns):
        return columns["n"] > 1

    assert reads_objects(py)
    with pytest.raises(FilterError, match="reads no annotation; name the annotator it waits for"):
        check_triggers(py)
    with pytest.raises(FilterError, match=r"triggers=\('alerts',\): give one or both of"):
        check_triggers(AlertFilter(name="a", sql="object.alerts > 1", triggers=("alerts",)))
    check_triggers(
        AlertFilter(name="a", sql="annotations.tns.class = 'x'", triggers=("annotation",))
    )


def test_an_annotation_is_checked_before_it_is_sent():
    record = json.loads(
        annotation_record("ztf", "ZTF19acmdpyr", "tns", "SN Ia", 0.93, {"name": "2019xyz"})
    )
    assert record["version"] == 1 and record["annotator"] == "tns" and record["score"] == 0.93
    assert record["time"].endswith("Z") and record["attributes"] == {"name": "2019xyz"}
    with pytest.raises(AnnotationError, match="annotator 'TNS!': use lower-case letters"):
        annotation_record("ztf", "ZTF19acmdpyr", "TNS!", "SN Ia")
    with pytest.raises(AnnotationError, match="survey 'lsst': give one of rubin, ztf"):
        annotation_record("lsst", "1", "tns", "SN Ia")
    with pytest.raises(AnnotationError, match="class: give what the annotator calls the object"):
        annotation_record("ztf", "ZTF19acmdpyr", "tns", " ")
    args = build_parser().parse_args(
        ["annotate", "--bootstrap", "h:1", "--survey", "ztf", "--object", "ZTF1", "--annotator",
         "tns", "--class", "SN Ia", "--score", "0.9", "--attribute", "name=2019xyz"]
    )  # fmt: skip
    assert (args.klass, args.score, args.attribute) == ("SN Ia", 0.9, ["name=2019xyz"])
