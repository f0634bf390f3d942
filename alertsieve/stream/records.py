"""The hot path's records: one row per (alert, matching filter), per quarantined message and per
filter error (``outcomes``), labelled with its topic, filter, version and value (the original
alert, or the filter's fields record), then the Kafka record itself (``output_rows``)."""

from __future__ import annotations

from alertsieve.filtering.shapes import record_key
from alertsieve.publish import contract
from alertsieve.publish.payloads import fields_struct, record_column, record_inputs
from alertsieve.spark.constants import constant_at
from alertsieve.stream import shaped, shared_delivery
from alertsieve.stream.config import JobConfig
from alertsieve.stream.outcome_columns import (
    ALERT_SIZE,
    AT,
    FILTER,
    QUARANTINED,
    SHAPED_LABELS,
    SHAPED_RECORD,
    SHAPED_ROW,
    SOURCE,
    TRIGGER,
    WHOLE,
    error,
    meta_of,
)
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.sinks import headers


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
    with its ``_index`` (see ``evaluation.evaluated``), ``_topic_out`` (none for an error row, nor for a
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
    ``FILTER`` too (null on a quarantined message), for ``hot_path.publish_within``. Where the alerts'
    bytes were not carried (``ALERT_SIZE``), with the alert's place (``SOURCE``) and whether the
    record is the alert, whose bytes are to be joined in (``WHOLE``). A record of the objects
    query names its trigger (``contract.TRIGGER``): its source headers are the trigger's, its
    alert the object's latest (``AT``)."""
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
        **({contract.TRIGGER: F.col(TRIGGER)} if TRIGGER in outcome.columns else {}),
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
    # an object's row's alert is its latest, wherever its trigger was (``AT``)
    place = AT if AT[0] in outcome.columns else SOURCE
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
        *(
            [
                *[F.col(c).alias(s) for c, s in zip(place, SOURCE, strict=True)],
                F.col("_out_value").isNull().alias(WHOLE),
            ]
            if apart
            else []
        ),
    )
