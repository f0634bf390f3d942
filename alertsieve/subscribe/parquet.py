"""The Parquet writers ``writers.open_writer`` opens (one file, or a folder of parts) and their
reader: Arrow tables of matches, typed from each match's Avro schema (``arrow_types``). pyarrow is
the ``tables`` extra: a subscriber's install without it saves JSON lines."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from alertsieve.subscribe.arrow_types import (
    conform_table,
    record_types,
    table_of,
    unify_schemas,
)
from alertsieve.subscribe.records import Match
from alertsieve.subscribe.rows import META_COLUMNS, Writer, row_of

log = logging.getLogger(__name__)

#: The meta columns as an Arrow schema.
META = pa.schema([(name, pa.type_for_alias(t)) for name, t in META_COLUMNS.items()])
PART = "part-{:05d}.parquet"


def matches_table(matches: Iterable[Match | Mapping[str, Any]]) -> pa.Table:
    """The rows of ``matches`` as an Arrow table (meta columns first); a :class:`Match` with its
    Avro schema gets its columns' types from it, others from their values."""
    matches = list(matches)
    known = [record_types(m.schema) if isinstance(m, Match) and m.schema else None for m in matches]
    return table_of([row_of(m) for m in matches], fixed=META, known=known)


class ParquetDirWriter(Writer):
    """One Parquet part per non-empty write call, numbered on from the folder's highest part.
    ``resume``: a :meth:`mark` of an earlier run (a subscriber's state): parts from it on were
    written after the last confirmation and are removed, to be written again."""

    def __init__(self, directory: Path | str, resume: int | None = None):
        super().__init__(directory)
        self.path.mkdir(parents=True, exist_ok=True)
        numbered = {
            int(p.stem.split("-")[1]): p
            for p in self.path.glob("part-*.parquet")
            if p.stem.split("-")[1].isdigit()
        }
        if resume is not None:
            for number, part in numbered.items():
                if number >= int(resume):
                    part.unlink()
            numbered = {n: p for n, p in numbered.items() if n < int(resume)}
        self._next = max(numbered, default=-1) + 1
        self.parts: list[Path] = []

    def mark(self) -> int:
        """The number the next part will have."""
        return self._next

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


class ParquetFileWriter(Writer):
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
