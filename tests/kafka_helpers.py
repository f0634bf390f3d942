"""Reading topics back in tests: the test's own view of Kafka, with no Spark in between."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition

from alertsieve.kafka.topics import end_offsets

#: The session broker's SCRAM user (conftest's ``kafka``): the secret the security tests look for
#: in everything a job prints and writes.
SCRAM_USER, SCRAM_PASSWORD = "alice", "s3cr3t-Pa55-for-the-test"


def consume_all(bootstrap: str, topic: str) -> list:
    """Every message of ``topic`` from the beginning (the test's own view, no Spark)."""
    parts = end_offsets(bootstrap, topic)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in parts])
    out, want = [], sum(parts.values())
    while len(out) < want:
        msg = consumer.poll(10)
        assert msg is not None, f"only {len(out)} of {want} messages arrived"
        out.append(msg)
    consumer.close()
    return out


def consume_topics(bootstrap: str, topics: list[str]) -> list:
    """Every message of all ``topics`` from the beginning, with one consumer (a job with many
    filters has many output topics)."""
    ends = {t: end_offsets(bootstrap, t) for t in topics}
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(t, p, 0) for t, parts in ends.items() for p in parts])
    out, want = [], sum(sum(parts.values()) for parts in ends.values())
    while len(out) < want:
        batch = consumer.consume(1000, timeout=10)
        assert batch, f"only {len(out)} of {want} messages arrived"
        out += [m for m in batch if m.error() is None]
    consumer.close()
    return out


def send(bootstrap: str, topic: str, messages: list[tuple[str, bytes]], timestamp: int = 0) -> None:
    """(key, value) messages produced to ``topic`` and acknowledged (``timestamp``: their
    CreateTime in ms, else now)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in messages:
        producer.produce(topic, key=key, value=value, timestamp=timestamp)
    assert producer.flush(30) == 0


def fields_record(m, store) -> dict:
    """A published fields record, read with fastavro and the registered schema, or as JSON."""
    import io
    import json

    import fastavro

    from alertsieve.alerts.schemas import unframe

    if dict(m.headers())["format"] == b"json":
        return json.loads(m.value())
    schema_id, body = unframe(m.value())
    return fastavro.schemaless_reader(
        io.BytesIO(body), fastavro.parse_schema(store.get(schema_id).definition)
    )


def listen(*args: str, code: int = 0, timeout: float = 180) -> list[str]:
    """``alertsieve listen ARGS`` in a process of its own, as a subscriber runs it: its output
    lines, after checking its exit code."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "alertsieve.cli", "listen", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == code, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout.splitlines()


def delivered(lines: list[str]) -> list[str]:
    """The alert ids of the match lines ``listen`` printed (``   1  name@version  alert ID ...``)."""
    return [line.split()[3] for line in lines if line[:5].strip().isdigit()]
