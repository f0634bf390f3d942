"""Metrics bookkeeping: latency from append-time quantiles, Spark progress merged per batch."""

from __future__ import annotations

import json

from alertsieve.bench.batches import visit_done_times
from alertsieve.stream.metrics import (
    MetricsLog,
    latency_from_timestamps,
    read_lines,
    read_metrics,
)


def test_latency_quantiles_come_from_the_earliest_append_times():
    lat = latency_from_timestamps(100.0, {"q01": 90.0, "q05": 92.5, "q50": 97.0, "min": 89.5})
    assert lat == {"p50": 3.0, "p95": 7.5, "p99": 10.0, "max": 10.5}
    assert latency_from_timestamps(100.0, {})["p50"] is None


def _progress(batch_id: int, rows: int, name: str = "hot") -> dict:
    """A progress report as Spark's listener hands it over, with the hot path's observed counts."""
    return {
        "name": name,
        "batchId": batch_id,
        "timestamp": "2026-11-24T10:00:00.000Z",
        "numInputRows": rows,
        "durationMs": {"triggerExecution": 2000, "addBatch": 1900},
        "sources": [{"endOffset": json.dumps({"t": {"0": 5, "1": 5}})}],
        "observedMetrics": {
            "alertsieve_input": {
                "input_rows": rows,
                "log_append_time_rows": rows,
                "ts_min": 1_795_514_390.0,
                "ts_quantiles": [1_795_514_391.0, 1_795_514_392.5, 1_795_514_397.0],
            },
            "alertsieve": {
                "quarantined_rows": 1,
                "matches": ["b", "a", "b", "b", "a", "b", "b", "b", "b"],
                "_e1": "b: ValueError: no",
            },
        },
    }


def test_batches_come_from_progress_reports_once_each(tmp_path):
    log = MetricsLog(tmp_path / "m.jsonl", ["a", "b"], {"b"}, query_name="hot")
    log.add_progress(_progress(0, 10))
    log.add_progress(_progress(0, 10))  # the listener's report and the final flush: once
    log.add_progress(_progress(1, 0))  # an empty batch: no line
    log.add_progress(_progress(2, 5, name="archive"))  # another query's: no line
    log.flush([_progress(3, 4), _progress(0, 10)])
    df = read_metrics(tmp_path / "m.jsonl")
    assert list(df["batch_id"]) == [0, 3]
    assert list(df["input_rows"]) == [10, 4]
    first = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])
    assert (first["decoded_rows"], first["quarantined_rows"]) == (9, 1)
    assert first["matches"] == {"a": 2, "b": 7}  # b published 7 before it failed
    assert first["filter_errors"] == {"b": "b: ValueError: no"}
    assert first["spark"]["durationMs"] == {"triggerExecution": 2000, "addBatch": 1900}
    assert first["spark"]["endOffset"] == {"t": {"0": 5, "1": 5}}
    assert first["phases_s"] == {"add_batch": 1.9}
    assert first["timestamps"] == "log_append_time"
    assert (first["batch_seconds"], first["rows_per_s"]) == (2.0, 5.0)
    end = 1_795_514_400.0 + 2.0  # 10:00:00 UTC plus the trigger's 2 s
    assert first["output_time"] == end
    assert first["latency_s"] == {
        "p50": round(end - 1_795_514_397.0, 3),
        "p95": round(end - 1_795_514_392.5, 3),
        "p99": round(end - 1_795_514_391.0, 3),
        "max": round(end - 1_795_514_390.0, 3),
    }


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


def test_the_console_names_the_busiest_filters_of_many():
    from alertsieve.stream.metrics import CONSOLE_FILTERS, matches_line

    few = {"a": 2, "b": 0, "c": 1}
    assert matches_line(few) == "a=2, c=1"
    many = {f"f{i}": i for i in range(1000)}
    line = matches_line(many)
    assert line.startswith(", ".join(f"f{i}={i}" for i in range(999, 999 - CONSOLE_FILTERS, -1)))
    shown = sum(range(999, 999 - CONSOLE_FILTERS, -1))
    assert line.endswith(
        f" and {sum(range(1000)) - shown} more in {999 - CONSOLE_FILTERS} other filters"
    )


def test_a_batch_line_reads_as_its_trigger(caplog):
    """A micro-batch's line gives its duration, rate and latency; a Real-Time Mode epoch's, which
    lasts its checkpoint interval whatever the job does, only what it read and matched."""
    import logging

    lines = {}
    for realtime in (False, True):
        log = MetricsLog(None, ["a", "b"], {"b"}, query_name="hot", realtime=realtime)
        with caplog.at_level(logging.INFO, logger="alertsieve.stream.metrics"):
            caplog.clear()
            log.add_progress(_progress(0, 10))
        lines[realtime] = [r.getMessage() for r in caplog.records]
    end = 1_795_514_400.0 + 2.0
    assert lines[False] == [
        f"batch 0: 10 alerts (1 quarantined) in 2.00s = 5/s; latency p50"
        f" {end - 1_795_514_397.0:.2f}s max {end - 1_795_514_390.0:.2f}s; matches: a=2, b=7"
        " | FILTER ERRORS: b"
    ]
    assert lines[True] == [
        "epoch 0: 10 alerts (1 quarantined); matches: a=2, b=7 | FILTER ERRORS: b"
    ]


def test_a_python_filters_time_is_reported_and_named_above_its_budget(tmp_path, caplog):
    """The seconds the hot path observed for Python filter ``b`` (``_c1``): in the metrics line,
    per 1,000 input alerts, on the console, and a WARNING above ``python_budget``."""
    import logging

    progress = _progress(0, 10)
    progress["observedMetrics"]["alertsieve_python"] = {"_c1": 0.5}
    log = MetricsLog(tmp_path / "m.jsonl", ["a", "b"], {"b"}, query_name="hot", python_budget=0.1)
    with caplog.at_level(logging.INFO, logger="alertsieve.stream.metrics"):
        log.add_progress(progress)
    (line,) = read_lines(tmp_path / "m.jsonl")
    assert (line["filter_seconds"], line["filter_seconds_per_1000"]) == ({"b": 0.5}, {"b": 50.0})
    said = [r.getMessage() for r in caplog.records]
    assert said[0].endswith("matches: a=2, b=7; python: b 0.50s (50.00 s/1k) | FILTER ERRORS: b")
    assert said[1] == (
        "batch 0: python filter b took 50.00 s per 1,000 alerts (0.50 s for 10), above the budget"
        " of 0.10 s (python_filter_budget)"
    )
