"""Each object's state, as the objects query keeps it in Spark's state store: the summary of its
alerts (``object.*``), its latest annotation per annotator (``annotations.*``) and its latest
alert (the filter view's fields, and where its bytes are in the input), updated by every alert
and annotation that names it, in the order they arrived.

``apply`` is the update, plain Python over plain values (tested apart from Spark);
``ObjectProcessor`` runs it in Spark's ``transformWithState``, one object (its grouping key) at a
time: the state is RocksDB's, checkpointed with the query, so a job killed and restarted reads
each batch again against the state as it was before it (nothing counted twice or lost). An
object no alert named for ``object_ttl_days`` is forgotten by a processing-time timer, set once
per object and moved on when it fires early (an update sets no timer: it costs a state call).

An annotation of an object not seen yet is kept in that object's state (one per annotator, for
at most ``object_ttl_days``) and reaches the filters with the object's first alert.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from alertsieve.filtering.objects import ALERT, ANNOTATION

#: What a row out of the state says: a filter run by an alert, by an annotation; an annotation
#: kept for an object not seen yet; an object forgotten (these two run no filter, are counted).
PENDING, EVICTED = "pending", "evicted"

#: Zero point of fluxes in nJy: AB magnitude = 31.4 - 2.5 log10(flux / nJy).
NJY_ZERO_POINT = 31.4

#: The state of one object (a ``ValueState``); JSON where the shape is open (bands, scores,
#: annotations, the alert's view fields).
STATE_TYPE = (
    "id string, alerts bigint, first_mjd double, last_mjd double, bands string, scores string,"
    " annotations string, view string, at_topic string, at_partition int, at_offset bigint,"
    " at_timestamp timestamp, at_key binary, alert_size int, schema_id bigint,"
    " seen_ms bigint, timer_ms bigint"
)

#: A row into the state: an alert (its summary values, view and place) or an annotation.
INPUT_COLUMNS = (
    "_object", "_kind", "_mjd", "_band", "_mag", "_flux", "_scores", "_view",
    "_annotator", "_class", "_score", "_attributes", "_time",
    "_topic", "_partition", "_offset", "_timestamp", "_key", "_alert_size", "_schema_id",
)  # fmt: skip

#: A row out of the state: what triggered it (``_topic``... are the trigger's place), the object
#: and its annotations as JSON, and its latest alert (view fields and place).
OUTPUT_TYPE = (
    "_object string, _trigger string, _annotator string, _object_json string,"
    " _annotations_json string, _view string, _topic string, _partition int, _offset bigint,"
    " _timestamp timestamp, _key binary, _at_topic string, _at_partition int, _at_offset bigint,"
    " _alert_size int, _schema_id bigint"
)


def magnitude(flux: float | None) -> float | None:
    """The AB magnitude of a flux in nJy (none for a flux that is not positive)."""
    if flux is None or not flux > 0:
        return None
    return NJY_ZERO_POINT - 2.5 * math.log10(flux)


def flux_of(mag: float | None) -> float | None:
    """The flux in nJy of an AB magnitude."""
    if mag is None or math.isnan(mag):
        return None
    return 10 ** (-0.4 * (mag - NJY_ZERO_POINT))


def new_state(object_id: str) -> dict[str, Any]:
    return {
        "id": object_id, "alerts": 0, "first_mjd": None, "last_mjd": None, "bands": {},
        "scores": {}, "annotations": {}, "view": None, "at_topic": None, "at_partition": None,
        "at_offset": None, "at_timestamp": None, "at_key": None, "alert_size": None,
        "schema_id": None, "seen_ms": None, "timer_ms": None,
    }  # fmt: skip


def _later(a: float | None, b: float | None) -> bool:
    """Whether time ``a`` is after ``b`` (a known time is after none)."""
    return a is not None and (b is None or a > b)


def add_alert(state: dict[str, Any], alert: dict[str, Any], now_ms: int) -> None:
    """``state`` after one more ``alert`` (its ``_mjd``, ``_band``, ``_mag``, ``_flux``,
    ``_scores`` and place): counts, first and last time, the band's latest and brightest
    detection, the latest of every score, and the alert itself if it is the latest."""
    mjd, band = alert["_mjd"], alert["_band"]
    state["alerts"] += 1
    if mjd is not None:
        state["first_mjd"] = mjd if state["first_mjd"] is None else min(state["first_mjd"], mjd)
    latest = state["last_mjd"] is None or (mjd is not None and mjd >= state["last_mjd"])
    if mjd is not None and latest:
        state["last_mjd"] = mjd
    flux = alert["_flux"] if alert["_flux"] is not None else flux_of(alert["_mag"])
    mag = alert["_mag"] if alert["_mag"] is not None else magnitude(flux)
    if band is not None and (flux is not None or mag is not None):
        b = state["bands"].setdefault(band, {})
        if b.get("latest_mjd") is None or not _later(b["latest_mjd"], mjd):
            b.update(latest_mag=mag, latest_flux=flux, latest_mjd=mjd)
        if flux is not None and (b.get("brightest_flux") is None or flux > b["brightest_flux"]):
            b.update(brightest_mag=mag, brightest_flux=flux, brightest_mjd=mjd)
    if latest:
        scores = json.loads(alert["_scores"]) if alert["_scores"] else {}
        state["scores"].update({k: v for k, v in scores.items() if v is not None})
        state["view"] = alert["_view"]
        for name in ("topic", "partition", "offset", "timestamp", "key"):
            state[f"at_{name}"] = alert[f"_{name}"]
        state["alert_size"], state["schema_id"] = alert["_alert_size"], alert["_schema_id"]
    state["seen_ms"] = now_ms


def add_annotation(state: dict[str, Any], annotation: dict[str, Any]) -> None:
    """``state`` with ``annotation`` as its annotator's latest (a later one replaces it)."""
    time = annotation["_time"]
    state["annotations"][annotation["_annotator"]] = {
        "class": annotation["_class"],
        "score": annotation["_score"],
        "attributes": json.loads(annotation["_attributes"]) if annotation["_attributes"] else {},
        "time": time.isoformat() if hasattr(time, "isoformat") else time,
    }


def object_json(state: dict[str, Any]) -> str:
    """``object`` as filters read it (``alertsieve.filtering.objects.OBJECT_TYPE``)."""
    keys = ("id", "alerts", "first_mjd", "last_mjd", "bands", "scores")
    return json.dumps({k: state[k] for k in keys})


def _order(row: dict[str, Any]) -> tuple:
    """Arrival order: Kafka's timestamp, then the place (a batch read again orders the same)."""
    return (row["_timestamp"], row["_topic"], row["_partition"], row["_offset"])


def apply(
    state: dict[str, Any], rows: Iterable[dict[str, Any]], now_ms: int
) -> Iterator[dict[str, Any]]:
    """``state`` updated by ``rows`` (alerts and annotations of its object) in arrival order;
    a row out for each (``OUTPUT_TYPE``, less the object's key): an alert's, an annotation's
    of a known object, or ``PENDING`` for an annotation of an object no alert named yet."""
    for row in sorted(rows, key=_order):
        if row["_kind"] == ALERT:
            add_alert(state, row, now_ms)
            yield _out(state, ALERT, None, row)
        else:
            add_annotation(state, row)
            known = state["alerts"] > 0
            yield _out(state, ANNOTATION if known else PENDING, row["_annotator"], row)


def _out(state: dict[str, Any], trigger: str, annotator: str | None, row: dict[str, Any]):
    """The row out: an alert's carries that alert (an object's alerts may arrive out of time
    order: the latest stays the latest), an annotation's the object's latest alert."""
    alert = row if trigger == ALERT else {
        "_view": state["view"], "_alert_size": state["alert_size"],
        "_schema_id": state["schema_id"],
        **{f"_{n}": state[f"at_{n}"] for n in ("topic", "partition", "offset")},
    }  # fmt: skip
    return {
        "_trigger": trigger,
        "_annotator": annotator,
        "_object_json": object_json(state),
        "_annotations_json": json.dumps(state["annotations"]),
        "_view": alert["_view"],
        **{c: row[c] for c in ("_topic", "_partition", "_offset", "_timestamp", "_key")},
        "_at_topic": alert["_topic"],
        "_at_partition": alert["_partition"],
        "_at_offset": alert["_offset"],
        "_alert_size": alert["_alert_size"],
        "_schema_id": alert["_schema_id"],
    }


def _to_row(state: dict[str, Any]) -> tuple:
    return tuple(
        json.dumps(state[k]) if k in ("bands", "scores", "annotations") else state[k]
        for k in _STATE_FIELDS
    )


def _from_row(row) -> dict[str, Any]:
    return {
        k: json.loads(v) if k in ("bands", "scores", "annotations") else v
        for k, v in zip(_STATE_FIELDS, row, strict=True)
    }


_STATE_FIELDS = tuple(part.split()[0] for part in STATE_TYPE.split(", "))


def processor(ttl_ms: int):
    """A ``StatefulProcessor`` keeping each object's state (see the module), forgetting an
    object ``ttl_ms`` after its last alert."""
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    class ObjectProcessor(StatefulProcessor):
        def init(self, handle) -> None:
            self.handle = handle
            self.state = handle.getValueState("object", STATE_TYPE)

        def handleInputRows(self, key, rows, timerValues) -> Iterator:
            now = timerValues.getCurrentProcessingTimeInMs()
            stored = self.state.get()
            state = _from_row(stored) if stored is not None else new_state(key[0])
            for out in apply(state, (r.asDict() for r in rows), now):
                yield Row(_object=key[0], **out)
            due = (state["seen_ms"] or now) + ttl_ms
            # Once per object, moved on when it fires early; sooner when the TTL was shortened.
            if state["timer_ms"] is None or state["timer_ms"] > due:
                if state["timer_ms"] is not None:
                    self.handle.deleteTimer(state["timer_ms"])
                state["timer_ms"] = due
                self.handle.registerTimer(due)
            self.state.update(_to_row(state))

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator:
            stored = self.state.get()
            if stored is None:
                return
            state = _from_row(stored)
            now = timerValues.getCurrentProcessingTimeInMs()
            due = (state["seen_ms"] or 0) + ttl_ms
            if due > now:  # an alert came since the timer was set
                state["timer_ms"] = due
                self.handle.registerTimer(due)
                self.state.update(_to_row(state))
                return
            self.state.clear()
            yield Row(_object=key[0], _trigger=EVICTED, **{c: None for c in _EVICTED_NULLS})

        def close(self) -> None:
            pass

    return ObjectProcessor()


_EVICTED_NULLS = [
    part.split()[0]
    for part in OUTPUT_TYPE.split(", ")
    if part.split()[0] not in ("_object", "_trigger")
]
