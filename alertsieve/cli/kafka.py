"""``alertsieve kafka start|stop|status``: an embedded Kafka cluster on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
from typing import Any

from alertsieve.kafka import embedded


def add_parser(sub: Any) -> argparse.ArgumentParser:
    kafka = sub.add_parser("kafka", help="run an embedded Kafka cluster on 127.0.0.1")
    kafka.add_argument(
        "action",
        choices=["start", "stop", "status"],
        help="start a cluster, stop it, or print its status (JSON)",
    )
    kafka.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    kafka.add_argument("--port", type=int, help="first broker port (default: a free one)")
    kafka.add_argument(
        "--data-dir", help=f"cluster directory (default {embedded.default_data_dir()})"
    )
    kafka.add_argument("--heap", default="512m", help="JVM heap per broker (default 512m)")
    kafka.add_argument("--purge", action="store_true", help="with stop: delete the data too")
    kafka.set_defaults(handler=run)
    return kafka


def run(args: argparse.Namespace) -> int:
    if args.action == "start":
        cluster = embedded.start(
            args.data_dir, brokers=args.brokers, port=args.port, heap=args.heap
        )
        print(cluster.bootstrap_servers)
    elif args.action == "stop":
        stopped = embedded.stop(args.data_dir)
        print(
            f"stopped {len(stopped)} broker(s): {stopped}" if stopped else "no broker was running"
        )
        if args.purge:
            embedded.purge(args.data_dir)
    else:
        state = embedded.status(args.data_dir)
        print(json.dumps(state, indent=2))
        return 0 if state["running"] else 1
    return 0
