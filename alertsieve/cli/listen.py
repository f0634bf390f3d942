"""``alertsieve listen``: subscribe to a filter's output topic, print one line per match, save
matches (Parquet or JSON lines) and cutouts (FITS), and check against the job's counts topic that
nothing was lost (``--verify``; exit 1 when something is missing).

The counts topic defaults to the topic's prefix up to and including its first ``-``, then
``counts`` (``alertsieve-bright`` -> ``alertsieve-counts``; a topic without ``-`` -> ``counts``:
``alertsieve.publish.contract.derive_counts_topic``), the job's ``<output_prefix>counts`` for a
prefix with a single ``-`` at its end; pass ``--counts-topic`` otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Any

from alertsieve.alerts.schemas import SchemaError
from alertsieve.publish import contract
from alertsieve.settings import SettingsError, parse_pairs
from alertsieve.subscribe.errors import SubscribeError

EPILOG = """examples:
  alertsieve listen --bootstrap localhost:9092 --topic alertsieve-bright
  alertsieve listen --bootstrap B --topic alertsieve-bright,alertsieve-faint --from-beginning \\
      --until-end --to bright.parquet --cutouts stamps/ --verify
"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``listen`` on an argparse subparsers object."""
    p = sub.add_parser(
        "listen",
        help="read filters' output topics: print, save (Parquet, JSON lines, FITS), verify",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    p.add_argument(
        "--topic",
        action="append",
        required=True,
        metavar="TOPIC",
        help="an output topic (repeatable, or a comma-separated list)",
    )
    p.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at each partition's earliest record (default: new records only)",
    )
    p.add_argument(
        "--until-end",
        action="store_true",
        help="stop at the topics' end as it is at start (default: follow until Ctrl-C)",
    )
    p.add_argument(
        "--to",
        metavar="FILE.parquet|FILE.jsonl|DIR/",
        help="save matches: one Parquet file, JSON lines, or a folder of Parquet parts",
    )
    p.add_argument("--cutouts", metavar="DIR", help="write each alert's stamps as FITS files here")
    p.add_argument(
        "--verify",
        action="store_true",
        help="check against the counts topic that no published record is missing"
        " (needs --from-beginning --until-end); exit 1 if any is",
    )
    p.add_argument(
        "--counts-topic",
        metavar="NAME",
        help="the job's counts topic (default: the topic's prefix to its first '-' + counts)",
    )
    p.add_argument(
        "--group",
        metavar="ID",
        help="a consumer group that remembers where reading stopped (default: none)",
    )
    p.add_argument("--schema-dir", help="local schema store directory (the job's)")
    p.add_argument(
        "--schema-registry", metavar="URL", help="Confluent Schema Registry URL (the job's)"
    )
    p.add_argument(
        "--kafka-conf",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka settings, e.g. security.protocol=SASL_SSL sasl.password=env:PW",
    )
    p.set_defaults(handler=run)
    return p


def match_line(n: int, match: Any) -> str:
    """``   17  bright@a1b2c3d4e5f6  alert 1234567 (rubin) from alerts[0]@42``"""
    where = f"from {match.source_topic}[{match.source_partition}]@{match.source_offset}"
    if match.payload == contract.PAYLOAD_QUARANTINE:
        return f"{n:>5}  quarantined  {match.reason} {where}"
    version = (match.filter_version or "?")[:12]
    return f"{n:>5}  {match.filter}@{version}  {match.payload} {match.alert_id} ({match.survey or '?'}) {where}"


def run(args: argparse.Namespace) -> int:
    """Run ``listen``; 0 done, 1 ``--verify`` found missing records, 2 an error (one line)."""
    try:
        return _run(args)
    except (SubscribeError, SchemaError, SettingsError) as e:
        print(f"alertsieve listen: error: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from alertsieve.alerts.schemas import open_store
    from alertsieve.subscribe.subscriber import Subscriber, split_topics
    from alertsieve.subscribe.verify import summary_line, verify
    from alertsieve.subscribe.writers import open_writer

    topics = split_topics(args.topic)
    if args.verify and not (args.from_beginning and args.until_end):
        raise SubscribeError(
            "--verify needs --from-beginning and --until-end: only a whole topic read to a fixed"
            " end can be checked against the counts"
        )
    counts_topic = (
        (args.counts_topic or contract.derive_counts_topic(topics[0])) if args.verify else None
    )
    kafka_conf = parse_pairs("--kafka-conf", args.kafka_conf)
    store = open_store(args.schema_registry, args.schema_dir)
    subscriber = Subscriber(
        args.bootstrap,
        topics,
        from_beginning=args.from_beginning,
        until_end=args.until_end,
        group_id=args.group,
        kafka_conf=kafka_conf,
        store=store,
        counts_topic=counts_topic,
    )
    writer = open_writer(args.to) if args.to else None
    started = time.monotonic()
    received, per_filter, cutouts, interrupted = _receive(args, subscriber, topics, writer)
    _print_summary(args, received, per_filter, cutouts, time.monotonic() - started)
    if not args.verify:
        return 0
    if interrupted:
        print("not verified: interrupted before the topics' end")
        return 130
    report = verify(received, subscriber.read_counts(), topics)
    print(summary_line(report))
    if not report["complete"]:
        for name, versions in sorted(report["filters"].items()):
            for version, s in sorted(versions.items()):
                if s["missing"]:
                    print(
                        f"  {name}@{version}: {s['missing']} missing of {s['counted']} counted"
                        f" ({s['distinct']} distinct received)"
                    )
    return 0 if report["complete"] else 1


def _receive(
    args: argparse.Namespace, subscriber, topics: list[str], writer
) -> tuple[list[tuple], Counter[str], int, bool]:
    """Every match printed (and written, its cutouts saved) as it comes, until the end or Ctrl-C:
    (each match's filter, version and source, matches per filter@version, cutouts saved,
    interrupted)."""
    from alertsieve.subscribe.cutouts import save_cutouts

    received: list[tuple] = []
    per_filter: Counter[str] = Counter()
    cutouts = 0
    interrupted = False
    try:
        with subscriber:
            print(
                f"listening to {', '.join(topics)} at {args.bootstrap}"
                f"{' until their current end' if args.until_end else ' (Ctrl-C to stop)'}",
                flush=True,
            )
            for batch in subscriber.batches():
                for match in batch:
                    received.append(
                        (
                            match.filter,
                            match.filter_version,
                            match.source_topic,
                            match.source_partition,
                            match.source_offset,
                        )
                    )
                    per_filter[
                        f"{match.filter}@{(match.filter_version or '?')[:12]}"
                        if match.filter
                        else "quarantined"
                    ] += 1
                    print(match_line(len(received), match))
                    if args.cutouts:
                        cutouts += len(save_cutouts(match.record, match.alert_id, args.cutouts))
                if writer is not None:
                    writer.write(batch)
                sys.stdout.flush()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if writer is not None:
            writer.close()
    return received, per_filter, cutouts, interrupted


def _print_summary(
    args: argparse.Namespace,
    received: list[tuple],
    per_filter: Counter[str],
    cutouts: int,
    seconds: float,
) -> None:
    by_filter = ", ".join(f"{name} {n}" for name, n in sorted(per_filter.items()))
    summary = f"{len(received)} matches in {seconds:.1f} s" + (
        f" ({by_filter})" if by_filter else ""
    )
    if args.to:
        summary += f"; saved to {args.to}"
    if args.cutouts:
        summary += f"; {cutouts} cutouts in {args.cutouts}"
    print(summary)
