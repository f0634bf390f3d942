"""What several commands share: the ``-v``/``-q`` every command takes, a night on the command line,
and the librdkafka settings of a command that reads a job's topics."""

from __future__ import annotations

import argparse
from datetime import date

from alertsieve import logs


def add_verbosity(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    """Every command's ``-v``/``-q``: how much of the library's log it shows. A sub-command's
    (``bench soak -q``) are ``inherited``: not given, they leave what its command was given
    (``bench -q soak``) as it is."""
    default = argparse.SUPPRESS if inherited else False
    said = parser.add_mutually_exclusive_group()
    said.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="also debug lines, each with its time and logger",
    )
    said.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="warnings and errors only; no progress bar",
    )


def add_kafka_conf(parser: argparse.ArgumentParser) -> None:
    """``--kafka-conf KEY=VALUE ...``: the client's librdkafka settings (a secured cluster)."""
    parser.add_argument(
        "--kafka-conf",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka settings, e.g. security.protocol=SASL_SSL sasl.password=env:PW",
    )


def verbosity(args: argparse.Namespace) -> int:
    return logs.QUIET if args.quiet else logs.VERBOSE if args.verbose else logs.NORMAL


def night(text: str) -> date:
    """An observing night on the command line: an ISO date, or a clear error naming the form."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a night: give a date, YYYY-MM-DD"
        ) from None
