"""`alertsieve bench produce`: producer throughput, ours against the seeds' way, in one run.

Every number comes from the same machine, broker and alerts within one invocation, so the
ratios hold even when absolute speeds drift between runs.
"""

from __future__ import annotations

import time
import uuid

from alertsieve.bench.baselines import seeds_way_produce
from alertsieve.bench.place import bench_place
from alertsieve.errors import AlertsieveError
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig


def _rate(alerts: int, nbytes: int, seconds: float) -> dict:
    return {
        "alerts": alerts,
        "seconds": round(seconds, 3),
        "alerts_per_s": round(alerts / seconds, 1),
        "mb_per_s": round(nbytes / 1e6 / seconds, 1),
    }


def _ours(
    bootstrap: str, alerts: int, producers: int, stamp_size: int, serialize_only: bool
) -> dict:
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=f"bench-produce-{uuid.uuid4().hex[:8]}",
            visits=1,
            alerts_per_visit=alerts,
            interval_s=0,
            producers=producers,
            stamp_size=stamp_size,
            progress=False,
            serialize_only=serialize_only,
        )
    )
    if not summary.ok:
        raise AlertsieveError(f"benchmark run lost alerts: {summary.as_dict()}")
    (visit_s,) = summary.visit_seconds()
    row = _rate(summary.acked, summary.bytes, visit_s)
    row["serialize_s_per_producer"] = [round(r.serialize_s, 3) for r in summary.reports]
    return row


def bench_produce(
    bootstrap: str | None = None,
    alerts: int = 10_000,
    seeds_alerts: int = 1_000,
    stamp_size: int = 84,
) -> dict:
    """Serialization alone and serialize+send+ack, 1 and 2 producers, with and without stamps;
    the seeds' way on a sample of the same alerts."""
    with bench_place("produce", bootstrap, heap="512m", session=False) as bench:
        runs = _our_runs(bench.bootstrap, alerts, stamp_size)
        seeds = _seeds_runs(bench.bootstrap, seeds_alerts, stamp_size)
        ten_k = next(
            r for r in runs if r["stamps"] and r["producers"] == 2 and r["mode"] != "serialize"
        )
        return {
            "benchmark": "produce",
            "machine": bench.machine(),
            "alerts_per_run": alerts,
            "stamp_size_px": stamp_size,
            "ours": runs,
            "seeds_way": seeds,
            "ratio_ours_1_producer_over_seeds_way": _ratios(runs, seeds),
            "visit_10k_with_stamps_2_producers_s": ten_k["seconds"] if alerts == 10_000 else None,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }


#: ``--quick``: 200 alerts a run, 20 the seeds' way.
QUICK = {"alerts": 200, "seeds_alerts": 20}


def _our_runs(bootstrap: str, alerts: int, stamp_size: int) -> list[dict]:
    """Ours, with and without stamps, 1 and 2 producers, serializing only and sending."""
    runs = []
    for stamps in (stamp_size, 0):
        for producers in (1, 2):
            for serialize_only in (True, False):
                row = _ours(bootstrap, alerts, producers, stamps, serialize_only)
                row.update(
                    stamps=bool(stamps),
                    producers=producers,
                    mode="serialize" if serialize_only else "serialize+send+ack",
                )
                runs.append(row)
    return runs


def _seeds_runs(bootstrap: str, seeds_alerts: int, stamp_size: int) -> list[dict]:
    """The seeds' way on the same alerts, with and without stamps, serializing only and sending."""
    from alertsieve.kafka.topics import create_topic

    seeds = []
    for stamps in (stamp_size, 0):
        sim = AlertSimulator(SimulationConfig(stamp_size=stamps, seed=0))
        sample = list(sim.visit_alerts(0, count=seeds_alerts))
        for send in (False, True):
            topic = f"bench-seeds-{uuid.uuid4().hex[:8]}"
            if send:
                create_topic(bootstrap, topic, 4)
            r = seeds_way_produce(bootstrap if send else None, topic, sim.schema, sample)
            row = _rate(r["alerts"], r["bytes"], r["seconds"])
            row.update(
                stamps=bool(stamps),
                producers=1,
                mode="serialize+send+ack" if send else "serialize",
            )
            seeds.append(row)
    return seeds


def _ratios(runs: list[dict], seeds: list[dict]) -> dict[str, float]:
    """Our one producer's rate over the seeds' way's, per mode, with and without stamps."""

    def ours_at(stamps: bool, mode: str) -> float:
        return next(
            r["alerts_per_s"]
            for r in runs
            if r["stamps"] == stamps and r["mode"] == mode and r["producers"] == 1
        )

    return {
        f"{s['mode']} {'with' if s['stamps'] else 'without'} stamps": round(
            ours_at(s["stamps"], s["mode"]) / s["alerts_per_s"], 1
        )
        for s in seeds
    }
