"""What a model in the stream costs: ``alertsieve bench models``, and the ZTF axis of ``bench stream``.

ZTF: a topic of real ZTF alerts with light curves (the 124 of
``tests/data/real/ztf-3.3-histories``, sent round after round as ZTF sends them: a container file
per message), and on it, in one session, the same job with and without ``scores.ztf_anomaly`` (one
SQL filter of the alert's own fields in every run), then the score read by 1 filter and by 10.

Rubin: topics of Rubin alerts, and on each the job without models, with SuperNNova alone, and
with SuperNNova and CATS read by 1 filter and by 10: simulated alerts with LSST-like histories
(the simulator's 0-25 earlier detections, a share from deep-drilling fields with 400), and the
real LSSTCam alerts (tests/data/rubin-light-curves, mostly single detections, as LSSTCam's first
alerts are) replayed round after round. Beside them, each Rubin model's own cost per 1,000
alerts against the length of their light curves (0, 20, 400 earlier detections), on one core
outside Spark: what a job's rate can be at most.

Each run is an available-now job over the whole topic; its steady rate leaves the first batch
out (the models' load, the Python workers' start), and its metrics give each model's seconds
per 1,000 alerts and its invocations (one per alert however many filters read the score)."""

from __future__ import annotations

import uuid
from pathlib import Path

from alertsieve.bench.place import Bench, available_now_job
from alertsieve.errors import AlertsieveError
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.stream.job import run_job

#: The real alerts replayed (a checkout's; real ZTF alerts with 5-25 earlier detections).
REAL_HISTORIES = Path("tests/data/real/ztf-3.3-histories")
#: A cut on the alert's own fields, in every run: the job's work without the model (3 of the 124
#: alerts pass: the runs publish little, so they measure the model, not the sink).
PLAIN = "candidate.magpsf < 14"
#: The ten thresholds of the run where ten filters read the score: the tail, each passing at most
#: 2 of the 124 (as the contributed ztf_anomalies does), so ten filters publish about what one does.
THRESHOLDS = (-0.025, -0.0255, -0.026, -0.0265, -0.027, -0.0275, -0.028, -0.0285, -0.029, -0.0295)
#: LSST's average alert rate (alerts/s): 10 million in a night's ~8.3 hours.
LSST_AVERAGE_ALERTS_PER_S = 333


def fill_real_ztf(bench: Bench, folder: Path, rounds: int, partitions: int = 4) -> tuple[str, int]:
    """A new topic holding every container file of ``folder`` ``rounds`` times, round-robin over
    ``partitions``: (topic, messages)."""

    files = sorted(folder.glob("*.avro"))
    if not files:
        raise AlertsieveError(
            f"no ZTF container files (*.avro) in {folder}: give --model-alerts a folder of them"
            " (a checkout's tests/data/real/ztf-3.3-histories), or '' to skip the model axis"
        )
    return _fill(bench, "models", [f.read_bytes() for f in files] * rounds, partitions)


def model_run(
    bench: Bench,
    topic: str,
    label: str,
    filters: list,
    batch: int,
    survey: str = "ztf",
    models: tuple[str, ...] = ("ztf_anomaly",),
) -> dict:
    """One available-now job of ``filters`` over the topic: steady rate, each model's cost."""
    cfg = available_now_job(bench, topic, label, filters, batch, survey=survey)
    lines = run_job(cfg, spark=bench.spark)
    steady = [b for b in lines[1:] if b["input_rows"]] or lines
    rows = sum(b["input_rows"] for b in steady)
    seconds = sum(b["batch_seconds"] for b in steady)

    def per_model(key: str, batches: list[dict]) -> dict:
        return {m: sum(b[key].get(m, 0) for b in batches) for m in models}

    model_s = per_model("model_seconds", steady)
    return {
        "run": label,
        "filters": len(filters),
        "alerts": sum(b["input_rows"] for b in lines),
        "batches": len(lines),
        "steady_alerts_per_s": round(rows / seconds, 1) if seconds else None,
        "model_invocations": per_model("model_invocations", lines),
        "model_seconds_per_1000": {
            m: round(1000 * s / rows, 3) if rows else None for m, s in model_s.items()
        },
        "model_errors": sum(len(b["model_errors"]) for b in lines),
        "matches": sum(sum(b["matches"].values()) for b in lines),
    }


def model_axis(bench: Bench, folder: Path, rounds: int, batch: int) -> dict:
    """The job without and with the model, and the score read by 1 and by 10 filters, same
    topic, same session; ratios between them."""
    topic, alerts = fill_real_ztf(bench, folder, rounds)
    plain = AlertFilter(name="plain", survey="ztf", sql=PLAIN)

    def reading(n: int) -> list[AlertFilter]:
        return [
            AlertFilter(name=f"anomalous_{i}", survey="ztf", sql=f"scores.ztf_anomaly < {t}")
            for i, t in enumerate(THRESHOLDS[:n])
        ]

    runs = [
        model_run(bench, topic, "warmup", [plain], batch),  # the session's JIT, not measured
        model_run(bench, topic, "without", [plain], batch),
        model_run(bench, topic, "read1", [plain, *reading(1)], batch),
        model_run(bench, topic, "read10", [plain, *reading(10)], batch),
    ][1:]
    without, one, ten = (r["steady_alerts_per_s"] for r in runs)
    return {
        "topic": topic,
        "alerts": alerts,
        "source": f"{len(list(folder.glob('*.avro')))} real ZTF alerts of {folder}, {rounds} rounds",
        "runs": runs,
        "with_model_over_without": round(one / without, 3),
        "read_by_10_over_read_by_1": round(ten / one, 3),
        "with_model_over_lsst_average": round(one / LSST_AVERAGE_ALERTS_PER_S, 2),
    }


#: Rubin: a cut on the alert's own fields in every run (few alerts pass: the runs measure the
#: models, not the sink), and what reads the classifiers' scores.
RUBIN_PLAIN = "diaSource.snr > 1000"
RUBIN_MODELS = ("snn_sn_vs_other", "cats")
#: The ten filters reading both scores: SN-like with a confident SuperNNova score, at ten
#: thresholds (each passes few, so ten publish about what one does).
SN_THRESHOLDS = (0.99, 0.991, 0.992, 0.993, 0.994, 0.995, 0.996, 0.997, 0.998, 0.999)
#: The real LSSTCam alerts with their light curves, cutouts removed (a checkout's).
REAL_RUBIN = Path("tests/data/rubin-light-curves/rubin-lsstcam-v10_0.avro")
#: LSST-like histories: the simulator's 0..25 earlier detections, 2% of alerts from deep fields.
LSST_LIKE = {"max_history": 25, "deep_share": 0.02, "deep_history": 400, "stamp_size": 0}


def _rubin_filters(n: int, models: tuple[str, ...]) -> list[AlertFilter]:
    if models == ("snn_sn_vs_other",):
        return [
            AlertFilter(name=f"sn_{i}", survey="rubin", sql=f"scores.snn_sn_vs_other > {t}")
            for i, t in enumerate(SN_THRESHOLDS[:n])
        ]
    return [
        AlertFilter(
            name=f"sn_like_{i}",
            survey="rubin",
            sql=f"scores.cats.class = 11 AND scores.snn_sn_vs_other > {t}",
        )
        for i, t in enumerate(SN_THRESHOLDS[:n])
    ]


def rubin_topic_of_real(bench: Bench, rounds: int) -> tuple[str, int]:
    """A topic holding the real LSSTCam alerts ``rounds`` times, framed as Rubin sends them."""
    from alertsieve.alerts.replay import read_raw_records
    from alertsieve.alerts.schemas import frame, load_rubin_schema

    if not REAL_RUBIN.is_file():
        raise AlertsieveError(f"no {REAL_RUBIN} here: run the benchmark from a checkout")
    schema = load_rubin_schema("10.0")
    bodies = [frame(schema.schema_id, r.body) for r in read_raw_records(REAL_RUBIN)]
    return _fill(bench, "models-real", bodies * rounds)


def _fill(bench: Bench, name: str, messages: list[bytes], partitions: int = 4) -> tuple[str, int]:
    from confluent_kafka import Producer

    topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
    create_topic(bench.bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bench.bootstrap, "linger.ms": 20})
    failed: list[str] = []

    def acked(error, _message) -> None:
        if error is not None:
            failed.append(str(error))

    for sent, message in enumerate(messages):
        while True:
            try:
                producer.produce(topic, message, partition=sent % partitions, on_delivery=acked)
                break
            except BufferError:  # the client's queue is full: let the broker catch up
                producer.poll(0.5)
        producer.poll(0)
    left = producer.flush(120)
    if left or failed:
        raise AlertsieveError(
            f"filling {topic}: {left} messages unsent, {len(failed)} refused ({failed[:1]})"
        )
    return topic, len(messages)


def rubin_axis(
    bench: Bench, topic: str, alerts: int, source: str, batch: int, warmup: bool = True
) -> dict:
    """On one topic: without models, SuperNNova alone, both read by 1 and by 10 filters (after
    a warm-up run, unless not ``warmup``)."""
    plain = AlertFilter(name="plain", survey="rubin", sql=RUBIN_PLAIN)
    snn = ("snn_sn_vs_other",)

    def run(label: str, filters: list) -> dict:
        return model_run(bench, topic, label, filters, batch, "rubin", RUBIN_MODELS)

    if warmup:
        run("warmup", [plain, *_rubin_filters(1, snn)])  # the JIT, a model load: not measured
    runs = [
        run("without", [plain]),
        run("snn_read1", [plain, *_rubin_filters(1, snn)]),
        run("read1", [plain, *_rubin_filters(1, RUBIN_MODELS)]),
        run("read10", [plain, *_rubin_filters(10, RUBIN_MODELS)]),
    ]
    without, snn_only, one, ten = (r["steady_alerts_per_s"] for r in runs)
    return {
        "topic": topic,
        "alerts": alerts,
        "source": source,
        "runs": runs,
        "snn_over_without": round(snn_only / without, 3),
        "with_models_over_without": round(one / without, 3),
        "read_by_10_over_read_by_1": round(ten / one, 3),
        "with_models_over_lsst_average": round(one / LSST_AVERAGE_ALERTS_PER_S, 2),
    }


def cost_by_history(histories: tuple[int, ...] = (0, 20, 400), alerts: int = 1000) -> list[dict]:
    """Each Rubin model's own seconds per 1,000 alerts that all carry ``n`` earlier detections,
    on one core outside Spark (its Arrow batch through the job's guard, CATS' gate applied)."""
    import time

    import pyarrow as pa
    import pyarrow.compute as pc

    from alertsieve.alerts.schemas import load_rubin_schema
    from alertsieve.filtering.scores.discovery import discover_models
    from alertsieve.filtering.scores.runtime import Runtime, guarded
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    found = {m.name: m for m in discover_models() if m.name in RUBIN_MODELS}
    schema = load_rubin_schema()
    fields = ("midpointMjdTai", "band", "psfFlux", "psfFluxErr")
    points = []
    for n in histories:
        simulation = {"deep_share": 1.0, "deep_history": n} if n else {"max_history": 0}
        sim = AlertSimulator(SimulationConfig(seed=7, stamp_size=0, **simulation))
        records = [schema.decode(schema.encode(r)) for r in sim.visit_alerts(0, count=alerts)]
        curves = pa.RecordBatch.from_pylist(
            [
                {
                    f: [d[f] for d in [*(r.get("prvDiaSources") or []), r["diaSource"]]]
                    for f in fields
                }
                for r in records
            ]
        ).to_struct_array()
        point = {"earlier_detections": n, "alerts": alerts}
        for name, model in found.items():
            gated = curves
            if model.gate:  # the gate's SQL over the view: here, more than one detection
                several = pc.greater(pc.list_value_length(curves.field("band")), 1)
                gated = pc.if_else(several, curves, pa.nulls(len(curves), curves.type))
            run = guarded(model, Runtime())
            run(gated.slice(0, 10))  # its load, not measured
            start = time.perf_counter()
            out = run(gated)
            seconds = time.perf_counter() - start
            if out.field("_error")[0].as_py():
                raise AlertsieveError(out.field("_error")[0].as_py())
            point[f"{name}_seconds_per_1000"] = round(1000 * seconds / alerts, 3)
        points.append(point)
    return points


#: ``--quick``: 100 LSST-like alerts, the real Rubin alerts once, no ZTF axis (``bench stream
#: --quick`` has it), batches of 50, 50 alerts a history, no warm-up runs.
QUICK = {
    "rubin_alerts": 100,
    "real_rounds": 1,
    "ztf_rounds": 0,
    "batch": 50,
    "history_alerts": 50,
    "warmup": False,
}


def bench_models(
    bootstrap: str | None = None,
    rubin_alerts: int = 20_000,
    real_rounds: int = 400,
    ztf_rounds: int = 160,
    batch: int = 5_000,
    history_alerts: int = 1_000,
    warmup: bool = True,
) -> dict:
    """The Rubin classifiers' cost by history, their axis on LSST-like and on real alerts, and
    the ZTF axis (none for ``ztf_rounds`` 0), in one session (the module's docstring)."""
    from alertsieve.bench.place import bench_place, fill_topic

    with bench_place("models", bootstrap) as bench:
        by_history = cost_by_history(alerts=history_alerts)
        filled = fill_topic(bench, "models-lsst-like", 1, rubin_alerts, **LSST_LIKE)
        lsst_like = rubin_axis(
            bench,
            filled.topic,
            filled.produced.acked,
            f"simulated, LSST-like histories {LSST_LIKE}",
            batch,
            warmup,
        )
        topic, sent = rubin_topic_of_real(bench, real_rounds)
        source = f"the real LSSTCam alerts of {REAL_RUBIN}, {real_rounds} rounds"
        real = rubin_axis(bench, topic, sent, source, batch, warmup)
        ztf = model_axis(bench, REAL_HISTORIES, ztf_rounds, batch) if ztf_rounds else None
        return {
            "benchmark": "models",
            "machine": bench.machine(),
            "rubin_cost_by_history": by_history,
            "rubin_lsst_like": lsst_like,
            "rubin_real": real,
            "ztf": ztf,
            "lsst_average_alerts_per_s": LSST_AVERAGE_ALERTS_PER_S,
        }
