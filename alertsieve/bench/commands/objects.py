"""`alertsieve bench objects`: what keeping each object's state costs the job.

The ten broker-like filters of ``bench stream`` run twice over one topic of simulated alerts
without cutouts (the simulator draws a new object for each alert, so N alerts are N objects), in
one session: as they are, in the stateless query, and each reading the object's state
(``AND object.alerts >= 1``, true of every alert: the same matches), which runs them in the
objects query. Then both sets in one job, the two queries side by side on the same cores: what
the objects query costs the stateless filters. Reported: each run's marginal rate, the ratios,
the matches of each, and the state the second run left: its objects, its size on disk (the
checkpoint's state folder) and what RocksDB holds in memory as Spark reports it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.commands.filters import micro_batch_run
from alertsieve.bench.place import bench_place, fill_topic, visits_of

#: ``--quick``: 2,000 alerts in batches of 500.
QUICK = {"alerts": 2_000, "batch": 500}


def folder_bytes(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_objects(
    bootstrap: str | None = None, alerts: int = 1_000_000, batch: int = 20_000
) -> dict:
    with bench_place("objects", bootstrap) as bench:
        filled = fill_topic(bench, "objects", *visits_of(alerts), stamp_size=0)
        spark, produced = bench.spark, filled.produced
        filters = bench_filters(10)[0]
        of_objects = [replace(f, sql=f"({f.sql}) AND object.alerts >= 1") for f in filters]
        stateless = micro_batch_run(
            spark, filled.job_config("stateless", filters, batch), produced.acked
        )
        cfg = filled.job_config("objects", of_objects, batch)
        objects = micro_batch_run(spark, cfg, produced.acked, kind="objects")
        last = objects.pop("lines")[-1]
        twins = [replace(f, name=f"{f.name}_object") for f in of_objects]
        beside = micro_batch_run(
            spark, filled.job_config("beside", [*filters, *twins], batch), produced.acked
        )
        state = last.get("state") or {}
        return {
            "benchmark": "objects",
            "machine": bench.machine(),
            "topic": filled.facts(),
            "filters": [f.name for f in filters],
            "max_offsets_per_trigger": batch,
            "stateless": stateless,
            "objects": objects,
            "ratio_objects_to_stateless": round(
                objects["marginal_alerts_per_s"] / stateless["marginal_alerts_per_s"], 3
            ),
            "stateless_beside_objects": beside,
            "ratio_stateless_beside_objects_to_alone": round(
                beside["marginal_alerts_per_s"] / stateless["marginal_alerts_per_s"], 3
            ),
            "state": {
                "objects": state.get("rows"),
                "disk_bytes": folder_bytes(Path(cfg.objects_checkpoint) / "state"),
                "memory_bytes": state.get("memory_bytes"),
                "rocksdb": state.get("rocksdb"),
            },
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
