"""Which view fields filter expressions read, as Spark's analyser sees them.

Spark prunes nested columns of a file scan down to what a query uses (``nestedSchemaPruning``).
We let it do that work for us: a scan of an empty folder typed as the whole view, an expression
selected over it, and the scan's pruned read schema is the answer, with Spark's own resolution of
names, ``x.y`` steps, ``arr[0].f`` and functions. A field reached only through a lambda
(``transform(prvDiaSources, s -> s.psfFlux)``) keeps the whole record: Spark cannot prune there,
and neither do we. A record asked only whether it is there or how long it is
(``ssSource IS NOT NULL``, ``size(prvDiaSources)``) is read as one field.

A broker holds hundreds of filters, most of them one shape with other thresholds, so the scan is
built once (building it lists the folder: about a second) and each expression shape is analysed
once (about 10 ms): numbers do not change which fields an expression reads.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterable
from typing import Any

from alertsieve.alerts.view import ViewField
from alertsieve.catalogs.context import Context, context_types
from alertsieve.filtering.clauses import Unfit, compared_values
from alertsieve.filtering.features import has_history, read_paths, with_features
from alertsieve.filtering.objects import ANNOTATIONS, ANNOTATIONS_TYPE, OBJECT, OBJECT_TYPE
from alertsieve.filtering.scores.column import SCORES, named_models, scores_type
from alertsieve.filtering.scores.model import Model
from alertsieve.filtering.sql_text import named_catalogs, only_existence, without_strings
from alertsieve.view.reader_schema import view_type

#: A quoted literal or name (kept: ``diaSource['snr']`` names a field), or a number (blanked).
_TOKEN = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?(?![\w.])"
)


def shape(expression: str) -> str:
    """``expression`` with its numbers blanked: the same shape reads the same fields."""
    return _TOKEN.sub(lambda m: m.group(0) if m.group(0)[0] in "'\"`" else "0", expression)


class ViewReferences:
    """The view as a typed scan, built once, answering which paths expressions read.

    Use as a context manager: the scan's empty folder is removed on exit."""

    def __init__(
        self,
        spark,
        view: list[ViewField],
        context: Context | None = None,
        models: list[Model] = (),
    ):
        """``models``: those whose ``scores.<name>`` an expression may read; it then reads what
        the model's columns read."""
        self.spark, self.view, self.context = spark, view, context
        self.models = {m.name: m for m in models}
        self._folder = tempfile.mkdtemp(prefix="alertsieve-view-")
        whole = self._bare(view)
        self._computed = dict(context_types(whole, context))
        if has_history(whole):
            self._computed["features"] = with_features(whole).schema["features"].dataType
        if models:
            self._computed[SCORES] = scores_type(list(models))
        self._computed[OBJECT] = OBJECT_TYPE  # the objects query's: they read no alert field
        self._computed[ANNOTATIONS] = ANNOTATIONS_TYPE
        self._feature_paths = read_paths(whole)
        self._scan = self._typed(whole)
        self._tops = _by_top(view)
        self._reduced: dict[str, Any] = {}
        self._by_shape: dict[str, set[str]] = {}
        self._parts: dict[str, list[str]] = {}  # fields records repeat across filters

    def __enter__(self) -> ViewReferences:
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)

    def _bare(self, fields: list[ViewField]):
        from pyspark.sql.types import _parse_datatype_string

        kind = _parse_datatype_string(view_type(fields, [f.path for f in fields]))
        return self.spark.read.schema(kind).parquet(self._folder)

    def _typed(self, frame):
        """The view as filters see it. ``features``, ``xmatch``, ``watch`` and ``scores`` stand in
        as typed nulls: computed, they pass whole records through projections and joins, where Spark stops
        pruning; what they read is known (the features' ``READ_PATHS``, the position) and added for the
        expressions that name them."""
        from pyspark.sql import functions as F

        for name, kind in self._computed.items():
            frame = frame.withColumn(name, F.lit(None).cast(kind))
        return frame

    def _cut_down(self, top: str):
        """The view with record ``top`` reduced to its first field."""
        if top not in self._reduced:
            first = self._tops[top][0]
            kept = [f for f in self.view if f.path.split(".")[0] != top or f is first]
            self._reduced[top] = self._typed(self._bare(kept))
        return self._reduced[top]

    def paths(self, expression: str) -> set[str]:
        """The view paths one expression reads (it must compile against the view)."""
        key = shape(expression)
        if key not in self._by_shape:
            self._by_shape[key] = self._analyse(expression)
        return self._by_shape[key]

    def _analyse(self, expression: str) -> set[str]:
        used = set(_paths(_read_schema(self._scan.selectExpr(f"({expression}) AS _e")), ""))
        for top, fields in self._tops.items():
            if len(fields) > 1 and all(f.path in used for f in fields):
                if only_existence(expression, top.removesuffix("[]")) and _compiles(
                    self._cut_down(top), expression
                ):
                    used -= {f.path for f in fields[1:]}
        if names_features(expression):
            used |= set(self._feature_paths)
        if self.context is not None and named_catalogs(expression):
            used |= {self.context.ra, self.context.dec}
        for name in named_models(expression) & set(self.models):
            for column in self.models[name].reads():
                used |= self.paths(column)
        return used

    def read_by(self, expressions: Iterable[str]) -> list[str]:
        """The view paths ``expressions`` read, in the view's order."""
        found: set[str] = set()
        for expression in expressions:
            if expression not in self._parts:
                self._parts[expression] = _parts(expression)
            for part in self._parts[expression]:
                found |= self.paths(part)
        return [f.path for f in self.view if f.path in found]


def _parts(expression: str) -> list[str]:
    """Expressions that read together what ``expression`` reads: for a condition over values
    compared with constants (``alertsieve.filtering.clauses``), the values; else itself. Ten
    thousand users' filters are thousands of conditions of a few dozen values: an analysis
    per condition (about 10 ms) took 27 s of their start-up."""
    try:
        return compared_values(expression)
    except Unfit:
        return [expression]


def referenced_paths(
    spark, view: list[ViewField], expressions: list[str], context: Context | None = None
) -> list[str]:
    """The view paths (``diaSource.snr``, ``prvDiaSources[].psfFlux``) ``expressions`` read,
    in the view's order. The expressions must already compile against the view.

    A record or array that an expression keeps whole is then tried cut down to one field: if the
    expression still compiles (``size(prvDiaSources) = 0``, ``ssSource IS NOT NULL``), that field
    is enough; a null record or an array stays null and keeps its length, so the answer is the
    same while Avro skips the rest. An expression naming a catalog of ``context`` (``xmatch.NAME``,
    ``watch.NAME``) reads the detection's position too."""
    with ViewReferences(spark, view, context) as refs:
        return refs.read_by(expressions)


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
