"""``alertsieve produce``: simulated visits (or replayed files: survey Avro, brokers' exports) sent to Kafka."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from alertsieve.cli.shared import add_kafka_conf
from alertsieve.settings import parse_pairs
from alertsieve.sim import VISIT_CADENCE_S


def add_parser(sub: Any) -> argparse.ArgumentParser:
    prod = sub.add_parser(
        "produce", help="send simulated visits (or replay Avro or Parquet files) to Kafka"
    )
    prod.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    prod.add_argument("--topic", required=True, help="the topic to send to")
    prod.add_argument("--visits", type=int, default=1, help="simulated visits to send (default 1)")
    prod.add_argument(
        "--alerts-per-visit", type=int, default=10_000, help="alerts in each visit (default 10,000)"
    )
    prod.add_argument(
        "--interval",
        type=float,
        default=VISIT_CADENCE_S,
        help="seconds between visits (0: back to back)",
    )
    prod.add_argument(
        "--producers", type=int, default=1, help="producer processes splitting each visit"
    )
    prod.add_argument(
        "--partitions", type=int, default=4, help="partitions if the topic is created"
    )
    prod.add_argument("--no-stamps", action="store_true", help="alerts without FITS cutouts")
    prod.add_argument(
        "--stamp-size", type=int, default=84, help="cutout side in pixels (default 84, ~32 KB)"
    )
    prod.add_argument("--history", type=int, default=10, help="max previous detections per alert")
    prod.add_argument(
        "--deep-share",
        type=float,
        default=0.0,
        help="share of each visit's alerts from deep-drilling fields (default 0)",
    )
    prod.add_argument(
        "--deep-history",
        type=int,
        default=400,
        help="earlier detections of each deep-field alert (default 400; real ones carry 300-390)",
    )
    prod.add_argument("--schema-version", help="Rubin schema, e.g. 11.1 (default: latest shipped)")
    prod.add_argument(
        "--seed", type=int, default=0, help="the simulation's seed: the same seed, the same alerts"
    )
    prod.add_argument(
        "--replay",
        nargs="+",
        metavar="PATH",
        help="Avro container files (any writer), Parquet files, or folders of them (hive-partitioned datasets too); exports are re-encoded with the survey's official schema",
    )
    prod.add_argument("--metrics", help="append per-visit metrics (JSON lines) to this file")
    prod.add_argument(
        "--ack-journal",
        metavar="DIR",
        help="keep each producer's acknowledged alert ids here (after a crash: what to resend)",
    )
    prod.add_argument(
        "--schema-registry", help="Confluent Schema Registry URL (default: local store)"
    )
    prod.add_argument("--schema-dir", help="local schema store directory")
    prod.add_argument(
        "--linger-ms", type=int, help="librdkafka linger.ms (default: the producer's)"
    )
    prod.add_argument(
        "--batch-size", type=int, help="librdkafka batch.size in bytes (default: the producer's)"
    )
    prod.add_argument(
        "--compression",
        choices=["none", "lz4", "zstd", "snappy", "gzip"],
        help="compression of the Kafka batches",
    )
    add_kafka_conf(prod)
    prod.set_defaults(handler=run)
    return prod


def run(args: argparse.Namespace) -> int:
    from alertsieve.produce.producer import ProduceConfig, produce

    kafka_conf: dict = parse_pairs("--kafka-conf", args.kafka_conf)
    for key, value in (
        ("linger.ms", args.linger_ms),
        ("batch.size", args.batch_size),
        ("compression.type", args.compression),
    ):
        if value is not None:
            kafka_conf[key] = value
    summary = produce(
        ProduceConfig(
            bootstrap=args.bootstrap,
            topic=args.topic,
            visits=args.visits,
            alerts_per_visit=args.alerts_per_visit,
            interval_s=args.interval,
            producers=args.producers,
            partitions=args.partitions,
            stamp_size=0 if args.no_stamps else args.stamp_size,
            max_history=args.history,
            deep_share=args.deep_share,
            deep_history=args.deep_history,
            schema_version=args.schema_version,
            seed=args.seed,
            replay=args.replay or [],
            metrics_path=args.metrics,
            kafka_conf=kafka_conf,
            schema_registry=args.schema_registry,
            schema_dir=args.schema_dir,
            progress=not args.quiet,
            ack_journal_dir=args.ack_journal,
        )
    )
    print(summary.line())
    for report in summary.reports:
        for err in report.errors:
            print(f"visit {report.visit} producer {report.producer}: {err}", file=sys.stderr)
    return 0 if summary.ok else 1
