"""Did the subscriber receive everything the job published? Received records against the job's
counts topic, as a pure function (no Kafka), so it is tested on plain data.

The job writes one counts record per batch after the batch's records are published: the source
offsets it read (``input``: topic -> partition -> [start, end)) and how many records each filter
published. A received record belongs to a counted batch when its filter and version are the
batch's and its source offset lies in the batch's input range. Per batch and filter, the distinct
source offsets received should number ``published``: fewer are *missing*. A batch run again after
a crash republishes its records (*duplicates*, not an error) and writes the same counts again
(deduplicated by (query_id, batch_id), the last kept). A record in no counted batch is *uncounted*:
its batch's counts were not written yet (the job stopped between publishing and counting) or came
after the counts were read; it is reported, never missing. Filter versions are kept apart: after a
redeploy one filter name has batches of two versions. Matches a filter *withheld* (its daily quota
reached: counted, never published) are reported as such, accounted for, not missing.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from alertsieve.publish import contract

#: What verification needs of a received record:
#: (filter, filter_version, source_topic, source_partition, source_offset).
Received = tuple[str | None, str | None, str | None, int | None, int | None]


def received_key(match: Any) -> Received:
    """What verification needs of a match (a ``records.Match``): copies a subscriber dropped
    count too, as received."""
    return (
        match.filter,
        match.filter_version,
        match.source_topic,
        match.source_partition,
        match.source_offset,
    )


@dataclass
class _Batch:
    ranges: dict[tuple[str, int], tuple[int, int]]
    #: filter -> (version, published, withheld), checked filters only
    published: dict[str, tuple[str, int, int]]
    keys: dict[str, set] = field(default_factory=lambda: defaultdict(set))


@dataclass
class _Index:
    """The batches of one (filter, version, source topic, partition), by range start: which
    batch (or batches, when two queries read the same offsets) holds a source offset."""

    starts: list[int] = field(default_factory=list)
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, batch number)
    max_end: list[int] = field(default_factory=list)  # running max of ends, for early stops

    def build(self) -> None:
        self.spans.sort()
        self.starts = [s for s, _, _ in self.spans]
        running = -1
        self.max_end = []
        for _, end, _ in self.spans:
            running = max(running, end)
            self.max_end.append(running)

    def holding(self, offset: int) -> list[int]:
        found = []
        j = bisect.bisect_right(self.starts, offset) - 1
        while j >= 0 and self.max_end[j] > offset:
            start, end, batch = self.spans[j]
            if start <= offset < end:
                found.append(batch)
            j -= 1
        return found


def _counted(counts: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The counts record of each batch, once: a batch run again writes its counts again (the
    last is kept)."""
    last: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for c in counts:
        if (
            isinstance(c, Mapping)
            and c.get(contract.KIND, contract.COUNTS_KIND) == contract.COUNTS_KIND
        ):
            last[(c.get(contract.QUERY_ID), c.get(contract.BATCH_ID))] = c
    return list(last.values())


def _batches(
    counts: Iterable[Mapping[str, Any]], topics: set[str], only: frozenset[str] | None = None
) -> list[_Batch]:
    batches = []
    for c in _counted(counts):
        published = {
            str(name): (
                str(f.get(contract.VERSION)),
                int(f.get(contract.PUBLISHED) or 0),
                int(f.get(contract.WITHHELD) or 0),
            )
            for name, f in (c.get(contract.FILTERS) or {}).items()
            if isinstance(f, Mapping)
            and f.get(contract.TOPIC) in topics
            and (only is None or name in only)
        }
        if not published:
            continue
        ranges = {
            (str(t), int(p)): (int(span[0]), int(span[1]))
            for t, parts in (c.get(contract.INPUT) or {}).items()
            for p, span in parts.items()
        }
        batches.append(_Batch(ranges, published))
    return batches


def lost_at_source(counts: list) -> dict[str, dict[str, list[list[int]]]]:
    """The ranges the counted batches lost at the source, each batch once."""
    out: dict[str, dict[str, list[list[int]]]] = {}
    for c in _counted(counts):
        for topic, parts in (c.get(contract.LOST_AT_SOURCE) or {}).items():
            for partition, (start, end) in parts.items():
                out.setdefault(str(topic), {}).setdefault(str(partition), []).append([start, end])
    for parts in out.values():
        for spans in parts.values():
            spans.sort()
    return out


def verify(
    received: Iterable[Received],
    counts: Iterable[Mapping[str, Any]],
    topics: Iterable[str],
    only: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Received records against counted batches (see the module doc). Returns
    ``{"complete", "batches", "filters": {name: {version: {"counted", "received", "distinct",
    "missing", "duplicates", "withheld"}}}, "uncounted"}``; only filters whose counted ``topic`` is one of
    ``topics`` (those read) are checked, and of those ``only`` the filters named there when given
    (a shared topic's reader asks for its own); ``lost_at_source``: {topic: {partition: [[start, end),
    ...]]}} of offsets the job never read because the input no longer held them (retention, a
    reset), and ``lost``, how many: never read, so never published, and never missing."""
    counts = list(counts)
    batches = _batches(counts, set(topics), frozenset(only) if only is not None else None)
    index: dict[tuple[str, str, str, int], _Index] = defaultdict(_Index)
    for number, batch in enumerate(batches):
        for name, (version, _, _) in batch.published.items():
            for (topic, partition), (start, end) in batch.ranges.items():
                if end > start:
                    index[(name, version, topic, partition)].spans.append((start, end, number))
    for entry in index.values():
        entry.build()

    received_n: dict[tuple[str, str], int] = defaultdict(int)
    distinct: dict[tuple[str, str], set] = defaultdict(set)
    uncounted = 0
    for filter_name, version, topic, partition, offset in received:
        if filter_name is None:
            continue  # the quarantine topic: no filter published it
        entry = None
        if topic is not None and partition is not None and offset is not None:
            entry = index.get((filter_name, str(version), topic, int(partition)))
        holders = entry.holding(int(offset)) if entry else []
        if not holders:
            uncounted += 1
            continue
        key = (topic, int(partition), int(offset))
        received_n[(filter_name, str(version))] += 1
        distinct[(filter_name, str(version))].add(key)
        for number in holders:
            batches[number].keys[filter_name].add(key)

    filters: dict[str, dict[str, dict[str, int]]] = {}
    for batch in batches:
        for name, (version, published, withheld) in batch.published.items():
            stats = filters.setdefault(name, {}).setdefault(
                version,
                {
                    "counted": 0,
                    "received": 0,
                    "distinct": 0,
                    "missing": 0,
                    "duplicates": 0,
                    "withheld": 0,
                },
            )
            stats["counted"] += published
            stats["withheld"] += withheld
            stats["missing"] += max(0, published - len(batch.keys.get(name, ())))
    for name, versions in filters.items():
        for version, stats in versions.items():
            stats["received"] = received_n.get((name, version), 0)
            stats["distinct"] = len(distinct.get((name, version), ()))
            stats["duplicates"] = stats["received"] - stats["distinct"]
    complete = not any(s["missing"] for v in filters.values() for s in v.values())
    lost = lost_at_source(counts)
    return {
        "complete": complete,
        "lost_at_source": lost,
        "lost": sum(e - s for parts in lost.values() for spans in parts.values() for s, e in spans),
        "batches": len(batches),
        "filters": filters,
        "uncounted": uncounted,
    }


def summary_line(report: Mapping[str, Any]) -> str:
    """One line for people: complete or how many missing (and from which filter@version),
    duplicates and records not counted yet."""
    stats = [
        (f"{name}@{version}", s)
        for name, versions in sorted(report["filters"].items())
        for version, s in sorted(versions.items())
    ]
    counted = sum(s["counted"] for _, s in stats)
    missing = sum(s["missing"] for _, s in stats)
    duplicates = sum(s["duplicates"] for _, s in stats)
    if report["complete"]:
        head = f"verified: complete, {counted - missing} of {counted} counted records received"
    else:
        which = ", ".join(f"{name} {s['missing']}" for name, s in stats if s["missing"])
        head = f"verified: INCOMPLETE, {missing} of {counted} counted records missing ({which})"
    parts = [head, f"{report['batches']} batches, {len(stats)} filter versions"]
    if duplicates:
        parts.append(f"{duplicates} duplicates (batches run again)")
    withheld = sum(s.get("withheld", 0) for _, s in stats)
    if withheld:
        parts.append(f"{withheld} matches withheld (daily quota reached: counted, not published)")
    if report.get("uncounted"):
        parts.append(f"{report['uncounted']} records not counted yet")
    if report.get("lost"):
        where = ", ".join(
            f"{topic} {partition} [{start}, {end})"
            for topic, partitions in sorted(report["lost_at_source"].items())
            for partition, spans in sorted(partitions.items())
            for start, end in spans
        )
        parts.append(
            f"{report['lost']} alerts lost at the source before the job read them ({where}):"
            " the input no longer held them, so no filter saw them"
        )
    return "; ".join(parts)
