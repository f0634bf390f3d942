"""One bad filter refused alone (``on_bad_filter: skip``): which filters a job leaves out and
why, and, for a running job (``--watch``), the running version it keeps of each refused change.

With ``fail`` (the default) the first bad filter's error stops the start-up or refuses the whole
deployment, as before. With ``skip`` an error that names its filter (``FilterError.filter``) or
its file (``FilterError.origin``: a module that does not import, a table that does not parse)
leaves that one out; where the running job has a version of it, that version goes on. Each
refusal is checked again with the rest (``leave_out`` returns the set to try next): a set
shrinks by at least one filter per error, so it ends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from alertsieve.filtering.discovery import source_of
from alertsieve.filtering.model import Filter, FilterError

log = logging.getLogger(__name__)

FAIL = "fail"
SKIP = "skip"


@dataclass
class Refusals:
    """The refusals of one plan. ``running``: the running job's filters (under ``--watch``)."""

    skip: bool
    running: list[Filter] = field(default_factory=list)
    #: filter name (or file, when the file did not load) -> why it was refused
    refused: dict[str, str] = field(default_factory=dict)
    #: names whose running version goes on in place of a refused change
    kept: set[str] = field(default_factory=set)

    def file_failed(self, error: FilterError) -> None:
        """``discover``'s ``on_bad_file``: a file that does not load is refused."""
        self.refused[error.origin or str(error)] = str(error)

    def kept_from_failed_files(self) -> list[Filter]:
        """The running filters of the files that did not load: they go on as they were."""
        files = set(self.refused)
        out = [f for f in self.running if source_of(f) in files]
        self.kept |= {f.name for f in out}
        return out

    def leave_out(self, filters: list[Filter], error: FilterError) -> list[Filter]:
        """``filters`` without the one ``error`` names (and with its running version, once), or
        ``error`` raised when the job does not skip, or no filter of the set is named."""
        named = [f for f in filters if _named_by(f, error)] if self.skip else []
        if not named:
            raise error
        out = [f for f in filters if f not in named]
        running = {f.name: f for f in self.running}
        for f in named:
            self.refused[f.name] = str(error)
            old = running.get(f.name)
            if old is not None and f.name not in self.kept:
                self.kept.add(f.name)
                out.append(old)
            else:
                self.kept.discard(f.name)
        return out

    def lines(self) -> list[str]:
        """One line per refusal, as the console and the log say it."""
        return [
            # A file's reason begins with the file already.
            f"refused {reason if reason.startswith(name) else f'{name}: {reason}'}"
            + ("; its running version goes on" if self.going_on(name) else "; left out")
            for name, reason in self.refused.items()
        ]

    def going_on(self, refused: str) -> list[str]:
        """The filters whose running version goes on in place of a refused filter (its own name)
        or file (its filters)."""
        return [
            f.name
            for f in self.running
            if f.name in self.kept and refused in (f.name, source_of(f))
        ]


def _named_by(f: Filter, error: FilterError) -> bool:
    if error.filter is not None:
        return f.name == error.filter
    return error.origin is not None and source_of(f) == error.origin
