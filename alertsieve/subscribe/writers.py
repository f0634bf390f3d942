"""Save matches: JSON lines, one Parquet file, or a folder of Parquet parts (the two Parquet
writers are in ``subscribe.parquet``: they need pyarrow, the ``tables`` extra).

Every format has one row per match (``rows.row_of``): the meta columns beside the record's own
top-level fields, nested as the alert is (``diaSource`` a struct, ``prvDiaSources`` a list of
structs). Rows of different Rubin schema versions, ZTF alerts and fields records coexist: a column
a row lacks is null (see ``arrow_types`` for how the column types are unified).

- JSON lines (``.jsonl``): one object per line; bytes (the FITS cutouts) as base64 text (standard
  alphabet, padded), NaN and infinities as null (JSON has neither), timestamps as ISO 8601 text.
- One Parquet file (``.parquet``): each write call goes to a hidden part file beside it, and
  ``close()`` joins them into the file, in one schema: a file's schema is fixed when its first row
  group is written, and a later alert may bring a newer schema version. Bytes stay binary.
- A folder (``DIR/``): one Parquet file per write call, ``part-00000.parquet`` on (continuing
  after the folder's highest part), each with its own schema; ``parquet.read_parquet`` joins them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.records import Match
from alertsieve.subscribe.rows import TABLES_EXTRA, Writer, jsonable, row_of


class JsonLinesWriter(Writer):
    """One JSON object per match and line (see the module doc for bytes, NaN and dates).
    ``resume``: a :meth:`mark` of an earlier run (a subscriber's state): the file is cut back
    to it and written on, so lines written after that mark are not kept twice."""

    def __init__(self, path: Path | str, resume: int | None = None):
        super().__init__(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume is not None and self.path.exists():
            with self.path.open("r+b") as cut:
                cut.truncate(int(resume))
            self._file = self.path.open("a", encoding="utf-8")
        else:
            self._file = self.path.open("w", encoding="utf-8")

    def mark(self) -> int:
        """How far the file is written (bytes)."""
        return self._file.tell()

    def write(self, matches: Iterable[Match | Mapping[str, Any]]) -> int:
        n = 0
        for match in matches:
            self._file.write(json.dumps(jsonable(row_of(match)), allow_nan=False) + "\n")
            n += 1
        self._file.flush()  # a follower stopped with Ctrl-C keeps every line it printed
        self.rows += n
        return n

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def open_writer(target: Path | str, resume: Any = None, resumable: bool = False) -> Writer:
    """The writer ``target`` names: ``*.parquet`` one file, ``*.jsonl`` (or ``.json``) JSON
    lines, ``DIR/`` (or an existing folder) Parquet parts. ``resumable``: a subscriber with a
    state file, whose writer must have a ``mark`` and go on from ``resume``, one of them."""
    text = str(target)
    path = Path(target)
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return JsonLinesWriter(path, resume)
    if not (text.endswith(("/", "\\")) or path.is_dir() or path.suffix == ".parquet"):
        raise SubscribeError(
            f"--to {text}: end it with .parquet (one file), .jsonl (JSON lines) or / (a folder of Parquet parts)"
        )
    try:
        from alertsieve.subscribe import parquet
    except ImportError as e:
        if e.name != "pyarrow":
            raise
        raise SubscribeError(
            f"--to {text}: Parquet needs pyarrow, which this install has not: {TABLES_EXTRA}"
            " (or save JSON lines: --to FILE.jsonl)"
        ) from None
    if path.suffix == ".parquet" and not text.endswith(("/", "\\")) and not path.is_dir():
        if resumable:
            raise SubscribeError(
                f"--to {text}: one Parquet file is made when the subscriber stops, so a restart"
                " cannot go on with it; with --state save to a folder (--to DIR/) or JSON lines"
            )
        return parquet.ParquetFileWriter(path)
    return parquet.ParquetDirWriter(path, resume)
