"""The objects query's own stage: alerts and annotations into each object's state, and out as
the rows its filters run on (``object``, ``annotations`` and the object's latest alert).

It runs inside the hot path's assembly (``hot_path(..., objects=ObjectState(...))``) as a query
of its own, beside the stateless one: filters of objects see alerts a batch later than the
stateless path's at worst, and the stateless filters keep their query, plan and Real-Time Mode.

- ``stateful`` takes the query's Kafka rows, alerts and annotations alike, decoded once (an
  annotation does not decode as an alert: its text is parsed, ``alertsieve.publish.annotations``,
  and a malformed one is quarantined with its reason), keys them by object and runs
  ``object_state`` over them; each alert, and each annotation of a known object, comes out as one
  row: the object's latest alert's view fields (kept typed in the state, in this plan's types),
  ``object`` and ``annotations``, the trigger and its place (``_topic``...: the alert, or the
  annotation), and the latest alert's place (``AT``), whence ``bytes_apart`` reads its bytes again
  when a filter publishes it;
- ``gate`` keeps each filter's matches where its trigger ran it: an alert for the filters of
  ``triggers`` 'alert', an annotation for those of 'annotation' that read its annotator.
"""

from __future__ import annotations

from dataclasses import dataclass

from alertsieve.filtering.objects import (
    ALERT,
    ANNOTATION,
    ANNOTATIONS,
    OBJECT,
    annotators_read,
)
from alertsieve.publish import annotations as contract_annotations
from alertsieve.publish.contract import annotation_topic
from alertsieve.stream import object_state
from alertsieve.stream.batch_metrics import OBJECTS
from alertsieve.stream.config import JobConfig
from alertsieve.stream.outcome_columns import ALERT_SIZE, AT, TRIGGER, error_index
from alertsieve.stream.plan import JobPlan
from alertsieve.view.decoder import META, Decoder

#: Per survey: the object's id, band, magnitude, flux (nJy) of the detection an alert is for.
SUMMARY = {
    "ztf": {
        "_object": "objectId",
        "_band": "CASE candidate.fid WHEN 1 THEN 'g' WHEN 2 THEN 'r' WHEN 3 THEN 'i' END",
        "_mag": "CAST(candidate.magpsf AS DOUBLE)",
        "_flux": "CAST(NULL AS DOUBLE)",
    },
    "rubin": {
        # a solar-system source's diaObjectId is 0 (LSSTCam, 2025): its object is its ssObject
        "_object": "CAST(coalesce(nullif(diaSource.diaObjectId, 0), diaSource.ssObjectId) AS STRING)",
        "_band": "diaSource.band",
        "_mag": "CAST(NULL AS DOUBLE)",
        "_flux": "CAST(diaSource.psfFlux AS DOUBLE)",
    },
}
SUMMARY_PATHS = {
    "ztf": ["objectId", "candidate.fid", "candidate.magpsf", "candidate.jd"],
    "rubin": [
        "diaSource.diaObjectId",
        "diaSource.ssObjectId",
        "diaSource.band",
        "diaSource.psfFlux",
        "diaSource.midpointMjdTai",
    ],
}


def summary_paths(decoder: Decoder) -> list[str]:
    """What the objects query decodes besides its filters' fields: what the summary reads."""
    return [p for p in SUMMARY_PATHS[decoder.survey] if p in set(decoder.paths)]


def annotation_options(cfg: JobConfig) -> dict[str, str]:
    """The Kafka source of every annotator's topic, from its first annotation (a topic made
    while the job runs is found within Kafka's metadata refresh)."""
    from alertsieve.stream.sinks import kafka_options

    return {
        **kafka_options(cfg.bootstrap, cfg.kafka_conf),
        "subscribePattern": cfg.annotations_topics,
        "startingOffsets": "earliest",
        "failOnDataLoss": "false",
        "kafka.metadata.max.age.ms": "5000",
    }


@dataclass(frozen=True)
class ObjectState:
    """The objects query's stage (see the module) for ``plan`` (its filters of objects)."""

    plan: JobPlan
    cfg: JobConfig
    #: whether the alerts that do not decode are quarantined here: when no stateless query runs
    quarantines: bool = False
    #: whether the alerts' bytes go through the state beside their rows (never into it), so the
    #: records of alerts publish them as they are; not when a Python UDF would queue them
    #: (``alertsieve.stream.bytes_apart``): then, as an annotation's always, they are read again
    carries_bytes: bool = False

    def annotations(self, spark):
        """Every annotator's Kafka rows, as the query reads them beside its alerts."""
        return spark.readStream.format("kafka").options(**annotation_options(self.cfg)).load()

    def is_annotation(self):
        """A Spark column: whether a Kafka row of the query is an annotation (by its topic)."""
        from pyspark.sql import functions as F

        return F.col("_topic").rlike(f"^{self.cfg.annotations_topics}$")

    def own_bytes(self):
        """The ``_value`` the query keeps past the decode: an annotation's (its text is parsed
        after it), an alert's when it ``carries_bytes``."""
        from pyspark.sql import functions as F

        return (
            F.col("_value") if self.carries_bytes else F.when(self.is_annotation(), F.col("_value"))
        )

    def stateful(self, flat):
        """The filter view ``flat`` of the query's Kafka rows (alerts and annotations, each read
        and decoded once) through each object's state: a row per alert and per annotation of a
        known object, in the view's columns with ``object``, ``annotations``, ``TRIGGER`` and
        ``AT``; a malformed annotation (and, when ``quarantines``, an alert that did not decode)
        as a quarantined row, its ``_reason`` said. One frame in and one out, each row through
        the state once: the quarantined rows pass through it (keyed by their place), not beside
        it, which would read and decode the input a second time."""
        from pyspark.sql import functions as F

        view = [c for c in flat.columns if not c.startswith("_") and c not in (OBJECT, ANNOTATIONS)]
        summary = SUMMARY[self.plan.decoder.survey]
        note = self.is_annotation()
        text = F.col("_value").cast("string")
        parsed = flat.withColumn(
            "a", F.when(note, F.from_json(text, contract_annotations.SPARK_TYPE))
        ).withColumn(
            "_reason",
            F.when(
                note, malformed_reason(self.plan.decoder.survey, self.cfg.output_prefix, text)
            ).otherwise(F.col("_reason")),
        )
        kind = (
            F.when(F.col("_reason").isNotNull(), F.lit(object_state.QUARANTINED))
            .when(note, F.lit(ANNOTATION))
            .otherwise(F.lit(ALERT))
        )
        parsed = parsed.withColumn("_kind", kind)
        if not self.quarantines:  # the stateless query quarantines the alerts that do not decode
            parsed = parsed.where(note | F.col("_reason").isNull())

        def of(which: str, column):
            return F.when(F.col("_kind") == which, column)

        place = F.concat_ws("/", "_topic", "_partition", "_offset")
        rows = parsed.select(
            F.coalesce(  # a row to quarantine by its place; an alert of no object is left out
                of(ALERT, F.expr(summary["_object"])),
                of(ANNOTATION, F.col("a.object")),
                of(object_state.QUARANTINED, place),
            ).alias("_object"),
            "_kind",
            of(ALERT, F.expr(self.plan.decoder.mjd_sql).cast("double")).alias("_mjd"),
            *[
                of(ALERT, F.expr(sql)).alias(name)
                for name, sql in summary.items()
                if name != "_object"
            ],
            of(ALERT, F.to_json("scores") if "scores" in flat.columns else F.lit(None))
            .cast("string")
            .alias("_scores"),
            of(ALERT, F.struct(*view)).alias("_view"),
            of(ANNOTATION, F.col("a.annotator")).alias("_annotator"),
            of(ANNOTATION, F.col("a.class")).alias("_class"),
            of(ANNOTATION, F.col("a.score")).alias("_score"),
            of(ANNOTATION, F.col("a.attributes")).alias("_attributes"),
            of(ANNOTATION, F.coalesce(F.col("a.time"), F.col("_timestamp"))).alias("_time"),
            *[c for c in META if c != "_value"],
            F.when(~note, F.col(ALERT_SIZE)).cast("int").alias("_alert_size"),
            "_schema_id",
            "_reason",
            F.when(F.col("_kind") != ANNOTATION, F.col("_value")).alias("_value"),
        ).where(F.col("_object").isNotNull())
        ttl_ms = int(self.cfg.object_ttl_days * 86_400_000)
        out = object_state.transform(rows, ttl_ms).observe(OBJECTS, *_object_metrics())
        trigger = F.col("_trigger")
        quarantined = trigger == object_state.QUARANTINED
        return (
            out.where(trigger.isin(ALERT, ANNOTATION) | quarantined)
            .select(
                F.col("_view").alias("_v"),
                F.col("_summary").alias(OBJECT),
                F.col("_annotations").alias(ANNOTATIONS),
                *META,
                F.col("_alert_size").alias(ALERT_SIZE),
                "_schema_id",
                "_reason",
                F.when(trigger == ANNOTATION, F.concat(F.lit("annotation:"), "_annotator"))
                .when(quarantined & note, F.lit(ANNOTATION))
                .otherwise(F.lit(ALERT))
                .alias(TRIGGER),
                *[
                    F.col(f"_at_{c}").alias(a)
                    for c, a in zip(("topic", "partition", "offset"), AT, strict=True)
                ],
            )
            .select("_v.*", "*")
            .drop("_v")
        )

    def gate(self, found):
        """``found`` (an alert's matched filter indices and error indices) less those of
        filters its trigger does not run: an alert runs the filters of 'alert'; an annotation by
        A runs the filters of 'annotation' that read A (or every annotation)."""
        from pyspark.sql import functions as F

        on_alert, any_annotator, by_annotator = [], [], {}
        for i, f in enumerate(self.plan.filters):
            mine = [i, error_index(i)]
            if ALERT in f.triggers:
                on_alert += mine
            if ANNOTATION in f.triggers:
                names = annotators_read(f)
                if names is None:
                    any_annotator += mine
                for name in names or ():
                    by_annotator.setdefault(name, []).extend(mine)

        def ints(values: list[int]):
            return F.array(*[F.lit(v) for v in values]).cast("array<int>")

        on_annotation = ints(any_annotator)
        if by_annotator:
            named = F.create_map(
                *[
                    x
                    for name, v in by_annotator.items()
                    for x in (F.lit(name), ints(v + any_annotator))
                ]
            )
            annotator = F.substring_index(F.col(TRIGGER), ":", -1)
            on_annotation = F.coalesce(F.element_at(named, annotator), on_annotation)
        allowed = F.when(F.col(TRIGGER) == ALERT, ints(on_alert)).otherwise(on_annotation)
        return F.array_intersect(found, allowed)


def _object_metrics() -> list:
    """Counted on the rows out of the state: objects updated by an alert, annotations that ran
    filters, annotations kept for an object not seen yet, objects forgotten."""
    from pyspark.sql import functions as F

    trigger = F.col("_trigger")
    kinds = {
        "alerts": ALERT,
        "annotations": ANNOTATION,
        "pending_annotations": object_state.PENDING,
        "evicted": object_state.EVICTED,
    }
    return [F.sum((trigger == kind).cast("long")).alias(name) for name, kind in kinds.items()]


def malformed_reason(survey: str, prefix: str, text):
    """A Spark column: why the annotation ``text`` (a column), parsed as ``a`` (``SPARK_TYPE``),
    read from ``_topic``, is malformed, or null when it is well formed for a job of ``survey``
    publishing under ``prefix``."""
    from pyspark.sql import functions as F

    a = F.col("a")
    own = F.concat(F.lit(annotation_topic(prefix, "")), a["annotator"])
    checks = [
        (F.json_object_keys(text).isNull(), "annotation: not a JSON object"),
        (
            a["version"].isNull() | (a["version"] != contract_annotations.VERSION),
            f"annotation: version is not {contract_annotations.VERSION}",
        ),
        (a["object"].isNull() | (F.trim(a["object"]) == ""), "annotation: no object"),
        (a["annotator"].isNull(), "annotation: no annotator"),
        (
            ~a["annotator"].rlike(f"^{contract_annotations.NAME.pattern}$"),
            "annotation: annotator is not a name (lower-case letters, digits, _)",
        ),
        (
            F.col("_topic") != own,
            F.concat(
                F.lit("annotation: names annotator "),
                a["annotator"],
                F.lit(" on another annotator's topic "),
                F.col("_topic"),
            ),
        ),
        (a["class"].isNull() | (F.trim(a["class"]) == ""), "annotation: no class"),
        (
            a["survey"].isNull() | (a["survey"] != survey),
            f"annotation: survey is not {survey} (this job's)",
        ),
        (
            F.get_json_object(text, "$.score").isNotNull() & a["score"].isNull(),
            "annotation: score is not a number",
        ),
        (
            F.get_json_object(text, "$.time").isNotNull() & a["time"].isNull(),
            "annotation: time is not ISO 8601",
        ),
    ]
    reason = None
    for failed, why in checks:
        why = why if not isinstance(why, str) else F.lit(why)
        reason = F.when(failed, why) if reason is None else reason.when(failed, why)
    return reason
