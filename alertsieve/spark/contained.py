"""An expression's runtime error as a value, so that one user's SQL cannot stop the query.

Spark's ANSI mode raises on a division by zero, a cast that fails or an overflow, and the whole
streaming query stops with it: every other filter's batch too. ``try_divide`` and friends cover
one operator each; Catalyst's own ``TryEval`` (what they were built on) wraps any expression
and returns null where it raises, in generated code and in Real-Time Mode alike. It catches
exceptions only: a Java ``Error`` (out of memory) is not contained, which is why sizes are
bounded before a filter runs (``alertsieve.filtering.untrusted``).

Always around a struct: the optimizer pushes a unary expression into the branches of a
``CASE``/``IF`` whose results are constants (``PushFoldableIntoBranches``), so
``TryEval(CASE WHEN x / 0 > 1 THEN 7 END)`` became ``CASE WHEN x / 0 > 1 THEN 7 END``, the
condition outside it (seen on Spark 4.2). A struct is not a ``CASE``, and it is never null
itself, so a null result says "raised", not "unknown".
"""

from __future__ import annotations


def guarded(column):
    """``TryEval(struct(column AS v))``: null where evaluating ``column`` raised."""
    from pyspark import SparkContext
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    jvm = SparkContext._jvm
    expressions = jvm.org.apache.spark.sql.classic.ExpressionUtils
    wrapped = jvm.org.apache.spark.sql.catalyst.expressions.TryEval(
        expressions.expression(F.struct(column.alias("v"))._jc)
    )
    return Column(expressions.column(wrapped))


def try_eval(column):
    """``column``, null on the rows where evaluating it raises."""
    return guarded(column)["v"]


def contained(condition):
    """(match, failed) of a boolean ``condition``: true where it holds, and whether evaluating it
    raised (then it does not match)."""
    from pyspark.sql import functions as F

    result = guarded(condition)
    return F.coalesce(result["v"], F.lit(False)), result.isNull()


def outcome(condition, matched: int, failed: int):
    """One int column: ``matched`` where ``condition`` holds, ``failed`` where evaluating it
    raised, null otherwise (what the hot path collects per alert,
    ``alertsieve.stream.hot_path``). The condition is evaluated once: Spark computes the
    guarded struct read twice here once per row (common subexpressions)."""
    from pyspark.sql import functions as F

    result = guarded(condition)
    return F.when(result.isNull(), F.lit(failed)).when(result["v"], F.lit(matched))
