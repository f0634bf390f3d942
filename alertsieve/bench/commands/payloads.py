"""`alertsieve bench payloads`: what subscribers' payloads cost the job, and what they weigh.

The ten broker-like filters of ``bench stream`` run on the same topic, in one session,
publishing: the original alerts (~100 KB each, cutouts included); a compact fields record as
Avro, and as JSON; and an Avro record with the light curve too. Beside them, Spark's bytes-only
read of the same topic (the ceiling of any Spark job on it). Each rate (the runs' marginal rate:
batches after the first two) is the best of ``repeats`` rounds, every way measured in each round
in turn; the bytes published are read back from the topics.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.commands.filters import micro_batch_run
from alertsieve.bench.noop import bytes_only_rate
from alertsieve.bench.place import bench_place, fill_topic, visits_of
from alertsieve.publish import contract

log = logging.getLogger(__name__)

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
    from alertsieve.bench.outputs import OutputReader

    with OutputReader(bootstrap, topics) as reader:
        reader.read_to_end(300)
    return {"records": reader.read, "bytes": reader.bytes}


#: ``--quick``: 300 alerts in batches of 50, one round.
QUICK = {"alerts": 300, "batch": 50, "repeats": 1}


def bench_payloads(
    bootstrap: str | None = None, alerts: int = 40_000, batch: int = 10_000, repeats: int = 2
) -> dict:
    with bench_place("payloads", bootstrap) as bench:
        filled = fill_topic(bench, "payloads", *visits_of(alerts))
        spark, produced = bench.spark, filled.produced
        filters = bench_filters(10)[0]
        runs: dict[str, dict] = {}
        bytes_only: dict | None = None
        for r in range(repeats):
            # The ceiling is measured in turn with the runs, warm like them (a first query in a
            # session pays for class loading and the JIT: half the rate, measured here).
            read = bytes_only_rate(
                spark, filled.job_config(f"bytes-{r}", [], batch), produced.acked
            )
            if bytes_only is None or read["alerts_per_s"] > bytes_only["alerts_per_s"]:
                bytes_only = read
            for payload in PAYLOADS:
                cfg = filled.job_config(f"{payload}-{r}", with_payload(filters, payload), batch)
                run = micro_batch_run(spark, cfg, produced.acked)
                best = runs.get(payload)
                if best is None or run["marginal_alerts_per_s"] > best["marginal_alerts_per_s"]:
                    run["output"] = published_bytes(
                        bench.bootstrap,
                        [contract.filter_topic(f, cfg.output_prefix) for f in cfg.code_filters],
                    )
                    runs[payload] = run
                log.info("bench payloads: %s run %d of %d done", payload, r + 1, repeats)
        out = {}
        for payload, run in runs.items():
            out[payload] = {
                "marginal_alerts_per_s": run["marginal_alerts_per_s"],
                "ratio_to_spark_bytes_only": round(
                    run["marginal_alerts_per_s"] / bytes_only["alerts_per_s"], 3
                ),
                "records_published": run["output"]["records"],
                "bytes_published": run["output"]["bytes"],
                "bytes_per_10000_alerts": round(run["output"]["bytes"] * 10_000 / produced.acked),
                "mean_record_bytes": round(
                    run["output"]["bytes"] / max(1, run["output"]["records"]), 1
                ),
                "startup_to_first_batch_s": run["startup_to_first_batch_s"],
                "steady_batch_seconds": round(sum(run["batch_seconds"][2:]), 2),
                "steady_phases_s": run["steady_phases_s"],
            }
        return {
            "benchmark": "payloads",
            "machine": bench.machine(),
            "topic": filled.facts(),
            "filters": [f.name for f in filters],
            "fields": {k: v.get("fields") for k, v in PAYLOADS.items() if v},
            "max_offsets_per_trigger": batch,
            "repeats": repeats,
            "spark_bytes_only": bytes_only,
            "payloads": out,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
