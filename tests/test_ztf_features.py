"""ZTF light-curve features in Spark SQL on the 124 real ZTF alerts with histories (and edited
copies reaching what they do not: NaN and zero errors, a colour, a null magnitude), against numpy over the
fastavro-decoded records (``oracles.expected_ztf_features``)."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import fastavro
import pytest
from oracles import assert_features_equal, expected_ztf_features

from alertsieve.alerts.ztf import one_alert_container
from alertsieve.filtering.features.ztf import READ_PATHS
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.references import referenced_paths
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import ztf_decoder

HISTORIES = sorted((Path(__file__).parent / "data" / "real" / "ztf-3.3-histories").glob("*.avro"))


def _read(path: Path) -> tuple[bytes, dict, dict]:
    """(schema JSON as the header holds it, writer schema, the alert) of a real ZTF file."""
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return reader.metadata["avro.schema"].encode(), reader.writer_schema, next(reader)


def _message(schema_json: bytes, schema: dict, alert: dict) -> bytes:
    """``alert`` as ZTF sends it: an uncompressed one-alert container whose header holds the
    real file's schema JSON."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), alert)
    return one_alert_container(schema_json, body.getvalue())


def _edge_cases(alerts: list[dict]) -> list[dict]:
    """Edited copies of real alerts reaching what the real ones may not: a NaN sigmapsf in the
    history and a zero one (null, never NaN), a g detection 0.2 d after an r one (a colour),
    a candidate fainter than its reference (negative: out of the band features), and a detection
    without a magnitude (null: no amplitude, no chi2)."""
    rich = [
        a for a in alerts if sum(h["candid"] is not None for h in a["prv_candidates"] or []) >= 3
    ][:5]
    nan_err, zero_err, colour, negative, no_mag = (copy.deepcopy(a) for a in rich)
    first = next(h for h in no_mag["prv_candidates"] if h["candid"] is not None)
    first.update(fid=no_mag["candidate"]["fid"], isdiffpos="t", magpsf=None)
    no_mag["candidate"]["isdiffpos"] = "t"
    for alert, err in ((nan_err, float("nan")), (zero_err, 0.0)):
        last = [h for h in alert["prv_candidates"] if h["candid"] is not None][-1]
        last.update(
            fid=alert["candidate"]["fid"],
            isdiffpos="t",
            sigmapsf=err,
            jd=alert["candidate"]["jd"] - 1,
        )
        alert["candidate"]["isdiffpos"] = "t"
    last = [h for h in colour["prv_candidates"] if h["candid"] is not None][-1]
    last.update(fid=2, isdiffpos="t", magpsf=18.5, jd=colour["candidate"]["jd"] - 0.2)
    colour["candidate"].update(fid=1, isdiffpos="t", magpsf=18.0)
    negative["candidate"]["isdiffpos"] = "f"
    return [nan_err, zero_err, colour, negative, no_mag]


@pytest.fixture(scope="module")
def computed(spark):
    real = [_read(p) for p in HISTORIES]
    schema_json, schema, _ = real[0]
    edited = _edge_cases([a for _, _, a in real])
    alerts = [a for _, _, a in real] + edited
    messages = [p.read_bytes() for p in HISTORIES] + [
        _message(schema_json, schema, a) for a in edited
    ]
    decoder = ztf_decoder(messages[:1])
    decoded = decoder.decode(message_frame(spark, messages), READ_PATHS).orderBy("_offset")
    rows = filter_view(decoded, ("_reason",)).select("_reason", "features").collect()
    assert [r["_reason"] for r in rows] == [None] * len(messages)
    return alerts, [r["features"].asDict(recursive=True) for r in rows]


def test_ztf_features_equal_numpy_on_every_real_history(computed):
    alerts, got = computed
    assert len(got) == len(HISTORIES) + 5 == 129
    for i, (alert, features) in enumerate(zip(alerts, got, strict=True)):
        assert_features_equal(
            features, expected_ztf_features(alert), f"alert {i} (candid {alert['candid']})"
        )


def test_the_real_histories_exercise_every_feature(computed):
    """Not a vacuous comparison: on the real alerts alone, every feature is non-null somewhere."""
    _, got = computed
    real = got[: len(HISTORIES)]
    assert max(f["n_detections"] for f in real) >= 20 and max(f["n_upper_limits"] for f in real) > 0
    for key in ("days_since_first", "prediscovery_days", "prediscovery_limit", "g_minus_r"):
        assert any(f[key] is not None for f in real), key
    assert any(f["n_negative"] > 0 for f in real)
    for key in (
        "mag",
        "mag_err",
        "days_ago",
        "days_between",
        "rise",
        "rise_sigma",
        "chi2",
        "amplitude",
    ):
        assert any(f[b][key] is not None for f in real for b in "gri"), key


def test_nan_and_zero_errors_give_nulls_and_a_colour_is_g_minus_r(computed):
    _, got = computed
    nan_err, zero_err, colour, negative, no_mag = got[-5:]
    for f in (nan_err, zero_err):
        band = next(b for b in "gri" if f[b]["days_ago"] == 0)
        assert f[band]["chi2"] is None  # no weighted mean without every error
        assert f[band]["rise"] is not None and f[band]["days_between"] == pytest.approx(1.0)
    band = next(b for b in "gri" if nan_err[b]["days_ago"] == 0)
    assert nan_err[band]["rise_sigma"] is None  # a NaN error: no significance, null not NaN
    band = next(b for b in "gri" if zero_err[b]["days_ago"] == 0)
    assert zero_err[band]["rise_sigma"] == pytest.approx(
        zero_err[band]["rise"] / zero_err[band]["mag_err"]
    )
    assert colour["g_minus_r"] == pytest.approx(18.0 - 18.5) and colour["g"]["days_ago"] == 0
    assert all(negative[b]["days_ago"] != 0 for b in "gri") and negative["n_negative"] >= 1
    band = next(b for b in "gri" if no_mag[b]["days_ago"] == 0)
    assert (
        no_mag[band]["amplitude"] is None
        and no_mag[band]["chi2"] is None
        and no_mag[band]["n"] >= 2
    )


def test_a_filter_on_ztf_features_decodes_only_the_seven_history_fields(spark):
    """Spark's pruning finds what a features filter reads: seven fields of the candidate and of
    each history entry, of the ~60 an entry has."""
    decoder = ztf_decoder([])
    paths = referenced_paths(
        spark, decoder.view, ["features.r.rise > 0.3 AND features.n_detections >= 3"]
    )
    assert sorted(paths) == sorted(READ_PATHS)
