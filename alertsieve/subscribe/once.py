"""Each match received once, and if asked once per object: the subscriber's gate, pure logic.

Kafka outputs are at least once. A batch the job runs again (after a crash, or when it meets a
writer schema mid-stream and re-plans) publishes again what its first attempt published, so a
topic can hold a match twice. The gate lets the first copy through and drops the others, keyed
per (filter, version, alert id) as the issue of a subscriber's dedup asks.

**The bound.** The gate remembers the last ``window`` keys it let through (first in, first out).
A duplicate follows its first copy closely: the batch run again is the next thing the job
publishes after the restart, so between the two copies lie at most one batch's records of the
topic (``maxOffsetsPerTrigger`` alerts times the share that matched) plus what other partitions
brought meanwhile. The default, 100,000, holds ten full 10,000-alert visits of a filter that
passed every alert; a larger window costs about 100 bytes a key.

**Once per object.** ``once_per="object"`` lets through the first match of each object per
filter (Rubin ``diaObjectId``, else ``ssObjectId``; ZTF ``objectId``), ``"night"`` the first of
each object per filter and observing night; the others are *held back* and counted. The objects
remembered are bounded too (``objects``, first in, first out): after that many other objects an
object is news again. A match naming no object (a fields record without an id field) always
passes.

**Delivered, then remembered.** :meth:`Gate.sift` decides; a key joins the memory that a restart
reads back only when :meth:`Gate.delivered` confirms it, so a match lost in a crash before its
delivery is delivered after the restart (``subscribe.state`` keeps the memory in a file).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.identity import identity, night_of

if TYPE_CHECKING:  # the CLI reads this module's defaults without the decoders
    from alertsieve.subscribe.records import Match

ONCE_PER = ("object", "night")
DEFAULT_WINDOW = 100_000
DEFAULT_OBJECTS = 1_000_000
#: Separates a key's parts (names and ids never hold it).
SEP = "\x1f"


class Recent:
    """A set of the last ``capacity`` keys added: the oldest leave first."""

    def __init__(self, capacity: int, keys: Iterable[str] = ()):
        if capacity < 1:
            raise SubscribeError(f"a memory of {capacity} keys: give at least 1")
        self.capacity = capacity
        self._keys: OrderedDict[str, None] = OrderedDict()
        for key in keys:
            self.add(key)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def add(self, key: str) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self.capacity:
            self._keys.popitem(last=False)


def match_key(match: Match) -> str:
    """(filter, version, alert id); a quarantined record, nobody's match, by its source."""
    if match.filter is None:
        where = (match.source_topic, match.source_partition, match.source_offset)
        return SEP.join(["", "quarantine", *map(str, where)])
    alert = match.alert_id or f"{match.source_topic}:{match.source_partition}:{match.source_offset}"
    return SEP.join([match.filter, str(match.filter_version), str(alert)])


def object_key(match: Match, once_per: str) -> str | None:
    """(filter, object[, night]) of a match, None when it names no object (it always passes)."""
    if match.filter is None:
        return None
    who = identity(match.record, match.payload, match.survey)
    if who.object_id is None:
        return None
    parts = [match.filter, f"{who.object_kind}:{who.object_id}"]
    if once_per == "night":
        if who.mjd is None:
            return None
        parts.append(str(night_of(who.mjd, match.survey)))
    return SEP.join(parts)


@dataclass
class Sifted:
    """One poll's matches: those to deliver, and those dropped (duplicates, held back)."""

    kept: list[Match] = field(default_factory=list)
    duplicates: list[Match] = field(default_factory=list)
    held_back: list[Match] = field(default_factory=list)


class Gate:
    """Decides which matches a subscriber delivers (see the module doc). ``dedup=False`` lets
    every copy through (an auditor reading the topic as it is)."""

    def __init__(
        self,
        *,
        dedup: bool = True,
        once_per: str | None = None,
        window: int = DEFAULT_WINDOW,
        objects: int = DEFAULT_OBJECTS,
    ):
        if once_per is not None and once_per not in ONCE_PER:
            raise SubscribeError(f"--once-per {once_per}: choose object or night")
        self.dedup = dedup
        self.once_per = once_per
        self.recent = Recent(window)
        self.objects = Recent(objects)
        self.duplicates = 0
        self.held_back = 0
        #: Keys let through but not yet confirmed delivered (``delivered``).
        self._undelivered: set[str] = set()
        self._unheard: set[str] = set()
        #: Confirmed since the last ``take_confirmed``: what a state file appends.
        self._confirmed: dict[str, list[str]] = {"keys": [], "objects": []}

    def sift(self, matches: Iterable[Match]) -> Sifted:
        """Which of one poll's matches to deliver: each key once, each object once (if asked)."""
        out = Sifted()
        for match in matches:
            key = match_key(match)
            if self.dedup and (key in self.recent or key in self._undelivered):
                self.duplicates += 1
                out.duplicates.append(match)
                continue
            obj = object_key(match, self.once_per) if self.once_per else None
            if obj is not None and (obj in self.objects or obj in self._unheard):
                self.held_back += 1
                out.held_back.append(match)
                continue
            self._undelivered.add(key)
            if obj is not None:
                self._unheard.add(obj)
            out.kept.append(match)
        return out

    def delivered(self, matches: Iterable[Match]) -> None:
        """Confirm delivery: these matches' keys (and objects) join the memory."""
        for match in matches:
            key = match_key(match)
            self._undelivered.discard(key)
            self._remember(self.recent, "keys", key)
            obj = object_key(match, self.once_per) if self.once_per else None
            if obj is not None:
                self._unheard.discard(obj)
                self._remember(self.objects, "objects", obj)

    def _remember(self, memory: Recent, kind: str, key: str) -> None:
        if key not in memory:
            memory.add(key)
            self._confirmed[kind].append(key)

    def take_confirmed(self) -> dict[str, list[str]]:
        """The keys and objects confirmed since the last call (for ``subscribe.state``)."""
        taken, self._confirmed = self._confirmed, {"keys": [], "objects": []}
        return taken

    def snapshot(self) -> dict[str, Any]:
        """The whole memory, oldest first: a compacted state file's content."""
        return {"keys": list(self.recent), "objects": list(self.objects)}

    def restore(self, keys: Iterable[str], objects: Iterable[str]) -> None:
        """Remember these, oldest first (a state file read back)."""
        for key in keys:
            self.recent.add(key)
        for obj in objects:
            self.objects.add(obj)
