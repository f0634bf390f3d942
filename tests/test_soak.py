"""The soak at small scale (make test's two minutes; the night's run is `make bench`): visits
sent while the job runs in Real-Time Mode, the archive beside it, the job killed -9 once and
restarted; at the end every filter's topic verified against the counts topic, and the Delta
archive against plain Python over the re-simulated alerts. Integration: a broker, Spark and
processes of their own."""

from __future__ import annotations

import json

import pytest

from alertsieve.bench.soak import SoakPlan, run_soak


@pytest.mark.slow
@pytest.mark.integration
def test_a_short_soak_with_a_kill_loses_nothing(kafka, tmp_path):
    plan = SoakPlan(alerts=8_000, visit_size=1_000, interval_s=10, filters=10, kill_after_s=35,
                    sample_s=2, heap_every_s=30, oracle_visits=8)  # fmt: skip
    result = run_soak(plan, kafka.bootstrap_servers, tmp_path / "soak")
    assert result["produced"] == 8_000 and result["killed_at_s"] >= 35
    assert result["verify"]["exit_code"] == 0, result["verify"]
    assert result["verify"]["verdict"].startswith("verified: complete"), result["verify"]
    delta = result["delta"]
    assert delta["alerts_checked"] == 8_000 and delta["matches_checked"] > 0, delta
    assert delta["mismatched_filters"] == [] and delta["alerts_more_than_once"] == 0, delta
    samples = [json.loads(line) for line in (tmp_path / "soak" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) >= 10 and all(s["parts"]["job"]["rss_mb"] > 0 for s in samples[1:])
    heaps = [s["heap_after_gc_mb"]["job"] for s in samples if "job" in s.get("heap_after_gc_mb", {})]
    assert heaps and all(h > 0 for h in heaps)
    assert samples[-1]["checkpoint"]["files"] > 0 and samples[-1]["delta_matches"]["files"] > 0
    assert sum(m["n"] for m in result["latency_per_minute"]) >= delta["matches_checked"]
