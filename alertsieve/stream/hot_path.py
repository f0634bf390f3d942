"""The hot path: ONE stateless streaming query from the input topic to the filters' topics.

Kafka source -> decode into the filter view (only the fields the filters read) -> every filter as a
boolean column -> one row per (alert, matching filter), plus one per quarantined message -> Spark's
native Kafka sink, whose per-row ``topic`` column fans out to every filter's topic in one write.
No foreachBatch, cache or collect: nothing waits for the driver, so the same plan runs in
micro-batches or in Real-Time Mode (milliseconds from input append to output append). The one
exception is a job with daily quotas in micro-batches (``alertsieve.stream.quota_gate``): which
filters are withheld is the driver's decision at each batch's start, so its rows go through
``publish_within`` (a foreachBatch writing the same Kafka records, less the withheld filters').
In Real-Time Mode the withheld filters are planned into the query (their rows get no topic).

What the job reports per batch is counted on the way by ``observe()`` (``alertsieve.stream.metrics``);
the Delta archive is its own query reading these topics (``alertsieve.stream.archive``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.scores.column import hidden
from alertsieve.filtering.scores.runtime import ERROR, ROWS, SECONDS
from alertsieve.filtering.shapes import record_key
from alertsieve.publish import contract
from alertsieve.publish.payloads import fields_struct, record_column, record_inputs
from alertsieve.spark.constants import constant_at
from alertsieve.spark.contained import outcome
from alertsieve.stream import predicate_first, shaped, shared_delivery
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.sinks import headers, kafka_options
from alertsieve.view.decoder import META, REASON_KINDS

#: The names of the ``observe()`` metrics of each batch (``alertsieve.stream.metrics``).
ARRIVED = "alertsieve_input"
OBSERVED = "alertsieve"
COST = "alertsieve_python"  # the seconds each Python filter and model took, models' rows and errors
MATCHES = "matches"  # the observed list of matched filters' names (those no tally counts)
FAILED = "failed"  # the observed list of the names of the filters that raised, one per error row
TALLY = "_tally"  # the predicate-first UDF's tallies of matches (``predicate_first.tally``)
MATCHER_SECONDS = "_matcher_s"  # the seconds the predicate-first UDF took over its chunks
FILTER = "_filter"  # the filter of an output row, kept for ``publish_within`` (quotas)
LOG_APPEND_TIME = 1  # Kafka's timestampType of a timestamp set by the broker
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the largest alert forwarded (the embedded brokers' limit)
#: Up to this many filters, the hot path runs in whole-stage generated code; beyond, Spark
#: generates code per expression instead. Whole-stage code puts every filter's condition in one
#: Java method: measured here (10,000 alerts, local[2]), 100 filters ran 2.6 s that way and 3.7 s
#: per expression; at 300, Spark failed to compile the method and fell back with an ERROR; at
#: 1,000, the Java compiler (Janino) filled a 3 GB driver heap. Per expression, each method holds
#: a few conditions and 1,000 filters compile in a second.
WHOLE_STAGE_MAX_FILTERS = 100


#: The size of an alert whose bytes are not carried past its decode (``evaluated``).
ALERT_SIZE = "_alert_size"


def meta_of(frame) -> list[str]:
    """The Kafka columns ``frame`` carries (``META``), and the alert's size where its bytes are
    not carried (``ALERT_SIZE``)."""
    return [*META, *([ALERT_SIZE] if ALERT_SIZE in frame.columns else [])]


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


def size(i: int) -> str:
    return f"_b{i}"


def reason_kind(kind: str) -> str:
    return f"_q_{kind}"


def model_seconds(j: int) -> str:
    return f"_ms{j}"


def model_rows(j: int) -> str:
    return f"_mn{j}"


def model_error(j: int) -> str:
    return f"_me{j}"


def models_of(plan: JobPlan) -> list:
    """The models the plan's filters read, in the plan's order (their metrics' indices)."""
    return list(plan.scoring.models) if plan.scoring else []


def table_labels(
    plan: JobPlan, cfg: JobConfig, withheld: frozenset[str] = frozenset()
) -> shaped.Labels:
    """Each shaped filter's name, version, the Confluent header of its Avro fields record, its
    topic (none when ``withheld``) and its record's format."""
    return {
        i: (
            f.name,
            plan.versions.get(f.name, ""),
            plan.payloads[f.name].header if f.name in plan.payloads else b"",
            None if f.name in withheld else contract.filter_topic(f, cfg.output_prefix),
            f.format if f.name in plan.payloads else None,
        )
        for s in plan.shapes
        for i in s.members
        for f in [plan.filters[i]]
    }


def shaped_records(plan: JobPlan):
    """A shaped filter's row's fields record: its group's expression, with the filter's name,
    version and Avro header from its row (null for a group that publishes the alert)."""
    from pyspark.sql import functions as F

    record = None
    for g, s in enumerate(plan.shapes, 1):
        first = plan.filters[s.members[0]]
        if first.name not in plan.payloads:
            continue
        column = record_column(
            first,
            plan.decoder,
            F.col(shaped.VERSION),
            plan.payloads[first.name],
            name=F.col(shaped.NAME),
            header=F.col(shaped.HEADER),
        )
        held = F.col(shaped.GROUP) == g
        record = F.when(held, column) if record is None else record.when(held, column)
    return record if record is not None else F.lit(None).cast("binary")


def record_groups(plan: JobPlan) -> list[list[int]]:
    """The compiled and predicate-first filters that publish fields records, grouped by their record (fields and
    format): one expression writes the records of a group's matches, after the explode, so a
    thousand compiled filters of a few sets of fields are a few record expressions in the plan,
    not a thousand (their code was most of a batch's fixed cost)."""
    groups: dict[tuple, list[int]] = {}
    for i in plan.indexed:
        f = plan.filters[i]
        if f.name in plan.payloads:
            groups.setdefault(record_key(f), []).append(i)
    return list(groups.values())


def carried(plan: JobPlan, columns: list[str]) -> list[str]:
    """The view's ``columns`` the compiled filters' records read (``record_groups``), carried
    past the explode to the matches whose records are written there."""
    groups = record_groups(plan)
    if not groups:
        return []
    view = [c for c in columns if not c.startswith("_")]  # the job's own columns start with _
    return record_inputs([plan.filters[m[0]] for m in groups], plan.decoder, view)


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
    lambda, evaluated outside it, which takes every condition with it). The filters that run as
    data (``plan.shapes``) add a row per match of their own, from ``table``
    (``alertsieve.stream.shaped.table``), labelled by its row (``SHAPED_LABELS``) and with its
    fields record (``SHAPED_RECORD``). The predicate-first filters' indices join the compiled
    filters' in the same array (``alertsieve.stream.predicate_first``)."""
    from pyspark.sql import functions as F

    decoded = plan.decoder.decode(raw, plan.paths, stop_at_new=learn)
    if not alert_bytes:  # not carried past the decode: their size is (quotas count it)
        decoded = decoded.withColumn(ALERT_SIZE, F.length("_value"))
        decoded = decoded.withColumn("_value", F.lit(None).cast("binary"))
    meta = meta_of(decoded)
    flat = filter_view(decoded, (*meta, "_schema_id", "_reason"), plan.context, plan.scoring)
    found, per_alert = _found(plan)
    flat, found, tallied = _matched_first(flat, plan, found)
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


def _by_filter(values: list, element: str = "string"):
    """Filter i's value on a match of filter i (``values``: one constant per filter, an array of
    ``element``s: ``constant_at``); null on any other row."""
    from pyspark.sql import functions as F

    index = F.col("_index")
    matched = (index >= 0) & (index < len(values))  # not a shared record's row
    return F.when(matched, constant_at(values, element, index + 1))


def _labels(plan: JobPlan, cfg: JobConfig, withheld: frozenset[str], groups: list[list[int]]):
    """An outcome row's labels, by its ``_index``: topic (the quarantine's for a quarantined
    message, none for an error row or a ``withheld`` filter's match), filter name, version,
    record group (``record_groups``), format and Avro header; a shaped filter's row says its own
    (``SHAPED_LABELS``), a shared record's row is the shared topic's and names no filter."""
    from pyspark.sql import functions as F

    index = F.col("_index")
    filters = plan.filters
    group_of = [0] * len(filters)
    for g, members in enumerate(groups, 1):
        for i in members:
            group_of[i] = g
    names = [f.name for f in filters]
    topics = [None if f.name in withheld else cfg.topic_of(f) for f in filters]
    columns = {
        "_topic_out": _by_filter(topics).when(index == QUARANTINED, F.lit(cfg.quarantine_topic)),
        "_filter": F.when(
            (index >= 0) & (index < len(filters)), constant_at(names, "string", index + 1)
        ).when(index < QUARANTINED, constant_at(names, "string", -index - 1)),
        "_version": _by_filter([plan.versions.get(f.name, "") for f in filters]),
        "_format": _by_filter(
            [f.format if g else None for f, g in zip(filters, group_of, strict=True)]
        ),
        "_group": _by_filter(group_of, "int") if groups else F.lit(0),
        "_header": _by_filter(
            [
                plan.payloads[f.name].header if g else b""
                for f, g in zip(filters, group_of, strict=True)
            ],
            "binary",
        )
        if groups
        else F.lit(b""),
    }
    if plan.shapes:
        own = {
            "_topic_out": "_s_topic",
            "_filter": "_s_name",
            "_version": "_s_version",
            "_format": "_s_format",
        }
        shaped_row = F.col("_s_name").isNotNull()
        columns = {
            k: F.when(
                shaped_row, F.col(own[k]) if k in own else F.lit(0 if k == "_group" else b"")
            ).otherwise(c)
            for k, c in columns.items()
        }
    if cfg.delivery == contract.DELIVERY_SHARED:
        at = index == shared_delivery.shared_index(plan)
        columns["_topic_out"] = F.when(at, F.lit(cfg.shared_topic)).otherwise(columns["_topic_out"])
        columns["_format"] = F.when(
            at & (F.col(shared_delivery.PAYLOAD) == contract.PAYLOAD_FIELDS),
            F.lit(contract.FORMAT_JSON),
        ).otherwise(columns["_format"])
    return columns


def _record_value(plan: JobPlan, groups: list[list[int]], shared: bool):
    """An outcome row's value: its group's fields record (written from the row's name, version
    and header, one expression per group rather than the literal arrays of every filter's), a
    shaped row's own record, a shared record's alert or envelope, else the alert."""
    from pyspark.sql import functions as F

    records = None
    for g, members in enumerate(groups, 1):
        first = plan.filters[members[0]]
        record = record_column(
            first,
            plan.decoder,
            F.col("_version"),
            plan.payloads[first.name],
            name=F.col("_filter"),
            header=F.col("_header"),
        )
        held = F.col("_group") == g
        records = F.when(held, record) if records is None else records.when(held, record)
    value = F.col("_value") if records is None else records.otherwise(F.col("_value"))
    if plan.shapes:
        value = F.when(F.col("_s_format").isNotNull(), F.col(SHAPED_RECORD)).otherwise(value)
    if shared and groups:  # a shared record of fields filters only: the envelope
        fields = F.col(shared_delivery.PAYLOAD) == contract.PAYLOAD_FIELDS
        value = F.when(fields, shared_delivery.envelope(plan)).otherwise(value)
    return value


def outcomes(
    flags,
    plan: JobPlan,
    cfg: JobConfig,
    withheld: frozenset[str] = frozenset(),
    records: bool = True,
):
    """One row per (alert, matching filter), per quarantined message and per Python filter error,
    with its ``_index`` (see ``evaluated``), ``_topic_out`` (none for an error row, nor for a
    match of a ``withheld`` filter: its daily quota reached, counted but not published),
    ``_filter``, ``_version`` and ``_out_value`` (the original bytes, or the filter's fields
    record); with shared delivery, one row per alert for its shared filters
    (``alertsieve.stream.shared_delivery``), with their ``SHARED`` indices, header entries and
    payload. Only the rows kept are ever copied with their ~100 KB of alert bytes, and most
    alerts match nothing. Without ``records`` (the noop sink), ``_out_value`` is null: the
    rows are counted, no record is written."""
    from pyspark.sql import functions as F

    shared = cfg.delivery == contract.DELIVERY_SHARED
    groups = record_groups(plan)
    meta = meta_of(flags)
    errors = [error(i) for i, f in enumerate(plan.filters) if f.runs_python]
    labels = [*SHAPED_LABELS, SHAPED_RECORD] if plan.shapes else []
    inputs = carried(plan, flags.columns)
    indices, extra = F.col("_outcomes"), []
    if shared:
        indices, shared_indices = shared_delivery.split(indices, plan, cfg)
        extra = [F.when(F.size(shared_indices) > 0, shared_indices).alias(shared_delivery.SHARED)]
    # explode_outer, then the empty alerts' null row dropped: a plain explode makes Spark infer
    # ``size(_outcomes) > 0`` and push it below the decode, where every field a filter reads is
    # replaced by its whole decoding expression (a 90 MB plan at 100 filters, out of memory at
    # 1,000). The dropped rows are never copied: the filter runs in the same generated code.
    exploded = flags.select(
        F.explode_outer(indices).alias("_index"), *meta, "_reason", "_alert_id", *inputs,
        *errors, *labels, *extra,
    )  # fmt: skip
    rows = exploded.where(F.col("_index").isNotNull())
    if shared:
        at = F.col("_index") == shared_delivery.shared_index(plan)
        header, payload = shared_delivery.entries(plan, groups, fields_struct)
        rows = rows.select(
            "*",
            F.when(at, header).alias(shared_delivery.ENTRIES),
            F.when(at, payload).alias(shared_delivery.PAYLOAD),
        )
        extra = [shared_delivery.SHARED, shared_delivery.ENTRIES, shared_delivery.PAYLOAD]
    label_columns = _labels(plan, cfg, withheld, groups)
    shaped_rows = [F.col("_s_name").isNotNull().alias(SHAPED_ROW)] if plan.shapes else []
    labelled = rows.select(
        *meta, "_index", "_reason", "_alert_id", *inputs, *errors, *extra, *shaped_rows,
        *([SHAPED_RECORD, "_s_format"] if plan.shapes else []),
        *[c.alias(k) for k, c in label_columns.items()],
    )  # fmt: skip
    extra += [SHAPED_ROW] if plan.shapes else []  # its match is counted by name, not tallied
    value = _record_value(plan, groups, shared) if records else F.lit(None).cast("binary")
    return labelled.select(
        *meta, "_index", "_reason", "_alert_id", *errors, *extra, "_topic_out", "_filter",
        "_version", value.alias("_out_value"), "_format",
    )  # fmt: skip


def output_rows(outcome, cfg: JobConfig, keep_filter: bool = False):
    """One Kafka record per (alert, matching filter) and per quarantined message: the original
    bytes or the filter's fields record, keyed by the alert id (a quarantined message keeps its
    own key), with headers saying which filter and version, what the value is, and where the
    alert came from (or why it was quarantined). ``keep_filter``: with the filter's name as
    ``FILTER`` too (null on a quarantined message), for ``publish_within``. Where the alerts'
    bytes were not carried (``ALERT_SIZE``), with the alert's place (``SOURCE``) and whether the
    record is the alert, whose bytes are to be joined in (``WHOLE``)."""
    from pyspark.sql import functions as F

    source = {
        contract.SOURCE_TOPIC: F.col("_topic"),
        contract.SOURCE_PARTITION: F.col("_partition"),
        contract.SOURCE_OFFSET: F.col("_offset"),
        contract.KAFKA_TIMESTAMP_MS: F.unix_millis(F.col("_timestamp")),
    }
    match = {
        contract.FILTER: F.col("_filter"),
        contract.FILTER_VERSION: F.col("_version"),
        **source,
        contract.PROCESSED_AT_MS: F.unix_millis(F.current_timestamp()),
        contract.COUNTS_TOPIC: F.lit(cfg.counts_topic),
    }
    fields = {
        **match,
        contract.PAYLOAD: F.lit(contract.PAYLOAD_FIELDS),
        contract.FORMAT: F.col("_format"),
    }
    alert = {**match, contract.PAYLOAD: F.lit(contract.PAYLOAD_ALERT)}
    quarantined = F.col("_reason").isNotNull()
    labelled = F.when(quarantined, headers(**{contract.REASON: F.col("_reason"), **source}))
    if shared_delivery.ENTRIES in outcome.columns:  # a shared record names no one filter
        shared = {
            contract.SHARED_FILTERS: F.col(shared_delivery.ENTRIES),
            **source,
            contract.PROCESSED_AT_MS: match[contract.PROCESSED_AT_MS],
            contract.COUNTS_TOPIC: match[contract.COUNTS_TOPIC],
            contract.PAYLOAD: F.col(shared_delivery.PAYLOAD),
        }
        fields_only = {**shared, contract.FORMAT: F.col("_format")}
        at = F.col(shared_delivery.ENTRIES).isNotNull()
        labelled = labelled.when(at & F.col("_format").isNotNull(), headers(**fields_only))
        labelled = labelled.when(at, headers(**shared))
    apart = ALERT_SIZE in outcome.columns  # the alerts' bytes are joined in later
    return outcome.where(F.col("_topic_out").isNotNull()).select(
        F.when(quarantined, F.col("_key"))
        .otherwise(F.col("_alert_id").cast("binary"))
        .alias("key"),
        F.coalesce(F.col("_out_value"), F.lit(b"")).alias("value"),
        F.col("_topic_out").alias("topic"),
        labelled.when(F.col("_format").isNotNull(), headers(**fields))
        .otherwise(headers(**alert))
        .alias("headers"),
        *([F.col("_filter").alias(FILTER)] if keep_filter else []),
        *([*SOURCE, F.col("_out_value").isNull().alias(WHOLE)] if apart else []),
    )


def codegen_conf(plan: JobPlan) -> dict[str, str]:
    """The session settings the hot path of ``plan`` needs (see ``WHOLE_STAGE_MAX_FILTERS``: a
    shape is one condition however many filters it holds). With shapes, an expression repeated on
    the right of an ``AND`` or ``OR`` is not computed ahead of the condition (Spark's default
    computes every repeated expression first, for every (alert, row) pair of the shapes' join,
    whatever the row's shape: at 10,000 filters, 46-48 s of a batch of 10,000 alerts against
    21 s without)."""
    conditions = len(plan.compiled) + len(plan.shapes)
    return {
        "spark.sql.codegen.wholeStage": str(conditions <= WHOLE_STAGE_MAX_FILTERS).lower(),
        "spark.sql.subexpressionElimination.skipForShortcutExpr": str(bool(plan.shapes)).lower(),
    }


#: What the Kafka sink's producer may hold in records not yet sent (Kafka's default is 32 MB). It
#: is heap: the 256 MB this was once, with 10,000 filters' topics each holding an open batch,
#: filled spark-submit's default 1 GB heap in the first batch (``OutOfMemoryError`` in the
#: producer's ``BufferPool``).
PRODUCER_MEMORY = 64 * 1024 * 1024
#: An open batch of one topic: large enough for a few ~100 KB alerts (the producer sends one
#: batch per partition per request, so an alert larger than its batch goes alone), small enough
#: that every topic of a job of ten thousand filters can hold one within a quarter of the
#: producer's memory, down to ``MIN_BATCH_BYTES``.
MAX_BATCH_BYTES, MIN_BATCH_BYTES = 1024 * 1024, 64 * 1024


def batch_bytes(topics: int) -> int:
    """The Kafka sink's ``batch.size`` for a job writing to ``topics`` topics (see above)."""
    share = PRODUCER_MEMORY // (4 * max(topics, 1))
    return max(MIN_BATCH_BYTES, min(MAX_BATCH_BYTES, share))


def sink_options(cfg: JobConfig, topics: int) -> dict[str, str]:
    """The Kafka sink's producer for ``topics`` topics, made for ~100 KB records: requests as
    large as the topics allow (the Java producer's 1 MB default fails a whole batch on one large
    alert), batches of a few alerts (``batch_bytes``), a linger short enough for Real-Time Mode,
    and a bounded memory (``PRODUCER_MEMORY``)."""
    opts = kafka_options(cfg.bootstrap, cfg.kafka_conf)
    opts.setdefault("kafka.max.request.size", str(MAX_MESSAGE_BYTES))
    opts.setdefault("kafka.batch.size", str(batch_bytes(topics)))
    opts.setdefault("kafka.linger.ms", "0" if cfg.realtime else "5")
    opts.setdefault("kafka.buffer.memory", str(PRODUCER_MEMORY))
    return opts


def runs_python(plan: JobPlan) -> bool:
    """Whether any of the plan's filters, models or its predicate-first matcher runs in Python."""
    return (
        any(f.runs_python for f in plan.filters)
        or bool(models_of(plan))
        or plan.predicates is not None
    )


def hot_path(
    raw,
    plan: JobPlan,
    cfg: JobConfig,
    sized: frozenset[str] = frozenset(),
    withheld: frozenset[str] = frozenset(),
    keep_filter: bool = False,
    learn: bool = True,
    stored: str | None = None,
    observe: Callable[[str], Any] = str,
    alert_bytes: bool = True,
):
    """The streaming frame the Kafka sink writes, with its metrics observed: arrivals on the Kafka
    rows as they come (no copy), outcomes on the few rows that publish (``metrics.batch_stats``
    joins the two). An observed frame is materialised row by row, so neither observation sits
    where every alert's bytes would be copied for it. In a job with quotas: ``sized``, the
    filters that have one (their bytes counted); ``withheld``, those whose rows get no topic
    (Real-Time Mode); ``keep_filter``, rows that keep their filter for ``publish_within``;
    ``learn``, a message of a writer the plan does not know stops its task (the job learns it:
    ``alertsieve.stream.new_writers``) rather than going to quarantine; ``stored``, the Delta
    table the shaped filters' rows are read from each batch (``shaped.store``), else they are
    planned in. ``observe``: what each observation is given (its name; a batch's frame is
    observed into a ``pyspark.sql.Observation`` instead). Without ``alert_bytes``, the alerts'
    bytes are not carried past their decode: the rows that publish an alert have none
    (``WHOLE``), for ``alertsieve.stream.bytes_apart`` to join them in; the noop sink needs
    none."""
    arrived = raw.observe(observe(ARRIVED), *arrival_metrics())
    table = None
    if plan.shapes:
        labels = table_labels(plan, cfg, withheld)
        table = shaped.table(raw.sparkSession, plan.shapes, labels, stored)
    noop = "noop" in cfg.sinks  # evaluation alone: every match counted, no record written
    carried_bytes = alert_bytes and not noop
    flags = evaluated(arrived, plan, table, learn, cfg.realtime, alert_bytes=carried_bytes)
    if runs_python(plan):
        flags = flags.observe(observe(COST), *cost_metrics(plan))
    shared = cfg.delivery == contract.DELIVERY_SHARED
    outcome = outcomes(flags, plan, cfg, withheld, records=not noop)
    outcome = outcome.observe(
        observe(OBSERVED), *outcome_metrics(plan, sized, shared, tuple(outcome.columns))
    )
    return outcome if noop else output_rows(outcome, cfg, keep_filter)


def within_quotas(rows, withheld: frozenset[str]):
    """``hot_path``'s rows (kept with their ``FILTER``) less the matches of the ``withheld``
    filters (their daily quota reached), without ``FILTER``. Their metrics were observed on every
    match, published or not, and the job counts the withheld ones from its decision
    (``metrics.BatchStats.withhold``)."""
    from pyspark.sql import functions as F

    if withheld:
        name = F.col(FILTER)
        rows = rows.where(name.isNull() | ~name.isin(*sorted(withheld)))
    return rows.drop(FILTER)


def publish_within(batch, withheld: frozenset[str], cfg: JobConfig, topics: int) -> None:
    """Write one batch of ``hot_path``'s rows (a job with quotas) to Kafka, less the matches of
    the ``withheld`` filters (``within_quotas``). The batch is the query's own."""
    within_quotas(batch, withheld).write.format("kafka").options(**sink_options(cfg, topics)).save()
