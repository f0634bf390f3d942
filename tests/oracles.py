"""Independent oracles: the science of the test filters and of the contributed filters, written
again in plain Python over alerts as fastavro decodes them (astropy for sky geometry). Tests
compare the job's outputs with these, never with the filters' own code."""

from __future__ import annotations

import math

import numpy as np
from astropy import units as u
from astropy.coordinates import SkyCoord

from alertsieve.filtering.discovery import discover
from alertsieve.filtering.features import BANDS, COLOUR_WINDOW_DAYS

#: SQL filters and the same science in plain Python, written independently.
FILTERS = {
    "bright": (
        "diaSource.snr > 50 AND diaSource.reliability > 0.9",
        lambda a: a["diaSource"]["snr"] > 50 and a["diaSource"]["reliability"] > 0.9,
    ),
    "first_seen": ("size(prvDiaSources) = 0", lambda a: len(a["prvDiaSources"] or []) == 0),
    "solar_system": ("ssSource IS NOT NULL", lambda a: a["ssSource"] is not None),
    "rising": (  # light-curve features: a significant rise between the last two r detections
        "features.r.rate_sigma > 3 AND features.r.rate > 0",
        lambda a: (expected_features(a)["r"]["rate_sigma"] or 0) > 3 and (expected_features(a)["r"]["rate"] or 0) > 0,
    ),
    "long_history_doubtful": (
        "diaObject.nDiaSources >= 6 AND diaSource.reliability < 0.9",
        lambda a: (
            a["diaObject"] is not None
            and a["diaObject"]["nDiaSources"] >= 6
            and a["diaSource"]["reliability"] < 0.9
        ),
    ),
}


def _periodic(a: dict) -> bool:
    o = a["diaObject"]
    if o is None or o["nDiaSources"] < 8 or not a["diaSource"]["extendedness"] < 0.3:
        return False
    ratios = [
        o[f"{b}_psfFluxSigma"] / o[f"{b}_psfFluxErrMean"]
        for b in "grizy"
        if o[f"{b}_psfFluxSigma"] is not None and o[f"{b}_psfFluxErrMean"] is not None
    ]
    return bool(ratios) and max(ratios) > 5


def _extragalactic(a: dict, min_abs_b: float, min_reliability: float) -> bool:
    """Far from the Galactic plane (astropy's Galactic frame), reliable and not moving."""
    s = a["diaSource"]
    b = SkyCoord(ra=s["ra"] * u.deg, dec=s["dec"] * u.deg, frame="icrs").galactic.b.deg
    reliable = s["reliability"] is not None and s["reliability"] > min_reliability
    return abs(b) > min_abs_b and reliable and a["ssSource"] is None


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope, by hand."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def _fast_riser(a: dict, min_mag_per_day: float, min_points: int, max_days: float) -> bool:
    """The latest detection is the brightest of the last ``max_days`` and the light curve gains
    more than ``min_mag_per_day`` magnitudes a day over them."""
    points = [(p["midpointMjdTai"], p["psfFlux"]) for p in a["prvDiaSources"] or []]
    points.append((a["diaSource"]["midpointMjdTai"], a["diaSource"]["psfFlux"]))
    last = points[-1][0]
    recent = [(t, f) for t, f in points if t >= last - max_days]
    times, fluxes = [t for t, _ in recent], [f for _, f in recent]
    if len(recent) < min_points or min(fluxes) <= 0 or max(times) == min(times):
        return False
    magnitudes = [-2.5 * math.log10(f) for f in fluxes]
    return fluxes[-1] == max(fluxes) and -_slope(times, magnitudes) > min_mag_per_day


def contributed_filters_in_plain_python(good: dict[str, dict]) -> dict[str, set[str]]:
    """{contributed filter: ids of the alerts in ``good`` it must match}. Only the filters'
    declared parameter values are read from them (data); their code is not run."""
    params = {f.name: dict(f.params) for f in discover(entry_points=False)}
    tests = {
        "bright_high_snr": lambda a: (
            a["diaSource"]["snr"] > 50 and a["diaSource"]["reliability"] > 0.9
        ),
        "new_sources": lambda a: (
            len(a["prvDiaSources"]) == 0
            and a["diaObject"] is not None
            and a["diaObject"]["nDiaSources"] == 1
            and a["diaSource"]["reliability"] > 0.8
        ),
        "solar_system": lambda a: a["ssSource"] is not None and a["diaSource"]["reliability"] > 0.5,
        "periodic_variables": _periodic,
        "extragalactic": lambda a: _extragalactic(a, **params["extragalactic"]),
        "fast_risers": lambda a: _fast_riser(a, **params["fast_risers"]),
    }
    assert set(tests) == set(params), "a contributed filter has no oracle here"
    return {n: {k for k, a in good.items() if test(a)} for n, test in tests.items()}


def _number(x) -> float | None:
    """As the features promise: NaN and infinities are null."""
    return None if x is None or not np.isfinite(x) else float(x)


def expected_features(record: dict) -> dict:
    """The features of one alert in numpy, from its record as fastavro reads it."""
    rows = [*(record.get("prvDiaSources") or []), record["diaSource"]]
    mjd = np.array([r["midpointMjdTai"] for r in rows], float)
    order = np.argsort(mjd, kind="stable")
    rows = [rows[i] for i in order]
    now = record["diaSource"]["midpointMjdTai"]

    def f(x):
        return np.nan if x is None else float(x)

    out: dict = {"n_detections": len(rows), "days_since_first": _number(now - mjd.min())}
    latest = {}
    for band in BANDS:
        mine = [r for r in rows if r["band"] == band]
        last = mine[-1] if mine else None
        prev = mine[-2] if len(mine) > 1 else None
        latest[band] = last
        with np.errstate(all="ignore"):
            change = f(last["psfFlux"]) - f(prev["psfFlux"]) if prev else np.nan
            dt = last["midpointMjdTai"] - prev["midpointMjdTai"] if prev else np.nan
            err = np.hypot(f(last["psfFluxErr"]), f(prev["psfFluxErr"])) if prev else np.nan
            out[band] = {
                "n": len(mine),
                "flux": _number(f(last["psfFlux"])) if last else None,
                "snr": _number(np.float64(f(last["psfFlux"])) / f(last["psfFluxErr"])) if last else None,
                "days_ago": _number(now - last["midpointMjdTai"]) if last else None,
                "rate": _number(np.float64(change) / dt) if prev else None,
                "rate_sigma": _number(np.float64(change) / err) if prev else None,
            }
    g, r = latest["g"], latest["r"]
    colour = None
    if g and r and f(g["psfFlux"]) > 0 and f(r["psfFlux"]) > 0:
        if abs(g["midpointMjdTai"] - r["midpointMjdTai"]) <= COLOUR_WINDOW_DAYS:
            colour = -2.5 * math.log10(f(g["psfFlux"]) / f(r["psfFlux"]))
    out["g_minus_r"] = colour
    return out
