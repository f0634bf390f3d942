"""Decode messages of several writer schemas into one filter view, reading only what is used.

Each writer version is read with its own schema (Rubin's major versions are not compatible with one
another), pruned to the view paths the job needs: Avro skips every other field, cutouts included.
Each version's struct is then projected into the view (types widened, fields the version lacks
null), so a CASE on the writer (schema id, or ZTF's schema fingerprint) yields one column of one
type whatever the version.

Paths are the view's (``alertsieve.alerts.view``): ``diaSource.snr``, ``prvDiaSources[].psfFlux``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
    made = 0

    def cut(node: Any, want: dict[str, Any]) -> Any:
        nonlocal made
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
                key = f["name"] + ("[]" if _is_array(f["type"]) else "")
                if key in want:
                    kept = cut(f["type"], want[key])
                    if kept is not None:
                        fields.append({**{k: v for k, v in f.items() if k != "type"}, "type": kept})
            if not fields:
                return None
            # A fresh name per cut: one record (diaSource) may be cut two ways (the alert's own,
            # its history's); Avro resolves records by structure when names differ.
            made += 1
            short = node["name"].rsplit(".", 1)[-1]
            return {"type": "record", "name": f"{short}_view{made}", "fields": fields}
        if node["type"] == "array":
            items = cut(node["items"], want)
            return None if items is None else {"type": "array", "items": items}
        # A logical type (timestamp-micros) read as its plain type: Spark would make it a
        # timestamp, the view (like the schemas' docs) counts it as the long it is.
        return node["type"]

    return cut(definition, wanted)


def _is_array(node: Any) -> bool:
    """Arrays are never named in Avro, so a field is one only by its (union's) inline type."""
    if isinstance(node, list):
        return any(_is_array(b) for b in node if b != "null")
    return isinstance(node, dict) and node.get("type") == "array"


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


def version_columns(key: str, writers: Mapping[Any, dict], view: list[ViewField], paths: list[str]):
    """(decoders, alert): a column per writer (keyed by the column ``key``) reading the Kafka
    ``value`` with that writer's schema pruned to ``paths`` (null on other writers' rows), and
    the view struct built from whichever is not null (null when none is: an unknown key or an
    undecodable body).

    Select the decoders in one projection and the alert in the next, on purpose: in one
    projection, every field reference would carry its own copy of ``from_avro``. Built once per
    set of paths: for the whole view that is thousands of Py4J calls."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    wanted = tree(paths)
    by_path = {f.path: f for f in view}
    readers = {k: pruned(w, wanted) for k, w in writers.items()}
    columns = {k: f"_version_{i}" for i, k in enumerate(readers) if readers[k] is not None}
    decoders = [
        F.when(F.col(key) == F.lit(k), from_avro(
            F.col("value"), json.dumps(writers[k]),
            {"mode": "PERMISSIVE", "avroSchema": json.dumps(readers[k])},
        )).alias(name)
        for k, name in columns.items()
    ]  # fmt: skip
    alert = F.lit(None).cast(view_type(view, paths))
    for k, name in columns.items():  # a version with none of the fields stays all null
        version = F.col(name)
        alert = F.when(version.isNotNull(), projected(version, present_tree(readers[k]), wanted, by_path)).otherwise(alert)
    return decoders, alert
