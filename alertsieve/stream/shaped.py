"""Filters run as data: each shape's condition once, against a broadcast table of its filters'
constants (``alertsieve.filtering.shapes`` finds the shapes).

Every alert row of the hot path is joined to the table (a broadcast nested-loop join: the table is
small, a row per filter); a pair is kept when its filter's shape holds with that row's constants,
and becomes the row that publishes the match. The table's one row of group ``SELF`` pairs with
every alert and carries what the compiled filters found, the quarantined messages and the alerts
that matched nothing, as before. The generated code holds one condition per shape, so ten
thousand filters of twenty shapes compile as twenty, and a filter of a known shape is a row.

The JVM must compile the join's generated method however large it grows (HotSpot leaves methods
over 8,000 bytes of bytecode to its interpreter: ``-XX:-DontCompileHugeMethods`` in
``alertsieve.spark.submit.java_options``). Measured here (10,000 alerts by 10,000 rows, local[2],
with the option): 1.0-1.3 s a batch with 40 shapes, 2.5 s with 200; by 2,000 rows in 200 shapes,
15 s without the option and 1.2 s with it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence

from alertsieve.filtering.clauses import Unfit, clause_shapes, clauses, misread
from alertsieve.filtering.model import Filter
from alertsieve.filtering.shapes import Shape, find_shapes, record_key
from alertsieve.spark.contained import try_eval

log = logging.getLogger(__name__)

#: The group of the table's row every alert pairs with (see the module).
SELF = 0
INDEX = "_k_index"  # the filter's index in the plan (SELF's row: -1)
GROUP = "_k_group"  # its shape, 1-based
NAME = "_k_name"  # its name and version, read by its fields record
VERSION = "_k_version"
HEADER = "_k_header"  # its Avro record's Confluent header (empty for JSON and alerts)
TOPIC = "_k_topic"  # where its matches go (null: withheld, its daily quota reached)
FORMAT = "_k_format"  # its fields record's format (null: it publishes the alert)
#: Every row's join key in Real-Time Mode (see ``join_condition``).
KEY, KEY_VALUE = "_k_key", -1
#: The values the clause shapes compare, computed once per alert (``value_columns``).
NUMBERS, STRINGS = "_k_numbers", "_k_strings"


def constant(group: int, slot: int) -> str:
    return f"_k{group}_{slot}"


def table_schema(shapes: Sequence[Shape]):
    from pyspark.sql import types as T

    fields = [
        T.StructField(INDEX, T.IntegerType(), False),
        T.StructField(GROUP, T.IntegerType(), False),
        T.StructField(NAME, T.StringType(), False),
        T.StructField(VERSION, T.StringType(), False),
        T.StructField(HEADER, T.BinaryType(), False),
        T.StructField(TOPIC, T.StringType(), True),
        T.StructField(FORMAT, T.StringType(), True),
        T.StructField(KEY, T.IntegerType(), False),
    ]
    kinds = {
        "int": T.IntegerType(),
        "bigint": T.LongType(),
        "double": T.DoubleType(),
        "boolean": T.BooleanType(),
        "strings": T.ArrayType(T.StringType()),
    }
    for g, s in enumerate(shapes, 1):
        for j, kind in enumerate(s.kinds):
            fields.append(T.StructField(constant(g, j), kinds.get(kind, T.StringType()), True))
    return T.StructType(fields)


#: A filter's name, version, Avro header (empty for JSON and alerts), topic and format, by its
#: index: what its rows publish with, read from the table so a deployment changes rows only.
Labels = Mapping[int, tuple[str, str, bytes, str | None, str | None]]
NO_LABELS = ("", "", b"", None, None)


def table_rows(shapes: Sequence[Shape], labels: Labels) -> list[tuple]:
    """SELF's row, then one per filter of each shape: its index, group, labels and, in its
    group's columns, its constants (nulls in the other groups'). The labels are columns rather
    than arrays indexed in the plan: a literal array of every filter's name in each group's
    record expression made the plan grow with groups times filters, analysed every batch."""
    width = sum(len(s.kinds) for s in shapes)
    rows = [(-1, SELF, *NO_LABELS, KEY_VALUE, *[None] * width)]
    start = 0
    for g, s in enumerate(shapes, 1):
        n = len(s.kinds)
        for i, values in zip(s.members, s.constants, strict=True):
            rows.append(
                (i, g, *labels.get(i, NO_LABELS), KEY_VALUE, *[None] * start, *values)
                + (None,) * (width - start - n)
            )
        start += n
    return rows


def shape_condition(g: int, s: Shape) -> str:
    if s.lifted is None:
        return clause_condition(g, s.slots)
    return s.lifted.render([constant(g, j) for j in range(len(s.kinds))])


def clause_condition(g: int, slots: int) -> str:
    """A clause shape's row holds when each of its literals does (``SLOT_KINDS``): its value,
    ``get(NUMBERS, i)`` within the range or ``get(STRINGS, i)`` among the strings, read through
    ``coalesce(atom, unknown) = wanted``; a slot without an index is no literal."""
    parts = []
    for j in range(slots):
        i, lo, hi, among, unknown, wanted = (constant(g, 6 * j + k) for k in range(6))
        value = f"get({NUMBERS}, {i})"
        atom = (
            f"({lo} IS NULL OR {value} >= {lo}) AND ({hi} IS NULL OR {value} <= {hi})"
            f" AND ({among} IS NULL OR array_contains({among}, get({STRINGS}, {i})))"
        )
        parts.append(f"({i} IS NULL OR coalesce({atom}, {unknown}) = {wanted})")
    return " AND ".join(parts)


def value_columns(shapes: Sequence[Shape]) -> list:
    """The values the clause shapes compare, for each alert: ``NUMBERS`` (doubles) and
    ``STRINGS`` (none without a clause shape; the clause shapes of a plan share them); a value
    that raises is null (contained: ``alertsieve.spark.contained``), so its comparisons are
    unknown."""
    from pyspark.sql import functions as F

    first = next((s for s in shapes if s.lifted is None), None)
    if first is None:
        return []
    numbers = [try_eval(F.expr(v).cast("double")) for v in first.numbers]
    strings = [try_eval(F.expr(v).cast("string")) for v in first.strings]
    return [
        (F.array(*numbers) if numbers else F.array().cast("array<double>")).alias(NUMBERS),
        (F.array(*strings) if strings else F.array().cast("array<string>")).alias(STRINGS),
    ]


def dispatch(conditions: Sequence[str], first: int = 1) -> str:
    """The condition of a row's group (``first`` numbers ``conditions[0]``), found by halving the
    groups (``if(group <= middle, ...)``): a few comparisons per (alert, row) pair rather than one
    per group before it, as ``group = 1 AND ... OR group = 2 AND ...`` took; every pair of the
    nested-loop join goes through it (10,000 filters: 120 million pairs a batch of 10,000)."""
    if len(conditions) == 1:
        return f"({conditions[0]})"
    half = len(conditions) // 2
    low, high = dispatch(conditions[:half], first), dispatch(conditions[half:], first + half)
    return f"if({GROUP} <= {first + half - 1}, {low}, {high})"


def join_condition(shapes: Sequence[Shape], keyed: bool = False):
    """SELF's row always; a filter's row where the alert decoded and its shape holds (a
    column). A shape's condition that raises on an (alert, row) pair (a user's division by
    zero) holds nowhere there: it is contained (``alertsieve.spark.contained``), so it cannot
    stop the query; the pair's row is not made, and not counted.

    ``keyed``: for Real-Time Mode, whose allowlist has Spark's broadcast hash join but not its
    nested-loop join: the same pairs, under a key every row shares (``least(_partition, -1)``,
    which the optimizer cannot fold to a constant, is -1 for every Kafka partition). Measured
    (10,000 by 10,000 rows, 40 shapes): 1.9-3.3 s a batch against the nested loop's 1.0-1.3 s."""
    from pyspark.sql import functions as F

    held = F.expr(dispatch([shape_condition(g, s) for g, s in enumerate(shapes, 1)]))
    condition = (F.col(GROUP) == F.lit(SELF)) | (
        F.col("_reason").isNull() & F.coalesce(try_eval(held), F.lit(False))
    )
    if not keyed:
        return condition
    return (F.expr(f"least(_partition, {KEY_VALUE})") == F.col(KEY)) & condition


def table(spark, shapes: Sequence[Shape], labels: Labels, stored: str | None = None):
    """The broadcast table of ``shapes``' constants: in the plan, or, with ``stored``, the Delta
    table there (``store``), which Spark reads again as it plans each micro-batch: a deployment
    that changes rows only (``alertsieve.stream.redeploy.rows_only``) rewrites it, and the
    running query publishes by the new rows from its next batch, without a restart."""
    from pyspark.sql import functions as F

    if stored is not None:
        return F.broadcast(spark.read.format("delta").load(stored))
    return F.broadcast(spark.createDataFrame(table_rows(shapes, labels), table_schema(shapes)))


def store(spark, path: str, shapes: Sequence[Shape], labels: Labels) -> None:
    """The table of ``shapes``' constants written over the Delta table at ``path`` (one commit:
    a batch reads the rows before it or after it, never a mixture)."""
    frame = spark.createDataFrame(table_rows(shapes, labels), table_schema(shapes))
    frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)


def runnable_shapes(
    samples, filters: Sequence[Filter], clauses_from: int, taken: frozenset[int] = frozenset()
) -> tuple[Shape, ...]:
    """The shapes of ``filters`` that Spark analyses with their constants as columns, over the
    sample alerts in the view; a shape it refuses (a constant that must be a literal, as in
    ``round(x, 2)``) is left to compile filter by filter, with a log line saying so. When at least
    ``clauses_from`` SQL filters of no shape read as clauses, they run as rows too
    (``clause_shapes``); the others compile. The filters of ``taken`` run elsewhere (predicate
    first) and are left out."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F

    def analysed(shapes: list[Shape], say: bool = True) -> bool:
        ones = [
            dataclasses.replace(s, members=s.members[:1], constants=s.constants[:1]) for s in shapes
        ]
        k = F.broadcast(
            samples.sparkSession.createDataFrame(table_rows(ones, {}), table_schema(ones))
        )
        reason = F.lit(None).cast("string").alias("_reason")
        try:
            frame = samples.select("*", *value_columns(ones), reason)
            frame.join(k, join_condition(ones), "left")
        except (AnalysisException, ParseException) as e:
            if not say:
                return False
            first = filters[shapes[0].members[0]]
            log.info(
                "%d filters of the shape of %r compile one by one: %s",
                len({i for s in shapes for i in s.members}),
                first.name,
                str(e).splitlines()[0],
            )
            return False
        return True

    # All at once first (35 shapes one by one took 8 s), one by one to find a refused one.
    out = find_shapes(filters, taken=taken)
    if out and not analysed(out, say=False):
        out = [s for s in out if analysed([s])]
    shaped = {i for s in out for i in s.members}
    rest = [i for i, f in enumerate(filters) if i not in shaped | taken and not f.runs_python]
    if len(rest) < max(clauses_from, 1):
        return tuple(out)
    found = typed_clauses(samples, filters, rest, "compiles one by one")
    if len(found) < max(clauses_from, 1):
        return tuple(out)
    shapes = clause_shapes(filters, found, record_key)
    return tuple(out + shapes) if analysed(shapes) else tuple(out)


def typed_clauses(
    samples, filters: Sequence[Filter], indices: Sequence[int], otherwise: str
) -> dict[int, list]:
    """{index: clauses} of the filters at ``indices`` whose SQL reads as clauses over values
    Spark reads as doubles or strings on ``samples``; each other one is logged (debug) with
    why, and ``otherwise``: what becomes of it."""
    found = {}
    for i in indices:
        try:
            found[i] = clauses(filters[i].expressions()["sql"])
        except Unfit as e:
            log.debug("filter %s %s: %s", filters[i].name, otherwise, e)
    types = value_types(samples, {a.value for cs in found.values() for c in cs for a, _ in c})
    for i in list(found):
        why = misread(found[i], types)
        if why is not None:
            log.debug("filter %s %s: %s", filters[i].name, otherwise, why)
            del found[i]
    return found


def value_types(samples, values: set[str]) -> dict[str, str]:
    """Each value's Spark type (``simpleString``) over the samples; a value Spark refuses is
    left out (its filters compile, and say why there)."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F

    ordered = sorted(values)
    try:
        schema = samples.select(*[F.expr(v).alias(f"v{k}") for k, v in enumerate(ordered)]).schema
        return {v: f.dataType.simpleString() for v, f in zip(ordered, schema.fields, strict=True)}
    except (AnalysisException, ParseException):
        out = {}
        for v in ordered:
            try:
                out[v] = samples.select(F.expr(v)).schema.fields[0].dataType.simpleString()
            except (AnalysisException, ParseException):
                continue
        return out
