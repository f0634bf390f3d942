"""Alerts lost at the source: offsets a batch was to read that the input no longer held.

A topic keeps alerts for its retention period; a job stopped for longer (or a partition reset)
finds the offsets its checkpoint says are next gone. With ``on_source_loss: continue`` Spark
reads on from the earliest offset held, and the job says what it skipped: a batch whose offset
ranges hold more offsets than it read rows lost the difference, and the partitions' earliest
offsets now tell where (``lost_ranges``). One WARNING line per such batch, and the ranges on the
counts topic (``lost_at_source``), so ``listen --verify`` reports them as lost, not missing.

Offsets are counted as alerts: true of the topics alert producers write (not transactional, not
compacted), whose offsets have no gaps."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from alertsieve.publish.counts import offsets_of

log = logging.getLogger(__name__)

#: {topic: {partition: [start, end)}}, partitions as text (as the counts topic writes them)
Ranges = dict[str, dict[str, list[int]]]


def read_ranges(progress: dict) -> Ranges:
    """The offsets a batch was to read, of the partitions whose start the checkpoint gave (a
    query's first batch, or a partition new to it, starts where it is told: nothing to lose)."""
    out: Ranges = {}
    for source in progress.get("sources", []):
        start, end = offsets_of(source.get("startOffset")), offsets_of(source.get("endOffset"))
        for topic, parts in end.items():
            for partition, stop in parts.items():
                begin = start.get(topic, {}).get(partition)
                if begin is not None and stop > begin:
                    out.setdefault(topic, {})[partition] = [begin, stop]
    return out


def lost_ranges(ranges: Ranges, missing: int, earliest: Mapping[tuple[str, str], int]) -> Ranges:
    """Where ``missing`` offsets of ``ranges`` went: in each partition from the batch's start to
    the earliest offset held (``earliest``, asked after the batch: retention may have gone
    further since, so the ranges are trimmed to ``missing`` in all)."""
    out: Ranges = {}
    left = missing
    for topic, parts in sorted(ranges.items()):
        for partition, (start, end) in sorted(parts.items(), key=lambda kv: int(kv[0])):
            gone = min(max(earliest.get((topic, partition), start) - start, 0), end - start, left)
            if gone > 0:
                out.setdefault(topic, {})[partition] = [start, start + gone]
                left -= gone
    return out


def lost_count(lost: Ranges) -> int:
    return sum(end - start for parts in lost.values() for start, end in parts.values())


def loss_line(batch_id: int, lost: Ranges) -> str:
    """The one line a person running the job reads about a loss."""
    where = "; ".join(
        f"{topic} partition {partition} offsets {start}-{end - 1} ({end - start})"
        for topic, parts in lost.items()
        for partition, (start, end) in parts.items()
    )
    return (
        f"batch {batch_id}: {lost_count(lost)} alerts lost at the source, never read: {where};"
        " the input no longer held them (its retention, or a reset), and the job went on from"
        " the earliest offsets held (on_source_loss: continue); counted as lost_at_source"
    )


class SourceLosses:
    """What each batch lost at the source, asked of the input's partitions only when a batch
    read fewer rows than its offsets span."""

    def __init__(self, earliest: Callable[[list[tuple[str, int]]], dict[tuple[str, int], int]]):
        """``earliest(partitions)``: each (topic, partition)'s earliest offset held."""
        self.earliest = earliest

    def __call__(self, progress: dict, rows_read: int) -> Ranges:
        ranges = read_ranges(progress)
        missing = sum(e - s for parts in ranges.values() for s, e in parts.values()) - rows_read
        if missing <= 0:
            return {}
        held = self.earliest([(t, int(p)) for t, parts in ranges.items() for p in parts])
        return lost_ranges(ranges, missing, {(t, str(p)): o for (t, p), o in held.items()})
