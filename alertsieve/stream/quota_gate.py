"""The daily quotas of a running job: which filters each batch withholds, decided as the batch
starts from every batch before it, and each batch's use counted on the counts topic.

Spark reports a batch to the job's listener after it ends, and over a backlog the next batch has
started by then. So the hot path of a job with quotas publishes through a foreachBatch
(``hot_path.publish_within``) that first waits for the previous batch's report to be counted
(``MetricsLog.wait_for_batch``), then withholds the filters whose quota is reached: a quota is
overshot by at most the batch that reached it. A new UTC day (by ``clock``) is seen at the next
batch's start, and the withheld filters publish again.

Real-Time Mode has no foreachBatch and no point between two records to decide at: the withheld
filters are planned into the query (``new_query``), and when they change (a quota reached at
an epoch's end, or a new day) the job restarts the query (``restart_due``): a quota is overshot
by the epoch that reached it and what the next one published before the restart (a second or
two of a checkpoint interval).

A job (re)started reads today's use back from the counts topic (``QuotaBook.restore``): its
records of the day, found by their Kafka timestamps, not the whole topic.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable

from alertsieve.publish.counts import CountsTopic, read_counts
from alertsieve.stream.config import JobConfig
from alertsieve.stream.metrics import BatchStats
from alertsieve.stream.quotas import QuotaBook, utc_day

log = logging.getLogger(__name__)

#: How long a batch waits for the previous one's report before it decides on what is counted.
REPORT_WAIT_S = 120.0
#: Decisions kept for batches not reported yet (a report comes a batch or two late).
DECISIONS_KEPT = 100


def todays_records(cfg: JobConfig, today: dt.date) -> list[dict]:
    """The counts topic's records stamped on ``today`` (UTC) or later."""
    start = dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC)
    return read_counts(
        cfg.bootstrap, cfg.counts_topic, cfg.kafka_conf, int(start.timestamp() * 1000)
    )


class QuotaGate:
    """Decides, counts and says: the job's side of ``QuotaBook``."""

    def __init__(
        self,
        book: QuotaBook,
        counts: CountsTopic,
        versions: Callable[[], dict[str, str]],
        clock: Callable[[], dt.datetime],
        wait_for_batch: Callable[[int, float], bool],
    ):
        """``versions()``: the running filters' versions (for the quota record);
        ``wait_for_batch(batch_id, timeout)``: True once that batch's report was counted."""
        self.book = book
        self.counts = counts
        self.versions = versions
        self.clock = clock
        self.wait_for_batch = wait_for_batch
        self._lock = threading.Lock()
        self._decided: dict[int, frozenset[str]] = {}
        self._first: int | None = None  # the first batch of the running query
        self._planned: frozenset[str] = frozenset()  # planned into a Real-Time Mode query
        for name in sorted(book.withheld):
            log.warning(
                "quota: %s reached its quota for %s before this start (%s): its matches are"
                " withheld until the next UTC day",
                name,
                book.day,
                book.used[name],
            )

    @classmethod
    def restore(
        cls,
        limits: dict[str, dict[str, int]],
        cfg: JobConfig,
        counts: CountsTopic,
        versions: Callable[[], dict[str, str]],
        clock: Callable[[], dt.datetime],
        wait_for_batch: Callable[[int, float], bool],
    ) -> QuotaGate:
        today = utc_day(clock())
        book = QuotaBook.restore(limits, today, todays_records(cfg, today))
        return cls(book, counts, versions, clock, wait_for_batch)

    @property
    def limits(self) -> dict[str, dict[str, int]]:
        return self.book.limits

    def use_limits(self, limits: dict[str, dict[str, int]]) -> None:
        """The quotas of a new deployment (``--watch``): today's use goes on."""
        with self._lock:
            self.book.set_limits(limits)

    def new_query(self, realtime: bool = False) -> frozenset[str]:
        """The hot path's query (re)starts: its first batch follows no batch of its own. In
        Real-Time Mode, the filters withheld for the query's life (to plan in); in micro-batches
        none (each batch decides, ``decide``)."""
        with self._lock:
            self._first = None
            self._roll()
            self._planned = frozenset(self.book.withheld) if realtime else frozenset()
            return self._planned

    def restart_due(self) -> bool:
        """Real-Time Mode: whether the withheld filters differ from those planned in (a quota
        reached, or a new UTC day released them), so the query must be restarted."""
        with self._lock:
            self._roll()
            return frozenset(self.book.withheld) != self._planned

    def _roll(self) -> None:
        if self.book.roll(utc_day(self.clock())):
            log.info("quota: a new UTC day (%s): every filter publishes again", self.book.day)

    def decide(self, batch_id: int) -> frozenset[str]:
        """The filters batch ``batch_id`` withholds, once every earlier batch of the query is
        counted."""
        if self._first is None:
            self._first = batch_id
        elif batch_id > self._first and not self.wait_for_batch(batch_id - 1, REPORT_WAIT_S):
            log.warning(
                "quota: batch %d not counted after %.0f s; batch %d withholds what is counted",
                batch_id - 1,
                REPORT_WAIT_S,
                batch_id,
            )
        with self._lock:
            self._roll()
            held = frozenset(self.book.withheld)
            self._decided[batch_id] = held
            for old in [b for b in self._decided if b < batch_id - DECISIONS_KEPT]:
                del self._decided[old]
        return held

    def withheld_in(self, batch_id: int) -> frozenset[str]:
        """What ``decide`` said for that batch, else what the query was planned with."""
        with self._lock:
            return self._decided.get(batch_id, self._planned)

    def count(self, stats: BatchStats, progress: dict) -> None:
        """A batch's counts on the counts topic (published, withheld and bytes of each filter with
        a quota), added to the day's use; a filter that reached its quota gets a WARNING and a
        quota record."""
        book = self.book
        self.counts.write(
            progress,
            stats.input_rows,
            stats.quarantined_rows,
            stats.matches,
            {n: stats.withheld.get(n, 0) for n in book.limits},
            {n: stats.published_bytes.get(n, 0) for n in book.limits},
            stats.filter_errors,
            stats.lost_at_source,
            stats.filter_error_alerts,
        )
        with self._lock:
            reached = book.add(stats.matches, stats.published_bytes)
            used = {n: dict(book.used[n]) for n in reached}
        for name in reached:
            log.warning(
                "quota: %s reached its quota for %s with batch %d (%s of %s): its matches are"
                " withheld until the next UTC day",
                name,
                book.day,
                stats.batch_id,
                used[name],
                book.limits[name],
            )
            self.counts.quota_reached(
                name, self.versions()[name], str(book.day), used[name], book.limits[name]
            )
