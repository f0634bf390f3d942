"""Latency where subscribers see it: input append -> output append, read back from the topics
(``alertsieve.bench.rate``). A run of the hot path (micro-batch or Real-Time Mode, 10 SQL filters,
Kafka sink only) takes:
- a steady rate (LSST's average is ~250 alerts/s): alerts sent at that pace for a while, the
  latency quantiles of every match they produced;
- a visit burst (10,000 alerts as fast as two producers send them): how long after the last alert
  was acknowledged its matches were all published.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.live_job import live_job
from alertsieve.bench.outputs import OutputReader
from alertsieve.bench.rate import APPEND_TIME, RateRun, alert_pool, at_rate, send_at_rate
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic, create_topics
from alertsieve.publish import contract
from alertsieve.stream.config import JobConfig

#: Filters with the context real brokers give: light-curve features and a crossmatch with the
#: Hipparcos-2 catalog (builtin, 117,955 stars, 30 arcsec). They run beside the measured ones, so
#: every alert pays for them; their own matches are not counted in the latencies.
CONTEXT_FILTERS = [
    AlertFilter(name="ctx_rising", sql="features.r.rate_sigma > 3 AND features.r.rate > 0"),
    AlertFilter(
        name="ctx_near_bright_star",
        sql="xmatch.hipparcos.distance_arcsec < 30 AND xmatch.hipparcos.hpmag < 9",
    ),
]


@dataclass(frozen=True)
class LatencyScale:
    """How much a latency run sends: ``warmup_s`` then ``steady_s`` at ``rate`` per second, then a
    ``burst``, cycling through a pool of ``pool`` simulated alerts."""

    rate: float = 250.0
    steady_s: float = 40.0
    burst: int = 10_000
    warmup_s: float = 10.0
    pool: int = 1000


#: The measurement's own scale.
FULL_LATENCY = LatencyScale()
#: A few seconds at the rate and a burst of a few hundred alerts (``--quick``), each a whole number
#: of pools.
QUICK_LATENCY = LatencyScale(steady_s=4.0, burst=400, warmup_s=4.0, pool=200)


def _latency_job(
    bootstrap: str, workdir: Path, trigger: str, topic: str, filters: list, context: bool
) -> JobConfig:
    """The hot path on ``topic`` from its end, Kafka outputs only, with the context filters."""
    from alertsieve.catalogs.store import add_catalog

    catalogs = workdir / "catalogs"
    if context and not (catalogs / "hipparcos").exists():
        add_catalog(catalogs, "hipparcos", "builtin:hipparcos", "ra", "dec", 30.0)
    return JobConfig(
        bootstrap=bootstrap,
        topic=topic,
        starting_offsets="latest",
        trigger=trigger,
        sinks=["kafka"],
        discover_filters=False,
        code_filters=filters + (CONTEXT_FILTERS if context else []),
        metrics_path=None,
        output_prefix=f"{topic}-",
        catalog_dir=str(catalogs),
        checkpoint=str(workdir / f"latency-{uuid.uuid4().hex[:6]}"),
        timeout_s=3600,
        survey="rubin",
    )


def latency_run(
    bootstrap: str,
    spark,
    workdir: Path,
    trigger: str,
    scale: LatencyScale = FULL_LATENCY,
    partitions: int = 2,
    n_filters: int = 10,
    context: bool = False,
    filters: tuple[list, list] | None = None,
    output_partitions: int = 4,
) -> dict:
    """One hot-path run in ``trigger`` mode: warm-up, a steady rate, then a visit burst; with
    ``context``, the ``CONTEXT_FILTERS`` run beside the ``n_filters`` measured. ``filters``:
    (SQL filters, their plain-Python twins) instead of the first ``n_filters`` bench filters."""
    topic = f"bench-latency-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions, config=APPEND_TIME)
    filters, tests = filters or bench_filters(n_filters)
    cfg = _latency_job(bootstrap, workdir, trigger, topic, filters, context)
    outputs = [contract.filter_topic(f, cfg.output_prefix) for f in filters]
    # before the job: the broker stamps appends
    create_topics(bootstrap, outputs, output_partitions, config=APPEND_TIME)
    pool = alert_pool(scale.pool, 11, tests)
    with OutputReader(bootstrap, outputs) as reader, live_job(spark, cfg):
        # warm-up: JIT, connections
        send_at_rate(bootstrap, topic, pool[0], int(scale.rate * scale.warmup_s), scale.rate)
        steady = at_rate(
            bootstrap, topic, pool, reader, int(scale.rate * scale.steady_s), scale.rate, 120
        )
        burst = at_rate(bootstrap, topic, pool, reader, scale.burst, None, 300)
    return {
        "trigger": cfg.trigger,
        "partitions": partitions,
        "filters": len(filters),
        "warmup_s": scale.warmup_s,
        "context_filters": [f.sql for f in CONTEXT_FILTERS] if context else [],
        "steady": {"alerts_per_s": scale.rate, **_matches(steady)},
        "burst": {
            "alerts": burst.alerts,
            "matches_expected": burst.expected,
            "matches_seen": len(burst.seen),
            "last_published_after_last_ack_s": burst.caught_up_after_last_ack_s(),
            "latency_ms": burst.latency_ms(),
        },
    }


def _matches(run: RateRun) -> dict:
    return {
        "alerts": run.alerts,
        "matches_expected": run.expected,
        "matches_seen": len(run.seen),
        "latency_ms": run.latency_ms(),
    }


#: ``--quick``: seconds at the rate and a burst of a few hundred alerts, both runs.
QUICK = {"scale": QUICK_LATENCY}


def bench_context_latency(
    bootstrap: str | None = None,
    trigger: str = "realtime",
    scale: LatencyScale = LatencyScale(steady_s=30.0),
) -> dict:
    """`alertsieve bench latency`: the same steady rate and burst in ``trigger`` mode, without and
    with features + crossmatch filters beside the 10 measured ones, in one session."""
    from alertsieve.bench.place import bench_place

    with bench_place("latency", bootstrap) as bench:
        runs = [
            latency_run(bench.bootstrap, bench.spark, bench.workdir, trigger, scale, context=c)
            for c in (False, True)
        ]
    return {"benchmark": "latency with context", "runs": runs}
