"""`make demo`: the whole product on this machine, end to end, in about a minute.

An embedded broker in a throwaway directory; two simulated Rubin visits (with FITS cutouts) and a
handful of malformed messages; the filter stream job with the filters of conf/filter_stream.yaml;
then a summary read back from the outputs themselves. Everything started is stopped.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Producer

from alertsieve.kafka import embedded
from alertsieve.produce.producer import ProduceConfig, produce, stop_resource_tracker
from alertsieve.spark.session import get_session, stop_session
from alertsieve.stream.config import load_config
from alertsieve.stream.job import run_job

CONFIG = Path(__file__).resolve().parents[1] / "conf" / "filter_stream.yaml"
MALFORMED = [b"", b"\x00\x00", b"not an alert at all", b"\x00\x00\x00\x30\x39" + b"\x01" * 64]


def run_demo(visits: int = 2, alerts_per_visit: int = 2000) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="alertsieve-demo-"))
    t0 = time.monotonic()
    spark = None
    try:
        cluster = embedded.start(workdir / "kafka")
        bootstrap = cluster.bootstrap_servers
        print(f"Kafka    : broker at {bootstrap} ({time.monotonic() - t0:.1f}s)")
        summary = produce(
            ProduceConfig(bootstrap=bootstrap, topic="alerts", visits=visits,
                          alerts_per_visit=alerts_per_visit, interval_s=0, producers=2, progress=False,
                          schema_dir=str(workdir / "schemas"))
        )  # fmt: skip
        print(f"Produce  : {summary.line()}")
        producer = Producer({"bootstrap.servers": bootstrap})
        for value in MALFORMED:
            producer.produce("alerts", value=value)
        producer.flush(30)
        del producer
        print(
            f"Produce  : {len(MALFORMED)} malformed messages (empty, short, not Avro, unknown schema id)"
        )

        cfg = load_config(
            str(CONFIG),
            {"bootstrap": bootstrap, "available_now": True, "max_offsets_per_trigger": 2500,
             "delta_path": str(workdir / "delta"), "checkpoint": str(workdir / "checkpoint"),
             "metrics_path": str(workdir / "metrics.jsonl"), "schema_dir": str(workdir / "schemas")},
        )  # fmt: skip
        print(f"Job      : {CONFIG.name}, with every filter in filters/; Spark starting ...")
        spark = get_session("alertsieve-demo", conf={"spark.ui.enabled": "false"})
        lines = run_job(cfg, spark=spark)
        totals = Counter()
        for line in lines:
            totals.update(line["matches"])
        seen = sum(line["input_rows"] for line in lines)
        quarantined = sum(line["quarantined_rows"] for line in lines)
        for name, n in totals.items():
            print(
                f"Filter   : {name:<18} {n:>5} matches -> topic {cfg.output_prefix}{name} and Delta 'matches'"
            )
        reasons = Counter(
            r["reason"].split(" for schema id")[0]
            for r in spark.read.format("delta")
            .load(str(workdir / "delta" / "quarantine"))
            .collect()
        )
        for reason, n in sorted(reasons.items()):
            print(f"Quarantine: {n} x {reason}")
        ok = seen == summary.acked + len(MALFORMED) and quarantined == len(MALFORMED)
        print(
            f"Verdict  : {seen} read = {summary.acked} alerts + {len(MALFORMED)} malformed;"
            f" {quarantined} quarantined; {'nothing lost' if ok else 'MISMATCH'}"
        )
        return {"ok": ok, "read": seen, "quarantined": quarantined, "matches": dict(totals)}
    finally:
        if spark is not None:  # Spark first: its Kafka clients would complain of a broker gone
            stop_session(spark)
        stop_resource_tracker()
        stopped = embedded.stop(workdir / "kafka")
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"Cleanup  : stopped broker pid(s) {stopped}; total {time.monotonic() - t0:.0f}s")
