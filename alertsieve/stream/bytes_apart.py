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
2. each batch of those records (``BytesApart``, its foreachBatch) is kept, and the records that
   publish an alert (``WHOLE``: the alert filters', the quarantine's, a shared record's with an
   alert) name where it is (``SOURCE``): those offsets are read again from Kafka, in a few
   ranges per partition (``ranges``), and their bytes joined in; nothing is read again when no
   record publishes an alert (fields records, shared envelopes);
3. the records go to Kafka with the hot path's producer settings, less a withheld filter's.

The plan is built once, as the one query's is; a batch's foreachBatch plans only the join.
Real-Time Mode runs no Python (its filters are SQL) and keeps the one query, as does a job of
SQL filters only: no UDF queues its rows, and reading the input twice would cost what its
filters do.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from alertsieve.stream.config import JobConfig
from alertsieve.stream.hot_path import within_quotas
from alertsieve.stream.outcome_columns import SOURCE, WHOLE
from alertsieve.stream.quota_gate import QuotaGate
from alertsieve.stream.sink_settings import sink_options
from alertsieve.stream.sinks import kafka_options
from alertsieve.stream.source import with_fetch_sizes

log = logging.getLogger(__name__)

#: What a batch reports of its stages (``BytesApart``), as a progress report's observations:
#: seconds to its records kept (``prepare``: read, decode, scores, matching, records), to its
#: records published (``publish``: the alerts read again, joined in, the records written), the
#: JVM's GC meanwhile (``gc``), its records and those that publish an alert (``records``,
#: ``records_whole``), and the alerts read again for them (``read_again``).
STAGES = "alertsieve_stages"
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
    batch of the hot path's records without the alerts' bytes, the bytes read back and joined
    into those that publish an alert, published. ``observed(batch_id)`` gives a batch's stages
    (``STAGES``) as its progress report's observations would."""

    def __init__(self, cfg: JobConfig, topics: int, gate: QuotaGate | None = None):
        self.cfg, self.gate = cfg, gate
        self.options = sink_options(cfg, topics)
        # One consumer group for every batch's reads: Spark pools a consumer, and its last fetch
        # (16 MB a partition), by group for a minute; a batch read's own group (Spark's default)
        # added a pool entry per partition and batch, and a job reading a score ran out of its
        # 3 GB in its third batch. No offsets are committed and no group is joined (``assign``).
        self.group = f"alertsieve-read-again-{cfg.output_prefix or 'job'}"
        self._stages: dict[int, dict] = {}
        self._lock = threading.Lock()

    def __call__(self, rows, batch_id: int) -> None:
        from pyspark.sql import functions as F

        spark = rows.sparkSession
        started, gc_before = time.perf_counter(), gc_seconds(spark)
        withheld = self.gate.decide(batch_id) if self.gate is not None else frozenset()
        rows = rows.persist()
        try:
            records = rows.count()  # every record built and kept, the batch's metrics observed
            wanted = [tuple(r) for r in rows.where(F.col(WHOLE)).select(*SOURCE).collect()]
            prepared = time.perf_counter()
            out = rows.where(~F.col(WHOLE))
            read_again = 0
            if wanted:
                alerts, read_again = self._read_again(spark, wanted)
                whole = rows.where(F.col(WHOLE)).drop("value")
                joined = alerts.join(F.broadcast(whole), list(SOURCE))
                out = out.unionByName(joined.select(*rows.columns))
            out = out.drop(*SOURCE, WHOLE)
            out = within_quotas(out, withheld) if self.gate is not None else out
            out.write.format("kafka").options(**self.options).save()
        finally:
            rows.unpersist()
        stages = {
            "prepare": round(prepared - started, 3),
            "publish": round(time.perf_counter() - prepared, 3),
            "gc": round(gc_seconds(spark) - gc_before, 3),
            "records": records,
            "records_whole": len(wanted),
            "read_again": read_again,
        }
        with self._lock:
            self._stages[batch_id] = stages
        log.debug("batch %d: %s", batch_id, stages)

    def _read_again(self, spark, wanted: list[tuple]) -> tuple:
        """(the Kafka rows holding the ``wanted`` alerts (topic, partition, offset), as
        ``SOURCE`` and ``value``; how many offsets that reads)."""
        from functools import reduce

        from pyspark.sql import functions as F

        by_partition: dict[tuple[str, int], list[int]] = {}
        for topic, partition, offset in wanted:
            by_partition.setdefault((topic, partition), []).append(offset)
        spans = {p: ranges(offsets) for p, offsets in by_partition.items()}
        reads = []
        for k in range(max(len(s) for s in spans.values())):
            part = {p: s[k] for p, s in spans.items() if k < len(s)}
            start: dict[str, dict[str, int]] = {}
            end: dict[str, dict[str, int]] = {}
            for (topic, partition), (a, b) in part.items():
                start.setdefault(topic, {})[str(partition)] = a
                end.setdefault(topic, {})[str(partition)] = b
            options = with_fetch_sizes(kafka_options(self.cfg.bootstrap, self.cfg.kafka_conf))
            options.update(
                **{"kafka.group.id": self.group},
                assign=json.dumps({t: [int(p) for p in ps] for t, ps in start.items()}),
                startingOffsets=json.dumps(start),
                endingOffsets=json.dumps(end),
            )
            reads.append(spark.read.format("kafka").options(**options).load())
        alerts = reduce(lambda a, b: a.unionByName(b), reads).select(
            *[F.col(c[1:]).alias(c) for c in SOURCE],
            F.coalesce(F.col("value"), F.lit(b"")).alias("value"),
        )
        read = sum(b - a for s in spans.values() for a, b in s)
        return alerts, read

    def observed(self, batch_id: int) -> dict:
        """Batch ``batch_id``'s stages, as {``STAGES``: {stage: value}}, once."""
        with self._lock:
            stages = self._stages.pop(batch_id, None)
        return {STAGES: stages} if stages is not None else {}
