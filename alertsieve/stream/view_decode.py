"""Decode a topic that mixes Rubin schema versions into one filter view, reading only what is used.

Each writer version is read with its own schema (Rubin's major versions are not compatible with one
another), pruned to the view paths the job needs: Avro skips every other field, cutouts included.
Each version's struct is then projected into the view (types widened, fields the version lacks
null), so a CASE on the schema id yields one column of one type whatever the version.

Paths are the view's (``alertsieve.alerts.view``): ``diaSource.snr``, ``prvDiaSources[].psfFlux``.
"""

from __future__ import annotations

import json
from typing import Any

from alertsieve.alerts.schemas import AlertSchema
from alertsieve.alerts.view import PRIMITIVES, ViewField

SPARK_TYPES = {"boolean": "boolean", "int": "int", "long": "bigint", "float": "float",
               "double": "double", "bytes": "binary", "string": "string"}  # fmt: skip


def tree(paths: list[str]) -> dict[str, Any]:
    """Nested dict of path steps: ``{"diaSource": {"snr": {}}, "prvDiaSources[]": {...}}``."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for step in path.split("."):
            node = node.setdefault(step, {})
    return root


def pruned(definition: dict, wanted: dict[str, Any]) -> dict | None:
    """The writer schema cut down to the fields in ``wanted`` (a :func:`tree`), or None if it has
    none of them: a valid Avro reader schema for data written with ``definition``."""
    names: dict[str, Any] = {}
    made: list[str] = []

    def cut(node: Any, want: dict[str, Any]) -> Any:
        if isinstance(node, list):
            inner = [cut(b, want) for b in node]
            return None if any(b is None for b in inner) else inner
        if isinstance(node, str) and node not in PRIMITIVES:
            node = names[node]
        if isinstance(node, str):
            return node
        if node["type"] == "record":
            names[node["name"]] = node
            fields = []
            for f in node["fields"]:
                key = f["name"] + ("[]" if _is_array(f["type"], names) else "")
                if key in want:
                    kept = cut(f["type"], want[key])
                    if kept is not None:
                        fields.append({**{k: v for k, v in f.items() if k != "type"}, "type": kept})
            if not fields:
                return None
            # A fresh name per cut: one record (diaSource) may be cut two ways (the alert's own,
            # its history's); Avro resolves records by structure when names differ.
            made.append(node["name"])
            short = node["name"].rsplit(".", 1)[-1]
            return {"type": "record", "name": f"{short}_view{len(made)}", "fields": fields}
        if node["type"] == "array":
            items = cut(node["items"], want)
            return None if items is None else {"type": "array", "items": items}
        return node

    return cut(definition, wanted)


def _is_array(node: Any, names: dict[str, Any]) -> bool:
    if isinstance(node, list):
        return any(_is_array(b, names) for b in node if b != "null")
    if isinstance(node, str):
        return isinstance(names.get(node), dict) and names[node].get("type") == "array"
    return node.get("type") == "array"


def view_type(view: list[ViewField], paths: list[str]) -> str:
    """The Spark DDL type of the view restricted to ``paths``."""
    return _struct_type(tree(paths), "", {f.path: f for f in view})


def _struct_type(node: dict[str, Any], prefix: str, by_path: dict[str, ViewField]) -> str:
    parts = [f"`{step.removesuffix('[]')}`: {_step_type(step, child, prefix, by_path)}"
             for step, child in node.items()]  # fmt: skip
    return f"struct<{', '.join(parts)}>"


def _step_type(step: str, child: dict[str, Any], prefix: str, by_path: dict[str, ViewField]) -> str:
    path = f"{prefix}.{step}" if prefix else step
    if not child:
        return SPARK_TYPES[by_path[path].type]
    inner = _struct_type(child, path, by_path)
    return f"array<{inner}>" if step.endswith("[]") else inner


def projected(decoded, present: dict[str, Any], wanted: dict[str, Any],
              by_path: dict[str, ViewField], prefix: str = ""):  # fmt: skip
    """Spark expression: the struct ``decoded`` (read with a pruned schema whose tree is
    ``present``) as the view's struct for ``wanted``: leaves cast to the view's type, what the
    version lacks a typed null, a null record or array kept null."""
    from pyspark.sql import functions as F

    fields = []
    for step, child in wanted.items():
        name = step.removesuffix("[]")
        path = f"{prefix}.{step}" if prefix else step
        if step not in present:
            expr = F.lit(None).cast(_step_type(step, child, prefix, by_path))
        elif not child:
            expr = decoded[name].cast(SPARK_TYPES[by_path[path].type])
        elif step.endswith("[]"):
            expr = F.transform(decoded[name], _element(present[step], child, by_path, path))
        else:
            inner = projected(decoded[name], present[step], child, by_path, path)
            expr = F.when(decoded[name].isNotNull(), inner)
        fields.append(expr.alias(name))
    return F.struct(*fields)


def _element(present: dict[str, Any], wanted: dict[str, Any], by_path: dict[str, ViewField], path: str):
    """The one-argument function Spark's ``transform`` maps over an array of records."""
    return lambda item: projected(item, present, wanted, by_path, path)


def present_tree(definition: dict) -> dict[str, Any]:
    """The tree of paths a (pruned) schema holds."""
    from alertsieve.alerts.view import leaves

    return tree(list(leaves(definition)))


def decode_view(raw, writers: dict[int, AlertSchema], view: list[ViewField], paths: list[str]):
    """``raw`` Kafka rows in Confluent framing -> the same rows with ``_schema_id`` and ``alert``
    (the view struct for ``paths``; null when the id is not one of ``writers`` or the body does
    not decode).

    Two projections on purpose: the first decodes each row once, with its own version's pruned
    schema, into a column per version (null for the other versions' rows); the second reads those
    columns as often as the view needs. In one projection, every field reference would carry its
    own copy of ``from_avro``."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from alertsieve.stream.decode import framed

    wanted = tree(paths)
    by_path = {f.path: f for f in view}
    value = F.col("value")
    size = F.coalesce(F.length(value), F.lit(0))
    schema_id = F.when(size >= 5, F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long"))
    readers = {sid: pruned(w.definition, wanted) for sid, w in writers.items()}
    decoded = [
        F.when(F.col("_schema_id") == sid, from_avro(
            value, json.dumps(framed(writers[sid].definition)),
            {"mode": "PERMISSIVE", "avroSchema": json.dumps(reader)},
        )).alias(f"_version_{sid}")
        for sid, reader in readers.items() if reader is not None
    ]  # fmt: skip
    step = raw.withColumn("_schema_id", schema_id).select("*", *decoded)
    struct = view_type(view, paths)
    alert = F.lit(None).cast(struct)
    for sid, reader in readers.items():
        if reader is not None:  # a version with none of the fields stays all null
            column = F.col(f"_version_{sid}")
            alert = F.when(column.isNotNull(), projected(column, present_tree(reader), wanted, by_path)).otherwise(alert)
    return step.select(*raw.columns, "_schema_id", alert.alias("alert"))
