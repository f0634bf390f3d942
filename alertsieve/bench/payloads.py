"""`alertsieve bench payloads`: what subscribers' payloads cost the job, and what they weigh.

The ten broker-like filters of ``bench stream`` run on the same topic, in one session,
publishing: the original alerts (~100 KB each, cutouts included); a compact fields record as
Avro, and as JSON; and an Avro record with the light curve too. Beside them, Spark's bytes-only
read of the same topic (the ceiling of any Spark job on it). Each rate (the runs' marginal rate:
batches after the first two) is the best of ``repeats`` rounds, every way measured in each round
in turn; the bytes published are read back from the topics.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import replace

from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.filters import micro_batch_run
from alertsieve.bench.machine import describe
from alertsieve.bench.noop import bytes_only_rate
from alertsieve.bench.topic import bench_topic

#: What a subscriber of a transient filter typically reads beside the envelope (which alert,
#: where, when): how bright, how sure, how much history (Lasair's lite records hold about this).
COMPACT_FIELDS = {
    "diaObjectId": "diaObject.diaObjectId",
    "band": "diaSource.band",
    "psfFlux": "diaSource.psfFlux",
    "psfFluxErr": "diaSource.psfFluxErr",
    "snr": "diaSource.snr",
    "reliability": "diaSource.reliability",
    "n_history": "coalesce(size(prvDiaSources), 0)",
}
#: The same and the light curve: a lambda over the history, which decodes every earlier
#: detection whole (Spark cannot prune a record read through a lambda).
HISTORY_FIELDS = {
    **COMPACT_FIELDS,
    "history_flux": "transform(prvDiaSources, s -> s.psfFlux)",
    "history_mjd": "transform(prvDiaSources, s -> s.midpointMjdTai)",
}
PAYLOADS = {
    "alert": {},
    "fields-avro": {"format": "avro", "fields": COMPACT_FIELDS},
    "fields-json": {"format": "json", "fields": COMPACT_FIELDS},
    "fields-avro-history": {"format": "avro", "fields": HISTORY_FIELDS},
}


def with_payload(filters: list, payload: str) -> list:
    """The filters publishing ``payload`` (a key of ``PAYLOADS``)."""
    if payload == "alert":
        return filters
    return [replace(f, payload="fields", **PAYLOADS[payload]) for f in filters]


def published_bytes(bootstrap: str, topics: list[str]) -> dict:
    """Records and bytes (values, keys and headers) on ``topics``, read back from the start."""
    from confluent_kafka import Consumer, TopicPartition

    from alertsieve.kafka.topics import end_offsets

    ends = {(t, p): o for t in topics for p, o in end_offsets(bootstrap, t).items() if o}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "fetch.max.bytes": 64 * 2**20})  # fmt: skip
    consumer.assign([TopicPartition(t, p, 0) for t, p in ends])
    records = size = 0
    want = sum(ends.values())
    deadline = time.monotonic() + 300
    while records < want and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=1):
            if m.error() is None:
                records += 1
                size += len(m.value() or b"") + len(m.key() or b"") + sum(len(k) + len(v or b"") for k, v in m.headers() or [])
    consumer.close()
    return {"records": records, "bytes": size}


def bench_payloads(bootstrap: str | None = None, alerts: int = 40_000, batch: int = 10_000, repeats: int = 2) -> dict:
    from alertsieve.spark.session import get_session

    with bench_topic("payloads", alerts, bootstrap) as bench:
        spark = get_session("alertsieve-bench-payloads", conf={"spark.ui.enabled": "false"})
        produced = bench.produced
        filters = bench_filters(10)[0]
        runs: dict[str, dict] = {}
        bytes_only: dict | None = None
        for r in range(repeats):
            # The ceiling is measured in turn with the runs, warm like them (a first query in a
            # session pays for class loading and the JIT: half the rate, measured here).
            read = bytes_only_rate(spark, bench.job_config(f"bytes-{r}", [], batch), produced.acked)
            if bytes_only is None or read["alerts_per_s"] > bytes_only["alerts_per_s"]:
                bytes_only = read
            for payload in PAYLOADS:
                cfg = bench.job_config(f"{payload}-{r}", with_payload(filters, payload), batch)
                run = micro_batch_run(spark, cfg, produced.acked)
                best = runs.get(payload)
                if best is None or run["marginal_alerts_per_s"] > best["marginal_alerts_per_s"]:
                    run["output"] = published_bytes(bench.bootstrap, [f.output_topic(cfg.output_prefix) for f in cfg.code_filters])
                    runs[payload] = run
                print(f"bench payloads: {payload} run {r + 1} of {repeats} done", file=sys.stderr, flush=True)
        spark.stop()
        out = {}
        for payload, run in runs.items():
            out[payload] = {
                "marginal_alerts_per_s": run["marginal_alerts_per_s"],
                "ratio_to_spark_bytes_only": round(run["marginal_alerts_per_s"] / bytes_only["alerts_per_s"], 3),
                "records_published": run["output"]["records"],
                "bytes_published": run["output"]["bytes"],
                "bytes_per_10000_alerts": round(run["output"]["bytes"] * 10_000 / produced.acked),
                "mean_record_bytes": round(run["output"]["bytes"] / max(1, run["output"]["records"]), 1),
                "startup_to_first_batch_s": run["startup_to_first_batch_s"],
                "steady_batch_seconds": round(sum(run["batch_seconds"][2:]), 2),
                "steady_phases_s": run["steady_phases_s"],
            }
        return {
            "benchmark": "payloads",
            "machine": describe("embedded, same machine" if bench.own_broker else bench.bootstrap),
            "topic": {"alerts": produced.acked, "partitions": 4, "mean_alert_kb": round(produced.bytes / produced.acked / 1e3, 1)},
            "filters": [f.name for f in filters],
            "fields": {k: v.get("fields") for k, v in PAYLOADS.items() if v},
            "max_offsets_per_trigger": batch,
            "repeats": repeats,
            "spark_bytes_only": bytes_only,
            "payloads": out,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }  # fmt: skip
