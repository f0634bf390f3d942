"""The model axis of ``alertsieve bench stream``: what a model in the stream costs. A topic of real
ZTF alerts with light curves (the 124 of ``tests/data/real/ztf-3.3-histories``, sent round after
round as ZTF sends them: a container file per message), and on it, in one session, the same job
with and without ``scores.ztf_anomaly`` (one SQL filter of the alert's own fields in every run),
then the score read by 1 filter and by 10. Each run is an available-now job over the whole
topic; its steady rate leaves the first batch out (the forests' load, the Python workers' start),
and its metrics give the model's seconds per 1,000 alerts and its invocations (one per alert
however many filters read the score)."""

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
    from confluent_kafka import Producer

    files = sorted(folder.glob("*.avro"))
    if not files:
        raise AlertsieveError(
            f"no ZTF container files (*.avro) in {folder}: give --model-alerts a folder of them"
            " (a checkout's tests/data/real/ztf-3.3-histories), or '' to skip the model axis"
        )
    messages = [f.read_bytes() for f in files]
    topic = f"bench-models-{uuid.uuid4().hex[:8]}"
    create_topic(bench.bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bench.bootstrap, "linger.ms": 20})
    failed: list[str] = []

    def acked(error, _message) -> None:
        if error is not None:
            failed.append(str(error))

    sent = 0
    for _ in range(rounds):
        for message in messages:
            while True:
                try:
                    producer.produce(topic, message, partition=sent % partitions, on_delivery=acked)
                    break
                except BufferError:  # the client's queue is full: let the broker catch up
                    producer.poll(0.5)
            sent += 1
            producer.poll(0)
    left = producer.flush(120)
    if left or failed:
        raise AlertsieveError(
            f"filling {topic}: {left} messages unsent, {len(failed)} refused ({failed[:1]})"
        )
    return topic, sent


def model_run(bench: Bench, topic: str, label: str, filters: list, batch: int) -> dict:
    """One available-now job of ``filters`` over the topic: steady rate, the model's cost."""
    cfg = available_now_job(bench, topic, label, filters, batch, survey="ztf")
    lines = run_job(cfg, spark=bench.spark)
    steady = [b for b in lines[1:] if b["input_rows"]] or lines
    rows = sum(b["input_rows"] for b in steady)
    seconds = sum(b["batch_seconds"] for b in steady)
    model_s = sum(b["model_seconds"].get("ztf_anomaly", 0.0) for b in steady)
    return {
        "run": label,
        "filters": len(filters),
        "alerts": sum(b["input_rows"] for b in lines),
        "batches": len(lines),
        "steady_alerts_per_s": round(rows / seconds, 1) if seconds else None,
        "model_invocations": sum(b["model_invocations"].get("ztf_anomaly", 0) for b in lines),
        "model_seconds_per_1000": round(1000 * model_s / rows, 3) if rows else None,
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
