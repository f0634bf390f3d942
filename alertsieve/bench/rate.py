"""Latency at a given rate, the one way every benchmark measures it: alerts sent at a steady pace
(or as fast as possible: a burst) to a topic whose broker stamps each append (``LogAppendTime``),
then the latency of every match they produced, read back from the filters' output topics
(``outputs.OutputReader``). The matches to wait for are computed from the alerts themselves (plain
Python over the records), so a run waits for exactly the outputs it must see. ``bench latency``,
``bench stream``, ``bench filters`` and the experiment matrix's rate points all measure with
``at_rate``."""

from __future__ import annotations

import time
from dataclasses import dataclass

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.bench.outputs import OutputReader, OutputRecord, quantiles
from alertsieve.kafka.topics import end_offsets
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

#: Input and output topics keep the broker's append time, so a record's latency is its own append
#: time minus its input's (a header the job writes).
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


@dataclass(frozen=True)
class RateRun:
    """What one sending at a rate produced: the alerts, how long sending took, and the matches
    published for them (``expected`` of them were due)."""

    alerts: int
    sent_s: float
    last_ack: float
    expected: int
    seen: list[OutputRecord]

    def latency_ms(self) -> dict:
        return quantiles([r.latency_ms for r in self.seen])

    def latency_s(self) -> dict:
        return quantiles([r.latency_ms / 1e3 for r in self.seen])

    def caught_up_after_last_ack_s(self) -> float | None:
        """How long after the last alert was acknowledged its matches were all published."""
        if not self.seen:
            return None
        return round(max(r.output_ms for r in self.seen) / 1e3 - self.last_ack, 3)


def at_rate(
    bootstrap: str,
    topic: str,
    pool: tuple[list[bytes], list[int]],
    reader: OutputReader,
    count: int,
    rate: float | None,
    timeout_s: float,
) -> RateRun:
    """Send ``count`` alerts of ``pool`` (messages, matches of each) at ``rate`` per second (None:
    a burst), then wait up to ``timeout_s`` for every match of theirs on the reader's topics."""
    messages, matches = pool
    start = end_offsets(bootstrap, topic)
    started = time.time()
    last_ack = send_at_rate(bootstrap, topic, messages, count, rate)
    sent_s = time.time() - started
    end = end_offsets(bootstrap, topic)
    expected = sum(matches[i % len(messages)] for i in range(count))
    seen = reader.wait_for(start, end, expected, timeout_s)
    return RateRun(count, sent_s, last_ack, expected, seen)
