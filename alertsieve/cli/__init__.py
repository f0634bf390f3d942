"""alertsieve: filter Rubin and ZTF alert streams. Write a filter, check it (filters check), try
it on past alerts (backtest), run it on a stream (filter), and read its matches (listen)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from alertsieve import logs
from alertsieve.cli import (
    annotate,
    backtest,
    bench,
    catalog,
    demo,
    filters,
    jars,
    job,
    kafka,
    listen,
    produce,
    schemas,
    setup,
    warm,
)
from alertsieve.cli.shared import add_verbosity, verbosity
from alertsieve.errors import AlertsieveError

_Raw = argparse.RawDescriptionHelpFormatter
EPILOG = """a filter author's first commands (no Kafka needed):
  alertsieve filters check my_filter --filter-path my_filters/
  alertsieve backtest --input tests/data/real --filter-path my_filters/ --filter my_filter
'alertsieve COMMAND --help' says more; docs/ has the guides."""


def build_parser() -> argparse.ArgumentParser:
    """Every command, each from its module, in the order ``--help`` lists them; each parser's
    ``handler`` default is the function that runs it."""
    parser = argparse.ArgumentParser(
        prog="alertsieve", description=__doc__, epilog=EPILOG, formatter_class=_Raw
    )
    sub = parser.add_subparsers(dest="command", required=True)
    setup.add_parser(sub)
    jars.add_parser(sub)
    kafka.add_parser(sub)
    produce.add_parser(sub)
    job.add_parsers(sub)
    filters.add_parser(sub)
    backtest.add_parser(sub)
    bench.add_parser(sub)
    schemas.add_parser(sub)
    catalog.add_parsers(sub)
    listen.add_parser(sub)
    annotate.add_parser(sub)
    demo.add_parser(sub)
    warm.add_parser(sub)
    for command in sub.choices.values():
        add_verbosity(command)
        for sub_command in _sub_commands(command):
            add_verbosity(sub_command, inherited=True)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Every command's ``--help`` opens with a sentence: its own description, or else the line
    the command list shows for it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for listed in action._choices_actions:
                child = action.choices[listed.dest]
                if child.description is None and listed.help:
                    child.description = listed.help[0].upper() + listed.help[1:] + "."
                _describe(child)


def _sub_commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``bench soak``, ``filters list``, ...: the sub-commands of a command that has them."""
    return [
        child
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for child in action.choices.values()
    ]


#: The one line a command of the job says in a subscriber's install (no pyspark): what to add.
NEEDS_STREAM = (
    "needs the filter job's packages, which this install has not: pip install 'alertsieve[stream]'"
)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(verbosity(args))
    if not getattr(args, "spark_free", False) and importlib.util.find_spec("pyspark") is None:
        print(f"alertsieve {args.command}: {NEEDS_STREAM}", file=sys.stderr)
        return 2
    try:
        return args.handler(args)
    except (
        AlertsieveError
    ) as e:  # ours, explained in the message; anything else is a bug: its traceback
        print(f"alertsieve {args.command}: error: {e}", file=sys.stderr)
        return 2
