"""Simulated alerts: valid under every Rubin version, reproducible, realistic in size and science."""

from __future__ import annotations

import io
from collections import Counter

import fastavro
import numpy as np
import pytest
from astropy.io import fits

from alertsieve.alerts import schemas
from alertsieve.sim.populations import DEFAULT_MIX, DETECTORS, mag_to_flux
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig


@pytest.mark.parametrize("version", schemas.rubin_versions())
def test_every_version_round_trips_simulate_encode_frame_decode(version, tmp_path):
    sim = AlertSimulator(SimulationConfig(schema_version=version, seed=3, stamp_size=16))
    visit = sim.visit(0)
    store = schemas.LocalSchemaStore(tmp_path)
    for i in range(12):
        alert = sim.alert(visit, i)
        schema_id, body = schemas.unframe(sim.schema.encode_framed(alert))
        assert schema_id == schemas.load_rubin_schema(version).schema_id
        assert store.get(schema_id).decode(body) == alert
        reference = io.BytesIO()  # the producer's encoder (cavro) writes what fastavro writes
        fastavro.schemaless_writer(reference, sim.schema.parsed, alert)
        assert body == reference.getvalue()


def test_same_seed_same_alerts_and_slices_reassemble():
    cfg = SimulationConfig(seed=7, alerts_per_visit=400, stamp_size=8)
    a = list(AlertSimulator(cfg).visit_alerts(2))
    b = list(AlertSimulator(cfg).visit_alerts(2))
    assert a == b and len(a) == 400
    parts = [list(AlertSimulator(cfg).visit_alerts(2, part=k, parts=3)) for k in range(3)]
    assert sorted(x["diaSourceId"] for p in parts for x in p) == sorted(x["diaSourceId"] for x in a)
    for k, part in enumerate(parts):
        assert {x["diaSource"]["detector"] % 3 for x in part} == {k}
    other = list(
        AlertSimulator(SimulationConfig(seed=8, alerts_per_visit=5, stamp_size=8)).visit_alerts(2)
    )
    assert other[0]["diaSource"]["ra"] != a[0]["diaSource"]["ra"]


def test_alert_ids_are_unique_and_detectors_cover_the_camera():
    sim = AlertSimulator(SimulationConfig(seed=1, alerts_per_visit=500, stamp_size=0))
    alerts = list(sim.visit_alerts(0))
    assert len({a["diaSourceId"] for a in alerts}) == 500
    assert {a["diaSource"]["detector"] for a in alerts} == set(range(DETECTORS))
    assert all(a["cutoutDifference"] is None for a in alerts)


def test_cutouts_are_fits_images_with_the_source_in_the_middle():
    sim = AlertSimulator(SimulationConfig(seed=2, stamp_size=84))
    visit = sim.visit(0)
    truth = next(t for t in (sim.truth(visit, i) for i in range(200)) if t.population == "bright")
    alert = sim.record(truth)
    sizes = []
    for name in ("cutoutDifference", "cutoutScience", "cutoutTemplate"):
        sizes.append(len(alert[name]))
        with fits.open(io.BytesIO(alert[name])) as hdul:
            img = hdul[0].data
            assert img.shape == (84, 84)
            assert hdul[0].header["CRVAL1"] == pytest.approx(truth.source.ra)
            if name != "cutoutTemplate":
                assert np.unravel_index(np.argmax(img), img.shape) in {
                    (41, 41),
                    (41, 42),
                    (42, 41),
                    (42, 42),
                }
    assert all(30_000 <= s <= 70_000 for s in sizes)  # Rubin-like: ~30-70 KB per stamp
    diff = fits.getdata(io.BytesIO(alert["cutoutDifference"]))
    assert diff.sum() == pytest.approx(truth.source.flux, rel=0.2)  # the stamp holds the flux


def test_populations_carry_their_science():
    sim = AlertSimulator(SimulationConfig(seed=5, stamp_size=0))
    visit = sim.visit(0)
    truths = [sim.truth(visit, i) for i in range(3000)]
    counts = Counter(t.population for t in truths)
    for name, share in DEFAULT_MIX.items():
        assert abs(counts[name] / 3000 - share) < 0.02, (name, counts[name])
    for t in truths:
        rec = sim.record(t)
        src = rec["diaSource"]
        if t.population == "bright":
            assert src["snr"] > 50 and src["reliability"] > 0.9
            assert src["psfFlux"] > mag_to_flux(18.5)
        elif t.population == "bogus":
            assert src["reliability"] < 0.25 and src["snr"] < 12
        elif t.population == "solar_system":
            assert rec["ssSource"]["ssObjectId"] == src["ssObjectId"] is not None
            assert rec["diaObject"] is None and src["diaObjectId"] is None
        elif t.population == "new":
            assert rec["prvDiaSources"] == [] and rec["diaObject"]["nDiaSources"] == 1
        elif t.population == "rising":
            lc = [p["psfFlux"] for p in rec["prvDiaSources"]] + [src["psfFlux"]]
            times = [p["midpointMjdTai"] for p in rec["prvDiaSources"]] + [src["midpointMjdTai"]]
            slope = np.polyfit(times, lc, 1)[0]
            assert slope > 0  # brighter now than before
        if t.population != "solar_system":
            n = len(rec["prvDiaSources"]) + 1
            assert rec["diaObject"]["nDiaSources"] == n
            band = src["band"]
            fluxes = [p["psfFlux"] for p in rec["prvDiaSources"] if p["band"] == band] + [
                src["psfFlux"]
            ]
            assert rec["diaObject"][f"{band}_psfFluxNdata"] == len(fluxes)
            assert rec["diaObject"][f"{band}_psfFluxMean"] == pytest.approx(
                np.mean(fluxes), rel=1e-5
            )


def test_alert_size_is_rubin_like():
    sim = AlertSimulator(SimulationConfig(seed=4))
    sizes = [len(sim.schema.encode(a)) for a in sim.visit_alerts(0, count=100)]
    assert 80_000 <= np.mean(sizes) <= 140_000


@pytest.mark.parametrize("history", [400, 1000])
def test_deep_field_alerts_carry_exactly_their_history_of_detections(history):
    """Deep-drilling fields: every such alert carries exactly ``history`` earlier detections (each
    at least 5 sigma, oldest first, before the alert), from nightly sequences of several visits in
    several bands; the visit's other alerts are the same as without deep fields."""
    config = SimulationConfig(stamp_size=0, seed=21, deep_share=0.3, deep_history=history)
    with_deep = list(AlertSimulator(config).visit_alerts(0, count=60))
    without = list(
        AlertSimulator(SimulationConfig(stamp_size=0, seed=21)).visit_alerts(0, count=60)
    )
    deep = [a for a in with_deep if len(a["prvDiaSources"] or []) == history]
    assert 0 < len(deep) < 60  # about 30% of the visit
    for alert in deep:
        earlier = alert["prvDiaSources"]
        times = [d["midpointMjdTai"] for d in earlier]
        assert times == sorted(times) and times[-1] < alert["diaSource"]["midpointMjdTai"]
        assert all(abs(d["psfFlux"]) >= 5 * d["psfFluxErr"] for d in earlier)
        nights = Counter(int(t) for t in times)  # visits an MJD day
        assert max(nights.values()) >= 4 and len({d["band"] for d in earlier}) >= 4
    others = [(a, b) for a, b in zip(with_deep, without, strict=True) if a not in deep]
    assert len(others) == 60 - len(deep) and all(a == b for a, b in others)
