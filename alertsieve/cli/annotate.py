"""``alertsieve annotate``: publish one annotation of an object, for a job's filters of objects."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.cli.shared import add_kafka_conf
from alertsieve.publish import contract
from alertsieve.publish.annotations import SURVEYS


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "annotate",
        help="say what an annotator calls an object: filters reading annotations.<NAME> see it",
    )
    p.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="the job's Kafka")
    p.add_argument(
        "--prefix",
        default=contract.DEFAULT_PREFIX,
        help=f"the job's output prefix (default {contract.DEFAULT_PREFIX})",
    )
    p.add_argument("--survey", required=True, choices=SURVEYS, help="whose object it is")
    p.add_argument(
        "--object", required=True, metavar="ID", help="Rubin diaObjectId or ZTF objectId"
    )
    p.add_argument("--annotator", required=True, metavar="NAME", help="who says it, e.g. tns")
    p.add_argument("--class", dest="klass", required=True, metavar="C", help="e.g. 'SN Ia'")
    p.add_argument("--score", type=float, metavar="X", help="how sure, e.g. 0.93")
    p.add_argument(
        "--attribute",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="free attributes, e.g. --attribute name=2019xyz host=NGC1234",
    )
    add_kafka_conf(p)
    p.set_defaults(handler=run, spark_free=True)  # an annotator's install runs it
    return p


def run(args: argparse.Namespace) -> int:
    from alertsieve.settings import parse_pairs
    from alertsieve.subscribe.annotator import Annotator

    attributes = parse_pairs("--attribute", args.attribute)
    with Annotator(
        args.bootstrap,
        args.annotator,
        args.survey,
        args.prefix,
        parse_pairs("--kafka-conf", args.kafka_conf),
    ) as annotator:
        annotator.annotate(args.object, args.klass, args.score, attributes)
    print(f"annotated {args.survey} object {args.object} as {args.klass!r} on {annotator.topic}")
    return 0
