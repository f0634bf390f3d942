"""Latency where subscribers see it: input append -> output append, read back from the topics.

Input and output topics keep the broker's append time (``LogAppendTime``); each published record
carries its input's append time (header ``kafka_timestamp_ms``) and its source partition and offset,
so a record's latency is its own append time minus that header. A run of the hot path (micro-batch
or Real-Time Mode, 10 SQL filters, Kafka sink only) takes:
- a steady rate (LSST's average is ~250 alerts/s): alerts sent at that pace for a while, the
  latency quantiles of every match they produced;
- a visit burst (10,000 alerts as fast as two producers send them): how long after the last alert
  was acknowledged its matches were all published.
The expected matches are computed from the alerts themselves (plain Python over the records), so a
run waits for exactly the outputs it must see.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.bench.broker_filters import bench_filters
from alertsieve.errors import AlertsieveError
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic, create_topics, end_offsets
from alertsieve.publish import contract
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.stream.config import JobConfig
from alertsieve.stream.latency import OutputReader, quantiles

APPEND_TIME = {
    "message.timestamp.type": "LogAppendTime",
    "max.message.bytes": str(16 * 1024 * 1024),
}


def alert_pool(n: int, seed: int, tests: list) -> tuple[list[bytes], list[int]]:
    """``n`` simulated v11.1 alerts with cutouts, framed as Rubin sends them, and how many of the
    bench filters each matches (plain Python over the records)."""
    schema = load_rubin_schema("11.1")
    alerts = list(AlertSimulator(SimulationConfig(alerts_per_visit=n, seed=seed)).visit_alerts(0))
    return [schema.encode_framed(a) for a in alerts], [sum(t(a) for t in tests) for a in alerts]


def send_at_rate(
    bootstrap: str, topic: str, pool: list[bytes], count: int, rate: float | None
) -> float:
    """Send ``count`` alerts cycling through ``pool``, at ``rate`` per second (None: as fast as
    possible); returns the time the last one was acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0 if rate else 5,
            "acks": "all",
            "message.max.bytes": 16 * 1024 * 1024,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    acked = [0.0]

    def done(err, _msg):
        if err is None:
            acked[0] = time.time()

    t0 = time.monotonic()
    for i in range(count):
        if rate:
            time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        while True:
            try:
                producer.produce(topic, pool[i % len(pool)], on_delivery=done)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    return acked[0]


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


def latency_run(
    bootstrap: str,
    spark,
    workdir: Path,
    trigger: str,
    rate: float = 250.0,
    steady_s: float = 40.0,
    burst: int = 10_000,
    partitions: int = 2,
    n_filters: int = 10,
    context: bool = False,
    filters: tuple[list, list] | None = None,
    warmup_s: float = 10.0,
    output_partitions: int = 4,
) -> dict:
    """One hot-path run in ``trigger`` mode: warm-up, a steady rate, then a visit burst; with
    ``context``, the ``CONTEXT_FILTERS`` run beside the ``n_filters`` measured. ``filters``:
    (SQL filters, their plain-Python twins) instead of the first ``n_filters`` bench filters."""
    from alertsieve.catalogs.store import add_catalog
    from alertsieve.stream.job import FilterStream

    topic = f"bench-latency-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions, config=APPEND_TIME)
    filters, tests = filters or bench_filters(n_filters)
    catalogs = workdir / "catalogs"
    if context and not (catalogs / "hipparcos").exists():
        add_catalog(catalogs, "hipparcos", "builtin:hipparcos", "ra", "dec", 30.0)
    cfg = JobConfig(
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
    outputs = [contract.filter_topic(f, cfg.output_prefix) for f in filters]
    create_topics(
        bootstrap, outputs, output_partitions, config=APPEND_TIME
    )  # before the job: the broker stamps appends
    pool, matches = alert_pool(1000, 11, tests)
    job = FilterStream(spark, cfg)
    runner = threading.Thread(target=job.run, daemon=True)
    runner.start()
    reader = OutputReader(bootstrap, outputs)
    try:
        while not any(q.name == "alertsieve_filter_stream" for q in spark.streams.active):
            if not runner.is_alive():
                raise AlertsieveError(
                    "the job stopped before its query started (see its error above)"
                )
            time.sleep(0.5)
        send_at_rate(
            bootstrap, topic, pool, int(rate * warmup_s), rate
        )  # warm-up: JIT, connections
        start = end_offsets(bootstrap, topic)
        count = int(rate * steady_s)
        send_at_rate(bootstrap, topic, pool, count, rate)
        end = end_offsets(bootstrap, topic)
        want = sum(matches[i % len(pool)] for i in range(count))
        steady = reader.wait_for(start, end, want, 120)
        burst_start = end
        last_ack = send_at_rate(bootstrap, topic, pool, burst, None)
        burst_end = end_offsets(bootstrap, topic)
        burst_want = sum(matches[i % len(pool)] for i in range(burst))
        burst_out = reader.wait_for(burst_start, burst_end, burst_want, 300)
    finally:
        reader.close()
        for q in spark.streams.active:
            q.stop()
        runner.join(60)
    return {
        "trigger": cfg.trigger,
        "partitions": partitions,
        "filters": len(filters),
        "warmup_s": warmup_s,
        "context_filters": [f.sql for f in CONTEXT_FILTERS] if context else [],
        "steady": {
            "alerts_per_s": rate,
            "alerts": count,
            "matches_expected": want,
            "matches_seen": len(steady),
            "latency_ms": quantiles([r.latency_ms for r in steady]),
        },
        "burst": {
            "alerts": burst,
            "matches_expected": burst_want,
            "matches_seen": len(burst_out),
            "last_published_after_last_ack_s": round(
                max(r.output_ms for r in burst_out) / 1e3 - last_ack, 3
            )
            if burst_out
            else None,
            "latency_ms": quantiles([r.latency_ms for r in burst_out]),
        },
    }


def bench_context_latency(
    bootstrap: str | None = None, trigger: str = "realtime", steady_s: float = 30.0
) -> dict:
    """`alertsieve bench latency`: the same steady rate and burst in ``trigger`` mode, without and
    with features + crossmatch filters beside the 10 measured ones, in one session."""
    from alertsieve.bench.topic import bench_place

    with bench_place("latency", bootstrap) as bench:
        runs = [
            latency_run(
                bench.bootstrap, bench.spark, bench.workdir, trigger, steady_s=steady_s, context=c
            )
            for c in (False, True)
        ]
    return {"benchmark": "latency with context", "runs": runs}
