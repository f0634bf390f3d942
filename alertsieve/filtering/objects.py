"""What filters see of an object, beside its alert: ``object.*`` (the job's summary of every
alert of the object it has seen) and ``annotations.<annotator>.*`` (the latest annotation each
outside annotator published for it), and what makes a filter run: an alert, an annotation, or
both (``triggers``).

A filter that reads neither runs in the stateless hot path; one that reads either runs where the
job keeps the objects' state (``alertsieve.stream.objects``). The two columns have fixed types,
so a filter is checked against them like any view field: ``object.alertz`` fails at start-up
with Spark's list of the fields there are.
"""

from __future__ import annotations

import re

from alertsieve.filtering.model import Filter, FilterError
from alertsieve.filtering.scores.choose import expressions_of
from alertsieve.filtering.sql_text import without_strings

OBJECT = "object"
ANNOTATIONS = "annotations"

#: Per band: the latest detection's magnitude, flux (nJy) and MJD, and the brightest one's.
BAND_TYPE = (
    "struct<latest_mag: double, latest_flux: double, latest_mjd: double,"
    " brightest_mag: double, brightest_flux: double, brightest_mjd: double>"
)
#: ``object``: the summary of every alert of the object the job has seen, this one included.
OBJECT_TYPE = (
    "struct<id: string, alerts: bigint, first_mjd: double, last_mjd: double,"
    f" bands: map<string, {BAND_TYPE}>, scores: map<string, double>>"
)
#: One annotator's latest annotation of the object.
ANNOTATION_TYPE = (
    "struct<class: string, score: double, attributes: map<string, string>, time: timestamp>"
)
#: ``annotations``: annotator -> its latest annotation of the object.
ANNOTATIONS_TYPE = f"map<string, {ANNOTATION_TYPE}>"

ALERT, ANNOTATION = "alert", "annotation"
TRIGGERS = (ALERT, ANNOTATION)

_READS = {
    name: re.compile(rf"(?<![\w.`])`?{name}`?(?![\w`])", flags=re.I)
    for name in (OBJECT, ANNOTATIONS)
}
#: ``annotations.tns`` or ``annotations['tns']``: the annotator an expression names.
_ANNOTATOR = re.compile(
    r"(?<![\w.`])`?annotations`?\s*(?:\.\s*`?([A-Za-z_]\w*)`?|\[\s*'([^']+)'\s*\])", flags=re.I
)


def reads_objects(f: Filter) -> bool:
    """Whether ``f`` reads ``object.*`` or ``annotations.*`` (its condition, columns or fields),
    or runs on annotations: it then runs where the objects' state is kept."""
    bare = [without_strings(t) for t in expressions_of(f)]
    named = any(p.search(t) for p in _READS.values() for t in bare)
    return named or ANNOTATION in f.triggers


def annotators_read(f: Filter) -> frozenset[str] | None:
    """The annotators ``f`` names (``annotations.tns.class`` -> {'tns'}); None when it reads
    the map whole (``size(annotations) > 0``), so any annotator's annotation concerns it."""
    names: set[str] = set()
    for text in expressions_of(f):
        bare = without_strings(text)
        found = _ANNOTATOR.findall(text)
        names |= {a or b for a, b in found}
        if len(_READS[ANNOTATIONS].findall(bare)) > len(found):
            return None
    return frozenset(names)


def check_triggers(f: Filter) -> None:
    """A filter's ``triggers`` are some of ``TRIGGERS``, and one run by annotations reads them."""
    triggers = tuple(f.triggers)
    if not triggers or set(triggers) - set(TRIGGERS):
        raise FilterError(
            f"filter {f.name!r} ({f.origin}): triggers={triggers!r}: give one or both of"
            f" {TRIGGERS!r}, e.g. triggers=('alert', 'annotation')",
            filter=f.name,
        )
    if ANNOTATION in triggers and annotators_read(f) == frozenset():
        raise FilterError(
            f"filter {f.name!r} ({f.origin}): triggers include 'annotation' but it reads no"
            " annotation; name the annotator it waits for, e.g. annotations.tns.class = 'SN Ia'",
            filter=f.name,
        )


def with_object_columns(frame):
    """``frame`` with ``object`` and ``annotations`` as typed nulls where it has none: what a
    stateless view (the start-up samples, a backtest) gives a filter reading them."""
    from pyspark.sql import functions as F

    for name, kind in ((OBJECT, OBJECT_TYPE), (ANNOTATIONS, ANNOTATIONS_TYPE)):
        if name not in frame.columns:
            frame = frame.withColumn(name, F.lit(None).cast(kind))
    return frame
