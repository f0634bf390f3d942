"""Real alerts from Avro container files written with their survey's own schema (ZTF's archive,
Rubin's samples), byte for byte; brokers' exports of other writer schemas are read by content
(``alertsieve.alerts.exports``).

A container file stores records in blocks, compressed with any of Avro's codecs (null, deflate,
snappy, zstandard, bzip2, xz: cramjam and zstandard are dependencies for the two that need a
library). We decompress each block and cut it at record boundaries found by decoding, so each
record's bytes are exactly what the writer wrote: replaying never re-encodes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import fastavro

from alertsieve.alerts.schemas import frame
from alertsieve.errors import AlertsieveError

AVRO_MAGIC = b"Obj\x01"


class ReplayError(AlertsieveError, ValueError):
    """A path that is not a readable Avro container file, or a Parquet file (or a folder of
    them)."""


#: Fields that identify an alert, in order of preference (Rubin, older Rubin, ZTF).
ID_FIELDS = ("diaSourceId", "alertId", "candid", "objectId")


@dataclass(frozen=True)
class RawRecord:
    writer_schema: dict
    schema_json: bytes  # the writer schema as the file's header holds it
    body: bytes  # schemaless Avro of one record, as stored in the file
    key: str  # the alert's id, used as the Kafka key
    source: Path


def alert_key(record: dict) -> str:
    return next((str(record[f]) for f in ID_FIELDS if record.get(f) is not None), "")


def wire_message(raw: RawRecord, schema_id: int | None) -> bytes:
    """The alert as its survey sends it: ZTF a whole container file per message (``schema_id``
    None), Rubin the record behind the 5-byte Confluent header of its schema id."""
    from alertsieve.alerts.ztf import one_alert_container

    return (
        one_alert_container(raw.schema_json, raw.body)
        if schema_id is None
        else frame(schema_id, raw.body)
    )


#: What fastavro raises on a damaged container file.
_DAMAGED = (ValueError, EOFError, StopIteration, IndexError, OSError)


def _check_header(f: io.BufferedReader, path: Path) -> None:
    if f.read(4) != AVRO_MAGIC:
        raise ReplayError(f"{path} is not an Avro container file (no 'Obj\\x01' header)")
    f.seek(0)


def writer_schema(path: Path) -> dict:
    """The schema a container file was written with (read from its header only)."""
    with open(path, "rb") as f:
        _check_header(f, path)
        try:
            return fastavro.reader(f).writer_schema
        except _DAMAGED as e:
            raise ReplayError(f"{path} is not a readable Avro container file: {e}") from None


def count_records(path: Path) -> int:
    """Records in a container file, from its block headers: no record is decoded."""
    with open(path, "rb") as f:
        _check_header(f, path)
        try:
            return sum(block.num_records for block in fastavro.block_reader(f))
        except _DAMAGED as e:
            raise ReplayError(f"{path} is not a readable Avro container file: {e}") from None


def read_raw_records(path: Path) -> Iterator[RawRecord]:
    with open(path, "rb") as f:
        _check_header(f, path)
        try:
            blocks = fastavro.block_reader(f)
            schema = blocks.writer_schema
            schema_json = blocks.metadata["avro.schema"].encode()
            parsed = fastavro.parse_schema(schema, _force=True)
            for block in blocks:
                data = block.bytes_.getvalue()
                buf = io.BytesIO(data)
                for _ in range(block.num_records):
                    start = buf.tell()
                    record = fastavro.schemaless_reader(buf, parsed, None)
                    yield RawRecord(
                        schema, schema_json, data[start : buf.tell()], alert_key(record), path
                    )
        except _DAMAGED as e:
            raise ReplayError(f"{path} is not a readable Avro container file: {e}") from None
