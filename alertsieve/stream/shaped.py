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

from alertsieve.filtering.model import Filter
from alertsieve.filtering.shapes import Shape, find_shapes

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
    kinds = {"int": T.IntegerType(), "bigint": T.LongType(), "double": T.DoubleType()}
    for g, s in enumerate(shapes, 1):
        for j, kind in enumerate(s.lifted.kinds):
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
    width = sum(len(s.lifted.kinds) for s in shapes)
    rows = [(-1, SELF, *NO_LABELS, KEY_VALUE, *[None] * width)]
    start = 0
    for g, s in enumerate(shapes, 1):
        n = len(s.lifted.kinds)
        for i, values in zip(s.members, s.constants, strict=True):
            rows.append(
                (i, g, *labels.get(i, NO_LABELS), KEY_VALUE, *[None] * start, *values)
                + (None,) * (width - start - n)
            )
        start += n
    return rows


def shape_condition(g: int, s: Shape) -> str:
    return s.lifted.render([constant(g, j) for j in range(len(s.lifted.kinds))])


def join_condition(shapes: Sequence[Shape], keyed: bool = False) -> str:
    """SELF's row always; a filter's row where the alert decoded and its shape holds.

    ``keyed``: for Real-Time Mode, whose allowlist has Spark's broadcast hash join but not its
    nested-loop join: the same pairs, under a key every row shares (``least(_partition, -1)``,
    which the optimizer cannot fold to a constant, is -1 for every Kafka partition). Measured
    (10,000 by 10,000 rows, 40 shapes): 1.9-3.3 s a batch against the nested loop's 1.0-1.3 s."""
    held = " OR ".join(
        f"({GROUP} = {g} AND ({shape_condition(g, s)}))" for g, s in enumerate(shapes, 1)
    )
    condition = f"{GROUP} = {SELF} OR (_reason IS NULL AND ({held}))"
    return f"least(_partition, {KEY_VALUE}) = {KEY} AND ({condition})" if keyed else condition


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


def runnable_shapes(samples, filters: Sequence[Filter]) -> tuple[Shape, ...]:
    """The shapes of ``filters`` that Spark analyses with their constants as columns, over the
    sample alerts in the view; a shape it refuses (a constant that must be a literal, as in
    ``round(x, 2)``) is left to compile filter by filter, with a log line saying so."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F

    out = []
    for s in find_shapes(filters):
        one = dataclasses.replace(s, members=s.members[:1], constants=s.constants[:1])
        k = F.broadcast(
            samples.sparkSession.createDataFrame(table_rows([one], {}), table_schema([one]))
        )
        try:
            samples.select("*", F.lit(None).cast("string").alias("_reason")).join(
                k, F.expr(join_condition([one])), "left"
            )
        except (AnalysisException, ParseException) as e:
            first = filters[s.members[0]]
            log.info(
                "%d filters of the shape of %r compile one by one: %s",
                len(s.members),
                first.name,
                str(e).splitlines()[0],
            )
            continue
        out.append(s)
    return tuple(out)
