"""`alertsieve bench stream`: the filter job's throughput on a pre-filled topic, with 1, 10 and 50
SQL filters and the same cuts as Python filters, against baselines measured in the same run on
the same topic:
(a) the ceiling, a plain consumer that only reads the bytes, (b) the seeds' way, a Python
consumer that decodes each alert with fastavro and runs the filters in Python, and (c) Spark
reading the bytes only into its noop sink, beside the job's decode + 10 filters into the same
sink (``alertsieve.bench.noop``). Then the history axis: topics whose alerts carry 0, 25 and 400
earlier detections (deep-drilling fields), the contributed light-curve filter over each against
Spark's bytes-only read of the same topic. Then the model axis (``alertsieve.bench.commands.models``):
real ZTF alerts with light curves, the job with and without ``scores.ztf_anomaly``, and the score
read by 1 and by 10 filters.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from alertsieve.alerts.schemas import LocalSchemaStore
from alertsieve.bench.baselines import plain_consume, seeds_way_consume
from alertsieve.bench.batches import visit_done_times
from alertsieve.bench.broker_filters import bench_filters, python_bench_filters
from alertsieve.bench.commands.latency import (
    FULL_LATENCY,
    QUICK_LATENCY,
    LatencyScale,
    latency_run,
)
from alertsieve.bench.commands.models import REAL_HISTORIES, model_axis
from alertsieve.bench.live_job import live_job
from alertsieve.bench.noop import decode_over_bytes
from alertsieve.bench.place import MANY_QUERIES, Bench, BenchTopic, bench_place, fill_topic
from alertsieve.errors import AlertsieveError
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.sim import VISIT_CADENCE_S
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job


def _rate(alerts: int, nbytes: int, seconds: float) -> dict:
    return {
        "alerts": alerts,
        "seconds": round(seconds, 3),
        "alerts_per_s": round(alerts / seconds, 1) if seconds else None,
        "mb_per_s": round(nbytes / 1e6 / seconds, 1) if seconds else None,
    }


def job_run(spark, cfg: JobConfig, warm: bool) -> dict:
    """One available-now run of the job over the whole topic: its steady rate over Spark's batch
    times (a cold JVM's first batch left out: it pays for class loading and code generation)."""
    start = time.perf_counter()
    lines = run_job(cfg, spark=spark)
    wall = time.perf_counter() - start
    steady = [b for b in (lines if warm or len(lines) < 2 else lines[1:]) if b["input_rows"]]
    steady_rows = sum(b["input_rows"] for b in steady)
    steady_s = sum(b["batch_seconds"] for b in steady)
    return {
        "filters": len(cfg.code_filters),
        "batches": len(lines),
        "alerts": sum(b["input_rows"] for b in lines),
        "wall_s": round(wall, 2),
        "steady_alerts_per_s": round(steady_rows / steady_s, 1),
        "batch_seconds": [b["batch_seconds"] for b in lines],
        "median_batch_s": round(median(b["batch_seconds"] for b in lines), 2),
        "matches": sum(sum(b["matches"].values()) for b in lines),
        "spark_add_batch_ms": [
            b.get("spark", {}).get("durationMs", {}).get("addBatch") for b in lines
        ],
    }


@dataclass(frozen=True)
class LiveScale:
    """Visits produced at a cadence while the job runs: ``visits`` of ``alerts_per_visit``, one
    every ``interval_s``, after ``warmup_s`` for the query's first (empty) batch and the JIT."""

    visits: int = 3
    interval_s: float = VISIT_CADENCE_S
    alerts_per_visit: int = 10_000
    warmup_s: float = 15.0


def live_rate(bench: Bench, scale: LiveScale, n_filters: int = 10) -> dict:
    """Visits produced at the survey's cadence while the job runs: how long after its first alert
    each visit is fully filtered, and the alert latency (output time - Kafka append time)."""
    from alertsieve.kafka.topics import create_topic

    topic = f"bench-live-{uuid.uuid4().hex[:8]}"
    create_topic(bench.bootstrap, topic, 4, config={"message.timestamp.type": "LogAppendTime"})
    cfg = JobConfig(
        bootstrap=bench.bootstrap,
        topic=topic,
        starting_offsets="latest",
        trigger="0",
        max_offsets_per_trigger=20_000,
        discover_filters=False,
        code_filters=bench_filters(n_filters)[0],
        metrics_path=None,
        output_prefix=f"{topic}-",
        sinks=["kafka"],
        checkpoint=str(bench.workdir / "live" / "ckpt"),
        schema_dir=str(bench.workdir / "schemas"),
        timeout_s=60 + scale.visits * scale.interval_s + 120,
    )
    with live_job(bench.spark, cfg) as job:
        _first_batch(bench.spark)  # its offsets resolved: from here every alert is read
        time.sleep(scale.warmup_s)
        firsts, ends = _visits_at_cadence(bench, topic, scale)
        deadline = time.time() + 90
        while time.time() < deadline:
            if visit_done_times(job.metrics.written, topic, ends[-1:])[0] is not None:
                break
            time.sleep(1)
    return _live_result(scale, n_filters, job.metrics.written, topic, firsts, ends)


def _first_batch(spark, timeout_s: float = 120.0) -> None:
    """Wait for the running query's first (empty) batch: where "latest" starts is settled then."""
    deadline = time.time() + timeout_s
    while not any(q.recentProgress for q in spark.streams.active) and time.time() < deadline:
        time.sleep(0.5)


def _visits_at_cadence(
    bench: Bench, topic: str, scale: LiveScale
) -> tuple[list[float], list[dict[int, int]]]:
    """Each visit produced at its time: (when its first alert was sent, the end offsets after it)."""
    from alertsieve.kafka.topics import end_offsets

    firsts, ends = [], []
    t0 = time.time()
    for v in range(scale.visits):
        time.sleep(max(0.0, t0 + v * scale.interval_s - time.time()))
        summary = produce(
            ProduceConfig(
                bootstrap=bench.bootstrap,
                topic=topic,
                visits=1,
                alerts_per_visit=scale.alerts_per_visit,
                interval_s=0,
                producers=2,
                progress=False,
                seed=100 + v,
                schema_dir=str(bench.workdir / "schemas"),
            )
        )
        if not summary.ok:
            raise AlertsieveError(f"live visit {v} lost alerts: {summary.as_dict()}")
        firsts.append(min(r.started_at for r in summary.reports))
        ends.append(end_offsets(bench.bootstrap, topic))
    return firsts, ends


def _live_result(
    scale: LiveScale, n_filters: int, lines: list[dict], topic: str, firsts: list, ends: list
) -> dict:
    done = visit_done_times(lines, topic, ends)
    busy = [x for x in lines if x["input_rows"]]
    return {
        "visits": scale.visits,
        "interval_s": scale.interval_s,
        "alerts_per_visit": scale.alerts_per_visit,
        "filters": n_filters,
        "visit_filtered_after_first_alert_s": [
            round(d - f, 2) if d else None for d, f in zip(done, firsts, strict=True)
        ],
        "batches": len(busy),
        "alert_latency_s": {
            "p50_median_over_batches": round(median(x["latency_s"]["p50"] for x in busy), 2)
            if busy
            else None,
            "p99_worst_batch": max(x["latency_s"]["p99"] for x in busy) if busy else None,
            "max": max(x["latency_s"]["max"] for x in busy) if busy else None,
        },
        "batches_detail": [
            {
                "rows": x["input_rows"],
                "seconds": x["batch_seconds"],
                "phases_s": x["phases_s"],
                "latency_s": x["latency_s"],
            }
            for x in busy
        ],
    }


#: The light curves of the history axis: none, a long one, a deep-drilling field's (real deep-field
#: LSSTCam alerts carry 300-390 earlier detections).
HISTORIES = (0, 25, 400)
#: The filter of the history axis: it reads features over the whole history, band by band.
HISTORY_FILTER = "periodic_variables"
#: LSST's average alert rate, alerts/s: 10,000 alerts per 39-s visit, 10 million in a night's
#: ~8.3 hours of observing.
LSST_AVERAGE_ALERTS_PER_S = (round(10_000 / VISIT_CADENCE_S), round(10_000_000 / 30_000))


def history_axis(
    bench: Bench, histories: tuple[int, ...], alerts: int, batch: int, repeats: int = 3
) -> list[dict]:
    """For each light-curve length: a topic of ``alerts`` that each carry that many earlier
    detections (deep-drilling fields; 0: none), and the contributed light-curve filter decoded and
    evaluated over it against Spark's bytes-only read of the same topic (noop sink, best of
    ``repeats``: ``decode_over_bytes``)."""
    from alertsieve.filtering.discovery import discover

    (light_curve,) = [f for f in discover() if f.name == HISTORY_FILTER]
    points = []
    for n in histories:
        simulation = {"deep_share": 1.0, "deep_history": n} if n else {"max_history": 0}
        filled = fill_topic(bench, f"history{n}", 1, alerts, **simulation)
        noop = decode_over_bytes(
            bench.spark,
            bench.bootstrap,
            filled.topic,
            str(bench.workdir / "schemas"),
            [light_curve],
            filled.produced.acked,
            batch,
            repeats,
        )
        rates = noop["alerts_per_s"]
        points.append(
            {
                "earlier_detections": n,
                "topic": filled.topic,
                "alerts": filled.produced.acked,
                "mean_alert_kb": filled.mean_alert_kb,
                "filter": light_curve.name,
                "bytes_only_alerts_per_s": rates["bytes_only"],
                "filter_alerts_per_s": rates["decode_view_and_filters"],
                "ratio_filter_over_bytes_only": noop["ratio_view_and_filters_over_bytes_only"],
                "filter_over_lsst_average": [
                    round(rates["decode_view_and_filters"] / r, 1)
                    for r in LSST_AVERAGE_ALERTS_PER_S
                ],
            }
        )
    return points


def bench_stream(
    bootstrap: str | None = None,
    visits: int = 3,
    alerts_per_visit: int = 10_000,
    filter_counts: tuple[int, ...] = (1, 10, 50),
    python_filter_counts: tuple[int, ...] = (1, 10),
    batch: int = 20_000,
    seeds_alerts: int = 3_000,
    live: LiveScale | None = LiveScale(),
    latency_triggers: tuple[str, ...] = ("realtime", "0"),
    latency: LatencyScale = FULL_LATENCY,
    histories: tuple[int, ...] = HISTORIES,
    history_alerts: int = 2_000,
    history_repeats: int = 3,
    model_alerts: Path | None = REAL_HISTORIES,
    model_rounds: int = 160,
    model_batch: int = 5_000,
) -> dict:
    """The benchmark of the module doc, as its JSON: a topic filled with ``visits``, the baselines,
    the job's SQL and Python runs, visits at the survey's cadence (``live``; None: skipped), the
    latency per trigger, the history axis (``histories``; empty: skipped) and the model axis
    (``model_alerts``, sent ``model_rounds`` times, in batches of ``model_batch``; None: skipped)."""
    with bench_place("stream", bootstrap, spark_conf=MANY_QUERIES) as bench:
        filled = fill_topic(bench, "stream", visits, alerts_per_visit)
        baselines = _baselines(filled, batch, seeds_alerts)
        # The first run of the session pays for JIT and class loading in its first batch.
        runs = [
            _job_run(filled, batch, f"sql{n}", bench_filters(n)[0], warm=i > 0)
            for i, n in enumerate(filter_counts)
        ]
        python_runs = [
            _job_run(filled, batch, f"py{n}", python_bench_filters(n)) for n in python_filter_counts
        ]
        live_run = live_rate(bench, live) if live else None
        latencies = [
            latency_run(bench.bootstrap, bench.spark, bench.workdir, t, latency)
            for t in latency_triggers
        ]
        by_history = history_axis(bench, histories, history_alerts, batch, history_repeats)
        models = (
            model_axis(bench, Path(model_alerts), model_rounds, model_batch)
            if model_alerts
            else None
        )
        return {
            "benchmark": "stream",
            "machine": bench.machine(),
            "topic": {
                **filled.facts(),
                "visits": visits,
                "alerts_per_visit": alerts_per_visit,
            },
            "max_offsets_per_trigger": batch,
            **_against_baselines(baselines, runs),
            "ours_python_filters": python_runs,
            "python_time_over_sql_time": _python_over_sql(runs, python_runs),
            "live_at_survey_cadence": live_run,
            "latency_input_append_to_output_append": latencies,
            "history_axis": {
                "lsst_average_alerts_per_s": LSST_AVERAGE_ALERTS_PER_S,
                "points": by_history,
            },
            "model_axis": models,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }


#: ``--quick``: one visit of 300 alerts in batches of 100, two SQL filter counts and one Python,
#: two visits 3 s apart while the job runs, seconds at the latency's rate, 100 alerts a history,
#: the real ZTF alerts twice for the model axis, in batches of 124.
QUICK = {
    "visits": 1,
    "alerts_per_visit": 300,
    "filter_counts": (1, 10),
    "python_filter_counts": (1,),
    "batch": 100,
    "seeds_alerts": 100,
    "live": LiveScale(visits=2, interval_s=3.0, alerts_per_visit=300, warmup_s=3.0),
    "latency": QUICK_LATENCY,
    "history_alerts": 100,
    "history_repeats": 1,
    "model_rounds": 2,
    "model_batch": 124,
}


@dataclass(frozen=True)
class _Baselines:
    """What the job is measured against, on the same topic (see the module doc)."""

    plain: dict  # (a) the ceiling: a plain consumer reading the bytes
    seeds: dict  # (b) the seeds' way: fastavro and the 10 filters in Python
    noop: dict  # (c) Spark reading the bytes into its noop sink, beside decode + 10 filters


def _baselines(filled: BenchTopic, batch: int, seeds_alerts: int) -> _Baselines:
    bench, topic, store_dir = filled.bench, filled.topic, filled.bench.workdir / "schemas"
    plain = plain_consume(bench.bootstrap, topic)
    ten, ten_tests = bench_filters(10)
    seeds = seeds_way_consume(
        bench.bootstrap, topic, LocalSchemaStore(store_dir), ten_tests, limit=seeds_alerts
    )
    noop = decode_over_bytes(
        bench.spark, bench.bootstrap, topic, str(store_dir), ten, filled.produced.acked, batch
    )
    return _Baselines(plain, seeds, noop)


def _job_run(filled: BenchTopic, batch: int, label: str, filters: list, warm: bool = True) -> dict:
    """``job_run`` of ``filters`` over the filled topic, with its own output topics and checkpoint
    (``label``), and its steady rate in MB/s."""
    cfg = filled.job_config(label, filters, batch, output_partitions=4)
    out = job_run(filled.bench.spark, cfg, warm)
    out["mb_per_s"] = round(out["steady_alerts_per_s"] * filled.mean_alert_kb / 1e3, 1)
    return out


def _against_baselines(baselines: _Baselines, runs: list[dict]) -> dict:
    """The baselines' rates and the job's SQL runs, with the 10-filter run's ratios to the first two."""
    plain, seeds = baselines.plain, baselines.seeds
    ten_run = next((r for r in runs if r["filters"] == 10), runs[0])
    return {
        "ceiling_plain_consumer": _rate(plain["alerts"], plain["bytes"], plain["seconds"]),
        "spark_noop_decode_over_bytes_only": baselines.noop,
        "seeds_way_fastavro_python_10_filters": _rate(
            seeds["alerts"], seeds["bytes"], seeds["seconds"]
        ),
        "ours": runs,
        "ratio_ours_10_filters_over_ceiling": round(
            ten_run["steady_alerts_per_s"] / (plain["alerts"] / plain["seconds"]), 2
        ),
        "ratio_ours_10_filters_over_seeds_way": round(
            ten_run["steady_alerts_per_s"] / (seeds["alerts"] / seeds["seconds"]), 2
        ),
    }


def _python_over_sql(runs: list[dict], python_runs: list[dict]) -> dict[str, float]:
    """{filters: the SQL run's rate over the Python run's}, for each count both ran."""
    return {
        str(p["filters"]): round(s["steady_alerts_per_s"] / p["steady_alerts_per_s"], 2)
        for s in runs
        for p in python_runs
        if s["filters"] == p["filters"]
    }
