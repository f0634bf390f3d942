"""Decode messages of several writer schemas into one filter view, reading only what is used.

Each writer version is read with its own schema (Rubin's major versions are not compatible with one
another) and resolved by Avro straight into one reader schema: the view restricted to the paths the
job needs, every field nullable with a null default. Avro resolution does the whole projection, and
it is valid here by construction: the view only widens numbers the way Avro promotes them (int to
long to float to double), a field a version lacks takes its default (null), and every field the
reader does not name (cutouts included) is skipped. So every version yields the same Spark type,
with no per-field projection after the decode, and a CASE on the writer (schema id, or ZTF's schema
fingerprint) picks the one decoder a row needs.

A record or array a version has is there even when the version has none of the fields asked of it
(its fields are then null): ``ssSource IS NOT NULL`` means what it says in every version.

Paths are the view's (``alertsieve.alerts.view``): ``diaSource.snr``, ``prvDiaSources[].psfFlux``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from alertsieve.alerts.view import ViewField

SPARK_TYPES = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "bytes": "binary",
    "string": "string",
}


def tree(paths: list[str]) -> dict[str, Any]:
    """Nested dict of path steps: ``{"diaSource": {"snr": {}}, "prvDiaSources[]": {...}}``."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for step in path.split("."):
            node = node.setdefault(step, {})
    return root


def view_reader(view: list[ViewField], paths: list[str]) -> dict:
    """The view restricted to ``paths`` as an Avro reader schema: fields in ``paths`` order, each
    ``["null", T]`` with default null, ``T`` the view's widened type (logical types read as the
    plain type they annotate, as the view counts them). Records are named after their path, so
    no two share a name; Avro resolves a writer's record against them by structure."""
    by_path = {f.path: f for f in view}

    def record(node: dict[str, Any], prefix: str) -> dict:
        name = "view_" + (re.sub(r"\W", "_", prefix.replace("[]", "")) if prefix else "alert")
        fields = []
        for step, child in node.items():
            path = f"{prefix}.{step}" if prefix else step
            if child:
                kind: Any = record(child, path)
            else:
                kind = by_path[path].type
            if step.endswith("[]"):
                kind = {"type": "array", "items": kind}
            fields.append(
                {"name": step.removesuffix("[]"), "type": ["null", kind], "default": None}
            )
        return {"type": "record", "name": name, "fields": fields}

    return record(tree(paths), "")


def view_type(view: list[ViewField], paths: list[str]) -> str:
    """The Spark DDL type of the view restricted to ``paths`` (what :func:`view_reader` decodes to)."""
    return _struct_type(tree(paths), "", {f.path: f for f in view})


def _struct_type(node: dict[str, Any], prefix: str, by_path: dict[str, ViewField]) -> str:
    parts = [
        f"`{step.removesuffix('[]')}`: {_step_type(step, child, prefix, by_path)}"
        for step, child in node.items()
    ]
    return f"struct<{', '.join(parts)}>"


def _step_type(step: str, child: dict[str, Any], prefix: str, by_path: dict[str, ViewField]) -> str:
    path = f"{prefix}.{step}" if prefix else step
    inner = _struct_type(child, path, by_path) if child else SPARK_TYPES[by_path[path].type]
    return f"array<{inner}>" if step.endswith("[]") else inner


def view_column(key: str, writers: Mapping[Any, dict], view: list[ViewField], paths: list[str]):
    """The view struct for ``paths``, read from the Kafka ``value`` with the writer schema the
    column ``key`` names (null for an unknown key or, PERMISSIVE, an undecodable body). One
    ``from_avro`` per writer, of which a row evaluates the one its key picks."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    reader = json.dumps(view_reader(view, paths))
    alert = F.lit(None).cast(view_type(view, paths))
    for k, writer in writers.items():
        options = {"mode": "PERMISSIVE", "avroSchema": reader}
        alert = F.when(
            F.col(key) == F.lit(k), from_avro(F.col("value"), json.dumps(writer), options)
        ).otherwise(alert)
    return alert
