"""Objects, not only alerts, without Spark: which filters read object state or annotations, what
runs them, the annotation contract, and each object's state updated alert by alert, checked
against plain Python over the real ZTF histories (tests/data/real) and the 47 real LSSTCam
alerts (tests/data/rubin-light-curves) as fastavro reads them (origins in their SOURCES.md)."""

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
    """One object's summary (``object_state.object_json``) equals the oracle's."""
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


def rows_of(alerts: list[dict]) -> list[dict]:
    """The alerts as rows into the state, in the order they arrive."""
    t0 = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
    return [
        {"_object": a["object"], "_kind": "alert", "_mjd": a["mjd"], "_band": a["band"],
         "_mag": a["mag"], "_flux": a["flux"], "_scores": None, "_view": json.dumps({"id": a["id"]}),
         "_annotator": None, "_class": None, "_score": None, "_attributes": None, "_time": None,
         "_topic": "alerts", "_partition": 0, "_offset": i, "_timestamp": t0 + dt.timedelta(seconds=i),
         "_key": None, "_alert_size": 100, "_schema_id": None}
        for i, a in enumerate(alerts)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("alerts", "objects"), [(ztf_alerts, 104), (rubin_alerts, 47)], ids=["ztf", "lsstcam"]
)
def test_each_objects_state_is_plain_python_over_its_alerts(alerts, objects):
    alerts = alerts()
    want = oracle(alerts)
    assert len(want) == objects  # ZTF: 124 alerts of 104 objects; LSSTCam: one alert each
    states, outs = {}, defaultdict(list)
    for row in rows_of(alerts):  # one at a time, as batches of one would
        state = states.setdefault(row["_object"], object_state.new_state(row["_object"]))
        outs[row["_object"]] += list(object_state.apply(state, [row], now_ms=0))
    assert set(states) == set(want)
    for name, state in states.items():
        assert_summary_equal(json.loads(object_state.object_json(state)), want[name])
        counts = [json.loads(o["_object_json"])["alerts"] for o in outs[name]]
        assert counts == list(range(1, want[name]["alerts"] + 1))  # this alert included
        latest = max((a for a in alerts if a["object"] == name), key=lambda a: a["mjd"])
        assert json.loads(state["view"]) == {"id": latest["id"]}  # its latest alert kept
    late = {}  # the same alerts, each object's in reverse time order: each row carries its own
    for row in reversed(rows_of(alerts)):
        state = late.setdefault(row["_object"], object_state.new_state(row["_object"]))
        (out,) = object_state.apply(state, [row], now_ms=0)
        assert (out["_view"], out["_at_offset"]) == (row["_view"], row["_offset"])
    batched = {}  # the same alerts in one batch, shuffled: the same states
    rows = rows_of(alerts)
    for row in reversed(rows):
        batched.setdefault(row["_object"], []).append(row)
    for name, mine in batched.items():
        state = object_state.new_state(name)
        list(object_state.apply(state, mine, now_ms=0))
        assert object_state.object_json(state) == object_state.object_json(states[name])


def test_an_annotation_waits_for_its_object_and_a_later_one_replaces_it():
    (alert,) = rows_of([ztf_alerts()[0]])
    name = alert["_object"]
    note = {
        **{k: None for k in alert},
        "_object": name, "_kind": "annotation", "_annotator": "tns", "_class": "SN II",
        "_score": 0.5, "_attributes": '{"name": "2019x"}', "_time": "2026-12-06T00:00:00",
        "_topic": "p-annotations-tns", "_partition": 0, "_offset": 0,
        "_timestamp": alert["_timestamp"] - dt.timedelta(seconds=1),
    }  # fmt: skip
    later = {
        **note,
        "_class": "SN Ia",
        "_offset": 1,
        "_timestamp": alert["_timestamp"] + dt.timedelta(seconds=1),
    }
    state = object_state.new_state(name)
    out = list(object_state.apply(state, [later, alert, note], now_ms=0))
    assert [o["_trigger"] for o in out] == ["pending", "alert", "annotation"]
    assert [o["_annotator"] for o in out] == ["tns", None, "tns"]
    assert json.loads(out[1]["_annotations_json"])["tns"]["class"] == "SN II"  # seen with it
    kept = json.loads(out[2]["_annotations_json"])["tns"]
    assert kept == {"class": "SN Ia", "score": 0.5, "attributes": {"name": "2019x"},
                    "time": "2026-12-06T00:00:00"}  # fmt: skip
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
