"""Filters: a name, what it is for, where its matches go, and either a SQL condition over alert
fields or a Python function over declared columns (pandas in, boolean Series out).

Every filter compiles to Spark columns evaluated on the same decoded batch, so ten filters cost
one decode. Filters are checked against the reader schema before the stream starts: a typo fails
at start-up with the filter's name, where it came from, and Spark's own words. A Python filter
that raises at runtime reports the error in its own column instead of failing the batch, so the
job can skip that filter's output for that batch and let the others go on.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from alertsieve.errors import AlertsieveError

Payload = Literal["alert", "fields"]
Format = Literal["avro", "json"]


#: What raises in a SQL filter on an alert, and how its author says what such an alert gives.
SQL_ERROR_KINDS = "a division by zero, a cast that fails, an overflow"
SQL_ERROR_ADVICE = "try_divide, try_cast or coalesce say what such an alert should give"


def sql_failed(name: str, alerts: int = 1) -> str:
    """What a SQL filter's error on ``alerts`` alerts says: Spark's own words are not kept
    (``alertsieve.spark.contained``), so it says what kinds there are and how to avoid them."""
    some = "an alert" if alerts == 1 else f"{alerts} alerts"
    return (
        f"{name}: its SQL raised an error on {some} ({SQL_ERROR_KINDS}): no match there;"
        f" {SQL_ERROR_ADVICE}"
    )


class FilterError(AlertsieveError, ValueError):
    """A filter that cannot run: named, located, and with the fix where we know it.

    Where one filter (``filter``, its name) or one file (``origin``) is at fault, the error says
    which: a job that skips bad filters (``on_bad_filter: skip``) leaves that one out and runs
    the rest."""

    def __init__(self, message: str, *, filter: str | None = None, origin: str | None = None):
        super().__init__(message)
        self.filter = filter
        self.origin = origin


@dataclass(frozen=True, kw_only=True)
class FilterInfo:
    """What every filter declares besides its condition: who it is for and where matches go."""

    description: str = ""
    topic: str | None = None  # default: <output prefix><name> (alertsieve.publish.contract)
    origin: str = "defined in code"  # the file or flag it came from, for error messages
    contact: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    cutouts: bool = False  # keep the FITS cutouts of this filter's matches in the Delta table
    survey: str | None = None  # 'rubin' or 'ztf': whose alert fields it names (None: the job's)
    #: What a match publishes: the original alert bytes, or a compact record of ``fields``
    #: (alias -> SQL expression over the filter view) in ``format`` (see alertsieve.publish).
    payload: Payload = "alert"
    fields: Mapping[str, str] = field(default_factory=dict)
    format: Format = "avro"
    #: The largest fraction of a reference night's alerts it may pass to be admitted (a job with
    #: ``admission``, ``alertsieve.stream.admission``); None: the job's ``admission.max_rate``.
    max_rate: float | None = None
    #: Principals (``User:bob``) that alone may read its topic, with the job's own; empty: the
    #: topic is as the cluster's ACLs have it (``alertsieve.kafka.acls``).
    readers: Sequence[str] = ()
    #: Its daily quota, ``{"records": N, "bytes": B}`` (either or both) per UTC day; empty: the
    #: job's ``quota``, if any (``alertsieve.stream.quotas``).
    quota: Mapping[str, int] = field(default_factory=dict)
    #: What runs it: a new ``alert`` of an object (the default), a new ``annotation`` of one
    #: (``alertsieve.filtering.objects``), or both.
    triggers: Sequence[str] = ("alert",)


class Filter(FilterInfo, ABC):
    """A filter: SQL (``AlertFilter``) or a Python function (``PythonFilter``). What the job and
    the checks ask of one, each kind answers: its expressions, its columns, whether it runs in
    Python, and what decides its matches."""

    name: str

    @abstractmethod
    def expressions(self) -> dict[str, str]:
        """Where in the filter -> each SQL expression it evaluates over the alert."""

    @abstractmethod
    def evaluate(self):
        """(match column, error column or None): the filter over a frame of the filter view."""

    def evaluate_timed(self):
        """(match, error, seconds): ``evaluate`` and, for a Python filter, the seconds its
        function took on each chunk of rows (on the chunk's first row; None for SQL, whose
        filters share one generated expression and have no cost of their own)."""
        match, error = self.evaluate()
        return match, error, None

    @property
    @abstractmethod
    def runs_python(self) -> bool:
        """Whether a Python worker runs it (a pandas UDF): Real-Time Mode cannot, it reports its
        errors in a column of its own, and Spark queues whole rows while it computes."""

    @abstractmethod
    def code(self) -> str | None:
        """What decides its matches beyond its expressions and parameters, as text (a Python
        filter's function source); None when nothing does."""

    @property
    def kind(self) -> str:
        """'python' or 'sql', as listings and counts name it."""
        return "python" if self.runs_python else "sql"


@dataclass(frozen=True)
class AlertFilter(Filter):
    """A SQL filter: ``sql`` is a boolean expression over the alert's fields; ``{param}``
    placeholders are filled from ``params`` (defaults here, overridable from config), each as a
    typed literal, never as text (``alertsieve.filtering.untrusted.fill``)."""

    name: str
    sql: str

    def expressions(self) -> dict[str, str]:
        """Where in the filter -> each SQL expression it evaluates over the alert."""
        from alertsieve.filtering.untrusted import fill

        return {"sql": fill(self.sql, self.params)}

    def condition(self):
        """The condition as Spark evaluates it, uncontained (see ``evaluate``)."""
        from pyspark.sql import functions as F

        return F.expr(self.expressions()["sql"])

    def evaluate(self):
        """(match column, error column): an error on an alert (a division by zero, a cast
        that fails, an overflow) is no match for it and an error naming the filter, never an
        error of the batch (``alertsieve.spark.contained``)."""
        from pyspark.sql import functions as F

        from alertsieve.spark.contained import contained

        match, failed = contained(self.condition())
        return match, F.when(failed, F.lit(sql_failed(self.name)))

    @property
    def runs_python(self) -> bool:
        return False

    def code(self) -> str | None:
        return None


@dataclass(frozen=True)
class PythonFilter(Filter):
    """A Python filter: ``function(columns: pd.DataFrame, **params) -> pd.Series[bool]``, where
    ``columns`` maps each pandas column name to a SQL expression over the alert's fields."""

    name: str
    function: Callable[..., Any]
    columns: Mapping[str, str]

    def expressions(self) -> dict[str, str]:
        return {f"columns[{k!r}]": v for k, v in self.columns.items()}

    def inputs(self):
        from pyspark.sql import functions as F

        return F.struct(*[F.expr(expr).alias(col) for col, expr in self.columns.items()])

    def evaluate(self):
        """(match column, error column): the function runs in a pandas UDF that never raises."""
        match, error, _ = self.evaluate_timed()
        return match, error

    def evaluate_timed(self):
        from pyspark.sql.functions import pandas_udf

        run = guarded(self.function, dict(self.params), self.name)
        result = pandas_udf(run, "struct<match:boolean,error:string,seconds:double>")(self.inputs())
        return result["match"], result["error"], result["seconds"]

    @property
    def runs_python(self) -> bool:
        return True

    def code(self) -> str | None:
        return _source(self.function)


def guarded(function: Callable[..., Any], params: dict, name: str) -> Callable:
    """Wrap a filter function: a bad return or an exception becomes an error string on the first
    row (and no matches), so one broken filter cannot stop the batch; the seconds it took go on
    the first row too (the job's cost per filter)."""

    def run(columns):
        import time

        import pandas as pd

        start = time.perf_counter()
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
        seconds = [time.perf_counter() - start] + [None] * (len(columns) - 1)
        return pd.DataFrame({"match": match, "error": error, "seconds": seconds})

    return run


def _source(function) -> str:
    """A function's source text; its compiled code where the source is not at hand (a notebook)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        code = function.__code__
        return code.co_code.hex() + repr(code.co_consts)


def python_filter(
    *,
    name: str,
    columns: Mapping[str, str],
    description: str = "",
    contact: str = "",
    topic: str | None = None,
    params: Mapping[str, Any] | None = None,
    cutouts: bool = False,
    survey: str | None = None,
    payload: Payload = "alert",
    fields: Mapping[str, str] | None = None,
    format: Format = "avro",
    max_rate: float | None = None,
    readers: Sequence[str] = (),
    quota: Mapping[str, int] | None = None,
    triggers: Sequence[str] = ("alert",),
) -> Callable[[Callable[..., Any]], PythonFilter]:
    """Decorator for filter modules: ``@python_filter(name=..., columns={...})``."""

    def wrap(function: Callable[..., Any]) -> PythonFilter:
        origin = f"{function.__module__}.{function.__qualname__}"
        return PythonFilter(
            name=name,
            function=function,
            columns=dict(columns),
            description=description or (function.__doc__ or "").strip(),
            topic=topic,
            origin=origin,
            contact=contact,
            params=dict(params or {}),
            cutouts=cutouts,
            survey=survey,
            payload=payload,
            fields=dict(fields or {}),
            format=format,
            max_rate=max_rate,
            readers=tuple(readers),
            quota=dict(quota or {}),
            triggers=tuple(triggers),
        )

    return wrap


def with_params(f: Filter, overrides: Mapping[str, Any], origin: str) -> Filter:
    """The filter with some parameters set from configuration. Parameters are typed by their
    defaults: an unknown name, or a value of another type (ints pass for floats), is an error."""
    unknown = set(overrides) - set(f.params)
    if unknown:
        raise FilterError(
            f"{origin}: filter {f.name!r} has no parameter(s) {sorted(unknown)};"
            f" it takes {sorted(f.params) or 'none'}",
            filter=f.name,
        )
    for key, value in overrides.items():
        default = f.params[key]
        ok = isinstance(value, type(default)) or (
            isinstance(default, float) and isinstance(value, int)
        )
        if not ok or (isinstance(value, bool) and not isinstance(default, bool)):
            raise FilterError(
                f"{origin}: parameter {key!r} of filter {f.name!r} is a {type(default).__name__}"
                f" (default {default!r}); got {value!r}",
                filter=f.name,
            )
    return replace(f, params={**f.params, **overrides})
