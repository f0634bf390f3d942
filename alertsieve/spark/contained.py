"""An expression's runtime error as a value, so that one user's SQL cannot stop the query.

Spark's ANSI mode raises on a division by zero, a cast that fails or an overflow, and the whole
streaming query stops with it: every other filter's batch too. ``try_divide`` and friends cover
one operator each; Catalyst's own ``TryEval`` (what they were built on) wraps any expression
and returns null where it raises, in generated code and in Real-Time Mode alike. It catches
exceptions only: a Java ``Error`` (out of memory) is not contained, which is why sizes are
bounded before a filter runs (``alertsieve.filtering.untrusted``).
"""

from __future__ import annotations


def try_eval(column):
    """``column``, null on the rows where evaluating it raises."""
    from pyspark import SparkContext
    from pyspark.sql import Column

    jvm = SparkContext._jvm
    expressions = jvm.org.apache.spark.sql.classic.ExpressionUtils
    wrapped = jvm.org.apache.spark.sql.catalyst.expressions.TryEval(
        expressions.expression(column._jc)
    )
    return Column(expressions.column(wrapped))


def contained(condition):
    """(match, failed) of a boolean ``condition``: true where it holds, and whether evaluating it
    raised (then it does not match). One ``TryEval`` of a struct around the condition: the
    struct is never null, so a null result is an error, not an unknown condition."""
    from pyspark.sql import functions as F

    guarded = try_eval(F.struct(condition.alias("v")))
    return F.coalesce(guarded["v"], F.lit(False)), guarded.isNull()


#: What ``outcome`` gives inside its ``TryEval`` where the condition does not hold (then null):
#: below every index the job gives (filters, errors, quarantine).
_NO_MATCH = -(2**31)


def outcome(condition, matched: int, failed: int):
    """One int column, the condition evaluated once: ``matched`` where ``condition`` holds,
    ``failed`` where evaluating it raised, null otherwise (what the hot path collects per
    alert, ``alertsieve.stream.hot_path``)."""
    from pyspark.sql import functions as F

    inner = F.when(condition, F.lit(matched)).otherwise(F.lit(_NO_MATCH))
    return F.nullif(F.coalesce(try_eval(inner), F.lit(failed)), F.lit(_NO_MATCH))
