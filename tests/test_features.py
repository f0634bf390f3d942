"""Light-curve features in Spark SQL, on real LSSTCam v10.0 and Operations Rehearsal v7.4 alerts
(and simulated v11.1 ones with longer histories, deep-drilling fields' of 400 and 1,000 earlier
detections among them), against numpy over the fastavro-decoded records."""

from __future__ import annotations

import copy
import io
import math
from pathlib import Path

import fastavro
import pytest
from crafted import REAL, REAL_FILES
from oracles import assert_features_equal, expected_features

from alertsieve.alerts.replay import read_raw_records
from alertsieve.alerts.schemas import frame, load_rubin_schema
from alertsieve.filtering.features import BANDS
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.references import referenced_paths
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import rubin_decoder

IDS = {"7.4": 704, "10.0": 1000, "11.1": 1101}
READ = [
    "diaSource.midpointMjdTai",
    "diaSource.psfFlux",
    "diaSource.psfFluxErr",
    "diaSource.band",
    "prvDiaSources[].midpointMjdTai",
    "prvDiaSources[].psfFlux",
    "prvDiaSources[].psfFluxErr",
    "prvDiaSources[].band",
]


def _messages() -> list[tuple[str, bytes]]:
    out = []
    for name, version in REAL_FILES.items():
        out += [(version, frame(IDS[version], r.body)) for r in read_raw_records(REAL / name)]
    sim = AlertSimulator(
        SimulationConfig(schema_version="11.1", stamp_size=0, seed=8, max_history=30)
    )
    schema = load_rubin_schema("11.1")
    alerts = list(sim.visit_alerts(0, count=60))
    out += [("11.1", frame(1101, schema.encode(a))) for a in alerts]
    out += [("11.1", frame(1101, schema.encode(a))) for a in _deep_field_alerts()]
    return out + [("11.1", frame(1101, schema.encode(a))) for a in _edge_cases(alerts)]


#: Earlier detections of the deep-drilling-field alerts (two of each): real deep-field LSSTCam
#: alerts carry 300 to 390.
DEEP = (400, 1000)


def _deep_field_alerts() -> list[dict]:
    return [
        a
        for history in DEEP
        for a in AlertSimulator(
            SimulationConfig(
                schema_version="11.1", stamp_size=0, seed=9, deep_share=1.0, deep_history=history
            )
        ).visit_alerts(0, count=2)
    ]


def _edge_cases(alerts: list[dict]) -> list[dict]:
    """Alerts made to reach what the simulated population rarely does: a g detection 0.3 d after
    an r one (a colour), a NaN error and a zero error in the history (null, not NaN), and an r
    light curve that crosses its template twice and then rises (sign changes, a rise in mag/d)."""
    with_history = [a for a in alerts if len(a["prvDiaSources"] or []) >= 3][:4]
    colour, nan_err, zero_err, swing = (copy.deepcopy(a) for a in with_history)
    colour["diaSource"].update(band="g", psfFlux=2500.0, psfFluxErr=50.0)
    colour["prvDiaSources"][-1].update(
        band="r",
        psfFlux=4000.0,
        psfFluxErr=40.0,
        midpointMjdTai=colour["diaSource"]["midpointMjdTai"] - 0.3,
    )
    for alert, err in ((nan_err, float("nan")), (zero_err, 0.0)):
        band = alert["diaSource"]["band"]
        alert["prvDiaSources"][-1].update(
            band=band, psfFluxErr=err, midpointMjdTai=alert["diaSource"]["midpointMjdTai"] - 1
        )
        alert["diaSource"]["psfFluxErr"] = err
    now = swing["diaSource"]["midpointMjdTai"]
    swing["diaSource"].update(band="r", psfFlux=3000.0, psfFluxErr=100.0)
    swing["prvDiaSources"] = swing["prvDiaSources"][-3:]
    for entry, (days, flux) in zip(
        swing["prvDiaSources"], ((3.0, 2000.0), (2.0, -1500.0), (1.0, 2500.0)), strict=True
    ):
        entry.update(band="r", psfFlux=flux, psfFluxErr=100.0, midpointMjdTai=now - days)
    return [colour, nan_err, zero_err, swing]


@pytest.fixture(scope="module")
def computed(spark):
    messages = _messages()
    decoder = rubin_decoder(DecodeSettings(topic="f", survey="rubin", schema_versions=tuple(IDS)))
    decoded = decoder.decode(message_frame(spark, [m for _, m in messages]), READ).orderBy(
        "_offset"
    )
    rows = filter_view(decoded).select("features").collect()
    return messages, [r["features"].asDict(recursive=True) for r in rows]


def test_features_equal_numpy_on_real_and_simulated_alerts(computed):
    messages, got = computed
    assert len(got) == len(messages) == 6 + 6 + 2 + 60 + 2 * len(DEEP) + 4
    for i, ((version, message), features) in enumerate(zip(messages, got, strict=True)):
        record = fastavro.schemaless_reader(
            io.BytesIO(message[5:]), load_rubin_schema(version).parsed, None
        )
        assert_features_equal(features, expected_features(record), f"alert {i} (v{version})")


def test_the_corpus_exercises_every_feature(computed):
    """Not a vacuous comparison: the real alerts carry histories, and rates, significances and
    colours come out non-null for some of them."""
    messages, got = computed
    real = got[:14]
    assert max(f["n_detections"] for f in real) > 1
    assert any(f[b]["rate_sigma"] is not None for f in got for b in BANDS)
    assert got[-4]["g_minus_r"] == pytest.approx(-2.5 * math.log10(2500 / 4000))
    nan_err, zero_err = (next(f[b] for b in BANDS if f[b]["days_ago"] == 0) for f in got[-3:-1])
    assert nan_err["snr"] is None and nan_err["rate_sigma"] is None  # NaN error
    assert (
        zero_err["flux"] != 0 and zero_err["snr"] is None
    )  # a flux over a zero error: null, not infinite
    assert nan_err["chi2"] is None and zero_err["chi2"] is None  # no weighted mean without errors
    swing = got[-1]["r"]
    assert swing["sign_changes"] == 2 and swing["days_between"] == pytest.approx(1.0)
    assert swing["rise"] == pytest.approx(2.5 * math.log10(3000 / 2500))
    assert got[-1]["n_negative"] == 1
    assert all(f["days_since_first"] is not None and f["days_since_first"] >= 0 for f in got)
    assert any(f[b]["chi2"] is not None for f in real for b in BANDS)  # real histories give a chi2
    # the deep fields' light curves: every earlier detection counted, in every band they hold
    deep = got[-4 - 2 * len(DEEP) : -4]
    assert [f["n_detections"] for f in deep] == [n + 1 for n in DEEP for _ in range(2)]
    assert all(sum(f[b]["chi2"] is not None for b in BANDS) >= 5 for f in deep)
    assert any(f[b]["sign_changes"] for f in deep for b in BANDS)  # variables cross the template


def test_a_filter_on_features_decodes_only_the_four_history_fields(spark):
    """Spark's own pruning finds what a features filter reads: the detection's and the history's
    time, band, flux and error, nothing else of the ~100 fields a history entry has."""
    decoder = rubin_decoder(DecodeSettings(topic="f", survey="rubin", schema_versions=tuple(IDS)))
    paths = referenced_paths(
        spark, decoder.view, ["features.r.rate_sigma > 5 AND features.n_detections >= 3"]
    )
    assert sorted(paths) == sorted(READ)


@pytest.mark.parametrize("survey", ["rubin", "ztf"])
def test_docs_list_every_feature(survey):
    """docs/filters.md lists each survey's FEATURES as they are (a row each)."""
    from importlib import import_module

    features = import_module(f"alertsieve.filtering.features.{survey}").FEATURES
    text = (Path(__file__).parents[1] / "docs" / "filters.md").read_text()
    for path, unit, meaning in features:
        assert f"| `{path}` | {unit or '-'} | {meaning} |" in text
