"""The filter stream job: Kafka -> decode once -> every filter -> a topic and a Delta table per
filter, a quarantine for what cannot be decoded, and a metrics line per micro-batch.

Everything after the Kafka read happens in one ``foreachBatch``: the batch is read and decoded
once into a narrow, cached frame (match flags for every alert; bytes and fields only for the
alerts that matched or failed), and every output is written from that cache
(``alertsieve.stream.outputs``). What runs is settled at start-up (``alertsieve.stream.plan``).
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from alertsieve.stream.config import JobConfig, check_writable
from alertsieve.stream.decode import META, flat_alert
from alertsieve.stream.metrics import BatchStats, MetricsLog, latency_from_timestamps, make_listener
from alertsieve.stream.outputs import create_outputs, write_matches, write_quarantine
from alertsieve.stream.plan import plan_job
from alertsieve.stream.source import source_options


class FilterStream:
    """One running job: its plan, filters, outputs and metrics."""

    def __init__(self, spark, cfg: JobConfig, console=None):
        check_writable(cfg)
        self.spark = spark
        self.cfg = cfg
        self.plan = plan_job(spark, cfg)
        self.filters = self.plan.filters
        for line in self.plan.describe():
            print(line, file=sys.stderr)
        self.metrics = MetricsLog(
            cfg.metrics_path, console=console if console is not None else sys.stdout
        )

    @contextmanager
    def _phase(self, name: str):
        """Time a step of the current batch (read+decode+filter, each sink) for the metrics."""
        start = time.time()
        try:
            yield
        finally:
            self._phases[name] = round(self._phases.get(name, 0.0) + time.time() - start, 3)

    # -- one micro-batch -------------------------------------------------------------------

    def process_batch(self, raw, batch_id: int) -> None:
        from pyspark.sql import functions as F

        t0 = time.time()
        self._phases: dict[str, float] = {}
        self._published_at: float | None = None
        decoded = self.plan.decoder.decode(raw, self.plan.paths)
        flat = decoded.select(*META, "_schema_id", "_reason", *flat_alert(decoded))
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
                # Rubin: the archive decodes only the versions this batch carries; ZTF's writers
                # are not in the rows (their fingerprints are), so it takes all of them.
                seen = frozenset(row["writers"]) if self.plan.decoder.survey == "rubin" else None
                self._published_at = write_matches(narrow, live, self.cfg, self.plan, batch_id, self._phase, seen)
            if quarantined:
                with self._phase("quarantine"):
                    write_quarantine(narrow, self.cfg, batch_id)
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

        return F.col(self.plan.decoder.id_path).cast("string")

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
            F.collect_set(F.when(ok, F.col("_schema_id"))).alias("writers"),
            *[F.first(F.col(e), ignorenulls=True).alias(e) for e in error_names],
        ).collect()[0]

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
        create_outputs(self.cfg, self.filters)
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
