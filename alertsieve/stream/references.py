"""Which view fields a set of filter expressions reads, as Spark's analyser sees them.

Spark prunes nested columns of a file scan down to what a query uses (``nestedSchemaPruning``).
We let it do that work for us: a scan of an empty folder typed as the whole view, the filters'
expressions selected over it, and the scan's pruned read schema is the answer, with Spark's own
resolution of names, ``x.y`` steps, ``arr[0].f`` and functions. A field reached only through a
lambda (``transform(prvDiaSources, s -> s.psfFlux)``) or named whole (``ssSource IS NOT NULL``)
keeps the whole record: Spark cannot prune there, and neither do we.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from typing import Any

from alertsieve.alerts.view import ViewField
from alertsieve.stream.view_decode import view_type


def referenced_paths(spark, view: list[ViewField], expressions: list[str]) -> list[str]:
    """The view paths (``diaSource.snr``, ``prvDiaSources[].psfFlux``) ``expressions`` read,
    in the view's order. The expressions must already compile against the view."""
    from pyspark.sql.types import _parse_datatype_string

    if not expressions:
        return []
    schema = _parse_datatype_string(view_type(view, [f.path for f in view]))
    folder = tempfile.mkdtemp(prefix="alertsieve-view-")
    try:
        scan = spark.read.schema(schema).parquet(folder)
        query = scan.selectExpr(*[f"({e}) AS _e{i}" for i, e in enumerate(expressions)])
        leaves = query._jdf.queryExecution().executedPlan().collectLeaves()
        read = json.loads(leaves.apply(0).requiredSchema().json())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    found = set(_paths(read, ""))
    return [f.path for f in view if f.path in found]


def _paths(node: dict[str, Any], prefix: str):
    for f in node["fields"]:
        path = f"{prefix}.{f['name']}" if prefix else f["name"]
        yield from _type_paths(f["type"], path)


def _type_paths(kind: Any, path: str):
    if isinstance(kind, dict) and kind["type"] == "struct":
        yield from _paths(kind, path)
    elif isinstance(kind, dict) and kind["type"] == "array":
        yield from _type_paths(kind["elementType"], f"{path}[]")
    else:
        yield path
