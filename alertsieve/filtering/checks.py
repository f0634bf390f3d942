"""Start-up checks of filters: a typo or a query smuggled into a condition fails before any alert
is read, with the filter's name, where it came from, and what to change."""

from __future__ import annotations

import difflib
import logging
import re
from contextlib import contextmanager

from alertsieve.alerts.view import ViewField, version_order
from alertsieve.filtering.model import AlertFilter, Filter, FilterError, PythonFilter
from alertsieve.filtering.shapes import lift
from alertsieve.filtering.untrusted import UntrustedSqlError, refusals

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")

#: Words that start a query or a statement: a filter is a condition over one alert, so none of
#: them belongs in one (Spark would run a subquery against any table the session can see).
STATEMENT_WORDS = (
    "select",
    "with",
    "values",
    "insert",
    "update",
    "delete",
    "merge",
    "drop",
    "create",
    "alter",
    "truncate",
    "grant",
    "revoke",
)
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


def validate(filters: list[Filter], alerts, view: list[ViewField] | None = None) -> None:
    """Check names, compile every filter against ``alerts`` (a small DataFrame of decoded alerts,
    e.g. simulated ones) and run the Python filters on it, so a bad filter fails before any real
    alert is read; a misspelled field is answered with the closest ones of ``view`` (the decoder's)
    and the versions that have them. The SQL filters compile together in one analysis (a thousand take about a
    second, one by one a minute); only when that fails are they compiled one by one, to name the
    filter at fault."""
    seen: dict[str, Filter] = {}
    for f in filters:
        if not NAME.match(f.name):
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): names are letters, digits, '_' and '-',"
                " starting with a letter (they become topic and table names)",
                filter=f.name,
            )
        if f.name in seen:
            raise FilterError(
                f"filter {f.name!r} is defined twice: {seen[f.name].origin} and {f.origin}",
                filter=f.name,
                origin=f.origin,
            )
        seen[f.name] = f
        _check_expressions(f)
    check_untrusted(filters, alerts.sparkSession)
    sql = [f for f in filters if not f.runs_python]
    types = _compiled_together(sql, alerts)
    for f in filters:
        if f.runs_python:
            _run_on_samples(f, alerts, view)
            continue
        dtype = types[f.name] if types is not None else _compiled(f, alerts, view)
        if dtype.typeName() != "boolean":
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): the expression is {dtype.simpleString()}, not"
                " boolean; write a condition such as `diaSource.snr > 50`",
                filter=f.name,
            )


def check_untrusted(filters: list[Filter], spark) -> None:
    """Every SQL text of ``filters`` (conditions, columns, fields) parsed by Spark's parser and
    held against the allowlists of ``alertsieve.filtering.untrusted``, before any of it is
    analysed or run: the first refusal names its filter, its file, the part and why."""
    texts = [(f, where, sql) for f in filters for where, sql in _texts(f)]
    for (f, where, _), why in zip(
        texts, refusals(spark, [sql for _, _, sql in texts]), strict=True
    ):
        if why:
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): {where} is refused: {why}", filter=f.name
            )


def _texts(f: Filter) -> list[tuple[str, str]]:
    """(where in the filter, SQL) of everything ``f`` evaluates."""
    return [*f.expressions().items(), *((f"fields[{k!r}]", v) for k, v in f.fields.items())]


def _compiled_together(filters: list[Filter], alerts) -> dict | None:
    """Each filter's result type from one analysis of them all; None if any fails to compile.
    The expressions go to Spark as text in one call (``selectExpr``, the parser ``F.expr``
    uses): a column built in Python per filter took 27 of the 38 s ten thousand filters spent
    here. The line break before the bracket closes a trailing ``--`` comment. Filters of one
    shape that differ in numbers only (``alertsieve.filtering.shapes.lift``, which leaves in
    the text the numbers Spark reads its own way) compile alike: one of them is compiled for
    all (8,010 of ten thousand users' filters were 35 shapes)."""
    from pyspark.errors import AnalysisException, ArithmeticException, ParseException

    if not filters:
        return {}
    first: dict[tuple, int] = {}
    stands_for = []  # the filter compiled for each
    for i, f in enumerate(filters):
        lifted = lift(f.expressions()["sql"])
        alike = lifted.constants and set(lifted.kinds) <= {"int", "double"}
        stands_for.append(first.setdefault(lifted.key, i) if alike else i)
    compiled = sorted(set(stands_for))
    try:
        with _pyspark_quiet():
            schema = alerts.selectExpr(
                *[f"({filters[i].expressions()['sql']}\n) AS _{i}" for i in compiled]
            ).schema
    except (AnalysisException, ArithmeticException, ParseException):
        return None
    types = {i: field.dataType for i, field in zip(compiled, schema.fields, strict=True)}
    return {f.name: types[stands_for[i]] for i, f in enumerate(filters)}


def _compiled(f: AlertFilter, alerts, view: list[ViewField] | None):
    """One filter's result type, or its compile error with its name and origin."""
    with named(f, view=view):
        return alerts.select(f.condition().alias("m")).schema["m"].dataType


def _run_on_samples(f: PythonFilter, alerts, view: list[ViewField] | None) -> None:
    """A Python filter compiles its columns and runs on the sample alerts without an error.

    The errors are collected and looked at here, not kept by a Spark ``where``: the optimizer
    pushes that condition below the decode, where each field the columns read inlines the whole
    decode of every schema version (features.* read a dozen fields: a plan of tens of MB that ran
    the driver out of heap)."""
    with named(f, view=view):
        _, error = f.evaluate()
        errors = [row["e"] for row in alerts.select(error.alias("e")).collect()]
    failure = next((e for e in errors if e is not None), None)
    if failure is not None:
        raise FilterError(
            f"filter {f.name!r} ({f.origin}) fails on the sample alerts: {failure}",
            filter=f.name,
        )


@contextmanager
def named(f: Filter, part: str = "", view: list[ViewField] | None = None):
    """Spark's compile error, as the first line of its message with the filter's name and origin
    (and ``part``, the piece of the filter at fault: ``fields['snr']``), a misspelled field
    answered from ``view`` (``readable``)."""
    from pyspark.errors import AnalysisException, ArithmeticException, ParseException

    try:
        with _pyspark_quiet():
            yield
    # a number beyond a decimal's 38 digits is Spark's ArithmeticException at analysis
    except (AnalysisException, ArithmeticException, ParseException) as e:
        first = readable(str(e).strip().splitlines()[0], " ".join(f.expressions().values()), view)
        raise FilterError(
            f"filter {f.name!r} ({f.origin}): {part + ': ' if part else ''}{first}",
            filter=f.name,
        ) from None


#: pyspark logs each analysis error it raises, at ERROR with the whole message (a struct's
#: two hundred field names), before the caller sees it: the checks report it themselves.
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


@contextmanager
def _pyspark_quiet():
    """pyspark's error loggers silenced while a filter is compiled (restored after)."""
    from pyspark.logger import PySparkLogger

    loggers = [PySparkLogger.getLogger(name) for name in _PYSPARK_ERROR_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


_NO_STRUCT_FIELD = re.compile(r"\[FIELD_NOT_FOUND\] No such struct field `([^`]+)` in (.*)")
_UNRESOLVED = re.compile(
    r"\[UNRESOLVED_COLUMN\.WITH_SUGGESTION\] .* with name ((?:`[^`]+`\.?)+) cannot be resolved\."
    r" Did you mean one of the following\? \[(.*?)\]"
)


def readable(first: str, expression: str, view: list[ViewField] | None = None) -> str:
    """Spark's first line about a name it cannot resolve, as "no field X; did you mean Y?": the
    closest names by edit distance among those Spark lists (a struct's fields, or its own
    suggestions for a top-level name), each with the versions of ``view`` that have it when some
    lack it; other errors as Spark words them."""
    found = _NO_STRUCT_FIELD.match(first)
    if found:
        missing, names = found.group(1), re.findall(r"`([^`]+)`", found.group(2))
        path = re.search(rf"((?:\w+\.)*){re.escape(missing)}\b", expression)
        parent = path.group(1) if path else ""
        close = difflib.get_close_matches(missing, names, n=3, cutoff=0.6)
        guess = " or ".join(_with_versions(f"{parent}{c}", view) for c in close)
        return f"no field {parent}{missing}" + (
            f"; did you mean {guess}?" if close else f" (the record has {len(names)} fields)"
        )
    found = _UNRESOLVED.match(first)
    if found:
        parts = re.findall(r"`([^`]+)`", found.group(1))
        suggestions = re.findall(r"`([^`]+)`", found.group(2))
        close = difflib.get_close_matches(parts[0], suggestions, n=1, cutoff=0.6)
        name = ".".join(parts)
        guess = close and _with_versions(".".join([close[0], *parts[1:]]), view)
        return f"no field {name}" + (f"; did you mean {guess}?" if guess else "")
    return first


def _with_versions(path: str, view: list[ViewField] | None) -> str:
    """``path``, and "(only in versions ...)" when some version of the view lacks it (a record:
    the versions that have any of its fields)."""
    if not view:
        return path
    every = {v for f in view for v in f.versions}
    have = {v for f in view if f.path == path or f.path.startswith(f"{path}.") for v in f.versions}
    if not have or have == every:
        return path
    return f"{path} (only in versions {', '.join(sorted(have, key=version_order))})"


def _check_expressions(f: Filter) -> None:
    try:
        expressions = f.expressions()
    except KeyError as e:
        raise FilterError(
            f"filter {f.name!r} ({f.origin}): the SQL names a parameter {e} it does not declare",
            filter=f.name,
        ) from None
    except UntrustedSqlError as e:
        raise FilterError(f"filter {f.name!r} ({f.origin}): {e}", filter=f.name) from None
    for where, sql in expressions.items():
        reason = not_an_expression(sql)
        if reason:
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): {where} is refused: {reason}", filter=f.name
            )
