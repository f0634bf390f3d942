"""``alertsieve listen``: subscribe to a filter's output topic, print one line per match, save
matches (Parquet or JSON lines) and cutouts (FITS) or send them (a webhook, mail), and check
against the job's counts topic that nothing was lost (``--verify``; exit 1 when something is
missing).

Each match is delivered once, however often the topic holds it (``--keep-duplicates`` shows the
topic as it is); ``--once-per object`` (or ``night``) delivers an object's first match per
filter only. ``--state FILE`` keeps where it stopped and what it delivered, so a restarted
listen delivers nothing twice (a JSON lines file, a Parquet folder, a webhook and mail; printed lines
may repeat the last poll's).

The counts topic is the one the job names in each record's ``counts_topic`` header, whatever its
``output_prefix``; for records of a job older than that header, the topic's prefix up to its first
``-``, then ``counts`` (alertsieve-bright: alertsieve-counts). ``--counts-topic`` overrides both.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alertsieve.alerts.schemas import SchemaError
from alertsieve.cli.shared import add_kafka_conf
from alertsieve.publish import contract
from alertsieve.settings import SettingsError, parse_pairs
from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.once import DEFAULT_OBJECTS, DEFAULT_WINDOW, ONCE_PER

#: How ``--to`` names a sender, not a file.
SENDERS = ("http://", "https://", "mailto:")

EPILOG = """examples:
  alertsieve listen --bootstrap localhost:9092 --topic alertsieve-bright
  alertsieve listen --bootstrap B --topic alertsieve-bright,alertsieve-faint --from-beginning \\
      --until-end --to bright.parquet --cutouts stamps/ --verify
  alertsieve listen --bootstrap B --topic alertsieve-bright --once-per night \\
      --to https://hooks.slack.com/services/T0/B0/XYZ --rate-limit 10 --state bright.state
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
        "--filter",
        action="append",
        metavar="NAME",
        help="only this filter's matches (repeatable): how a subscriber reads its own from a"
        " shared topic (<prefix>matches, delivery: shared), whose records name every filter"
        " an alert passed",
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
        metavar="FILE.parquet|FILE.jsonl|DIR/|URL|mailto:ADDRESS",
        help="save matches: one Parquet file, JSON lines, or a folder of Parquet parts; or post"
        " each to a webhook (https://...: a compact JSON, as Slack's incoming webhooks take it),"
        " or mail each (mailto:, with --smtp)",
    )
    p.add_argument(
        "--smtp",
        metavar="HOST:PORT",
        help="with --to mailto:ADDRESS, the SMTP server that sends the mails",
    )
    p.add_argument(
        "--smtp-conf",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="SMTP settings: from=ADDRESS, user=NAME, password=env:VAR (or file:PATH),"
        " starttls=true",
    )
    p.add_argument(
        "--rate-limit",
        type=float,
        metavar="PER_MINUTE",
        help="with a webhook or mail: at most this many a minute per filter (a filter over it"
        " waits its turn; nothing is dropped)",
    )
    p.add_argument(
        "--state",
        metavar="FILE",
        help="remember here where this listen stopped and what it delivered: started again"
        " with the same FILE, it goes on and delivers nothing twice",
    )
    p.add_argument(
        "--once-per",
        choices=ONCE_PER,
        help="deliver only the first match of each object per filter (night: per observing"
        " night); the others are counted as held back",
    )
    p.add_argument(
        "--keep-duplicates",
        action="store_true",
        help="deliver every copy the topic holds (default: each match once per filter version)",
    )
    p.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"delivered matches remembered to drop their copies (default {DEFAULT_WINDOW}:"
        " a copy comes within a batch or two of its first)",
    )
    p.add_argument(
        "--objects",
        type=int,
        default=DEFAULT_OBJECTS,
        metavar="N",
        help=f"objects remembered by --once-per (default {DEFAULT_OBJECTS}); after N other"
        " objects one is news again",
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
        help="the job's counts topic (default: the one its records name in their counts_topic header)",
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
    add_kafka_conf(p)
    p.set_defaults(handler=run, spark_free=True)  # a subscriber's install runs it
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


@dataclass
class Received:
    """What a listen delivered: how many, counts by filter version for the summary, cutouts
    saved, and whether Ctrl-C ended it (a read cut short cannot be verified)."""

    delivered: int = 0
    per_filter: Counter[str] = field(default_factory=Counter)
    cutouts: int = 0
    interrupted: bool = False


def _run(args: argparse.Namespace) -> int:
    from alertsieve.subscribe.subscriber import split_topics
    from alertsieve.subscribe.verify import summary_line, verify

    topics = split_topics(args.topic)
    if args.verify and not (args.from_beginning and args.until_end):
        raise SubscribeError(
            "--verify needs --from-beginning and --until-end: only a whole topic read to a fixed"
            " end can be checked against the counts"
        )
    if args.verify and args.state and Path(args.state).exists():
        raise SubscribeError(
            f"--verify reads the topics whole, and --state {args.state} would resume mid-way:"
            " verify without --state (or with a new state file)"
        )
    subscriber = _subscriber(args, topics)
    started = time.monotonic()
    received = _receive(args, topics, subscriber)
    print(_summary(args, received, subscriber, time.monotonic() - started))
    if not args.verify:
        return 0
    if received.interrupted:
        print("not verified: interrupted before the topics' end")
        return 130
    report = verify(subscriber.sources, subscriber.read_counts(), topics, only=args.filter)
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


def _subscriber(args: argparse.Namespace, topics: list[str]):
    """The subscriber the flags ask for; with ``--verify`` it reads the counts topic too."""
    from alertsieve.alerts.schemas import open_store
    from alertsieve.subscribe.once import Gate
    from alertsieve.subscribe.subscriber import Subscriber

    gate = Gate(
        dedup=not args.keep_duplicates,
        once_per=args.once_per,
        window=args.window,
        objects=args.objects,
    )
    return Subscriber(
        args.bootstrap,
        topics,
        from_beginning=args.from_beginning,
        until_end=args.until_end,
        group_id=args.group,
        kafka_conf=parse_pairs("--kafka-conf", args.kafka_conf),
        store=open_store(args.schema_registry, args.schema_dir),
        counts_topic=args.counts_topic if args.verify else None,
        find_counts_topic=args.verify,  # the job names it in every record's headers
        filters=args.filter,
        gate=gate,
        state=args.state,
    )


def _sends(target: str | None) -> bool:
    """Does ``--to`` name a sender (a webhook, an address), not a file?"""
    return str(target or "").startswith(SENDERS)


def _sink(args: argparse.Namespace, subscriber) -> tuple[Any, Any]:
    """(writer, sender) ``--to`` names, the writer going on from the state's mark."""
    from alertsieve.subscribe.senders import Mailer, Webhook
    from alertsieve.subscribe.writers import open_writer

    if args.rate_limit is not None and not _sends(args.to):
        raise SubscribeError(
            "--rate-limit spaces a webhook's posts or mails: give --to https://... or mailto:..."
        )
    if bool(args.smtp) != str(args.to or "").startswith("mailto:"):
        raise SubscribeError("mail needs both --to mailto:ADDRESS and --smtp HOST:PORT")
    if not args.to:
        return None, None
    if args.to.startswith("mailto:"):
        conf = parse_pairs("--smtp-conf", args.smtp_conf)
        return None, Mailer(args.to[len("mailto:") :], args.smtp, conf, per_minute=args.rate_limit)
    if _sends(args.to):
        return None, Webhook(args.to, per_minute=args.rate_limit)
    resume = subscriber.state.loaded.mark if subscriber.state is not None else None
    writer = open_writer(args.to, resume, resumable=subscriber.state is not None)
    if subscriber.state is not None:
        subscriber.sink_mark = writer.mark
    return writer, None


def _receive(args: argparse.Namespace, topics: list[str], subscriber) -> Received:
    """Reads until the topics' end (or Ctrl-C), printing a line per match delivered, writing each
    batch to ``--to`` (or posting each match there) and its cutouts to ``--cutouts``."""
    from alertsieve.subscribe.cutouts import save_cutouts

    writer, sender = _sink(args, subscriber)
    received = Received()
    try:
        with subscriber:
            print(
                f"listening to {', '.join(topics)} at {args.bootstrap}"
                f"{' until their current end' if args.until_end else ' (Ctrl-C to stop)'}",
                flush=True,
            )
            for sifted in subscriber.sifted():
                batch = sifted.kept
                for match in batch:
                    received.delivered += 1
                    if sender is not None:
                        sender.post(match)
                        subscriber.confirm([match])
                    received.per_filter[
                        f"{match.filter}@{(match.filter_version or '?')[:12]}"
                        if match.filter
                        else "quarantined"
                    ] += 1
                    print(match_line(received.delivered, match))
                    if args.cutouts:
                        saved = save_cutouts(match.record, match.alert_id, args.cutouts)
                        received.cutouts += len(saved)
                if writer is not None:
                    writer.write(batch)
                sys.stdout.flush()
    except KeyboardInterrupt:
        received.interrupted = True
    finally:
        if writer is not None:
            writer.close()
    return received


def _summary(args: argparse.Namespace, received: Received, subscriber, seconds: float) -> str:
    by_filter = ", ".join(f"{name} {n}" for name, n in sorted(received.per_filter.items()))
    summary = f"{received.delivered} matches in {seconds:.1f} s" + (
        f" ({by_filter})" if by_filter else ""
    )
    if subscriber.duplicates:
        summary += f"; {subscriber.duplicates} duplicates dropped (copies of matches delivered)"
    if subscriber.held_back:
        summary += f"; {subscriber.held_back} held back (not the first of their object"
        summary += " and night)" if args.once_per == "night" else ")"
    if _sends(args.to):
        summary += f"; sent to {args.to}"
    elif args.to:
        summary += f"; saved to {args.to}"
    if args.cutouts:
        summary += f"; {received.cutouts} cutouts in {args.cutouts}"
    return summary
