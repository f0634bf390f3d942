"""Who and where a match is about: the survey's object, its position and time, read the same way
from a Rubin alert, a ZTF alert and a ``fields`` record.

The subscriber deduplicates per object with it (``listen --once-per object``), a webhook names
the object and position with it, and the TOM module files each match under its target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from alertsieve.publish import contract

#: Fields a filter may choose that name the survey's object, in the order they are looked for.
OBJECT_ID_FIELDS = ("diaObjectId", "objectId", "ssObjectId")
#: The kind of object each id field names.
OBJECT_KINDS = {"diaObjectId": "diaObject", "ssObjectId": "ssObject", "objectId": "ztf object"}
JD_MINUS_MJD = 2400000.5
#: Where each survey's observing night turns over, as a fraction of a UTC day: local noon at
#: the telescope. Rubin's own ``dayObs`` turns at 12:00 UTC (UTC-12h); Palomar's noon is about
#: 20:00 UTC, so a ZTF night (03:00-14:00 UTC) is one night whatever the season.
NIGHT_TURNS_AT = {"rubin": 0.5, "ztf": 20 / 24}


@dataclass(frozen=True)
class Identity:
    """The object a match is about (``object_id`` None when the record names none), and where
    and when it was seen (MJD; Rubin's in TAI, ZTF's from its JD)."""

    object_id: str | None
    object_kind: str
    ra: float | None
    dec: float | None
    mjd: float | None


def _id(value: Any) -> str | None:
    """A survey id as text; 0 and null mean "none" (Rubin's ssObjectId of a diaObject)."""
    if value in (None, 0, "", "0"):
        return None
    if isinstance(value, float):  # some exports store ids as doubles
        return str(int(value)) if math.isfinite(value) else None
    return str(value)


def _rubin(record: dict) -> Identity:
    source = record.get("diaSource") or {}
    obj = record.get("diaObject") or {}
    # The diaSource's copy of diaObjectId first: some exports store diaObject's as a rounded double.
    dia = _id(source.get("diaObjectId")) or _id(obj.get("diaObjectId"))
    name, kind = (dia, "diaObject") if dia else (_id(source.get("ssObjectId")), "ssObject")
    return Identity(name, kind, source.get("ra"), source.get("dec"), source.get("midpointMjdTai"))


def _ztf(record: dict) -> Identity:
    candidate = record.get("candidate") or {}
    jd = candidate.get("jd")
    return Identity(
        _id(record.get("objectId")),
        "ztf object",
        candidate.get("ra"),
        candidate.get("dec"),
        None if jd is None else jd - JD_MINUS_MJD,
    )


def _fields(record: dict) -> Identity:
    chosen = {k: v for k, v in record.items() if k not in contract.ENVELOPE}
    field = next((f for f in OBJECT_ID_FIELDS if _id(chosen.get(f))), None)
    return Identity(
        _id(chosen[field]) if field else None,
        OBJECT_KINDS.get(field or "", "alert"),
        record.get("ra"),
        record.get("dec"),
        record.get("mjd"),
    )


def identity(record: dict, payload: str, survey: str | None) -> Identity:
    """The object, position and time of one decoded match (``Match.record``, ``.payload``,
    ``.survey``). A fields record names its object by the id field its filter chose, if any."""
    if payload == contract.PAYLOAD_FIELDS:
        return _fields(record)
    if survey == "ztf" or "candidate" in record:
        return _ztf(record)
    return _rubin(record)


def night_of(mjd: float, survey: str | None) -> int:
    """The observing night of a time (MJD): the MJD of the local noon that opens it, so one
    night's alerts share a number however late they come (see ``NIGHT_TURNS_AT``)."""
    return math.floor(mjd - NIGHT_TURNS_AT.get(survey or "rubin", 0.5))
