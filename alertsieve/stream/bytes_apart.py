"""The alert bytes apart from the matching: a micro-batch job whose filters or models run in
Python matches its alerts without their bytes, and joins the bytes back only into the records
that publish an alert.

Spark's Arrow UDFs (the predicate-first matcher, Python filters, the models' scores) queue every
input row beside the Python worker until its result comes back, and join the two. In one
stateless query the alert's ~100 KB are in that row: ~1 GB queued a batch of 10,000 alerts, the
job with shared delivery at a quarter of the same evaluation without the bytes, and a job whose
cuts read a model's score out of memory at the default 3g (exit 52). No plan that keeps the
bytes in the rows avoids it, so each batch runs here, in a foreachBatch:

1. the batch's Kafka rows are decoded into the filter view and their bytes dropped there (their
   size kept, for quotas: ``hot_path.ALERT_SIZE``); the filters are matched, the models scored
   and every record written (a fields record whole, an alert's without its bytes), and the
   records are kept (a few hundred bytes a match);
2. the place (topic, partition, offset) of each record that publishes an alert is broadcast with
   it, and the batch's Kafka rows are read again for their bytes, joined into those records only
   (no second read when none publishes an alert: fields records, shared envelopes);
3. the records go to Kafka with the hot path's producer settings, less a withheld filter's.

The batch's metrics are observed on the same frames, into ``pyspark.sql.Observation``s that the
job's listener reads back with the batch's progress (``observed``): the counts topic, quotas,
``listen --verify`` and the archive see what they saw before. Real-Time Mode runs no Python (its
filters are SQL) and keeps the one query, as does a job of SQL filters only: no UDF queues its
rows, and a second read of the input would cost what its filters do.
"""

from __future__ import annotations

import logging
import threading
import time

from alertsieve.stream.config import JobConfig
from alertsieve.stream.hot_path import SOURCE, WHOLE, hot_path, sink_options, within_quotas
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.quota_gate import QuotaGate

log = logging.getLogger(__name__)

#: The observation of a batch's stages (``BytesApart``): seconds to its records kept
#: (``prepare``: read, decode, scores, matching, records), to its records published (``publish``:
#: the alerts' bytes read again and joined in, the records written), the JVM's GC meanwhile
#: (``gc``), the records and those that publish an alert (``records``, ``records_whole``).
STAGES = "alertsieve_stages"


def gc_seconds(spark) -> float:
    """Seconds the driver's JVM spent collecting garbage since it started (in local mode, the
    executors' too: they are the same JVM)."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(b.getCollectionTime(), 0) for b in beans) / 1e3


class BytesApart:
    """The foreachBatch of a micro-batch job whose matching runs in Python (see the module);
    ``observed(batch_id)`` gives a batch's metrics as its progress report would have held them."""

    def __init__(
        self,
        plan: JobPlan,
        cfg: JobConfig,
        topics: int,
        gate: QuotaGate | None = None,
        learn: bool = True,
        stored: str | None = None,
    ):
        self.plan, self.cfg, self.gate, self.learn, self.stored = plan, cfg, gate, learn, stored
        self.options = sink_options(cfg, topics)
        self._observed: dict[int, dict] = {}
        self._lock = threading.Lock()

    def __call__(self, batch, batch_id: int) -> None:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        made: dict[str, Observation] = {}

        def observe(name: str) -> Observation:
            made[name] = Observation(name)
            return made[name]

        started, gc_before = time.perf_counter(), gc_seconds(batch.sparkSession)
        gate = self.gate
        withheld = gate.decide(batch_id) if gate is not None else frozenset()
        rows = hot_path(
            batch,
            self.plan,
            self.cfg,
            frozenset(gate.limits) if gate is not None else frozenset(),
            keep_filter=gate is not None,
            learn=self.learn,
            stored=self.stored,
            observe=observe,
            alert_bytes=False,
        ).persist()
        try:
            whole = rows.where(F.col(WHOLE))
            out = rows.where(~F.col(WHOLE))
            records = rows.count()  # every record made and kept, every metric observed
            wanted = whole.count()
            prepared = time.perf_counter()
            if wanted:
                alerts = batch.select(
                    *[F.col(c[1:]).alias(c) for c in SOURCE],
                    F.coalesce(F.col("value"), F.lit(b"")).alias("value"),
                )
                joined = alerts.join(F.broadcast(whole.drop("value")), list(SOURCE))
                out = out.unionByName(joined.select(*rows.columns))
            out = out.drop(*SOURCE, WHOLE)
            out = within_quotas(out, withheld) if gate is not None else out
            out.write.format("kafka").options(**self.options).save()
        finally:
            rows.unpersist()
        stages = {
            "prepare": round(prepared - started, 3),
            "publish": round(time.perf_counter() - prepared, 3),
            "gc": round(gc_seconds(batch.sparkSession) - gc_before, 3),
            "records": records,
            "records_whole": wanted,
        }
        with self._lock:
            self._observed[batch_id] = {name: o.get for name, o in made.items()}
            self._observed[batch_id][STAGES] = stages
        log.debug("batch %d: %d records joined to their alert's bytes", batch_id, wanted)

    def observed(self, batch_id: int) -> dict:
        """Batch ``batch_id``'s observed metrics ({observation: {metric: value}}), once."""
        with self._lock:
            return self._observed.pop(batch_id, {})
