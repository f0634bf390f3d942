"""The base of alertsieve's own errors: a problem the user can fix from the message alone (a bad
setting, a filter that does not compile, a broker that cannot be reached). The command line
prints these as one line; any other exception is a bug and keeps its traceback."""

from __future__ import annotations


class AlertsieveError(Exception):
    """An error alertsieve explains in its message. Subclasses also keep the built-in class they
    had (``ValueError`` for bad input, ``RuntimeError`` for a failure while running), so code that
    catches those goes on working."""
