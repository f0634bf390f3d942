"""Independent oracles for the contributed ZTF filters (filters/ztf_*.py): the same science written
again in plain Python over a ZTF alert as fastavro decodes it, with astropy for the Galactic
latitude and ``oracles.expected_ztf_features`` (numpy) for the light-curve features. Nothing here
reads the filters' SQL or ``alertsieve.filtering.ztf_conditions``; only the filters' declared
parameter values are read from them (data), as ``oracles.contributed_oracles`` does for Rubin.

The shared cuts are written out here with their own numbers. How they meet nulls and NaN, as
the filters document it: a null field fails (but a null ``drb``, which older alerts lack, is not
cut on); NaN fails every comparison; -999, null or NaN in ``ssdistnr`` is no known object, and in
``sgscore1`` / ``distpsnr1`` no PS1 star.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from functools import cache, partial

import fastavro
import numpy as np
from astropy import units as u
from astropy.coordinates import SkyCoord
from crafted import ztf_messages
from fink_oracle import fink_anomaly_scores
from oracles import expected_ztf_features

from alertsieve.filtering.discovery import discover

#: fid -> the band's key in the features.
BAND_OF_FID = {1: "g", 2: "r", 3: "i"}


def _number(x) -> bool:
    return x is not None and not math.isnan(x)


def _above(x, t) -> bool:
    """x > t, never for null or NaN."""
    return _number(x) and x > t


def _at_least(x, t) -> bool:
    return _number(x) and x >= t


def _below(x, t) -> bool:
    return _number(x) and x < t


def _at_most(x, t) -> bool:
    return _number(x) and x <= t


def _real(c: dict) -> bool:
    """Random-forest score at least 0.55 (Fink); the deep score above 0.5 unless absent."""
    return _at_least(c.get("rb"), 0.55) and (c.get("drb") is None or _above(c["drb"], 0.5))


def _quality(c: dict, trailed_ok: bool = False) -> bool:
    """No bad pixel, FWHM <= 5 px, elongation <= 1.4 (unless trailing is fine), |magap - magpsf|
    <= 0.4 mag."""
    magdiff = c.get("magdiff")
    return (
        c.get("nbad") == 0
        and _at_most(c.get("fwhm"), 5.0)
        and (trailed_ok or _at_most(c.get("elong"), 1.4))
        and _number(magdiff)
        and abs(magdiff) <= 0.4
    )


def _clean(c: dict, trailed_ok: bool = False) -> bool:
    return _real(c) and _quality(c, trailed_ok)


def _positive(c: dict) -> bool:
    return c.get("isdiffpos") in ("t", "1")


def _sso_within(c: dict, arcsec: float) -> bool:
    """ZTF matched a known solar-system object closer than ``arcsec`` (-999: none)."""
    d = c.get("ssdistnr")
    return _number(d) and 0 <= d < arcsec


def _ps1_star(c: dict) -> bool:
    """A PS1 source with a star-like score (> 0.76) closer than 2 arcsec."""
    d = c.get("distpsnr1")
    return _above(c.get("sgscore1"), 0.76) and _number(d) and 0 <= d < 2


def _abs_galactic_latitude(c: dict) -> float:
    coord = SkyCoord(ra=c["ra"] * u.deg, dec=c["dec"] * u.deg, frame="icrs")
    return abs(float(coord.galactic.b.deg))


def _ztf_age(c: dict) -> float | None:
    """Days since ZTF's first detection at this place (``jdstarthist``), or None."""
    start = c.get("jdstarthist")
    return None if start is None else c["jd"] - start


def _this_band(a: dict) -> dict:
    """The features of the candidate's band ({} for an unknown fid)."""
    return expected_ztf_features(a).get(BAND_OF_FID.get(a["candidate"]["fid"]), None) or {}


def _early_sn_ia(
    a: dict,
    min_abs_b: float,
    max_age_days: float,
    max_gap_days: float,
    min_sigma: float,
    min_days_between: float,
) -> bool:
    """Clean, new, no star, off the plane, first seen by ZTF under two weeks ago, a deeper limit a
    few days before the first detection, and now brighter than last time in its band."""
    c, f = a["candidate"], expected_ztf_features(a)
    band = _this_band(a)
    before, first = f["prediscovery_days"], f["days_since_first"]
    return (
        _clean(c)
        and _positive(c)
        and not _sso_within(c, 20.0)
        and not _ps1_star(c)
        and _above(_abs_galactic_latitude(c), min_abs_b)
        and _below(_ztf_age(c), max_age_days)
        and before is not None
        and first is not None
        and before - first < max_gap_days
        and _number(c["magpsf"])
        and _above(f["prediscovery_limit"], c["magpsf"])
        and band.get("days_ago") == 0
        and _above(band.get("rise_sigma"), min_sigma)
        and _above(band.get("days_between"), min_days_between)
    )


def _fast_transient(
    a: dict,
    min_rise: float,
    min_sigma: float,
    min_days_between: float,
    max_age_days: float,
    max_ndethist: int,
    min_classtar: float,
    min_drb: float,
    min_abs_b: float,
) -> bool:
    """A fast, significant rise in the candidate's band, young in ZTF's record, point-like, real,
    away from stars, the plane and known asteroids."""
    c = a["candidate"]
    band = _this_band(a)
    ndethist = c.get("ndethist")
    return (
        band.get("days_ago") == 0
        and _above(band.get("rise"), min_rise)
        and _above(band.get("rise_sigma"), min_sigma)
        and _above(band.get("days_between"), min_days_between)
        and _below(_ztf_age(c), max_age_days)
        and ndethist is not None
        and ndethist < max_ndethist
        and _above(c.get("classtar"), min_classtar)
        and (c.get("drb") is None or _above(c["drb"], min_drb))
        and not _ps1_star(c)
        and _above(_abs_galactic_latitude(c), min_abs_b)
        and not _sso_within(c, 20.0)
        and _clean(c)
        and _positive(c)
    )


def _long_variable(
    a: dict, min_age_days: float, min_detections: int, min_chi2: float, min_amplitude: float
) -> bool:
    """A PS1 star ZTF has seen for months, scattering widely in some band."""
    c, f = a["candidate"], expected_ztf_features(a)
    varies = any(
        f[b]["n"] >= min_detections
        and _above(f[b]["chi2"], min_chi2)
        and _above(f[b]["amplitude"], min_amplitude)
        for b in ("g", "r", "i")
    )
    return (
        _ps1_star(c)
        and _above(_ztf_age(c), min_age_days)
        and varies
        and not _sso_within(c, 20.0)
        and _clean(c)
    )


def _known_asteroid(a: dict, max_ndethist: int, max_detections: int, max_mag_offset: float) -> bool:
    """ZTF's match to a known object within 5 arcsec, nearer than any PS1 source, seldom seen
    here, as bright as predicted; clean (trailing allowed) and positive."""
    c, f = a["candidate"], expected_ztf_features(a)
    ps1, ndethist = c.get("distpsnr1"), c.get("ndethist")
    mag, predicted = c.get("magpsf"), c.get("ssmagnr")
    return (
        _sso_within(c, 5.0)
        and _number(ps1)
        and abs(ps1) > c["ssdistnr"]
        and ndethist is not None
        and ndethist <= max_ndethist
        and f["n_detections"] <= max_detections
        and _number(mag)
        and _number(predicted)
        and abs(mag - predicted) < max_mag_offset
        and _clean(c, trailed_ok=True)
        and _positive(c)
    )


@cache
def _known_scores() -> dict[int, float]:
    """fink-science's score of every real alert and edited copy the tests send, by candid, in
    one batch (its functions load the forests at every call)."""
    alerts = [next(fastavro.reader(io.BytesIO(m))) for _, m in ztf_messages()]
    return dict(zip((a["candid"] for a in alerts), fink_anomaly_scores(alerts), strict=True))


def _anomalous(a: dict, max_score: float) -> bool:
    """Clean, and its light curve among the most anomalous by fink-science's own score."""
    score = _known_scores().get(a["candid"])
    if score is None:
        (score,) = fink_anomaly_scores([a])
    return _clean(a["candidate"]) and score < max_score


def _steady_riser(
    a: dict,
    window_days: float,
    min_points: int,
    min_span_days: float,
    min_rise: float,
    min_sigma: float,
    max_age_days: float,
) -> bool:
    """A clean, young, positive detection whose band's positive detections of the last
    ``window_days`` (itself included) fit a line brightening faster than ``min_rise`` mag/d at
    ``min_sigma``: numpy's weighted least squares (``polyfit``, weights 1/sigma, the coefficients'
    covariance unscaled by the residuals)."""
    c = a["candidate"]
    age = _ztf_age(c)
    if not (
        _clean(c)
        and _positive(c)
        and not _ps1_star(c)
        and not _sso_within(c, 20.0)
        and age is not None
        and _below(age, max_age_days)
        and _number(c.get("magpsf"))
        and _above(c.get("sigmapsf"), 0)
    ):
        return False
    same_band = [c] + [
        p
        for p in a.get("prv_candidates") or []
        if p["fid"] == c["fid"] and p.get("isdiffpos") in ("t", "1")
    ]
    points = [
        (p["jd"], p["magpsf"], p["sigmapsf"])
        for p in same_band
        if all(_number(p.get(k)) for k in ("jd", "magpsf", "sigmapsf"))
        and p["sigmapsf"] > 0
        and c["jd"] - window_days <= p["jd"] <= c["jd"]
    ]
    if len(points) < min_points:
        return False
    jd, mag, sigma = (np.array(x) for x in zip(*points, strict=True))
    if jd.max() - jd.min() < min_span_days:
        return False
    (slope, _), cov = np.polyfit(jd - c["jd"], mag, 1, w=1 / sigma, cov="unscaled")
    return -slope > min_rise and -slope / math.sqrt(cov[0][0]) > min_sigma


def ztf_oracles() -> dict[str, Callable[[dict], bool]]:
    """{contributed ZTF filter: its science in plain Python, over one alert as fastavro decodes
    it}, at the filters' declared parameter values (read as data; their SQL is not run)."""
    params = {f.name: dict(f.params) for f in discover(entry_points=False) if f.survey == "ztf"}
    science = {
        "ztf_early_sn_ia": _early_sn_ia,
        "ztf_fast_transients": _fast_transient,
        "ztf_long_variables": _long_variable,
        "ztf_known_asteroids": _known_asteroid,
        "ztf_anomalies": _anomalous,
        "ztf_steady_risers": _steady_riser,
    }
    assert set(science) == set(params), "a contributed ZTF filter has no oracle here"
    return {name: partial(test, **params[name]) for name, test in science.items()}


def ztf_filters_in_plain_python(alerts: dict[str, dict]) -> dict[str, set[str]]:
    """{contributed ZTF filter: ids of the alerts in ``alerts`` it must match}."""
    return {name: {k for k, a in alerts.items() if test(a)} for name, test in ztf_oracles().items()}
