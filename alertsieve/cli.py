"""The `alertsieve` command: thin argument parsing over the library."""

from __future__ import annotations

import argparse
import json
import sys

from alertsieve import kafka_local


def _cmd_setup(args: argparse.Namespace) -> int:
    from alertsieve.setup_env import run_setup

    report = run_setup()
    for step in report.steps:
        print(f"  {step}")
    print(f"setup done in {report.seconds:.1f}s")
    return 0


def _cmd_jars(args: argparse.Namespace) -> int:
    from alertsieve.jars import kafka_broker_jars, spark_connector_jars

    jars = kafka_broker_jars() if args.kafka else spark_connector_jars()
    print(",".join(str(j) for j in jars.jars))
    return 0


def _cmd_kafka(args: argparse.Namespace) -> int:
    if args.action == "start":
        cluster = kafka_local.start(
            args.data_dir, brokers=args.brokers, port=args.port, heap=args.heap
        )
        print(cluster.bootstrap_servers)
    elif args.action == "stop":
        stopped = kafka_local.stop(args.data_dir)
        print(
            f"stopped {len(stopped)} broker(s): {stopped}" if stopped else "no broker was running"
        )
        if args.purge:
            kafka_local.purge(args.data_dir)
    else:
        state = kafka_local.status(args.data_dir)
        print(json.dumps(state, indent=2))
        return 0 if state["running"] else 1
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from alertsieve.demo import run_demo

    result = run_demo()
    return 0 if result["read"] == result["distinct"] == result["produced"] else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="alertsieve", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("setup", help="fetch Kafka and Spark connector jars; configure spark-submit")

    jars = sub.add_parser("jars", help="print a comma-separated jar list (for spark-submit --jars)")
    which = jars.add_mutually_exclusive_group()
    which.add_argument("--spark", action="store_true", help="Spark connectors (default)")
    which.add_argument("--kafka", action="store_true", help="the Kafka broker")

    kafka = sub.add_parser("kafka", help="run an embedded Kafka cluster on 127.0.0.1")
    kafka.add_argument("action", choices=["start", "stop", "status"])
    kafka.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    kafka.add_argument("--port", type=int, help="first broker port (default: a free one)")
    kafka.add_argument(
        "--data-dir", help=f"cluster directory (default {kafka_local.default_data_dir()})"
    )
    kafka.add_argument("--heap", default="512m", help="JVM heap per broker (default 512m)")
    kafka.add_argument("--purge", action="store_true", help="with stop: delete the data too")

    sub.add_parser("demo", help="start Kafka, stream a few messages through Spark, stop")
    return parser


HANDLERS = {"setup": _cmd_setup, "jars": _cmd_jars, "kafka": _cmd_kafka, "demo": _cmd_demo}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return HANDLERS[args.command](args)
    except (kafka_local.KafkaLocalError, RuntimeError) as e:
        print(f"alertsieve {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
