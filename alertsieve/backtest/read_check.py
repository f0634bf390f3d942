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


def refuse_or_warn(read: int, undecodable: int, decoded, since=None, until=None) -> None:
    """Nothing decoded (in the nights asked for): refused, with why; some alerts undecodable: a
    warning with how many and why, per reason (a second pass over the input, only then)."""
    why = ""
    if undecodable:
        from pyspark.sql import functions as F

        counts = (
            decoded.where(F.col("_reason").isNotNull())
            .groupBy("_reason")
            .count()
            .orderBy(F.desc("count"), "_reason")
            .collect()
        )
        why = "; ".join(f"{r['count']} x {r['_reason']}" for r in counts[:REASONS_SHOWN])
        if len(counts) > REASONS_SHOWN:
            why += f"; and {sum(r['count'] for r in counts[REASONS_SHOWN:])} for other reasons"
    if read == undecodable:
        if since or until:
            nights = f"in the nights {since or '...'} to {until or '...'}"
            undecoded = f"; {undecodable} could not be decoded: {why}" if undecodable else ""
            raise NothingToBacktest(f"no alert of the input decodes {nights}{undecoded}")
        if not read:
            raise NothingToBacktest("the input holds no alert: nothing to backtest")
        raise NothingToBacktest(
            f"none of the {read} alerts read could be decoded: {why}"
            " (the stream job's quarantine reasons)"
        )
    if undecodable:
        log.warning(
            "%d of %d alerts could not be decoded (%s); rates are over the %d decoded",
            undecodable,
            read,
            why,
            read - undecodable,
        )
