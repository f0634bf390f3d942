"""Metrics bookkeeping: latency from append-time quantiles, Spark progress merged per batch."""

from __future__ import annotations

import json

from alertsieve.stream.metrics import (
    BatchStats,
    MetricsLog,
    latency_from_timestamps,
    read_metrics,
    visit_done_times,
)


def test_latency_quantiles_come_from_the_earliest_append_times():
    lat = latency_from_timestamps(100.0, {"q01": 90.0, "q05": 92.5, "q50": 97.0, "min": 89.5})
    assert lat == {"p50": 3.0, "p95": 7.5, "p99": 10.0, "max": 10.5}
    assert latency_from_timestamps(100.0, {})["p50"] is None


def _stats(batch_id: int, rows: int) -> BatchStats:
    return BatchStats(
        batch_id,
        rows,
        rows - 1,
        1,
        {"a": 2},
        2.0,
        50.0,
        {"p50": 1.0, "p95": 2.0, "p99": 2.5, "max": 3.0},
    )


def test_progress_and_batch_stats_merge_in_either_order(tmp_path):
    log = MetricsLog(tmp_path / "m.jsonl", console=None, wait_s=0.1)
    progress = {
        "batchId": 0,
        "numInputRows": 10,
        "durationMs": {"addBatch": 1900},
        "sources": [{"endOffset": json.dumps({"t": {"0": 5, "1": 5}})}],
    }
    log.add_progress(progress)  # progress first ...
    log.add_batch(_stats(0, 10))
    log.add_batch(_stats(1, 4))  # ... or batch first, progress never arrives
    log.close()
    df = read_metrics(tmp_path / "m.jsonl")
    assert list(df["batch_id"]) == [0, 1]
    assert list(df["input_rows"]) == [10, 4]
    first = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])
    assert first["spark"]["durationMs"] == {"addBatch": 1900}
    assert first["spark"]["endOffset"] == {"t": {"0": 5, "1": 5}}
    assert first["rows_per_s"] == 5.0
    second = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[1])
    assert "spark" not in second


def test_a_visit_is_done_when_a_batch_has_read_past_it():
    lines = [
        {"batch_id": 0, "output_time": 10.0, "spark": {"endOffset": {"t": {"0": 3, "1": 9}}}},
        {"batch_id": 1, "output_time": 14.0, "spark": {"endOffset": {"t": {"0": 8, "1": 9}}}},
    ]
    assert visit_done_times(lines, "t", [{0: 3, 1: 9}, {0: 8, 1: 9}, {0: 9, 1: 9}]) == [
        10.0,
        14.0,
        None,
    ]
