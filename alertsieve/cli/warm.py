"""``alertsieve warm status|stop``: the warm Spark session that ``backtest`` and ``filters
check|diff`` start and reuse, so a filter author's second command answers in seconds."""

from __future__ import annotations

import argparse
import time
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    warm = sub.add_parser(
        "warm",
        help="the warm Spark session backtest and filters check/diff reuse: status, or stop it",
        description="backtest, filters check and filters diff run in a warm Spark session that"
        " the first of them starts and later ones reuse (it stops after 30 idle minutes;"
        " ALERTSIEVE_WARM_IDLE sets the minutes, ALERTSIEVE_WARM=off runs commands without it).",
    )
    warm.add_argument("action", choices=["status", "stop"], help="say whether it runs, or stop it")
    warm.set_defaults(handler=run, spark_free=True)
    return warm


def run(args: argparse.Namespace) -> int:
    from alertsieve.warm import client, protocol

    home = protocol.home()
    answer = client.ask({args.action: True})
    if answer is None:
        print("no warm session is running")
        return 0
    if args.action == "stop":
        client.wait_for_exit(home)
        print("the warm session stopped")
        return 0
    status = answer["status"]
    minutes = (time.time() - status["since"]) / 60
    print(
        f"warm session running: pid {status['pid']}, up {minutes:.0f} min,"
        f" {status['served']} command(s) served; log {home / 'log'}"
    )
    return 0
