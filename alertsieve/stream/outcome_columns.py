"""The hot path's own columns and outcome indices: what each row of a batch says about its
alert (a filter's match, its error, a quarantined message), named once for the query's stages
(``evaluation``, ``records``, ``batch_metrics``) and the job."""

from __future__ import annotations

from alertsieve.stream import shaped
from alertsieve.stream.plan import JobPlan
from alertsieve.view.decoder import META

FILTER = "_filter"  # the filter of an output row, kept for ``hot_path.publish_within`` (quotas)


#: The size of an alert whose bytes are not carried past its decode (``evaluation.evaluated``).
ALERT_SIZE = "_alert_size"


#: In the objects query (``alertsieve.stream.objects``): what ran the filters on a row (``alert``
#: or ``annotation:<annotator>``; the row's Kafka columns are that trigger's), and where the
#: object's latest alert is in the input (its bytes are read back from there).
TRIGGER = "_trigger"
AT = ("_at_topic", "_at_partition", "_at_offset")


def meta_of(frame) -> list[str]:
    """The Kafka columns ``frame`` carries (``META``), the alert's size where its bytes are
    not carried (``ALERT_SIZE``), and an object's row's trigger and alert (``TRIGGER``, ``AT``)."""
    extra = [c for c in (ALERT_SIZE, TRIGGER, *AT) if c in frame.columns]
    return [*META, *extra]


#: Where an output row's alert is in the input (its bytes are read back from there), and whether
#: the row's value is to be the alert (``output_rows`` without the alerts' bytes).
SOURCE, WHOLE = ("_topic", "_partition", "_offset"), "_whole"


#: ``_index`` of a quarantined message's outcome row; a Python filter's error row for filter i
#: has ``-2 - i``; a match of filter i has i.
QUARANTINED = -1


def error(i: int) -> str:
    return f"_e{i}"


def error_index(i: int) -> int:
    return -2 - i


def cost(i: int) -> str:
    return f"_c{i}"


def model_seconds(j: int) -> str:
    return f"_ms{j}"


def model_rows(j: int) -> str:
    return f"_mn{j}"


def model_error(j: int) -> str:
    return f"_me{j}"


def models_of(plan: JobPlan) -> list:
    """The models the plan's filters read, in the plan's order (their metrics' indices)."""
    return list(plan.scoring.models) if plan.scoring else []


#: A shaped filter's row's name, version, topic and format (null on an alert's own row).
SHAPED_LABELS = {
    "_s_name": shaped.NAME,
    "_s_version": shaped.VERSION,
    "_s_topic": shaped.TOPIC,
    "_s_format": shaped.FORMAT,
}


#: A shaped filter's row's fields record (null on an alert's own row, and for an alert payload).
SHAPED_RECORD = "_s_record"


#: Whether an outcome row is a shaped filter's (the join's) rather than the alert's own.
SHAPED_ROW = "_s_row"


def runs_python(plan: JobPlan) -> bool:
    """Whether any of the plan's filters, models or its predicate-first matcher runs in Python."""
    return (
        any(f.runs_python for f in plan.filters)
        or bool(models_of(plan))
        or plan.predicates is not None
    )
