"""`make demo`: the whole product on this machine, end to end, in about a minute.

An embedded broker in a throwaway directory; a handful of malformed messages; the filter stream
job with the filters of conf/filter_stream.yaml started, in Real-Time Mode where the cores allow it
(else in micro-batches), serving its metrics for Prometheus; a warm-up visit, then two simulated
Rubin visits (with FITS cutouts) produced while it runs; then a summary read back from the outputs
themselves: matches, quarantine reasons, the latency subscribers saw (the cold start apart from
the steady state), what a subscriber receives checked against the counts topic, the archive's
rows. Everything started is stopped.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from confluent_kafka import Producer

from alertsieve.bench.outputs import OutputReader, quantiles
from alertsieve.filtering.model import FilterError
from alertsieve.filtering.scores.choose import models_read
from alertsieve.kafka import embedded
from alertsieve.kafka.topics import create_topic, end_offsets
from alertsieve.produce.producer import ProduceConfig, produce, stop_resource_tracker
from alertsieve.publish import contract
from alertsieve.settings import ConfigError
from alertsieve.spark.session import get_session, stop_session
from alertsieve.stream.config import JobConfig, load_config
from alertsieve.stream.job import QUERY_NAME, FilterStream, check_realtime, run_archive
from alertsieve.stream.plan import select_filters
from alertsieve.subscribe.verify import summary_line

#: The demo's job settings (``conf/``, installed as the package ``alertsieve_conf``).
CONFIG = files("alertsieve_conf") / "filter_stream.yaml"
#: The warm-up visit's seed: its alerts are not any measured visit's.
WARMUP_SEED = 999
MALFORMED = [b"", b"\x00\x00", b"not an alert at all", b"\x00\x00\x00\x30\x39" + b"\x01" * 64]


def received_and_verified(
    bootstrap: str, topics: list[str], counts_topic: str, schema_dir: Path
) -> dict:
    """What a subscriber of every filter's topic receives, checked against the counts topic."""
    from alertsieve.alerts.schemas import open_store
    from alertsieve.subscribe.subscriber import Subscriber
    from alertsieve.subscribe.verify import verify

    with Subscriber(
        bootstrap,
        topics,
        from_beginning=True,
        until_end=True,
        store=open_store(directory=schema_dir),
        counts_topic=counts_topic,
    ) as sub:
        received = sum(1 for _ in sub.matches())
        counts = sub.read_counts()
    return {"received": received, "report": verify(sub.sources, counts, topics)}


def choose_trigger(spark, cfg: JobConfig) -> tuple[JobConfig, str]:
    """Real-Time Mode where the machine allows it: the hot path alone while alerts arrive (its
    long-running tasks hold a core per input partition, so on two cores the archive runs after the
    stream), with the filters it can run (not those in Python or reading a model's score, which
    it names), else micro-batches with the archive beside; and the reason, said in the output."""
    live = cfg.model_copy(update={"trigger": "realtime=5 seconds", "sinks": ["kafka"]})
    try:
        filters = select_filters(live, "rubin")
        sql_only = [f for f in filters if not f.runs_python and not models_read(f)]
        left_out = [f.name for f in filters if f not in sql_only]
        if left_out and sql_only:
            live = live.model_copy(update={"filters": [f.name for f in sql_only]})
        check_realtime(spark, live, sql_only or filters)
    except (FilterError, ConfigError) as e:
        return cfg, f"micro-batches with the archive beside (not Real-Time Mode: {e})"
    how = "Real-Time Mode, the archive after the stream (its tasks hold both cores)"
    if left_out:
        how += f"; left out: {', '.join(left_out)} (a model's score or Python: micro-batches only)"
    return live, how


def _run_keeping_failure(job: FilterStream, failed: list) -> None:
    """The job's thread: what stopped it is raised again in the demo's own thread."""
    try:
        job.run()
    except BaseException as e:  # noqa: BLE001 - handed over, not swallowed
        failed.append(e)


def _wait_for_rows(job: FilterStream, rows: int, timeout_s: float) -> int:
    """The rows the job has read once it has read ``rows``, or when ``timeout_s`` is up."""
    deadline = time.monotonic() + timeout_s
    while (
        read := sum(x["input_rows"] for x in job.metrics.written)
    ) < rows and time.monotonic() < deadline:
        time.sleep(0.5)
    return read


@dataclass(frozen=True)
class Sent:
    """What the demo sent: alerts acknowledged (warm-up and visits), and where the warm-up ended."""

    alerts: int
    warm_end: dict[int, int]

    @property
    def expected(self) -> int:
        """Messages the job must read: the alerts and the malformed ones."""
        return self.alerts + len(MALFORMED)


def run_demo(
    visits: int = 2,
    alerts_per_visit: int = 2000,
    interval_s: float = 5.0,
    warmup: int = 200,
    keep: bool = False,
) -> dict:
    """Start a broker and the job, send the visits, stop the job, summarise what came out; whatever
    happens, stop everything and remove the throwaway directory. With ``keep``, a demo that went
    well leaves its broker running with the matches on their topics, for a subscriber to try
    (it says how to stop it)."""
    workdir = Path(tempfile.mkdtemp(prefix="alertsieve-demo-"))
    t0 = time.monotonic()
    spark, summary = None, None
    try:
        cluster = embedded.start(workdir / "kafka")
        bootstrap = cluster.bootstrap_servers
        print(f"Kafka    : broker at {bootstrap} ({time.monotonic() - t0:.1f}s)")
        create_topic(bootstrap, "alerts", 2)
        _send_malformed(bootstrap)
        settings = {
            "bootstrap": bootstrap,
            "max_offsets_per_trigger": 2500,
            "timeout_s": 600,
            "delta_path": str(workdir / "delta"),
            "checkpoint": str(workdir / "checkpoint"),
            "metrics_path": str(workdir / "metrics.jsonl"),
            "schema_dir": str(workdir / "schemas"),
            "prometheus_port": 0,  # a free port: the job's log line says which
        }
        with as_file(CONFIG) as config:  # a file on disk, wherever the package is
            cfg = load_config(config, settings)
        spark = get_session("alertsieve-demo", conf={"spark.ui.enabled": "false"})
        job, runner = _start_job(spark, cfg)
        sent = _send_visits(
            job, bootstrap, str(workdir / "schemas"), visits, alerts_per_visit, interval_s, warmup
        )
        job.stop()
        runner.join(120)
        summary = _summary(spark, cfg, job, sent, workdir)
        return summary
    finally:
        if spark is not None:  # Spark first: its Kafka clients would complain of a broker gone
            stop_session(spark)
        stop_resource_tracker()
        if keep and summary is not None and summary["ok"]:
            _kept(workdir, bootstrap)
        else:
            stopped = embedded.stop(workdir / "kafka")
            shutil.rmtree(workdir, ignore_errors=True)
            print(f"Cleanup  : stopped broker pid(s) {stopped}; total {time.monotonic() - t0:.0f}s")


def _kept(workdir: Path, bootstrap: str) -> None:
    """The broker left running for a subscriber (the job's own files removed), and what to type."""
    for path in workdir.iterdir():
        if path.is_dir() and path.name != "kafka":
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_file():
            path.unlink()
    print(f"Kept     : the broker at {bootstrap}, its topics and matches, until you stop it:")
    print(f"           alertsieve listen --bootstrap {bootstrap} --topic TOPIC --from-beginning")
    print(f"           alertsieve kafka stop --data-dir {workdir / 'kafka'} --purge")


def _send_malformed(bootstrap: str) -> None:
    """The malformed messages, first: the job meets them at start-up (an unknown schema id is
    looked up then; met later, it would stop the running query once to look it up)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in MALFORMED:
        producer.produce("alerts", value=value)
    producer.flush(30)
    del producer
    print(
        f"Produce  : {len(MALFORMED)} malformed messages first (empty, short, not Avro, unknown"
        " schema id)"
    )


def _start_job(spark, cfg: JobConfig) -> tuple[FilterStream, threading.Thread]:
    """The job in a thread of its own, returned once its query runs (or its failure raised), so
    that no alert is sent before it reads."""
    live, how = choose_trigger(spark, cfg)
    job = FilterStream(spark, live)
    print(
        f"Job      : {CONFIG.name}, the Rubin filters of filters/, {how}; started before the alerts"
    )
    failed: list[BaseException] = []
    runner = threading.Thread(target=_run_keeping_failure, args=(job, failed), daemon=True)
    runner.start()
    while not any(q.name == QUERY_NAME for q in spark.streams.active):
        if not runner.is_alive():
            raise failed[0]
        time.sleep(0.2)
    return job, runner


def _send_visits(
    job: FilterStream,
    bootstrap: str,
    schemas: str,
    visits: int,
    alerts_per_visit: int,
    interval_s: float,
    warmup: int,
) -> Sent:
    """The warm-up visit, then the measured visits while the job runs; returns once the job has
    read them all, and the malformed messages before them (or after 300 s)."""
    # A warm-up visit first: the job's first alerts pay for its start (planning, generating
    # code, the JIT, the first fetch); the visits after it show the latency it keeps.
    warm = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic="alerts",
            visits=1,
            alerts_per_visit=warmup,
            interval_s=0,
            producers=1,
            progress=False,
            seed=WARMUP_SEED,
            schema_dir=schemas,
        )
    )
    read = _wait_for_rows(job, warm.acked, 300)
    warm_end = end_offsets(bootstrap, "alerts")
    print(
        f"Warm-up  : {warm.acked} alerts filtered before the measured visits"
        if read >= warm.acked
        else f"Warm-up  : only {read} of {warm.acked} alerts read after 300 s; the visits follow"
    )
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic="alerts",
            visits=visits,
            alerts_per_visit=alerts_per_visit,
            interval_s=interval_s,
            producers=2,
            progress=False,
            schema_dir=schemas,
        )
    )
    print(f"Produce  : {summary.line()}, a visit every {interval_s:g} s while the job runs")
    sent = Sent(alerts=warm.acked + summary.acked, warm_end=warm_end)
    _wait_for_rows(job, sent.expected, 300)
    return sent


def _summary(spark, cfg: JobConfig, job: FilterStream, sent: Sent, workdir: Path) -> dict:
    """The stopped job's outputs read back, one line each: matches, quarantine, latency, what a
    subscriber receives, the archive; then the verdict (nothing lost, or a mismatch)."""
    lines = job.metrics.written
    counts = run_archive(  # what the stream left it, of the filters it ran
        cfg.model_copy(update={"available_now": True, "filters": job.cfg.filters}), spark
    )
    totals = Counter()
    for line in lines:
        totals.update(line["matches"])
    seen = sum(line["input_rows"] for line in lines)
    quarantined = sum(line["quarantined_rows"] for line in lines)
    topic_of = {f.name: contract.filter_topic(f, cfg.output_prefix) for f in job.filters}
    for name, n in totals.items():
        print(f"Filter   : {name:<18} {n:>5} matches -> topic {topic_of[name]}")
    reasons = Counter(
        r[contract.REASON].split(" for schema id")[0]
        for r in spark.read.format("delta").load(str(workdir / "delta" / "quarantine")).collect()
    )
    for reason, n in sorted(reasons.items()):
        print(f"Quarantine: {n} x {reason}")
    topics = list(topic_of.values())
    latency = latency_lines(cfg.bootstrap, topics, sent.warm_end)
    for line in latency["lines"]:
        print(f"Latency  : {line}")
    subscribed = received_and_verified(cfg.bootstrap, topics, cfg.counts_topic, workdir / "schemas")
    print(
        f"Subscriber: {subscribed['received']} matches read back and decoded (alertsieve listen);"
        f" {summary_line(subscribed['report'])}"
    )
    print(
        f"Archive  : Delta 'matches' {counts['matches']} alerts (each once, with its filters),"
        f" 'quarantine' {counts['quarantine']} messages"
    )
    ok = (
        seen == sent.expected
        and quarantined == len(MALFORMED)
        and counts["quarantine"] == len(MALFORMED)
        and subscribed["report"]["complete"]
    )
    print(
        f"Verdict  : {seen} read = {sent.alerts} alerts + {len(MALFORMED)} malformed;"
        f" {quarantined} quarantined; {'nothing lost' if ok else 'MISMATCH'}"
    )
    return {
        "ok": ok,
        "read": seen,
        "quarantined": quarantined,
        "matches": dict(totals),
        "latency_ms": {k: v for k, v in latency.items() if k != "lines"},
        "archive": counts,
    }


def latency_lines(bootstrap: str, topics: list[str], warm_end: dict[int, int]) -> dict:
    """Each published match's latency (its append time minus its alert's), the warm-up's apart:
    the cold start, then the steady state of the measured visits."""
    with OutputReader(bootstrap, topics) as reader:
        reader.read_to_end()
    cold = quantiles(
        [
            r.latency_ms
            for r in reader.records
            if r.source_offset < warm_end.get(r.source_partition, 0)
        ]
    )
    steady = quantiles(
        [
            r.latency_ms
            for r in reader.records
            if r.source_offset >= warm_end.get(r.source_partition, 0)
        ]
    )
    lines = []
    if cold["n"]:
        lines.append(
            f"cold start, the warm-up's {cold['n']} matches: p50 {cold['p50']:.0f} ms, max {cold['max']:.0f} ms"
            " (the job's first batch: planning, code generation, the JIT)"
        )
    if steady["n"]:
        lines.append(
            f"steady, the visits' {steady['n']} matches: p50 {steady['p50']:.0f} ms, p99 {steady['p99']:.0f} ms"
            " from the alert's arrival to its match's publication"
        )
    return {"cold": cold, "steady": steady, "lines": lines}
