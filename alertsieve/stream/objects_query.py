"""The job's objects query: its filters of objects (``object.*``, ``annotations.*``, triggered by
annotations) over the input's alerts and the annotators' topics, through each object's state
(``alertsieve.stream.objects``), in micro-batches beside the stateless query.

It is the hot path's assembly with that state in it, its checkpoint its own (the state store
with it: ``JobConfig.objects_checkpoint``), its records published apart from the alerts' bytes
(``alertsieve.stream.bytes_apart``: an annotation's record carries the object's latest alert,
read again from where it is), its batches counted on the counts topic like the stateless
query's (so ``listen --verify`` proves its filters complete too) and logged as ``objects`` lines.
"""

from __future__ import annotations

import dataclasses
import logging

from alertsieve.publish.counts import CountsTopic
from alertsieve.stream.bytes_apart import BytesApart
from alertsieve.stream.checkpoint import clear_interrupted_writes
from alertsieve.stream.config import JobConfig
from alertsieve.stream.hot_path import hot_path
from alertsieve.stream.metrics import BatchStats, MetricsLog
from alertsieve.stream.objects import ObjectState, summary_paths
from alertsieve.stream.outcome_columns import runs_python
from alertsieve.stream.plan import JobPlan, published
from alertsieve.stream.source import source_options

log = logging.getLogger(__name__)

OBJECTS_QUERY_NAME = "alertsieve_objects"

#: Spark's RocksDB state store: the objects' state on local disk rather than the default store's
#: whole map on the JVM heap; each batch checkpoints its changes (a changelog) rather than a
#: snapshot of every file (48 MB a batch at 100,000 objects, growing with the objects), and the
#: snapshots are taken in the background.
STATE_STORE = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}


def with_objects(plan: JobPlan, objects: JobPlan) -> JobPlan:
    """``plan`` with the filters of ``objects`` too: what the job publishes as a whole (its
    topics, its deployment record, the archive of every topic); no query runs it."""
    return dataclasses.replace(
        plan,
        filters=[*plan.filters, *[f for f in objects.filters if f not in plan.filters]],
        versions={**plan.versions, **objects.versions},
        payloads={**plan.payloads, **objects.payloads},
        archive_paths=list(dict.fromkeys([*plan.archive_paths, *objects.archive_paths])),
        shapes=(),
        predicates=None,
    )


NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


class ObjectsQuery:
    """The objects query of one job (see the module) for ``plan``, the plan of its filters of
    objects. ``quarantines``: the alerts that do not decode are quarantined here (no stateless
    query runs)."""

    def __init__(self, spark, cfg: JobConfig, plan: JobPlan, quarantines: bool = False):
        self.spark, self.cfg = spark, cfg
        paths = list(dict.fromkeys([*plan.paths, *summary_paths(plan.decoder)]))
        self.plan = dataclasses.replace(plan, paths=paths)
        self.quarantines = quarantines
        self.counts = CountsTopic(
            cfg.bootstrap,
            cfg.counts_topic,
            cfg.kafka_conf,
            published(plan, cfg),
            cfg.quarantine_topic,
        )
        self.metrics = MetricsLog(
            cfg.metrics_path,
            [f.name for f in plan.filters],
            {f.name for f in plan.filters if f.runs_python},
            query_name=OBJECTS_QUERY_NAME,
            on_batch=self._count,
            models=plan.readers,
            kind="objects",
        )
        self.apart: BytesApart | None = None

    def _count(self, stats: BatchStats, progress: dict) -> None:
        if stats.objects:
            log.info("objects, batch %d: %s", stats.batch_id, stats.objects)
        self.counts.write(
            progress,
            stats.input_rows,
            stats.quarantined_rows,
            stats.matches,
            errors=stats.filter_errors,
            failed=stats.filter_error_alerts,
        )

    def start(self):
        """The query, started (from its checkpoint, its state with it)."""
        cfg = self.cfg
        clear_interrupted_writes(self.spark, cfg.objects_checkpoint)
        for key, value in STATE_STORE.items():
            self.spark.conf.set(key, value)
        state = ObjectState(
            self.plan, cfg, self.quarantines, carries_bytes=not runs_python(self.plan)
        )
        alerts = self.spark.readStream.format("kafka").options(**source_options(cfg)).load()
        raw = alerts.unionByName(state.annotations(self.spark))
        frame = hot_path(raw, self.plan, cfg, learn=False, alert_bytes=False, objects=state)
        self.close()
        self.apart = BytesApart(cfg, len(self.plan.filters) + 1)
        self.metrics.observed_in = self.apart.observed
        writer = (
            frame.writeStream.foreachBatch(self.apart)
            .option("checkpointLocation", cfg.objects_checkpoint)
            .queryName(OBJECTS_QUERY_NAME)
        )
        if cfg.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{cfg.trigger_seconds or 1} seconds")
        log.info(
            "objects query: %d filter(s) of objects, state in %s",
            len(self.plan.filters),
            cfg.objects_checkpoint,
        )
        # Its timers (objects to forget) would run a batch at every trigger with no data, and
        # an available-now run would never end: they fire in the batches that read alerts. A
        # query takes the session's settings as it starts.
        before = self.spark.conf.get(NO_DATA_BATCHES, None)
        self.spark.conf.set(NO_DATA_BATCHES, "false")
        try:
            return writer.start()
        finally:
            if before is None:
                self.spark.conf.unset(NO_DATA_BATCHES)
            else:
                self.spark.conf.set(NO_DATA_BATCHES, before)

    def close(self) -> None:
        """Its read-again clients (the query is stopped by the job)."""
        if self.apart is not None:
            self.apart.close()
            self.apart = None

    def end(self, query) -> None:
        """After its query stopped: its last batches logged and counted, its clients closed."""
        self.metrics.flush(query.recentProgress)
        self.close()
        self.counts.close()
