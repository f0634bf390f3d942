"""Latency where subscribers see it, read back from the job's output topics: each published record
carries its input's append time (header ``kafka_timestamp_ms``) and its source partition and
offset; its own timestamp is when it was published (or appended, on a ``LogAppendTime`` topic).
The demo and every benchmark read outputs and reduce latencies here, so their numbers agree."""

from __future__ import annotations

import time
import uuid
from typing import NamedTuple

from alertsieve.kafka.topics import end_offsets
from alertsieve.publish import contract


def quantiles(values: list[float]) -> dict:
    """n, p50, p95, p99 (linear interpolation between ranks) and max, in the values' own unit."""
    import numpy as np

    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "max": None}
    a = np.asarray(values, dtype=float)
    p50, p95, p99 = (round(float(v), 3) for v in np.percentile(a, [50, 95, 99]))
    return {"n": len(values), "p50": p50, "p95": p95, "p99": p99, "max": round(float(a.max()), 3)}


class OutputRecord(NamedTuple):
    """A match as a subscriber received it: where its alert came from, and when."""

    topic: str
    source_partition: int
    source_offset: int
    input_ms: float  # its alert's append time on the input topic
    output_ms: float  # its own publication (or append) time
    #: Its value when it is a fields record (None: the alert's own bytes), and its headers: what
    #: a plain republisher of the same records sends (``baselines.republish_consume``).
    value: bytes | None = None
    headers: tuple = ()

    @property
    def latency_ms(self) -> float:
        return self.output_ms - self.input_ms


class OutputReader:
    """The job's output topics, read as they fill. Records without a source (the quarantine's,
    the counts topic's) are skipped."""

    def __init__(self, bootstrap: str, topics: list[str]):
        from confluent_kafka import Consumer

        self.bootstrap, self.topics = bootstrap, topics
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"lat-{uuid.uuid4().hex[:6]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe(topics)
        self.read = 0  # every message, with a source or not
        self.bytes = 0  # their values, keys and headers: what subscribers download
        self.records: list[OutputRecord] = []

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for m in self.consumer.consume(500, timeout=0.2):
                if m.error() is not None:
                    continue
                self.read += 1
                self.bytes += (
                    len(m.value() or b"")
                    + len(m.key() or b"")
                    + sum(len(k) + len(v or b"") for k, v in m.headers() or [])
                )
                h = dict(m.headers() or [])
                if contract.SOURCE_OFFSET in h:
                    fields = h.get(contract.PAYLOAD) == contract.PAYLOAD_FIELDS.encode()
                    self.records.append(
                        OutputRecord(
                            m.topic(),
                            int(h[contract.SOURCE_PARTITION]),
                            int(h[contract.SOURCE_OFFSET]),
                            float(h[contract.KAFKA_TIMESTAMP_MS]),
                            float(m.timestamp()[1]),
                            m.value() if fields else None,
                            tuple(m.headers() or ()),
                        )
                    )

    def within(self, start: dict[int, int], end: dict[int, int]) -> list[OutputRecord]:
        """The records whose alert's offset is in [start, end) of its input partition."""
        return [
            r
            for r in self.records
            if start.get(r.source_partition, 0) <= r.source_offset < end.get(r.source_partition, 0)
        ]

    def wait_for(self, start: dict, end: dict, count: int, timeout: float) -> list[OutputRecord]:
        deadline = time.monotonic() + timeout
        while len(self.within(start, end)) < count and time.monotonic() < deadline:
            self.poll(0.5)
        return self.within(start, end)

    def read_to_end(self, timeout: float = 60.0) -> bool:
        """Read every message on the topics now (up to their end offsets at this call); False if
        the timeout came first."""
        total = sum(sum(end_offsets(self.bootstrap, t).values()) for t in self.topics)
        deadline = time.monotonic() + timeout
        while self.read < total and time.monotonic() < deadline:
            self.poll(0.5)
        return self.read >= total

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> OutputReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
