"""`alertsieve bench soak`: the job for a long run at the survey's pace, with everything it runs
beside, watched for what only time shows (memory, files and latency that grow) and checked at the
end for what it published.

Producers send visits of 10,000 simulated alerts every 39 s (DMTN-028's model; ``rate`` instead
sends that many alerts every second). The filter job (K broker-like SQL filters, micro-batches or
Real-Time Mode, Kafka outputs) and the archive (its own process, into Delta) run as separate
processes, so one can be killed -9 and restarted from its checkpoint (``kill_after_s``). Every few
seconds a sample: CPU and resident memory per part (job, archive, broker, producers), the sizes and
file counts of the checkpoints and the Delta tables; every few minutes the heap of each JVM after a
full GC; and, read back from the output topics as they fill, the latency of every match (input
append to output append), summarised per minute. At the end, after the archive has drained (in
the one Spark session of the checks):
``alertsieve listen --verify`` over every output topic against the counts topic, and the Delta
``matches`` table against plain Python over the simulated alerts of a sample of visits
(regenerated from their seeds, decoded by nothing but the simulator).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import yaml

from alertsieve.bench.broker_filters import bench_filters, bench_job_settings
from alertsieve.bench.outputs import OutputReader, quantiles
from alertsieve.bench.process import JobProcess, children_except, wait_for
from alertsieve.bench.resources import ResourceSampler
from alertsieve.bench.soak.plan import SoakPlan
from alertsieve.errors import AlertsieveError
from alertsieve.kafka.topics import create_topic, end_offsets
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.publish import contract
from alertsieve.spark.session import command_session

log = logging.getLogger(__name__)

TOPIC = "soak"
PREFIX = "soak-"
SEED = 2026
#: The input keeps a quarter of an hour: a night of ~100 KB alerts would not fit on the disk.
INPUT_CONFIG = {
    "message.timestamp.type": "LogAppendTime",
    "retention.ms": str(15 * 60 * 1000),
    "max.message.bytes": str(16 * 1024 * 1024),
}


class SoakFailed(AlertsieveError, RuntimeError):
    """A part of the soak stopped before its end (its log's last lines follow)."""


def job_settings(plan: SoakPlan, bootstrap: str, folder: Path) -> dict:
    """The job's settings file: the soak's filters, its folders, Kafka outputs and the archive's
    Delta path (read by the archive process)."""
    trigger = "realtime=30 seconds" if plan.trigger == "realtime" else "0"
    return {
        **bench_job_settings(
            plan.filters,
            bootstrap,
            TOPIC,
            folder,
            trigger=trigger,
            max_offsets_per_trigger=20_000,
            output_prefix=PREFIX,
            sinks=["kafka"],
            schema_dir=str(folder / "schemas"),
        ),
        # The archive keeps each match's view fields, not its ~100 KB message: a night of those
        # beside the topics' copies would not fit on this machine's disk.
        "delta_messages": False,
        "delta_upkeep_seconds": plan.upkeep_s,
        "delta_retention_hours": plan.retention_hours,
    }


def folder_size(path: Path) -> dict:
    """Bytes and files below ``path`` (0 and 0 before it exists). The job writes while this
    counts: a file (or folder) renamed or deleted between listing and reading is not counted."""
    sizes = []
    for folder, _, names in os.walk(path):  # os.walk skips what vanishes under it
        for name in names:
            try:
                sizes.append(os.stat(os.path.join(folder, name)).st_size)
            except FileNotFoundError:
                continue
    return {"mb": round(sum(sizes) / 2**20, 2), "files": len(sizes)}


def heap_after_gc_mb(pid: int) -> float | None:
    """The JVM's live objects right after a full GC: the total of ``jcmd GC.class_histogram``,
    counted in the collection's own pause. (``GC.run`` then ``GC.heap_info`` read 425 and 619 MB
    among ~300 MB readings in a million-alert run: a visit's allocations between the two.)"""
    try:
        histogram = subprocess.run(
            ["jcmd", str(pid), "GC.class_histogram"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    total = re.search(r"^Total\s+\d+\s+(\d+)\s*$", histogram, re.MULTILINE)
    return round(int(total.group(1)) / 2**20, 1) if total else None


class LatencyLog:
    """Every match read back from the output topics as they fill, written as it comes to
    ``path`` (a line of: seconds into the run when it was published, its latency in ms), so a
    run's latency can be summarised again from its folder."""

    def __init__(self, bootstrap: str, topics: list[str], started: float, path: Path):
        self.reader = OutputReader(bootstrap, topics)
        self.started, self.path = started, path
        self._written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.reader.poll(1.0)
            self._write_new()

    def _write_new(self) -> None:
        new = self.reader.records[self._written :]
        self._written += len(new)
        with open(self.path, "a") as f:
            f.writelines(
                f"{r.output_ms / 1e3 - self.started:.3f} {r.latency_ms:.1f}\n" for r in new
            )

    def read_to_end(self, timeout_s: float) -> None:
        """Stop following the topics and read what is left on them (after the job has stopped)."""
        self._stop.set()
        self._thread.join(10)
        if not self.reader.read_to_end(timeout_s):
            raise SoakFailed(f"the output topics were not read to their end in {timeout_s:.0f} s")
        self._write_new()

    def published(self) -> dict[str, set[tuple[int, int]]]:
        """Per output topic, the input (partition, offset) of every match published on it."""
        out: dict[str, set[tuple[int, int]]] = {}
        for r in self.reader.records:
            out.setdefault(r.topic, set()).add((r.source_partition, r.source_offset))
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.reader.close()


def read_latencies(folder: Path) -> list[tuple[float, float]]:
    """(seconds into the run, latency ms) of every match, as ``LatencyLog`` wrote them."""
    path = folder / "latency.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(float(t), float(ms)) for t, ms in (line.split() for line in lines)]


def per_minute(latencies: list[tuple[float, float]]) -> list[dict]:
    minutes: dict[int, list[float]] = {}
    for t, ms in latencies:
        minutes.setdefault(int(t // 60), []).append(ms)
    return [{"minute": m, **quantiles(v)} for m, v in sorted(minutes.items())]


def window(latencies: list[tuple[float, float]], start_s: float, end_s: float) -> dict:
    """Latency quantiles (ms) of the matches published between these seconds of the run."""
    return quantiles([ms for t, ms in latencies if start_s <= t < end_s])


def summarize(folder: Path, sent_for_s: float, killed_at_s: float | None = None) -> dict:
    """A run's growth and per-minute latency from its folder (again at any time after)."""
    latencies = read_latencies(folder)
    early, late = windows(sent_for_s)
    samples = read_samples(folder)
    found = growth(
        samples, window(latencies, *early), window(latencies, *late), early, late, killed_at_s
    )
    active = (
        delta_active_files(folder / "delta" / "matches", run_started(samples)) if samples else []
    )
    if active:
        at_early = [n for t, n in active if t <= early[1]] or [active[0][1]]
        found["sizes"]["delta_active_files"] = {
            "early": at_early[-1],
            "end": active[-1][1],
            "max": max(n for _, n in active),
        }
    return {"growth": found, "latency_per_minute": per_minute(latencies)}


def run_started(samples: list[dict]) -> float:
    """The Unix time of the run's first visit (a sample's ``t_s`` counts from it)."""
    return samples[0]["at"] - samples[0]["t_s"]


def delta_active_files(table: Path, since: float) -> list[tuple[float, int]]:
    """(seconds from ``since``, a Unix time, to a commit; data files the table references after
    it), replayed from the Delta log's JSON commits: what a reader sees. The files on disk are
    more until VACUUM deletes those that compaction replaced (docs/reliability.md)."""
    active: set[str] = set()
    out = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        when = commit.stat().st_mtime
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                active.add(action["add"]["path"])
            elif "remove" in action:
                active.discard(action["remove"]["path"])
            elif "commitInfo" in action and action["commitInfo"].get("timestamp"):
                when = action["commitInfo"]["timestamp"] / 1000
        out.append((round(when - since, 1), len(active)))
    return out


def run_soak(plan: SoakPlan, bootstrap: str, folder: Path) -> dict:
    """The soak on the broker at ``bootstrap``, its files in ``folder``; its samples are appended
    to ``folder/samples.jsonl`` as they are taken. Returns the summary (``summarize``)."""
    folder.mkdir(parents=True, exist_ok=True)
    create_topic(bootstrap, TOPIC, 2, config=INPUT_CONFIG)
    settings = job_settings(plan, bootstrap, folder)
    job, archive = _parts(settings, folder)
    topics = [contract.filter_topic(f, PREFIX) for f in bench_filters(plan.filters)[0]]
    job.start()
    wait_for(
        lambda: (folder / "checkpoint" / "offsets").exists(),
        "the job started",
        300,
        [job],
        SoakFailed,
    )
    archive.start()
    started = time.time()
    latency = LatencyLog(bootstrap, topics, started, folder / "latency.txt")
    producer, produced = _sending(plan, bootstrap, settings["schema_dir"])
    try:
        try:
            killed_at = _watch(plan, folder, job, archive, producer, started)
            sent_for_s = time.time() - started
            summary = produced["summary"]
            if not summary.ok:
                raise SoakFailed(f"producers lost alerts: {summary.as_dict()}")
            _stop_at_the_end(bootstrap, folder, job, archive, plan.upkeep_s < sent_for_s / 2)
        finally:
            job.kill()
            archive.kill()
        # One Spark session for the checks at the end: the archive's drain, then Delta's rows.
        with command_session("alertsieve-soak-check", conf={"spark.ui.enabled": "false"}) as spark:
            _drain(spark, folder)
            latency.read_to_end(600)
            published = {
                f.name: latency.published().get(contract.filter_topic(f, PREFIX), set())
                for f in bench_filters(plan.filters)[0]
            }
            return {
                "plan": asdict(plan),
                "produced": summary.acked,
                "killed_at_s": killed_at,
                "sent_for_s": round(sent_for_s, 1),
                **summarize(folder, sent_for_s, killed_at),
                "verify": verify_topics(bootstrap, topics, settings["schema_dir"]),
                "delta": check_delta(plan, folder, published, spark),
                "samples": str(folder / "samples.jsonl"),
            }
    finally:
        latency.close()


def _parts(settings: dict, folder: Path) -> tuple[JobProcess, JobProcess]:
    """The filter job and the archive, as processes of their own over the same settings file."""
    config = folder / "job.yaml"
    config.write_text(yaml.safe_dump(settings, sort_keys=False))
    cli = [sys.executable, "-m", "alertsieve.cli"]
    job = JobProcess(
        "job", [*cli, "filter", "--config", str(config), "--master", "local[2]"], folder / "job.log"
    )
    archive = JobProcess(
        "archive",
        [*cli, "archive", "--config", str(config), "--master", "local[1]", "--sink", "kafka,delta"],
        folder / "archive.log",
    )
    return job, archive


def _sending(plan: SoakPlan, bootstrap: str, schema_dir: str) -> tuple[threading.Thread, dict]:
    """The producers sending the plan's visits at its pace, on a thread (started); the dict gets
    their summary (``"summary"``) when they are done."""
    produced: dict = {}

    def send() -> None:
        produced["summary"] = produce(
            ProduceConfig(
                bootstrap=bootstrap,
                topic=TOPIC,
                visits=plan.visits,
                alerts_per_visit=plan.per_visit,
                interval_s=plan.every_s,
                producers=2,
                partitions=2,
                seed=SEED,
                progress=False,
                schema_dir=schema_dir,
            )
        )

    producer = threading.Thread(target=send, daemon=True)
    producer.start()
    return producer, produced


def _watch(
    plan: SoakPlan,
    folder: Path,
    job: JobProcess,
    archive: JobProcess,
    producer: threading.Thread,
    started: float,
) -> float | None:
    """While the producers send: a sample every ``plan.sample_s`` (heaps every
    ``plan.heap_every_s``), the job killed -9 and restarted at ``plan.kill_after_s``; a part that
    exits fails the soak. Returns when the job was killed (seconds in), if it was."""
    roles = {
        "job": job.pids,
        "archive": archive.pids,
        "broker_and_producers": lambda: children_except([job, archive]),
    }
    sampler = ResourceSampler(roles, interval_s=plan.sample_s)
    killed_at = None
    last_heap = 0.0
    while producer.is_alive():
        for part in (job, archive):
            if not part.alive():
                raise SoakFailed(f"the {part.name} exited ({part.returncode}):\n{part.tail()}")
        now = time.time() - started
        if plan.kill_after_s is not None and killed_at is None and now >= plan.kill_after_s:
            job.kill()
            killed_at = round(now, 1)
            log.info("soak: the job killed -9 at %.0f s; restarting from its checkpoint", now)
            job.start()
        sampler.sample()
        sample = {"t_s": round(now, 1), "at": round(started + now, 1), **_sizes(folder)}
        sample["parts"] = sampler.last()
        if now - last_heap >= plan.heap_every_s:
            last_heap = now
            sample["heap_after_gc_mb"] = {
                p.name: heap_after_gc_mb(p.jvm()) for p in (job, archive) if p.jvm()
            }
        _append(folder / "samples.jsonl", sample)
        time.sleep(plan.sample_s)
    producer.join()
    return killed_at


def _stop_at_the_end(
    bootstrap: str, folder: Path, job: JobProcess, archive: JobProcess, upkeep_due: bool
) -> None:
    """The job reads to the input's end and stops; the archive stops where it is, once its
    upkeep has run when one was due within the run (``upkeep_due``: its interval is well inside
    the sending). A batch of it that is still running at its stop is cancelled, so on a slow
    machine its only batches after the interval could otherwise all be cut short."""
    wait_for(
        lambda: _read_to(folder, end_offsets(bootstrap, TOPIC)),
        "the job read every alert",
        600,
        [job],
        SoakFailed,
    )
    job.stop(120)
    if upkeep_due:
        log_file = folder / "archive.log"
        wait_for(
            lambda: UPKEEP_LINE in log_file.read_text(errors="replace"),
            "the archive's upkeep ran",
            300,
            [archive],
            SoakFailed,
        )
    archive.stop(120)


def _drain(spark, folder: Path) -> None:
    """What the stopped archive had not yet archived, in one available-now run of the archive in
    ``spark`` (the session of the checks that follow; a process of its own would start a JVM)."""
    from alertsieve.stream.config import load_config
    from alertsieve.stream.job import run_archive

    cfg = load_config(folder / "job.yaml", {"sinks": ["kafka", "delta"], "available_now": True})
    try:
        run_archive(cfg, spark)
    except AlertsieveError as e:
        raise SoakFailed(f"draining the archive failed: {e}") from e


#: What the archive logs at each table's upkeep (alertsieve.stream.archive_upkeep).
UPKEEP_LINE = "archive upkeep: matches: "

#: The first minute is the job's warm-up (class loading, the JIT); growth is judged after it.
WARMUP_S = 60.0
#: The windows compared: the first and the last ten minutes of sending (shorter runs: thirds).
WINDOW_S = 600.0


def windows(sent_for_s: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The early and the late window of a run that sent for ``sent_for_s`` seconds."""
    length = min(WINDOW_S, (sent_for_s - WARMUP_S) / 3) if sent_for_s > WARMUP_S else sent_for_s / 3
    start = WARMUP_S if sent_for_s > WARMUP_S else 0.0
    return (start, start + length), (sent_for_s - length, sent_for_s)


def read_samples(folder: Path) -> list[dict]:
    path = folder / "samples.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def growth(
    samples: list[dict],
    first: dict,
    last: dict,
    early: tuple,
    late: tuple,
    killed_at_s: float | None = None,
) -> dict:
    """What grew between the early window and the end: latency (p99 of the last window over the
    first's), each JVM's heap after a full GC (its last value over its first a window's length
    into its life: "its value after 10 minutes" in a full run), and the files the run leaves
    (checkpoints, Delta data files and log).

    A job killed at ``killed_at_s`` has two JVMs, each compared with itself: ``job`` up to the
    kill, ``job_restarted`` from its restart to the end."""

    def ratio(a, b):
        return round(a / b, 2) if a is not None and b else None

    settled_after_s = early[1] - early[0]

    def heap(part: str, born: float, end: float) -> dict | None:
        values = [
            (s["t_s"], s["heap_after_gc_mb"][part])
            for s in samples
            if s.get("heap_after_gc_mb", {}).get(part) is not None and born <= s["t_s"] < end
        ]
        after = [v for t, v in values if t >= born + settled_after_s] or [v for _, v in values]
        return (
            {"early_mb": after[0], "end_mb": after[-1], "ratio": ratio(after[-1], after[0])}
            if after
            else None
        )

    forever = float("inf")
    lives = {"job": (0.0, forever), "archive": (0.0, forever)}
    if killed_at_s is not None:
        lives.update(job=(0.0, killed_at_s), job_restarted=(killed_at_s, forever))
    heaps = {
        name: found
        for name, life in lives.items()
        if (found := heap(name.removesuffix("_restarted"), *life)) is not None
    }
    at = [s for s in samples if s["t_s"] >= early[1]] or samples
    sizes = {}
    for key in ("checkpoint", "archive_checkpoint", "delta_matches"):
        if at:
            sizes[key] = {
                "early": at[0][key],
                "end": samples[-1][key],
                "max_files": max(s[key]["files"] for s in samples),
            }
    if at:
        sizes["delta_log_files"] = {
            "early": at[0]["delta_log_files"],
            "end": samples[-1]["delta_log_files"],
        }
        data = [s.get("delta_data_files", 0) for s in samples]
        sizes["delta_data_files"] = {
            "early": at[0].get("delta_data_files", 0),
            "end": data[-1],
            "max": max(data),
            # how often the count fell between two samples: the upkeep's VACUUM at work (files
            # are only ever added otherwise)
            "falls": sum(b < a for a, b in zip(data, data[1:], strict=False)),
        }
    return {
        "windows_s": {"early": early, "late": late},
        "latency_ms": {"early": first, "late": last},
        "p99_late_over_early": ratio(last.get("p99"), first.get("p99")),
        "heap_after_gc": heaps,
        "sizes": sizes,
    }


def _read_to(folder: Path, end: dict[int, int]) -> bool:
    from alertsieve.bench.batches import batch_reaching
    from alertsieve.stream.metrics import read_lines

    path = folder / "metrics.jsonl"
    return path.exists() and batch_reaching(read_lines(path), TOPIC, end) is not None


def _sizes(folder: Path) -> dict:
    return {
        "checkpoint": folder_size(folder / "checkpoint"),
        "archive_checkpoint": folder_size(folder / "checkpoint-archive"),
        "delta_matches": folder_size(folder / "delta" / "matches"),
        "delta_log_files": folder_size(folder / "delta" / "matches" / "_delta_log")["files"],
        "delta_data_files": data_files(folder / "delta" / "matches"),
    }


def data_files(table: Path) -> int:
    """The table's data files on disk, those compaction replaced and VACUUM has not removed yet
    included (the log's own files apart)."""
    return sum(1 for f in table.rglob("*.parquet") if "_delta_log" not in f.parts)


def _append(path: Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def verify_topics(bootstrap: str, topics: list[str], schema_dir: str) -> dict:
    """``alertsieve listen --verify`` over every output topic: its verdict line and exit code."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "alertsieve.cli",
            "listen",
            "--bootstrap",
            bootstrap,
            "--topic",
            ",".join(topics),
            "--from-beginning",
            "--until-end",
            "--verify",
            "--counts-topic",
            f"{PREFIX}counts",
            "--schema-dir",
            schema_dir,
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    lines = done.stdout.strip().splitlines()
    return {"exit_code": done.returncode, "verdict": lines[-1] if lines else done.stderr[-500:]}


def check_delta(
    plan: SoakPlan, folder: Path, published: dict[str, set[tuple[int, int]]], spark
) -> dict:
    """The Delta ``matches`` table, two ways. Over the whole run, against what the job published
    (``published``: per filter, the input (partition, offset) of each match read back from its
    topic, which ``listen --verify`` checks against the counts): every match archived, once, under
    its filter. On a sample of visits, against plain Python over their simulated alerts
    (regenerated from their seeds): for each filter exactly the alerts its Python twin selects."""
    from alertsieve.alerts.replay import alert_key
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    filters, tests = bench_filters(plan.filters)
    step = max(1, plan.visits // plan.oracle_visits)
    visits = list(range(0, plan.visits, step))[: plan.oracle_visits]
    sim = AlertSimulator(
        SimulationConfig(
            alerts_per_visit=plan.per_visit,
            max_history=10,
            max_forced=10,
            seed=SEED,
            cadence_s=plan.every_s,
        )
    )
    expected: dict[str, set[str]] = {f.name: set() for f in filters}
    ids: set[str] = set()
    for v in visits:
        for alert in sim.visit_alerts(v):
            key = alert_key(alert)
            ids.add(key)
            for f, test in zip(filters, tests, strict=True):
                if test(alert):
                    expected[f.name].add(key)
    table = spark.read.format("delta").load(str(folder / "delta" / "matches"))
    rows = table.select("alert_id", "partition", "offset", "filters").collect()
    counts: dict[str, int] = {}
    got: dict[str, set[str]] = {f.name: set() for f in filters}
    archived: dict[str, set[tuple[int, int]]] = {f.name: set() for f in filters}
    for r in rows:
        counts[r["alert_id"]] = counts.get(r["alert_id"], 0) + 1
        for name in r["filters"]:
            archived.setdefault(name, set()).add((r["partition"], r["offset"]))
            if r["alert_id"] in ids:
                got.setdefault(name, set()).add(r["alert_id"])
    return {
        "rows": len(rows),
        "alerts_more_than_once": sum(1 for n in counts.values() if n > 1),
        "matches_archived": sum(len(r["filters"]) for r in rows),
        "matches_published": sum(len(v) for v in published.values()),
        "filters_unlike_their_topic": sorted(
            n for n in published if published[n] != archived.get(n, set())
        ),
        "sample": {
            "visits": visits,
            "alerts": len(ids),
            "matches": sum(len(v) for v in expected.values()),
            "mismatched_filters": sorted(n for n in expected if expected[n] != got.get(n, set())),
        },
    }


def soak(plan: SoakPlan, out: str, bootstrap: str | None = None) -> dict:
    """`alertsieve bench soak`: ``run_soak`` on an embedded broker (or ``bootstrap``), its samples
    and summary in ``out`` (a new run replaces an old one there)."""
    import shutil

    from alertsieve.bench.place import bench_place

    folder = Path(out)
    shutil.rmtree(folder, ignore_errors=True)
    with bench_place("soak", bootstrap, heap="1g", session=False) as bench:
        result = {
            "benchmark": "soak",
            "machine": bench.machine(),
            **run_soak(plan, bench.bootstrap, folder),
        }
    (folder / "summary.json").write_text(json.dumps(result, indent=2))
    return result
