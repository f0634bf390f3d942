"""`alertsieve filters diff`: which alerts a change to a filter would add and drop, before it goes
live (skyportal PR #6674). Both versions run over the same alerts in one pass, decoded as the job
decodes them: real files, a topic, or a job's Delta archive (``alertsieve.backtest.sources``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from alertsieve.backtest.read_check import refuse_or_warn
from alertsieve.backtest.sources import AlertSource
from alertsieve.filtering.discovery import discover
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import Filter, FilterError
from alertsieve.filtering.prepare import prepare
from alertsieve.filtering.scores.discovery import discover_models
from alertsieve.filtering.scores.model import Model
from alertsieve.publish.versions import filter_version, model_versions_of
from alertsieve.spark.session import driver_heap_mb


@dataclass(frozen=True)
class FilterDiff:
    name: str
    before_version: str
    after_version: str
    alerts: int  # decoded alerts both versions ran over
    before: int  # matches of each version
    after: int
    added: list[str]  # alert ids only the new version passes
    dropped: list[str]  # alert ids only the old version passes


def filter_named(name: str, paths: list[str | Path], builtin: bool = True) -> Filter:
    """Filter ``name`` as defined in ``paths`` (and ``filters/`` when ``builtin``)."""
    found = {f.name: f for f in discover(paths, builtin=builtin, entry_points=builtin)}
    if name not in found:
        where = ", ".join(str(p) for p in paths) or "filters/"
        raise FilterError(f"no filter named {name!r} in {where}; there: {sorted(found)[:20]}")
    return found[name]


def diff(
    spark,
    before: Filter,
    after: Filter,
    alerts: AlertSource,
    catalog_dir: str = "catalogs",
    models: list[Model] | None = None,
) -> FilterDiff:
    """Both versions of a filter over ``alerts``: what each passes, and the alerts they differ on
    (with the scores of ``models`` they read; default: the models found)."""
    from pyspark.sql import functions as F

    renamed = [replace(before, name="before"), replace(after, name="after")]
    decoder = alerts.decoder
    prepared = prepare(
        spark, renamed, decoder, alerts.head, catalog_dir, driver_heap_mb(spark), models=models
    )
    decoded = decoder.decode(alerts.raw, prepared.paths)
    view = filter_view(decoded, ("_reason",), prepared.context, prepared.scoring)
    ok = F.col("_reason").isNull()
    (was, _), (now, _) = (f.evaluate() for f in renamed)
    was, now = F.coalesce(was, F.lit(False)) & ok, F.coalesce(now, F.lit(False)) & ok
    rows = view.select(
        F.col(decoder.id_path).cast("string").alias("id"), was.alias("b"), now.alias("a")
    )
    by_reason = (
        view.groupBy("_reason")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(was.cast("int")).alias("b"),
            F.sum(now.cast("int")).alias("a"),
        )
        .collect()
    )
    undecodable = {r["_reason"]: int(r["n"]) for r in by_reason if r["_reason"] is not None}
    read = sum(int(r["n"]) for r in by_reason)
    refuse_or_warn(read, undecodable)  # so some alerts decoded: their group is there
    totals = next(r for r in by_reason if r["_reason"] is None)
    differing = rows.where(F.col("a") != F.col("b")).collect()
    versions = model_versions_of(lambda: models if models is not None else discover_models())
    return FilterDiff(
        after.name,
        filter_version(before, catalog_dir, model_versions=versions),
        filter_version(after, catalog_dir, model_versions=versions),
        int(totals["n"]),
        int(totals["b"] or 0),
        int(totals["a"] or 0),
        sorted(r["id"] for r in differing if r["a"]),
        sorted(r["id"] for r in differing if r["b"]),
    )


def diff_lines(d: FilterDiff, before_where: str, after_where: str, show: int = 20) -> list[str]:
    """The diff as a person reads it: versions, totals, then the ids added and dropped."""
    both = d.before - len(d.dropped)
    lines = [
        f"filter {d.name}: {d.before_version} ({before_where}) -> {d.after_version} ({after_where})",
        f"over {d.alerts:,} alerts: {d.before:,} matches before, {d.after:,} after:"
        f" +{len(d.added):,} added, -{len(d.dropped):,} dropped, {both:,} in both",
    ]
    for sign, ids in (("+", d.added), ("-", d.dropped)):
        lines += [f"{sign} {i}" for i in ids[:show]]
        if len(ids) > show:
            lines.append(f"{sign} ... and {len(ids) - show:,} more")
    return lines
