"""What a TOM keeps of one decoded match: the target (the survey's object, where it is) and its
photometry (one point per detection, ZTF's upper limits too). Pure Python, no Django: the
handler (``alertsieve.tom.handlers``) saves these, and tests check them without a TOM.

Rubin measures a difference-image flux in nJy (``psfFlux``, ``psfFluxErr``); a TOM plots
magnitudes, so each flux becomes an AB magnitude, ``m = 31.4 - 2.5 log10(f / nJy)``, with the
first-order error ``2.5 / ln 10 * df / f``. A flux at or below zero (a source fainter than the
template) has no magnitude: its point keeps the flux and no brightness, so nothing is lost and
nothing invented. ZTF gives magnitudes (``magpsf``, ``sigmapsf``) and, in ``prv_candidates``,
non-detections with only the limiting magnitude ``diffmaglim``: those become upper limits.

Times: Rubin's ``midpointMjdTai`` is TAI, ZTF's ``jd`` UTC; a TOM stores UTC datetimes, so each
point carries both its exact MJD (as the survey gave it) and the UTC time.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

from alertsieve.alerts.schemas import CUTOUTS
from alertsieve.publish import contract
from alertsieve.subscribe.identity import JD_MINUS_MJD, identity

#: AB magnitude of a flux of 1 nJy. The AB system's definition, m = -2.5 log10(f / (erg/s/cm2/Hz))
#: - 48.60, with 1 nJy = 1e-32 erg/s/cm2/Hz gives exactly 31.4 (the "3631 Jy" is this rounded).
AB_ZERO_POINT_NJY = 31.4
#: Magnitude error per unit relative flux error (first order).
MAG_PER_RELATIVE_FLUX = 2.5 / math.log(10)
#: TAI - UTC since 2017-01-01 (the last leap second); every Rubin and ZTF alert is later.
TAI_MINUS_UTC = dt.timedelta(seconds=37)
MJD_EPOCH = dt.datetime(1858, 11, 17, tzinfo=dt.UTC)
#: ZTF's filter ids.
ZTF_BANDS = {1: "g", 2: "r", 3: "i"}


@dataclass(frozen=True)
class Point:
    """One photometry point: a detection (``magnitude``, or for a Rubin flux <= 0 only ``flux``)
    or an upper limit (``limit``, ZTF non-detections). ``source_id`` is the survey's id of the
    detection (Rubin ``diaSourceId``, ZTF ``candid``), the key that deduplicates it across alerts;
    an upper limit has none (its band, time and limit identify it)."""

    source_id: str | None
    mjd: float
    time: dt.datetime  # UTC
    band: str
    magnitude: float | None = None
    magnitude_error: float | None = None
    limit: float | None = None
    flux: float | None = None  # Rubin: nJy
    flux_error: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: The alert's own detection, not a copy from its history: real ZTF histories repeat a
    #: detection rounded (``magpsf`` 16.7737007 for the alert's 16.7736874), so this one wins.
    primary: bool = False


@dataclass(frozen=True)
class Target:
    """The survey's object as a TOM target: its name is the survey's object id; its position
    the alert's detection's (Rubin ``diaSource``, ZTF ``candidate``, a fields record's envelope),
    observed at ``mjd`` (the handler keeps the latest alert's)."""

    name: str
    survey: str
    ra: float
    dec: float
    mjd: float
    kind: str  # "diaObject", "ssObject", "ztf object", or "alert" (a fields record without one)
    fields: dict[str, Any] = field(default_factory=dict)  # a fields record's chosen fields


@dataclass(frozen=True)
class Observation:
    """A match as a TOM sees it: which target, which points, and which stamps (FITS bytes)."""

    target: Target
    points: list[Point]
    cutouts: dict[str, Any] = field(default_factory=dict)  # field name -> the raw stamp value


def mjd_to_utc(mjd: float, tai: bool = False) -> dt.datetime:
    """The UTC datetime of an MJD (TAI when ``tai``), to the microsecond."""
    moment = MJD_EPOCH + dt.timedelta(days=mjd)
    return moment - TAI_MINUS_UTC if tai else moment


def ab_magnitude(flux_njy: float, error_njy: float | None) -> tuple[float | None, float | None]:
    """(AB magnitude, its error) of a flux in nJy; (None, None) for a flux at or below zero."""
    if flux_njy is None or not flux_njy > 0:
        return None, None
    magnitude = AB_ZERO_POINT_NJY - 2.5 * math.log10(flux_njy)
    error = None if error_njy is None else MAG_PER_RELATIVE_FLUX * error_njy / flux_njy
    return magnitude, error


def _rubin_point(source: dict, primary: bool = False) -> Point:
    magnitude, error = ab_magnitude(source["psfFlux"], source.get("psfFluxErr"))
    mjd = source["midpointMjdTai"]
    return Point(
        source_id=str(source["diaSourceId"]),
        mjd=mjd,
        time=mjd_to_utc(mjd, tai=True),
        band=source["band"],
        magnitude=magnitude,
        magnitude_error=error,
        flux=source["psfFlux"],
        flux_error=source.get("psfFluxErr"),
        primary=primary,
    )


def _rubin(record: dict) -> Observation:
    source = record["diaSource"]
    who = identity(record, contract.PAYLOAD_ALERT, "rubin")
    return Observation(
        target=Target(
            str(who.object_id), "rubin", source["ra"], source["dec"], who.mjd, who.object_kind
        ),
        points=[
            _rubin_point(source, primary=True),
            *(_rubin_point(s) for s in record.get("prvDiaSources") or []),
        ],
        cutouts=_cutouts(record),
    )


def _ztf_point(candidate: dict, primary: bool = False) -> Point:
    mjd = candidate["jd"] - JD_MINUS_MJD
    band = ZTF_BANDS.get(candidate["fid"], str(candidate["fid"]))
    if candidate.get("magpsf") is None:  # a non-detection: only how faint it could have seen
        return Point(None, mjd, mjd_to_utc(mjd), band, limit=candidate["diffmaglim"])
    return Point(
        source_id=str(candidate["candid"]),
        mjd=mjd,
        time=mjd_to_utc(mjd),
        band=band,
        magnitude=candidate["magpsf"],
        magnitude_error=candidate.get("sigmapsf"),
        extra={"isdiffpos": candidate.get("isdiffpos"), "diffmaglim": candidate.get("diffmaglim")},
        primary=primary,
    )


def _ztf(record: dict) -> Observation:
    candidate = record["candidate"]
    history = record.get("prv_candidates") or []
    return Observation(
        target=Target(
            record["objectId"],
            "ztf",
            candidate["ra"],
            candidate["dec"],
            candidate["jd"] - JD_MINUS_MJD,
            "ztf object",
        ),
        points=[_ztf_point(candidate, primary=True), *(_ztf_point(c) for c in history)],
        cutouts=_cutouts(record),
    )


def _cutouts(record: dict) -> dict[str, Any]:
    return {name: record[name] for name in CUTOUTS if record.get(name) is not None}


def _fields(record: dict) -> Observation:
    chosen = {k: v for k, v in record.items() if k not in contract.ENVELOPE}
    who = identity(record, contract.PAYLOAD_FIELDS, record[contract.SURVEY])
    target = Target(
        who.object_id or str(record[contract.ALERT_ID]),
        record[contract.SURVEY],
        record["ra"],
        record["dec"],
        record["mjd"],
        who.object_kind,
        fields=chosen,
    )
    return Observation(target=target, points=[], cutouts=_cutouts(record))


def observation(record: dict, payload: str, survey: str | None) -> Observation:
    """The target and points of one decoded match (``Match.record``, ``.payload``, ``.survey``).

    A fields record names its target by the object id the filter chose (``diaObjectId``,
    ``objectId`` or ``ssObjectId``), else by the envelope's alert id; it has no photometry."""
    if payload == contract.PAYLOAD_FIELDS:
        return _fields(record)
    if survey == "ztf" or "candidate" in record:
        return _ztf(record)
    return _rubin(record)
