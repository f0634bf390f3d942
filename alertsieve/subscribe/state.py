"""A subscriber's memory across restarts, in one small file (``listen --state FILE``).

It holds where to read on (the next offset of each partition), the gate's memory (the keys and
objects delivered: ``subscribe.once``) and the sink's mark (how far the output file or folder was
written when that was confirmed). A restarted subscriber reads on from those offsets, drops what
it already delivered, and cuts its output back to the mark, so a match written after the last
confirmation but before a ``kill -9`` is written again once, not twice.

The file is a journal: one JSON line per confirmation, appended and flushed (a process killed
at any point leaves whole lines and at most one torn last line, which is ignored). When it has
grown past ``COMPACT_AFTER`` lines it is rewritten as one line holding everything (to a
temporary file, then renamed over it). A consumer group's committed offsets could say where to
read on, but not what was delivered in between; the file says both, and needs no group.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.once import Gate

log = logging.getLogger(__name__)

#: Lines after which the journal is rewritten as one.
COMPACT_AFTER = 1000
TP = tuple[str, int]


@dataclass
class Loaded:
    """What a state file held: next offsets, the gate's memory, the sink's last mark."""

    offsets: dict[TP, int] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)
    mark: Any = None


def _read(path: Path) -> Loaded:
    loaded = Loaded()
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):  # the line a killed process was writing
                log.info("%s: its last line was cut short by a stop; ignored", path)
                break
            raise SubscribeError(
                f"--state {path}: line {number} is not JSON; the file is damaged: move it"
                " away to start over (what was delivered may then be delivered again)"
            ) from None
        for topic, partition, offset in entry.get("offsets", []):
            loaded.offsets[(topic, int(partition))] = int(offset)
        loaded.keys += entry.get("keys", [])
        loaded.objects += entry.get("objects", [])
        if "mark" in entry:
            loaded.mark = entry["mark"]
    return loaded


class StateFile:
    """The journal of one subscriber (see the module doc)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.loaded = _read(self.path) if self.path.exists() else Loaded()
        self._offsets = dict(self.loaded.offsets)
        self._mark = self.loaded.mark
        self._lines = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def restore(self, gate: Gate) -> None:
        """Give the gate the memory the file held."""
        gate.restore(self.loaded.keys, self.loaded.objects)

    def commit(self, gate: Gate, offsets: dict[TP, int] | None = None, mark: Any = None) -> None:
        """Append what was confirmed since the last commit: the gate's new keys and objects,
        the offsets read on from (when a whole poll was delivered) and the sink's mark."""
        entry: dict[str, Any] = {k: v for k, v in gate.take_confirmed().items() if v}
        if offsets:
            self._offsets.update(offsets)
            entry["offsets"] = [[t, p, o] for (t, p), o in offsets.items()]
        if mark is not None:
            self._mark = entry["mark"] = mark
        if not entry:
            return
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._file.flush()
        self._lines += 1
        if self._lines >= COMPACT_AFTER:
            self._compact(gate)

    def _compact(self, gate: Gate) -> None:
        whole: dict[str, Any] = {
            "offsets": [[t, p, o] for (t, p), o in self._offsets.items()],
            **gate.snapshot(),
        }
        if self._mark is not None:
            whole["mark"] = self._mark
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(whole, separators=(",", ":")) + "\n", encoding="utf-8")
        self._file.close()
        os.replace(tmp, self.path)
        self._file = self.path.open("a", encoding="utf-8")
        self._lines = 0

    def close(self) -> None:
        self._file.close()
