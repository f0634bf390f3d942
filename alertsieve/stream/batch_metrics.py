"""What the hot path counts per batch with ``observe()``: its observations' names and aggregates,
on the Kafka rows as they arrive, on every alert's row (Python's costs, the predicate-first
tallies) and on the rows that publish (``alertsieve.stream.metrics`` reads them back)."""

from __future__ import annotations

from alertsieve.spark.constants import constant_at
from alertsieve.stream import shared_delivery
from alertsieve.stream.outcome_columns import (
    ALERT_SIZE,
    QUARANTINED,
    SHAPED_ROW,
    cost,
    error,
    error_index,
    model_error,
    model_rows,
    model_seconds,
    models_of,
)
from alertsieve.stream.plan import JobPlan
from alertsieve.view.decoder import REASON_KINDS

#: The names of the ``observe()`` metrics of each batch (``alertsieve.stream.metrics``).
ARRIVED = "alertsieve_input"


OBSERVED = "alertsieve"


COST = "alertsieve_python"  # the seconds each Python filter and model took, models' rows and errors


MATCHES = "matches"  # the observed list of matched filters' names (those no tally counts)


FAILED = "failed"  # the observed list of the names of the filters that raised, one per error row


TALLY = "_tally"  # the predicate-first UDF's tallies of matches (``predicate_first.tally``)


MATCHER_SECONDS = "_matcher_s"  # the seconds the predicate-first UDF took over its chunks
#: What a batch matched apart from the alerts' bytes reports of its stages
#: (``alertsieve.stream.bytes_apart``), beside its observations: seconds to its records kept
#: (``prepare``: read, decode, scores, matching, records), to its records published
#: (``publish``: the alerts read again, every record written), the JVM's GC meanwhile (``gc``),
#: its records and those that publish an alert (``records``, ``records_whole``), and the
#: messages read again for them (``read_again``).
STAGES = "alertsieve_stages"
#: What the objects query counts of the rows out of its state (``alertsieve.stream.objects``):
#: objects updated by an alert, annotations that ran filters, annotations kept for objects not
#: seen yet, objects forgotten.
OBJECTS = "alertsieve_objects"


LOG_APPEND_TIME = 1  # Kafka's timestampType of a timestamp set by the broker


def size(i: int) -> str:
    return f"_b{i}"


def reason_kind(kind: str) -> str:
    return f"_q_{kind}"


def cost_metrics(plan: JobPlan) -> list:
    """Counted on every alert's row: the seconds each Python filter's function took, and each
    model's seconds, the rows it scored (its invocations: one per alert however many filters
    read it) and its first error; with predicate-first filters, the tallies of their matches
    and the compiled filters' (``TALLY``: a few per batch, where a name per match was 780,000
    at 10,000 filters)."""
    from pyspark.sql import functions as F

    out = [F.sum(cost(i)).alias(cost(i)) for i, f in enumerate(plan.filters) if f.runs_python]
    if plan.predicates is not None:
        out.append(F.collect_list(TALLY).alias(TALLY))
        out.append(F.sum(MATCHER_SECONDS).alias(MATCHER_SECONDS))
    for j, _ in enumerate(models_of(plan)):
        out += [
            F.sum(model_seconds(j)).alias(model_seconds(j)),
            F.sum(model_rows(j)).alias(model_rows(j)),
            F.first(model_error(j), ignorenulls=True).alias(model_error(j)),
        ]
    return out


def arrival_metrics() -> list:
    """Counted on the Kafka rows themselves: rows in, their timestamps (for the latency of the
    batch) and how many the broker stamped (``LogAppendTime``; the others carry the producer's
    time). Reading every column of the source's rows keeps Spark from projecting (and so copying)
    them before they are counted."""
    from pyspark.sql import functions as F

    ts = F.unix_micros(F.col("timestamp")) / 1e6
    return [
        F.count(F.lit(1)).alias("input_rows"),
        F.sum((F.col("timestampType") == LOG_APPEND_TIME).cast("long")).alias(
            "log_append_time_rows"
        ),
        F.min(ts).alias("ts_min"),
        F.max(ts).alias("ts_max"),
        F.percentile_approx(ts, [0.01, 0.05, 0.5], 1000).alias("ts_quantiles"),
    ]


def outcome_metrics(
    plan: JobPlan,
    sized: frozenset[str] = frozenset(),
    shared: bool = False,
    columns: tuple[str, ...] = (),
) -> list:
    """Counted on the outcome rows (one per match, quarantined message or filter error):
    quarantined, the first and last quarantine reasons in sort order, matches per filter, the
    names of the filters that failed, one per error row (``FAILED``: a SQL filter's row is an
    alert it raised on) and the first error of each Python filter.

    The reasons are two declarative aggregates (Real-Time Mode runs them; a UDF it would not):
    every quarantined message's reason sorts between them, so it starts with what they share,
    which is enough to diagnose a batch that quarantined everything (``alertsieve.stream.diagnosis``).

    Matches per filter are one aggregate, however many filters: the list of the matched
    filters' names, one per published record (``metrics.matches_by_filter`` counts them): names,
    not the plan's indices, so a deployment that changes the table's rows only counts right.
    With predicate-first filters, only the shaped rows are listed: the others are tallied per
    chunk of alerts (``cost_metrics``).
    Not N aggregates (a thousand sums in every batch's plan), and not ``histogram_numeric``
    (exact in one task, but it over-counted when partial histograms were merged: 27 for 10).
    The filters of ``sized`` (those with a daily quota) have their records' bytes summed (an
    alert's from ``ALERT_SIZE`` where the outcome's ``columns`` carry it)."""
    from pyspark.sql import functions as F

    index = F.col("_index")
    if plan.predicates is not None:  # tallied per alert (``cost_metrics``) but the shaped rows
        shaped_row = F.col(SHAPED_ROW) if plan.shapes else F.lit(False)
        matched = F.collect_list(F.when((index >= 0) & shaped_row, F.col("_filter")))
    elif shared:  # a shared record's row counts each filter it names
        names = shared_delivery.names(plan)
        one = F.when(index == shared_delivery.shared_index(plan), names).when(
            index >= 0, F.array(F.col("_filter"))
        )
        matched = F.flatten(F.collect_list(one))
    else:
        matched = F.collect_list(F.when(index >= 0, F.col("_filter")))
    out = [
        F.sum((index == QUARANTINED).cast("long")).alias("quarantined_rows"),
        F.min("_reason").alias("reason_min"),  # null on every row but the quarantined ones
        F.max("_reason").alias("reason_max"),
        matched.alias(MATCHES),
        F.collect_list(
            F.when(index <= error_index(0), constant_at(names_of(plan), "string", -1 - index))
        ).alias(FAILED),
        *[
            F.sum(F.col("_reason").rlike(pattern).cast("long")).alias(reason_kind(kind))
            for kind, pattern in REASON_KINDS.items()
        ],
    ]
    for i, f in enumerate(plan.filters):
        if f.name in sized:
            mine = (index >= 0) & (F.col("_filter") == f.name)
            published = F.length("_out_value")
            if ALERT_SIZE in columns:  # an alert's bytes are joined in as it is published
                published = F.coalesce(published, F.col(ALERT_SIZE))
            out.append(F.sum(F.when(mine, published)).alias(size(i)))
    for i, f in enumerate(plan.filters):
        if f.runs_python:
            out.append(
                F.first(F.when(index == error_index(i), F.col(error(i))), ignorenulls=True).alias(
                    error(i)
                )
            )
    return out


def names_of(plan: JobPlan) -> list[str]:
    return [f.name for f in plan.filters]
