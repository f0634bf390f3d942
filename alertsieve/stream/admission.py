"""Admission: a filter that would flood the stream is refused before it publishes.

A filter that passes everything deploys like any other, and at Rubin's 10 million alerts a night
one such filter publishes ~1 TB of payloads, slowing every other filter's latency (the brokers
refuse or cap it: BOOM activates no filter passing more than 5% of a reference night,
boom-astro/boom#450). With ``admission`` in the job's settings, each new or changed filter (at
start-up all of them; under ``--watch`` those whose version differs from the running one) is
backtested on the ``reference`` alerts, all together in one pass (``alertsieve.backtest``), and
refused when its rate is above its cap: its own ``max_rate``, else ``admission.max_rate``. A SQL
filter is refused too when its condition costs more than ``admission.max_ms_per_alert`` of a core
per reference alert (``alertsieve.backtest.cost``): a user's filter cannot slow the others. A
refusal is a ``FilterError`` naming the filter: ``on_bad_filter: skip`` leaves it out (or keeps
its running version), ``fail`` stops the start-up or refuses the deployment.
"""

from __future__ import annotations

import logging

from alertsieve.backtest.cost import over_budget, per_alert
from alertsieve.backtest.run import backtest
from alertsieve.backtest.sources import load_alerts
from alertsieve.filtering.model import Filter, FilterError
from alertsieve.filtering.scores.discovery import discover_models
from alertsieve.stream.config import Admission, JobConfig

log = logging.getLogger(__name__)


def cap_of(f: Filter, admission: Admission) -> float:
    return f.max_rate if f.max_rate is not None else admission.max_rate


def refusal(f: Filter, matches: int, alerts: int, cap: float, reference: str) -> FilterError:
    """The error of a filter above its cap: its rate, the cap and the reference."""
    return FilterError(
        f"filter {f.name!r} ({f.origin}) is refused by admission: it passes"
        f" {matches / alerts:.2%} of the reference ({matches} of {alerts} alerts of {reference}),"
        f" above its cap of {cap:.2%}; narrow its condition, or give it max_rate",
        filter=f.name,
    )


def over_cap(
    spark, cfg: JobConfig, filters: list[Filter], versions: dict[str, str], running: dict[str, str]
) -> list[FilterError]:
    """The refusals of the filters of ``filters`` that are new or changed (``versions`` against
    ``running``, the running job's versions), backtested on the reference."""
    admission = cfg.admission
    if admission is None:
        return []
    new = [f for f in filters if running.get(f.name) != versions.get(f.name)]
    if not new:
        return []
    reference = ", ".join(admission.reference)
    alerts = load_alerts(spark, admission.reference, cfg.bootstrap, cfg.schema_dir)
    mine = [f for f in new if f.survey in (None, alerts.decoder.survey)]
    models = discover_models(cfg.model_paths)
    budget_s = admission.max_ms_per_alert / 1e3
    costly = over_budget(spark, mine, alerts, budget_s, cfg.catalog_dir, models)  # before it runs
    cheap = [f for f in mine if f.name not in costly]
    rows = {r.name: r for r in backtest(spark, cheap, alerts, cfg.catalog_dir, models=models)}
    refused = [
        FilterError(
            f"filter {f.name!r} ({f.origin}) is refused by admission: its condition costs"
            f" {per_alert(costly[f.name])} of a core per alert of the reference ({reference}),"
            f" above the budget of {per_alert(budget_s)}; lighten it (fewer nested lambdas"
            " over the history), or ask the operator for admission.max_ms_per_alert",
            filter=f.name,
        )
        for f in mine
        if f.name in costly
    ]
    for f in cheap:
        row, cap = rows[f.name], cap_of(f, admission)
        log.info(
            "admission: %s passes %.2f%% of the reference (cap %.2f%%)",
            f.name,
            100 * row.rate,
            100 * cap,
        )
        if row.rate > cap:
            refused.append(refusal(f, row.matches, row.alerts, cap, reference))
    return refused
