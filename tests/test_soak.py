"""The soak at small scale (make test's two minutes; the night's run is `make bench`): visits
sent while the job runs in Real-Time Mode, the archive beside it, the job killed -9 once and
restarted; at the end every filter's topic verified against the counts topic, and the Delta
archive against plain Python over the re-simulated alerts. Integration: a broker, Spark and
processes of their own."""

from __future__ import annotations

import json
import statistics
import sys

import pytest
from job_helpers import run_command


@pytest.mark.slow
@pytest.mark.integration
def test_a_short_soak_with_a_kill_loses_nothing(kafka, tmp_path):
    done = run_command(
        [
            sys.executable,
            "-m",
            "alertsieve.cli",
            "bench",
            "soak",
            "--bootstrap",
            kafka.bootstrap_servers,
            "--alerts",
            "8000",
            "--visit-size",
            "1000",
            "--live-interval",
            "10",
            "--filters",
            "10",
            "--kill-after",
            "35",
            "--sample-every",
            "2",
            "--heap-every",
            "30",
            "--check-visits",
            "8",
            "--delta-upkeep",
            "10",
            "--delta-retention-hours",
            "0",
            "--out",
            str(tmp_path / "soak"),
            "-q",
        ],
        timeout=800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result == json.loads((tmp_path / "soak" / "summary.json").read_text())
    assert result["produced"] == 8_000 and result["killed_at_s"] >= 35
    assert result["verify"]["exit_code"] == 0, result["verify"]
    assert result["verify"]["verdict"].startswith("verified: complete"), result["verify"]
    delta, sample = result["delta"], result["delta"]["sample"]
    assert (
        sample["alerts"] == 8_000 and sample["matches"] > 0 and sample["mismatched_filters"] == []
    ), delta
    # the whole run: the sample is the whole run here, so every archived match is a checked one
    assert delta["alerts_more_than_once"] == 0 and delta["filters_unlike_their_topic"] == [], delta
    assert delta["matches_archived"] == delta["matches_published"] == sample["matches"], delta
    samples = [
        json.loads(line) for line in (tmp_path / "soak" / "samples.jsonl").read_text().splitlines()
    ]
    # the sampler sees the job (a sample taken as the restarted process starts may read nothing)
    assert (
        len(samples) >= 10 and statistics.median(s["parts"]["job"]["rss_mb"] for s in samples) > 0
    )
    heaps = [
        s["heap_after_gc_mb"]["job"] for s in samples if "job" in s.get("heap_after_gc_mb", {})
    ]
    assert heaps and all(h > 0 for h in heaps)
    # the job's checkpoint grew while it ran; the archive's table (which may first commit only as
    # it drains, on a slow machine) references its files at the end, read from the Delta log
    assert samples[-1]["checkpoint"]["files"] > 0 and all("delta_matches" in s for s in samples)
    assert result["growth"]["sizes"]["delta_active_files"]["end"] >= 1
    # the archive's upkeep (every 10 s, no history kept) compacted and vacuumed its table as it
    # ran (what it does to a table: test_archive_upkeep; the files it keeps bounded over hours:
    # the long soak, docs/benchmarks.md)
    archive_log = (tmp_path / "soak" / "archive.log").read_text()
    assert "archive upkeep: matches: " in archive_log and "VACUUM (keeping 0 h)" in archive_log
    assert sum(m["n"] for m in result["latency_per_minute"]) >= sample["matches"]

    from alertsieve.bench.soak.plot import plot_soak

    figure = plot_soak(tmp_path / "soak", tmp_path / "soak.png")
    latency, memory, files = figure.axes
    kills = [line for line in latency.lines if line.get_label() == "job killed -9"]
    assert [line.get_xdata()[0] for line in kills] == [result["killed_at_s"] / 60]
    assert (tmp_path / "soak.png").stat().st_size > 0
    assert list(latency.lines[1].get_ydata()) == [m["p99"] for m in result["latency_per_minute"]]
    assert len(memory.lines[0].get_xdata()) == len(samples) and len(
        files.lines[0].get_xdata()
    ) == len(samples)


def test_growth_compares_the_first_window_after_warm_up_with_the_last():
    from alertsieve.bench.soak.run import growth, per_minute, window, windows

    assert windows(3660.0) == (
        (60.0, 660.0),
        (3060.0, 3660.0),
    )  # ten minutes each after the warm-up
    assert windows(150.0) == (
        (60.0, 90.0),
        (120.0, 150.0),
    )  # a short run: thirds of what follows it
    latencies = [(t, 100.0 + t) for t in range(0, 180)]  # latency grows by 1 ms a second
    early, late = windows(180.0)
    assert window(latencies, *early)["p99"] == round(
        statistics.quantiles([100.0 + t for t in range(60, 100)], n=100, method="inclusive")[98], 3
    )
    assert [m["n"] for m in per_minute(latencies)] == [60, 60, 60]

    def sample(t, heap, files):
        size = {"mb": 1.0, "files": files}
        return {
            "t_s": t,
            "heap_after_gc_mb": {"job": heap},
            "checkpoint": size,
            "archive_checkpoint": size,
            "delta_matches": size,
            "delta_log_files": files,
        }

    samples = [
        sample(30, 900.0, 3),
        sample(70, 500.0, 5),
        sample(120, 520.0, 9),
        sample(175, 550.0, 7),
    ]
    got = growth(samples, {"p99": 200.0}, {"p99": 300.0}, early, late)
    assert got["p99_late_over_early"] == 1.5
    assert got["heap_after_gc"]["job"] == {
        "early_mb": 500.0,
        "end_mb": 550.0,
        "ratio": 1.1,
    }  # not the warm-up's 900
    killed = growth(samples, {}, {}, early, late, killed_at_s=100.0)  # each JVM against itself
    assert killed["heap_after_gc"]["job"] == {"early_mb": 500.0, "end_mb": 500.0, "ratio": 1.0}
    assert killed["heap_after_gc"]["job_restarted"] == {
        "early_mb": 550.0,
        "end_mb": 550.0,
        "ratio": 1.0,
    }  # 160 s after its start
    hourly = [
        sample(305, 166.5, 3),
        sample(605, 176.2, 3),
        sample(3640, 173.0, 3),
    ]  # readings every 5 min
    assert (
        growth(hourly, {}, {}, *windows(3660.0))["heap_after_gc"]["job"]["early_mb"] == 176.2
    )  # at 10 minutes
    assert got["sizes"]["checkpoint"] == {
        "early": {"mb": 1.0, "files": 9},
        "end": {"mb": 1.0, "files": 7},
        "max_files": 9,
    }
