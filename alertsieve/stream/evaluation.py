"""The hot path's evaluation: Kafka rows decoded into the filter view, and every filter matched
over it (compiled, as rows of a shape, or predicate first), each alert's outcome one array of
filter indices (``evaluated``)."""

from __future__ import annotations

from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.scores.column import hidden
from alertsieve.filtering.scores.runtime import ERROR, ROWS, SECONDS
from alertsieve.spark.contained import outcome
from alertsieve.stream import predicate_first, shaped
from alertsieve.stream.batch_metrics import MATCHER_SECONDS, TALLY
from alertsieve.stream.outcome_columns import (
    ALERT_SIZE,
    QUARANTINED,
    SHAPED_LABELS,
    SHAPED_RECORD,
    cost,
    error,
    error_index,
    meta_of,
    model_error,
    model_rows,
    model_seconds,
    models_of,
)
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.records import carried, shaped_records


def _found(plan: JobPlan) -> tuple:
    """(the indices of the filters an alert matched, compiled and predicate first, and
    ``error_index(i)`` of those that failed on it: a SQL filter that raised on the alert
    (``alertsieve.spark.contained``), a Python filter that raised on its chunk; the columns
    computed once per alert beside them: the Python filters' errors and seconds, the models'
    seconds, rows and errors)."""
    from pyspark.sql import functions as F

    slots = []
    per_alert = {}
    for j, m in enumerate(models_of(plan)):
        result = F.col(hidden(m))
        per_alert[model_seconds(j)] = result[SECONDS]
        per_alert[model_rows(j)] = result[ROWS]
        per_alert[model_error(j)] = result[ERROR]
    for i in plan.compiled:
        f = plan.filters[i]
        if not f.runs_python:  # evaluated once: i, error_index(i) where it raised, or null
            slots.append(outcome(f.condition(), i, error_index(i)))
            continue
        match, err, seconds = f.evaluate_timed()
        per_alert[cost(i)] = seconds
        per_alert[error(i)] = err
        slots.append(F.when(match, F.lit(i)))
        slots.append(F.when(err.isNotNull(), F.lit(error_index(i))))
    none = F.array(F.lit(None).cast("int"))
    found = F.array_except(F.array(*slots), none) if slots else F.array().cast("array<int>")
    return found, per_alert


def _matched_first(flat, plan: JobPlan, found) -> tuple:
    """(``flat`` with the predicate-first result, the alert's indices, compiled ones first; the
    per-alert columns beside them: the tally of each chunk's matches, ``TALLY``, and the seconds
    the matcher took over it, ``MATCHER_SECONDS``), or ``flat``
    and ``found`` as they are when no filter runs predicate first. The UDF is a column of its
    own, read twice (Spark does not compute a projected Python UDF twice)."""
    from pyspark.sql import functions as F

    if plan.predicates is None:
        return flat, found, {}
    ok = F.col("_reason").isNull()
    result = predicate_first.outcomes(plan.predicates, found, ok, error_index(0))
    flat = flat.select("*", result.alias(predicate_first.MATCHED))
    column = F.col(predicate_first.MATCHED)
    return flat, column["m"], {TALLY: column["t"], MATCHER_SECONDS: column["s"]}


def evaluated(
    raw,
    plan: JobPlan,
    table=None,
    learn: bool = True,
    realtime: bool = False,
    alert_bytes: bool = True,
    objects=None,
):
    """Kafka rows -> META, ``_schema_id``, ``_reason``, ``_alert_id``, ``_outcomes`` (the indices
    of the filters the alert matched, ``QUARANTINED`` for a message that did not decode, and
    ``error_index(i)`` where filter i failed), the view's columns the compiled filters'
    records are written from (``carried``), an error column per Python filter and its seconds
    (``cost``: on the first row of each chunk it ran on), and each model's seconds, rows and
    first error (``model_seconds``, ``model_rows``, ``model_error``: likewise per chunk).
    Without ``alert_bytes`` (the noop sink: nothing publishes them), ``_value`` is null past
    the decode, so no alert's bytes wait beside the Python UDFs.

    The compiled filters' conditions fill one array with their index or null, and the nulls are
    dropped there, per alert, before anything is exploded: a thousand filters cost a thousand
    conditions and one short array, not a thousand rows carrying each alert's bytes.
    ``array_except`` drops them in generated code (``filter(arr, x -> x IS NOT NULL)`` is a
    lambda, evaluated outside it, which takes every condition with it). With ``objects`` (an
    ``alertsieve.stream.objects.ObjectState``), the Kafka rows are alerts and annotations, the
    view goes through each object's state, and each filter matches where its trigger runs it.
    The filters that run as
    data (``plan.shapes``) add a row per match of their own, from ``table``
    (``alertsieve.stream.shaped.table``), labelled by its row (``SHAPED_LABELS``) and with its
    fields record (``SHAPED_RECORD``). The predicate-first filters' indices join the compiled
    filters' in the same array (``alertsieve.stream.predicate_first``)."""
    from pyspark.sql import functions as F

    decoded = plan.decoder.decode(raw, plan.paths, stop_at_new=learn)
    if not alert_bytes:  # not carried past the decode: their size is (quotas count it)
        kept = F.lit(None) if objects is None else objects.own_bytes()
        decoded = decoded.withColumn(ALERT_SIZE, F.length("_value"))
        decoded = decoded.withColumn("_value", kept.cast("binary"))
    meta = meta_of(decoded)
    flat = filter_view(decoded, (*meta, "_schema_id", "_reason"), plan.context, plan.scoring)
    if objects is not None:
        flat = objects.stateful(flat)
        meta = meta_of(flat)
    found, per_alert = _found(plan)
    flat, found, tallied = _matched_first(flat, plan, found)
    if objects is not None:
        found = objects.gate(found)
    per_alert.update(tallied)
    extra = [c.alias(name) for name, c in per_alert.items()]
    outcome_indices = F.when(F.col("_reason").isNull(), found).otherwise(
        F.array(F.lit(QUARANTINED))
    )
    alert_id = F.col(plan.decoder.id_path).cast("string")
    inputs = carried(plan, flat.columns)
    kept = (*meta, "_schema_id", "_reason", alert_id.alias("_alert_id"))
    if not plan.shapes:
        return flat.select(*kept, outcome_indices.alias("_outcomes"), *inputs, *extra)
    compiled = flat.select(
        "*",
        alert_id.alias("_alert_id"),
        outcome_indices.alias("_compiled"),
        *extra,
        *shaped.value_columns(plan.shapes),
    )
    condition = shaped.join_condition(plan.shapes, keyed=realtime)
    joined = compiled.join(table, condition, "left")
    own = F.col(shaped.GROUP) == shaped.SELF
    # The alert's ~100 KB only on the rows that publish it: an alert's own row when something
    # compiled matched it or it was quarantined, a shaped filter's row when its group publishes
    # the alert. Without whole-stage code every operator after the join copies its rows, and most
    # of them are an alert that matched nothing or a match that publishes a fields record.
    alert_groups = [
        g
        for g, s in enumerate(plan.shapes, 1)
        if plan.filters[s.members[0]].name not in plan.payloads
    ]
    publishes_alert = F.when(own, F.size("_compiled") > 0).otherwise(
        F.col(shaped.GROUP).isin(alert_groups) if alert_groups else F.lit(False)
    )
    return joined.select(
        *[F.when(publishes_alert, F.col(c)).alias(c) if c == "_value" else c for c in kept[:-1]],
        "_alert_id",
        F.when(own, F.col("_compiled")).otherwise(F.array(F.col(shaped.INDEX))).alias("_outcomes"),
        *inputs,
        F.when(~own, shaped_records(plan)).alias(SHAPED_RECORD),
        *[F.when(own, F.col(name)).alias(name) for name in per_alert],
        *[F.when(~own, F.col(column)).alias(name) for name, column in SHAPED_LABELS.items()],
    )
