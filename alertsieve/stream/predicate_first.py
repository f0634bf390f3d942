"""The hot path's predicate-first filters: which filters run that way, and the column that
matches them (``alertsieve.filtering.predicates`` is the matcher).

Every SQL filter whose condition reads as clauses (``alertsieve.filtering.clauses``), its values
typed on the sample alerts, is matched together with all the others in one Arrow UDF over the
values they compare: a few dozen doubles and strings per alert go to Python, never the alert's
bytes, and one array per alert comes back, the indices of the filters it passed. The alert's
compiled filters and its shaped filters (those this reads not exactly: ``x > 2 * y``,
functions, ``LIKE``) run beside it as before.

Real-Time Mode runs no Python UDF, and a job under ``--watch`` deploys filters of known shapes as
rows of a table without a restart (``alertsieve.stream.redeploy``): both keep the shaped rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from alertsieve.filtering.model import Filter
from alertsieve.filtering.predicates import Predicates, build, columns, match

#: The column of each alert's predicate-first matches (filter indices).
MATCHED = "_p_matched"


def predicate_filters(samples, filters: Sequence[Filter]) -> Predicates | None:
    """The predicate-first tables of ``filters``' SQL filters that read as clauses over values
    Spark reads as doubles or strings on ``samples`` (the view of the sample alerts); None when
    there is none. The others are left to the shapes and to compilation, each with a debug line
    saying why."""
    from alertsieve.stream.shaped import typed_clauses

    sql = [i for i, f in enumerate(filters) if not f.runs_python]
    found = typed_clauses(samples, filters, sql, "is not matched predicate first")
    return build(found) if found else None


def _matcher(p: Predicates):
    """The UDF's function: the struct of an Arrow batch's values -> each alert's matches."""

    def run(values):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        numbers, nulls, strings = [], [], []
        for k in range(len(p.numbers)):
            column = values.field(f"n{k}")
            nulls.append(column.is_null().to_numpy(zero_copy_only=False))
            numbers.append(pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False))
        for k in range(len(p.strings)):
            strings.append(values.field(f"s{k}").to_pylist())
        alerts, filters = match(p, columns(p, numbers, nulls, strings))
        offsets = np.searchsorted(alerts, np.arange(len(values) + 1)).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(filters, pa.int32()))

    import pyarrow as pa

    run.__annotations__ = {"values": pa.Array, "return": pa.Array}
    return run


def matched(p: Predicates):
    """The column of each alert's predicate-first matches: an array of filter indices, empty
    where it passed none (null on an alert whose values are null: never, the struct is not)."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    values = [F.expr(v).cast("double").alias(f"n{k}") for k, v in enumerate(p.numbers)]
    values += [F.expr(v).cast("string").alias(f"s{k}") for k, v in enumerate(p.strings)]
    return arrow_udf(_matcher(p), "array<int>")(F.struct(*values))
