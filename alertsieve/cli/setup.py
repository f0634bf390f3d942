"""``alertsieve setup``: fetch the Kafka and Spark connector jars and configure spark-submit."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "setup", help="fetch Kafka and Spark connector jars; configure spark-submit"
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from alertsieve.setup_env import run_setup

    report = run_setup()
    for step in report.steps:
        print(f"  {step}")
    print(f"setup done in {report.seconds:.1f}s")
    return 0
