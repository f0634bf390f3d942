"""Save matches: JSON lines, one Parquet file, or a folder of Parquet parts.

Every format has one row per match: the meta columns (:data:`META`, named with a leading ``_``:
where the match was read, which filter and version published it, which payload, where the alert
came from) beside the record's own top-level fields, nested as the alert is (``diaSource`` a
struct, ``prvDiaSources`` a list of structs). Rows of different Rubin schema versions, ZTF alerts
and fields records coexist: a column a row lacks is null (see ``arrow_types`` for how the
column types are unified).

- JSON lines (``.jsonl``): one object per line; bytes (the FITS cutouts) as base64 text (standard
  alphabet, padded), NaN and infinities as null (JSON has neither), timestamps as ISO 8601 text.
- One Parquet file (``.parquet``): each write call goes to a hidden part file beside it, and
  ``close()`` joins them into the file, in one schema: a file's schema is fixed when its first row
  group is written, and a later alert may bring a newer schema version. Bytes stay binary.
- A folder (``DIR/``): one Parquet file per write call, ``part-00000.parquet`` on (continuing
  after the folder's highest part), each with its own schema; :func:`read_parquet` joins them.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from alertsieve.subscribe.arrow_types import (
    conform_table,
    jsonable,
    record_types,
    table_of,
    unify_schemas,
)
from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.records import Match

log = logging.getLogger(__name__)

#: The meta columns, in order, with the Match attribute each comes from.
META = pa.schema(
    [
        ("_topic", pa.string()),
        ("_partition", pa.int32()),
        ("_offset", pa.int64()),
        ("_filter", pa.string()),
        ("_filter_version", pa.string()),
        ("_payload", pa.string()),
        ("_source_topic", pa.string()),
        ("_source_partition", pa.int32()),
        ("_source_offset", pa.int64()),
    ]
)
PART = "part-{:05d}.parquet"


def row_of(match: Match | Mapping[str, Any]) -> dict[str, Any]:
    """A match (or its ``as_dict()``) as one flat row: meta columns, then the record's fields."""
    m = match.as_dict() if isinstance(match, Match) else match
    row = {f.name: m.get(f.name[1:]) for f in META}
    for name, value in (m.get("record") or {}).items():
        if name in row:
            log.warning("record field %s hides a meta column of the same name: dropped", name)
            continue
        row[name] = value
    return row


def matches_table(matches: Iterable[Match | Mapping[str, Any]]) -> pa.Table:
    """The rows of ``matches`` as an Arrow table (meta columns first); a :class:`Match` with its
    Avro schema gets its columns' types from it, others from their values."""
    matches = list(matches)
    known = [record_types(m.schema) if isinstance(m, Match) and m.schema else None for m in matches]
    return table_of([row_of(m) for m in matches], fixed=META, known=known)


class _Writer:
    """A context manager counting rows; ``write`` takes one batch of matches."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.rows = 0

    def write(self, matches: Iterable[Match | Mapping[str, Any]]) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class JsonLinesWriter(_Writer):
    """One JSON object per match and line (see the module doc for bytes, NaN and dates)."""

    def __init__(self, path: Path | str):
        super().__init__(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")

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


class ParquetDirWriter(_Writer):
    """One Parquet part per non-empty write call, numbered on from the folder's highest part."""

    def __init__(self, directory: Path | str):
        super().__init__(directory)
        self.path.mkdir(parents=True, exist_ok=True)
        numbers = [
            int(p.stem.split("-")[1])
            for p in self.path.glob("part-*.parquet")
            if p.stem.split("-")[1].isdigit()
        ]
        self._next = max(numbers, default=-1) + 1
        self.parts: list[Path] = []

    def write(self, matches: Iterable[Match | Mapping[str, Any]]) -> int:
        table = matches_table(matches)
        if not table.num_rows:
            return 0
        path = self.path / PART.format(self._next)
        tmp = path.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp)
        tmp.replace(path)  # a reader never sees half a part
        self._next += 1
        self.parts.append(path)
        self.rows += table.num_rows
        return table.num_rows


class ParquetFileWriter(_Writer):
    """One Parquet file of every match, made at ``close()`` from parts kept beside it."""

    def __init__(self, path: Path | str):
        super().__init__(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._parts_dir = self.path.parent / f".{self.path.name}.parts"
        shutil.rmtree(self._parts_dir, ignore_errors=True)  # left by a run that was killed
        self._parts = ParquetDirWriter(self._parts_dir)
        self._closed = False

    def write(self, matches: Iterable[Match | Mapping[str, Any]]) -> int:
        n = self._parts.write(matches)
        self.rows += n
        return n

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        parts = self._parts.parts
        schema = unify_schemas([META, *(pq.read_schema(p) for p in parts)])
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with pq.ParquetWriter(tmp, schema) as writer:
            if not parts:
                writer.write_table(pa.Table.from_pylist([], schema=schema))
            for part in parts:  # one at a time: a part's cutouts may be hundreds of MB
                writer.write_table(conform_table(pq.read_table(part), schema))
        tmp.replace(self.path)
        shutil.rmtree(self._parts_dir, ignore_errors=True)
        log.info("wrote %d matches to %s", self.rows, self.path)


def open_writer(target: Path | str) -> _Writer:
    """The writer ``target`` names: ``*.parquet`` one file, ``*.jsonl`` (or ``.json``) JSON
    lines, ``DIR/`` (or an existing folder) Parquet parts."""
    text = str(target)
    path = Path(target)
    if text.endswith(("/", "\\")) or path.is_dir():
        return ParquetDirWriter(path)
    if path.suffix == ".parquet":
        return ParquetFileWriter(path)
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return JsonLinesWriter(path)
    raise SubscribeError(
        f"--to {text}: end it with .parquet (one file), .jsonl (JSON lines) or / (a folder of Parquet parts)"
    )


def read_parquet(path: Path | str) -> pa.Table:
    """Matches saved as one Parquet file or a folder of parts, as one table (parts of different
    schemas joined as the file writer joins them)."""
    path = Path(path)
    if path.is_file():
        return pq.read_table(path)
    parts = sorted(path.glob("part-*.parquet"))
    schema = unify_schemas([META, *(pq.read_schema(p) for p in parts)])
    tables = [conform_table(pq.read_table(p), schema) for p in parts]
    return pa.concat_tables(tables) if tables else pa.Table.from_pylist([], schema=schema)
