"""`alertsieve bench filters`: what a filter costs when a job holds many, from 10 to 1,000.

Every filter is one user's cut of the same shape, ``pmod(diaSource.diaSourceId, M) = k AND
diaSource.snr > s AND diaSource.reliability > r``, as a broker holding users' filters would run.
``M`` grows with the number of filters (5 per filter), so every run publishes about the same
volume (each of N filters passes ~1/(5N) of the alerts before its snr and reliability cuts): what
changes between runs is the number of conditions, not the records written.

Per count, in one session on one topic: start-up (job start to its first batch), the job's
marginal throughput in micro-batches (batches after the first two, whose time is class loading,
code generation and the JIT), driver heap after GC, and Real-Time Mode latency at 250 alerts/s
(input append to output append), after a minute at that rate (the generated code of a thousand
conditions takes the JIT tens of seconds to compile: before, alerts queue). Beside them, measured in the same run on the same topic: a
plain librdkafka read, librdkafka reading and republishing exactly the records the job published
(``baselines.republish_consume``), and Spark's bytes-only read. The ten broker-like filters of
``bench stream`` run too, against the republish limit of their own output.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from alertsieve.alerts.schemas import LocalSchemaStore
from alertsieve.bench.baselines import decoded_input, plain_consume, republish_consume
from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.commands.latency import QUICK_LATENCY, LatencyScale, latency_run
from alertsieve.bench.noop import bytes_only_rate
from alertsieve.bench.outputs import OutputReader, OutputRecord
from alertsieve.bench.place import MANY_QUERIES, bench_place, fill_topic, visits_of
from alertsieve.bench.user_population import columns, slim
from alertsieve.bench.user_population import population as generate
from alertsieve.filtering.model import AlertFilter
from alertsieve.publish import contract
from alertsieve.settings import SettingsError
from alertsieve.stream.bytes_apart import gc_seconds
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import FilterStream

log = logging.getLogger(__name__)

SNR_CUTS = (5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0)
RELIABILITY_CUTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
#: Real-Time Mode at 250 alerts/s after a minute at that rate (see the module), then a burst.
FILTERS_LATENCY = LatencyScale(steady_s=30.0, burst=2_000, warmup_s=60.0)


def user_filters(n: int, per_filter: int = 5) -> tuple[list[AlertFilter], list]:
    """``n`` users' filters of one shape (see the module) and their plain-Python twins."""
    modulus = per_filter * n
    filters, tests = [], []
    for k in range(n):
        snr, rel = SNR_CUTS[k % len(SNR_CUTS)], RELIABILITY_CUTS[k % len(RELIABILITY_CUTS)]
        sql = f"pmod(diaSource.diaSourceId, {modulus}) = {k} AND diaSource.snr > {snr} AND diaSource.reliability > {rel}"
        filters.append(AlertFilter(name=f"user_{k:04d}", sql=sql))
        tests.append(_twin(modulus, k, snr, rel))
    return filters, tests


def _twin(modulus: int, k: int, snr: float, rel: float):
    def test(alert: dict) -> bool:
        s = alert["diaSource"]
        return (
            s["diaSourceId"] % modulus == k
            and (s.get("snr") or float("nan")) > snr
            and (s.get("reliability") or float("nan")) > rel
        )

    return test


def routes_of(bootstrap: str, topics: list[str]) -> dict[tuple[int, int], list[OutputRecord]]:
    """(source partition, offset) -> the records its alert was published as, read back from the
    job's outputs (their headers)."""
    with OutputReader(bootstrap, topics) as reader:
        reader.read_to_end(300)
    routes: dict[tuple[int, int], list[OutputRecord]] = {}
    for r in reader.records:
        routes.setdefault((r.source_partition, r.source_offset), []).append(r)
    return routes


def driver_heap_used_mb(spark) -> float:
    """The driver JVM's heap in use right after a full GC."""
    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    spark._jvm.java.lang.System.gc()
    return round((runtime.totalMemory() - runtime.freeMemory()) / 2**20, 1)


def micro_batch_run(spark, cfg: JobConfig, alerts: int, kind: str = "batch") -> dict:
    """One available-now run: start-up, batch times, the marginal rate, what it published; of
    the objects query (``kind`` ``objects``: its filters read object state), its lines too."""
    t0, gc0 = time.time(), gc_seconds(spark)
    job = FilterStream(spark, cfg)
    planned = time.time() - t0
    lines = job.run()
    if kind == "objects":
        lines = job.objects.metrics.written
    wall = time.time() - t0
    first = lines[0]
    full = [
        b for b in lines if b["input_rows"] >= cfg.max_offsets_per_trigger // 2
    ]  # not the last few
    steady = full[2:] or full[1:]
    return {
        "filters": len(cfg.code_filters),
        "alerts": sum(b["input_rows"] for b in lines),
        "planning_s": round(planned, 2),
        "startup_to_first_batch_s": round(first["output_time"] - first["batch_seconds"] - t0, 2),
        "first_batch_s": round(first["batch_seconds"], 2),
        "wall_s": round(wall, 2),
        "batch_seconds": [b["batch_seconds"] for b in lines],
        # per batch, where its time went: with the matching apart from the alerts' bytes, the
        # seconds to its records kept (read, decode, scores, matching: ``matcher`` of them in
        # the predicate-first UDF, summed over its chunks) and to its records published (the
        # alerts' bytes joined in, written), the JVM's GC meanwhile, the records built and those
        # that publish an alert (``alertsieve.stream.bytes_apart``)
        "stages": [{"batch_s": b["batch_seconds"], **(b.get("stages") or {})} for b in lines],
        "gc_s": round(gc_seconds(spark) - gc0, 2),
        "marginal_alerts_per_s": round(
            sum(b["input_rows"] for b in steady) / sum(b["batch_seconds"] for b in steady), 1
        ),
        "published": sum(sum(b["matches"].values()) for b in lines),
        "matches": {
            name: sum(b["matches"].get(name, 0) for b in lines)
            for name in {n for b in lines for n in b["matches"]}
        },
        # where the steady batches' time went: add_batch is the one pass (read, decode, filter,
        # publish); the others are Spark's per-batch bookkeeping
        "steady_phases_s": {
            k: round(sum(b["phases_s"].get(k, 0) for b in steady), 2)
            for k in sorted({k for b in steady for k in b["phases_s"]})
        },
        "driver_heap_after_gc_mb": driver_heap_used_mb(spark),
        **({"lines": lines} if kind == "objects" else {}),
    }


def published_by_filter(routes: dict) -> dict[str, set]:
    """filter -> the positions of the alerts published for it (``routes``: position -> its
    records, ``routes_of``): by each record's ``filter`` header, or each filter a shared record
    names (``delivery: shared``)."""
    published: dict[str, set] = {}
    for position, records in routes.items():
        for r in records:
            h = dict(r.headers)
            if contract.SHARED_FILTERS in h:
                names = [e[contract.FILTER] for e in json.loads(h[contract.SHARED_FILTERS])]
            else:
                names = [h[contract.FILTER].decode()]
            for name in names:
                published.setdefault(name, set()).add(position)
    return published


def oracle_check(published: dict, twins: dict[str, object], positions: list, cols: dict) -> dict:
    """Each filter's published alerts (``published_by_filter``) against its twin (``twins``:
    filter -> its twin) over the fastavro-decoded input."""
    differing = []
    for name, twin in twins.items():
        expected = {p for p, hit in zip(positions, twin(cols), strict=True) if hit}
        got = published.get(name, set())
        if got != expected:
            differing.append({"filter": name, "expected": len(expected), "published": len(got)})
    return {"filters_checked": len(twins), "differing": len(differing), "first": differing[:5]}


@dataclass
class _Run:
    """One run of the bench: a label, its filters and their twins, how it runs."""

    label: str
    filters: list
    twins: list | None
    as_data: bool = True


def _measured(bench, filled, run: _Run, batch: int, sink: str, delivery: str, oracle) -> dict:
    """One available-now run of ``run``'s filters into ``sink``, its records checked against
    the twins (``oracle``: positions and columns; the counts alone with the noop sink, which
    publishes nothing) and, with the Kafka sink, against librdkafka republishing them."""
    cfg = filled.job_config(run.label, run.filters, batch).model_copy(
        update={"filters_as_data": run.as_data, "sinks": [sink], "delivery": delivery}
    )
    out = micro_batch_run(bench.spark, cfg, filled.produced.acked)
    matches = out.pop("matches")
    out["filters_as_data"], out["sink"], out["delivery"] = run.as_data, sink, delivery
    if sink == "noop":
        if oracle is not None and run.twins is not None:
            out["oracle"] = counts_check(matches, run.filters, run.twins, *oracle)
        return out
    outputs = list(dict.fromkeys(cfg.topic_of(f) for f in run.filters))
    routes = routes_of(bench.bootstrap, outputs)
    if oracle is not None and run.twins is not None:
        twins = dict(zip((f.name for f in run.filters), run.twins, strict=True))
        out["oracle"] = oracle_check(published_by_filter(routes), twins, *oracle)
    out["republish"] = republish_consume(bench.bootstrap, filled.topic, routes)
    out["ratio_to_republish"] = round(
        out["marginal_alerts_per_s"] / out["republish"]["alerts_per_s"], 3
    )
    return out


def counts_check(matches: dict, filters: list, twins: list, positions: list, cols: dict) -> dict:
    """Each filter's count of matches (the job's metrics) against its twin's count."""
    differing = [
        {"filter": f.name, "expected": int(twin(cols).sum()), "counted": matches.get(f.name, 0)}
        for f, twin in zip(filters, twins, strict=True)
        if int(twin(cols).sum()) != matches.get(f.name, 0)
    ]
    return {"filters_checked": len(filters), "differing": len(differing), "first": differing[:5]}


def bench_filters_per_job(
    bootstrap: str | None = None,
    counts: tuple[int, ...] = (10, 100, 1000),
    alerts: int = 60_000,
    batch: int = 10_000,
    latency_counts: tuple[int, ...] = (10, 1000),
    latency: LatencyScale = FILTERS_LATENCY,
    population: str = "realistic",
    compiled_counts: tuple[int, ...] = (),
    sink: str = "kafka",
    delivery: str = "topics",
) -> dict:
    """``population``: "realistic" (``alertsieve.bench.user_population``, tuned on the topic's
    own alerts, as users tune theirs on nights like the one they filter: a cut on the sky, the
    band or the detector tuned on another visit passes all or nothing of this one; every filter
    checked against its twin) or "pmod" (``user_filters``);
    ``compiled_counts``: the counts also run with every filter compiled (``filters_as_data``
    off), beside the same filters run as data; ``sink``: "kafka" (published, and compared with
    librdkafka republishing the same records) or "noop" (evaluation alone); ``delivery``: a topic
    per filter, or one shared topic (``alertsieve.stream.shared_delivery``)."""
    if alerts < 2 * batch:  # the marginal rate is of the full batches after the first
        raise SettingsError(
            f"bench filters: --alerts {alerts} in batches of --batch {batch} leave no full batch"
            f" after the first (warm-up) to measure the marginal rate on: give --alerts at least"
            f" {2 * batch} or a smaller --batch"
        )
    realistic = population == "realistic"
    largest = max([*counts, *compiled_counts, *latency_counts])
    # A thousand output topics per run, three runs: more than the default 512 MB broker holds.
    with bench_place("filters", bootstrap, heap="2g", spark_conf=MANY_QUERIES) as bench:
        filled = fill_topic(bench, "filters", *visits_of(alerts))
        plain = plain_consume(bench.bootstrap, filled.topic)
        bytes_only = bytes_only_rate(
            bench.spark, filled.job_config("bytes", [], batch), filled.produced.acked
        )
        users, oracle = _tuned(bench, filled, largest) if realistic else ([], None)
        chosen = _chooser(users, realistic)
        kind = "realistic users' filters" if realistic else "users' pmod cuts"
        plan = [_Run("broker10", bench_filters(10)[0], None)]
        plan += [_Run(f"users{n}", *chosen(n, False)) for n in counts]
        plan += [_Run(f"users{n}-compiled", *chosen(n, False), False) for n in compiled_counts]
        runs = []
        for run in plan:
            runs.append(_measured(bench, filled, run, batch, sink, delivery, oracle))
            runs[-1]["kind"] = "broker-like templates" if run.label == "broker10" else kind
            runs[-1]["ratio_to_spark_bytes_only"] = round(
                runs[-1]["marginal_alerts_per_s"] / bytes_only["alerts_per_s"], 3
            )
            log.info("bench filters: %s done", run.label)
        latencies = [
            latency_run(
                bench.bootstrap, bench.spark, bench.workdir, "realtime", latency,
                filters=chosen(n, True), output_partitions=1,
            )
            for n in latency_counts
        ]  # fmt: skip
        users_runs = {r["filters"]: r for r in runs if r["kind"] == kind and r["filters_as_data"]}
        per_alert = {n: 1 / r["marginal_alerts_per_s"] for n, r in users_runs.items()}
        return {
            "benchmark": "filters per job",
            "machine": bench.machine(),
            "topic": filled.facts(),
            "population": population,
            "sink": sink,
            "delivery": delivery,
            "max_offsets_per_trigger": batch,
            "plain_read": {"alerts_per_s": round(plain["alerts"] / plain["seconds"], 1)},
            "spark_bytes_only": bytes_only,
            "runs": runs,
            "time_per_alert_over_fewest_filters": {
                str(n): round(t / per_alert[min(per_alert)], 2) for n, t in per_alert.items()
            },
            "realtime_250_per_s": latencies,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }


def _tuned(bench, filled, n: int) -> tuple[list, tuple]:
    """``n`` realistic users' filters tuned on the topic's own alerts, and the oracle's input:
    each alert's position and the population's columns over the fastavro-decoded alerts."""
    store = LocalSchemaStore(bench.workdir / "schemas")
    positions, decoded = decoded_input(bench.bootstrap, filled.topic, store, slim)
    return generate(n, decoded), (positions, columns(decoded))


def _chooser(users: list, realistic: bool):
    """The first ``n`` filters and their twins: over columns (``per_alert`` false) or per
    decoded alert, as the latency runs count; the pmod cuts when not ``realistic``."""

    def chosen(n: int, per_alert: bool) -> tuple[list, list]:
        if not realistic:
            return user_filters(n)
        twins = [u.test if per_alert else u.twin for u in users[:n]]
        return [u.filter for u in users[:n]], twins

    return chosen


#: ``--quick``: 300 alerts in batches of 50, 1 and 10 users' filters, seconds at the rate.
QUICK = {
    "counts": (1, 10),
    "alerts": 300,
    "batch": 50,
    "latency_counts": (1, 10),
    "latency": QUICK_LATENCY,
}


def plot_filters_per_job(result: dict, path: str | Path) -> None:
    """Marginal throughput and start-up against the number of filters, beside the limits
    measured in the same run (republishing the same records; Spark's bytes-only read)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    users = [
        r for r in result["runs"] if r["kind"] != "broker-like templates" and r["filters_as_data"]
    ]
    n = [r["filters"] for r in users]
    fig, (rate, start) = plt.subplots(1, 2, figsize=(10, 3.8))
    rate.plot(
        n,
        [r["marginal_alerts_per_s"] for r in users],
        "o-",
        label="job (micro-batches, Kafka sink)",
    )
    rate.plot(
        n,
        [r["republish"]["alerts_per_s"] for r in users],
        "s--",
        label="librdkafka read + republish of its records",
    )
    rate.axhline(
        result["spark_bytes_only"]["alerts_per_s"],
        color="grey",
        ls=":",
        label="Spark bytes-only read",
    )
    rate.axhline(1000, color="red", lw=0.8, label="target: 1,000 alerts/s")
    rate.set(
        xscale="log",
        xlabel="filters in the job",
        ylabel="alerts/s",
        title="Marginal throughput",
        ylim=(0, None),
    )
    rate.legend(fontsize=7)
    start.plot(
        n, [r["startup_to_first_batch_s"] for r in users], "o-", label="job start to first batch"
    )
    start.plot(n, [r["planning_s"] for r in users], "s--", label="of which planning and checks")
    start.axhline(60, color="red", lw=0.8, label="target: 60 s")
    start.set(
        xscale="log",
        xlabel="filters in the job",
        ylabel="seconds",
        title="Start-up",
        ylim=(0, None),
    )
    start.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
