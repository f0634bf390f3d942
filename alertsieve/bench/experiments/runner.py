"""Runs scaling experiments: for each point a fresh topic, the filter jobs started as their own
processes (each its own consumer group reading the whole stream), visits produced at the
cadence, and then what happened gathered into one result line: producer visit timings,
per-batch metrics, alert latency read back from the output topics, CPU and memory per role.

Raw measurements stay beside the results (``<results>/<experiment>/points/<key>/``), so a
notebook can look past the summary.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import yaml
from tqdm import tqdm

from alertsieve.bench.batches import batch_reaching
from alertsieve.bench.broker_filters import bench_filters, bench_job_settings
from alertsieve.bench.experiments.matrix import (
    Experiment,
    Point,
    append_result,
    consumer_summary,
    done_keys,
    headline,
    producer_summary,
    results_file,
)
from alertsieve.bench.machine import describe
from alertsieve.bench.outputs import OutputReader, quantiles
from alertsieve.bench.process import JobProcess, children_except, wait_for
from alertsieve.bench.rate import APPEND_TIME, alert_pool, at_rate, send_at_rate
from alertsieve.bench.resources import ResourceSampler
from alertsieve.errors import AlertsieveError
from alertsieve.kafka import embedded
from alertsieve.kafka.topics import create_topic, delete_topics, end_offsets, topics_with_prefix
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.publish import contract
from alertsieve.stream.metrics import read_lines

log = logging.getLogger(__name__)


class PointFailed(AlertsieveError, RuntimeError):
    """A point that could not be measured; the reason goes into its result line."""


class FilterJob(JobProcess):
    """One filter job (``alertsieve filter``) with its own config, checkpoint, metrics file and log."""

    def __init__(self, index: int, folder: Path):
        super().__init__(
            f"filter job {index}",
            [
                sys.executable,
                "-m",
                "alertsieve.cli",
                "filter",
                "--config",
                str(folder / "job.yaml"),
            ],
            folder / "job.log",
        )
        self.index, self.folder = index, folder

    @property
    def metrics_path(self) -> Path:
        return self.folder / "metrics.jsonl"

    def ready(self) -> bool:
        """The query has committed its first (empty) batch: it is reading the topic."""
        return (self.folder / "checkpoint" / "commits" / "0").exists()

    def lines(self) -> list[dict]:
        return read_lines(self.metrics_path)


def start_filter_job(
    index: int, folder: Path, point: Point, bootstrap: str, topic: str, store_dir: Path
) -> FilterJob:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        **bench_job_settings(
            point.filters,
            bootstrap,
            topic,
            folder,
            trigger=point.trigger,
            max_offsets_per_trigger=point.max_offsets_per_trigger,
            output_prefix=f"{topic}-c{index}-",
            sinks=list(point.sinks),
            schema_dir=str(store_dir),
        ),
        "spark_conf": {"spark.ui.enabled": "false"},
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    job = FilterJob(index, folder)
    job.start()
    return job


def _all(jobs: list[FilterJob], done) -> Callable[[], bool]:
    return lambda: all(done(j) for j in jobs)


def output_latencies(bootstrap: str, topics: list[str], warm_end: dict[int, int]) -> list[float]:
    """Seconds from the alert's append to the input topic (a header the job writes) to its
    publication on a filter's output topic, for every published match of the measured visits
    (source offsets below ``warm_end`` are the warm-up's)."""
    with OutputReader(bootstrap, topics) as reader:
        if not reader.read_to_end(60):
            raise PointFailed(
                f"read {reader.read} messages of output topics {', '.join(topics)}: not to their end"
            )
    return [
        r.latency_ms / 1e3
        for r in reader.records
        if r.source_offset >= warm_end[r.source_partition]
    ]


#: Seeds of the simulated visits: the measured visit v is seed VISIT_SEED + v, visit 0 of it.
VISIT_SEED = 1000
WARMUP_SEED = 999
WARMUP_ALERTS = 100


def _produce_visit(
    point: Point, bootstrap: str, topic: str, store_dir: Path, seed: int, alerts: int
):
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic,
            visits=1,
            alerts_per_visit=alerts,
            interval_s=0,
            producers=point.producers,
            partitions=point.partitions,
            stamp_size=84 if point.stamps else 0,
            seed=seed,
            progress=False,
            schema_dir=str(store_dir),
        )
    )
    if not summary.ok:
        raise PointFailed(f"visit of seed {seed} was not fully acknowledged: {summary.line()}")
    return summary


def _reached(job: FilterJob, topic: str, end: dict) -> bool:
    return batch_reaching(job.lines(), topic, end) is not None


def run_point(
    experiment: str, point: Point, bootstrap: str, folder: Path, store_dir: Path, broker_pids
) -> dict:
    """Measure one point; raises PointFailed with the reason when it cannot."""
    topic = f"exp-{experiment}-{point.key}-{uuid.uuid4().hex[:6]}"
    create_topic(
        bootstrap, topic, point.partitions, config={"message.timestamp.type": "LogAppendTime"}
    )
    jobs: list[FilterJob] = []
    try:
        jobs = [
            start_filter_job(i, folder / f"consumer-{i}", point, bootstrap, topic, store_dir)
            for i in range(point.consumers)
        ]
        wait_for(
            _all(jobs, FilterJob.ready),
            "reading the topic",
            120 + 30 * point.consumers,
            jobs,
            PointFailed,
        )
        roles = {
            "broker": broker_pids,
            "filter_jobs": lambda: [pid for j in jobs for pid in j.pids()],
            "producers": lambda: children_except(
                jobs, broker_pids()
            ),  # produce() spawns them per visit
        }
        # A small visit first, not measured: the jobs' first batch with data pays for class
        # loading and code generation (~8 s here), which no later visit does.
        _produce_visit(point, bootstrap, topic, store_dir, WARMUP_SEED, WARMUP_ALERTS)
        warm_end = end_offsets(bootstrap, topic)
        wait_for(
            _all(jobs, lambda j: _reached(j, topic, warm_end)),
            "done with the warm-up visit",
            120,
            jobs,
            PointFailed,
        )
        reports: list[dict] = []
        ends: list[dict[int, int]] = []
        with ResourceSampler(roles) as sampler:
            t0 = time.time()
            for v in range(point.visits):
                time.sleep(max(0.0, t0 + v * point.interval_s - time.time()))
                summary = _produce_visit(
                    point, bootstrap, topic, store_dir, VISIT_SEED + v, point.alerts_per_visit
                )
                reports += [{**asdict(r), "visit_index": v} for r in summary.reports]
                ends.append(end_offsets(bootstrap, topic))
            drain_s = 120 + point.alerts_per_visit * point.visits * point.consumers / 500
            wait_for(
                _all(jobs, lambda j: _reached(j, topic, ends[-1])),
                "done with the last visit",
                drain_s,
                jobs,
                PointFailed,
            )
        resources = sampler.summary()
        for job in jobs:
            job.stop()
        firsts = [r["first_alert_at"] for r in producer_summary(reports)["visits"]]
        consumers = [consumer_summary(j.lines(), topic, ends, firsts, warm_end) for j in jobs]
        outputs = topics_with_prefix(bootstrap, f"{topic}-c")
        latency = quantiles(output_latencies(bootstrap, outputs, warm_end))
        return {
            "topic": topic,
            "producer": producer_summary(reports),
            "consumers": consumers,
            "latency_s": latency,
            "resources": resources,
            "warmup_end_offsets": warm_end,
            "visit_end_offsets": ends,
        }
    finally:
        for job in jobs:
            job.stop()
        delete_topics(bootstrap, [topic, *topics_with_prefix(bootstrap, f"{topic}-c")])


def run_rate_point(
    experiment: str, point: Point, bootstrap: str, folder: Path, store_dir: Path, broker_pids
) -> dict:
    """Latency against alert rate: alerts sent steadily at ``point.rate`` for ``point.steady_s``
    seconds while the job runs (its trigger: micro-batch or Real-Time Mode), and the latency of
    every match they produce, read back from the output topics as they fill. Past the rate the
    job can sustain, a backlog grows and so does the latency: the knee of the curve."""
    topic = f"exp-{experiment}-{point.key}-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, point.partitions, config=APPEND_TIME)
    filters, tests = bench_filters(point.filters)
    outputs = [contract.filter_topic(f, f"{topic}-c0-") for f in filters]
    for t in outputs:  # before the job makes them: the broker stamps each record's append time
        create_topic(bootstrap, t, 1, config=APPEND_TIME)
    pool, matches = alert_pool(1000, 11, tests)
    reader = OutputReader(bootstrap, outputs)
    job = start_filter_job(0, folder / "consumer-0", point, bootstrap, topic, store_dir)
    try:
        # Warm-up, not measured: class loading, code generation, connections. The job reads from
        # the earliest offset, so this also waits for it to start (a Real-Time Mode query writes
        # nothing to its checkpoint until its first checkpoint interval ends).
        warm = len(pool)
        send_at_rate(bootstrap, topic, pool, warm, None)
        warm_end = end_offsets(bootstrap, topic)
        if len(reader.wait_for({}, warm_end, sum(matches), 180)) < sum(matches):
            raise PointFailed(f"the warm-up's matches were not all published:\n{job.tail(15)}")
        count = int(point.rate * point.steady_s)
        roles = {"broker": broker_pids, "filter_jobs": job.pids, "producers": lambda: [os.getpid()]}
        with ResourceSampler(roles) as sampler:
            run = at_rate(
                bootstrap, topic, (pool, matches), reader, count, point.rate, 120 + count / 200
            )
        if len(run.seen) < run.expected:
            raise PointFailed(
                f"{len(run.seen)} of {run.expected} matches published:\n{job.tail(15)}"
            )
        return {
            "topic": topic,
            "sent": {
                "alerts": count,
                "seconds": round(run.sent_s, 3),
                "alerts_per_s": round(count / run.sent_s, 1),
            },
            "mean_alert_kb": round(sum(map(len, pool)) / len(pool) / 1e3, 1),
            "matches": run.expected,
            "latency_s": run.latency_s(),
            "caught_up_after_last_ack_s": run.caught_up_after_last_ack_s(),
            "resources": sampler.summary(),
            "warmup_end_offsets": warm_end,
        }
    finally:
        reader.close()
        job.stop()
        delete_topics(bootstrap, [topic, *outputs])


def run_experiments(
    experiments: list[Experiment],
    results_root: str | Path,
    bootstrap: str | None = None,
    progress: bool = True,
) -> list[dict]:
    """Every point not already done (resumable), one result line each, appended as it ends;
    one embedded broker serves them all unless ``bootstrap`` names a Kafka to use."""
    workdir = Path(tempfile.mkdtemp(prefix="alertsieve-experiment-"))
    cluster = embedded.start(workdir / "kafka") if bootstrap is None else None
    try:
        if cluster is not None:
            bootstrap = cluster.bootstrap_servers
            env = describe("embedded, same machine")
            broker_pids = lambda: [n.pid for n in cluster.nodes if n.pid]  # noqa: E731
        else:
            env = describe(bootstrap)
            broker_pids = lambda: []  # noqa: E731
        written = []
        for experiment in experiments:
            out = results_file(results_root, experiment.name)
            done = done_keys(out)
            todo = [p for p in experiment.points if p.key not in done]
            bar = tqdm(todo, desc=experiment.name, unit="point", disable=not progress)
            for point in bar:
                bar.set_postfix_str(point.label())
                result = _measure(experiment, point, bootstrap, out.parent, workdir, broker_pids)
                result["env"] = env
                append_result(out, result)
                written.append(result)
        return written
    finally:
        if cluster is not None:
            embedded.stop(workdir / "kafka")
        shutil.rmtree(workdir, ignore_errors=True)


def _measure(
    experiment: Experiment, point: Point, bootstrap, folder: Path, workdir: Path, broker_pids
) -> dict:
    started = time.time()
    result = {
        "experiment": experiment.name,
        "dimension": experiment.dimension,
        "key": point.key,
        "point": point.model_dump(mode="json"),
        "started_at": round(started, 3),
    }
    try:
        run = run_rate_point if point.rate else run_point
        result |= run(
            experiment.name,
            point,
            bootstrap,
            folder / "points" / point.key,
            workdir / "schemas",
            broker_pids,
        )
        result["status"] = "ok"
        result["headline"] = headline(result)
    except PointFailed as e:
        result |= {"status": "failed", "error": str(e)}
        log.warning("%s: point %s failed: %s", experiment.name, point.label(), e)
    result["seconds"] = round(time.time() - started, 1)
    return result
