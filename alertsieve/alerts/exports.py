"""A survey's alerts inside a broker's export, told by content and made official again.

Brokers hand past nights out as Spark-written Avro or Parquet: the alert record renamed
(``topLevelRecord``) or wrapped in a column (``value``), its unions reordered, integers stored as
doubles and all-null fields typed null (as pandas and Spark write them), ZTF's ``candid`` kept only
inside ``candidate``, and the broker's own columns (scores, crossmatches, maps) beside the survey's.
This module is the pure part of reading them: from the *shape* of a file (its field names, nested)
it tells the survey and the version (:func:`plan_export`), and it turns each record into exactly
the record the survey's official schema describes (:func:`conform`), failing with the field and
the value wherever that would lose information. No I/O here: ``export_files`` reads, Spark or
Python, and both use these.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import fastavro

from alertsieve.alerts.schemas import AlertSchema, frame, load_rubin_schema, rubin_versions
from alertsieve.alerts.ztf import one_alert_container, shipped_ztf_schemas
from alertsieve.errors import AlertsieveError

#: A file's fields by name: a record's (or an array of records') own shape, or None for a value.
Shape = dict[str, "Shape | None"]

Survey = Literal["rubin", "ztf"]

#: Columns a broker writes the survey's version in (Fink: ``lsst_schema_version`` = 'lsst.v10_0').
VERSION_COLUMNS = ("lsst_schema_version", "schema_version")

#: What makes a record a ZTF alert: these at the top and in ``candidate`` (every ZTF version).
ZTF_TOP = ("objectId", "candidate")
ZTF_CANDIDATE = ("jd", "fid", "magpsf", "sigmapsf", "isdiffpos", "candid")
#: What makes it a Rubin alert: the detection's time in ``diaSource`` (v5.0 on).
RUBIN_SOURCE = ("midpointMjdTai", "diaSourceId")

INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
EXACT_DOUBLE_INT = 2**53  # a double holds every integer up to this exactly, not all above


class ExportError(AlertsieveError, ValueError):
    """An export whose records are no survey's alerts, or a value its official type cannot hold
    without losing information."""


# --- which survey, which version ------------------------------------------------------------


@dataclass(frozen=True)
class ExportPlan:
    """How the records of one export (of one version) become official alerts."""

    survey: Survey
    version: str  # '10.0' (Rubin), '3.3' (ZTF)
    schema: AlertSchema  # the official schema the records are made to (Rubin: its id frames them)
    how: str  # how the version was told, for the one line that says it
    wrapper: str | None = None  # the column the alert is inside (Spark's ``topLevelRecord.value``)
    ignored: tuple[str, ...] = ()  # the export's fields the survey's schema lacks
    missing: tuple[str, ...] = ()  # official fields the export lacks (written as their default)
    schema_json: bytes = field(default=b"", compare=False)  # ZTF: the header every message holds

    def describe(self, source: str) -> str:
        """The one line a reader is told about ``source``."""
        line = f"{source}: {self.survey} alerts, schema {self.version} ({self.how})"
        if self.wrapper:
            line += f", inside column {self.wrapper!r}"
        if self.ignored:
            shown = ", ".join(self.ignored[:8]) + (", ..." if len(self.ignored) > 8 else "")
            line += f"; ignored {len(self.ignored)} columns the survey's schema lacks: {shown}"
        if self.missing:
            line += f"; {len(self.missing)} official fields absent, written as null"
        return line


def shape_of_avro(definition: dict) -> Shape:
    """The shape of an Avro record schema (named types expanded, unions looked through)."""

    def of(avro_type: Any) -> Shape | None:
        if isinstance(avro_type, list):
            shapes = [of(t) for t in avro_type if t != "null"]
            return next((s for s in shapes if s is not None), None)
        if isinstance(avro_type, dict):
            if avro_type["type"] == "record":
                return {f["name"]: of(f["type"]) for f in avro_type["fields"]}
            if avro_type["type"] == "array":
                return of(avro_type["items"])
        return None

    return of(fastavro.schema.expand_schema(definition)) or {}


def shape_of_arrow(schema) -> Shape:
    """The shape of a pyarrow schema (struct, list of struct)."""
    import pyarrow as pa

    def of(t) -> Shape | None:
        if pa.types.is_struct(t):
            return {t.field(i).name: of(t.field(i).type) for i in range(t.num_fields)}
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return of(t.value_type)
        return None

    return {f.name: of(f.type) for f in schema}


def shape_of_spark(schema) -> Shape:
    """The shape of a Spark StructType (struct, array of struct)."""
    from pyspark.sql.types import ArrayType, StructType

    def of(t) -> Shape | None:
        if isinstance(t, StructType):
            return {f.name: of(f.dataType) for f in t.fields}
        if isinstance(t, ArrayType):
            return of(t.elementType)
        return None

    return of(schema) or {}


def _is_ztf(shape: Shape) -> bool:
    candidate = shape.get("candidate") or {}
    return set(ZTF_TOP) <= shape.keys() and set(ZTF_CANDIDATE) <= candidate.keys()


def _is_rubin(shape: Shape) -> bool:
    return set(RUBIN_SOURCE) <= (shape.get("diaSource") or {}).keys()


def find_alert(shape: Shape, source: str) -> tuple[Survey, Shape, str | None]:
    """The survey, the alert's own shape and the column wrapping it (if one does)."""
    for wrapper, inner in [(None, shape), *((k, v) for k, v in shape.items() if v)]:
        if _is_ztf(inner):
            return "ztf", inner, wrapper
        if _is_rubin(inner):
            return "rubin", inner, wrapper
    ztf = f"{', '.join(ZTF_TOP)}{{{', '.join(ZTF_CANDIDATE)}}}"
    raise ExportError(
        f"{source}: neither ZTF alerts (fields {ztf}) nor Rubin alerts (fields"
        f" diaSource{{{', '.join(RUBIN_SOURCE)}}}), at the top or inside one column; its fields:"
        f" {', '.join(shape) or 'none'}"
    )


def _paths(shape: Shape | None, prefix: str = "") -> set[str]:
    """Every field's dotted path."""
    out: set[str] = set()
    for name, inner in (shape or {}).items():
        out.add(prefix + name)
        out |= _paths(inner, f"{prefix}{name}.")
    return out


def _at(shape: Shape, path: str) -> Shape | None:
    """The shape at a dotted path (None for a value, a null-typed field or an absent one)."""
    for name in path.split("."):
        shape = (shape or {}).get(name)
    return shape


def version_hint(text: str | None) -> str | None:
    """'10.0' from what a broker writes ('lsst.v10_0', 'lsst.v10_0.alert', 'v10.0', '10.0')."""
    import re

    if not text:
        return None
    m = re.search(r"v?(\d+)[._](\d+)", str(text))
    return f"{m[1]}.{m[2]}" if m else None


def _closest_version(alert: Shape, source: str) -> tuple[str, str]:
    """The official Rubin version whose fields the record's match best: fewest official fields
    absent, then fewest of the record's survey fields the version lacks, then the newest."""
    have = _paths(alert)
    scored = []
    for version in rubin_versions():
        official = _paths(shape_of_avro(load_rubin_schema(version).definition))
        top = {p.split(".")[0] for p in official}
        extra = {p for p in have if p.split(".")[0] in top} - official
        scored.append((len(official - have), len(extra), _version_key(version), version))
    best = min(scored, key=lambda s: (s[0], s[1], tuple(-x for x in s[2])))
    return best[3], f"the official version whose fields it has ({best[0]} absent)"


def _version_key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


@cache
def ztf_schemas() -> dict[str, tuple[dict, bytes]]:
    """The ZTF schemas alertsieve ships: version -> (definition, JSON as ZTF's headers hold it)."""
    out = {}
    for text in shipped_ztf_schemas():
        definition = json.loads(text)
        out[str(definition.get("version"))] = (definition, text)
    return out


def plan_export(shape: Shape, source: str, hint: str | None = None) -> ExportPlan:
    """How records of ``shape`` become official alerts. ``hint``: a version the file states (its
    record's name, a version column's value); otherwise Rubin's is told by the fields."""
    survey, alert, wrapper = find_alert(shape, source)
    version = version_hint(hint)
    if survey == "ztf":
        shipped = ztf_schemas()
        newest = max(shipped, key=_version_key)
        if version in shipped:
            how = "its schemavsn"
        else:
            how = f"the newest ZTF schema alertsieve ships; the export states {hint or 'none'}"
            version = newest
        definition, text = shipped[version]
        schema = AlertSchema(0, f"ztf {version}", definition)
    else:
        if version in rubin_versions():
            how = f"stated by the file: {hint}"
        else:
            version, how = _closest_version(alert, source)
        schema = load_rubin_schema(version)
        text = b""
    official = shape_of_avro(schema.definition)
    have, want = _paths(alert), _paths(official)
    ignored = sorted(p for p in have - want if "." not in p or p.rsplit(".", 1)[0] in want)
    records = {"", *(p for p in have if _at(alert, p))}  # what the export holds as records
    missing = tuple(
        p
        for p in sorted(want - have)
        if (p.rsplit(".", 1)[0] if "." in p else "") in records
        and not (survey == "ztf" and p == "candid" and "candidate.candid" in have)
    )
    return ExportPlan(
        survey, version, schema, how, wrapper, tuple(ignored), missing, schema_json=text
    )


# --- one record made official ---------------------------------------------------------------


@cache
def _expanded(schema: AlertSchema) -> dict:
    return fastavro.schema.expand_schema(schema.definition)


def conform(record: dict, plan: ExportPlan) -> dict:
    """``record`` (as read from the export: a dict, nested dicts and lists) as the official
    schema's record: its fields only, each of its official type. Raises ``ExportError`` naming the
    field and the value where the official type cannot hold the value exactly."""
    if plan.wrapper:
        record = record[plan.wrapper]
    if plan.survey == "ztf" and record.get("candid") is None:
        record = {**record, "candid": (record.get("candidate") or {}).get("candid")}
    if plan.survey == "rubin":
        record = _exact_ids(record)
    return _value(record, _expanded(plan.schema), "")


#: Ids a Rubin alert holds twice, by its schema's definition: (a copy an export may have stored
#: as a double, the field holding the same id).
RUBIN_SAME_IDS = (
    (("diaSourceId",), ("diaSource", "diaSourceId")),
    (("diaObject", "diaObjectId"), ("diaSource", "diaObjectId")),
    (("ssSource", "diaSourceId"), ("diaSource", "diaSourceId")),
)


def _exact_ids(record: dict) -> dict:
    """Ids above 2**53 stored as doubles are no longer exact (a double cannot hold them); where
    the alert holds the same id as an integer too, that one is the id (when the double is it,
    rounded). Other doubles for integers are refused above 2**53 (``_primitive``)."""
    record = dict(record)
    for copy, (exact_in, exact_name) in RUBIN_SAME_IDS:
        exact = (record.get(exact_in) or {}).get(exact_name)
        holder = record if len(copy) == 1 else record.get(copy[0])
        if not isinstance(holder, dict) or not isinstance(holder.get(copy[-1]), float):
            continue
        if isinstance(exact, int) and float(exact) == holder[copy[-1]]:
            if len(copy) == 1:
                record[copy[0]] = exact
            else:
                record[copy[0]] = {**holder, copy[-1]: exact}
    return record


class _Missing:
    pass


MISSING = _Missing()


def _value(value: Any, avro_type: Any, path: str) -> Any:
    if isinstance(avro_type, list):
        nullable = "null" in avro_type
        if value is None or value is MISSING or _is_nan(value) and nullable and _numeric(avro_type):
            if nullable:
                return None
            raise ExportError(f"{path}: null, but its official type {avro_type} is not nullable")
        branches = [t for t in avro_type if t != "null"]
        errors = []
        for branch in branches:
            try:
                return _value(value, branch, path)
            except ExportError as e:
                errors.append(e)
        raise errors[0]
    if value is None or value is MISSING:
        raise ExportError(f"{path}: null, but its official type {_name(avro_type)} is not nullable")
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "record":
            return _record(value, avro_type, path)
        if kind == "array":
            return [_value(v, avro_type["items"], f"{path}[{i}]") for i, v in enumerate(value)]
        if kind == "map":
            pairs = value.items() if isinstance(value, dict) else value
            return {str(k): _value(v, avro_type["values"], f"{path}[{k!r}]") for k, v in pairs}
        if kind == "enum":
            if value not in avro_type["symbols"]:
                raise ExportError(f"{path}: {value!r} is not one of {avro_type['symbols']}")
            return value
        if kind == "fixed":
            return bytes(value)
        return _value(value, kind, path)  # {"type": "long", "logicalType": ...}
    return _primitive(value, avro_type, path)


def _record(value: Any, avro_type: dict, path: str) -> dict:
    if not isinstance(value, dict):
        raise ExportError(f"{path or 'the alert'}: {value!r} is not a record")
    out = {}
    for f in avro_type["fields"]:
        name = f["name"]
        given = value.get(name, MISSING)
        if given is MISSING and "default" in f:
            out[name] = f["default"]
        else:
            out[name] = _value(given, f["type"], f"{path}.{name}" if path else name)
    return out


def _primitive(value: Any, avro_type: str, path: str) -> Any:
    if avro_type in INT_RANGES:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float):
            if not value.is_integer():
                raise ExportError(
                    f"{path}: {value!r} is not an integer (official type {avro_type})"
                )
            value = int(value)
        low, high = INT_RANGES[avro_type]
        if not isinstance(value, int) or not low <= value <= high:
            raise ExportError(f"{path}: {value!r} does not fit the official type {avro_type}")
        return value
    if avro_type == "float":
        as_float = _float32(value, path)
        if not (math.isnan(as_float) or as_float == float(value)):
            raise ExportError(
                f"{path}: {value!r} is no 32-bit float (official type float); it would become"
                f" {as_float!r}"
            )
        return as_float
    if avro_type == "double":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExportError(f"{path}: {value!r} is not a number (official type double)")
        return float(value)
    if avro_type == "boolean":
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise ExportError(f"{path}: {value!r} is not a boolean")
    if avro_type == "string":
        if not isinstance(value, str):
            raise ExportError(f"{path}: {value!r} is not a string")
        return value
    if avro_type == "bytes":
        if not isinstance(value, bytes | bytearray | memoryview):
            raise ExportError(f"{path}: {value!r} is not bytes")
        return bytes(value)
    raise ExportError(f"{path}: official type {avro_type!r} is not read from exports")


def _float32(value: Any, path: str) -> float:
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExportError(f"{path}: {value!r} is not a number (official type float)")
    return float(np.float32(value))


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _numeric(union: list) -> bool:
    return any(t in ("int", "long") for t in union)


def _name(avro_type: Any) -> str:
    return (
        avro_type.get("name", avro_type["type"]) if isinstance(avro_type, dict) else str(avro_type)
    )


# --- the wire format ---------------------------------------------------------------------


def encode(record: dict, plan: ExportPlan, schema_id: int | None = None) -> bytes:
    """An official record as its survey sends it: Rubin framed with ``schema_id`` (its official id
    unless a registry gave another), ZTF a one-alert container of the official schema."""
    if plan.survey == "ztf":
        import io

        out = io.BytesIO()
        fastavro.schemaless_writer(out, plan.schema.parsed, record)
        return one_alert_container(plan.schema_json, out.getvalue())
    return frame(
        plan.schema.schema_id if schema_id is None else schema_id, plan.schema.encode(record)
    )
