"""Constants of thousands of filters as one literal each (``alertsieve.spark.constants``): every
value read back at its position as Python holds it, None and bytes included, and the plan Spark
optimises holds one array literal, not a literal per value."""

from __future__ import annotations

import pytest

from alertsieve.spark.constants import constant_array, constant_at

VALUES = {
    "string": ["ztf_risers", "", None, "it's", 'a "b" \\ c', "é ✓"],
    "int": [0, -5, None, 2**31 - 1, 7],
    "bigint": [2**40, None, -1],
    "binary": [b"\x00\x00\x00\x01\x7f", b"", None, bytes(range(256))],
}


@pytest.mark.parametrize("element", sorted(VALUES))
def test_each_value_is_read_back_at_its_position(spark, element):
    from pyspark.sql import functions as F

    values = VALUES[element]
    rows = (
        spark.range(1, len(values) + 1)
        .select("id", constant_at(values, element, F.col("id").cast("int")).alias("v"))
        .orderBy("id")
        .collect()
    )
    got = [bytes(r["v"]) if isinstance(r["v"], bytearray) else r["v"] for r in rows]
    assert got == values


def test_ten_thousand_values_are_one_literal_before_the_optimiser(spark):
    """What each batch's optimisation starts from: one string literal per array, where
    ``array(...)`` of 10,000 literals is an expression of 10,000 nodes folded at every batch."""
    from pyspark.sql import functions as F

    names = [f"filter_{i}" for i in range(10_000)]
    frame = spark.range(3).select(
        constant_at(names, "string", F.col("id").cast("int") + 1).alias("name"),
        F.array_contains(constant_array(range(10_000), "int"), F.col("id").cast("int")).alias("in"),
    )
    expressions = frame._jdf.queryExecution().analyzed().expressions()
    leaves = sum(expressions.apply(i).collectLeaves().size() for i in range(expressions.size()))
    assert leaves < 20  # the ids, the positions, two strings and their separators
    assert [(r["name"], r["in"]) for r in frame.collect()] == [
        ("filter_0", True),
        ("filter_1", True),
        ("filter_2", True),
    ]
