"""What a SQL filter costs per alert, measured on reference alerts: admission's budget.

The static checks (``alertsieve.filtering.untrusted``) bound what one call can build, but not
what a condition does with the alert's own arrays: three lambdas nested over 400 earlier
detections are 64 million steps an alert. So each new SQL filter's evaluation is timed on the
reference alerts (at most ``ALERTS``), decoded and cached once in one partition, so that the
time is one core's: the filters in groups (``GROUP``), a group under the budget passing all its
members at once (a cost is never negative), a group over it halved, and a small one
(``ALONE``) split into its filters, each over the budget then refused with its own cost. A
measurement that runs past its time limit is stopped (Spark's job group cancelled) and counts as
over the budget. Noise only adds time: a group is timed once, less the same scan without
filters, and a filter found over the budget by less than twice is timed up to ``REPEATS``
times, its least kept.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence

from alertsieve.backtest.sources import AlertSource
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import Filter
from alertsieve.filtering.prepare import prepare
from alertsieve.filtering.scores.model import Model
from alertsieve.spark.session import driver_heap_mb

log = logging.getLogger(__name__)

#: Filters timed together at first (those of a group under the budget pass at once), and the
#: size of a group over the budget that is split into its filters rather than halved.
GROUP, ALONE = 100, 16
REPEATS = 3
#: The reference alerts a cost is measured on, at most.
ALERTS = 500
#: The least time a measurement may take before it is stopped, in seconds (else ten times
#: what the budget allows the group).
MIN_LIMIT_S = 10.0


def over_budget(
    spark,
    filters: Sequence[Filter],
    alerts: AlertSource,
    budget_s: float,
    catalog_dir: str = "catalogs",
    models: list[Model] | None = None,
) -> dict[str, float]:
    """{name: seconds of a core per alert} of the SQL filters of ``filters`` whose evaluation on
    ``alerts`` costs more than ``budget_s`` per alert (None: it was stopped at its limit)."""
    sql = [f for f in filters if not f.runs_python]
    if not sql:
        return {}
    prepared = prepare(
        spark, sql, alerts.decoder, alerts.head, catalog_dir, driver_heap_mb(spark), models=models
    )
    decoded = alerts.decoder.decode(alerts.raw, prepared.paths).where("_reason IS NULL")
    view = filter_view(decoded, (), prepared.context, prepared.scoring).limit(ALERTS)
    view = view.coalesce(1).persist()
    try:
        n = view.count()
        if not n:
            return {}
        base = _seconds(view, [], MIN_LIMIT_S)
        found: dict[str, float] = {}
        pending = [sql[i : i + GROUP] for i in range(0, len(sql), GROUP)]
        while pending:
            group = pending.pop()
            limit = max(MIN_LIMIT_S, 10 * budget_s * n * len(group))
            columns = [f.evaluate()[0] for f in group]
            cost = _cost(_seconds(view, columns, limit), base, n)
            if cost is not None and cost <= budget_s:
                continue
            if len(group) > ALONE:
                pending += [group[: len(group) // 2], group[len(group) // 2 :]]
            elif len(group) > 1:
                pending += [[f] for f in group]
            else:
                for _ in range(REPEATS - 1):  # again only near the budget: noise adds time
                    if cost is None or not budget_s < cost <= 2 * budget_s:
                        break
                    cost = min(cost, _cost(_seconds(view, columns, limit), base, n) or cost)
                if cost is None or cost > budget_s:
                    found[group[0].name] = cost if cost is not None else float("inf")
                    log.info("admission: %s costs %s per alert", group[0].name, per_alert(cost))
        return found
    finally:
        view.unpersist()


def _cost(seconds: float | None, base: float, n: int) -> float | None:
    return None if seconds is None else max(seconds - base, 0.0) / n


def per_alert(seconds: float | None) -> str:
    """A cost as a person reads it: microseconds or milliseconds of a core per alert."""
    if seconds is None or seconds == float("inf"):
        return "more than its time limit"
    return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def _seconds(view, columns: list, limit_s: float) -> float | None:
    """One run of ``columns`` over the cached ``view`` (a constant when there are none), written
    nowhere; None when it passed ``limit_s`` and was stopped."""
    from pyspark.sql import functions as F

    sc = view.sparkSession.sparkContext
    frame = view.select(*columns) if columns else view.select(F.lit(1))
    group = f"alertsieve-cost-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "admission: a filter's cost", interruptOnCancel=True)
    timer = threading.Timer(limit_s, sc.cancelJobGroup, [group])
    timer.start()
    start = time.perf_counter()
    try:
        frame.write.format("noop").mode("overwrite").save()
    except Exception:  # noqa: BLE001 - cancelled at its limit (Spark's error says so)
        if time.perf_counter() - start >= limit_s:
            return None
        raise
    finally:
        timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)
    return time.perf_counter() - start
