"""Filters: a name, what it is for, where its matches go, and either a SQL condition over alert
fields or a Python function over declared columns (pandas in, boolean Series out).

Every filter compiles to Spark columns evaluated on the same decoded batch, so ten filters cost
one decode. Filters are checked against the reader schema before the stream starts: a typo fails
at start-up with the filter's name, where it came from, and Spark's own words. A Python filter
that raises at runtime reports the error in its own column instead of failing the batch, so the
job can skip that filter's output for that batch and let the others go on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")

#: Words that start a query or a statement: a filter is a condition over one alert, so none of
#: them belongs in one (Spark would run a subquery against any table the session can see).
STATEMENT_WORDS = ("select", "with", "values", "insert", "update", "delete", "merge", "drop",
                   "create", "alter", "truncate", "grant", "revoke")  # fmt: skip
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_WORD = re.compile(r"(?<![.\w])([A-Za-z_]\w*)")


def not_an_expression(sql: str) -> str | None:
    """Why ``sql`` is more than an expression over an alert's fields, or None if it is not.
    String literals and `quoted` names are not looked into; ``x.select`` (a field) is fine."""
    bare = _QUOTED.sub("''", sql)
    if ";" in bare:
        return "it contains ';' (one expression, not statements)"
    for word in _WORD.findall(bare):
        if word.lower() in STATEMENT_WORDS:
            return (
                f"it contains {word.upper()}: filters are expressions over one alert's fields,"
                " without subqueries, DDL or DML"
            )
    return None


class FilterError(ValueError):
    """A filter that cannot run: named, located, and with the fix where we know it."""


@dataclass(frozen=True, kw_only=True)
class FilterInfo:
    """What every filter declares besides its condition: who it is for and where matches go."""

    description: str = ""
    topic: str | None = None  # default: <output prefix><name>
    origin: str = "defined in code"  # the file or flag it came from, for error messages
    contact: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    cutouts: bool = False  # keep the FITS cutouts of this filter's matches in the Delta table

    def output_topic(self, prefix: str) -> str:
        return self.topic or f"{prefix}{self.name}"


@dataclass(frozen=True)
class AlertFilter(FilterInfo):
    """A SQL filter: ``sql`` is a boolean expression over the alert's fields; ``{param}``
    placeholders are filled from ``params`` (defaults here, overridable from config)."""

    name: str
    sql: str

    def evaluate(self):
        """(match column, error column or None)."""
        from pyspark.sql import functions as F

        return F.expr(self.sql.format(**self.params)), None


@dataclass(frozen=True)
class PythonFilter(FilterInfo):
    """A Python filter: ``function(columns: pd.DataFrame, **params) -> pd.Series[bool]``, where
    ``columns`` maps each pandas column name to a SQL expression over the alert's fields."""

    name: str
    function: Callable[..., Any]
    columns: Mapping[str, str]

    def inputs(self):
        from pyspark.sql import functions as F

        return F.struct(*[F.expr(expr).alias(col) for col, expr in self.columns.items()])

    def evaluate(self):
        """(match column, error column): the function runs in a pandas UDF that never raises."""
        from pyspark.sql.functions import pandas_udf

        run = guarded(self.function, dict(self.params), self.name)
        result = pandas_udf(run, "struct<match:boolean,error:string>")(self.inputs())
        return result["match"], result["error"]


def guarded(function: Callable[..., Any], params: dict, name: str) -> Callable:
    """Wrap a filter function: a bad return or an exception becomes an error string on the first
    row (and no matches), so one broken filter cannot stop the batch."""

    def run(columns):
        import pandas as pd

        try:
            out = function(columns, **params)
            if not isinstance(out, pd.Series) or len(out) != len(columns):
                raise TypeError(
                    f"returned {type(out).__name__} of length {len(out) if hasattr(out, '__len__') else '?'};"
                    f" expected a boolean pandas Series of length {len(columns)}"
                )
            if not (pd.api.types.is_bool_dtype(out) or out.dropna().map(type).eq(bool).all()):
                raise TypeError(f"returned a Series of {out.dtype}, not booleans")
            match = out.fillna(False).astype(bool).to_numpy()
            error = [None] * len(columns)
        except Exception as e:  # noqa: BLE001 - reported per batch, see the docstring
            match = [False] * len(columns)
            error = [f"{name}: {type(e).__name__}: {e}"] + [None] * (len(columns) - 1)
        return pd.DataFrame({"match": match, "error": error})

    return run


Filter = AlertFilter | PythonFilter


def python_filter(
    *,
    name: str,
    columns: Mapping[str, str],
    description: str = "",
    contact: str = "",
    topic: str | None = None,
    params: Mapping[str, Any] | None = None,
    cutouts: bool = False,
) -> Callable[[Callable[..., Any]], PythonFilter]:
    """Decorator for filter modules: ``@python_filter(name=..., columns={...})``."""

    def wrap(function: Callable[..., Any]) -> PythonFilter:
        origin = f"{function.__module__}.{function.__qualname__}"
        return PythonFilter(name=name, function=function, columns=dict(columns),
                            description=description or (function.__doc__ or "").strip(),
                            topic=topic, origin=origin, contact=contact, params=dict(params or {}), cutouts=cutouts)  # fmt: skip

    return wrap


def parse_sql_flag(flag: str) -> AlertFilter:
    """``NAME=EXPRESSION`` from ``--sql``."""
    name, sep, expression = flag.partition("=")
    if not sep or not expression.strip():
        raise FilterError(
            f"--sql {flag!r}: expected NAME=EXPRESSION, e.g. bright='diaSource.snr > 50'"
        )
    return AlertFilter(name=name.strip(), sql=expression.strip(), origin=f"--sql {name.strip()}")


def from_config(entries: Iterable[dict], origin: str) -> list[AlertFilter]:
    out = []
    for i, entry in enumerate(entries):
        where = f"{origin} (filters[{i}])"
        unknown = set(entry) - {
            "name",
            "sql",
            "description",
            "topic",
            "contact",
            "params",
            "cutouts",
        }
        if unknown or "name" not in entry or "sql" not in entry:
            raise FilterError(
                f"{where}: a filter needs 'name' and 'sql' (optional: 'description', 'topic',"
                f" 'contact', 'params'); got {sorted(entry)}"
            )
        out.append(AlertFilter(origin=where, **entry))
    return out


def validate(filters: list[Filter], alerts) -> None:
    """Check names, compile every filter against ``alerts`` (a small DataFrame of decoded alerts,
    e.g. simulated ones) and run the Python filters on it, so a bad filter fails before any real
    alert is read."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql.types import BooleanType

    seen: dict[str, Filter] = {}
    for f in filters:
        if not NAME.match(f.name):
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): names are letters, digits, '_' and '-',"
                " starting with a letter (they become topic and table names)"
            )
        if f.name in seen:
            raise FilterError(
                f"filter {f.name!r} is defined twice: {seen[f.name].origin} and {f.origin}"
            )
        seen[f.name] = f
        _check_expressions(f)
        try:
            if isinstance(f, PythonFilter):
                match, error = f.evaluate()
                failure = alerts.select(error.alias("e")).where("e IS NOT NULL").first()
                if failure is not None:
                    raise FilterError(
                        f"filter {f.name!r} ({f.origin}) fails on a sample of simulated alerts:"
                        f" {failure['e']}"
                    )
                continue
            dtype = alerts.select(f.evaluate()[0].alias("m")).schema["m"].dataType
        except (AnalysisException, ParseException) as e:
            first = str(e).strip().splitlines()[0]
            raise FilterError(f"filter {f.name!r} ({f.origin}): {first}") from None
        if not isinstance(dtype, BooleanType):
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): the expression is {dtype.simpleString()}, not"
                " boolean; write a condition such as `diaSource.snr > 50`"
            )


def _check_expressions(f: Filter) -> None:
    try:
        expressions = (
            {"sql": f.sql.format(**f.params)}
            if isinstance(f, AlertFilter)
            else {f"columns[{k!r}]": v for k, v in f.columns.items()}
        )
    except (KeyError, IndexError) as e:
        raise FilterError(
            f"filter {f.name!r} ({f.origin}): the SQL names a parameter {e} it does not declare"
        ) from None
    for where, sql in expressions.items():
        reason = not_an_expression(sql)
        if reason:
            raise FilterError(f"filter {f.name!r} ({f.origin}): {where} is refused: {reason}")


# --- where filters come from ---------------------------------------------------------------

ENTRY_POINT_GROUP = "alertsieve.filters"


def builtin_filter_dir() -> Path:
    """The repository's own ``filters/`` folder (contributed filters)."""
    return Path(__file__).resolve().parents[1] / "filters"


def _filters_in(namespace: dict, origin: str) -> list[Filter]:
    found = [v for k, v in namespace.items() if not k.startswith("_") and isinstance(v, Filter)]
    return [replace(f, origin=origin) for f in found]


def load_filter_file(path: Path) -> list[Filter]:
    """Import one filter module from a file and return the filters it defines at top level."""
    import importlib.util
    import sys

    module_name = f"alertsieve_user_filters.{path.stem}"
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        # Spark ships Python filters to its workers by pickling; a module loaded from a path is
        # not importable there, so its functions must travel by value.
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    except Exception as e:  # noqa: BLE001 - any import failure is the module author's to fix
        raise FilterError(
            f"{path}: the filter module cannot be imported: {type(e).__name__}: {e}"
        ) from None
    filters = _filters_in(vars(module), str(path))
    if not filters:
        raise FilterError(
            f"{path}: defines no filter; assign an AlertFilter(...) or a @python_filter function"
            " at module level (e.g. FILTER = AlertFilter(name=..., sql=...))"
        )
    return filters


def discover(
    paths: Iterable[Path | str] = (), builtin: bool = True, entry_points: bool = True
) -> list[Filter]:
    """Filters from ``filters/``, from extra folders or files, and from installed packages that
    declare the ``alertsieve.filters`` entry-point group."""
    sources: list[Path] = (
        [builtin_filter_dir()] if builtin and builtin_filter_dir().is_dir() else []
    )
    sources += [Path(p) for p in paths]
    found: list[Filter] = []
    for source in sources:
        if source.is_dir():
            files = sorted(p for p in source.glob("*.py") if not p.name.startswith("_"))
        elif source.is_file():
            files = [source]
        else:
            raise FilterError(f"filter path {source} does not exist")
        for file in files:
            found += load_filter_file(file)
    if entry_points:
        from importlib.metadata import entry_points as installed

        for ep in installed(group=ENTRY_POINT_GROUP):
            try:
                target = ep.load()
            except Exception as e:  # noqa: BLE001
                raise FilterError(
                    f"entry point {ep.name} ({ep.value}) cannot be loaded: {e}"
                ) from None
            namespace = (
                vars(target)
                if hasattr(target, "__dict__") and not isinstance(target, Filter)
                else {ep.name: target}
            )
            found += _filters_in(namespace, f"entry point {ep.value}")
    return found


def with_params(f: Filter, overrides: Mapping[str, Any], origin: str) -> Filter:
    """The filter with some parameters set from configuration. Parameters are typed by their
    defaults: an unknown name, or a value of another type (ints pass for floats), is an error."""
    unknown = set(overrides) - set(f.params)
    if unknown:
        raise FilterError(
            f"{origin}: filter {f.name!r} has no parameter(s) {sorted(unknown)};"
            f" it takes {sorted(f.params) or 'none'}"
        )
    for key, value in overrides.items():
        default = f.params[key]
        ok = isinstance(value, type(default)) or (
            isinstance(default, float) and isinstance(value, int)
        )
        if not ok or (isinstance(value, bool) and not isinstance(default, bool)):
            raise FilterError(
                f"{origin}: parameter {key!r} of filter {f.name!r} is a {type(default).__name__}"
                f" (default {default!r}); got {value!r}"
            )
    return replace(f, params={**f.params, **overrides})
