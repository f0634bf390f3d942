"""``alertsieve demo``: embedded Kafka, simulated visits, the filter job and a summary (``make demo``)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    demo = sub.add_parser(
        "demo",
        help="embedded Kafka, simulated visits, the filter job, a summary",
        description="Start a Kafka broker on this machine, send simulated Rubin visits (and four"
        " malformed messages), run the filter job on them, read every match back and print a"
        " summary; everything it started is stopped when it returns (unless --keep). No setup beyond"
        " make setup.",
    )
    demo.add_argument("--visits", type=int, default=2, help="simulated visits (default 2)")
    demo.add_argument(
        "--alerts-per-visit", type=int, default=2000, help="alerts in each visit (default 2000)"
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the broker running with the matches on their topics, to try a subscriber"
        " (the demo prints the command that stops it)",
    )
    demo.set_defaults(handler=run)
    return demo


def run(args: argparse.Namespace) -> int:
    from alertsieve.demo import run_demo

    return 0 if run_demo(args.visits, args.alerts_per_visit, keep=args.keep)["ok"] else 1
