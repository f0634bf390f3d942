"""``alertsieve filter`` and ``alertsieve archive``: the two streaming queries of a filter job, each
started from the job's settings file and flags (the same settings, so the same parser)."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.stream.flags import add_arguments


def add_parsers(sub: Any) -> None:
    """``filter`` and ``archive``: both take every flag of the job's settings."""
    filt = sub.add_parser(
        "filter",
        help="run the filter stream job (same as jobs/filter_stream.py)",
        description="Read alerts from a Kafka topic, run the filters on every alert and publish"
        " each filter's matches on its own topic (and archive them in Delta). Settings come from"
        " --config (a YAML file; conf/filter_stream.yaml) and the flags below, which win; every"
        " one is in docs/configuration.md.",
    )
    add_arguments(filt)
    filt.set_defaults(handler=run_filter)
    arch = sub.add_parser(
        "archive",
        help="archive a filter job's topics into Delta (the job's settings; --archive-trigger)",
        description="Keep a filter job's matches and quarantine in Delta tables, exactly once, as"
        " a process of its own: give it the job's own settings (the same --config and flags).",
    )
    add_arguments(arch)
    arch.set_defaults(handler=run_archive)


def run_filter(args: argparse.Namespace) -> int:
    from alertsieve.stream import job
    from alertsieve.stream.config import load_config
    from alertsieve.stream.flags import overrides

    cfg = load_config(args.config, overrides(args))
    chosen = len(cfg.filters) if cfg.filters else "all"
    print(
        f"filter stream: {cfg.topic or cfg.topic_pattern} at {cfg.bootstrap} -> {', '.join(cfg.sinks)};"
        f" filters: {chosen}; checkpoint {cfg.checkpoint}; kafka settings {cfg.masked_kafka_conf()}",
        flush=True,
    )
    written = job.run_job(cfg)
    total = sum(line["input_rows"] for line in written)
    quarantined = sum(line["quarantined_rows"] for line in written)
    print(f"done: {len(written)} batch(es), {total} alerts, {quarantined} quarantined")
    return 0


def run_archive(args: argparse.Namespace) -> int:
    from alertsieve.stream import job
    from alertsieve.stream.config import load_config
    from alertsieve.stream.flags import overrides

    cfg = load_config(args.config, overrides(args))
    print(
        f"archive: the filters' topics ({cfg.output_prefix}*) at {cfg.bootstrap} -> {cfg.delta_path};"
        f" every {cfg.archive_trigger_seconds:g} s; checkpoint {cfg.archive_checkpoint}",
        flush=True,
    )
    counts = job.run_archive(cfg)
    print(
        f"done: {counts['matches']} matched alerts, {counts['quarantine']} quarantined in {cfg.delta_path}"
    )
    return 0
