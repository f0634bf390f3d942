"""The alert bytes apart from the matching: a micro-batch job whose filters or models run in
Python matches its alerts without their bytes, and reads the bytes back only for the records
that publish an alert.

Spark's Arrow UDFs (the predicate-first matcher, Python filters, the models' scores) queue every
input row beside the Python worker until its result comes back, and join the two. In one
stateless query the alert's ~100 KB are in that row: ~1 GB queued a batch of 10,000 alerts, the
job with shared delivery at a quarter of the same evaluation without the bytes, and a job whose
cuts read a model's score out of memory at the default 3g (exit 52). No plan that keeps the
bytes in the rows avoids it. So:

1. the streaming query is the hot path with the alerts' bytes dropped at their decode (their
   size kept, for quotas: ``outcome_columns.ALERT_SIZE``): decode, scores, matching, every
   record built (a fields record whole, an alert's without its bytes), the metrics observed as
   ever; a few hundred bytes a record;
2. each batch of those records (``BytesApart``, its foreachBatch) is kept; the records that
   publish an alert (``WHOLE``: the alert filters', the quarantine's, a shared record's with an
   alert) name where it is (``SOURCE``), and the driver reads those offsets again from Kafka, in
   a few ranges per partition (``ranges``), and publishes them with their alert's bytes
   (``alertsieve.kafka.read_again``), while Spark's Kafka sink writes the others; nothing is
   read again when no record publishes an alert (fields records, shared envelopes). A withheld
   filter's records are left out (``hot_path.within_quotas``).

The plan is built once, as the one query's is; a batch's foreachBatch plans only its two writes.
Real-Time Mode runs no Python (its filters are SQL) and keeps the one query, as does a job of
SQL filters only: no UDF queues its rows, and reading the input twice would cost what its
filters do.
"""

from __future__ import annotations

import logging
import threading
import time

from alertsieve.kafka.read_again import Record, Republisher
from alertsieve.stream.batch_metrics import STAGES
from alertsieve.stream.config import JobConfig
from alertsieve.stream.hot_path import within_quotas
from alertsieve.stream.outcome_columns import SOURCE, WHOLE
from alertsieve.stream.quota_gate import QuotaGate
from alertsieve.stream.sink_settings import sink_options

log = logging.getLogger(__name__)

#: Offsets of one partition read again as one range when the gap between two wanted alerts is
#: at most this (an alert is ~100 KB: a gap read costs less than another Kafka read's start) ...
GAP_OFFSETS = 200
#: ... and in at most this many ranges per partition (each is a Spark task).
MAX_RANGES = 8


def gc_seconds(spark) -> float:
    """Seconds the driver's JVM spent collecting garbage since it started (in local mode, the
    executors' too: they are the same JVM)."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(b.getCollectionTime(), 0) for b in beans) / 1e3


def ranges(offsets: list[int]) -> list[tuple[int, int]]:
    """[start, end) ranges covering the wanted ``offsets`` of one partition: a new range where
    the gap to the next is over ``GAP_OFFSETS``, at the widest gaps, at most ``MAX_RANGES``."""
    wanted = sorted(set(offsets))
    gaps = sorted(((wanted[i + 1] - wanted[i], i) for i in range(len(wanted) - 1)), reverse=True)
    cuts = sorted(i for gap, i in gaps[: MAX_RANGES - 1] if gap > GAP_OFFSETS)
    out, start = [], 0
    for i in [*cuts, len(wanted) - 1]:
        out.append((wanted[start], wanted[i] + 1))
        start = i + 1
    return out


class BytesApart:
    """The foreachBatch of a micro-batch job whose matching runs in Python (see the module): a
    batch of the hot path's records without the alerts' bytes, published: those that publish
    an alert by the driver, which reads the alerts again (``alertsieve.kafka.read_again``), the
    others by Spark's Kafka sink meanwhile. ``observed(batch_id)`` gives a batch's stages
    (``STAGES``) as its progress report's observations would."""

    def __init__(self, cfg: JobConfig, topics: int, gate: QuotaGate | None = None):
        self.gate = gate
        self.options = sink_options(cfg, topics)
        # assigned partitions, never a joined group: no offsets are committed
        group = f"alertsieve-read-again-{cfg.output_prefix or 'job'}"
        self.republisher = Republisher(cfg.bootstrap, cfg.kafka_conf, group)
        self._stages: dict[int, dict] = {}
        self._lock = threading.Lock()

    def __call__(self, rows, batch_id: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from pyspark.sql import functions as F

        spark = rows.sparkSession
        started, gc_before = time.perf_counter(), gc_seconds(spark)
        rows = rows.persist()
        try:
            records = rows.count()  # every record built and kept, the batch's metrics observed
            if self.gate is not None:  # less the withheld filters' (their quota reached)
                rows = within_quotas(rows, self.gate.decide(batch_id))
            whole = rows.where(F.col(WHOLE)).select(*SOURCE, "key", "topic", "headers").collect()
            prepared = time.perf_counter()
            with ThreadPoolExecutor(1) as driver:
                read_again = driver.submit(self._publish_whole, whole)
                rest = rows.where(~F.col(WHOLE)).drop(*SOURCE, WHOLE)
                rest.write.format("kafka").options(**self.options).save()
                read = read_again.result()
        finally:
            rows.unpersist()
        stages = {
            "prepare": round(prepared - started, 3),
            "publish": round(time.perf_counter() - prepared, 3),
            "gc": round(gc_seconds(spark) - gc_before, 3),
            "records": records,
            "records_whole": len(whole),
            "read_again": read,
        }
        with self._lock:
            self._stages[batch_id] = stages
        log.debug("batch %d: %s", batch_id, stages)

    def _publish_whole(self, whole: list) -> int:
        """Publish the records of ``whole`` (rows of their alert's place, key, topic and
        headers) with their alerts' bytes, read again; the alerts read."""
        wanted: dict[tuple[str, int, int], list[Record]] = {}
        for r in whole:
            headers = [
                (h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"]
            ]
            key = None if r["key"] is None else bytes(r["key"])
            place = (r["_topic"], r["_partition"], r["_offset"])
            wanted.setdefault(place, []).append(Record(r["topic"], key, headers))
        by_partition: dict[tuple[str, int], list[int]] = {}
        for topic, partition, offset in wanted:
            by_partition.setdefault((topic, partition), []).append(offset)
        spans = {p: ranges(offsets) for p, offsets in by_partition.items()}
        return self.republisher.publish(wanted, spans) if wanted else 0

    def close(self) -> None:
        self.republisher.close()

    def observed(self, batch_id: int) -> dict:
        """Batch ``batch_id``'s stages, as {``STAGES``: {stage: value}}, once."""
        with self._lock:
            stages = self._stages.pop(batch_id, None)
        return {STAGES: stages} if stages is not None else {}
