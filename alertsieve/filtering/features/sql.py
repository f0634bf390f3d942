"""Spark SQL pieces both surveys' features are built from: text, so the features stay plain SQL
(no UDF) and a filter that reads them keeps Real-Time Mode.

Detections are arrays of structs (``d``) with an ``err`` field beside the measured value."""

from __future__ import annotations

from collections.abc import Mapping


def finite(sql: str) -> str:
    """NaN and infinities as null: Spark orders NaN above every number, so ``x > 5`` would pass it."""
    return f"CASE WHEN isnan({sql}) OR abs({sql}) = double('inf') THEN NULL ELSE {sql} END"


def total(det: str, term: str) -> str:
    """The sum of ``term`` (over ``d``, one detection) across ``det``: null if any term is."""
    return f"aggregate({det}, 0D, (a, d) -> a + {term})"


def weighted_mean_sql(det: str, value: str = "flux") -> str:
    """The inverse-variance weighted mean of ``d.<value>`` over ``det``, null when an error is
    zero or missing."""
    return (
        f"try_divide({total(det, f'try_divide(d.{value}, d.err * d.err)')},"
        f" {total(det, 'try_divide(1D, d.err * d.err)')})"
    )


def reduced_chi2_sql(det: str, mean: str, value: str = "flux") -> str:
    """The reduced chi-square of ``d.<value>`` about ``mean`` (2 or more detections, else null)."""
    squares = total(det, f"try_divide((d.{value} - {mean}) * (d.{value} - {mean}), d.err * d.err)")
    return finite(f"CASE WHEN size({det}) >= 2 THEN try_divide({squares}, size({det}) - 1) END")


def detections_sql(current: str, history: str, fields: Mapping[str, str], keep: str) -> str:
    """An array of structs, a detection each: ``current`` (the alert's own: ``diaSource``,
    ``candidate``), then each entry of ``history`` (``prvDiaSources``; none when null), each a
    struct of ``fields`` (its name: the detection's field), those for which ``keep`` holds (SQL
    over ``p``, one such struct, and the alert). A Python filter's columns take one field of it
    each: ``transform(<this>, p -> p.t)``."""

    def struct(of: str) -> str:
        return "struct(" + ", ".join(f"{of}.{f} AS {name}" for name, f in fields.items()) + ")"

    return (
        f"filter(concat(array({struct(current)}),"
        f" coalesce(transform({history}, p -> {struct('p')}), array())), p -> {keep})"
    )


def holds_history(frame, source: str, history: str, reads: tuple[str, ...]) -> bool:
    """Whether ``frame`` holds the struct ``source`` (the alert's detection) and the array of
    structs ``history`` (its earlier ones), both with every field in ``reads``: a frame cut down
    to fewer, as the analysis of a filter tries, has no features."""
    from pyspark.sql.types import ArrayType, StructType

    fields = {f.name: f.dataType for f in frame.schema.fields}
    now, before = fields.get(source), fields.get(history)
    if not isinstance(now, StructType) or not isinstance(before, ArrayType):
        return False
    entry = before.elementType
    return isinstance(entry, StructType) and all(n in now.names and n in entry.names for n in reads)
