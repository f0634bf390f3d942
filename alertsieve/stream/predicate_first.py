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

import numpy as np

from alertsieve.filtering.model import Filter
from alertsieve.filtering.predicates import Predicates, build, columns, failed, match, readers
from alertsieve.spark.contained import guarded

#: The column of each alert's predicate-first result (``outcomes``): ``m``, the indices of the
#: filters it passed (its compiled filters' first), ``t``, the chunk's tally (``tally``), and
#: ``s``, the seconds the matcher took over the chunk.
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


def merged(
    before_offsets: np.ndarray, before: np.ndarray, alerts: np.ndarray, filters: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of ``n`` lists, each alert's ``before`` list (``before_offsets`` into
    ``before``) followed by its matches (``alerts``/``filters``, sorted by alert)."""
    after_offsets = np.searchsorted(alerts, np.arange(n + 1))
    first, second = np.diff(before_offsets), np.diff(after_offsets)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(first + second, out=offsets[1:])
    values = np.empty(offsets[-1], np.int32)
    row = np.repeat(np.arange(n), first)
    start = before_offsets[0]
    at = np.arange(len(row)) + start - before_offsets[row]
    values[offsets[row] + at] = before[start : before_offsets[-1]]
    row = np.repeat(np.arange(n), second)
    values[offsets[row] + first[row] + np.arange(len(row)) - after_offsets[row]] = filters
    return offsets, values


def tally(indices: np.ndarray) -> bytes:
    """The matches per filter of ``indices`` (every match of a chunk of alerts), as pairs of
    little-endian int32 (filter, count): one small value per chunk, where a list of every
    match's filter (78 per alert at 10,000 filters) filled the driver's progress reports."""
    found, counts = np.unique(indices[indices >= 0], return_counts=True)
    return np.stack([found, counts], axis=1).astype("<i4").tobytes()


def tally_counts(tallies: Sequence[bytes | str] | None) -> dict[int, int]:
    """{filter index: matches} summed over a batch's tallies (bytes, or base64 as a progress
    report's JSON writes them)."""
    import base64

    counts: dict[int, int] = {}
    for t in tallies or []:
        raw = base64.b64decode(t) if isinstance(t, str) else t
        pairs = np.frombuffer(raw, "<i4").reshape(-1, 2)
        for i, c in pairs.tolist():
            counts[i] = counts.get(i, 0) + c
    return counts


def _matcher(p: Predicates, failed_index: int):
    """The UDF's function: the struct of an Arrow batch's values, the values that raised on
    each alert (``x``), the alert's compiled matches (``c``) and whether it decoded (``ok``) ->
    each alert's matches, then ``failed_index - f`` for each filter f that compares a value that
    raised on it (its error: ``alertsieve.stream.outcome_columns.error_index``) and, on the batch's
    first alert, the tally of the decoded alerts' matches."""
    readers_of = readers(p)

    def run(values):
        import time

        import pyarrow as pa
        import pyarrow.compute as pc

        started = time.perf_counter()
        numbers, nulls, strings = [], [], []
        for k in range(len(p.numbers)):
            column = values.field(f"n{k}")
            nulls.append(column.is_null().to_numpy(zero_copy_only=False))
            numbers.append(pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False))
        for k in range(len(p.strings)):
            strings.append(values.field(f"s{k}").to_pylist())
        alerts, filters = match(p, columns(p, numbers, nulls, strings))
        raised = values.field("x")
        if len(raised.values):
            bad, by = failed(readers_of, raised.offsets.to_numpy(), raised.values.to_numpy())
            alerts = np.concatenate([alerts, bad])
            filters = np.concatenate([filters, failed_index - by]).astype(filters.dtype)
            order = np.argsort(alerts, kind="stable")
            alerts, filters = alerts[order], filters[order]
        compiled = values.field("c")
        n = len(values)
        offsets, found = merged(
            compiled.offsets.to_numpy(), compiled.values.to_numpy(), alerts, filters, n
        )
        ok = values.field("ok").to_numpy(zero_copy_only=False)
        counted = found[np.repeat(ok, np.diff(offsets))]
        tallies = [tally(counted)] + [None] * (n - 1)
        seconds = [time.perf_counter() - started] + [None] * (n - 1)
        return pa.StructArray.from_arrays(
            [
                pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(found)),
                pa.array(tallies, pa.binary()),
                pa.array(seconds, pa.float64()),
            ],
            names=["m", "t", "s"],
        )

    import pyarrow as pa

    run.__annotations__ = {"values": pa.Array, "return": pa.Array}
    return run


def outcomes(p: Predicates, compiled, ok, failed_index: int):
    """The column of each alert's predicate-first result: ``m``, its ``compiled`` matches (an
    array of filter indices) and then its predicate-first ones (a value that raises on an
    alert is null there, so its comparisons are unknown, as ``try_divide`` would give, and the
    alert is an error, ``failed_index - f``, of each filter f that compares it:
    ``alertsieve.spark.contained``); ``t``, on one alert of each
    chunk Python computed, the tally of the chunk's matches over the alerts where ``ok`` (null
    on the others); ``s``, on the same alert, the seconds the matcher took over the chunk."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    read = [guarded(F.expr(v).cast("double")) for v in p.numbers]
    read += [guarded(F.expr(v).cast("string")) for v in p.strings]
    values = [g["v"].alias(f"n{k}") for k, g in enumerate(read[: len(p.numbers)])]
    values += [g["v"].alias(f"s{k}") for k, g in enumerate(read[len(p.numbers) :])]
    raised = F.array_compact(F.array(*[F.when(g.isNull(), F.lit(k)) for k, g in enumerate(read)]))
    result = "struct<m: array<int>, t: binary, s: double>"
    inputs = F.struct(*values, raised.alias("x"), compiled.alias("c"), ok.alias("ok"))
    return arrow_udf(_matcher(p, failed_index), result)(inputs)
