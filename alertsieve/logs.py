"""Where the library's log records go when a command runs.

The library only logs (a logger per module, under ``alertsieve``), so a notebook or an application
embedding it decides what it sees. A command calls ``configure`` once: by default the job's
progress reads as plain lines (a batch, a deployed filter, what the plan decodes) and warnings say
so; ``-v`` adds the debug records with their time and logger, ``-q`` keeps warnings and errors only.
Records go to standard error, so a command's results on standard output stay clean to pipe.
"""

from __future__ import annotations

import logging
import sys

LIBRARY = "alertsieve"
QUIET, NORMAL, VERBOSE = -1, 0, 1


class _PlainFormatter(logging.Formatter):
    """Progress as it has always read: the message alone; a warning or error names itself."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (pytest and notebooks replace it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:  # StreamHandler assigns it once; the property decides
        pass


def configure(verbosity: int = NORMAL) -> None:
    """Send the library's records to standard error: ``QUIET`` warnings and errors only,
    ``NORMAL`` progress as plain lines, ``VERBOSE`` everything with its time and logger.
    Calling it again replaces the earlier choice (one handler, never two)."""
    logger = logging.getLogger(LIBRARY)
    for handler in [h for h in logger.handlers if isinstance(h, _CurrentStderr)]:
        logger.removeHandler(handler)
    handler = _CurrentStderr()
    if verbosity >= VERBOSE:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(_PlainFormatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel({QUIET: logging.WARNING, NORMAL: logging.INFO}.get(verbosity, logging.DEBUG))
