"""The hot path: ONE stateless streaming query from the input topic to the filters' topics.

Kafka source -> decode into the filter view (only the fields the filters read) and every filter
matched over it (``evaluation``) -> one row per (alert, matching filter), plus one per
quarantined message, each its Kafka record (``records``) -> Spark's native Kafka sink, whose
per-row ``topic`` column fans out to every filter's topic in one write (its producer:
``sink_settings``). What the job reports per batch is counted on the way by ``observe()``
(``batch_metrics``; ``alertsieve.stream.metrics`` reads it back); the Delta archive is its own
query reading these topics (``alertsieve.stream.archive``).

No foreachBatch, cache or collect: nothing waits for the driver, so the same plan runs in
micro-batches or in Real-Time Mode (milliseconds from input append to output append). Two
exceptions in micro-batches: a job whose matching runs in Python (the predicate-first matcher,
Python filters, models) runs each batch apart from the alerts' bytes
(``alertsieve.stream.bytes_apart``), and a job with daily quotas decides which filters are
withheld at each batch's start (``alertsieve.stream.quota_gate``), so its rows go through
``publish_within`` (a foreachBatch writing the same Kafka records, less the withheld filters').
In Real-Time Mode the withheld filters are planned into the query (their rows get no topic).
"""

from __future__ import annotations

from alertsieve.publish import contract
from alertsieve.stream import shaped
from alertsieve.stream.batch_metrics import (
    ARRIVED,
    COST,
    OBSERVED,
    arrival_metrics,
    cost_metrics,
    outcome_metrics,
)
from alertsieve.stream.config import JobConfig
from alertsieve.stream.evaluation import evaluated
from alertsieve.stream.outcome_columns import FILTER, runs_python
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.records import outcomes, output_rows, table_labels
from alertsieve.stream.sink_settings import sink_options


def hot_path(
    raw,
    plan: JobPlan,
    cfg: JobConfig,
    sized: frozenset[str] = frozenset(),
    withheld: frozenset[str] = frozenset(),
    keep_filter: bool = False,
    learn: bool = True,
    stored: str | None = None,
    alert_bytes: bool = True,
    objects=None,
):
    """The streaming frame the Kafka sink writes, with its metrics observed: arrivals on the Kafka
    rows as they come (no copy), outcomes on the few rows that publish (``metrics.batch_stats``
    joins the two). An observed frame is materialised row by row, so neither observation sits
    where every alert's bytes would be copied for it. In a job with quotas: ``sized``, the
    filters that have one (their bytes counted); ``withheld``, those whose rows get no topic
    (Real-Time Mode); ``keep_filter``, rows that keep their filter for ``publish_within``;
    ``learn``, a message of a writer the plan does not know stops its task (the job learns it:
    ``alertsieve.stream.new_writers``) rather than going to quarantine; ``stored``, the Delta
    table the shaped filters' rows are read from each batch (``shaped.store``), else they are
    planned in. Without ``alert_bytes``, the alerts' bytes are not carried past their decode:
    the rows that publish an alert have none (``WHOLE``), for ``alertsieve.stream.bytes_apart``
    to join them in; the noop sink needs none. ``objects``: the objects query's state
    (``alertsieve.stream.objects.ObjectState``), whose Kafka rows are alerts and annotations."""
    arrived = raw.observe(ARRIVED, *arrival_metrics())
    table = None
    if plan.shapes:
        labels = table_labels(plan, cfg, withheld)
        table = shaped.table(raw.sparkSession, plan.shapes, labels, stored)
    noop = "noop" in cfg.sinks  # evaluation alone: every match counted, no record written
    carried_bytes = alert_bytes and not noop
    flags = evaluated(
        arrived, plan, table, learn, cfg.realtime, alert_bytes=carried_bytes, objects=objects
    )
    if runs_python(plan):
        flags = flags.observe(COST, *cost_metrics(plan))
    shared = cfg.delivery == contract.DELIVERY_SHARED
    outcome = outcomes(flags, plan, cfg, withheld, records=not noop)
    outcome = outcome.observe(
        OBSERVED, *outcome_metrics(plan, sized, shared, tuple(outcome.columns))
    )
    return outcome if noop else output_rows(outcome, cfg, keep_filter)


def within_quotas(rows, withheld: frozenset[str]):
    """``hot_path``'s rows (kept with their ``FILTER``) less the matches of the ``withheld``
    filters (their daily quota reached), without ``FILTER``. Their metrics were observed on every
    match, published or not, and the job counts the withheld ones from its decision
    (``metrics.BatchStats.withhold``)."""
    from pyspark.sql import functions as F

    if withheld:
        name = F.col(FILTER)
        rows = rows.where(name.isNull() | ~name.isin(*sorted(withheld)))
    return rows.drop(FILTER)


def publish_within(batch, withheld: frozenset[str], cfg: JobConfig, topics: int) -> None:
    """Write one batch of ``hot_path``'s rows (a job with quotas) to Kafka, less the matches of
    the ``withheld`` filters (``within_quotas``). The batch is the query's own."""
    within_quotas(batch, withheld).write.format("kafka").options(**sink_options(cfg, topics)).save()
