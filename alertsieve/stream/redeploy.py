"""``--watch``: filters deployed to a running job, without a release or a restart.

The job polls the files its filters and catalogs come from (the filter folders' modules and
tables, the catalog folder's indexes). When they change, the whole plan is made again, exactly as at start-up
(discovery, parameters, checks on real sample alerts, the fields to decode); a plan that fails
is refused with its message and the running filters go on. A plan that passes replaces the hot
path between two batches, from the same checkpoint, so no alert is read twice or skipped; the
archive restarts on the new set of topics plus every topic it read before (a topic dropped
from a Kafka source's subscription would be data lost to its checkpoint).

A plan that differs from the running one in the rows of its shaped filters only (``rows_only``:
filters added, removed or changed within the shapes the running query evaluates) is deployed
without a restart: the job rewrites the table the running query reads each batch
(``alertsieve.stream.shaped.store``), and the next batch publishes by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alertsieve.filtering.discovery import builtin_filter_dir, filter_files
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import JobPlan

SHOWN_CHANGES = 20  # filters named in the console line of a deployment


def watched_files(cfg: JobConfig) -> list[Path]:
    """The files a change of which changes the job's filters or catalogs."""
    contributed = builtin_filter_dir() if cfg.discover_filters else None
    folders = ([contributed] if contributed is not None else []) + [
        Path(p) for p in cfg.filter_paths
    ]
    files: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            files += filter_files(folder)
        elif folder.is_file():
            files.append(folder)
    return files + sorted(Path(cfg.catalog_dir).glob("*/meta.json"))


def snapshot(cfg: JobConfig) -> dict[str, tuple[int, int]]:
    """Each watched file's modification time and size: a new, changed or removed file shows."""
    out = {}
    for path in watched_files(cfg):
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed between the listing and now
            continue
        out[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return out


def describe_change(before: dict[str, str], after: dict[str, str]) -> str:
    """``+added -removed ~changed`` between two {filter name: its version} maps."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    parts = [f"+{n}" for n in added] + [f"-{n}" for n in removed] + [f"~{n}" for n in changed]
    if len(parts) > SHOWN_CHANGES:  # a table of a thousand users' filters, replaced at once
        parts = [
            *parts[:SHOWN_CHANGES],
            f"and {len(parts) - SHOWN_CHANGES} more"
            f" ({len(added)} added, {len(removed)} removed, {len(changed)} changed)",
        ]
    return " ".join(parts) or "no filter changed"


def settings_changed(
    readers: tuple[dict[str, Any], dict[str, Any]], quotas: tuple[dict[str, Any], dict[str, Any]]
) -> list[str]:
    """What a plan that matches the same alerts changes, as words for the console: the filters
    whose ``readers`` (their topic's ACLs) or daily ``quotas`` differ, each (before, after) as
    {filter: value}. Neither needs the hot path restarted."""
    out = []
    for what, (before, after) in (("readers", readers), ("daily quotas", quotas)):
        names = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
        if names:
            out.append(f"{what} of {', '.join(names)}")
    return out


def _code(plan: JobPlan) -> tuple:
    """What the hot path's generated code is made of: the filters compiled one by one (names and
    versions, in order), the shapes in order, the fields decoded, the catalogs and the models."""
    compiled = [
        (plan.filters[i].name, plan.versions.get(plan.filters[i].name)) for i in plan.compiled
    ]
    shapes = [s.key for s in plan.shapes]
    return compiled, shapes, plan.paths, plan.context, plan.scoring, plan.decoder.survey


def rows_only(running: JobPlan, after: JobPlan) -> bool:
    """Whether ``after`` differs from the ``running`` query's plan in its shaped filters' rows
    alone (their constants, names, versions, topics), so the running query can run it. A filter
    compiled one by one, a new shape, a shape gone, or new fields to decode mean new code."""
    return bool(running.shapes) and _code(running) == _code(after)
