"""The seeds' way: how the DMTN-028 testbed produced alerts, kept for side-by-side numbers.

One alert at a time, serialized with the official ``avro`` library, handed to the producer and
polled; no batching of work across processes. Benchmarks run it on the same alerts as ours.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from alertsieve.alerts.schemas import AlertSchema, frame


def seeds_way_produce(
    bootstrap: str | None, topic: str, schema: AlertSchema, alerts: list[dict]
) -> dict:
    """Serialize (and, with a bootstrap, send and await) ``alerts``; returns timings.

    ``bootstrap=None`` measures serialization alone.
    """
    import avro.schema
    from avro.io import BinaryEncoder, DatumWriter

    writer = DatumWriter(avro.schema.parse(json.dumps(schema.definition)))
    producer = None
    if bootstrap:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    nbytes = 0
    start = time.perf_counter()
    for alert in alerts:
        buf = io.BytesIO()
        writer.write(alert, BinaryEncoder(buf))
        value = frame(schema.schema_id, buf.getvalue())
        nbytes += len(value)
        if producer is not None:
            producer.produce(topic, value=value, key=str(alert["diaSourceId"]))
            producer.poll(0)
    if producer is not None:
        producer.flush(120)
    seconds = time.perf_counter() - start
    return {"alerts": len(alerts), "bytes": nbytes, "seconds": seconds}


def _consumer(bootstrap: str, topic: str):
    from confluent_kafka import Consumer, TopicPartition

    from alertsieve.kafka.topics import end_offsets

    ends = end_offsets(bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"alertsieve-baseline-{time.time_ns()}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    return consumer, sum(ends.values())


@contextmanager
def _reading(
    bootstrap: str, topic: str, limit: int | None = None, batch: int = 1000
) -> Iterator[Iterator]:
    """The topic's messages from the start up to its end now (or ``limit`` of them), consumed
    ``batch`` at a time; the consumer is made before and closed after the caller's timing."""
    consumer, total = _consumer(bootstrap, topic)
    want = min(total, limit or total)

    def messages() -> Iterator:
        n = 0
        while n < want:
            for msg in consumer.consume(batch, timeout=5):
                if msg.error() is None:
                    n += 1
                    yield msg

    try:
        yield messages()
    finally:
        consumer.close()


def plain_consume(bootstrap: str, topic: str, limit: int | None = None) -> dict:
    """The ceiling: a consumer that only reads the bytes, nothing else."""
    n = nbytes = 0
    with _reading(bootstrap, topic, limit) as messages:
        start = time.perf_counter()
        for msg in messages:
            n += 1
            nbytes += len(msg.value() or b"")
        seconds = time.perf_counter() - start
    return {"alerts": n, "bytes": nbytes, "seconds": seconds}


def seeds_way_consume(
    bootstrap: str, topic: str, store, tests: list, limit: int | None = None
) -> dict:
    """The DMTN-028 testbed's consumer: decode each alert in Python, run each filter on it."""
    from alertsieve.alerts.schemas import unframe

    schemas: dict[int, AlertSchema] = {}
    n = nbytes = matched = 0
    with _reading(bootstrap, topic, limit, batch=100) as messages:
        start = time.perf_counter()
        for msg in messages:
            n += 1
            nbytes += len(msg.value())
            schema_id, body = unframe(msg.value())
            schema = schemas.get(schema_id) or schemas.setdefault(schema_id, store.get(schema_id))
            alert = schema.decode(body)
            matched += sum(1 for test in tests if test(alert))
        seconds = time.perf_counter() - start
    return {"alerts": n, "bytes": nbytes, "seconds": seconds, "matches": matched}


def decoded_input(
    bootstrap: str, topic: str, store, keep: Callable[[dict], dict]
) -> tuple[list[tuple[int, int]], list[dict]]:
    """Every alert of ``topic`` decoded by fastavro with its writer's schema from ``store`` (as
    much of it as ``keep`` keeps: a night's cutouts would not fit in memory), and its
    (partition, offset): what benchmarks check a job's outputs against."""
    from alertsieve.alerts.schemas import unframe

    positions, alerts = [], []
    with _reading(bootstrap, topic, None, batch=100) as messages:
        for msg in messages:
            schema_id, body = unframe(msg.value())
            positions.append((msg.partition(), msg.offset()))
            alerts.append(keep(store.get(schema_id).decode(body)))
    return positions, alerts


def republish_consume(bootstrap: str, topic: str, routes: Mapping[tuple[int, int], list]) -> dict:
    """The limit of a job that publishes: a consumer reading every alert and publishing the
    records ``routes`` gives for its (partition, offset) (``outputs.OutputRecord``: a job's
    records read back), with the alert's key, acks=all and idempotence as Spark's sink: exactly
    the records a job published (topic, value, headers), without deciding which or writing them.
    """
    from confluent_kafka import Producer

    from alertsieve.kafka.read_again import send

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.max.bytes": 16 * 1024 * 1024,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    n = published = 0
    with _reading(bootstrap, topic) as messages:
        start = time.perf_counter()
        for msg in messages:
            n += 1
            for out in routes.get((msg.partition(), msg.offset()), ()):
                value = msg.value() if out.value is None else out.value
                send(producer, out.topic, value, msg.key(), list(out.headers))
                published += 1
            if n % 1000 == 0:  # delivery reports, once per fetch's worth as before
                producer.poll(0)
        producer.flush(120)
        seconds = time.perf_counter() - start
    return {
        "alerts": n,
        "published": published,
        "seconds": round(seconds, 2),
        "alerts_per_s": round(n / seconds, 1),
    }
