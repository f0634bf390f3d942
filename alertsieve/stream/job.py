"""The filter stream job: the hot path (one stateless query, Kafka to Kafka, in micro-batches or
Real-Time Mode) and, with the ``delta`` sink, the archive (its own query, Kafka to Delta, on its own
clock). What runs is settled at start-up (``alertsieve.stream.plan``); what each batch did is
reported from Spark's own progress (``alertsieve.stream.metrics``).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

from py4j.protocol import Py4JJavaError
from pyspark.errors import StreamingQueryException

from alertsieve.catalogs.store import CatalogError
from alertsieve.errors import AlertsieveError
from alertsieve.filtering.model import SQL_ERROR_ADVICE, SQL_ERROR_KINDS, FilterError
from alertsieve.filtering.objects import annotators_read, reads_objects
from alertsieve.filtering.scores.choose import models_read
from alertsieve.kafka.topics import watermarks
from alertsieve.publish import contract
from alertsieve.publish.counts import CountsTopic
from alertsieve.settings import ConfigError
from alertsieve.stream.archive import Archive, archive_topics
from alertsieve.stream.bytes_apart import BytesApart
from alertsieve.stream.checkpoint import clear_interrupted_writes
from alertsieve.stream.config import JobConfig, check_writable
from alertsieve.stream.diagnosis import Diagnoser
from alertsieve.stream.hot_path import hot_path, publish_within
from alertsieve.stream.input_topics import await_inputs, gone, inputs
from alertsieve.stream.metrics import MetricsLog, make_listener
from alertsieve.stream.new_writers import MAX_UNREADABLE_WRITERS
from alertsieve.stream.objects_query import ObjectsQuery, with_objects
from alertsieve.stream.outcome_columns import runs_python
from alertsieve.stream.plan import JobPlan, plan_job, published
from alertsieve.stream.prometheus import JobMetrics
from alertsieve.stream.quota_gate import QuotaGate
from alertsieve.stream.quotas import limits_of
from alertsieve.stream.records import table_labels
from alertsieve.stream.shaped import store
from alertsieve.stream.sink_settings import MAX_MESSAGE_BYTES, codegen_conf, sink_options
from alertsieve.stream.source import source_options
from alertsieve.stream.source_loss import SourceLosses

log = logging.getLogger(__name__)

QUERY_NAME = "alertsieve_filter_stream"
#: The fewest decoded alerts of a batch that can suspend a filter (``suspend_above``).
SUSPEND_FROM_ALERTS = 20


class JobFailed(AlertsieveError, RuntimeError):
    """A query of the job stopped with an error (Spark's message follows)."""


class FilterStream:
    """One running job: its plan, its queries and their metrics."""

    def __init__(self, spark, cfg: JobConfig, clock: Callable[[], dt.datetime] | None = None):
        """``clock``: the time quotas count days by (UTC; default the system's): a test moves it
        across midnight."""
        check_writable(cfg)
        await_inputs(cfg)  # a topic not there yet: planning reads its first messages
        self.spark = spark
        self.cfg = cfg
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.topics_ahead = TopicsAhead(cfg)
        try:
            self.plan = plan_job(spark, cfg, selected=self.topics_ahead.start)
        except AlertsieveError:  # a bad filter or setting: the topics made meanwhile go again
            self.topics_ahead.settle([])
            raise
        self.objects, self.everything = self._objects_apart(), self.plan
        if self.objects is not None:  # every filter: the topics, the archive, the deployment
            self.everything = with_objects(self.stateless or self.objects.plan, self.objects.plan)
            self.plan = self.stateless or self.objects.plan
        self.running = self.plan  # the plan the hot path's query was started with
        self.filters = self.plan.filters
        if cfg.realtime:
            check_realtime(spark, cfg, self.filters)
        for line in self.plan.describe():
            log.info("%s", line)
        python = {f.name for f in self.filters if f.runs_python}
        self.session_before = {k: spark.conf.get(k, None) for k in codegen_conf(self.plan)}
        self.counts = CountsTopic(
            cfg.bootstrap,
            cfg.counts_topic,
            cfg.kafka_conf,
            published(self.plan, cfg),
            cfg.quarantine_topic,
        )
        decoder = self.plan.decoder  # a batch that quarantines everything is diagnosed for these
        diagnoser = Diagnoser(decoder.survey, decoder.wire_format, detected=cfg.survey == "auto")
        self.stopping = threading.Event()  # set by ``stop``
        self.metrics = MetricsLog(
            cfg.metrics_path,
            [f.name for f in self.filters],
            python,
            query_name=QUERY_NAME,
            realtime=bool(cfg.realtime),
            on_batch=self._count,
            diagnose=diagnoser,
            python_budget=cfg.python_filter_budget,
            models=self.plan.readers,
            losses=SourceLosses(lambda parts: earliest_offsets(cfg, parts)),
        )
        self.quotas: QuotaGate | None = None
        self._use_quotas()
        self.apart: BytesApart | None = None  # the hot path's foreachBatch, when it has one
        self.learned: list[bytes] = []  # first messages of writer schemas met mid-stream
        self.unreadable = 0  # writers met mid-stream and found nowhere
        self.prometheus = (
            JobMetrics(
                lambda: watermarks(cfg.bootstrap, inputs(cfg), cfg.kafka_conf), self._quota_use
            )
            if cfg.prometheus_port is not None
            else None
        )
        self.metrics_url: str | None = None  # where Prometheus scrapes the job, once it runs
        #: SQL filters to suspend (name -> why), found by the listener; then suspended ones:
        #: name -> (the version suspended, why), left out of deployments of that version.
        self.suspending: dict[str, str] = {}
        self.suspended: dict[str, tuple[str, str]] = {}

    def _objects_apart(self) -> ObjectsQuery | None:
        """The objects query of the filters that read ``object.*`` or ``annotations.*``
        (``alertsieve.stream.objects_query``), planned apart, and the others' plan
        (``stateless``: None when every filter is of objects: no stateless query runs)."""
        cfg, spark = self.cfg, self.spark
        of_objects = [f for f in self.plan.filters if reads_objects(f)]
        self.stateless: JobPlan | None = self.plan
        if not of_objects:
            return None
        if cfg.watch:
            raise ConfigError(
                f"--watch: filters of objects ({', '.join(f.name for f in of_objects)}) are not"
                " deployed while the job runs; restart the job to change them, without --watch"
            )
        rest = [f for f in self.plan.filters if not reads_objects(f)]
        self.stateless = plan_job(spark, cfg, running=self.plan, filters=rest) if rest else None
        plain = cfg.model_copy(update={"filters_as_data": False})  # no shaped join after the state
        plan = plan_job(spark, plain, running=self.plan, filters=of_objects)
        for line in plan.describe():
            log.info("objects query: %s", line)
        return ObjectsQuery(spark, cfg, plan, quarantines=not rest)

    def _use_quotas(self) -> None:
        """The running filters' daily quotas, today's use read back from the counts topic when
        the job has none yet (at start, or at the first deployment that sets one)."""
        limits = limits_of(self.filters, self.cfg.quota_default)
        if self.quotas is not None:
            self.quotas.use_limits(limits)
        elif limits:
            self.quotas = QuotaGate.restore(
                limits,
                self.cfg,
                self.counts,
                lambda: self.plan.versions,
                self.clock,
                self.metrics.wait_for_batch,
            )
            self.metrics.withheld_in = self.quotas.withheld_in

    def stop(self) -> None:
        """Ask a job running in another thread to stop, as Ctrl-C does: its queries are stopped
        the way each must be, its last batches reported, and ``run`` returns."""
        self.stopping.set()

    def _deployed(self, plan) -> None:
        """Say what a deployment runs and what ``on_bad_filter: skip`` left out: a WARNING per
        refused filter, one record of them on the counts topic (a subscriber sees why a topic
        went quiet), and the deployment record (``filters list --bootstrap``)."""
        refusals = plan.refusals
        refused = {
            name: (reason, {n: plan.versions[n] for n in refusals.going_on(name)})
            for name, reason in (refusals.refused.items() if refusals else ())
        }
        refused |= {  # suspended while running (``_suspender``): said where they were found
            n: (why, {}) for n, (_, why) in self.suspended.items() if n not in plan.versions
        }
        self.counts.deployed(
            contract.deployment_topic(self.cfg.output_prefix), plan.versions, refused
        )
        if not refused:
            return
        for line in refusals.lines() if refusals else ():
            log.warning("%s", line)
        self.counts.refused(refused)

    def _quota_use(self) -> tuple[dict, dict]:
        """(limits, today's use) of the running quotas, for Prometheus."""
        if self.quotas is None:
            return {}, {}
        return self.quotas.limits, self.quotas.book.used

    def _count(self, stats, progress: dict) -> None:
        self._find_failing(stats)
        if self.prometheus is not None:
            self.prometheus.observe(stats, progress, self.plan.versions)
        if self.quotas is not None:
            self.quotas.count(stats, progress)
        else:
            self.counts.write(
                progress,
                stats.input_rows,
                stats.quarantined_rows,
                stats.matches,
                errors=stats.filter_errors,
                lost=stats.lost_at_source,
                failed=stats.filter_error_alerts,
            )

    def _find_failing(self, stats) -> None:
        """The SQL filters that raised on more than ``suspend_above`` of the batch's decoded
        alerts, to suspend (``_suspender``): a WARNING each."""
        share, decoded = self.cfg.suspend_above, stats.decoded_rows
        if share is None or decoded < SUSPEND_FROM_ALERTS:
            return
        for name, n in stats.filter_error_alerts.items():
            if n / decoded > share and name not in self.suspended and name not in self.suspending:
                why = (
                    f"suspended: its SQL raised an error on {n} of the {decoded} alerts of batch"
                    f" {stats.batch_id}, above {share:.0%} ({SQL_ERROR_KINDS}); {SQL_ERROR_ADVICE}"
                )
                self.suspending[name] = why
                log.warning("%s %s", name, why)

    def _suspender(self, queries: list):
        """A poll for ``_await``: restart the hot path without the filters to suspend, each
        named with its reason on the counts topic (a subscriber sees why its topic went quiet)."""

        def poll() -> None:
            if not self.suspending or not queries[0].isActive or self.stopping.is_set():
                return
            going = dict(self.suspending)
            for name in going:
                self.suspending.pop(name, None)
            self.suspended |= {n: (self.plan.versions.get(n, ""), w) for n, w in going.items()}
            left = [f for f in self.plan.filters if f.name not in going]
            if not left:
                log.error("every filter would be suspended: the job goes on with them")
                return
            self._stop(queries[0])
            self.metrics.flush(queries[0].recentProgress)
            try:
                plan = plan_job(self.spark, self.cfg, running=self.plan, filters=left)
            except (FilterError, CatalogError, ConfigError) as e:
                log.warning("suspension not deployed, the running filters go on: %s", e)
                queries[0] = self.start()
                return
            self._switch(plan)  # the deployment record and a refused one name them
            queries[0] = self.start()
            log.info("the hot path restarts without %s (suspended)", ", ".join(sorted(going)))

        return poll

    def _unsuspended(self, plan):
        """``plan`` without the suspended filters whose version it keeps (re-planned)."""
        kept = [
            f
            for f in plan.filters
            if self.suspended.get(f.name, ("",))[0] != plan.versions.get(f.name)
        ]
        if len(kept) == len(plan.filters):
            return plan
        return plan_job(self.spark, self.cfg, running=self.plan, filters=kept)

    def start(self):
        """The hot path's query, started."""
        cfg = self.cfg
        for key, value in codegen_conf(self.plan).items():  # read as each batch is planned
            self.spark.conf.set(key, value)
        options = source_options(cfg)
        clear_interrupted_writes(self.spark, cfg.checkpoint)
        raw = self.spark.readStream.format("kafka").options(**options).load()
        gate = self.quotas
        learn = self.unreadable < MAX_UNREADABLE_WRITERS  # stop at a writer it does not know
        self.running = self.plan
        stored = self._stored_table()
        topics = len(self.plan.filters) + 1  # and the quarantine's
        if stored is not None:
            store(self.spark, stored, self.plan.shapes, table_labels(self.plan, cfg))
        if self.apart is not None:  # the last query's, stopped
            self.apart.close()
            self.apart = None
        if "noop" in cfg.sinks:  # evaluated and counted, published nowhere
            frame = hot_path(raw, self.plan, cfg, learn=learn, stored=stored)
            writer = frame.writeStream.format("noop")
        elif runs_python(self.plan) and not cfg.realtime:  # matched without the alerts' bytes
            if gate is not None:
                gate.new_query()
            frame = hot_path(
                raw,
                self.plan,
                cfg,
                frozenset(gate.limits) if gate is not None else frozenset(),
                keep_filter=gate is not None,
                learn=learn,
                stored=stored,
                alert_bytes=False,
            )
            self.apart = BytesApart(cfg, topics, gate)
            log.info("matching in Python without the alerts' bytes: read again as they publish")
            writer = frame.writeStream.foreachBatch(self.apart)
        elif gate is None:
            frame = hot_path(raw, self.plan, cfg, learn=learn, stored=stored)
            writer = frame.writeStream.format("kafka").options(**sink_options(cfg, topics))
        elif cfg.realtime:  # no foreachBatch: the withheld filters planned in, restarted on change
            withheld = gate.new_query(realtime=True)
            frame = hot_path(raw, self.plan, cfg, frozenset(gate.limits), withheld, learn=learn)
            writer = frame.writeStream.format("kafka").options(**sink_options(cfg, topics))
        else:  # each batch decides what it withholds once the batches before it are counted
            gate.new_query()
            frame = hot_path(
                raw,
                self.plan,
                cfg,
                frozenset(gate.limits),
                keep_filter=True,
                learn=learn,
                stored=stored,
            )
            writer = frame.writeStream.foreachBatch(
                lambda rows, i: publish_within(rows, gate.decide(i), cfg, topics)
            )
        self.metrics.observed_in = self.apart.observed if self.apart is not None else None
        writer = writer.option("checkpointLocation", cfg.checkpoint).queryName(QUERY_NAME)
        if cfg.realtime:
            writer = realtime_trigger(writer.outputMode("update"), self.spark, cfg.realtime)
        elif cfg.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{cfg.trigger_seconds} seconds")
        return writer.start()

    def _stored_table(self) -> str | None:
        """Where the hot path reads its shaped filters' rows each batch: under ``--watch`` in
        micro-batches, so a deployment of rows only needs no restart (``redeploy.rows_only``);
        else (and in Real-Time Mode, whose batch does not end) they are planned in."""
        cfg = self.cfg
        return cfg.filter_table if cfg.watch and not cfg.realtime and self.plan.shapes else None

    def run(self) -> list[dict]:
        """Run until the input is drained (available-now), the timeout, or Ctrl-C; with the delta
        sink, the archive runs beside the hot path (after it, when available-now). With
        ``watch``, changed filters are deployed as it runs (``alertsieve.stream.redeploy``)."""
        self.topics_ahead.settle(self.everything.filters)
        create_outputs(self.cfg, self.everything.filters)
        self._deployed(self.everything)
        if self.prometheus is not None:
            self.metrics_url = self.prometheus.serve(
                self.cfg.prometheus_host, self.cfg.prometheus_port
            )
            log.info(
                "metrics for Prometheus: %s (conf/prometheus/: a scrape config, alerting rules)",
                self.metrics_url,
            )
        listener = make_listener(self.metrics)
        self.spark.streams.addListener(listener)
        archive = (
            Archive(self.spark, self.cfg, self.everything) if "delta" in self.cfg.sinks else None
        )
        objects = make_listener(self.objects.metrics) if self.objects is not None else None
        if objects is not None:
            self.spark.streams.addListener(objects)
        queries = [self.start()] if self.stateless is not None else []
        objects_query = None
        try:
            if archive and not self.cfg.available_now:
                queries.append(archive.start())
            if self.objects is not None:  # after them: the polls replace the first two in place
                objects_query = self.objects.start()
                queries.append(objects_query)
            polls = [
                *(
                    [self._watcher(queries)]
                    if self.cfg.watch and not self.cfg.available_now
                    else []
                ),
                *([self._quota_restart(queries)] if self.cfg.realtime else []),
                self._suspender(queries),
            ]
            poll = (lambda: [p() for p in polls]) if polls else None
            timeout = None if self.cfg.available_now else self.cfg.timeout_s
            deadline = timeout and time.monotonic() + timeout
            _await(queries, timeout, poll, self.stopping)
            while self._learn(queries):  # the hot path stopped at a new writer schema: go on
                left = deadline and max(deadline - time.monotonic(), 0.001)
                _await(queries, left, poll, self.stopping)
            self.metrics.flush(
                queries[0].recentProgress
            )  # the hot path's lines before the archive runs
            if archive and self.cfg.available_now and not queries[0].exception():
                # on the plan as it ends: it may have learned writer schemas on the way
                queries.append(
                    Archive(self.spark, self.cfg, self.everything).start(available_now=True)
                )
                _await(queries[1:], None)
        finally:
            for q in queries:
                self._stop(q)
            if self.apart is not None:
                self.apart.close()
            if queries:
                self.metrics.flush(queries[0].recentProgress)
            self.spark.streams.removeListener(listener)
            if objects_query is not None:
                self.objects.end(objects_query)
            if objects is not None:
                self.spark.streams.removeListener(objects)
            self.counts.close()
            if self.prometheus is not None:
                self.prometheus.close()
            for key, value in self.session_before.items():
                self.spark.conf.unset(key) if value is None else self.spark.conf.set(key, value)
        for q in queries:
            if q.exception():
                raise JobFailed(  # what is gone first: Spark's message ends with its whole plan
                    f"{gone(self.cfg, q.exception())}"
                    f"the {q.name} query failed: {q.exception()}{_hint(q)}"
                )
        return self.metrics.written

    def _learn(self, queries: list) -> bool:
        """When the hot path stopped at a writer schema its plan does not know: the plan with it
        learned (``alertsieve.stream.new_writers``), the archive restarted on it first (it
        decodes what the hot path publishes), then the hot path from its checkpoint."""
        from alertsieve.stream.new_writers import learn, new_writer_of

        writer = new_writer_of(queries[0])
        if writer is None or self.stopping.is_set():
            return False
        self.metrics.flush(queries[0].recentProgress)
        self.plan, self.learned, read = learn(self.spark, self.cfg, self.plan, writer, self.learned)
        if self.prometheus is not None and read:
            self.prometheus.learned.inc()
        self.unreadable += not read
        if self.unreadable == MAX_UNREADABLE_WRITERS:
            log.warning(
                "%d writer schemas found nowhere: from now on the job quarantines a writer it"
                " does not know without looking it up (a restart looks again)",
                self.unreadable,
            )
        self.filters = self.plan.filters
        if len(queries) > 1:
            stop_between_batches(queries[1])
            queries[1] = Archive(self.spark, self.cfg, self.plan).start()
        queries[0] = self.start()
        return True

    def _quota_restart(self, queries: list):
        """A poll for ``_await`` in Real-Time Mode: restart the hot path when the filters it
        withholds change (a quota reached, or a new UTC day; ``QuotaGate.restart_due``)."""

        def poll() -> None:
            if self.quotas is not None and queries[0].isActive and self.quotas.restart_due():
                log.info("quota: the withheld filters changed: the hot path restarts")
                self._stop(queries[0])
                self.metrics.flush(queries[0].recentProgress)
                queries[0] = self.start()

        return poll

    def _stop(self, query) -> None:
        """The hot path in Real-Time Mode as it runs (its batch never ends between alerts), any
        other query between its batches."""
        if self.cfg.realtime and query.name == QUERY_NAME:
            stop_realtime(self.spark, query)
        else:
            stop_between_batches(query)

    def _watcher(self, queries: list):
        """A poll for ``_await``: when the watched files change, deploy the new plan (replacing
        ``queries`` in place) or refuse it and keep the running one."""
        from alertsieve.stream.redeploy import (
            describe_change,
            rows_only,
            settings_changed,
            snapshot,
        )

        state = {"files": snapshot(self.cfg), "topics": set(archive_topics(self.plan, self.cfg))}

        def poll() -> None:
            files = snapshot(self.cfg)
            if files == state["files"]:
                return
            state["files"] = files
            try:
                plan = self._unsuspended(plan_job(self.spark, self.cfg, running=self.plan))
                if self.cfg.realtime:
                    check_realtime(self.spark, self.cfg, plan.filters)
            except (FilterError, CatalogError, ConfigError) as e:
                log.warning("watch: change refused, the running filters go on: %s", e)
                return
            try:  # new topics, and every topic's readers as the filters now say
                create_outputs(self.cfg, plan.filters, previous=self.plan.filters)
            except AlertsieveError as e:
                log.warning("watch: change refused, the running filters go on: %s", e)
                return
            limits = limits_of(plan.filters, self.cfg.quota_default)
            gated = limits and self.quotas is None  # quotas publish through the gate: a restart
            if plan.versions == self.plan.versions and not gated:
                changed = settings_changed(
                    (
                        {f.name: f.readers for f in self.plan.filters},
                        {f.name: f.readers for f in plan.filters},
                    ),
                    (self.quotas.limits if self.quotas else {}, limits),
                )
                self.plan, self.filters = plan, plan.filters  # the same matches: no restart
                self._deployed(plan)
                self._use_quotas()
                if changed:
                    log.info("watch: %s updated", "; ".join(changed))
                else:
                    log.warning("watch: nothing to deploy, the running filters go on")
                return
            change = describe_change(self.plan.versions, plan.versions)  # ~name: a new version
            stored = self._stored_table()
            if stored is not None and not gated and rows_only(self.running, plan):
                store(self.spark, stored, plan.shapes, table_labels(plan, self.cfg))
                self._switch(plan, [f.name for f in self.running.filters])
                log.info(
                    "watch: deployed %s as rows of the running query (no restart: its next batch"
                    " reads them); running %d filters",
                    change,
                    len(plan.filters),
                )
            else:
                if gated:  # the job's first quotas
                    quotas = f"daily quotas of {', '.join(sorted(limits))}"
                    same = plan.versions == self.plan.versions
                    change = quotas if same else f"{change}; {quotas}"
                self._stop(queries[0])
                self.metrics.flush(
                    queries[0].recentProgress
                )  # the old query's batches, by the old filters
                self._switch(plan)
                queries[0] = self.start()
                log.info(
                    "watch: deployed %s; running %s",
                    change,
                    ", ".join(f.name for f in plan.filters),
                )
            if len(queries) > 1:  # the archive query, on the new set of topics
                state["topics"] |= set(archive_topics(plan, self.cfg))
                stop_between_batches(queries[1])
                queries[1] = Archive(self.spark, self.cfg, plan, sorted(state["topics"])).start()

        return poll

    def _switch(self, plan, indexed: list[str] | None = None) -> None:
        """The job's filters from now on: its deployment said, its quotas, metrics and counts by
        ``plan``'s filters (``indexed``: as the running query indexes its metrics, when it goes on)."""
        self.plan, self.filters = plan, plan.filters
        self._deployed(plan)
        self._use_quotas()
        self.metrics.use_filters(
            [f.name for f in plan.filters],
            {f.name for f in plan.filters if f.runs_python},
            plan.readers,
            indexed,
        )
        self.counts.use(published(plan, self.cfg))


def realtime_trigger(writer, spark, checkpoint_interval: str):
    """Real-Time Mode: pyspark's ``realTime`` keyword where it has one (4.2 on), else the JVM's
    ``Trigger.RealTime`` (there since Spark 4.1)."""
    import inspect

    if "realTime" in inspect.signature(writer.trigger).parameters:
        return writer.trigger(realTime=checkpoint_interval)
    writer._jwrite = writer._jwrite.trigger(
        spark._jvm.org.apache.spark.sql.streaming.Trigger.RealTime(checkpoint_interval)
    )
    return writer


def _await(
    queries: list, timeout_s: float | None, poll=None, stop: threading.Event | None = None
) -> None:
    """Until every query has ended (available-now), the timeout, or a stop request (a signal, or
    ``stop`` set by another thread); ``poll()`` between waits (it may replace queries in the list)."""
    deadline = None if not timeout_s else time.monotonic() + timeout_s
    with _stop_requests(stop) as stop:
        while any(q.isActive for q in queries) and not stop.is_set():
            if poll is not None:
                poll()
            if deadline is not None and time.monotonic() > deadline:
                return
            if any(q.exception() for q in queries):
                return
            # A query may end between the checks above and this one (an available-now run
            # finishing): the loop's own test then sees it, rather than a wait on nothing.
            active = next((q for q in queries if q.isActive), None)
            if active is not None:
                try:
                    active.awaitTermination(1)
                except StreamingQueryException:
                    return  # its exception is the caller's to read (``query.exception()``)


#: How long a stop waits for the running batch to end: bounded, as a batch may be stuck on a
#: broker that has gone.
STOP_PATIENCE_S = 30.0


def stop_between_batches(query) -> None:
    """Stop a query while no batch of it runs, waiting up to ``STOP_PATIENCE_S`` for the current one.

    ``stop()`` in the middle of a batch cancels its tasks and interrupts its checkpoint writes: no
    data is lost (the batch is redone on restart), but Spark logs the cancelled tasks, cached blocks
    and interrupted renames as warnings, and once overflowed its stack formatting the cancellation."""
    deadline = time.monotonic() + STOP_PATIENCE_S
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    if query.isActive:
        query.stop()


#: Where Spark reports the cancellation of a Real-Time Mode query's tasks: its aborted writes, its
#: interrupted Kafka reads, its killed tasks (ERROR lines and stack traces, read as a failure).
CANCELLATION_LOGGERS = (
    "org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2Exec",
    "org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask",
    "org.apache.spark.util.Utils",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.executor.Executor",
)


def stop_realtime(spark, query, timeout_s: float = 30.0) -> None:
    """Stop a Real-Time Mode query, whose batch never ends between alerts, without Spark reporting
    its expected cancellation as errors. Its tasks run for the whole checkpoint interval, so a
    stop always cancels them: nothing is lost (the interval's epoch is redone on restart), and the
    query's own failure, if any, still surfaces as its exception. The loggers are quiet only until
    every job the query started has ended and its killed tasks are gone (at most ``timeout_s``),
    then back to their levels."""
    if not query.isActive:
        return
    log4j = spark._jvm.org.apache.logging.log4j
    configurator = log4j.core.config.Configurator
    tracker = spark.sparkContext.statusTracker()
    context = spark.sparkContext._jsc.sc()
    bus, scheduler = context.listenerBus(), context.taskScheduler()
    group = str(query.runId)  # Spark runs each query's jobs in a job group named by its run id
    before = {name: log4j.LogManager.getLogger(name).getLevel() for name in CANCELLATION_LOGGERS}
    for name in before:
        configurator.setLevel(name, log4j.Level.OFF)
    try:
        query.stop()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            # The status store learns from Spark's listener bus: an epoch's job start still queued
            # there (the epoch began as the stop was asked for) would make the query look ended.
            try:
                bus.waitUntilEmpty(max(1, int((deadline - time.monotonic()) * 1000)))
            except Py4JJavaError as e:
                if not _is_timeout(e):
                    raise
                log.warning(
                    "Spark's listener bus still busy %.0f s after the stop; its lines may follow",
                    timeout_s,
                )
                break
            if _jobs_ended(tracker, scheduler, group):
                break
            time.sleep(0.05)
    finally:
        for name, level in before.items():
            configurator.setLevel(name, level)


def _is_timeout(error) -> bool:
    """Whether a Java error is the listener bus's wait running out (java.util.concurrent's
    TimeoutException): the one the stop expects; any other is a fault of its own."""
    return error.java_exception.getClass().getName() == "java.util.concurrent.TimeoutException"


def _jobs_ended(tracker, scheduler, group: str) -> bool:
    """Whether every job of the group has ended and the scheduler has let go of each of its
    stages' task sets.

    The group's jobs, not the stages active before the stop: a stop that lands as an epoch starts
    cancels a stage that was not yet running when it was asked for. And the scheduler, not the
    status store's task counts, which may never have seen such an epoch's tasks start: a cancelled
    stage's task set stays with the scheduler until each killed task has logged its abort on the
    executor and its loss on the driver, so this holds only once every line about it is written."""
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
    if any(job is not None and job.status == "RUNNING" for job in jobs):
        return False
    stages = [(s, tracker.getStageInfo(s)) for job in jobs if job is not None for s in job.stageIds]
    return not any(
        scheduler.taskSetManagerForAttempt(s, info.currentAttemptId).isDefined()
        for s, info in stages
        if info is not None
    )


def _hint(query) -> str:
    """What to do about a failure the job knows (after Spark's own message)."""
    if "failOnDataLoss" in str(query.exception()) or "KAFKA_DATA_LOSS" in str(query.exception()):
        return (
            "\n(the input no longer holds offsets the checkpoint says are next; with"
            " on_source_loss: continue the job goes on from the earliest held, counting the loss)"
        )
    return ""


def earliest_offsets(cfg: JobConfig, partitions: list[tuple[str, int]]) -> dict:
    """Each input partition's earliest offset held."""
    return {
        tp: low for tp, (low, _) in watermarks(cfg.bootstrap, partitions, cfg.kafka_conf).items()
    }


class TopicsAhead:
    """The filters' topics, created while the job plans: the embedded broker took 30 s for ten
    thousand, about as long as planning them, and the first batch needs them. Only names a
    topic can have are sent. Those it made for filters the plan then left out (refused) are
    deleted again once it is settled: a user's topic appears when the filter runs. A failure
    here is left to ``create_outputs``, which runs after and says it."""

    def __init__(self, cfg: JobConfig):
        self.cfg = cfg
        self.thread: threading.Thread | None = None
        self.created: list[str] = []

    def start(self, filters) -> None:
        from alertsieve.filtering.checks import NAME

        named = [f for f in filters if NAME.match(f.name)]

        def create() -> None:
            try:
                self.created = create_filter_topics(self.cfg, named)
            except Exception as e:  # noqa: BLE001 - create_outputs, after, raises it with context
                log.debug("topics created ahead of the plan failed (created after it): %s", e)

        self.thread = threading.Thread(target=create, name="alertsieve-topics", daemon=True)
        self.thread.start()

    def settle(self, filters) -> None:
        """Wait for the topics, then delete those it made for none of ``filters`` (the plan's)."""
        from alertsieve.kafka.topics import delete_topics

        if self.thread is None:
            return
        self.thread.join()
        kept = {self.cfg.topic_of(f) for f in filters}
        unused = [t for t in self.created if t not in kept and t != self.cfg.quarantine_topic]
        if unused:
            delete_topics(self.cfg.bootstrap, unused, self.cfg.kafka_conf)
        self.thread = None


def create_filter_topics(cfg: JobConfig, filters) -> list[str]:
    """A topic per filter and the quarantine's, those missing; returns those it created."""
    from alertsieve.kafka.topics import create_topics

    topics = list(dict.fromkeys([*(cfg.topic_of(f) for f in filters), cfg.quarantine_topic]))
    config = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    return create_topics(
        cfg.bootstrap, topics, cfg.output_partitions, config=config, extra=cfg.kafka_conf
    )


def create_outputs(cfg: JobConfig, filters, previous=()) -> None:
    """A topic per filter, the quarantine topic and the counts topic (one partition: a reader
    meets the batches in order), the topics of the annotators the filters read, made before the
    first batch; the topics of filters with
    ``readers`` private to them (``alertsieve.kafka.acls``), and those of ``previous`` filters
    (the running set, under ``--watch``) whose readers were dropped given back to the cluster's
    own ACLs; an annotator's topic writable by its principal only (``annotators``)."""
    from alertsieve.kafka.acls import sync_readers, sync_writers
    from alertsieve.kafka.topics import create_topics

    create_filter_topics(cfg, filters)
    config = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    create_topics(cfg.bootstrap, [cfg.counts_topic], 1, config=config, extra=cfg.kafka_conf)
    # one record per deployment, one key: compaction keeps the last (segments close hourly)
    compacted = {"cleanup.policy": "compact", "segment.ms": str(3600 * 1000)}
    deployment = contract.deployment_topic(cfg.output_prefix)
    create_topics(cfg.bootstrap, [deployment], 1, config=compacted, extra=cfg.kafka_conf)
    read = {a for f in filters if reads_objects(f) for a in annotators_read(f) or ()}
    annotators = sorted(read | set(cfg.annotators))
    if annotators:  # where the annotators publish (``publish.annotations``), each alone
        topics = {a: contract.annotation_topic(cfg.output_prefix, a) for a in annotators}
        create_topics(cfg.bootstrap, list(topics.values()), 1, extra=cfg.kafka_conf)
        if cfg.annotators:
            writers = {topics[a]: [principal] for a, principal in cfg.annotators.items()}
            sync_writers(cfg.bootstrap, writers, cfg.kafka_conf)
    had = {contract.filter_topic(f, cfg.output_prefix) for f in previous if f.readers}
    own = {contract.filter_topic(f, cfg.output_prefix): f for f in filters}
    readers = {topic: list(f.readers) for topic, f in own.items() if f.readers or topic in had}
    if readers:
        sync_readers(cfg.bootstrap, readers, cfg.kafka_conf)


def check_realtime(spark, cfg: JobConfig, filters) -> None:
    """Real-Time Mode runs SQL only, and one long-running task per input partition at once."""
    from alertsieve.kafka.topics import partition_count

    python = [f for f in filters if f.runs_python]
    if python:
        f = python[0]
        raise FilterError(
            f"--trigger {cfg.trigger}: filter {f.name!r} ({f.origin}) is a Python function, which"
            " Real-Time Mode cannot run (no Python UDFs); run it in micro-batches (--trigger 0)"
            " or write it as SQL"
        )
    scored = [f for f in filters if models_read(f)]
    if scored:
        f = scored[0]
        raise FilterError(
            f"--trigger {cfg.trigger}: filter {f.name!r} ({f.origin}) reads"
            f" {', '.join(f'scores.{n}' for n in sorted(models_read(f)))}, which a model computes in"
            " Python, which Real-Time Mode cannot run (no Python UDFs); run it in micro-batches"
            " (--trigger 0)"
        )
    cores = spark.sparkContext.defaultParallelism
    partitions = partition_count(cfg.bootstrap, inputs(cfg), cfg.kafka_conf)
    if partitions > cores:
        raise ConfigError(
            f"{cfg.where}: --trigger {cfg.trigger}: the input has {partitions} partitions and Spark"
            f" {cores} cores; Real-Time Mode runs a task per partition at once: give Spark at least"
            f" {partitions} cores (--master local[{partitions}]) or use micro-batches (--trigger 0)"
        )


@contextmanager
def _stop_requests(stop: threading.Event | None = None):
    """Ctrl-C and SIGTERM ask the job to stop between polls (setting ``stop``), instead of
    interrupting whatever Python was doing (a KeyboardInterrupt inside a Py4J call leaves Spark
    half-told); the query then stops cleanly and the metrics are flushed. Only the main thread
    can take signals."""
    import signal

    stop = stop or threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in signals}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_job(cfg: JobConfig, spark=None) -> list[dict]:
    """The job, in ``spark`` or the running session, else in its own (stopped when it ends)."""
    from alertsieve.spark.session import command_session

    check_writable(cfg)  # before Spark starts: a bad folder fails in a second, not in ten
    await_inputs(cfg)  # and a missing topic is waited for without a JVM
    with command_session(
        "alertsieve-filter-stream", cfg.master, cfg.spark_conf, given=spark
    ) as spark:
        return FilterStream(spark, cfg).run()


def run_archive(cfg: JobConfig, spark=None) -> dict[str, int]:
    """The archive alone (``alertsieve archive``): until the topics are drained (available-now),
    the timeout, or Ctrl-C. Returns the tables' row counts."""
    from alertsieve.spark.session import command_session

    check_writable(cfg)
    with command_session("alertsieve-archive", cfg.master, cfg.spark_conf, given=spark) as spark:
        query = Archive(spark, cfg, plan_job(spark, cfg)).start(available_now=cfg.available_now)
        try:
            _await([query], None if cfg.available_now else cfg.timeout_s)
        finally:
            stop_between_batches(query)
        if query.exception():
            raise JobFailed(f"the archive query failed: {query.exception()}")
        return archive_counts(spark, cfg)


def archive_counts(spark, cfg: JobConfig) -> dict[str, int]:
    """Rows in the archive's tables (0 for a table not written yet)."""
    from delta.tables import DeltaTable

    out = {}
    for table in ("matches", "quarantine"):
        path = f"{cfg.delta_path.rstrip('/')}/{table}"
        out[table] = (
            spark.read.format("delta").load(path).count()
            if DeltaTable.isDeltaTable(spark, path)
            else 0
        )
    return out
