"""Per-batch metrics: what the job saw (counts, latency) merged with what Spark reports
(durations), one JSON object per line, plus one readable console line per batch.

Fields of a ``batch`` line:
  batch_id, input_rows, decoded_rows, quarantined_rows, matches {filter: n};
  filter_errors {filter: message} (filters that failed in this batch);
  batch_seconds (our foreachBatch wall time), rows_per_s (input_rows / batch_seconds);
  latency_s {p50, p95, p99, max}: publication time minus Kafka append time, over every input
  alert of the batch; latency_basis: "kafka_out" (publication = the Kafka fan-out finished; the
  Delta archive commits after it) or "batch_end" (no Kafka sink, or nothing matched);
  output_time (unix seconds, end of the batch);
  phases_s {read_decode_filter, kafka_out, delta_out, quarantine} (seconds per step);
  spark {durationMs {...}, numInputRows, inputRowsPerSecond, processedRowsPerSecond,
  endOffset {topic: {partition: next offset}}} once Spark's progress report arrived;
  written_at (unix seconds).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO


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
    phases_s: dict[str, float] = field(default_factory=dict)
    filter_errors: dict[str, str] = field(default_factory=dict)
    kind: str = "batch"

    @property
    def rows_per_s(self) -> float:
        return self.input_rows / self.batch_seconds if self.batch_seconds > 0 else 0.0


def latency_from_timestamps(output_time: float, ts_quantiles: dict[str, float | None]) -> dict:
    """Latency quantiles from append-time quantiles: the p95 latency is output time minus the
    5th-percentile (earliest) append time."""

    def lat(key: str) -> float | None:
        ts = ts_quantiles.get(key)
        return None if ts is None else round(output_time - ts, 3)

    return {"p50": lat("q50"), "p95": lat("q05"), "p99": lat("q01"), "max": lat("min")}


def console_line(stats: BatchStats) -> str:
    lat = stats.latency_s
    matched = ", ".join(f"{k}={v}" for k, v in stats.matches.items() if v) or "none"
    errors = f" | FILTER ERRORS: {', '.join(stats.filter_errors)}" if stats.filter_errors else ""
    p50 = f"{lat['p50']:.2f}s" if lat.get("p50") is not None else "-"
    pmax = f"{lat['max']:.2f}s" if lat.get("max") is not None else "-"
    return (
        f"batch {stats.batch_id}: {stats.input_rows} alerts ({stats.quarantined_rows} quarantined)"
        f" in {stats.batch_seconds:.2f}s = {stats.rows_per_s:.0f}/s; latency p50 {p50} max {pmax};"
        f" matches: {matched}{errors}"
    )


class MetricsLog:
    """Collects batch stats from foreachBatch and Spark progress from the listener; writes one
    merged line per batch. Lines whose progress never arrives are written by ``close``."""

    def __init__(
        self, path: str | Path | None, console: TextIO | None = sys.stdout, wait_s: float = 10.0
    ):
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.console = console
        self.wait_s = wait_s
        self._pending: dict[int, BatchStats] = {}
        self._progress: dict[int, dict] = {}
        self._lock = threading.Lock()
        self.written: list[dict[str, Any]] = []

    def add_batch(self, stats: BatchStats) -> None:
        if self.console:
            print(console_line(stats), file=self.console, flush=True)
        with self._lock:
            progress = self._progress.pop(stats.batch_id, None)
            if progress is None:
                self._pending[stats.batch_id] = stats
                return
        self._write(stats, progress)

    def add_progress(self, progress: dict) -> None:
        batch_id = progress.get("batchId")
        with self._lock:
            stats = self._pending.pop(batch_id, None)
            if stats is None:
                if progress.get("numInputRows"):
                    self._progress[batch_id] = progress
                return
        self._write(stats, progress)

    def close(self) -> None:
        deadline = time.monotonic() + self.wait_s
        while self._pending and time.monotonic() < deadline:
            time.sleep(0.1)
        with self._lock:
            left, self._pending = self._pending, {}
        for stats in left.values():
            self._write(stats, None)

    def _write(self, stats: BatchStats, progress: dict | None) -> None:
        line = asdict(stats)
        line["rows_per_s"] = round(stats.rows_per_s, 1)
        line["batch_seconds"] = round(stats.batch_seconds, 3)
        if progress is not None:
            line["spark"] = {
                k: progress.get(k)
                for k in (
                    "durationMs",
                    "numInputRows",
                    "inputRowsPerSecond",
                    "processedRowsPerSecond",
                )
            }
            line["spark"]["endOffset"] = _end_offsets(progress)
        line["written_at"] = round(time.time(), 3)
        with self._lock:
            self.written.append(line)
            if self.path:
                with open(self.path, "a") as f:
                    f.write(json.dumps(line) + "\n")


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


def batch_reaching(lines: list[dict], topic: str, end: dict) -> dict | None:
    """The first batch that had read ``topic`` up to ``end`` ({partition: offset})."""
    for line in sorted(lines, key=lambda x: x["batch_id"]):
        reached = line.get("spark", {}).get("endOffset", {}).get(topic, {})
        if reached and all(reached.get(str(p), -1) >= o for p, o in end.items()):
            return line
    return None


def visit_done_times(lines: list[dict], topic: str, ends: list[dict]) -> list[float | None]:
    """Per visit: the output time of the first batch that had read past all its alerts."""
    done = [batch_reaching(lines, topic, end) for end in ends]
    return [line["output_time"] if line else None for line in done]


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
