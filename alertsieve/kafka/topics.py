"""Topic administration: created explicitly (brokers run with auto-create off), so partition
counts and replication are always a decision, never a default."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from alertsieve.kafka.client_security import librdkafka_conf


def admin(bootstrap: str, extra: dict | None = None) -> AdminClient:
    # log_level 5: librdkafka's informational lines (a purged background queue when the client
    # is dropped) are not for users; its warnings and errors still print.
    conf = {"bootstrap.servers": bootstrap, "log_level": 5}
    return AdminClient({**conf, **librdkafka_conf(extra or {})})


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    replication: int | None = None,
    config: dict[str, str] | None = None,
    extra: dict | None = None,
) -> bool:
    """Create ``topic`` if missing; returns False when it already existed.

    ``replication`` defaults to min(3, brokers), the cluster's own durability setting.
    """
    return bool(create_topics(bootstrap, [topic], partitions, replication, config, extra))


#: What one CreateTopics request may hold: the KRaft controller refuses more than 10,000
#: partitions ("Excessively large number of partitions per request") and more than 10,000
#: metadata records ("Unable to perform excessively large batch operation"; a topic writes one
#: record, one per partition and one per setting). Half that, for the records' margin.
PARTITIONS_PER_REQUEST = 10_000
RECORDS_PER_REQUEST = 5_000


def create_topics(
    bootstrap: str,
    topics: list[str],
    partitions: int = 1,
    replication: int | None = None,
    config: dict[str, str] | None = None,
    extra: dict | None = None,
) -> list[str]:
    """Create those of ``topics`` that are missing, in as few requests as the controller takes (a
    job with a thousand filters has a thousand output topics: one request each took minutes);
    returns those it created."""
    client = admin(bootstrap, extra)
    md = client.list_topics(timeout=30)
    missing = [t for t in dict.fromkeys(topics) if t not in md.topics]
    if not missing:
        return []
    rf = replication or min(3, len(md.brokers))
    # ten thousand filters' topics (and the job's own) go in requests the controller accepts
    records = 1 + partitions + len(config or {})
    chunk = max(1, min(PARTITIONS_PER_REQUEST // partitions, RECORDS_PER_REQUEST // records))
    created = []
    for start in range(0, len(missing), chunk):
        futures = client.create_topics(
            [
                NewTopic(t, partitions, rf, config=config or {})
                for t in missing[start : start + chunk]
            ]
        )
        for topic, future in futures.items():
            try:
                future.result(timeout=60)
                created.append(topic)
            except KafkaException as e:
                if "TOPIC_ALREADY_EXISTS" not in str(e):
                    raise
    _await_leaders(client, created, partitions)
    return created


def _await_leaders(client, topics: list[str], partitions: int, timeout: float = 60.0) -> None:
    """Until every partition of ``topics`` has a leader: the controller accepts a topic before
    its partitions can be read or written, and a reader that comes at once (a subscriber, a
    test) is told NOT_LEADER_FOR_PARTITION."""
    import time

    deadline = time.monotonic() + timeout
    waiting, pause = set(topics), 0.1
    while waiting and time.monotonic() < deadline:
        md = client.list_topics(timeout=30).topics
        waiting = {
            t
            for t in waiting
            if t not in md
            or len(md[t].partitions) < partitions
            or any(p.leader < 0 or p.error is not None for p in md[t].partitions.values())
        }
        if waiting:  # less often as it goes: the metadata of 20,000 topics is no small answer
            time.sleep(pause)
            pause = min(1.0, pause * 2)
    if waiting:
        raise KafkaException(
            f"topics created but without a leader after {timeout:.0f} s: {sorted(waiting)[:5]}"
        )


def end_offsets(bootstrap: str, topic: str, extra: dict | None = None) -> dict[int, int]:
    """High-water mark per partition: how many messages each partition holds."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "alertsieve-offsets",
            **librdkafka_conf(extra or {}),
        }
    )
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {p: _high_water(consumer, TopicPartition(topic, p)) for p in parts}
    finally:
        consumer.close()


def _high_water(consumer, partition, timeout: float = 10.0) -> int:
    """A partition's high-water mark; a partition whose leader is being elected (a topic just
    made, by a job in another process) answers NOT_LEADER for a moment: asked again until
    ``timeout``, as Kafka's own clients do."""
    import time

    from confluent_kafka import KafkaError

    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(partition, timeout=timeout)[1]
        except KafkaException as e:
            retriable = e.args[0].code() in (
                KafkaError.NOT_LEADER_FOR_PARTITION,
                KafkaError.LEADER_NOT_AVAILABLE,
            )
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def partition_count(bootstrap: str, topics: list[str] | str, extra: dict | None = None) -> int:
    """How many partitions ``topics`` (a list, or a regex of topic names) have between them."""
    import re

    metadata = admin(bootstrap, extra).list_topics(timeout=10).topics
    names = [t for t in metadata if re.fullmatch(topics, t)] if isinstance(topics, str) else topics
    return sum(len(metadata[t].partitions) for t in names if t in metadata)


def delete_topics(bootstrap: str, topics: list[str], extra: dict | None = None) -> None:
    """Delete ``topics`` (those that exist): experiments make a fresh topic per point and a
    10,000-alert visit with stamps is ~1 GB, so each point cleans up after itself."""
    client = admin(bootstrap, extra)
    existing = set(client.list_topics(timeout=10).topics)
    doomed = [t for t in topics if t in existing]
    if doomed:
        for future in client.delete_topics(doomed, operation_timeout=30).values():
            future.result(timeout=60)


def topics_with_prefix(bootstrap: str, prefix: str, extra: dict | None = None) -> list[str]:
    return sorted(
        t for t in admin(bootstrap, extra).list_topics(timeout=10).topics if t.startswith(prefix)
    )


def head_messages(
    bootstrap: str,
    topics: list[str] | str,
    limit: int = 20,
    extra: dict | None = None,
    timeout: float = 10.0,
    newest: bool = False,
    since_ms: int | None = None,
) -> list[bytes]:
    """Up to ``limit`` message values from the start of ``topics`` (a list, or a regex of topic
    names), or with ``newest`` from their ends, a few from every partition: what a job looks at
    before it starts (which survey, which ZTF schemas); with ``since_ms``, the messages stamped
    at or after that time (ms since the epoch). Commits nothing; an empty or missing topic
    gives []."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    consumer = _peeker(bootstrap, extra)
    try:
        metadata = consumer.list_topics(timeout=timeout).topics
        names = _named(metadata, topics)
        assigned, remaining = [], {}
        for t in names:
            for p in metadata[t].partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=timeout)
                if since_ms is not None:
                    (at,) = consumer.offsets_for_times([TopicPartition(t, p, since_ms)], timeout)
                    low = high if at.offset < 0 else max(low, at.offset)
                    if high > low:
                        assigned.append(TopicPartition(t, p, low))
                        remaining[(t, p)] = high - low
                elif high > low:
                    n = min(high - low, max(1, limit // 4))
                    assigned.append(TopicPartition(t, p, high - n if newest else OFFSET_BEGINNING))
                    remaining[(t, p)] = n
        if not assigned:
            return []
        consumer.assign(assigned)
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while remaining and len(values) < limit and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            where = (message.topic(), message.partition())
            if where in remaining:
                values.append(message.value() or b"")
                remaining[where] -= 1
                if not remaining[where]:
                    del remaining[where]
        return values
    finally:
        consumer.close()


def message_at(
    bootstrap: str,
    topic: str,
    partition: int,
    offset: int,
    extra: dict | None = None,
    timeout: float = 10.0,
) -> bytes | None:
    """The value of one message (None when the partition no longer holds it). Commits nothing."""
    import time

    from confluent_kafka import TopicPartition

    consumer = _peeker(bootstrap, extra)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            return message.value() or b"" if message.offset() == offset else None
        return None
    finally:
        consumer.close()


def watermarks(
    bootstrap: str, partitions: list[tuple[str, int]] | list[str] | str, extra: dict | None = None
) -> dict[tuple[str, int], tuple[int, int]]:
    """Each (topic, partition)'s earliest offset held and its end (high-water mark): of the
    partitions given, or of every partition of the topics given (a list of names, or a regex)."""
    from confluent_kafka import TopicPartition

    consumer = _peeker(bootstrap, extra)
    try:
        if isinstance(partitions, str) or partitions and isinstance(partitions[0], str):
            metadata = consumer.list_topics(timeout=10).topics
            partitions = [
                (t, p) for t in _named(metadata, partitions) for p in metadata[t].partitions
            ]
        return {
            (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)
            for t, p in partitions
        }
    finally:
        consumer.close()


def _named(metadata: dict, topics: list[str] | str) -> list[str]:
    """The topics of ``metadata`` that ``topics`` names (a list of names, or a regex)."""
    import re

    if isinstance(topics, str):
        return [t for t in metadata if re.fullmatch(topics, t)]
    return [t for t in topics if t in metadata]


def _peeker(bootstrap: str, extra: dict | None):
    """A consumer that only looks: no group offsets committed."""
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "alertsieve-peek",
            "enable.auto.commit": False,
            "log_level": 5,
            **librdkafka_conf(extra or {}),
        }
    )
