"""Free SQL as rows of clauses (``alertsieve.filtering.clauses``): each condition's rows, run by
the job's one condition over a table (``alertsieve.stream.shaped``), select exactly what Spark
selects with the SQL itself, each alert once, over the diaSources of the real LSSTCam v10.0 and
Operations Rehearsal v7.4 alerts of tests/data/real and a grid of the values SQL treats apart
(null, NaN, -0.0, the constants themselves)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import fastavro
import pytest

from alertsieve.filtering.clauses import Unfit, clause_shapes, clauses, misread
from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.shapes import record_key

REAL = Path(__file__).parent / "data" / "real"
FILES = ("rubin-lsstcam-v10_0.avro", "rubin-lsstcam-v10_0-b.avro", "rubin-opsrehearsal-v7_4.avro")
SOURCE = ("snr", "psfFlux", "reliability", "x", "detector")

CONDITIONS = [
    "diaSource.snr > 5",
    "diaSource.snr >= 5.0 AND diaSource.snr <= 6.6653666496276855",
    "diaSource.snr < -0.0 OR diaSource.snr = 0",
    "diaSource.snr <> 5 AND diaSource.snr != 0.0",
    "-1e3 < diaSource.psfFlux",
    "diaSource.psfFlux BETWEEN -4361.10498046875 AND 1513.39794921875",
    "diaSource.psfFlux NOT BETWEEN -5000 AND 0",
    "diaSource.detector IN (9, 150, 6)",
    "diaSource.detector NOT IN (9, 150)",
    "diaSource.detector > 5.5 AND diaSource.detector < 150",
    "diaSource.band IN ('g', 'i') OR diaSource.reliability > 0.5",
    "diaSource.band NOT IN ('i') AND NOT diaSource.snr > 5",
    "diaSource.band = 'i' AND (diaSource.x < 250 OR diaSource.x IS NULL)",
    "diaSource.band != 'r' OR diaSource.band IS NULL",
    "NOT (diaSource.reliability > 0.5 AND diaSource.snr > 6) AND diaSource.x > 100",
    "(diaSource.snr > 5 OR diaSource.psfFlux < 0) AND (diaSource.x > 240 OR diaSource.detector = 9)",
    "size(prvDiaSources) >= 1 AND ssSource IS NULL",
    "ssSource IS NOT NULL OR size(prvDiaSources) = -1",
    "diaSource.psfFlux / 1000 > 1.5 OR (diaSource.reliability BETWEEN 0 AND 0)",
    "NOT (diaSource.band IN ('g', 'r') OR diaSource.detector < 10)",
]


def _sources() -> list[dict]:
    """Real diaSources (with whether the alert had a history and a solar-system source), then a
    grid of the values SQL compares apart, in rows whose fields cycle at coprime periods."""
    rows = []
    for name in FILES:
        for alert in fastavro.reader((REAL / name).open("rb")):
            d = alert["diaSource"]
            rows.append(
                {
                    "diaSource": {**{k: d.get(k) for k in SOURCE}, "band": d.get("band")},
                    "prvDiaSources": alert.get("prvDiaSources"),
                    "ssSource": alert.get("ssSource"),
                }
            )
    floats = [None, math.nan, -0.0, 0.0, 5.0, 5.0000005, 4.9999995, 6.6653666496276855, 1e30, -1e4]
    fluxes = [None, math.nan, -4361.10498046875, 1513.39794921875, 1500.0, 0.0, -5000.0]
    ints = [None, 0, 5, 6, 9, 150, 151]
    bands = [None, "g", "r", "i", ""]
    histories = [None, [], [{}], [{}, {}]]
    for k in range(len(floats) * len(fluxes) * 2):
        f = floats[k % len(floats)]
        rows.append(
            {
                "diaSource": {
                    "snr": f,
                    "psfFlux": fluxes[k % len(fluxes)],
                    "reliability": floats[(k // 3) % len(floats)],
                    "x": None if f is None else (f * 50 if math.isfinite(f) else f),
                    "detector": ints[k % len(ints)],
                    "band": bands[k % len(bands)],
                },
                "prvDiaSources": histories[k % len(histories)],
                "ssSource": {"ssObjectId": k} if k % 3 == 0 else None,
            }
        )
    return rows


@pytest.fixture(scope="module")
def frame(spark):
    from pyspark.sql import types as T

    source = T.StructType(
        [T.StructField(k, T.FloatType()) for k in ("snr", "psfFlux", "reliability", "x")]
        + [T.StructField("detector", T.IntegerType()), T.StructField("band", T.StringType())]
    )
    history = T.ArrayType(T.StructType([T.StructField("psfFlux", T.FloatType())]))
    schema = T.StructType(
        [
            T.StructField("_id", T.IntegerType()),
            T.StructField("diaSource", source),
            T.StructField("prvDiaSources", history),
            T.StructField("ssSource", T.StructType([T.StructField("ssObjectId", T.LongType())])),
        ]
    )
    rows = [
        (
            i,
            tuple(s["diaSource"][f.name] for f in source.fields),
            None if s["prvDiaSources"] is None else [(None,) for _ in s["prvDiaSources"]],
            None if s["ssSource"] is None else (s["ssSource"]["ssObjectId"],),
        )
        for i, s in enumerate(_sources())
    ]
    return spark.createDataFrame(rows, schema).cache()


def test_clause_rows_select_what_spark_selects_with_the_sql_each_alert_once(frame):
    from pyspark.sql import functions as F

    from alertsieve.stream import shaped

    filters = [AlertFilter(name=f"c{i}", sql=sql) for i, sql in enumerate(CONDITIONS)]
    found = {i: clauses(f.sql) for i, f in enumerate(filters)}
    types = shaped.value_types(frame, {a.value for cs in found.values() for c in cs for a, _ in c})
    assert {i: misread(cs, types) for i, cs in found.items()} == dict.fromkeys(found)
    shapes = clause_shapes(filters, found, record_key)
    assert len(shapes) == 1  # one record (the default fields), one shape
    table = frame.sparkSession.createDataFrame(
        shaped.table_rows(shapes, {}), shaped.table_schema(shapes)
    )
    alerts = frame.select("*", *shaped.value_columns(shapes), F.lit(None).alias("_reason"))
    pairs = (
        alerts.join(F.broadcast(table), shaped.join_condition(shapes))
        .where(F.col(shaped.INDEX) >= 0)
        .select("_id", shaped.INDEX)
        .collect()
    )
    got = Counter((r[shaped.INDEX], r["_id"]) for r in pairs)
    assert [pair for pair, n in got.items() if n > 1] == []  # disjoint clauses: each alert once
    for i, f in enumerate(filters):
        want = {r["_id"] for r in frame.where(f.sql).select("_id").collect()}
        assert {a for (j, a) in got if j == i} == want, f.sql
    assert all(any(j == i for j, _ in got) for i in range(len(filters)))  # none selects nothing


@pytest.mark.parametrize(
    "sql",
    [
        "CASE WHEN diaSource.snr > 5 THEN 1 ELSE 0 END = 1",
        "diaSource.band LIKE 'g%'",
        "diaSource.snr > 5L",
        "diaSource.snr > diaSource.psfFlux",
        "diaSource.snr <=> 5",
        "diaSource.band = 'it''s'",
        "diaSource.band > 'g'",
        "exists(prvDiaSources, p -> p.psfFlux > 5)",
        "diaSource.snr > 5 = true",
        "diaSource.snr IN (5, 'g')",
        " OR ".join(f"diaSource.detector = {k} AND diaSource.snr > {k}" for k in range(5)),
    ],
)
def test_what_clauses_do_not_read_exactly_compiles(sql):
    with pytest.raises(Unfit):
        clauses(sql)


def test_a_value_a_double_does_not_hold_compiles():
    found = clauses("diaSource.diaSourceId > 5 AND diaSource.snr > 16777217")
    assert misread(found, {"diaSource.diaSourceId": "bigint", "diaSource.snr": "double"}) == (
        "diaSource.diaSourceId: bigint, which a double does not hold exactly"
    )
    assert misread(found, {"diaSource.diaSourceId": "int", "diaSource.snr": "float"}) == (
        "diaSource.snr: a float compared with an integer beyond 2**24"
    )
    assert misread(clauses("diaSource.band = 'g'"), {"diaSource.band": "int"}) == (
        "diaSource.band: int compared with strings"
    )


def test_an_or_is_clauses_that_never_overlap():
    rows = clauses("(a > 1 OR b < 2) AND c IN ('x', 'y')")
    assert [[(atom.value, accept) for atom, accept in row] for row in rows] == [
        [("a", (False, True)), ("c", (False, True))],
        [("a", (False, False)), ("b", (False, True)), ("c", (False, True))],
    ]
    assert list(itertools.chain.from_iterable(rows))[1][0].among == ("x", "y")


def test_predicate_first_matching_selects_what_spark_selects_with_the_sql(frame):
    """The same conditions matched predicate first (``alertsieve.filtering.predicates``, in the
    hot path's Arrow UDF) over the same rows: each filter's alerts are those Spark's own SQL
    selects, each once, after the alert's compiled matches; the tallies count the matches of the
    alerts that decoded (here: every third is taken as not), never a Python filter's error."""
    from pyspark.sql import functions as F

    from alertsieve.stream.predicate_first import outcomes, predicate_filters, tally_counts

    filters = [AlertFilter(name=f"c{i}", sql=sql) for i, sql in enumerate(CONDITIONS)]
    p = predicate_filters(frame, filters)
    assert p is not None and p.filters == list(range(len(filters)))
    compiled_index, error_index = 100, -5  # as the hot path's compiled match and error
    compiled = F.when(
        F.col("_id") % 2 == 0, F.array(F.lit(compiled_index), F.lit(error_index))
    ).otherwise(F.array().cast("array<int>"))
    ok = F.col("_id") % 3 != 0
    result = outcomes(p, compiled, ok, -1000).alias("r")
    rows = frame.select("_id", result).collect()
    got = Counter((i, r["_id"]) for r in rows for i in r["r"]["m"] if 0 <= i < compiled_index)
    assert [pair for pair, n in got.items() if n > 1] == []
    for i, f in enumerate(filters):
        want = {r["_id"] for r in frame.where(f.sql).select("_id").collect()}
        assert {a for (j, a) in got if j == i} == want, f.sql
    for r in rows:
        before = [compiled_index, error_index] if r["_id"] % 2 == 0 else []
        assert r["r"]["m"][: len(before)] == before
    counted = Counter(i for r in rows if r["_id"] % 3 != 0 for i in r["r"]["m"] if i >= 0)
    assert tally_counts([r["r"]["t"] for r in rows if r["r"]["t"] is not None]) == counted
