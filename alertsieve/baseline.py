"""The seeds' way: how the DMTN-028 testbed produced alerts, kept for side-by-side numbers.

One alert at a time, serialized with the official ``avro`` library, handed to the producer and
polled; no batching of work across processes. Benchmarks run it on the same alerts as ours.
"""

from __future__ import annotations

import io
import json
import time

from alertsieve.schemas import AlertSchema, frame


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
