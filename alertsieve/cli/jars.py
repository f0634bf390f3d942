"""``alertsieve jars``: the jar list spark-submit needs (``--jars``: the connectors and
alertsieve's own), or the Kafka broker's."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "jars", help="print a comma-separated jar list (for spark-submit --jars)"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--spark", action="store_true", help="Spark connectors and alertsieve's own (default)"
    )
    which.add_argument("--kafka", action="store_true", help="the Kafka broker")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from alertsieve.spark.jars import kafka_broker_jars
    from alertsieve.spark.own_jar import session_jars

    jars = kafka_broker_jars().jars if args.kafka else session_jars()
    print(",".join(str(j) for j in jars))
    return 0
