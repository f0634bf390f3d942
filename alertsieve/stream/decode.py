"""Decode once, in the JVM: Confluent header -> writer schema by id -> ``from_avro`` into one
reader schema, with a reason for every row that cannot be decoded.

``from_avro`` knows nothing of the 5-byte header, so we cut it off and read the id ourselves.
Each known writer schema gets its own ``from_avro`` (resolving into the reader schema, Avro's
schema evolution); a CASE on the id picks the right one per row, so one pass decodes a topic that
mixes versions. PERMISSIVE mode turns an undecodable body into a null struct instead of failing
the batch; we turn that null into a quarantine reason rather than letting it pass silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from alertsieve.alerts.schemas import AlertSchema

#: Metadata columns the job carries next to the alert's own fields (underscored: never a clash).
META = {
    "_topic": "topic",
    "_partition": "partition",
    "_offset": "offset",
    "_timestamp": "timestamp",
    "_key": "key",
    "_value": "value",
}


@dataclass(frozen=True)
class DecodePlan:
    """What a batch is decoded with: the reader schema and the readable writer schemas by id."""

    reader: AlertSchema
    writers: Mapping[int, AlertSchema]
    unreadable: Mapping[int, str]  # id -> why it cannot be read as the reader schema
    wire_format: str = "confluent"  # or "plain": schemaless Avro of one configured writer schema


def readable_as(reader: AlertSchema, writer: AlertSchema) -> str | None:
    """None when ``writer`` data can be read as ``reader`` (Avro resolution), else why not."""
    import avro.schema
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(reader.definition)),
        avro.schema.parse(json.dumps(writer.definition)),
    )
    if result.compatibility == SchemaCompatibilityType.compatible:
        return None
    first = sorted(result.messages)[0] if result.messages else "incompatible"
    return f"schema id {writer.schema_id} ({writer.name}) cannot be read as {reader.name}: {first}"


def required_fields(schema: AlertSchema) -> list[str]:
    """Top-level fields that can never be null in a correctly decoded alert."""
    return [
        f["name"]
        for f in schema.definition["fields"]
        if not (isinstance(f["type"], list) and "null" in f["type"])
    ]


def make_plan(
    reader: AlertSchema, candidates: list[AlertSchema], wire_format: str = "confluent"
) -> DecodePlan:
    writers, unreadable = {}, {}
    for w in candidates:
        why = None if w.definition == reader.definition else readable_as(reader, w)
        if why is None:
            writers[w.schema_id] = w
        else:
            unreadable[w.schema_id] = why
    return DecodePlan(reader, writers, unreadable, wire_format)


def framed(definition: dict) -> dict:
    """The writer schema with the 5-byte Confluent header as two leading fixed fields.

    Avro writes a fixed field as its raw bytes, so a framed message *is* a valid encoding of this
    record: ``from_avro`` can read the whole Kafka value, and we avoid copying ~100 KB per alert
    into a header-less substring. The reader schema does not have these fields, so Avro
    resolution skips them.
    """
    header = [
        {
            "name": "_confluent_magic",
            "type": {"type": "fixed", "name": "alertsieve_magic", "size": 1},
        },
        {
            "name": "_confluent_schema_id",
            "type": {"type": "fixed", "name": "alertsieve_schema_id", "size": 4},
        },
    ]
    return {**definition, "fields": header + list(definition["fields"])}


def decode(raw, plan: DecodePlan, keep: tuple[str, ...] = ()):
    """Kafka rows -> one row per message: META columns, ``_schema_id``, ``_reason`` (null when
    decoded) and ``alert`` (the reader-schema struct, null when not); ``keep`` names other
    columns of ``raw`` to carry along.

    Two projections on purpose: the reason refers to the decoded column, and Spark does not
    collapse projections when that would evaluate an expensive expression (from_avro) twice.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    value = F.col("value")
    reader_json = json.dumps(plan.reader.definition)

    def avro_of(body, writer_definition: dict):
        options = {"mode": "PERMISSIVE"}
        if writer_definition != plan.reader.definition:
            options["avroSchema"] = reader_json
        return from_avro(body, json.dumps(writer_definition), options)

    size = F.coalesce(F.length(value), F.lit(0))
    if plan.wire_format == "plain":
        (writer,) = plan.writers.values()
        schema_id = F.lit(writer.schema_id)
        alert = avro_of(value, writer.definition)
    else:
        schema_id = F.when(size >= 5, F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long"))
        alert = F.lit(None)
        for sid, writer in plan.writers.items():
            alert = F.when(schema_id == sid, avro_of(value, framed(writer.definition))).otherwise(
                alert
            )
    step = raw.select(
        *[F.col(src).alias(dst) for dst, src in META.items()],
        *keep,
        schema_id.alias("_schema_id"),
        size.alias("_size"),
        alert.alias("_decoded"),
    )

    size, sid, decoded = F.col("_size"), F.col("_schema_id"), F.col("_decoded")
    # PERMISSIVE from_avro answers a corrupt body with a struct of nulls, not a null struct:
    # a field the reader schema declares non-nullable being null is the tell.
    failed = decoded.isNull()
    for name in required_fields(plan.reader):
        failed = failed | decoded[name].isNull()
    reason = F.when(size == 0, F.lit("empty message"))
    if plan.wire_format == "plain":
        reason = reason.when(failed, F.lit(f"undecodable Avro body for {writer.name}"))
    else:
        magic = F.lower(F.hex(F.substring(F.col("_value"), 1, 1)))
        reason = reason.when(
            size < 5, F.format_string("message of %d bytes is shorter than the 5-byte header", size)
        ).when(magic != "00", F.format_string("magic byte is 0x%s, expected 0x00", magic))
        for unreadable_id, why in plan.unreadable.items():
            reason = reason.when(sid == unreadable_id, F.lit(why))
        known = list(plan.writers)
        reason = reason.when(
            ~sid.isin(known) if known else F.lit(True),
            F.format_string("unknown schema id %d", sid),
        ).when(failed, F.format_string("undecodable Avro body for schema id %d", sid))
    return step.select(
        *META,
        *keep,
        "_schema_id",
        reason.alias("_reason"),
        F.when(reason.isNull(), decoded).alias("alert"),
    )


def decoded_records(spark, schema: AlertSchema, records: list[dict], skip: tuple[str, ...] = ()):
    """``records`` encoded with ``schema`` and decoded by Spark exactly as the job decodes, as a
    DataFrame of the alert's columns (minus ``skip``): for checking filters without Kafka."""
    from pyspark.sql.avro.functions import from_avro

    from alertsieve.alerts.schemas import without_fields

    rows = [(schema.encode(r),) for r in records]
    options = {"avroSchema": json.dumps(without_fields(schema, skip).definition)}
    raw = spark.createDataFrame(rows, "value binary")
    return raw.select(from_avro("value", json.dumps(schema.definition), options).alias("a")).select(
        "a.*"
    )
