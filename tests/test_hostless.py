"""ELEPHANT's hostless statistics (``models/ztf_hostless.py``) equal fink-science 7.4.0's
``process_candidate_fink`` (``tests/fink_oracle.py``) on real ZTF alerts: the model's ``predict``
called directly on an Arrow batch of the stamps, as the job calls it, gate aside. Pure Python:
no Spark, no broker.

The alerts: the 6 of ``tests/data/real/ztf-3.3`` (3 hostless candidates), the 124 with histories
(3 candidates, and one 63x62 stamp, which the package refuses) and ``ztf-3.3-hostless``, the 14
other candidates of the shared corpus' 50 ZTF alerts."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import warnings

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from crafted import REAL
from fink_oracle import fink_hostless

from alertsieve.filtering.scores.discovery import discover_models

#: fink-science's config.json at its 7.4.0 tag, by its git blob id (the wheel has no copy).
CONFIG_BLOB = "b80f20d04f27605ea55282320de65bec18c4782a"
#: The package's value where it finds no hostless candidate.
NOT_CANDIDATE = -99.0
OUTPUTS = ("kstest_science", "kstest_template")
#: The alert of ztf-3.3-histories whose stamps are 63x62 pixels.
NARROW = 1786253071415010003


def _model():
    (model,) = [m for m in discover_models() if m.name == "hostless"]
    return model


def _alerts(*folders: str) -> list[dict]:
    out = []
    for folder in folders:
        for path in sorted((REAL / folder).glob("*.avro")):
            with path.open("rb") as f:
                (alert,) = list(fastavro.reader(f))
            out.append(alert)
    return out


def _stamps(alerts: list[dict]) -> pa.RecordBatch:
    """The model's inputs, as the view hands them: each stamp's gzipped FITS bytes."""
    return pa.RecordBatch.from_pydict(
        {
            "science": pa.array([a["cutoutScience"]["stampData"] for a in alerts], pa.binary()),
            "template": pa.array([a["cutoutTemplate"]["stampData"] for a in alerts], pa.binary()),
        }
    )


def _predicted(alerts: list[dict], batch: pa.RecordBatch | None = None) -> np.ndarray:
    """(alerts, 2): the model's statistics, science then template."""
    model = _model()
    state = model.load(model.files, None)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = model.predict(state, _stamps(alerts) if batch is None else batch)
    assert not said, [str(w.message) for w in said]  # nothing per alert in the job's log
    return np.column_stack([np.asarray(result[o], dtype=np.float64) for o in OUTPUTS])


def _fink(alerts: list[dict]) -> np.ndarray:
    return np.array(
        [
            fink_hostless(a["cutoutScience"]["stampData"], a["cutoutTemplate"]["stampData"])
            for a in alerts
        ]
    )


def _assert_equal(alerts: list[dict]) -> np.ndarray:
    got, want = _predicted(alerts), _fink(alerts)
    assert got.shape == want.shape == (len(alerts), 2)
    differ = ~np.isclose(got, want, rtol=0.0, atol=1e-6)
    assert not differ.any(), [
        (alerts[i]["candid"], got[i].tolist(), want[i].tolist())
        for i in np.flatnonzero(differ.any(axis=1))
    ]
    return want


def test_the_config_is_fink_sciences_file_at_its_7_4_0_tag():
    """Byte for byte: the git blob id of the repository's config.json at the 7.4.0 tag."""
    data = _model().files["config"].read_bytes()
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == CONFIG_BLOB


def test_the_gate_is_fink_sciences_precuts_with_its_numbers():
    gate = _model().gate
    assert "abs(candidate.jd - candidate.jdstarthist) <= 45" in gate
    assert "candidate.magpsf <= 19.5" in gate
    assert gate.endswith(">= 3")
    assert "coalesce(prv_candidates.magpsf, array())" in gate


@pytest.mark.slow  # fink-science on 3 candidates: ~7 s
def test_the_statistics_equal_fink_sciences_on_the_first_real_alerts():
    """The 6 alerts of ztf-3.3 (3 candidates, 3 not) and the one 63x62 stamp (-99)."""
    (narrow,) = [a for a in _alerts("ztf-3.3-histories") if a["candid"] == NARROW]
    want = _assert_equal([*_alerts("ztf-3.3"), narrow])
    assert (want[:6] >= 0).all(axis=1).sum() == 3
    assert (want == NOT_CANDIDATE).all(axis=1).sum() == 4


@pytest.mark.slow  # fink-science takes ~1 s a candidate: ~25 s over the 20 candidates
def test_the_statistics_equal_fink_sciences_on_every_real_alert():
    """Every real ZTF alert with stamps (144): both statistics within 1e-6 of the package's,
    -99 where it gives -99; 20 of them are hostless candidates, with real statistics."""
    alerts = _alerts("ztf-3.3", "ztf-3.3-histories", "ztf-3.3-hostless")
    want = _assert_equal(alerts)
    candidates = (want >= 0).all(axis=1)
    assert candidates.sum() == 20  # not vacuous: 3 + 3 + 14
    assert ((want == NOT_CANDIDATE).all(axis=1) | candidates).all()


def test_a_missing_or_undecodable_stamp_is_null_and_the_others_are_scored():
    (alert,) = [a for a in _alerts("ztf-3.3") if a["candid"] == 1095578115815010003]
    stamp = alert["cutoutScience"]["stampData"]
    batch = pa.RecordBatch.from_pydict(
        {
            "science": pa.array([None, b"not a stamp", stamp[:100], stamp], pa.binary()),
            "template": pa.array([stamp, stamp, stamp, alert["cutoutTemplate"]["stampData"]]),
        }
    )
    got = _predicted([], batch)
    assert np.isnan(got[:3]).all()
    assert got[3].tolist() == [NOT_CANDIDATE, NOT_CANDIDATE] == list(_fink([alert])[0])


def _passes_gate(alert: dict, config: dict) -> bool:
    """Fink's pre-cuts the gate expresses, in plain Python over the alert as fastavro reads it."""
    c = alert["candidate"]
    history = [*(alert.get("prv_candidates") or []), c]
    magnitudes = [h["magpsf"] for h in history if h.get("magpsf") is not None]
    return (
        abs(c["jd"] - c["jdstarthist"]) <= config["cutout_timeframe"]
        and c["magpsf"] <= config["cutout_magnitude"]
        and sum(not np.isnan(m) for m in magnitudes) >= config["minimum_number_of_alerts"]
    )


def _young_bright_copy(alert: dict, candid: int) -> dict:
    """The alert as a young, bright transient of three detections: what the gate lets through."""
    out = copy.deepcopy(alert)
    c = out["candidate"]
    c.update(candid=candid, jdstarthist=c["jd"] - 10.0, magpsf=18.0)
    fields = list((alert.get("prv_candidates") or [{}])[0]) or list(c)
    earlier = [
        {**{k: copy.deepcopy(c.get(k)) for k in fields}, "jd": c["jd"] - d, "magpsf": m}
        for d, m in ((6.0, 18.6), (3.0, 18.3))
    ]
    out.update(candid=candid, prv_candidates=earlier)
    return out


@pytest.mark.slow  # fink-science on the candidates, and the view: ~40 s
def test_the_gate_sends_the_model_only_the_alerts_it_passes(spark):
    """Through the filter view, messages as ZTF sends them: the real alerts of ztf-3.3 and a copy
    of each made young, bright and three detections long. The gate passes what plain Python
    says it must (the copies, no real alert); those get the package's statistics, and every
    other alert null: the model never saw them (it would have said -99 or a statistic)."""
    from crafted import EDITED_IDS

    from alertsieve.alerts.ztf import header, one_alert_container
    from alertsieve.backtest.columns import view_columns
    from alertsieve.backtest.sources import messages_source

    model = _model()
    config = model.load(model.files, None)
    files = sorted((REAL / "ztf-3.3").glob("*.avro"))
    alerts = _alerts("ztf-3.3")
    messages = [(str(a["candid"]), f.read_bytes()) for f, a in zip(files, alerts, strict=True)]
    copies = [_young_bright_copy(a, EDITED_IDS + i) for i, a in enumerate(alerts)]
    for f, alert in zip(files, copies, strict=True):
        schema = header(f.read_bytes())["avro.schema"]
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(json.loads(schema)), alert)
        messages.append((str(alert["candid"]), one_alert_container(schema, body.getvalue())))
    everyone = alerts + copies
    gated = {a["candid"] for a in everyone if _passes_gate(a, config)}
    assert gated == {a["candid"] for a in copies}  # the copies, and no real alert

    frame = view_columns(
        spark,
        messages_source(spark, "ztf", messages),
        {
            "candid": "candid",
            "s": "scores.hostless.kstest_science",
            "t": "scores.hostless.kstest_template",
        },
    )
    rows = {r.candid: (r.s, r.t) for r in frame.itertuples()}
    assert rows.keys() == {a["candid"] for a in everyone}
    want = dict(zip((a["candid"] for a in copies), map(tuple, _fink(copies)), strict=True))
    for candid, got in rows.items():
        if candid in gated:
            assert np.allclose(got, want[candid], rtol=0.0, atol=1e-6), candid
        else:
            assert np.isnan(got).all(), candid  # null
    assert sum(w[0] >= 0 for w in want.values()) == 3  # not vacuous: the three candidates
