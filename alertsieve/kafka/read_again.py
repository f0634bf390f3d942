"""Alerts read again from Kafka by their place, and published as the value of records made
without them (``alertsieve.stream.bytes_apart``): librdkafka on the driver, one consumer and
one producer kept for every batch.

The records name their alert by (topic, partition, offset); the offsets are read in ranges
(a fetch returns what follows an offset whatever is wanted of it) and only the wanted messages'
bytes are copied out. The producer is set as Spark's Kafka sink is: acks from every replica,
idempotence, and Java's partitioner (murmur2 of the key), so a record goes to the partition
Spark's sink would have sent it to.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from alertsieve.errors import AlertsieveError
from alertsieve.kafka.client_security import librdkafka_conf

#: The largest record sent (the embedded brokers' limit, as Spark's sink is set).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class ReadAgainError(AlertsieveError):
    """An alert could not be read again, or its record not published: the batch fails and runs
    again from its checkpoint, losing nothing."""


@dataclass(frozen=True)
class Record:
    """A record whose value is to be an alert's bytes."""

    topic: str
    key: bytes | None
    headers: list[tuple[str, bytes | None]]


def send(producer, topic: str, value: bytes, key: bytes | None, headers: list | None) -> None:
    """Produce one record, letting librdkafka drain its queue when it is full."""
    while True:
        try:
            producer.produce(topic, value=value, key=key, headers=headers)
            return
        except BufferError:
            producer.poll(0.1)


class Republisher:
    """Reads alerts again by their place and publishes their records (see the module)."""

    def __init__(self, bootstrap: str, kafka_conf: Mapping[str, str], group: str):
        from confluent_kafka import Consumer, Producer

        client = {"bootstrap.servers": bootstrap, **librdkafka_conf(kafka_conf)}
        self.consumer = Consumer(
            {
                **client,
                "group.id": group,  # assigned, never joined: no offsets committed
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
                "max.partition.fetch.bytes": MAX_MESSAGE_BYTES,
                "log_level": 5,
            }
        )
        self._failed: list[str] = []
        self.producer = Producer(
            {
                **client,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.max.bytes": MAX_MESSAGE_BYTES,
                "partitioner": "murmur2_random",
                "on_delivery": self._delivered,
                "delivery.report.only.error": True,
            }
        )

    def _delivered(self, error, message) -> None:
        if error is not None:
            self._failed.append(f"{message.topic()}: {error}")

    def publish(
        self,
        records: Mapping[tuple[str, int, int], list[Record]],
        spans: Mapping[tuple[str, int], list[tuple[int, int]]],
        timeout: float = 120.0,
    ) -> int:
        """Publish ``records`` (by their alert's topic, partition and offset), each with its
        alert's bytes, reading ``spans`` ([start, end) offsets per topic and partition, which
        hold every alert named); returns the messages read. Raises ``ReadAgainError`` when a
        span is not read within ``timeout`` seconds or a record is not delivered."""
        from confluent_kafka import TopicPartition

        read = 0
        for (topic, partition), parts in spans.items():
            for start, end in parts:
                self.consumer.assign([TopicPartition(topic, partition, start)])
                at, deadline = start, time.monotonic() + timeout
                while at < end:
                    if time.monotonic() > deadline:
                        raise ReadAgainError(
                            f"alerts of {topic}:{partition} at offsets {at}-{end - 1} were not"
                            f" read again within {timeout:.0f} s: is the broker up?"
                        )
                    for m in self.consumer.consume(min(500, end - at), 1.0):
                        if m.error():
                            raise ReadAgainError(
                                f"reading {topic}:{partition} again at {at}: {m.error()}"
                            )
                        offset = m.offset()
                        if offset >= end:
                            at = end
                            break
                        at, read = offset + 1, read + 1
                        for r in records.get((topic, partition, offset), ()):
                            send(self.producer, r.topic, m.value() or b"", r.key, r.headers)
                self.producer.poll(0)
        left = self.producer.flush(timeout)
        if left or self._failed:
            failed, self._failed = self._failed, []
            raise ReadAgainError(
                f"{left} record(s) not sent within {timeout:.0f} s, {len(failed)} refused"
                + (f" (first: {failed[0]})" if failed else "")
            )
        return read

    def close(self) -> None:
        """Leave the brokers: what is queued is sent (within 10 s), the clients let go."""
        self.consumer.close()
        self.producer.flush(10)
        self.producer = self.consumer = None
