"""`alertsieve backtest`: run filters over past or simulated alerts and say what they would send.

The input is a topic (read once, start to end), Avro container files (a replay: Rubin or ZTF, as
``produce --replay`` would send them; the real corpus), ``simulated:N`` alerts, or a job's Delta
archive (the messages of its matches, as they arrived); alerts are decoded exactly as the stream
job decodes them, reading only the fields the filters name, and can be limited to a range of
observing nights. The report gives matches, the match rate, the alerts a night that rate implies
at Rubin's 10 million, the matches of each night, and a warning above a configurable rate: a
filter passing 5% of the stream is rarely what its author meant.

An archive holds only what the job's filters matched, so a backtest over it answers "which of
those would this filter keep": its rate is of the archived alerts, and its alerts a night are the
archive's own counts, not an extrapolation to the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from alertsieve.backtest.read_check import refuse_or_warn
from alertsieve.backtest.sources import AlertSource
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import Filter, FilterError
from alertsieve.filtering.prepare import prepare
from alertsieve.filtering.scores.model import Model
from alertsieve.spark.session import driver_heap_mb

#: Alerts a night each survey sends, for a rate's "per night": Rubin's ~10 million (design
#: brief; DMTN-102), ZTF's about a million (0.6-1.2 million routinely, Patterson et al. 2019,
#: PASP 131, 018001).
ALERTS_PER_NIGHT = {"rubin": 10_000_000, "ztf": 1_000_000}


@dataclass
class BacktestRow:
    name: str
    matches: int
    alerts: int
    errors: int
    first_error: str | None
    nights: dict[date, int] = field(default_factory=dict)  # observing night -> matches
    night_alerts: dict[date, int] = field(default_factory=dict)  # observing night -> alerts
    archived: bool = False  # the alerts are an archive's matches, not a sample of the stream
    alerts_per_night: int = ALERTS_PER_NIGHT["rubin"]  # the survey's whole stream a night
    survey: str = "rubin"  # whose alerts it read
    left_aside: int = 0  # the input's alerts of other surveys, which it did not read

    @property
    def rate(self) -> float:
        return self.matches / self.alerts if self.alerts else 0.0

    @property
    def per_night(self) -> int:
        """Alerts a night: the rate at the survey's whole stream a night, or over an archive its
        mean a night."""
        if self.archived:
            return round(self.matches / len(self.night_alerts)) if self.night_alerts else 0
        return round(self.rate * self.alerts_per_night)


def backtest(
    spark,
    filters: list[Filter],
    alerts: AlertSource,
    catalog_dir: str = "catalogs",
    since: date | None = None,
    until: date | None = None,
    models: list[Model] | None = None,
) -> list[BacktestRow]:
    """Every filter over the same alerts, in one pass, decoding only the fields they read, with
    the catalogs they name from ``catalog_dir`` and the scores of ``models`` they read (default:
    the models found); only the observing nights from ``since`` to ``until`` (inclusive) when
    given."""
    from pyspark.sql import functions as F

    prepared = prepare(
        spark,
        filters,
        alerts.decoder,
        alerts.head,
        catalog_dir,
        driver_heap_mb(spark),
        models=models,
    )
    decoded = alerts.decoder.decode(
        alerts.raw, list(dict.fromkeys([*prepared.paths, alerts.decoder.observed]))
    )
    ok = F.col("_reason").isNull()
    alert = filter_view(decoded, ("_reason",), prepared.context, prepared.scoring).withColumn(
        "_night", F.expr(alerts.decoder.night_sql())
    )
    if since is not None:
        alert = alert.where(~ok | (F.col("_night") >= F.lit(since)))
    if until is not None:
        alert = alert.where(~ok | (F.col("_night") <= F.lit(until)))
    columns = [F.count(F.lit(1)).alias("n")]
    for i, f in enumerate(filters):
        match, error = f.evaluate()
        columns.append(F.sum((F.coalesce(match, F.lit(False)) & ok).cast("int")).alias(f"m{i}"))
        if error is not None:
            columns += [
                F.count(error).alias(f"e{i}"),
                F.first(error, ignorenulls=True).alias(f"x{i}"),
            ]
    # One pass: the decoded alerts by night, the undecodable ones (no night) by reason.
    groups = [r.asDict() for r in alert.groupBy("_night", "_reason").agg(*columns).collect()]
    by_night = [r for r in groups if r["_reason"] is None and r["_night"] is not None]
    undecodable = {r["_reason"]: int(r["n"]) for r in groups if r["_reason"] is not None}
    read = sum(int(r["n"]) for r in groups)
    refuse_or_warn(read, undecodable, since, until)
    nights = {r["_night"]: int(r["n"]) for r in by_night}
    return [
        BacktestRow(
            f.name,
            sum(int(r[f"m{i}"] or 0) for r in groups),
            read - sum(undecodable.values()),
            sum(int(r.get(f"e{i}") or 0) for r in groups),
            next((r[f"x{i}"] for r in groups if r.get(f"x{i}")), None),
            {r["_night"]: int(r[f"m{i}"] or 0) for r in by_night},
            nights,
            alerts.archived,
            ALERTS_PER_NIGHT[alerts.decoder.survey],
            alerts.decoder.survey,
        )
        for i, f in enumerate(filters)
    ]


def by_survey(
    filters: list[Filter], surveys: list[str], source: str, named: bool
) -> dict[str, list[Filter]]:
    """Each filter under the survey whose alerts it reads, of ``surveys`` (the input's, in
    order; a filter that declares none reads Rubin's if there are any, else the first's). A
    filter of a survey the input lacks is left out, or an error when ``named``."""
    chosen: dict[str, list[Filter]] = {}
    default = "rubin" if "rubin" in surveys else surveys[0]
    for f in filters:
        survey = f.survey or default
        if survey in surveys:
            chosen.setdefault(survey, []).append(f)
        elif named:
            raise FilterError(
                f"--filter names {f.name!r} ({f.origin}), a filter for {survey} alerts;"
                f" {source} holds {' and '.join(surveys)} alerts"
            )
    if not chosen:
        declared = sorted({str(f.survey) for f in filters})
        raise FilterError(
            f"{source} holds {' and '.join(surveys)} alerts and none of the {len(filters)} filters"
            f" found is for them (they declare survey {declared}): give --filter-path a filter"
            f" module that sets survey = {surveys[0]!r}"
        )
    return chosen
