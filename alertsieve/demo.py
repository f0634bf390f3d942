"""`make demo`: the whole product on this machine, end to end, in about a minute.

An embedded broker in a throwaway directory; the filter stream job with the filters of
conf/filter_stream.yaml started first, in micro-batches; two simulated
Rubin visits (with FITS cutouts) produced while it runs, and a handful of malformed messages; then
a summary read back from the outputs themselves: matches, quarantine reasons, the latency
subscribers saw, what a subscriber receives checked against the counts topic, the archive's rows.
Everything started is stopped.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import Counter
from importlib.resources import files
from pathlib import Path

from confluent_kafka import Producer

from alertsieve.kafka import embedded
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce, stop_resource_tracker
from alertsieve.spark.session import get_session, stop_session
from alertsieve.stream.config import load_config
from alertsieve.stream.job import QUERY_NAME, FilterStream, run_archive, stop_between_batches
from alertsieve.stream.latency import published_latencies_ms, quantiles_ms
from alertsieve.subscribe.verify import summary_line

#: The demo's job settings (``conf/``, installed as the package ``alertsieve_conf``).
CONFIG = Path(str(files("alertsieve_conf") / "filter_stream.yaml"))
MALFORMED = [b"", b"\x00\x00", b"not an alert at all", b"\x00\x00\x00\x30\x39" + b"\x01" * 64]


def received_and_verified(bootstrap: str, topics: list[str], counts_topic: str, schema_dir: Path) -> dict:
    """What a subscriber of every filter's topic receives, checked against the counts topic."""
    from alertsieve.alerts.schemas import open_store
    from alertsieve.subscribe.subscriber import Subscriber
    from alertsieve.subscribe.verify import verify

    with Subscriber(bootstrap, topics, from_beginning=True, until_end=True, store=open_store(directory=schema_dir),
                    counts_topic=counts_topic) as sub:  # fmt: skip
        received = [(m.filter, m.filter_version, m.source_topic, m.source_partition, m.source_offset)
                    for m in sub.matches()]  # fmt: skip
        counts = sub.read_counts()
    return {"received": len(received), "report": verify(received, counts, topics)}


def run_demo(visits: int = 2, alerts_per_visit: int = 2000, interval_s: float = 5.0) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="alertsieve-demo-"))
    t0 = time.monotonic()
    spark = None
    try:
        cluster = embedded.start(workdir / "kafka")
        bootstrap = cluster.bootstrap_servers
        print(f"Kafka    : broker at {bootstrap} ({time.monotonic() - t0:.1f}s)")
        create_topic(bootstrap, "alerts", 2)
        settings = {"bootstrap": bootstrap, "max_offsets_per_trigger": 2500, "timeout_s": 600,
                    "delta_path": str(workdir / "delta"), "checkpoint": str(workdir / "checkpoint"),
                    "metrics_path": str(workdir / "metrics.jsonl"), "schema_dir": str(workdir / "schemas")}  # fmt: skip
        cfg = load_config(str(CONFIG), settings)
        spark = get_session("alertsieve-demo", conf={"spark.ui.enabled": "false"})
        # Micro-batches, not Real-Time Mode: on two cores its long-running tasks leave the archive
        # no core, and stopping them mid-write is logged by Spark as aborted tasks (README).
        job = FilterStream(spark, cfg)
        print(f"Job      : {CONFIG.name}, every filter in filters/, micro-batches; started before the alerts")
        runner = threading.Thread(target=job.run, daemon=True)
        runner.start()
        while not any(q.name == QUERY_NAME for q in spark.streams.active):
            time.sleep(0.2)
        summary = produce(
            ProduceConfig(bootstrap=bootstrap, topic="alerts", visits=visits, alerts_per_visit=alerts_per_visit,
                          interval_s=interval_s, producers=2, progress=False, schema_dir=str(workdir / "schemas"))
        )  # fmt: skip
        print(f"Produce  : {summary.line()}, a visit every {interval_s:g} s while the job runs")
        producer = Producer({"bootstrap.servers": bootstrap})
        for value in MALFORMED:
            producer.produce("alerts", value=value)
        producer.flush(30)
        del producer
        print(f"Produce  : {len(MALFORMED)} malformed messages (empty, short, not Avro, unknown schema id)")
        expected = summary.acked + len(MALFORMED)
        deadline = time.monotonic() + 300
        while sum(x["input_rows"] for x in job.metrics.written) < expected and time.monotonic() < deadline:
            time.sleep(0.5)
        for q in spark.streams.active:
            stop_between_batches(q)
        runner.join(60)
        lines = job.metrics.written
        counts = run_archive(cfg.model_copy(update={"available_now": True}), spark)  # what its clock had left
        totals = Counter()
        for line in lines:
            totals.update(line["matches"])
        seen = sum(line["input_rows"] for line in lines)
        quarantined = sum(line["quarantined_rows"] for line in lines)
        for name, n in totals.items():
            print(f"Filter   : {name:<18} {n:>5} matches -> topic {cfg.output_prefix}{name}")
        reasons = Counter(
            r["reason"].split(" for schema id")[0]
            for r in spark.read.format("delta").load(str(workdir / "delta" / "quarantine")).collect()
        )
        for reason, n in sorted(reasons.items()):
            print(f"Quarantine: {n} x {reason}")
        topics = [f.output_topic(cfg.output_prefix) for f in job.filters]
        latency = quantiles_ms(published_latencies_ms(bootstrap, topics))
        print(f"Latency  : {latency['n']} matches published p50 {latency['p50_ms']:.0f} ms, p99"
              f" {latency['p99_ms']:.0f} ms after their alert was produced")  # fmt: skip
        subscribed = received_and_verified(bootstrap, topics, cfg.counts_topic, workdir / "schemas")
        print(f"Subscriber: {subscribed['received']} matches read back and decoded (alertsieve listen);"
              f" {summary_line(subscribed['report'])}")  # fmt: skip
        print(f"Archive  : Delta 'matches' {counts['matches']} alerts (each once, with its filters),"
              f" 'quarantine' {counts['quarantine']} messages")  # fmt: skip
        ok = (seen == expected and quarantined == len(MALFORMED) and counts["quarantine"] == len(MALFORMED)
              and subscribed["report"]["complete"])  # fmt: skip
        print(
            f"Verdict  : {seen} read = {summary.acked} alerts + {len(MALFORMED)} malformed;"
            f" {quarantined} quarantined; {'nothing lost' if ok else 'MISMATCH'}"
        )
        return {"ok": ok, "read": seen, "quarantined": quarantined, "matches": dict(totals),
                "latency_ms": latency, "archive": counts}  # fmt: skip
    finally:
        if spark is not None:  # Spark first: its Kafka clients would complain of a broker gone
            stop_session(spark)
        stop_resource_tracker()
        stopped = embedded.stop(workdir / "kafka")
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"Cleanup  : stopped broker pid(s) {stopped}; total {time.monotonic() - t0:.0f}s")
