"""What a backtest or a diff read of its input: nothing decoded is refused, naming why; alerts that
did not decode are counted per reason (the stream job's quarantine reasons). A table of zeros
over an input never read would say the filters pass nothing, when they were never tried."""

from __future__ import annotations

import logging

from alertsieve.errors import AlertsieveError

log = logging.getLogger(__name__)

#: The undecodable alerts' reasons a backtest names, most common first; the rest are counted.
REASONS_SHOWN = 5


class NothingToBacktest(AlertsieveError, ValueError):
    """An input of which no alert was read: its table of zeros would say the filters pass
    nothing, when they were never tried."""


def refuse_or_warn(
    read: int, undecodable: dict[str, int], since: object = None, until: object = None
) -> None:
    """Nothing decoded (in the nights ``since`` to ``until``, when given) of the ``read`` alerts:
    refused, with why; some undecodable (``undecodable``: reason -> alerts): a warning with how
    many and why, per reason."""
    bad = sum(undecodable.values())
    ranked = sorted(undecodable.items(), key=lambda kv: (-kv[1], kv[0]))
    why = "; ".join(f"{n} x {reason}" for reason, n in ranked[:REASONS_SHOWN])
    if len(ranked) > REASONS_SHOWN:
        why += f"; and {sum(n for _, n in ranked[REASONS_SHOWN:])} for other reasons"
    if read == bad:
        if since or until:
            nights = f"in the nights {since or '...'} to {until or '...'}"
            undecoded = f"; {bad} could not be decoded: {why}" if bad else ""
            raise NothingToBacktest(f"no alert of the input decodes {nights}{undecoded}")
        if not read:
            raise NothingToBacktest("the input holds no alert: nothing to backtest")
        raise NothingToBacktest(
            f"none of the {read} alerts read could be decoded: {why}"
            " (the stream job's quarantine reasons)"
        )
    if bad:
        log.warning(
            "%d of %d alerts could not be decoded (%s); rates are over the %d decoded",
            bad,
            read,
            why,
            read - bad,
        )
