"""One record of a broker's export made exactly the record its survey's official schema
describes (the plan from ``alertsieve.alerts.exports`` says which schema), and encoded as the
survey sends it. Pure: dicts in, dicts and bytes out.

Every field is converted to its official type, or refused with an ``ExportError`` naming the field
and the value where that would lose information: a fraction for an integer, a double that is no
32-bit float, an integer above 2**53 stored as a double (the export rounded it). Where the alert
holds the same id exactly elsewhere (``diaSource.diaObjectId`` is ``diaObject``'s), that one is
taken. Fields the export lacks take their official default (null); a null where the official type
is not nullable is refused. A record whose every field is null, where the official field is a
nullable record, is the record absent: Spark writes an absent nullable struct (Rubin's
``ssSource``) that way when a broker builds it field by field.
"""

from __future__ import annotations

import io
import math
from functools import cache
from typing import Any

import fastavro

from alertsieve.alerts.exports import ExportError, ExportPlan
from alertsieve.alerts.schemas import AlertSchema, frame
from alertsieve.alerts.ztf import one_alert_container

INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
EXACT_DOUBLE_INT = 2**53  # a double holds every integer up to this exactly, not all above


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
        if nullable and _all_null(value) and any(_is_record(t) for t in avro_type):
            return None
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


def _all_null(value: Any) -> bool:
    """A record (a dict) whose every field, in nested records too, is null."""
    return isinstance(value, dict) and all(v is None or _all_null(v) for v in value.values())


def _is_record(avro_type: Any) -> bool:
    return isinstance(avro_type, dict) and avro_type.get("type") == "record"


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _numeric(union: list) -> bool:
    return any(t in ("int", "long") for t in union)


def _name(avro_type: Any) -> str:
    return (
        avro_type.get("name", avro_type["type"]) if isinstance(avro_type, dict) else str(avro_type)
    )


def encode(record: dict, plan: ExportPlan, schema_id: int | None = None) -> bytes:
    """An official record as its survey sends it: Rubin framed with ``schema_id`` (its official id
    unless a registry gave another), ZTF a one-alert container of the official schema."""
    if plan.survey == "ztf":
        out = io.BytesIO()
        fastavro.schemaless_writer(out, plan.schema.parsed, record)
        return one_alert_container(plan.schema_json, out.getvalue())
    return frame(
        plan.schema.schema_id if schema_id is None else schema_id, plan.schema.encode(record)
    )
