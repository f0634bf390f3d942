"""Experiment files, the runner and the analysis: pure parts on hand-made input, then the
quick scale of two experiments against the real broker and real filter jobs, checked against
an independent count of the filters' matches over the same simulated alerts."""

from __future__ import annotations

import json
import statistics

import pytest
from oracles import BROKER_LIKE_TEN

from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.experiments.matrix import (
    ExperimentError,
    Point,
    append_result,
    consumer_summary,
    done_keys,
    load_results,
    parse_experiment,
    results_file,
)
from alertsieve.bench.experiments.runner import VISIT_SEED, run_experiments
from alertsieve.bench.experiments.scaling import comparison_table, fit_line, results_frame
from alertsieve.bench.outputs import quantiles
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

SPEC = {
    "name": "producers",
    "dimension": "producers",
    "base": {"alerts_per_visit": 10_000, "visits": 3},
    "matrix": {"producers": [1, 2, 4], "stamps": [True, False]},
    "quick": {"base": {"alerts_per_visit": 200, "visits": 1}, "matrix": {"producers": [1, 2]}},
}


def test_matrix_is_the_product_of_its_lists():
    exp = parse_experiment(SPEC, "producers.yaml")
    assert [(p.producers, p.stamps) for p in exp.points] == [
        (1, True),
        (1, False),
        (2, True),
        (2, False),
        (4, True),
        (4, False),
    ]
    assert {p.alerts_per_visit for p in exp.points} == {10_000}
    assert exp.dimension == "producers"


def test_quick_replaces_base_and_matrix_keys():
    exp = parse_experiment(SPEC, "producers.yaml", quick=True)
    assert [(p.producers, p.stamps, p.alerts_per_visit, p.visits) for p in exp.points] == [
        (1, True, 200, 1),
        (1, False, 200, 1),
        (2, True, 200, 1),
        (2, False, 200, 1),
    ]


def test_point_keys_are_stable_and_distinct():
    assert Point(producers=2).key == Point(producers=2).key
    assert Point(producers=2).key != Point(producers=4).key
    assert len({p.key for p in parse_experiment(SPEC, "x.yaml").points}) == 6


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"colour": 1},
            "producers.yaml: unknown key 'colour': known keys: base, description, dimension, matrix, name, quick",
        ),
        ({"base": {"producer": 2}}, "unknown key 'producer': did you mean 'producers'?"),
        ({"base": {"visits": 0}}, "visits = 0: Input should be greater than 0; e.g. visits: 3"),
        (
            {"matrix": {"stamps": ["yes"]}},
            "stamps = 'yes': Input should be a valid boolean; e.g. stamps: true",
        ),
        (
            {"base": {"sinks": ["hdfs"]}},
            "sinks.0 = 'hdfs': Input should be 'kafka' or 'delta'; e.g. sinks: [kafka]",
        ),
        (
            {"base": {"sinks": "kafka"}},
            "sinks = 'kafka': Input should be a valid tuple; e.g. sinks: [kafka]",
        ),
        (
            {"matrix": {"producers": 4}},
            "producers.yaml: matrix.producers = 4: Input should be a valid list; e.g. matrix: {producers: [1, 2, 4]}",
        ),
        ({"dimension": "speed"}, "producers.yaml: dimension = 'speed': must name a point setting"),
        ({"quick": {"scale": 2}}, "producers.yaml: quick.scale is not a known setting; remove it"),
    ],
)
def test_bad_experiment_files_name_the_file_field_and_fix(change, message):
    with pytest.raises(ExperimentError) as e:
        parse_experiment({**SPEC, **change}, "producers.yaml", quick="quick" in change)
    assert message in str(e.value)
    assert str(e.value).startswith("producers.yaml") and "\n" not in str(e.value)


def test_comparison_table_puts_our_10k_stamp_points_beside_dmtn028():
    import pandas as pd

    frame = pd.DataFrame(
        [
            {
                "alerts_per_visit": 10_000,
                "stamps": True,
                "producers": 2,
                "consumers": 1,
                "partitions": 4,
                "filters": 10,
                "cores": 2,
                "produce_s": 5.5,
                "consuming_s": 6.25,
            },
            {
                "alerts_per_visit": 10_000,
                "stamps": True,
                "producers": 2,
                "consumers": 1,
                "partitions": 4,
                "filters": 10,
                "cores": 2,
                "produce_s": 9.0,
                "consuming_s": 9.0,
            },  # same setting again
            {
                "alerts_per_visit": 10_000,
                "stamps": False,
                "producers": 1,
                "consumers": 1,
                "partitions": 4,
                "filters": 10,
                "cores": 2,
                "produce_s": 1.0,
                "consuming_s": 1.0,
            },
            {
                "alerts_per_visit": 1_000,
                "stamps": True,
                "producers": 1,
                "consumers": 1,
                "partitions": 4,
                "filters": 10,
                "cores": 2,
                "produce_s": 1.0,
                "consuming_s": 1.0,
            },
        ]
    )
    table = comparison_table(frame)
    ours = table[table["source"] != "DMTN-028 (AWS)"]
    assert ours[["source", "producing_s", "consuming_s", "total_s"]].values.tolist() == [
        ["alertsieve (2 cores, 10 filters)", 5.5, 6.25, 11.75]
    ]
    theirs = table[table["source"] == "DMTN-028 (AWS)"]
    assert len(theirs) > 0
    assert (theirs["total_s"] - theirs["producing_s"] - theirs["consuming_s"]).abs().max() < 0.01


def test_resume_skips_only_successful_points_and_last_result_wins(tmp_path):
    out = results_file(tmp_path, "volume")
    append_result(out, {"experiment": "volume", "key": "a", "status": "ok", "n": 1})
    append_result(out, {"experiment": "volume", "key": "b", "status": "failed", "n": 1})
    append_result(out, {"experiment": "volume", "key": "a", "status": "ok", "n": 2})
    assert done_keys(out) == {"a"}
    assert sorted((r["key"], r["n"]) for r in load_results(tmp_path)) == [("a", 2), ("b", 1)]


def test_quantiles_interpolate_between_ranks_as_the_standard_library_does():
    values = [float(x) ** 1.5 for x in range(1, 101)]
    cuts = statistics.quantiles(values, n=100, method="inclusive")  # the 99 cut points
    q = quantiles(values)
    assert q == {
        "n": 100,
        "p50": round(cuts[49], 3),
        "p95": round(cuts[94], 3),
        "p99": round(cuts[98], 3),
        "max": 1000.0,
    }
    assert quantiles([]) == {"n": 0, "p50": None, "p95": None, "p99": None, "max": None}


def _line(batch_id, rows, end, output_time, matches=1):
    return {
        "batch_id": batch_id,
        "input_rows": rows,
        "quarantined_rows": 0,
        "batch_seconds": 2.0,
        "output_time": output_time,
        "matches": {"f": matches},
        "latency_s": {"p99": 1.5},
        "spark": {"endOffset": {"t": {"0": end}}},
    }


def test_consumer_summary_leaves_out_the_warm_up_and_times_each_visit():
    lines = [
        _line(0, 0, 0, 10.0, 0),
        _line(1, 5, 5, 20.0, 3),
        _line(2, 100, 105, 31.0),
        _line(3, 50, 155, 45.0),
        _line(4, 50, 205, 52.0),
    ]
    s = consumer_summary(lines, "t", [{0: 105}, {0: 205}], [28.0, 48.0], warm_end={0: 5})
    assert s["alerts"] == 200 and s["batches"] == 3 and s["matches"] == 3
    assert s["visit_filtered_s"] == [3.0, 4.0]
    assert s["filtered_s"] == 3.5
    assert s["busy_alerts_per_s"] == round(200 / 6.0, 1)


def test_fit_line_recovers_a_straight_line():
    intercept, slope = fit_line([1, 2, 4, 8], [3.0, 5.0, 9.0, 17.0])
    assert (round(intercept, 6), round(slope, 6)) == (1.0, 2.0)
    assert fit_line([1, 1], [2, 3]) is None


def _oracle(filters: int) -> list:
    """The job's filters written again by hand (tests/oracles.py), checked to be the ones it ran."""
    assert filters == len(BROKER_LIKE_TEN), "the quick experiments run the ten broker-like filters"
    assert [f.sql for f in bench_filters(filters)[0]] == [sql for sql, _ in BROKER_LIKE_TEN]
    return [test for _, test in BROKER_LIKE_TEN]


def _expected_matches(point) -> int:
    """What every filter job must have matched: its filters written by hand in plain Python over
    the same simulated alerts, decoded by nothing but the simulator."""
    tests = _oracle(point.filters)
    total = 0
    for v in range(point.visits):
        sim = AlertSimulator(
            SimulationConfig(
                alerts_per_visit=point.alerts_per_visit,
                max_history=10,
                max_forced=10,
                stamp_size=84 if point.stamps else 0,
                seed=VISIT_SEED + v,
            )
        )
        total += sum(test(a) for a in sim.visit_alerts(0) for test in tests)
    return total


@pytest.mark.slow
def test_quick_run_measures_every_point_exactly(quick_results):
    root, experiments, written = quick_results
    assert [r["status"] for r in written] == ["ok"] * sum(len(e.points) for e in experiments), [
        r.get("error") for r in written
    ]
    for r in written:
        point = Point(**{**r["point"], "sinks": tuple(r["point"]["sinks"])})
        if point.rate:
            _check_rate_point(r, point)
            continue
        alerts = point.alerts_per_visit * point.visits
        expected = _expected_matches(point)
        assert r["producer"]["acked"] == alerts
        assert len(r["consumers"]) == point.consumers
        for c in r["consumers"]:
            assert (c["alerts"], c["quarantined"], c["matches"]) == (alerts, 0, expected)
            assert all(f is not None and f > 0 for f in c["visit_filtered_s"])
        # every match of every job was published and read back from the output topics
        assert r["latency_s"]["n"] == expected * point.consumers
        assert r["latency_s"]["p50"] > 0
        use = r["resources"]
        assert use["filter_jobs"]["rss_max_mb"] > 100 and use["filter_jobs"]["samples"] > 0
        assert r["env"]["cores"] >= 1 and r["env"]["pyspark"]


def _check_rate_point(r: dict, point: Point) -> None:
    """A latency-against-rate point: every match of the alerts sent at the rate was published
    and read back, counted here in plain Python over the simulated alerts the sender cycles."""
    tests = _oracle(point.filters)
    alerts = list(AlertSimulator(SimulationConfig(alerts_per_visit=1000, seed=11)).visit_alerts(0))
    per_alert = [sum(t(a) for t in tests) for a in alerts]
    sent = int(point.rate * point.steady_s)
    expected = sum(per_alert[i % len(alerts)] for i in range(sent))
    assert r["sent"]["alerts"] == sent and expected > 0
    assert r["matches"] == expected and r["latency_s"]["n"] == expected
    # Kafka stamps whole milliseconds: Real-Time Mode's p50 can be 0
    assert (
        0 <= r["latency_s"]["p50"] <= r["latency_s"]["p99"] <= r["latency_s"]["max"]
        and r["latency_s"]["max"] > 0
    )
    assert r["resources"]["filter_jobs"]["samples"] > 0


@pytest.mark.slow
def test_a_second_run_resumes_with_nothing_to_do(quick_results, kafka):
    root, experiments, written = quick_results
    before = {e.name: results_file(root, e.name).read_text() for e in experiments}
    assert run_experiments(experiments, root, kafka.bootstrap_servers, progress=False) == []
    assert {e.name: results_file(root, e.name).read_text() for e in experiments} == before
    lines = [
        json.loads(t) for t in results_file(root, experiments[0].name).read_text().splitlines()
    ]
    assert len(lines) == len(experiments[0].points)


@pytest.mark.slow
def test_results_frame_and_dmtn028_table(quick_results):
    root, experiments, _ = quick_results
    frame = results_frame(root)
    assert sorted(frame["experiment"].unique()) == sorted(e.name for e in experiments)
    assert len(frame) == sum(len(e.points) for e in experiments)
    visits = frame[frame["experiment"] != "rate"]
    assert visits["produce_s"].gt(0).all() and visits["filtered_s"].gt(0).all()
    rate = frame[frame["experiment"] == "rate"]
    assert rate["latency_p99_s"].gt(0).all() and rate["sent_alerts_per_s"].gt(0).all()
    table = comparison_table(frame)
    assert set(table["source"]) == {"DMTN-028 (AWS)"}  # the quick scale has no 10,000-alert point
