"""Annotations: what an outside classifier or a person says of an object, published for the
job's filters of objects to read (``annotations.<annotator>.class``) and to be run by.

An annotation is one JSON record (version 1) on its annotator's own topic,
``<prefix>annotations-<annotator>`` (``contract.annotation_topic``), keyed by the object::

    {"version": 1, "survey": "ztf", "object": "ZTF19acmdpyr", "annotator": "tns",
     "class": "SN Ia", "score": 0.93, "attributes": {"name": "2019xyz"},
     "time": "2026-12-06T12:00:00Z"}

``class`` is required; ``score`` (a number), ``attributes`` (text to text) and ``time`` (ISO 8601,
UTC; default the moment it was written) are optional. The annotator in the record must be its
topic's: the topic is what the broker's ACLs let only that annotator's principal write, so a
record naming another annotator is quarantined, as is one that is not such JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping

from alertsieve.errors import AlertsieveError

VERSION = 1
SURVEYS = ("rubin", "ztf")

#: An annotator's name: what ``annotations.<name>`` reads in SQL, and its topic's suffix.
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

#: The record as Spark parses it (``from_json``): fields of another type are null.
SPARK_TYPE = (
    "struct<version: int, survey: string, object: string, annotator: string, class: string,"
    " score: double, attributes: map<string, string>, time: timestamp>"
)


class AnnotationError(AlertsieveError, ValueError):
    """An annotation that cannot be published as given: which field, and how to write it."""


def check_annotator(name: str) -> str:
    """``name`` if it can name an annotator, else an error saying how to write one."""
    if not NAME.fullmatch(name or ""):
        raise AnnotationError(
            f"annotator {name!r}: use lower-case letters, digits and _, starting with a letter"
            " (filters read it as annotations.<annotator>), e.g. tns or my_classifier"
        )
    return name


def annotation_record(
    survey: str,
    object_id: str | int,
    annotator: str,
    klass: str,
    score: float | None = None,
    attributes: Mapping[str, str] | None = None,
    time: dt.datetime | None = None,
) -> bytes:
    """One annotation as its topic carries it (see the module), checked."""
    if survey not in SURVEYS:
        raise AnnotationError(f"survey {survey!r}: give one of {', '.join(SURVEYS)}")
    if not str(object_id).strip():
        raise AnnotationError("object: give the object's id (Rubin diaObjectId, ZTF objectId)")
    if not str(klass).strip():
        raise AnnotationError("class: give what the annotator calls the object, e.g. 'SN Ia'")
    when = (time or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    record = {
        "version": VERSION,
        "survey": survey,
        "object": str(object_id),
        "annotator": check_annotator(annotator),
        "class": str(klass),
        "score": None if score is None else float(score),
        "attributes": {str(k): str(v) for k, v in (attributes or {}).items()},
        "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    return json.dumps(record).encode()
