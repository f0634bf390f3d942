"""``alertsieve warm status|stop``, and how ``backtest`` and ``filters check|diff`` run: in the
warm Spark session they start and reuse, so a filter author's second command answers in seconds."""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from typing import Any

from alertsieve.cli.shared import verbosity


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


def run_task(task: str, args: argparse.Namespace) -> int:
    """The filter author's ``task`` (``alertsieve.backtest.author_tasks``) with the flags of
    ``args``: in the warm session, or in this process when that is off or this process has a
    session already (a notebook's, a test's), which the task then uses."""
    from alertsieve.backtest.author_tasks import TASKS

    function = TASKS[task]
    arguments = {k: v for k, v in vars(args).items() if k in inspect.signature(function).parameters}
    if not _goes_warm():
        return function(print, **arguments)
    from alertsieve.warm import client

    return client.run(task, arguments, verbosity(args))


def _goes_warm() -> bool:
    """Whether a task runs in the warm process: unless turned off, or this process already has
    a session."""
    from alertsieve.warm import protocol

    if not protocol.enabled():
        return False
    if "pyspark" in sys.modules:
        from pyspark.sql import SparkSession

        return SparkSession.getActiveSession() is None
    return True
