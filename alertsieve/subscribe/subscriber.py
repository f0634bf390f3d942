"""Read a filter job's output topics as a subscriber: decoded matches, in order per partition.

Two ways to read. Following (the default) waits for new records until closed. ``until_end``
reads what the topics hold when the subscriber opens and stops there: it snapshots each
partition's end offset, the counts topic's FIRST, then the data topics'. The job publishes a
batch's records before its counts, so every batch counted in the counts snapshot has all its
records inside the data snapshot, which is what makes :mod:`alertsieve.subscribe.verify` exact.

Where reading starts: where a ``state`` file says this subscriber stopped (``subscribe.state``);
else ``from_beginning`` at each partition's earliest offset; else at the group's committed offsets
when ``group_id`` is given (the group then remembers where this subscriber stopped; partitions are
assigned, not balanced between group members), else at the end (only records published from now
on).

Each match is delivered once (``subscribe.once``): copies a topic holds of it are dropped and
counted (``duplicates``), and with ``once_per`` so are later matches of an object
(``held_back``). A poll's matches count as delivered when the caller asks for the next ones; a
caller that delivers one at a time (a webhook) confirms each with :meth:`Subscriber.confirm`.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from alertsieve.alerts.schemas import SchemaStore, open_store
from alertsieve.kafka.client_security import SecurityConfigError, librdkafka_conf
from alertsieve.publish import contract
from alertsieve.settings import resolve_secret
from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.once import Gate, Sifted
from alertsieve.subscribe.records import Match, headers_dict, matches_from_message
from alertsieve.subscribe.state import StateFile
from alertsieve.subscribe.verify import received_key

log = logging.getLogger(__name__)

#: Errors on a message that no waiting will fix.
_FATAL_CODES = {
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
}

TP = tuple[str, int]


def split_topics(topics: str | Iterable[str]) -> list[str]:
    """``["a", "b,c"]`` or ``"a,b"`` -> ``["a", "b", "c"]`` (order kept, duplicates dropped)."""
    items = [topics] if isinstance(topics, str) else list(topics)
    names = [t.strip() for item in items for t in str(item).split(",")]
    return list(dict.fromkeys(t for t in names if t))


def missing_topic_message(topic: str, existing: Iterable[str], what: str = "topic") -> str:
    """One line: ``topic`` does not exist, and the existing topics sharing its prefix."""
    prefix = topic.split("-", 1)[0] + "-" if "-" in topic else topic[:3]
    similar = sorted(t for t in existing if t.startswith(prefix) and not t.startswith("__"))
    if not similar:
        return f"{what} {topic} does not exist, nor any topic starting {prefix!r}: check the name and --bootstrap"
    shown = ", ".join(similar[:20]) + (
        f" and {len(similar) - 20} more" if len(similar) > 20 else ""
    )
    return f"{what} {topic} does not exist; topics starting {prefix!r}: {shown}"


def _resolve(conf: dict[str, str]) -> dict[str, str]:
    """``env:NAME`` and ``file:PATH`` values read, as the job reads them."""
    if not any(str(v).startswith(("env:", "file:")) for v in conf.values()):
        return conf
    try:
        return {k: resolve_secret(str(v)) for k, v in conf.items()}
    except ValueError as e:
        raise SubscribeError(f"--kafka-conf: {e}") from None


class Subscriber:
    """Iterate to get matches as dicts (:meth:`Match.as_dict`), :meth:`matches` for
    :class:`Match` objects, :meth:`frames` for one pandas DataFrame per poll. Use as a context
    manager (or call :meth:`close`): closing commits the group's offsets, if any."""

    def __init__(
        self,
        bootstrap: str,
        topics: str | Iterable[str],
        *,
        from_beginning: bool = False,
        until_end: bool = False,
        group_id: str | None = None,
        kafka_conf: dict[str, str] | None = None,
        store: SchemaStore | None = None,
        counts_topic: str | None = None,
        find_counts_topic: bool = False,
        timeout: float = 10.0,
        poll_timeout: float = 1.0,
        batch_size: int = 500,
        filters: Iterable[str] | None = None,
        gate: Gate | None = None,
        state: Path | str | None = None,
        sink_mark: Callable[[], Any] | None = None,
    ):
        self.bootstrap = bootstrap
        #: Which matches to deliver: each once by default (see the module doc)
        self.gate = gate if gate is not None else Gate()
        #: Where this subscriber stopped and what it delivered, kept across restarts
        self.state = StateFile(state) if state is not None else None
        if self.state is not None:
            self.state.restore(self.gate)
        #: How far the caller's output was written, saved with each confirmation
        self.sink_mark = sink_mark
        #: Only these filters' matches (a shared topic names many per record); None: all
        self.filters = frozenset(filters) if filters is not None else None
        self.topics = split_topics(topics)
        if not self.topics:
            raise SubscribeError("no topic to read: pass --topic NAME (a filter's output topic)")
        self.from_beginning = from_beginning
        self.until_end = until_end
        self.group_id = group_id
        self.kafka_conf = dict(kafka_conf or {})
        self._store = store
        self.counts_topic = counts_topic
        self.find_counts_topic = find_counts_topic and not counts_topic
        self.timeout = timeout
        self.poll_timeout = poll_timeout
        self.batch_size = batch_size
        self.ends: dict[TP, int] | None = None  # until_end: the data topics' snapshot
        self.counts_ends: dict[int, int] | None = None  # the counts topic's snapshot
        self.count = 0
        #: ``until_end``: every match read, delivered or dropped, as ``verify`` takes them
        self.sources: list[tuple] = []
        self.skipped = 0  # records that did not decode (``skip_undecodable``)
        self._consumer: Any = None
        self._next: dict[TP, int] = {}
        self._errors: list[KafkaError] = []
        self._last_warning = ""
        self._closed = False

    # --- setup ------------------------------------------------------------------------------

    @property
    def store(self) -> SchemaStore:
        if self._store is None:
            self._store = open_store()
        return self._store

    def _conf(self, group: str | None) -> dict[str, Any]:
        try:
            security = librdkafka_conf(_resolve(self.kafka_conf))
        except SecurityConfigError as e:
            raise SubscribeError(f"--kafka-conf: {e}") from None
        return {
            "bootstrap.servers": self.bootstrap,
            # A consumer needs a group id even to assign partitions; a throwaway one joins no group.
            "group.id": group or f"alertsieve-listen-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": bool(group),
            "enable.auto.offset.store": False,  # stored once handed over: at-least-once
            "auto.offset.reset": "earliest" if self.from_beginning else "latest",
            "error_cb": self._errors.append,
            "log_level": 0,  # librdkafka prints nothing: its errors reach error_cb, and the one-line error
            **security,
        }

    def _new_consumer(self, group: str | None) -> Any:
        try:
            return Consumer(self._conf(group))
        except (KafkaException, ValueError, TypeError) as e:
            raise SubscribeError(f"cannot make a Kafka consumer: {e}; check --kafka-conf") from None

    def _unreachable(self, error: Any) -> SubscribeError:
        last = f"; last error: {self._errors[-1].str()}" if self._errors else ""
        return SubscribeError(
            f"cannot reach Kafka at {self.bootstrap} within {self.timeout:g} s ({error}{last}):"
            " check --bootstrap and the security settings in --kafka-conf"
        )

    def _metadata(self, consumer: Any) -> dict[str, Any]:
        try:
            return consumer.list_topics(timeout=self.timeout).topics
        except KafkaException as e:
            raise self._unreachable(e.args[0].str() if e.args else e) from None

    def _watermarks(self, consumer: Any, topic: str, partition: int) -> tuple[int, int]:
        """(low, high) of one partition; asked again while its leader is being elected."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=self.timeout
                )
            except KafkaException as e:
                code = e.args[0].code() if e.args else None
                retriable = code in (
                    KafkaError.NOT_LEADER_FOR_PARTITION,
                    KafkaError.LEADER_NOT_AVAILABLE,
                )
                if not retriable or time.monotonic() > deadline:
                    raise self._unreachable(e.args[0].str() if e.args else e) from None
                time.sleep(0.1)

    def _partitions(self, metadata: dict[str, Any], topic: str, what: str = "topic") -> list[int]:
        info = metadata.get(topic) or self._asked(topic)
        if info is None or (
            info.error is not None and info.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        ):
            raise SubscribeError(missing_topic_message(topic, metadata, what))
        if info.error is not None:
            if info.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise SubscribeError(
                    f"not authorized to read {topic}: its filter's readers do not name your"
                    " principal (ask the job's operator), or check --kafka-conf's user"
                )
            raise SubscribeError(f"{what} {topic}: {info.error.str()}")
        return sorted(info.partitions)

    def _asked(self, topic: str) -> Any:
        """The metadata of one topic asked for by name: a cluster with an authorizer leaves out of
        its listing the topics a principal may not see, and says so only when asked."""
        consumer = self._consumer or self._new_consumer(None)
        try:
            return consumer.list_topics(topic, timeout=self.timeout).topics.get(topic)
        except KafkaException:
            return None
        finally:
            if consumer is not self._consumer:
                consumer.close()

    def open(self) -> Subscriber:
        """Check the topics, take the snapshots (``until_end``) and assign the partitions."""
        if self._consumer is not None:
            return self
        consumer = self._new_consumer(self.group_id)
        try:
            metadata = self._metadata(consumer)
            data = {t: self._partitions(metadata, t) for t in self.topics}
            if self.find_counts_topic:
                self.counts_topic = self._stamped_counts_topic(data)
            counts = (
                self._partitions(metadata, self.counts_topic, "counts topic")
                if self.counts_topic
                else []
            )
            if self.until_end:  # counts first: see the module doc
                self.counts_ends = {
                    p: self._watermarks(consumer, self.counts_topic, p)[1] for p in counts
                }
            marks = {
                (t, p): self._watermarks(consumer, t, p) for t, parts in data.items() for p in parts
            }
            committed = (
                self._committed(consumer, list(marks))
                if self.group_id and not self.from_beginning
                else {}
            )
            resumed = self.state.loaded.offsets if self.state is not None else {}
            assignment = []
            for tp, (low, high) in marks.items():
                if tp in resumed:
                    start = first = max(low, resumed[tp])
                elif self.from_beginning:
                    start, first = OFFSET_BEGINNING, low
                elif committed.get(tp, -1) >= 0:
                    start = first = committed[tp]
                else:
                    start, first = OFFSET_END, high
                self._next[tp] = first
                assignment.append(TopicPartition(tp[0], tp[1], start))
            if self.until_end:
                self.ends = {tp: high for tp, (_, high) in marks.items()}
                log.debug("reading until %s", {f"{t}[{p}]": e for (t, p), e in self.ends.items()})
            consumer.assign(assignment)
        except BaseException:
            consumer.close()
            raise
        self._consumer = consumer
        return self

    def _stamped_counts_topic(self, data: dict[str, list[int]]) -> str:
        """The counts topic the job names in its records' ``counts_topic`` header, read from the
        first record of the topics (whatever the job's prefix); for records of a job older than
        the header, the one its topic names imply (``contract.derive_counts_topic``)."""
        consumer = self._new_consumer(None)
        try:
            for topic, parts in data.items():
                for p in parts:
                    low, high = self._watermarks(consumer, topic, p)
                    if low < high and (found := self._header_at(consumer, topic, p, low)):
                        log.info("counts topic %s, as the records of %s name it", found, topic)
                        return found
        finally:
            consumer.close()
        return contract.derive_counts_topic(self.topics[0])

    def _header_at(self, consumer: Any, topic: str, partition: int, offset: int) -> str | None:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = consumer.poll(self.poll_timeout)
            self._raise_fatal()
            if message is not None and message.error() is None:
                return headers_dict(message.headers()).get(contract.COUNTS_TOPIC)
        return None

    def _committed(self, consumer: Any, tps: list[TP]) -> dict[TP, int]:
        try:
            found = consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=self.timeout)
        except KafkaException as e:
            raise self._unreachable(e.args[0].str() if e.args else e) from None
        return {(tp.topic, tp.partition): tp.offset for tp in found}

    # --- reading ---------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """``until_end``: every partition reached its snapshot end."""
        return self.ends is not None and all(
            self._next.get(tp, 0) >= end for tp, end in self.ends.items()
        )

    def _raise_fatal(self) -> None:
        for error in self._errors:
            if error.fatal() or error.code() in _FATAL_CODES:
                raise SubscribeError(
                    f"Kafka at {self.bootstrap}: {error.str()}; check --kafka-conf"
                )
            if error.str() != self._last_warning:  # a broker away repeats itself every second
                self._last_warning = error.str()
                log.warning("Kafka at %s: %s", self.bootstrap, error.str())
        self._errors.clear()

    def _catch_up_positions(self) -> None:
        """A partition's position can pass its last record (transaction markers, compaction):
        read positions when idle, so ``until_end`` never waits for offsets that hold nothing."""
        waiting = [
            TopicPartition(t, p)
            for (t, p), end in (self.ends or {}).items()
            if self._next.get((t, p), 0) < end
        ]
        if waiting:
            for tp in self._consumer.position(waiting):
                if tp.offset >= 0:
                    key = (tp.topic, tp.partition)
                    self._next[key] = max(self._next.get(key, 0), tp.offset)

    def _polls(self) -> Iterator[list[Any]]:
        """The messages of each poll (possibly none while following)."""
        self.open()
        consumer = self._consumer
        while not self._closed and not self.done:
            batch = consumer.consume(self.batch_size, self.poll_timeout)
            self._raise_fatal()
            good, past_end = [], []
            for message in batch:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    if error.fatal() or error.code() in _FATAL_CODES:
                        raise SubscribeError(f"reading {message.topic()}: {error.str()}")
                    log.warning("reading %s: %s", message.topic(), error.str())
                    continue
                tp = (message.topic(), message.partition())
                if self.ends is not None and message.offset() >= self.ends.get(tp, 0):
                    past_end.append(TopicPartition(*tp))  # published after the snapshot
                    self._next[tp] = max(self._next.get(tp, 0), self.ends.get(tp, 0))
                    continue
                self._next[tp] = message.offset() + 1
                good.append(message)
            if past_end:
                consumer.pause(past_end)
            if not batch and self.ends is not None:
                self._catch_up_positions()
            yield good
            if good and self.state is not None:
                self.state.commit(
                    self.gate,
                    {(m.topic(), m.partition()): m.offset() + 1 for m in good},
                    self.sink_mark() if self.sink_mark is not None else None,
                )
            if good and self.group_id:
                last = {(m.topic(), m.partition()): m.offset() for m in good}
                consumer.store_offsets(
                    offsets=[TopicPartition(t, p, o + 1) for (t, p), o in last.items()]
                )

    def sifted(self, skip_undecodable: bool = False) -> Iterator[Sifted]:
        """Each poll's decoded matches, sifted by the gate: those to deliver (``kept``) and
        those dropped as copies or held back. Asking for the next poll confirms the kept ones
        delivered (and saves the state, if any).

        A record that does not decode raises :class:`SubscribeError`, or with
        ``skip_undecodable`` is logged with its topic, partition and offset and skipped (a
        service that must keep reading: ``alertsieve.tom``); ``skipped`` counts them."""
        for messages in self._polls():
            matches = [m for message in messages for m in self._decode(message, skip_undecodable)]
            if not matches:
                continue
            sifted = self.gate.sift(matches)
            if self.until_end:
                self.sources += [received_key(m) for m in matches]
            self.count += len(sifted.kept)
            yield sifted
            self.gate.delivered(sifted.kept)

    def batches(self, skip_undecodable: bool = False) -> Iterator[list[Match]]:
        """The matches to deliver of each poll that returned records (a writer's unit of work);
        see :meth:`sifted`."""
        for sifted in self.sifted(skip_undecodable):
            if sifted.kept:
                yield sifted.kept

    def confirm(self, matches: Iterable[Match]) -> None:
        """These matches were delivered: remember them now (saved at once with a state file),
        not only when the next poll is asked for."""
        self.gate.delivered(matches)
        if self.state is not None:
            self.state.commit(self.gate)

    @property
    def duplicates(self) -> int:
        """Copies of matches already delivered, dropped."""
        return self.gate.duplicates

    @property
    def held_back(self) -> int:
        """Later matches of an object already delivered (``once_per``), not delivered."""
        return self.gate.held_back

    def _decode(self, message: Any, skip_undecodable: bool) -> list[Match]:
        try:
            return matches_from_message(message, self.store, self.filters)
        except SubscribeError as e:
            if not skip_undecodable:
                raise
            self.skipped += 1
            log.warning(
                "%s[%d] offset %d: skipped, it does not decode: %s",
                message.topic(),
                message.partition(),
                message.offset(),
                e,
            )
            return []

    def matches(self, skip_undecodable: bool = False) -> Iterator[Match]:
        """Decoded matches, as :class:`Match` objects (``skip_undecodable``: see :meth:`batches`)."""
        for batch in self.batches(skip_undecodable):
            yield from batch

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (match.as_dict() for match in self.matches())

    def frames(self) -> Iterator[Any]:
        """One pandas DataFrame per poll that returned records: the flat rows the writers write
        (meta columns ``_topic``... then the record's fields). pandas is the ``tables`` extra."""
        from alertsieve.subscribe.rows import TABLES_EXTRA, row_of

        try:
            import pandas as pd
        except ImportError:
            raise SubscribeError(
                f"frames() needs pandas, which this install has not: {TABLES_EXTRA}"
            ) from None

        for batch in self.batches():
            yield pd.DataFrame([row_of(m) for m in batch])

    def read_counts(self) -> list[dict[str, Any]]:
        """The counts topic's records (JSON objects of ``kind: counts``) up to its snapshot end:
        the one taken at open with ``until_end`` (see the module doc), else its end now."""
        self.open()
        if not self.counts_topic:
            raise SubscribeError("no counts topic to read: pass --counts-topic NAME")
        consumer = self._new_consumer(None)
        try:
            if self.counts_ends is None:
                parts = self._partitions(
                    self._metadata(consumer), self.counts_topic, "counts topic"
                )
                self.counts_ends = {
                    p: self._watermarks(consumer, self.counts_topic, p)[1] for p in parts
                }
            return self._read_to(consumer, self.counts_topic, self.counts_ends)
        finally:
            consumer.close()

    def _read_to(self, consumer: Any, topic: str, ends: dict[int, int]) -> list[dict[str, Any]]:
        nexts = {p: self._watermarks(consumer, topic, p)[0] for p in ends}
        todo = {p for p, end in ends.items() if nexts[p] < end}
        if not todo:
            return []
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
        records: list[dict[str, Any]] = []
        last_progress = time.monotonic()
        while todo:
            batch = consumer.consume(self.batch_size, self.poll_timeout)
            self._raise_fatal()
            for message in batch:
                if message.error() is not None or message.partition() not in todo:
                    continue
                p = message.partition()
                if message.offset() < ends[p]:
                    records.extend(_counts_record(message.value(), topic, message.offset()))
                nexts[p] = message.offset() + 1
                if nexts[p] >= ends[p]:
                    todo.discard(p)
            if batch:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > self.timeout:
                raise SubscribeError(
                    f"counts topic {topic}: no records for {self.timeout:g} s before its end"
                    f" ({', '.join(f'[{p}] at {nexts[p]} of {ends[p]}' for p in sorted(todo))}); try again"
                )
        return records

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._consumer is not None:
                self._consumer.close()  # commits the stored offsets of a group
            if self.state is not None:
                self.state.close()

    def __enter__(self) -> Subscriber:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _counts_record(value: bytes | None, topic: str, offset: int) -> list[dict[str, Any]]:
    try:
        record = json.loads(value or b"")
    except (json.JSONDecodeError, UnicodeDecodeError):
        log.warning("%s@%d is not JSON: skipped", topic, offset)
        return []
    if not isinstance(record, dict) or record.get(contract.KIND) != contract.COUNTS_KIND:
        log.debug("%s@%d is not a counts record: skipped", topic, offset)
        return []
    return [record]
