"""What a command shows of the library's log: progress as plain lines by default, warnings named,
``-q`` warnings only, ``-v`` everything with its time and logger; all on standard error."""

from __future__ import annotations

import logging
import re

import pytest

from alertsieve import logs
from alertsieve.cli import build_parser, main


@pytest.fixture
def restore_library_logger():
    logger = logging.getLogger(logs.LIBRARY)
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def _say_everything() -> None:
    log = logging.getLogger("alertsieve.stream.metrics")
    log.debug("planning detail")
    log.info("batch 0: 10 alerts")
    log.warning("batch 0: every message was quarantined")


@pytest.mark.parametrize(
    ("verbosity", "expected"),
    [
        (logs.NORMAL, ["batch 0: 10 alerts", "warning: batch 0: every message was quarantined"]),
        (logs.QUIET, ["warning: batch 0: every message was quarantined"]),
    ],
)
def test_a_command_shows_progress_plainly_and_names_warnings(
    verbosity, expected, capsys, restore_library_logger
):
    logs.configure(verbosity)
    _say_everything()
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == expected


def test_verbose_adds_debug_lines_with_time_level_and_logger(capsys, restore_library_logger):
    logs.configure(logs.VERBOSE)
    logs.configure(logs.VERBOSE)  # configured twice: still one handler, each line once
    _say_everything()
    lines = capsys.readouterr().err.splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert [re.sub(stamp, "T", line) for line in lines] == [
        "T DEBUG alertsieve.stream.metrics: planning detail",
        "T INFO alertsieve.stream.metrics: batch 0: 10 alerts",
        "T WARNING alertsieve.stream.metrics: batch 0: every message was quarantined",
    ]


def test_every_command_takes_verbose_or_quiet_but_not_both(capsys):
    commands = build_parser()._subparsers._group_actions[0].choices
    for name, parser in commands.items():
        flags = {s for a in parser._actions for s in a.option_strings}
        assert {"-v", "--verbose", "-q", "--quiet"} <= flags, name
    with pytest.raises(SystemExit) as refused:
        main(["schemas", "view", "-v", "-q"])
    assert refused.value.code == 2
    assert "argument -q/--quiet: not allowed with argument -v/--verbose" in capsys.readouterr().err
