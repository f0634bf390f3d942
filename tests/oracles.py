"""Independent oracles: the science of the test filters and of the contributed filters, written
again in plain Python over alerts as fastavro decodes them (astropy for sky geometry). Tests
compare the job's outputs with these, never with the filters' own code."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import date
from functools import partial

import numpy as np
from astropy import units as u
from astropy.coordinates import SkyCoord
from fink_rubin_oracle import classified, prime
from rubin_model_oracle import rubin_transients_scores

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
        lambda a: (
            (expected_features(a)["r"]["rate_sigma"] or 0) > 3
            and (expected_features(a)["r"]["rate"] or 0) > 0
        ),
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


#: Per-detection flags that disqualify a measurement, as Fink's Rubin quality block names them
#: (fink-filters rubin/blocks.py b_good_quality), plus satellite glints and streaks.
BAD_FLAGS = (
    "isDipole",
    "shape_flag",
    "forced_PsfFlux_flag",
    "forced_PsfFlux_flag_edge",
    "psfFlux_flag",
    "centroid_flag",
    "apFlux_flag",
    "pixelFlags_interpolated",
    "pixelFlags_cr",
    "pixelFlags_bad",
    "glint_trail",
    "pixelFlags_streak",
)
#: AB magnitude of 1 nJy.
NJY_ZERO_POINT = 31.4


def _above(x, threshold) -> bool:
    """SQL's ``x > t AND NOT isnan(x)``: a null or NaN never passes."""
    return x is not None and not math.isnan(x) and x > threshold


def _clean(source: dict) -> bool:
    """No disqualifying flag set; a flag the alert's schema lacks (None) is not set."""
    return not any(source.get(flag) for flag in BAD_FLAGS)


def _known_moving(a: dict) -> bool:
    return a.get("ssSource") is not None or (a["diaSource"].get("ssObjectId") or 0) != 0


def _sigmas_above_template(source: dict, k: float) -> bool:
    """psfFlux more than ``k`` times its error above zero (NaN flux never; NaN error never)."""
    flux, err = source["psfFlux"], source["psfFluxErr"]
    return flux is not None and err is not None and not math.isnan(flux) and flux > k * err


def _galactic_latitude(source: dict) -> float:
    return SkyCoord(ra=source["ra"] * u.deg, dec=source["dec"] * u.deg, frame="icrs").galactic.b.deg


def _bright_high_snr(a: dict, min_reliability: float, min_snr: float, max_mag: float) -> bool:
    s = a["diaSource"]
    return (
        _clean(s)
        and not s.get("pixelFlags_saturatedCenter")
        and _above(s["reliability"], min_reliability)
        and _sigmas_above_template(s, min_snr)
        and NJY_ZERO_POINT - 2.5 * math.log10(s["psfFlux"]) < max_mag
        and not _known_moving(a)
    )


def _new_source(a: dict, min_reliability: float, min_snr: float) -> bool:
    s, count = a["diaSource"], (a.get("diaObject") or {}).get("nDiaSources")
    return (
        not a.get("prvDiaSources")
        and count in (None, 1)
        and _clean(s)
        and _above(s["reliability"], min_reliability)
        and _sigmas_above_template(s, min_snr)
        and not _known_moving(a)
    )


def _solar_system(a: dict, min_reliability: float) -> bool:
    s = a["diaSource"]
    return _known_moving(a) and _clean(s) and _above(s["reliability"], min_reliability)


def _was_brighter_in_forced_photometry(a: dict, min_sigma: float) -> bool:
    s = a["diaSource"]
    for p in a.get("prvDiaForcedSources") or []:
        values = (p["psfFlux"], p["psfFluxErr"], s["psfFlux"], s["psfFluxErr"])
        if p["band"] != s["band"] or any(v is None for v in values) or math.isnan(p["psfFlux"]):
            continue
        if p["psfFlux"] - s["psfFlux"] > min_sigma * math.sqrt(
            p["psfFluxErr"] ** 2 + s["psfFluxErr"] ** 2
        ):
            return True
    return False


def _fast_riser(
    a: dict,
    min_rise: float,
    min_days_between: float,
    min_sigma: float,
    max_age_days: float,
    min_reliability: float,
) -> bool:
    """Brightening in this detection's band since the band's previous detection, young, never
    brighter in forced photometry, clean and reliable."""
    s, f = a["diaSource"], expected_features(a)
    band = f.get(s["band"]) or {}
    return (
        band.get("days_ago") == 0
        and _above(band["rise"], min_rise)
        and _above(band["days_between"], min_days_between)
        and _above(band["rate_sigma"], min_sigma)
        and f["days_since_first"] is not None
        and f["days_since_first"] < max_age_days
        and not _was_brighter_in_forced_photometry(a, min_sigma)
        and _clean(s)
        and _above(s["reliability"], min_reliability)
        and not _known_moving(a)
    )


def _rising_transient(a: dict, min_rising: float, max_bogus: float, min_reliability: float) -> bool:
    """The transients model's riser, not its artefact, and reliable by Rubin's score."""
    (scores,) = rubin_transients_scores([a])
    return (
        scores["rising"] > min_rising
        and scores["bogus"] < max_bogus
        and _above(a["diaSource"]["reliability"], min_reliability)
    )


def _supernova_candidate(a: dict, min_cats: float, min_snn: float, min_reliability: float) -> bool:
    """CATS says SN-like, SuperNNova a supernova (fink-science's own functions), and real."""
    c = classified(a)
    return (
        c["cats"]["class"] == 11
        and c["cats"]["score"] > min_cats
        and c["snn"] > min_snn
        and _above(a["diaSource"]["reliability"], min_reliability)
    )


def _periodic_or_agn(a: dict, min_cats: float, min_reliability: float) -> bool:
    """CATS says periodic or non-periodic variable (fink-science's own function), and real."""
    c = classified(a)["cats"]
    return (
        c["class"] in (21, 22)
        and c["score"] > min_cats
        and _above(a["diaSource"]["reliability"], min_reliability)
    )


def _periodic_variable(
    a: dict, min_sign_changes: int, min_chi2: float, min_reliability: float
) -> bool:
    s, f = a["diaSource"], expected_features(a)
    swings = any(
        f[b]["sign_changes"] >= min_sign_changes and _above(f[b]["chi2"], min_chi2) for b in BANDS
    )
    return (
        swings and _clean(s) and _above(s["reliability"], min_reliability) and not _known_moving(a)
    )


def _extragalactic(
    a: dict,
    min_abs_b: float,
    min_minutes_between: float,
    min_snr: float,
    max_age_days: float,
    min_reliability: float,
) -> bool:
    """Far from the Galactic plane (astropy's Galactic frame), seen twice at a fixed place, never
    below the template, young, clean, reliable and not a known moving object."""
    s, f = a["diaSource"], expected_features(a)
    age = f["days_since_first"]
    return (
        _above(abs(_galactic_latitude(s)), min_abs_b)
        and f["n_detections"] >= 2
        and age is not None
        and min_minutes_between < age * 1440
        and age < max_age_days
        and not _known_moving(a)
        and f["n_negative"] == 0
        and _sigmas_above_template(s, min_snr)
        and _clean(s)
        and _above(s["reliability"], min_reliability)
    )


def _variable_source(a: dict, min_points: int, max_chance: float) -> bool:
    """A clean detection whose band's detections (this one and ``prvDiaSources``, each with a
    measured flux, error above 0, not after this one) scatter about their weighted mean with a
    chi-square a constant source would reach less than ``max_chance`` of the time: one alert at a
    time, the probability from scipy's chi-square distribution."""
    from scipy.stats import chi2

    s = a["diaSource"]
    if not (_clean(s) and _above(s["reliability"], 0.5) and not _known_moving(a)):
        return False
    points = [
        (p["psfFlux"], p["psfFluxErr"])
        for p in [s, *(a.get("prvDiaSources") or [])]
        if p["band"] == s["band"]
        and all(_number(p.get(k)) is not None for k in ("midpointMjdTai", "psfFlux", "psfFluxErr"))
        and p["psfFluxErr"] > 0
        and p["midpointMjdTai"] <= s["midpointMjdTai"]
    ]
    if len(points) < min_points:
        return False
    flux, err = (np.array(x, float) for x in zip(*points, strict=True))
    mean = np.sum(flux / err**2) / np.sum(1 / err**2)
    return bool(chi2.sf(np.sum(((flux - mean) / err) ** 2), len(points) - 1) < max_chance)


def contributed_oracles() -> dict[str, Callable[[dict], bool]]:
    """{contributed Rubin filter: its science in plain Python, over one alert as fastavro decodes it}.
    Only the filters' declared parameter values are read from them (data); their code is not run."""
    params = {f.name: dict(f.params) for f in discover(entry_points=False) if f.survey == "rubin"}
    science = {
        "bright_high_snr": _bright_high_snr,
        "new_sources": _new_source,
        "solar_system": _solar_system,
        "periodic_variables": _periodic_variable,
        "extragalactic": _extragalactic,
        "fast_risers": _fast_riser,
        "rubin_rising_transients": _rising_transient,
        "rubin_supernova_candidates": _supernova_candidate,
        "rubin_periodic_or_agn": _periodic_or_agn,
        "rubin_variable_sources": _variable_source,
    }
    assert set(science) == set(params), "a contributed filter has no oracle here"
    return {name: partial(test, **params[name]) for name, test in science.items()}


def contributed_filters_in_plain_python(good: dict[str, dict]) -> dict[str, set[str]]:
    """{contributed filter: ids of the alerts in ``good`` it must match}."""
    prime(good.values())  # fink-science's classifiers over every alert at once
    return {
        name: {k for k, a in good.items() if test(a)}
        for name, test in contributed_oracles().items()
    }


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

    negative = [r for r in rows if f(r["psfFlux"]) < 0]
    out: dict = {
        "n_detections": len(rows),
        "days_since_first": _number(now - mjd.min()),
        "n_negative": len(negative),
    }
    latest = {}
    for band in BANDS:
        mine = [r for r in rows if r["band"] == band]
        last = mine[-1] if mine else None
        prev = mine[-2] if len(mine) > 1 else None
        latest[band] = last
        flux = np.array([f(r["psfFlux"]) for r in mine])
        sigma = np.array([f(r["psfFluxErr"]) for r in mine])
        with np.errstate(all="ignore"):
            change = f(last["psfFlux"]) - f(prev["psfFlux"]) if prev else np.nan
            dt = last["midpointMjdTai"] - prev["midpointMjdTai"] if prev else np.nan
            err = np.hypot(f(last["psfFluxErr"]), f(prev["psfFluxErr"])) if prev else np.nan
            both_positive = prev is not None and f(last["psfFlux"]) > 0 and f(prev["psfFlux"]) > 0
            weights = 1.0 / sigma**2
            mean = np.sum(weights * flux) / np.sum(weights)
            chi2 = np.sum(weights * (flux - mean) ** 2) / (len(mine) - 1) if len(mine) > 1 else None
            out[band] = {
                "n": len(mine),
                "flux": _number(f(last["psfFlux"])) if last else None,
                "snr": _number(np.float64(f(last["psfFlux"])) / f(last["psfFluxErr"]))
                if last
                else None,
                "days_ago": _number(now - last["midpointMjdTai"]) if last else None,
                "rate": _number(np.float64(change) / dt) if prev else None,
                "rate_sigma": _number(np.float64(change) / err) if prev else None,
                "days_between": _number(dt) if prev else None,
                "rise": _number(
                    2.5 * np.log10(f(last["psfFlux"]) / f(prev["psfFlux"])) / np.float64(dt)
                )
                if both_positive
                else None,
                "chi2": _number(chi2) if chi2 is not None else None,
                "sign_changes": int(np.sum(flux[1:] * flux[:-1] < 0)),
            }
    g, r = latest["g"], latest["r"]
    colour = None
    if g and r and f(g["psfFlux"]) > 0 and f(r["psfFlux"]) > 0:
        if abs(g["midpointMjdTai"] - r["midpointMjdTai"]) <= COLOUR_WINDOW_DAYS:
            colour = -2.5 * math.log10(f(g["psfFlux"]) / f(r["psfFlux"]))
    out["g_minus_r"] = colour
    return out


def dayobs(mjd: float) -> date:
    """Rubin's observing night (``dayObs``), the date at UTC-12h, from an MJD: astropy's calendar,
    not the code under test."""
    from astropy.time import Time

    return date.fromisoformat(Time(mjd - 0.5, format="mjd", scale="utc").to_value("iso", "date"))


#: ZTF's bands by fid, as ZTF's schema documents them.
ZTF_FID = {"g": 1, "r": 2, "i": 3}


def expected_ztf_features(record: dict) -> dict:
    """The ZTF features of one alert in numpy, from its record as fastavro reads it: detections
    are the candidate and the history entries with a candid, the others are upper limits; band
    features use the positive detections only."""
    history = record.get("prv_candidates") or []
    now = record["candidate"]["jd"]
    detections = sorted(
        [h for h in history if h["candid"] is not None] + [record["candidate"]],
        key=lambda d: d["jd"],
    )
    limits = sorted([h for h in history if h["candid"] is None], key=lambda h: h["jd"])

    def f(x):
        return np.nan if x is None else float(x)

    first = min(d["jd"] for d in detections)
    before = [h for h in limits if h["jd"] < first]
    out: dict = {
        "n_detections": len(detections),
        "n_upper_limits": len(limits),
        "days_since_first": _number(now - first),
        "n_negative": sum(d["isdiffpos"] in ("f", "0") for d in detections),
        "prediscovery_days": _number(now - before[-1]["jd"]) if before else None,
        "prediscovery_limit": _number(f(before[-1]["diffmaglim"])) if before else None,
    }
    latest = {}
    for band, fid in ZTF_FID.items():
        mine = [d for d in detections if d["fid"] == fid and d["isdiffpos"] in ("t", "1")]
        last = mine[-1] if mine else None
        prev = mine[-2] if len(mine) > 1 else None
        latest[band] = last
        mag = np.array([f(d["magpsf"]) for d in mine])
        sigma = np.array([f(d["sigmapsf"]) for d in mine])
        with np.errstate(all="ignore"):
            gained = f(prev["magpsf"]) - f(last["magpsf"]) if prev else np.nan
            dt = last["jd"] - prev["jd"] if prev else np.nan
            weights = 1.0 / sigma**2
            mean = np.sum(weights * mag) / np.sum(weights)
            chi2 = np.sum(weights * (mag - mean) ** 2) / (len(mine) - 1) if len(mine) > 1 else None
            out[band] = {
                "n": len(mine),
                "mag": _number(f(last["magpsf"])) if last else None,
                "mag_err": _number(f(last["sigmapsf"])) if last else None,
                "days_ago": _number(now - last["jd"]) if last else None,
                "days_between": _number(dt) if prev else None,
                "rise": _number(np.float64(gained) / dt) if prev else None,
                "rise_sigma": _number(
                    np.float64(gained) / np.hypot(f(last["sigmapsf"]), f(prev["sigmapsf"]))
                )
                if prev
                else None,
                "chi2": _number(chi2) if chi2 is not None else None,
                "amplitude": _number(np.max(mag) - np.min(mag)) if len(mine) > 1 else None,
            }
    g, r = latest["g"], latest["r"]
    colour = None
    if g and r and abs(g["jd"] - r["jd"]) <= COLOUR_WINDOW_DAYS:
        colour = _number(f(g["magpsf"]) - f(r["magpsf"]))
    out["g_minus_r"] = colour
    return out


def assert_features_equal(got, want, where: str) -> None:
    """Features as Spark computed them (``got``) equal the numpy ones (``want``) to 1e-12, nulls
    and counts exactly; ``where`` names the first field that differs."""
    import pytest

    if isinstance(want, dict):
        assert set(got) == set(want), where
        for k in want:
            assert_features_equal(got[k], want[k], f"{where}.{k}")
    elif want is None or isinstance(want, int):
        assert got == want, where
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), where


def _over(alert: dict, path: str, threshold: float) -> bool:
    group, name = path.split(".")
    value = (alert.get(group) or {}).get(name)
    return value is not None and value > threshold


#: The benchmarks' first ten broker-like filters (``bench_filters(10)``), their SQL as the job
#: runs it and the same cuts written again by hand: the benchmarks' match counts are checked
#: against these, never against the Python twins the benchmark module generates from its templates.
BROKER_LIKE_TEN = [
    ("diaSource.snr > 170", lambda a: _over(a, "diaSource.snr", 170)),
    (
        "diaSource.reliability > 0.88 AND diaSource.snr > 100",
        lambda a: _over(a, "diaSource.reliability", 0.88) and _over(a, "diaSource.snr", 100),
    ),
    ("diaSource.psfFlux > 51000.0", lambda a: _over(a, "diaSource.psfFlux", 51_000)),
    (
        "diaObject.nDiaSources > 10 AND diaSource.snr > 119",
        lambda a: _over(a, "diaObject.nDiaSources", 10) and _over(a, "diaSource.snr", 119),
    ),
    (
        "ssSource IS NOT NULL AND diaSource.snr > 5.0",
        lambda a: a.get("ssSource") is not None and _over(a, "diaSource.snr", 5),
    ),
    ("diaSource.templateFlux > 335000.0", lambda a: _over(a, "diaSource.templateFlux", 335_000)),
    ("diaSource.scienceFlux > 395000.0", lambda a: _over(a, "diaSource.scienceFlux", 395_000)),
    (
        "size(prvDiaSources) = 0 AND diaSource.snr > 8.29",  # size(null) is not 0: no history at all fails
        lambda a: (
            a.get("prvDiaSources") is not None
            and len(a["prvDiaSources"]) == 0
            and _over(a, "diaSource.snr", 8.29)
        ),
    ),
    (
        "diaSource.extendedness > 0.0822 AND diaSource.snr > 50",
        lambda a: _over(a, "diaSource.extendedness", 0.0822) and _over(a, "diaSource.snr", 50),
    ),
    (
        "diaSource.reliability < 0.0149",
        lambda a: (
            a["diaSource"].get("reliability") is not None and a["diaSource"]["reliability"] < 0.0149
        ),
    ),
]
