"""What a filter's match publishes: the original alert, or a compact record of chosen fields.

The original alert is ~100 KB, 95-99% of it image cutouts; most subscribers read a few hundred
bytes of it. A filter with ``payload="fields"`` publishes instead a record of its ``fields``
(alias -> SQL expression over the filter view: any field, ``features.*``, ``xmatch.*``,
``watch.*``) after a fixed envelope that says what the alert was and where it came from
(``alertsieve.publish.contract.ENVELOPE``). In ``format="avro"`` the record is Confluent-framed
Avro whose schema the job registers in its schema store or registry (subject ``<topic>-value``),
so any Avro consumer decodes it; in ``format="json"`` it is a JSON object. Both are SQL
expressions, computed in the same generated code as the filters: micro-batches and Real-Time
Mode alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from alertsieve.filtering.checks import named, not_an_expression
from alertsieve.filtering.model import Filter, FilterError
from alertsieve.publish import contract
from alertsieve.spark.contained import try_eval

_ALIAS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
#: The namespace of the Avro records of fields payloads (``alertsieve.fields.<filter>``).
NAMESPACE = "alertsieve.fields"


def check_payload(f: Filter) -> None:
    """A fields payload names its fields, with aliases that are Avro and JSON names and not the
    envelope's, and expressions (not statements); an alert payload names none."""
    where = f"filter {f.name!r} ({f.origin})"
    if f.payload == contract.PAYLOAD_ALERT:
        if f.fields:
            raise FilterError(
                f"{where}: fields {sorted(f.fields)} are given but payload is 'alert';"
                " set payload: fields to publish them (or drop fields)",
                filter=f.name,
            )
        return
    if not f.fields:
        raise FilterError(
            f"{where}: payload 'fields' needs fields, e.g. fields: {{snr: diaSource.snr}}",
            filter=f.name,
        )
    for alias, sql in f.fields.items():
        if not _ALIAS.match(alias):
            raise FilterError(
                f"{where}: field alias {alias!r}: use a letter or _ then letters, digits or _",
                filter=f.name,
            )
        if alias in contract.ENVELOPE:
            raise FilterError(
                f"{where}: field alias {alias!r} is an envelope field every record holds"
                f" ({', '.join(contract.ENVELOPE)}); choose another alias",
                filter=f.name,
            )
        reason = not_an_expression(sql)
        if reason:
            raise FilterError(f"{where}: fields[{alias!r}] is refused: {reason}", filter=f.name)


@dataclass(frozen=True)
class FieldsPayload:
    """A fields filter's record: for Avro, its schema and the Confluent header of its registered
    id (none for JSON)."""

    avro_schema: dict | None = None
    header: bytes = b""


def envelope_columns(decoder, name, version) -> list:
    """The envelope of a record of filter ``name`` over the hot path's view rows (``name`` and
    ``version`` are text, or columns where one expression writes the records of many filters)."""
    from pyspark import SparkContext
    from pyspark.sql import functions as F

    shared = _shared_envelope(
        SparkContext._active_spark_context,
        decoder.survey,
        decoder.id_path,
        decoder.detection,
        decoder.mjd_sql,
    )
    values = {
        contract.FILTER: F.lit(name) if isinstance(name, str) else name,
        contract.FILTER_VERSION: F.lit(version) if isinstance(version, str) else version,
    }
    return [
        shared[k] if k in shared else values[k].cast(t).alias(k)
        for k, t in contract.ENVELOPE.items()
    ]


@lru_cache(maxsize=8)
def _shared_envelope(context, survey: str, id_path: str, detection: str, mjd_sql: str):
    """What every filter's envelope holds alike, built once per Spark context (held here, so
    its key is never another's): a job with thousands of compiled fields filters built these
    columns once each, a dozen calls to the JVM per filter (most of its start-up, sampled)."""
    from pyspark.sql import functions as F

    values = {
        contract.ALERT_ID: F.col(id_path),
        contract.SURVEY: F.lit(survey),
        contract.SOURCE_TOPIC: F.col("_topic"),
        contract.SOURCE_PARTITION: F.col("_partition"),
        contract.SOURCE_OFFSET: F.col("_offset"),
        contract.KAFKA_TIMESTAMP_MS: F.unix_millis(F.col("_timestamp")),
        contract.PROCESSED_AT_MS: F.unix_millis(F.current_timestamp()),
        "mjd": F.expr(mjd_sql),
        "ra": F.col(f"{detection}.ra"),
        "dec": F.col(f"{detection}.dec"),
    }
    return {k: values[k].cast(contract.ENVELOPE[k]).alias(k) for k in values}


def envelope_paths(decoder) -> list[str]:
    """The view fields the envelope reads (decoded for a job with a fields filter)."""
    return [
        decoder.id_path,
        decoder.observed,
        f"{decoder.detection}.ra",
        f"{decoder.detection}.dec",
    ]


def _chosen(f: Filter) -> list:
    """The filter's fields, each null on an alert where it raises (a user's division by zero
    cannot stop the query: ``alertsieve.spark.contained``)."""
    from pyspark.sql import functions as F

    return [try_eval(F.expr(sql)).alias(alias) for alias, sql in f.fields.items()]


def fields_struct(f: Filter):
    """``f``'s fields alone, as a struct (a shared record's entry holds them: its envelope is
    the record's own)."""
    from pyspark.sql import functions as F

    return F.struct(*_chosen(f))


def record_struct(f: Filter, decoder, version, name=None):
    from pyspark.sql import functions as F

    name = f.name if name is None else name
    return F.struct(*envelope_columns(decoder, name, version), *_chosen(f))


def record_inputs(filters: list[Filter], decoder, columns: list[str]) -> list[str]:
    """Which of the view's ``columns`` the records of ``filters`` read (their fields and the
    envelope): what rows must carry to have their records written from them. A column is read
    when its name appears as an identifier in their SQL (any case, as Spark resolves it); an
    expression with ``*`` may read any."""
    text = " ".join(
        [*(sql for f in filters for sql in f.fields.values()), *envelope_paths(decoder)]
    )
    if "*" in text:
        return list(columns)
    return [
        c for c in columns if re.search(rf"(?<![\w.]){re.escape(c)}(?!\w)", text, re.IGNORECASE)
    ]


#: The Kafka row columns the envelope reads, typed for the analysis of sample alerts.
_META_TYPES = {
    "_topic": "string",
    "_partition": "int",
    "_offset": "bigint",
    "_timestamp": "timestamp",
}


def record_types(filters: list[Filter], decoder, versions: Mapping[str, str], alerts) -> dict:
    """{name: StructType} of each fields filter's record, from one analysis over ``alerts``
    (sample alerts in the view) of each distinct set of fields (a broker's users mostly choose
    among a few: ten thousand records of ten sets are ten); when that fails, field by field, so
    the error names the filter, its origin and the alias."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F

    fields = [f for f in filters if f.payload == contract.PAYLOAD_FIELDS]
    if not fields:
        return {}
    framed = alerts.select("*", *[F.lit(None).cast(t).alias(m) for m, t in _META_TYPES.items()])
    distinct = {}  # the envelope's types are the same for every filter
    for f in fields:
        distinct.setdefault(tuple(f.fields.items()), f)
    try:
        schema = framed.select(
            *[
                record_struct(f, decoder, versions[f.name]).alias(f"_{i}")
                for i, f in enumerate(distinct.values())
            ]
        ).schema
        types = {key: schema[f"_{i}"].dataType for i, key in enumerate(distinct)}
        return {f.name: types[tuple(f.fields.items())] for f in fields}
    except (AnalysisException, ParseException):
        pass
    for f in fields:
        for alias, sql in f.fields.items():
            with named(f, f"fields[{alias!r}]", decoder.view):
                framed.select(F.expr(sql))
    raise FilterError(
        f"the fields of filters {[f.name for f in fields]} compile one by one but not together"
    )


def payloads(
    filters: list[Filter], types: Mapping[str, object], topic_of, store
) -> dict[str, FieldsPayload]:
    """{name: FieldsPayload} of the fields filters; Avro schemas registered in ``store`` under
    ``<topic>-value`` (``topic_of(filter)``), as a Confluent producer would."""
    from alertsieve.alerts.schemas import frame

    out = {}
    for f in filters:
        if f.payload != contract.PAYLOAD_FIELDS:
            continue
        if f.format == contract.FORMAT_JSON:
            out[f.name] = FieldsPayload()
            continue
        try:
            schema = avro_schema(types[f.name], f"{NAMESPACE}.{_avro_name(f.name)}")
        except FilterError as e:
            raise FilterError(f"filter {f.name!r} ({f.origin}): {e}", filter=f.name) from None
        registered = store.register(schema, f"{topic_of(f)}-value")
        out[f.name] = FieldsPayload(schema, frame(registered.schema_id, b""))
    return out


def record_column(f: Filter, decoder, version, payload: FieldsPayload, name=None, header=None):
    """The record's bytes: Confluent-framed Avro, or JSON. With ``name``, ``version`` and
    ``header`` as columns, the records of every filter of ``f``'s fields (the same Avro bytes
    after each one's header)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    record = record_struct(f, decoder, version, name)
    if f.format == contract.FORMAT_JSON:
        return F.to_json(record, {"ignoreNullFields": "false"}).cast(
            "binary"
        )  # every key, null or not
    framing = F.lit(payload.header) if header is None else header
    return F.concat(framing, to_avro(record, json.dumps(payload.avro_schema)))


# --- Spark types -> Avro -----------------------------------------------------------------------

_PRIMITIVES = {
    "string": "string",
    "boolean": "boolean",
    "integer": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "binary": "bytes",
    "short": "int",
    "byte": "int",
}


def avro_schema(struct, name: str) -> dict:
    """The Avro record schema of a Spark struct: a nullable field is ``["null", T]`` with a null
    default, nested records are named after their path so names never clash."""
    return _record(struct, name)


def _nullable(avro, nullable: bool):
    return ["null", avro] if nullable else avro


def _record(struct, name: str) -> dict:
    short = name.rsplit(".", 1)
    fields = []
    for f in struct.fields:
        field = {
            "name": f.name,
            "type": _nullable(_avro_type(f.dataType, f"{name}_{f.name}"), f.nullable),
        }
        fields.append({**field, "default": None} if f.nullable else field)
    record = {"type": "record", "name": short[-1], "fields": fields}
    if len(short) == 2:
        record["namespace"] = short[0]
    return record


def _avro_type(dtype, name: str):
    from pyspark.sql import types as T

    if isinstance(dtype, T.StructType):
        return _record(dtype, name)
    if isinstance(dtype, T.ArrayType):
        return {
            "type": "array",
            "items": _nullable(_avro_type(dtype.elementType, f"{name}_item"), dtype.containsNull),
        }
    if isinstance(dtype, T.MapType) and isinstance(dtype.keyType, T.StringType):
        item = _avro_type(dtype.valueType, f"{name}_value")
        return {"type": "map", "values": _nullable(item, dtype.valueContainsNull)}
    if isinstance(dtype, T.TimestampType):
        return {"type": "long", "logicalType": "timestamp-micros"}
    if isinstance(dtype, T.DateType):
        return {"type": "int", "logicalType": "date"}
    if dtype.typeName() in _PRIMITIVES:
        return _PRIMITIVES[dtype.typeName()]
    raise FilterError(
        f"a field of type {dtype.simpleString()} cannot be written as Avro; cast it"
        " (e.g. to double or string), or use format: json"
    )


def _avro_name(name: str) -> str:
    """A filter name as an Avro name (filter names may hold '-')."""
    return re.sub(r"\W", "_", name)
