"""``alertsieve filters list|check|diff``: the filters there are, whether each works on the alerts
of every schema version, and what a change to one would add and drop before it goes live."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.cli.shared import add_kafka_conf
from alertsieve.cli.warm import run_task
from alertsieve.publish import contract

#: ``filters list`` shows each filter up to this many, and counts by source beyond.
LIST_IN_FULL = 30


def add_parser(sub: Any) -> argparse.ArgumentParser:
    flt = sub.add_parser(
        "filters", help="list the discovered filters, check them on sample alerts, or diff a change"
    )
    action = flt.add_subparsers(
        dest="action",
        required=True,
        help="list them, check them on sample alerts, or diff one against a deployed copy",
    )
    listed = action.add_parser(
        "list", help="each filter: its kind, version, what it publishes, origin and parameters"
    )
    listed.add_argument("name", nargs="?", help="comma-separated filter names (default: all)")
    listed.add_argument("--names", action="store_true", help="every filter's name, one a line")
    listed.add_argument(
        "--bootstrap",
        help="a running job's Kafka: say what it makes of each filter (running, refused and why)",
    )
    listed.add_argument(
        "--output-prefix",
        default=contract.DEFAULT_PREFIX,
        help=f"that job's output prefix (default {contract.DEFAULT_PREFIX}): its counts topic",
    )
    add_kafka_conf(listed)
    listed.set_defaults(handler=run_list, spark_free=True)  # a subscriber's install runs it
    check = action.add_parser(
        "check", help="compile each filter and run it on sample alerts of every schema version"
    )
    check.add_argument("name", nargs="?", help="comma-separated filter names (default: all)")
    check.set_defaults(handler=run_check)
    diff = action.add_parser(
        "diff",
        help="the alerts a change to one filter adds and drops, against the copy that runs now",
    )
    diff.add_argument("name", nargs="?", help="the filter (one name)")
    diff.add_argument(
        "--input", action="append", help="alerts to run both versions over (as backtest --input)"
    )
    diff.add_argument(
        "--against",
        metavar="PATH",
        help="the file or folder holding the filter as it runs now (the new one is discovered)",
    )
    diff.add_argument("--bootstrap", help="Kafka bootstrap servers, when --input is a topic")
    diff.add_argument("--schema-dir", help="local schema store directory")
    diff.add_argument(
        "--show", type=int, default=20, help="alert ids shown of each side (default 20)"
    )
    diff.set_defaults(handler=run_diff)
    for parser in (listed, check, diff):
        parser.add_argument(
            "--filter-path", action="append", metavar="DIR", help="more filter modules and tables"
        )
        parser.add_argument(
            "--catalog-dir", default="catalogs", help="catalogs the filters name (default catalogs)"
        )
        parser.add_argument(
            "--model-path", action="append", metavar="DIR", help="more model modules (scores.*)"
        )
    return flt


def run_list(args: argparse.Namespace) -> int:
    from alertsieve.filtering.discovery import chosen

    filters = chosen(args.name, args.filter_path)
    if args.names:
        print("\n".join(f.name for f in filters))
        return 0
    from alertsieve.filtering.scores.discovery import discover_models
    from alertsieve.publish.versions import filter_versions

    versions = filter_versions(filters, args.catalog_dir, discover_models(args.model_path or []))
    states = _job_states(args, filters, versions) if args.bootstrap else {}
    if len(filters) > LIST_IN_FULL:
        from alertsieve.filtering.discovery import counts_by_source

        print(
            f"{len(filters)} filters  ('--names' lists every name; 'filters list NAME[,NAME]' shows those)"
        )
        print(f"{'filters':>7}  {'survey':<6} {'kind':<7} source")
        for survey, kind, source, n in counts_by_source(filters):
            print(f"{n:>7}  {survey:<6} {kind:<7} {source}")
        running = sum(s.startswith("running this version") for s in states.values())
        if states:
            print(f"in the job: {running} of {len(filters)} running this version; the others:")
        for name, state in states.items():
            if not state.startswith("running this version"):
                print(f"  {name}: {state}")
        return 0
    for f in filters:
        kind = f.kind
        summary = (f.description or "").strip().splitlines()[0] if f.description else ""
        publishes = (
            "alert" if f.payload == "alert" else f"fields ({f.format}: {', '.join(f.fields)})"
        )
        print(f"{f.name:<22} {kind:<7} {summary}")
        print(f"{'':<22} {'':<7} version {versions[f.name]}; publishes {publishes}")
        print(f"{'':<22} {'':<7} {f.origin}; params {dict(f.params)}")
        if f.name in states:
            print(f"{'':<22} {'':<7} in the job: {states[f.name]}")
    return 0


def _job_states(args: argparse.Namespace, filters: list, versions: dict[str, str]) -> dict:
    """What the job at ``--bootstrap`` makes of each filter, from its deployment record and
    today's counts."""
    import datetime as dt

    from alertsieve.settings import parse_pairs
    from alertsieve.subscribe.job_state import filter_states, job_records

    today = dt.datetime.now(dt.UTC).date()
    conf = parse_pairs("--kafka-conf", args.kafka_conf)
    records = job_records(args.bootstrap, args.output_prefix, conf, today)
    return filter_states(records, versions, {f.name: str(f.origin) for f in filters}, today)


def run_check(args: argparse.Namespace) -> int:
    return run_task("filters check", args)


def run_diff(args: argparse.Namespace) -> int:
    return run_task("filters diff", args)
