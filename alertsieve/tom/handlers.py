"""Save one match in a TOM: the survey's object as a target (created once, updated after), the
filter as a target list, each detection as a photometry point (once, however many alerts repeat
it) and the alert's stamps as FITS data products.

Configured as a topic's handler in ``ALERT_STREAMS`` (``alertsieve.tom.handlers.save_match``).
Settings: ``ALERTSIEVE_SAVE_CUTOUTS`` (default True) saves the stamps of alert payloads.

Photometry goes into the TOM Toolkit's ``PhotometryReducedDatum`` (3.x), which its target page
plots: magnitude and error in ``brightness``, upper limits in ``limit``; the survey's source id,
exact MJD and (Rubin) the flux in nJy in ``value``.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Q
from tom_dataproducts.models import DataProduct, PhotometryReducedDatum
from tom_targets.models import Target, TargetList

from alertsieve.subscribe.cutouts import stamp_bytes
from alertsieve.subscribe.records import Match
from alertsieve.tom.observations import Observation, Point, observation

log = logging.getLogger(__name__)

#: Who made the points: the TOM's "source" of a datum.
SOURCE_NAME = "alertsieve"
TELESCOPES = {"rubin": "Rubin", "ztf": "ZTF"}
#: The target's extra holding the MJD of the alert its position was taken from.
POSITION_MJD = "position mjd"


def filter_key(filter_name: str, what: str) -> str:
    """A target's extra about one filter's latest match: ``<filter> version`` (which version
    matched), ``<filter> mjd`` (when that alert was observed), ``<filter> <field>`` (a fields
    record's chosen fields)."""
    return f"{filter_name} {what}"


def _finite(value: Any) -> Any:
    """None for a NaN or infinite float (JSON and SQL have no NaN), the value otherwise."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _newer(target: Target, key: str, mjd: float) -> bool:
    """Whether an alert observed at ``mjd`` is at least as late as the one that set ``key``:
    matches arrive in any order (topics, partitions, replays), the latest alert's values win."""
    seen = target.targetextra_set.filter(key=key).first() if target.pk else None
    return seen is None or float(seen.value) <= mjd


def _target(obs: Observation, match: Match) -> Target:
    t = obs.target
    target = Target.objects.filter(name=t.name).first()
    if target is None:
        target = Target(name=t.name, type=Target.SIDEREAL, epoch=2000.0)
        log.info("new target %s (%s) from %s", t.name, t.survey, match.filter)
    extras: dict[str, Any] = {"survey": t.survey, "object kind": t.kind}
    if _newer(target, POSITION_MJD, t.mjd):
        target.ra, target.dec = t.ra, t.dec
        extras[POSITION_MJD] = repr(t.mjd)
    if match.filter and _newer(target, filter_key(match.filter, "mjd"), t.mjd):
        extras[filter_key(match.filter, "mjd")] = repr(t.mjd)
        extras[filter_key(match.filter, "version")] = match.filter_version or ""
        for name, value in t.fields.items():
            extras[filter_key(match.filter, name)] = "" if value is None else str(value)
    target.save(extras=extras)
    return target


def _save_point(target: Target, point: Point, match: Match, survey: str) -> bool:
    """Save one point unless the target has it already; True when saved or corrected.

    A detection is known by its source id, or by what the TOM holds unique (band, time and
    magnitude): real ZTF histories carry some measurements twice under two ``candid`` of one
    exposure. A detection known from a history and now seen as an alert's own takes the alert's
    values (histories hold them rounded). An upper limit is known by band, time and limit."""
    known = PhotometryReducedDatum.objects.filter(target=target)
    same = Q(bandpass=point.band, timestamp=point.time)
    if point.source_id is None:
        known = known.filter(same & Q(limit=point.limit))
    elif point.magnitude is None:
        known = known.filter(value__source_id=point.source_id)
    else:
        known = known.filter(
            Q(value__source_id=point.source_id) | same & Q(brightness=point.magnitude)
        )
    datum = known.first()
    if datum is not None and (datum.value.get("primary") or not point.primary):
        return False
    datum = datum or PhotometryReducedDatum(target=target)
    datum.timestamp = point.time
    datum.brightness = _finite(point.magnitude)
    datum.brightness_error = _finite(point.magnitude_error)
    datum.limit = _finite(point.limit)
    datum.unit = "AB mag" if survey == "rubin" else "mag"
    datum.bandpass = point.band
    datum.telescope = TELESCOPES.get(survey, survey)
    datum.source_name = SOURCE_NAME
    datum.source_location = f"{match.topic}[{match.partition}]@{match.offset}"
    datum.value = {
        "source_id": point.source_id,
        "mjd": point.mjd,
        "survey": survey,
        "primary": point.primary,
        **(
            {
                "flux": _finite(point.flux),
                "flux_error": _finite(point.flux_error),
                "flux_unit": "nJy",
            }
            if point.flux is not None
            else {}
        ),
        **{k: _finite(v) for k, v in point.extra.items()},
    }
    datum.save()
    return True


def _save_cutouts(target: Target, obs: Observation, match: Match) -> None:
    for name, raw in obs.cutouts.items():
        data = stamp_bytes(raw)
        if data is None:
            continue
        product_id = f"{obs.target.survey}-{match.alert_id}-{name}"
        product, created = DataProduct.objects.get_or_create(
            product_id=product_id,
            defaults={"target": target, "data_product_type": "fits_file"},
        )
        if created:
            product.data.save(f"{match.alert_id}_{name}.fits", ContentFile(data))


def save_match(match: Match) -> Target:
    """Save ``match`` (an ``alertsieve.subscribe`` Match) in the TOM; returns its target."""
    obs = observation(match.record, match.payload, match.survey)
    with transaction.atomic():
        target = _target(obs, match)
        if match.filter:
            target_list, _ = TargetList.objects.get_or_create(name=match.filter)
            target_list.targets.add(target)
        saved = sum(_save_point(target, p, match, obs.target.survey) for p in obs.points)
        if getattr(settings, "ALERTSIEVE_SAVE_CUTOUTS", True):
            _save_cutouts(target, obs, match)
    log.debug("%s: %d new of %d points", target.name, saved, len(obs.points))
    return target
