"""Each object's state, as the objects query keeps it in Spark's state store: the summary of its
alerts (``object.*``), its latest annotation per annotator (``annotations.*``) and its latest
alert (the filter view's fields, and where its bytes are in the input), updated by every alert
and annotation that names it, in the order they arrived.

The update runs on the JVM (``java/ObjectProcessor.java``, in Spark's ``transformWithState``,
one object, its grouping key, at a time): it runs once per alert, and Python's
``transformWithState`` capped the query at about 4,000 objects a second on two cores. The state
is RocksDB's, checkpointed with the query, so a job killed and restarted reads each batch again
against the state as it was before it (nothing counted twice or lost). An object no alert named
for ``object_ttl_days`` is forgotten by a processing-time timer, set once per object and moved
on when it fires early (an update sets no timer: it costs a state call).

An annotation of an object not seen yet is kept in that object's state (one per annotator, for
at most ``object_ttl_days``) and reaches the filters with the object's first alert.
"""

from __future__ import annotations

from alertsieve.filtering.objects import ANNOTATIONS_TYPE, OBJECT_TYPE

#: What a row out of the state says besides 'alert' and 'annotation' (a filter run by either): an
#: annotation kept for an object not seen yet; an object forgotten (neither runs a filter; both
#: are counted); a row that did not decode or parse, passed through with its ``_reason``. The
#: Java processor writes the same words, and reads ``QUARANTINED`` as a row's ``_kind`` too.
PENDING, EVICTED, QUARANTINED = "pending", "evicted", "quarantined"

#: A row into the state: an alert (its summary values, view, place, and its bytes when the
#: query carries them: they pass through, never kept), an annotation, or a row to quarantine
#: (keyed by its own place: it touches no state).
INPUT_COLUMNS = (
    "_object", "_kind", "_mjd", "_band", "_mag", "_flux", "_scores", "_view",
    "_annotator", "_class", "_score", "_attributes", "_time",
    "_topic", "_partition", "_offset", "_timestamp", "_key", "_alert_size", "_schema_id",
    "_reason", "_value",
)  # fmt: skip


def transform(rows, ttl_ms: int):
    """``rows`` (a DataFrame of ``INPUT_COLUMNS``, ``_view`` a struct of the view's fields)
    through each object's state, forgetting an object ``ttl_ms`` after its last alert: a row out
    per alert and per annotation (its trigger and place, the latest alert's place and, for an
    alert, its bytes; ``_summary``, ``_annotations`` and ``_view``: the object, its annotations
    and its latest alert's view as filters read them) and one per object forgotten."""
    from pyspark.sql import DataFrame

    spark = rows.sparkSession
    processor = spark._jvm.alertsieve.ObjectProcessor
    frame = rows.select(*INPUT_COLUMNS)._jdf
    return DataFrame(processor.transform(frame, ttl_ms, OBJECT_TYPE, ANNOTATIONS_TYPE), spark)
