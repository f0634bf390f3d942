"""Latency where subscribers see it, read back from the job's output topics: each published record
carries its input's append time (header ``kafka_timestamp_ms``) and its source partition and
offset; its own timestamp is when it was published (or appended, on a ``LogAppendTime`` topic)."""

from __future__ import annotations

import time
import uuid

from alertsieve.kafka.topics import end_offsets


def quantiles_ms(values: list[float]) -> dict:
    import numpy as np

    if not values:
        return {"n": 0}
    a = np.asarray(values)
    return {"n": len(values), "p50_ms": round(float(np.percentile(a, 50)), 1),
            "p99_ms": round(float(np.percentile(a, 99)), 1), "max_ms": round(float(a.max()), 1)}  # fmt: skip


class OutputReader:
    """The job's output topics, read as they fill: (source partition, offset) -> append times."""

    def __init__(self, bootstrap: str, topics: list[str]):
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex[:6]}",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
        self.consumer.subscribe(topics)
        self.records: list[tuple[int, int, float, float]] = []  # partition, offset, in ms, out ms

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for m in self.consumer.consume(500, timeout=0.2):
                if m.error() is None:
                    h = dict(m.headers() or [])
                    self.records.append((int(h["source_partition"]), int(h["source_offset"]),
                                         float(h["kafka_timestamp_ms"]), float(m.timestamp()[1])))  # fmt: skip

    def within(self, start: dict[int, int], end: dict[int, int]) -> list[tuple[int, int, float, float]]:
        return [r for r in self.records if start.get(r[0], 0) <= r[1] < end.get(r[0], 0)]

    def wait_for(self, start: dict, end: dict, count: int, timeout: float) -> list:
        deadline = time.monotonic() + timeout
        while len(self.within(start, end)) < count and time.monotonic() < deadline:
            self.poll(0.5)
        return self.within(start, end)

    def close(self) -> None:
        self.consumer.close()


def published_latencies_ms(bootstrap: str, topics: list[str], timeout: float = 60.0) -> list[float]:
    """Every record now on ``topics`` (the job's outputs): its append time minus its input's."""
    total = sum(sum(end_offsets(bootstrap, t).values()) for t in topics)
    reader = OutputReader(bootstrap, topics)
    deadline = time.monotonic() + timeout
    try:
        while len(reader.records) < total and time.monotonic() < deadline:
            reader.poll(0.5)
    finally:
        reader.close()
    return [out - inp for _, _, inp, out in reader.records]
