"""Per-batch metrics of the hot path, from Spark alone: what ``observe()`` counted as the rows
passed (``alertsieve.stream.hot_path``) and Spark's progress report of the same batch, merged into
one JSON object per line, plus one readable console line per batch. No driver round trip: the
query listener hands them over when the batch is done.

Fields of a ``batch`` line:
  batch_id, input_rows, decoded_rows, quarantined_rows, matches {filter: n};
  reason_min, reason_max: the first and last quarantine reasons of the batch in sort order (equal
  when one reason covers every quarantined message; null when none was quarantined): what the
  diagnosis of a batch that quarantined everything is made of (``alertsieve.stream.diagnosis``);
  filter_errors {filter: message} (filters that failed in this batch: no output from the rows
  they failed on; matches counts what each filter published), and filter_error_alerts {filter:
  n}, the alerts each SQL filter raised on (a division by zero, a failed cast: no match there);
  withheld {filter: n} (matches not published, their filter's daily quota reached; matches
  counts the published ones) and published_bytes {filter: bytes} (the value bytes published by
  each filter with a daily quota), only in a job with quotas;
  filter_seconds {filter: s}: each Python filter's function time in the batch, summed over the
  chunks of rows it ran on (executor time, not wall time), and filter_seconds_per_1000 {filter:
  s per 1,000 input alerts}; SQL filters share one generated expression and have none;
  model_invocations {model: rows}: the alerts each model scored in the batch (one per alert
  however many filters read its score), model_seconds {model: s} and model_seconds_per_1000
  {model: s per 1,000 input alerts}, model_errors {model: message} (a model that raised on some
  rows: their scores are null; each filter reading it is named in filter_errors too);
  batch_seconds (Spark's trigger execution time), rows_per_s (input_rows / batch_seconds);
  latency_s {p50, p95, p99, max}: end of the batch (when its records are on the output topics)
  minus Kafka append time, over every input alert of the batch; latency_basis: "batch_end";
  timestamps: "log_append_time" when the broker stamped every input alert (then latency starts at
  the append), "create_time" when producers did, "mixed";
  output_time (unix seconds, end of the batch);
  phases_s {add_batch (read, decode, filter, publish: one pass), query_planning, latest_offset,
  wal_commit, commit_offsets, ...} (Spark's durations, seconds);
  spark {durationMs {...}, numInputRows, inputRowsPerSecond, processedRowsPerSecond,
  id, runId (the query's id, and its run's: a new runId is a restart), endOffset {topic:
  {partition: next offset}}};
  written_at (unix seconds).
In Real-Time Mode a "batch" spans a checkpoint interval; latency is then measured where
subscribers see it, by reading the output topics back (``alertsieve.bench``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from alertsieve.filtering.model import sql_failed
from alertsieve.stream.source_loss import loss_line
from alertsieve.view.decoder import REASON_KINDS

log = logging.getLogger(__name__)


@dataclass
class BatchStats:
    batch_id: int
    input_rows: int
    decoded_rows: int
    quarantined_rows: int
    matches: dict[str, int]
    batch_seconds: float
    output_time: float
    latency_s: dict[str, float | None]
    latency_basis: str = "batch_end"
    timestamps: str = "log_append_time"
    phases_s: dict[str, float] = field(default_factory=dict)
    filter_errors: dict[str, str] = field(default_factory=dict)
    filter_error_alerts: dict[str, int] = field(default_factory=dict)
    filter_seconds: dict[str, float] = field(default_factory=dict)
    withheld: dict[str, int] = field(default_factory=dict)
    published_bytes: dict[str, int] = field(default_factory=dict)
    model_invocations: dict[str, int] = field(default_factory=dict)
    model_seconds: dict[str, float] = field(default_factory=dict)
    model_errors: dict[str, str] = field(default_factory=dict)
    reason_min: str | None = None
    reason_max: str | None = None
    #: quarantined messages by kind of reason (``view.decoder.REASON_KINDS``, and ``other``)
    quarantined_by: dict[str, int] = field(default_factory=dict)
    newest_alert_s: float | None = None  # the newest alert's Kafka timestamp (s since 1970)
    #: offsets the batch was to read that the input no longer held (``stream.source_loss``)
    lost_at_source: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: where the batch's time went, when its matching ran apart from the alerts' bytes
    #: (``alertsieve.stream.batch_metrics.STAGES``) or predicate first (``matcher``: the UDF's
    #: own seconds, summed over its chunks)
    stages: dict[str, float] = field(default_factory=dict)
    #: the objects query's counts of its state's rows (``batch_metrics.OBJECTS``)
    objects: dict[str, int] = field(default_factory=dict)
    kind: str = "batch"

    @property
    def rows_per_s(self) -> float:
        return self.input_rows / self.batch_seconds if self.batch_seconds > 0 else 0.0

    @property
    def seconds_per_1000(self) -> dict[str, float]:
        """Each Python filter's seconds per 1,000 input alerts of the batch."""
        return _per_1000(self.filter_seconds, self.input_rows)

    @property
    def model_seconds_per_1000(self) -> dict[str, float]:
        """Each model's seconds per 1,000 input alerts of the batch."""
        return _per_1000(self.model_seconds, self.input_rows)

    def withhold(self, names: frozenset[str]) -> None:
        """The batch ran with the matches of ``names`` withheld (their daily quota reached):
        counted as withheld, not as published records or bytes."""
        for name in sorted(names & self.matches.keys()):
            self.withheld[name] = self.matches[name]
            self.matches[name] = 0
            if name in self.published_bytes:
                self.published_bytes[name] = 0


def _per_1000(seconds: dict[str, float], rows: int) -> dict[str, float]:
    return {n: round(1000 * s / rows, 4) for n, s in seconds.items()}


def latency_from_timestamps(output_time: float, ts_quantiles: dict[str, float | None]) -> dict:
    """Latency quantiles from append-time quantiles: the p95 latency is output time minus the
    5th-percentile (earliest) append time."""

    def lat(key: str) -> float | None:
        ts = ts_quantiles.get(key)
        return None if ts is None else round(output_time - ts, 3)

    return {"p50": lat("q50"), "p95": lat("q05"), "p99": lat("q01"), "max": lat("min")}


def console_line(stats: BatchStats, realtime: bool = False) -> str:
    """A batch in a line. A Real-Time Mode batch (an epoch) lasts its checkpoint interval and
    publishes each match as it comes, so its duration, rate and end-of-batch latency say nothing
    of the job's: the line gives what it read and matched."""
    matched = matches_line(stats.matches) + python_line(stats) + models_line(stats)
    errors = f" | FILTER ERRORS: {', '.join(stats.filter_errors)}" if stats.filter_errors else ""
    if stats.model_errors:
        errors += f" | MODEL ERRORS: {', '.join(stats.model_errors)} (their scores null)"
    if any(stats.withheld.values()):
        errors = f"; withheld (quota): {matches_line(stats.withheld)}{errors}"
    if realtime:
        return (
            f"epoch {stats.batch_id}: {stats.input_rows} alerts ({stats.quarantined_rows} quarantined);"
            f" matches: {matched}{errors}"
        )
    lat = stats.latency_s
    p50 = f"{lat['p50']:.2f}s" if lat.get("p50") is not None else "-"
    pmax = f"{lat['max']:.2f}s" if lat.get("max") is not None else "-"
    return (
        f"batch {stats.batch_id}: {stats.input_rows} alerts ({stats.quarantined_rows} quarantined)"
        f" in {stats.batch_seconds:.2f}s = {stats.rows_per_s:.0f}/s; latency p50 {p50} max {pmax};"
        f" matches: {matched}{errors}"
    )


#: The console line names this many filters' matches; a job of a thousand says how many more.
CONSOLE_FILTERS = 8


def python_line(stats: BatchStats) -> str:
    """``; python: slow 1.20s (2.40 s/1k)``: the costliest Python filters' time in the batch."""
    if not stats.filter_seconds:
        return ""
    per = stats.seconds_per_1000
    top = sorted(stats.filter_seconds.items(), key=lambda kv: -kv[1])[:CONSOLE_FILTERS]
    more = len(stats.filter_seconds) - len(top)
    return (
        "; python: "
        + ", ".join(f"{n} {s:.2f}s ({per[n]:.2f} s/1k)" for n, s in top)
        + (f" and {more} more" if more else "")
    )


def models_line(stats: BatchStats) -> str:
    """``; models: ztf_anomaly 0.40s (0.81 s/1k, 493 alerts)``: what each model cost."""
    if not stats.model_seconds:
        return ""
    per = stats.model_seconds_per_1000
    return "; models: " + ", ".join(
        f"{n} {s:.2f}s ({per[n]:.2f} s/1k, {stats.model_invocations.get(n, 0)} alerts)"
        for n, s in stats.model_seconds.items()
    )


def matches_line(matches: dict[str, int]) -> str:
    """``a=3, b=1`` for the filters that matched, the busiest first past ``CONSOLE_FILTERS``."""
    hit = [(k, v) for k, v in matches.items() if v]
    if not hit:
        return "none"
    if len(hit) <= CONSOLE_FILTERS:
        return ", ".join(f"{k}={v}" for k, v in hit)
    top = sorted(hit, key=lambda kv: -kv[1])[:CONSOLE_FILTERS]
    rest = sum(v for _, v in hit) - sum(v for _, v in top)
    return (
        ", ".join(f"{k}={v}" for k, v in top)
        + f" and {rest} more in {len(hit) - CONSOLE_FILTERS} other filters"
    )


class MetricsLog:
    """Writes one line per hot-path batch that read alerts, from its progress report (fed by the
    query listener as batches finish, and by ``flush`` with the query's recent progress when it
    stops, so no batch is left out when the listener's last event comes late)."""

    def __init__(
        self,
        path: str | Path | None,
        filters: list[str],
        python_filters: set[str] = frozenset(),
        query_name: str | None = None,
        realtime: bool = False,
        on_batch: Callable[[BatchStats, dict], None] | None = None,
        diagnose: Callable[[BatchStats], str | None] | None = None,
        python_budget: float | None = None,
        models: dict[str, list[str]] | None = None,
        losses: Callable[[dict, int], dict] | None = None,
        kind: str = "batch",
    ):
        """``models``: each model the filters read -> the filters reading it (told when it fails).
        ``on_batch(stats, progress)``: called once per batch after its line is written (the
        counts topic). ``diagnose(stats)``: the line to add about a batch that quarantined every
        message, or None (``alertsieve.stream.diagnosis.Diagnoser``). ``python_budget``: seconds
        per 1,000 alerts a Python filter or a model may take in a batch; above it, a WARNING names
        it. ``losses(progress, rows_read)``: the offsets the batch lost at the source
        (``alertsieve.stream.source_loss.SourceLosses``). ``kind``: its lines' kind (the objects
        query's are ``objects``: ``read_metrics`` keeps the hot path's apart).
        ``withheld_in(batch_id)``, set by a job with quotas once they are read back: the filters
        whose matches that batch withheld (``BatchStats.withhold``). ``observed_in(batch_id)``, set
        by a job whose batches report their stages (``alertsieve.stream.bytes_apart``): what the
        batch's progress report does not hold, as its observations."""
        self.on_batch = on_batch
        self.kind = kind
        self.losses = losses
        self.withheld_in: Callable[[int], frozenset[str]] | None = None
        self.observed_in: Callable[[int], dict] | None = None
        self.python_budget = python_budget
        self.diagnose = diagnose
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.filters = filters
        self.python_filters = python_filters
        self.models = models or {}
        self.indexed: list[str] | None = None  # see ``use_filters``
        self.query_name = query_name
        self.realtime = realtime
        self._done: set[int] = set()
        self._lock = threading.Lock()
        self._handled = threading.Condition()
        self._handled_through = -1
        self.written: list[dict[str, Any]] = []

    def add_progress(self, progress: dict) -> None:
        if self.query_name and progress.get("name") != self.query_name:
            return
        try:
            self._add(progress)
        finally:
            with self._handled:
                self._handled_through = max(self._handled_through, int(progress.get("batchId", -1)))
                self._handled.notify_all()

    def wait_for_batch(self, batch_id: int, timeout: float) -> bool:
        """Wait until batch ``batch_id``'s report has been handled (its line written, ``on_batch``
        called); False when ``timeout`` seconds passed first. Spark reports a batch to the
        listener after the next one may have started: a job with quotas waits here."""
        with self._handled:
            return self._handled.wait_for(lambda: self._handled_through >= batch_id, timeout)

    def _add(self, progress: dict) -> None:
        if self.observed_in is not None:
            observed = self.observed_in(int(progress.get("batchId", -1)))
            progress = {
                **progress,
                "observedMetrics": {**(progress.get("observedMetrics") or {}), **observed},
            }
        stats = batch_stats(progress, self.filters, self.python_filters, self.models, self.indexed)
        if stats is None:
            return
        with self._lock:
            if stats.batch_id in self._done:
                return
            self._done.add(stats.batch_id)
            stats.kind = self.kind
            if self.withheld_in:
                stats.withhold(self.withheld_in(stats.batch_id))
            diagnosis = self.diagnose(stats) if self.diagnose else None
        if self.losses:
            stats.lost_at_source = self.losses(progress, stats.input_rows)
        log.info("%s", console_line(stats, self.realtime))
        if stats.lost_at_source:
            log.warning("%s", loss_line(stats.batch_id, stats.lost_at_source))
        if diagnosis:  # beside the batch's line, where the person running the job looks; it goes on
            log.warning("%s", diagnosis)
        costs = [
            ("python filter", stats.seconds_per_1000, stats.filter_seconds),
            ("model", stats.model_seconds_per_1000, stats.model_seconds),
        ]
        for kind, per_1000, seconds in costs:
            for name, per in per_1000.items():
                if self.python_budget is not None and per > self.python_budget:
                    log.warning(
                        "batch %d: %s %s took %.2f s per 1,000 alerts (%.2f s for %d),"
                        " above the budget of %.2f s (python_filter_budget)",
                        stats.batch_id,
                        kind,
                        name,
                        per,
                        seconds[name],
                        stats.input_rows,
                        self.python_budget,
                    )
        self._write(stats, progress)
        if self.on_batch:
            self.on_batch(stats, progress)

    def use_filters(
        self,
        filters: list[str],
        python_filters: set[str],
        models: dict[str, list[str]] | None = None,
        indexed: list[str] | None = None,
    ) -> None:
        """The filters (and models) of the batches from now on (a job that deployed a new set:
        ``--watch``); ``indexed``, as the running query indexes them (see ``batch_stats``)."""
        with self._lock:
            self.filters, self.python_filters = filters, python_filters
            self.models = models or {}
            self.indexed = indexed

    def flush(self, progresses: list) -> None:
        """``progresses``: a query's ``recentProgress`` (PySpark's progress objects, or dicts)."""
        reports = [json.loads(p.json) if hasattr(p, "json") else p for p in progresses]
        for progress in sorted(reports, key=lambda p: p.get("batchId", 0)):
            self.add_progress(progress)

    def _write(self, stats: BatchStats, progress: dict) -> None:
        line = asdict(stats)
        line["rows_per_s"] = round(stats.rows_per_s, 1)
        line["filter_seconds_per_1000"] = stats.seconds_per_1000
        line["model_seconds_per_1000"] = stats.model_seconds_per_1000
        line["batch_seconds"] = round(stats.batch_seconds, 3)
        line["spark"] = {
            k: progress.get(k)
            for k in (
                "durationMs",
                "numInputRows",
                "inputRowsPerSecond",
                "processedRowsPerSecond",
                "id",
                "runId",
            )
        }
        line["spark"]["endOffset"] = _end_offsets(progress)
        if progress.get("stateOperators"):  # the objects query's state, as Spark reports it
            line["state"] = state_of(progress["stateOperators"])
        line["written_at"] = round(time.time(), 3)
        with self._lock:
            self.written.append(line)
            if self.path:
                with open(self.path, "a") as f:
                    f.write(json.dumps(line) + "\n")


def state_of(operators: list[dict]) -> dict:
    """What a stateful query's state holds after a batch: its rows (objects), the memory RocksDB
    reports, and RocksDB's own figures (its files' size, what the batch wrote)."""
    custom = {}
    for op in operators:
        for key, value in (op.get("customMetrics") or {}).items():
            if key.startswith("rocksdb") and isinstance(value, int | float):
                custom[key] = custom.get(key, 0) + value
    return {
        "rows": sum(int(op.get("numRowsTotal") or 0) for op in operators),
        "memory_bytes": sum(int(op.get("memoryUsedBytes") or 0) for op in operators),
        "rocksdb": {k: custom[k] for k in sorted(custom) if k in ROCKSDB_FIGURES},
    }


#: RocksDB's figures a metrics line keeps (Spark reports some twenty).
ROCKSDB_FIGURES = (
    "rocksdbSstFileSize",
    "rocksdbTotalBytesWritten",
    "rocksdbCommitCheckpointLatency",
    "rocksdbPinnedBlocksMemoryUsage",
)


def batch_stats(
    progress: dict,
    filters: list[str],
    python_filters: set[str] = frozenset(),
    models: dict[str, list[str]] | None = None,
    indexed: list[str] | None = None,
) -> BatchStats | None:
    """A hot-path batch's stats from its progress report; None for a batch without alerts (or
    another query's report). ``models``: each model run -> the filters reading its score.
    ``indexed``: the filters as the running query indexes its metrics (its plan's), when a
    deployment that changed rows only (``alertsieve.stream.redeploy.rows_only``) left them in
    another order than ``filters``."""
    indexed = indexed or filters
    from alertsieve.stream.batch_metrics import (
        ARRIVED,
        COST,
        FAILED,
        MATCHER_SECONDS,
        MATCHES,
        OBJECTS,
        OBSERVED,
        STAGES,
        TALLY,
        size,
    )
    from alertsieve.stream.predicate_first import tally_counts

    observed = progress.get("observedMetrics") or {}
    seen = {**(observed.get(OBSERVED) or {}), **(observed.get(ARRIVED) or {})}
    if not seen.get("input_rows"):
        return None
    durations = progress.get("durationMs") or {}
    seconds = durations.get("triggerExecution", 0) / 1e3
    start = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
    output_time = start + seconds
    quarantined = int(seen.get("quarantined_rows") or 0)
    stamped = int(seen.get("log_append_time_rows") or 0)
    timestamps = {0: "create_time", int(seen["input_rows"]): "log_append_time"}.get(
        stamped, "mixed"
    )
    q = seen.get("ts_quantiles") or [None, None, None]
    costs = python_costs(seen, observed.get(COST) or {}, indexed, python_filters, models or {})
    failed = sql_failures(seen.get(FAILED), python_filters)
    stages = dict(observed.get(STAGES) or {})
    matcher = (observed.get(COST) or {}).get(MATCHER_SECONDS)
    if matcher is not None:
        stages["matcher"] = float(matcher)
    for name, n in failed.items():
        costs["filter_errors"].setdefault(name, sql_failed(name, n))
    return BatchStats(
        batch_id=int(progress["batchId"]),
        input_rows=int(seen["input_rows"]),
        decoded_rows=int(seen["input_rows"]) - quarantined,
        quarantined_rows=quarantined,
        matches=matches_by_filter(  # as published
            seen.get(MATCHES), filters, tally_counts((observed.get(COST) or {}).get(TALLY)), indexed
        ),
        batch_seconds=seconds,
        output_time=output_time,
        phases_s={
            _snake(k): round(v / 1e3, 3) for k, v in durations.items() if k != "triggerExecution"
        },
        **costs,
        filter_error_alerts=failed,
        published_bytes={
            n: int(seen.get(size(i)) or 0) for i, n in enumerate(indexed) if size(i) in seen
        },
        reason_min=seen.get("reason_min"),
        reason_max=seen.get("reason_max"),
        quarantined_by=quarantine_kinds(seen, quarantined),
        stages=stages,
        objects={k: int(v or 0) for k, v in (observed.get(OBJECTS) or {}).items()},
        newest_alert_s=seen.get("ts_max"),
        timestamps=timestamps,
        latency_s=latency_from_timestamps(
            output_time, {"q01": q[0], "q05": q[1], "q50": q[2], "min": seen.get("ts_min")}
        ),
    )


def python_costs(
    seen: dict,
    costs: dict,
    indexed: list[str],
    python_filters: set[str],
    models: dict[str, list[str]],
) -> dict:
    """What Python cost the batch: each Python filter's first error and seconds, each model's
    invocations, seconds and first error (also its readers' error), as ``BatchStats`` fields."""
    from alertsieve.stream.outcome_columns import (
        cost,
        error,
        model_error,
        model_rows,
        model_seconds,
    )

    errors = {
        n: seen.get(error(i))
        for i, n in enumerate(indexed)
        if n in python_filters and seen.get(error(i))
    }
    model_errors = {
        m: costs[model_error(j)] for j, m in enumerate(models) if costs.get(model_error(j))
    }
    for m, message in model_errors.items():
        for reader in models[m]:
            errors.setdefault(reader, message)
    return {
        "filter_errors": errors,
        "filter_seconds": {
            n: round(float(costs.get(cost(i)) or 0.0), 4)
            for i, n in enumerate(indexed)
            if n in python_filters and cost(i) in costs
        },
        "model_invocations": {
            m: int(costs.get(model_rows(j)) or 0) for j, m in enumerate(models) if costs
        },
        "model_seconds": {
            m: round(float(costs.get(model_seconds(j)) or 0.0), 4)
            for j, m in enumerate(models)
            if costs
        },
        "model_errors": model_errors,
    }


def sql_failures(names: list | None, python_filters: set[str]) -> dict[str, int]:
    """{SQL filter: alerts it raised on} from the observed list of the names of the filters
    that failed, one per error row (``batch_metrics.outcome_metrics``: a Python filter's rows are
    chunks, and its first error is reported as before)."""
    counts: dict[str, int] = {}
    for name in names or []:
        if name not in python_filters:
            counts[name] = counts.get(name, 0) + 1
    return counts


def quarantine_kinds(seen: dict, quarantined: int) -> dict[str, int]:
    """Quarantined messages by kind of reason, the kinds with any only."""
    from alertsieve.stream.batch_metrics import reason_kind

    kinds = {k: int(seen.get(reason_kind(k)) or 0) for k in REASON_KINDS}
    kinds["other"] = quarantined - sum(kinds.values())
    return {k: n for k, n in kinds.items() if n}


def matches_by_filter(
    names: list | None,
    filters: list[str],
    tallied: dict[int, int] | None = None,
    indexed: list[str] | None = None,
) -> dict[str, int]:
    """{filter: matches} from the observed list of matched filters' names
    (``batch_metrics.outcome_metrics``) and the predicate-first tallies (``tallied``: {index in
    ``indexed``, the running plan's filters: matches}), every filter named, zero where none
    matched (and a filter a deployment just removed, in the batch that ran it last)."""
    counts = dict.fromkeys(filters, 0)
    for name in names or []:
        counts[name] = counts.get(name, 0) + 1
    for i, n in (tallied or {}).items():
        name = (indexed or filters)[i]
        counts[name] = counts.get(name, 0) + n
    return counts


def _snake(name: str) -> str:
    """Spark's ``addBatch`` -> ``add_batch``."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _end_offsets(progress: dict) -> dict[str, dict[str, int]]:
    """{topic: {partition: next offset}} the batch read up to, from Spark's progress report."""
    out: dict[str, dict[str, int]] = {}
    for source in progress.get("sources", []):
        end = source.get("endOffset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                continue
        if isinstance(end, dict):
            for topic, parts in end.items():
                out.setdefault(topic, {}).update({str(p): int(o) for p, o in parts.items()})
    return out


def make_listener(log: MetricsLog):
    """A StreamingQueryListener feeding Spark's progress reports into ``log``."""
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            pass

        def onQueryProgress(self, event) -> None:
            log.add_progress(json.loads(event.progress.json))

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            pass

    return _Listener()


def read_lines(path: str | Path) -> list[dict]:
    """Every complete line of a metrics file (none if it does not exist yet): a job may be
    writing the last line while it is read."""
    path = Path(path)
    if not path.exists():
        return []
    lines = []
    for text in path.read_text().splitlines():
        try:
            lines.append(json.loads(text))
        except ValueError:  # empty, or being written right now
            continue
    return lines


def read_metrics(path: str | Path, kind: str = "batch"):
    """All lines of ``kind`` from a metrics file as a pandas DataFrame (nested fields flattened)."""
    import pandas as pd

    return pd.json_normalize([r for r in read_lines(path) if r.get("kind") == kind])
