"""The one error a subscriber's user meets: a ValueError whose message is one line naming what went
wrong and the fix, so ``alertsieve listen`` can print it as is and exit 2."""

from __future__ import annotations

from alertsieve.errors import AlertsieveError


class SubscribeError(AlertsieveError, ValueError):
    """Something a subscriber cannot do (unknown topic, schema id, unreachable broker, bad
    option), said in one line with the fix."""
