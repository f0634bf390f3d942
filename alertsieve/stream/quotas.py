"""Daily quotas: a filter that reaches its quota for the UTC day has its matches withheld until
the next one.

Lasair gives every filter a daily Kafka quota; here a filter may carry ``quota: {records: N,
bytes: B}`` (or the job's settings give it, per filter in ``filter_outputs`` or for every filter
in ``quota``). After each batch the job adds the filters' published records and bytes to
their use of the day, and a filter whose use reached its quota is withheld from the next batch
on: its matches still counted (the counts topic's ``withheld``), not published. At the next UTC
day the book starts again and the withheld filters publish again. A job restarted the same day
reads its use back from the counts topic (each batch's published records and bytes, a batch
written twice counted once), not from a state store of its own.

Pure bookkeeping: ``alertsieve.stream.quota_gate`` feeds it from the running job.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from alertsieve.publish import contract

KINDS = (contract.RECORDS, contract.BYTES)


def limits_of(filters: Iterable, default: Mapping[str, int] | None) -> dict[str, dict[str, int]]:
    """{filter: {records and/or bytes: limit}}: a filter's own quota, else the job's default."""
    out = {}
    for f in filters:
        quota = {k: v for k, v in (f.quota or default or {}).items() if v is not None}
        if quota:
            out[f.name] = dict(quota)
    return out


def utc_day(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()


@dataclass
class QuotaBook:
    """The filters' use of their quotas on ``day`` (UTC) and which are withheld."""

    limits: dict[str, dict[str, int]]
    day: dt.date
    used: dict[str, dict[str, int]] = field(default_factory=dict)
    withheld: set[str] = field(default_factory=set)

    def add(self, published: Mapping[str, int], sizes: Mapping[str, int]) -> list[str]:
        """Add a batch's published records and bytes; the filters that reached their quota with
        it (withheld from now on)."""
        reached = []
        for name, limit in self.limits.items():
            use = self.used.setdefault(name, dict.fromkeys(KINDS, 0))
            use[contract.RECORDS] += int(published.get(name, 0))
            use[contract.BYTES] += int(sizes.get(name, 0))
            if name not in self.withheld and any(use[k] >= n for k, n in limit.items()):
                self.withheld.add(name)
                reached.append(name)
        return reached

    def set_limits(self, limits: dict[str, dict[str, int]]) -> None:
        """New quotas (a deployment): today's use goes on, measured against them (a raised
        quota publishes again, a lowered one below the use withholds)."""
        self.limits = limits
        self.withheld = {
            n
            for n, limit in limits.items()
            if any(self.used.get(n, {}).get(k, 0) >= v for k, v in limit.items())
        }

    def roll(self, today: dt.date) -> bool:
        """A new UTC day: every use back to zero; True when filters were withheld (they publish
        again)."""
        if today == self.day:
            return False
        released = bool(self.withheld)
        self.day, self.used, self.withheld = today, {}, set()
        return released

    @classmethod
    def restore(
        cls, limits: dict[str, dict[str, int]], today: dt.date, records: Iterable[Mapping]
    ) -> QuotaBook:
        """The book of ``today`` from the counts topic's records: each batch's counts (the last
        record of a query's batch, a batch run again writes them again) written that UTC day."""
        batches: dict[tuple, Mapping] = {}
        for r in records:
            if r.get(contract.KIND, contract.COUNTS_KIND) != contract.COUNTS_KIND:
                continue
            written = dt.datetime.fromtimestamp(float(r.get(contract.WRITTEN_AT, 0)), dt.UTC)
            if written.date() == today:
                batches[(r.get(contract.QUERY_ID), r.get(contract.BATCH_ID))] = r
        book = cls(limits, today)
        for r in batches.values():
            filters = r.get(contract.FILTERS) or {}
            book.add(
                {n: f.get(contract.PUBLISHED, 0) for n, f in filters.items()},
                {n: f.get(contract.BYTES, 0) for n, f in filters.items()},
            )
        return book
