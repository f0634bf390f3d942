"""The filter stream job: Kafka -> decode once -> every filter -> a topic and a Delta table per
filter, a quarantine for what cannot be decoded, and a metrics line per micro-batch.

Everything after the Kafka read happens in one ``foreachBatch``: the batch is read and decoded
once into a narrow, cached frame (match flags for every alert; bytes and fields only for the
alerts that matched or failed), and every output is written from that cache.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from alertsieve.alerts.replay import ID_FIELDS
from alertsieve.alerts.schemas import (
    CUTOUTS,
    AlertSchema,
    load_rubin_schema,
    open_store,
    without_fields,
)
from alertsieve.filtering.checks import validate
from alertsieve.filtering.discovery import discover
from alertsieve.filtering.model import Filter, FilterError, with_params
from alertsieve.kafka.topics import create_topic
from alertsieve.stream.config import JobConfig, check_writable
from alertsieve.stream.decode import META, DecodePlan, decode, decoded_records, make_plan
from alertsieve.stream.metrics import BatchStats, MetricsLog, latency_from_timestamps, make_listener
from alertsieve.stream.sinks import headers, kafka_options, write_delta_once, write_kafka

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the largest alert forwarded (the embedded brokers' limit)


def source_options(cfg: JobConfig) -> dict[str, str]:
    opts = kafka_options(cfg.bootstrap, cfg.kafka_conf)
    if cfg.topic:
        opts["subscribe"] = cfg.topic
    else:
        opts["subscribePattern"] = cfg.topic_pattern
    if cfg.starting_offsets in ("earliest", "latest"):
        opts["startingOffsets"] = cfg.starting_offsets
    else:
        millis = int(datetime.fromisoformat(cfg.starting_offsets).timestamp() * 1000)
        opts["startingTimestamp"] = str(millis)
    if cfg.max_offsets_per_trigger:
        opts["maxOffsetsPerTrigger"] = str(cfg.max_offsets_per_trigger)
    opts["failOnDataLoss"] = "true"
    # ~100 KB alerts: the client's 1 MB per-partition fetch would mean ten alerts a round trip.
    opts.setdefault("kafka.max.partition.fetch.bytes", str(16 * 1024 * 1024))
    opts.setdefault("kafka.fetch.max.bytes", str(64 * 1024 * 1024))
    opts.setdefault("kafka.receive.buffer.bytes", str(8 * 1024 * 1024))  # Java's default: 64 KB
    return opts


def source_columns() -> list:
    """Where an alert came from, as output tables name it."""
    from pyspark.sql import functions as F

    return [
        F.col("_topic").alias("topic"),
        F.col("_partition").alias("partition"),
        F.col("_offset").alias("offset"),
        F.col("_timestamp").alias("kafka_timestamp"),
    ]


class FilterStream:
    """One running job: its plan, filters, outputs and metrics."""

    @contextmanager
    def _phase(self, name: str):
        """Time a step of the current batch (read+decode+filter, each sink) for the metrics."""
        start = time.time()
        try:
            yield
        finally:
            self._phases[name] = round(self._phases.get(name, 0.0) + time.time() - start, 3)

    def __init__(self, spark, cfg: JobConfig, console=None):

        check_writable(cfg)
        self.spark = spark
        self.cfg = cfg
        self.store = open_store(cfg.schema_registry, cfg.schema_dir)
        self.reader = load_rubin_schema(cfg.reader_schema_version)
        # Filters read everything but the cutouts: Avro resolution then skips ~100 KB of image
        # bytes per alert instead of copying them into every row.
        self.slim_reader = without_fields(self.reader, CUTOUTS)
        self.plan = self._make_plan(self.slim_reader)
        self.filters = self._select_filters()
        # The Delta archive keeps cutouts for every match (delta_cutouts) or for the matches of
        # the filters that ask for them (cutouts=True); only then are they decoded at all.
        keep_cutouts = cfg.delta_cutouts or any(f.cutouts for f in self.filters)
        self.output_plan = self._make_plan(self.reader) if keep_cutouts else self.plan
        self.metrics = MetricsLog(
            cfg.metrics_path, console=console if console is not None else sys.stdout
        )
        self.id_field = next(
            (f for f in ID_FIELDS if f in {x["name"] for x in self.reader.definition["fields"]}),
            None,
        )
        validate(self.filters, self._sample_alerts())

    # -- start-up --------------------------------------------------------------------------

    def _make_plan(self, reader: AlertSchema) -> DecodePlan:
        if self.cfg.wire_format == "plain":
            return make_plan(reader, [load_rubin_schema(self.cfg.writer_schema_version)], "plain")
        subject = f"{self.cfg.topic or 'alerts'}-value"
        return make_plan(reader, self.store.candidates(subject))

    def _select_filters(self) -> list[Filter]:
        cfg = self.cfg
        filters = cfg.settings_filters()
        if cfg.discover_filters or cfg.filter_paths:
            filters += discover(
                cfg.filter_paths, builtin=cfg.discover_filters, entry_points=cfg.discover_filters
            )
        where = cfg.config_file or "filter_params"
        unknown = set(cfg.filter_params) - {f.name for f in filters}
        if unknown:
            raise FilterError(f"{where}: filter_params names unknown filter(s) {sorted(unknown)}")
        filters = [with_params(f, cfg.filter_params.get(f.name, {}), where) for f in filters]
        if not cfg.filters:
            return filters
        by_name = {f.name: f for f in filters}
        missing = [n for n in cfg.filters if n not in by_name]
        if missing:
            raise FilterError(
                f"--filters names unknown filter(s) {missing}; known: {sorted(by_name)}"
            )
        return [by_name[n] for n in cfg.filters]

    def _sample_alerts(self, n: int = 64):
        """Simulated alerts of the reader's version, decoded as the job decodes: filters are
        compiled and Python filters run against them at start-up."""
        from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

        sim = AlertSimulator(
            SimulationConfig(schema_version=self.cfg.reader_schema_version, stamp_size=8, seed=7)
        )
        return decoded_records(self.spark, self.reader, list(sim.visit_alerts(0, count=n)), CUTOUTS)

    def create_outputs(self) -> None:
        if "kafka" not in self.cfg.sinks:
            return
        extra = self.cfg.kafka_conf
        for topic in [f.output_topic(self.cfg.output_prefix) for f in self.filters] + [
            self.cfg.quarantine_topic
        ]:
            create_topic(self.cfg.bootstrap, topic, self.cfg.output_partitions,
                         config={"max.message.bytes": str(MAX_MESSAGE_BYTES)}, extra=extra)  # fmt: skip

    def _sink_options(self) -> dict[str, str]:
        """The Java producer's 1 MB default request would fail the whole batch on one large
        alert (they reach 10 MB): allow what the outputs' topics allow."""
        opts = kafka_options(self.cfg.bootstrap, self.cfg.kafka_conf)
        opts.setdefault("kafka.max.request.size", str(MAX_MESSAGE_BYTES))
        return opts

    # -- one micro-batch -------------------------------------------------------------------

    def process_batch(self, raw, batch_id: int) -> None:
        from pyspark.sql import functions as F

        t0 = time.time()
        self._phases: dict[str, float] = {}
        self._published_at: float | None = None
        decoded = decode(raw, self.plan)
        alert_cols = self.slim_reader.field_names()
        flat = decoded.select(
            *META, "_schema_id", "_reason", *[F.col(f"alert.{c}").alias(c) for c in alert_cols]
        )
        ok = F.col("_reason").isNull()
        flag_names = [f"_m{i}" for i in range(len(self.filters))]
        evaluated = [f.evaluate() for f in self.filters]
        flags = [
            (F.coalesce(match, F.lit(False)) & ok).alias(n)
            for (match, _), n in zip(evaluated, flag_names, strict=True)
        ]
        error_names = [f"_e{i}" for i, (_, err) in enumerate(evaluated) if err is not None]
        errors = [err.alias(f"_e{i}") for i, (_, err) in enumerate(evaluated) if err is not None]
        any_match = F.lit(False)
        for name in flag_names:
            any_match = any_match | F.col(name)
        # The cache holds flags for every alert but bytes only for the few that matched or failed:
        # caching decoded structs costs more than decoding the matches again for Delta.
        narrow = (
            flat.select(
                *META, "_schema_id", "_reason", self._alert_id().alias("_alert_id"), *flags, *errors
            )
            .select(
                *[c for c in META if c != "_value"],
                "_schema_id",
                "_reason",
                *flag_names,
                *error_names,
                "_alert_id",
                F.when(any_match | ~ok, F.col("_value")).alias("_value"),
            )
            .persist()
        )
        try:
            with self._phase("read_decode_filter"):
                row = self._count(narrow, ok, flag_names, error_names)
            failed = {
                f.name: row[f"_e{i}"]
                for i, f in enumerate(self.filters)
                if f"_e{i}" in error_names and row[f"_e{i}"] is not None
            }
            for name, message in failed.items():
                print(
                    f"batch {batch_id}: {message}; output of {name} skipped for this batch",
                    file=sys.stderr,
                )
            matches = {
                f.name: 0 if f.name in failed else int(row[n] or 0)
                for f, n in zip(self.filters, flag_names, strict=True)
            }
            live = [
                (f, n)
                for f, n in zip(self.filters, flag_names, strict=True)
                if f.name not in failed
            ]
            quarantined = int(row["quarantined"] or 0)
            if sum(matches.values()):
                self._write_matches(narrow, live, batch_id)
            if quarantined:
                with self._phase("quarantine"):
                    self._write_quarantine(narrow, batch_id)
        finally:
            narrow.unpersist()
        output_time = time.time()
        # Latency is what a subscriber sees: alerts are out once the Kafka fan-out is done
        # (the Delta archive commits after it); without a Kafka sink, at the end of the batch.
        published = self._published_at or output_time
        q = row["q"] or [None, None, None]
        stats = BatchStats(
            batch_id=batch_id,
            input_rows=int(row["n"]),
            decoded_rows=int(row["n"]) - quarantined,
            quarantined_rows=quarantined,
            matches=matches,
            batch_seconds=output_time - t0,
            output_time=output_time,
            phases_s=self._phases,
            filter_errors=failed,
            latency_basis="kafka_out" if self._published_at else "batch_end",
            latency_s=latency_from_timestamps(
                published, {"q01": q[0], "q05": q[1], "q50": q[2], "min": row["tmin"]}
            ),
        )
        self.metrics.add_batch(stats)

    def _alert_id(self):
        from pyspark.sql import functions as F

        return (F.col(self.id_field) if self.id_field else F.col("_key")).cast("string")

    @staticmethod
    def _count(narrow, ok, flag_names: list[str], error_names: list[str]):
        """One pass over the batch: it fills the cache and counts what the metrics need."""
        from pyspark.sql import functions as F

        ts = F.unix_micros(F.col("_timestamp")) / 1e6
        return narrow.agg(
            F.count(F.lit(1)).alias("n"),
            F.sum((~ok).cast("int")).alias("quarantined"),
            *[F.sum(F.col(n).cast("int")).alias(n) for n in flag_names],
            F.percentile_approx(ts, [0.01, 0.05, 0.5], 1000).alias("q"),
            F.min(ts).alias("tmin"),
            *[F.first(F.col(e), ignorenulls=True).alias(e) for e in error_names],
        ).collect()[0]

    def _write_matches(self, narrow, live: list[tuple[Filter, str]], batch_id: int) -> None:
        """Publish the matches of the filters in ``live`` (each with its flag column)."""
        from pyspark.sql import functions as F

        cfg = self.cfg
        flag_names = [n for _, n in live]
        names = F.array(*[F.when(F.col(n), F.lit(f.name)) for f, n in live])
        matched = narrow.where(F.array_contains(F.array(*[F.col(n) for n in flag_names]), True))
        matched_filters = F.filter(names, lambda x: x.isNotNull())
        # Kafka forwards the cached bytes as they are: no decoding at all.
        long = matched.select(
            F.explode(matched_filters).alias("filter"), F.col("_alert_id").alias("alert_id"), *META
        )
        if "kafka" in cfg.sinks:
            topic = F.lit(None).cast("string")
            for f in self.filters:
                topic = F.when(
                    F.col("filter") == f.name, F.lit(f.output_topic(cfg.output_prefix))
                ).otherwise(topic)
            with self._phase("kafka_out"):
                write_kafka(
                    long.select(
                        F.col("alert_id").alias("key"),
                        F.col("_value").alias("value"),
                        topic.alias("topic"),
                        headers(
                            filter=F.col("filter"),
                            source_topic=F.col("_topic"),
                            source_partition=F.col("_partition"),
                            source_offset=F.col("_offset"),
                            kafka_timestamp_ms=F.unix_millis(F.col("_timestamp")),
                            processed_at_ms=F.unix_millis(F.current_timestamp()),
                        ).alias("headers"),
                    ),
                    self._sink_options(),
                )
            self._published_at = time.time()
        if "delta" in cfg.sinks:
            # One row per matched alert, with the filters it passed: an alert is stored once
            # however many filters want it. Only these few percent are decoded a second time.
            raw_again = matched.select(
                *[F.col(m).alias(src) for m, src in META.items()], "_alert_id", *flag_names
            )
            decoded = decode(raw_again, self.output_plan, keep=("_alert_id", *flag_names))
            alert = F.col("alert")
            if self.output_plan is not self.plan and not cfg.delta_cutouts:
                wants = F.lit(False)
                for f, n in live:
                    if f.cutouts:
                        wants = wants | F.col(n)
                for c in CUTOUTS:
                    alert = alert.withField(c, F.when(wants, F.col(f"alert.{c}")))
            table = (
                decoded.select(
                    matched_filters.alias("filters"),
                    F.col("_alert_id").alias("alert_id"),
                    *source_columns(),
                    F.lit(batch_id).alias("batch_id"),
                    F.current_timestamp().alias("processed_at"),
                    alert.alias("alert"),
                )
                .select("*", "alert.*")
                .drop("alert")
            )
            with self._phase("delta_out"):
                write_delta_once(table, str(Path(cfg.delta_path) / "matches"), cfg.app_id, batch_id)

    def _write_quarantine(self, narrow, batch_id: int) -> None:
        from pyspark.sql import functions as F

        cfg = self.cfg
        bad = narrow.where(F.col("_reason").isNotNull())
        if "delta" in cfg.sinks:
            write_delta_once(
                bad.select(
                    *source_columns(),
                    F.col("_key").alias("key"),
                    F.col("_value").alias("value"),
                    F.col("_schema_id").alias("schema_id"),
                    F.col("_reason").alias("reason"),
                    F.lit(batch_id).alias("batch_id"),
                    F.current_timestamp().alias("quarantined_at"),
                ),
                str(Path(cfg.delta_path) / "quarantine"),
                cfg.app_id,
                batch_id,
            )
        if "kafka" in cfg.sinks:
            write_kafka(
                bad.select(
                    F.col("_key").alias("key"),
                    F.coalesce(F.col("_value"), F.lit(b"")).alias("value"),
                    F.lit(cfg.quarantine_topic).alias("topic"),
                    headers(
                        reason=F.col("_reason"),
                        source_topic=F.col("_topic"),
                        source_partition=F.col("_partition"),
                        source_offset=F.col("_offset"),
                    ).alias("headers"),
                ),
                self._sink_options(),
            )

    # -- the query -------------------------------------------------------------------------

    def start(self):
        cfg = self.cfg
        raw = self.spark.readStream.format("kafka").options(**source_options(cfg)).load()
        writer = (
            raw.writeStream.foreachBatch(self.process_batch)
            .option("checkpointLocation", cfg.checkpoint)
            .queryName("alertsieve_filter_stream")
        )
        if cfg.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{cfg.trigger_seconds} seconds")
        return writer.start()

    def run(self) -> list[dict]:
        """Run until the input is drained (available-now), the timeout, or Ctrl-C."""
        self.create_outputs()
        listener = make_listener(self.metrics)
        self.spark.streams.addListener(listener)
        query = self.start()
        try:
            with _stop_requests() as stop:
                deadline = (
                    None
                    if self.cfg.available_now or not self.cfg.timeout_s
                    else (time.monotonic() + self.cfg.timeout_s)
                )
                while query.isActive and not stop.is_set():
                    if deadline is not None and time.monotonic() > deadline:
                        break
                    query.awaitTermination(1)
        finally:
            if query.isActive:
                query.stop()
            self.metrics.close()
            self.spark.streams.removeListener(listener)
        if query.exception():
            raise RuntimeError(f"the stream failed: {query.exception()}")
        return self.metrics.written


@contextmanager
def _stop_requests():
    """Ctrl-C and SIGTERM ask the job to stop between polls, instead of interrupting whatever
    Python was doing (a KeyboardInterrupt inside a Py4J call leaves Spark half-told); the query
    then stops cleanly and the metrics are flushed. Only the main thread can take signals."""
    import signal
    import threading

    stop = threading.Event()
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


def run_job(cfg: JobConfig, spark=None, console=None) -> list[dict]:
    from alertsieve.spark.session import get_session

    check_writable(cfg)  # before Spark starts: a bad folder fails in a second, not in ten
    spark = spark or get_session("alertsieve-filter-stream", master=cfg.master, conf=cfg.spark_conf)
    return FilterStream(spark, cfg, console=console).run()
