"""The counts topic: one JSON record per hot-path batch, so any subscriber can check that it
received everything (fink-broker#934, #1220).

A record (``<prefix>counts``, one partition, keyed by the query id; its field names are
``alertsieve.publish.contract``'s)::

    {"kind": "counts", "query_id": "...", "batch_id": 7,
     "input": {"alerts": {"0": [1200, 1450], "1": [1190, 1433]}},   # offsets read, [start, end)
     "alerts_read": 493, "quarantined": 1,
     "filters": {"bright": {"version": "a1b2c3d4e5f6", "topic": "alertsieve-bright", "published": 17}, ...},
     "quarantine_topic": "alertsieve-quarantine", "written_at": 1764046000.123}

Every filter of the job is listed, zeros included. It is written when the batch is done, after
its records are on the filters' topics. A batch run again after a crash (same query id and batch
id, same offsets) republishes its records and writes its counts again, the same: a subscriber
counts its duplicates and takes the last. In Real-Time Mode a "batch" spans a checkpoint interval.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from alertsieve.publish import contract

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Published:
    """One filter as the counts name it."""

    name: str
    version: str
    topic: str


def counts_record(
    progress: dict,
    alerts_read: int,
    quarantined: int,
    matches: Mapping[str, int],
    published: list[Published],
    quarantine_topic: str,
    withheld: Mapping[str, int] | None = None,
    sizes: Mapping[str, int] | None = None,
    errors: Mapping[str, str] | None = None,
    lost: Mapping[str, Mapping[str, list[int]]] | None = None,
    failed: Mapping[str, int] | None = None,
) -> dict:
    """The counts of one batch, from Spark's progress report and the batch's observed counts;
    for the filters with a daily quota, ``withheld`` (matches not published: quota reached) and
    ``sizes`` (bytes published); for the filters that failed on some alerts, ``errors`` (and
    ``failed``, the alerts each SQL filter raised on); the offsets the input no longer held,
    ``lost`` (``alertsieve.stream.source_loss``)."""
    withheld, sizes, errors, failed = withheld or {}, sizes or {}, errors or {}, failed or {}
    return {
        contract.KIND: contract.COUNTS_KIND,
        contract.QUERY_ID: progress.get("id"),
        contract.BATCH_ID: int(progress["batchId"]),
        contract.INPUT: input_ranges(progress),
        contract.ALERTS_READ: alerts_read,
        contract.QUARANTINED: quarantined,
        contract.FILTERS: {
            p.name: {
                contract.VERSION: p.version,
                contract.TOPIC: p.topic,
                contract.PUBLISHED: int(matches.get(p.name, 0)),
                **(
                    {
                        contract.WITHHELD: int(withheld.get(p.name, 0)),
                        contract.BYTES: int(sizes.get(p.name, 0)),
                    }
                    if p.name in sizes or p.name in withheld
                    else {}
                ),
                **({contract.ERROR: errors[p.name]} if p.name in errors else {}),
                **({contract.FAILED_ALERTS: failed[p.name]} if p.name in failed else {}),
            }
            for p in published
        },
        contract.QUARANTINE_TOPIC: quarantine_topic,
        **({contract.LOST_AT_SOURCE: {t: dict(p) for t, p in lost.items()}} if lost else {}),
        contract.WRITTEN_AT: round(time.time(), 3),
    }


def input_ranges(progress: dict) -> dict[str, dict[str, list[int]]]:
    """{topic: {partition: [start, end)}} the batch read. A first batch's start is not reported
    by Spark: it is then 0 (no earlier offset was read by this query)."""
    out: dict[str, dict[str, list[int]]] = {}
    for source in progress.get("sources", []):
        start, end = offsets_of(source.get("startOffset")), offsets_of(source.get("endOffset"))
        for topic, parts in end.items():
            for partition, stop in parts.items():
                begin = start.get(topic, {}).get(partition, 0)
                if stop > begin:
                    out.setdefault(topic, {})[partition] = [begin, stop]
    return out


def offsets_of(value) -> dict[str, dict[str, int]]:
    """A progress report's offsets ({topic: {partition: offset}}; Spark gives them as JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {
        t: {str(p): int(o) for p, o in parts.items()}
        for t, parts in value.items()
        if isinstance(parts, dict)
    }


class CountsTopic:
    """Writes counts records to ``topic``; each is flushed before the next batch is counted."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        kafka_conf: Mapping[str, str],
        published: list[Published],
        quarantine_topic: str,
    ):
        from confluent_kafka import Producer

        from alertsieve.kafka.client_security import librdkafka_conf

        self.topic, self.published, self.quarantine_topic = topic, published, quarantine_topic
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                **librdkafka_conf(kafka_conf),
                "enable.idempotence": True,
                # a batch's record names every filter: ~1 MB of JSON at 10,000 filters, past
                # the client's 1 MB default (the job's topics take 16 MB), sent compressed
                "message.max.bytes": 16 * 1024 * 1024,
                "compression.type": "zstd",
            }
        )

    def use(self, published: list[Published]) -> None:
        """The filters of the batches from now on (a redeployed job)."""
        self.published = published

    def write(
        self,
        progress: dict,
        alerts_read: int,
        quarantined: int,
        matches: Mapping[str, int],
        withheld: Mapping[str, int] | None = None,
        sizes: Mapping[str, int] | None = None,
        errors: Mapping[str, str] | None = None,
        lost: Mapping[str, Mapping[str, list[int]]] | None = None,
        failed: Mapping[str, int] | None = None,
    ) -> dict:
        record = counts_record(
            progress,
            alerts_read,
            quarantined,
            matches,
            self.published,
            self.quarantine_topic,
            withheld,
            sizes,
            errors,
            lost,
            failed,
        )
        self._producer.produce(
            self.topic,
            key=str(record[contract.QUERY_ID]).encode(),
            value=json.dumps(record).encode(),
        )
        left = self._producer.flush(30)
        if left:
            log.error(
                "counts of batch %s not acknowledged by %s after 30 s",
                record[contract.BATCH_ID],
                self.topic,
            )
        return record

    def quota_reached(
        self, name: str, version: str, day: str, used: Mapping[str, int], quota: Mapping[str, int]
    ) -> None:
        """One record when a filter reaches its daily quota: from now to the end of the UTC day
        its matches are withheld (counted per batch as ``withheld``)::

            {"kind": "quota", "filter": "bright", "version": "a1b2...", "day": "2026-11-27",
             "used": {"records": 26, "bytes": 2600000}, "quota": {"records": 25},
             "written_at": 1764046000.123}
        """
        record = {
            contract.KIND: contract.QUOTA_KIND,
            contract.FILTER: name,
            contract.VERSION: version,
            contract.DAY: day,
            contract.USED: dict(used),
            contract.QUOTA: dict(quota),
            contract.WRITTEN_AT: round(time.time(), 3),
        }
        self._producer.produce(self.topic, key=name.encode(), value=json.dumps(record).encode())
        if self._producer.flush(30):
            log.error("the quota record of %s not acknowledged by %s after 30 s", name, self.topic)

    def refused(self, refused: Mapping[str, tuple[str, Mapping[str, str]]]) -> None:
        """One record of what a deployment refused (``on_bad_filter: skip``), per filter (or
        file that did not load): the reason, and the running versions that go on in its place
        (none: left out)::

            {"kind": "refused", "filters": {"broken": {"reason": "...",
             "running_versions": {"broken": "a1b2c3d4e5f6"}}}, "written_at": 1764046000.123}
        """
        record = {
            contract.KIND: contract.REFUSED_KIND,
            contract.FILTERS: {
                name: {contract.REASON: reason, contract.RUNNING_VERSIONS: dict(versions)}
                for name, (reason, versions) in refused.items()
            },
            contract.WRITTEN_AT: time.time(),
        }
        self._producer.produce(self.topic, key=b"refused", value=json.dumps(record).encode())
        if self._producer.flush(30):
            log.error("the refused filters' record not acknowledged by %s after 30 s", self.topic)

    def deployed(
        self,
        topic: str,
        versions: Mapping[str, str],
        refused: Mapping[str, tuple[str, Mapping[str, str]]],
    ) -> None:
        """The deployment record (what runs, and what was refused, with why) on ``topic``, the
        job's compacted deployment topic: a reader finds what holds now in one record, however
        long the job has run::

            {"kind": "deployment", "filters": {"bright": {"version": "a1b2c3d4e5f6"}},
             "refused": {"broken": {"reason": "...", "running_versions": {}}},
             "written_at": 1764046000.123}
        """
        record = {
            contract.KIND: contract.DEPLOYMENT_KIND,
            contract.FILTERS: {n: {contract.VERSION: v} for n, v in versions.items()},
            contract.REFUSED: {
                name: {contract.REASON: reason, contract.RUNNING_VERSIONS: dict(going)}
                for name, (reason, going) in refused.items()
            },
            contract.WRITTEN_AT: time.time(),
        }
        self._producer.produce(topic, key=b"deployment", value=json.dumps(record).encode())
        if self._producer.flush(30):
            log.error("the deployment record not acknowledged by %s after 30 s", topic)

    def close(self) -> None:
        """Flush and disconnect (a producer left open complains when the broker goes away)."""
        self._producer.flush(30)
        self._producer.close()


def read_counts(
    bootstrap: str,
    topic: str,
    kafka_conf: dict[str, str] | None = None,
    since_ms: int | None = None,
) -> list[dict]:
    """The JSON records of a counts topic in order (it has one partition), or those stamped at
    or after ``since_ms``; a value that is not JSON (another writer's) is passed over."""
    from alertsieve.kafka.topics import head_messages

    records = []
    for value in head_messages(
        bootstrap, [topic], 10**9, kafka_conf, timeout=60, since_ms=since_ms
    ):
        try:
            records.append(json.loads(value))
        except ValueError:
            continue
    return records
