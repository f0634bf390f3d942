"""Which view fields a set of filter expressions reads, as Spark's analyser sees them.

Spark prunes nested columns of a file scan down to what a query uses (``nestedSchemaPruning``).
We let it do that work for us: a scan of an empty folder typed as the whole view, the filters'
expressions selected over it, and the scan's pruned read schema is the answer, with Spark's own
resolution of names, ``x.y`` steps, ``arr[0].f`` and functions. A field reached only through a
lambda (``transform(prvDiaSources, s -> s.psfFlux)``) keeps the whole record: Spark cannot prune
there, and neither do we. A record asked only whether it is there or how long it is
(``ssSource IS NOT NULL``, ``size(prvDiaSources)``) is read as one field.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from typing import Any

from alertsieve.alerts.view import ViewField
from alertsieve.catalogs.context import Context, context_types, named_catalogs
from alertsieve.filtering.features import READ_PATHS, has_history, with_features
from alertsieve.filtering.sql_text import only_existence, without_strings
from alertsieve.stream.view_decode import view_type


def referenced_paths(spark, view: list[ViewField], expressions: list[str], context: Context | None = None) -> list[str]:
    """The view paths (``diaSource.snr``, ``prvDiaSources[].psfFlux``) ``expressions`` read,
    in the view's order. The expressions must already compile against the view.

    A record or array that an expression keeps whole is then tried cut down to one field: if the
    expression still compiles (``size(prvDiaSources) = 0``, ``ssSource IS NOT NULL``), that field
    is enough; a null record or an array stays null and keeps its length, so the answer is the
    same while Avro skips the rest. An expression naming a catalog of ``context`` (``xmatch.NAME``,
    ``watch.NAME``) reads the detection's position too."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    folder = tempfile.mkdtemp(prefix="alertsieve-view-")

    def bare(fields: list[ViewField]):
        return spark.read.schema(_parse_datatype_string(view_type(fields, [f.path for f in fields]))).parquet(folder)

    whole = bare(view)
    computed = dict(context_types(whole, context))
    if has_history(whole):
        computed["features"] = with_features(whole).schema["features"].dataType

    def scan(fields: list[ViewField]):
        """The view as filters see it. ``features``, ``xmatch`` and ``watch`` stand in as typed
        nulls: computed, they pass whole records through projections and joins, where Spark stops
        pruning; what they read is known (``READ_PATHS``, the position) and added for the
        expressions that name them."""
        frame = bare(fields)
        for name, kind in computed.items():
            frame = frame.withColumn(name, F.lit(None).cast(kind))
        return frame

    found: set[str] = set()
    try:
        for expression in expressions:
            read = _read_schema(scan(view).selectExpr(f"({expression}) AS _e"))
            used = set(_paths(read, ""))
            for top, fields in _by_top(view).items():
                if len(fields) > 1 and all(f.path in used for f in fields):
                    reduced = [f for f in view if f.path.split(".")[0] != top or f is fields[0]]
                    if only_existence(expression, top.removesuffix("[]")) and _compiles(scan(reduced), expression):
                        used -= {f.path for f in fields[1:]}
            found |= used | (set(READ_PATHS) if names_features(expression) else set())
            if context is not None and named_catalogs(expression):
                found |= {context.ra, context.dec}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [f.path for f in view if f.path in found]



def names_features(expression: str) -> bool:
    """Whether ``expression`` reads the light-curve ``features`` (a top-level name)."""
    bare = without_strings(expression)
    return re.search(r"(?<![\w.`])`?features`?(?![\w`])", bare, flags=re.I) is not None


def _read_schema(query) -> dict[str, Any]:
    leaves = query._jdf.queryExecution().executedPlan().collectLeaves()
    return json.loads(leaves.apply(0).requiredSchema().json())


def _compiles(scan, expression: str) -> bool:
    from pyspark.errors import AnalysisException

    try:
        scan.selectExpr(f"({expression}) AS _e").schema  # noqa: B018 - analysis is the test
    except AnalysisException:
        return False
    return True


def _by_top(view: list[ViewField]) -> dict[str, list[ViewField]]:
    """View fields by their top-level step; the first is the one kept when a record is cut down
    (the schemas put the id first: ``diaSourceId``)."""
    out: dict[str, list[ViewField]] = {}
    for f in view:
        out.setdefault(f.path.split(".")[0], []).append(f)
    return out


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
