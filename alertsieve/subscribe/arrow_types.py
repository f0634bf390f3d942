"""Arrow types for records whose shape varies: alerts of several Rubin schema versions, ZTF
alerts and fields records in one table.

pyarrow's own inference takes a column's type from what it sees and gives up (or truncates) when
rows disagree: a field null in one alert and a float in another, an int here and a double there,
an empty list beside a list of structs, a struct with a field only the newer version has. Here each
value's type is inferred, then the types of a column are *unified*: null gives way to anything,
ints widen to doubles, structs take the union of their fields, lists unify their items; what
cannot be unified (a string beside a number) becomes a string holding JSON. :func:`conform` does
the same on Arrow arrays, so tables written at different times (Parquet parts) join into one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from alertsieve.subscribe.rows import jsonable

STRING = pa.string()
BINARY = pa.large_binary()  # FITS cutouts: a column of many 50-150 KB values outgrows int32 offsets


def infer(value: Any) -> pa.DataType:
    """The Arrow type of one Python value as decoded from Avro or JSON."""
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64() if -(1 << 63) <= value < (1 << 63) else STRING
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return BINARY
    if isinstance(value, dt.datetime):
        return pa.timestamp("us", tz="UTC" if value.tzinfo else None)
    if isinstance(value, dt.date):
        return pa.date32()
    if isinstance(value, dict):
        if not value:
            return pa.null()  # Parquet cannot store a struct without fields
        return pa.struct([pa.field(str(k), infer(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        item = pa.null()
        for v in value:
            item = unify(item, infer(v))
        return pa.list_(item)
    return STRING  # Decimal, UUID...: their text


_AVRO_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": BINARY,
    "string": STRING,
}
_AVRO_LOGICAL = {
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "uuid": STRING,
    "decimal": STRING,
}


def avro_type(
    schema: Any, names: dict[str, pa.DataType] | None = None, namespace: str = ""
) -> pa.DataType:
    """The Arrow type of values fastavro decodes with Avro ``schema``: exact where values alone
    are not (a field null in every alert read so far still gets its type). Unions of several
    types are unified; named types are resolved as Avro resolves them."""
    names = {} if names is None else names
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[schema]
        return names.get(schema) or names.get(f"{namespace}.{schema}") or STRING
    if isinstance(schema, list):
        return unify_all(avro_type(branch, names, namespace) for branch in schema)
    if not isinstance(schema, dict):
        return STRING
    kind = schema.get("type")
    if schema.get("logicalType") in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[schema["logicalType"]]
    if kind == "record" or kind == "error":
        name = schema.get("name", "")
        space = schema.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
        fields = [
            pa.field(f["name"], avro_type(f["type"], names, space))
            for f in schema.get("fields", [])
        ]
        t = pa.struct(fields) if fields else pa.null()
    elif kind == "array":
        return pa.list_(avro_type(schema["items"], names, namespace))
    elif kind == "map":
        return pa.map_(STRING, avro_type(schema["values"], names, namespace))
    elif kind == "enum":
        t = STRING
    elif kind == "fixed":
        t = BINARY
    else:
        return avro_type(kind, names, namespace)
    name = schema.get("name", "")
    space = schema.get("namespace", namespace)
    names[name] = t
    if space and "." not in name:
        names[f"{space}.{name}"] = t
    return t


_record_types: dict[int, tuple[dict, dict[str, pa.DataType]]] = {}


def record_types(definition: dict) -> dict[str, pa.DataType]:
    """The Arrow type of each top-level field of Avro record ``definition`` (cached per schema
    object: a store hands out the same definition for every alert of a version)."""
    cached = _record_types.get(id(definition))
    if cached is not None and cached[0] is definition:
        return cached[1]
    t = avro_type(definition)
    types = {f.name: f.type for f in t} if pa.types.is_struct(t) else {}
    if len(_record_types) > 256:
        _record_types.clear()
    _record_types[id(definition)] = (definition, types)
    return types


def unify(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The narrowest type holding values of both ``a`` and ``b`` (see the module doc)."""
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if _numeric(a) and _numeric(b):
        if pa.types.is_integer(a) and pa.types.is_integer(b):
            return pa.int64()
        return pa.float64()
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {f.name: f.type for f in a}
        for f in b:
            fields[f.name] = unify(fields[f.name], f.type) if f.name in fields else f.type
        return pa.struct([pa.field(name, t) for name, t in fields.items()])
    if _listlike(a) and _listlike(b):
        item = unify(a.value_type, b.value_type)
        large = pa.types.is_large_list(a) or pa.types.is_large_list(b)
        return pa.large_list(item) if large else pa.list_(item)
    if _binary(a) and _binary(b):
        return BINARY
    if _string(a) and _string(b):
        return STRING
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return pa.timestamp("us", tz=a.tz or b.tz)
    return STRING


def unify_all(types: Iterable[pa.DataType]) -> pa.DataType:
    out = pa.null()
    for t in types:
        out = unify(out, t)
    return out


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _listlike(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def coerce(value: Any, t: pa.DataType) -> Any:
    """``value`` reshaped for ``t`` (a unified type): what pyarrow cannot convert by itself."""
    if value is None or pa.types.is_null(t):
        return None
    if _string(t):
        if isinstance(value, str):
            return value
        if isinstance(value, dict | list | tuple | bytes | bytearray | bool | float):
            return json.dumps(jsonable(value), allow_nan=False)
        return str(value)  # int, Decimal, UUID, dates: their text
    if pa.types.is_floating(t):
        return float(value)
    if pa.types.is_integer(t):
        return int(value)
    if pa.types.is_struct(t):
        if not isinstance(value, dict):
            return None
        return {f.name: coerce(value.get(f.name), f.type) for f in t}
    if _listlike(t):
        return [coerce(v, t.value_type) for v in value]
    if _binary(t):
        return bytes(value)
    return value


def to_array(values: list[Any], t: pa.DataType) -> pa.Array:
    """An Arrow array of ``values`` typed ``t``: pyarrow converts directly when it can (fast),
    else the values are coerced first."""
    if pa.types.is_null(t):
        return pa.nulls(len(values))
    try:
        if not _has_string_fallback(t):
            return pa.array(values, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        pass
    return pa.array([coerce(v, t) for v in values], type=t)


def _has_string_fallback(t: pa.DataType) -> bool:
    """Whether ``t`` holds a string anywhere: a unified string may hold numbers or structs that
    pyarrow would refuse or, worse, turn into their repr, so such columns are always coerced."""
    if _string(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_string_fallback(f.type) for f in t)
    if _listlike(t):
        return _has_string_fallback(t.value_type)
    return False


def conform(array: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    """``array`` as type ``t`` (a unification of its type with others): missing struct fields
    null, numbers widened, the rest through Python (:func:`coerce`)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], type=array.type)
    if array.type == t:
        return array
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), t)
    if pa.types.is_struct(t) and pa.types.is_struct(array.type):
        children = dict(zip([f.name for f in array.type], array.flatten(), strict=True))
        arrays = [
            conform(children[f.name], f.type)
            if f.name in children
            else pa.nulls(len(array), f.type)
            for f in t
        ]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(arrays, fields=list(t), mask=mask)
    if _listlike(t) and _listlike(array.type):
        offsets = pc.subtract(array.offsets, array.offsets[0])
        values = conform(array.flatten(), t.value_type)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        offsets = offsets.cast(pa.int64() if cls is pa.LargeListArray else pa.int32())
        mask = array.is_null() if array.null_count else None
        return cls.from_arrays(offsets, values, type=t, mask=mask)
    if (_numeric(t) and _numeric(array.type)) or (_binary(t) and _binary(array.type)):
        return array.cast(t)
    return pa.array([coerce(v, t) for v in array.to_pylist()], type=t)


def table_of(
    rows: list[dict],
    fixed: pa.Schema | None = None,
    known: list[dict[str, pa.DataType] | None] | None = None,
) -> pa.Table:
    """A table of ``rows`` (dicts, keys may differ): ``fixed`` columns first, typed as given,
    then every other key in first-seen order, typed by unifying its values' types: those
    ``known[i]`` gives for row i (from its Avro schema), else inferred from the values."""
    types: dict[str, pa.DataType] = {f.name: f.type for f in fixed} if fixed else {}
    inferred: dict[str, pa.DataType] = {}
    for i, row in enumerate(rows):
        given = known[i] if known else None
        for name, value in row.items():
            if name not in types:
                t = given[name] if given and name in given else infer(value)
                inferred[name] = unify(inferred.get(name, pa.null()), t)
    types.update(inferred)
    columns = {name: to_array([row.get(name) for row in rows], t) for name, t in types.items()}
    return pa.table(columns)


def unify_schemas(schemas: Iterable[pa.Schema]) -> pa.Schema:
    """One schema for tables written apart: columns in first-seen order, types unified."""
    types: dict[str, pa.DataType] = {}
    for schema in schemas:
        for f in schema:
            types[f.name] = unify(types.get(f.name, pa.null()), f.type)
    return pa.schema([pa.field(name, t) for name, t in types.items()])


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with every column of ``schema``, in its order and types (missing ones null)."""
    n = table.num_rows
    arrays = [
        conform(table.column(f.name), f.type)
        if f.name in table.column_names
        else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)
