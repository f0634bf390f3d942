"""Real alerts from Avro container files (ZTF's archive, Rubin's samples, brokers' exports), byte
for byte.

A container file stores records in blocks, compressed with any of Avro's codecs (null, deflate,
snappy, zstandard, bzip2, xz: cramjam and zstandard are dependencies for the two that need a
library). We decompress each block and cut it at record boundaries found by decoding, so each
record's bytes are exactly what the writer wrote: replaying never re-encodes.

Which survey a file holds is read from its writer schema's fields, not its record's name: brokers'
samples are often Spark exports, whose alert record is ``topLevelRecord`` with its fields
reordered and its unions written ``[T, "null"]``, and they must still go out as their survey sends
them.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import fastavro

from alertsieve.alerts.schemas import frame, rubin_version_of
from alertsieve.errors import AlertsieveError

AVRO_MAGIC = b"Obj\x01"


class ReplayError(AlertsieveError, ValueError):
    """A path that is not a readable Avro container file (or a folder of them), or whose records
    are no survey's alerts."""


#: Fields that identify an alert, in order of preference (Rubin, older Rubin, ZTF).
ID_FIELDS = ("diaSourceId", "alertId", "candid", "objectId")

#: A ZTF alert by its fields, whatever its records are called: these at the top, and in
#: ``candidate`` what any ZTF filter reads (every ZTF schema version has them).
ZTF_FIELDS = ("objectId", "candid", "candidate", "prv_candidates")
ZTF_CANDIDATE = ("jd", "fid", "magpsf", "sigmapsf", "isdiffpos")
#: A Rubin alert not named ``lsst.vM_N.alert``: the detection's time in ``diaSource`` (v5.0 on)
#: and the alert's id at the top (``alertId`` before v8.0, ``diaSourceId`` since).
RUBIN_SOURCE = ("midpointMjdTai",)
RUBIN_IDS = ("alertId", "diaSourceId")

Survey = Literal["ztf", "rubin"]


@dataclass(frozen=True)
class RawRecord:
    writer_schema: dict
    schema_json: bytes  # the writer schema as the file's header holds it
    body: bytes  # schemaless Avro of one record, as stored in the file
    key: str  # the alert's id, used as the Kafka key
    source: Path


def alert_key(record: dict) -> str:
    return next((str(record[f]) for f in ID_FIELDS if record.get(f) is not None), "")


def _fields(record: dict) -> dict[str, set[str]]:
    """Top-level field -> the fields of its record (empty when it is no record), a nullable
    record or one named earlier in the schema alike."""
    out = {}
    for f in fastavro.schema.expand_schema(record)["fields"]:
        branches = f["type"] if isinstance(f["type"], list) else [f["type"]]
        records = [b for b in branches if isinstance(b, dict) and b["type"] == "record"]
        out[f["name"]] = {g["name"] for r in records for g in r["fields"]}
    return out


def survey_of_schema(definition: dict | str, source: Path | str) -> Survey:
    """'ztf' or 'rubin' for a writer schema, by the names of its fields (their order, unions and
    record names aside); refuses any other schema, naming ``source`` and the fields looked for."""
    record = isinstance(definition, dict) and definition.get("type") == "record"
    fields = _fields(definition) if record else {}
    if set(ZTF_FIELDS) <= fields.keys() and set(ZTF_CANDIDATE) <= fields["candidate"]:
        return "ztf"
    in_source = fields.get("diaSource", set())
    if record and (
        rubin_version_of(definition)
        or (set(RUBIN_SOURCE) <= in_source and fields.keys() & set(RUBIN_IDS))
    ):
        return "rubin"
    what = f"record {definition['name']!r}" if record else f"schema {definition!r}"
    ztf = ", ".join([*ZTF_FIELDS[:2], f"candidate{{{', '.join(ZTF_CANDIDATE)}}}", *ZTF_FIELDS[3:]])
    rubin = f"diaSource{{{', '.join(RUBIN_SOURCE)}}} and {' or '.join(RUBIN_IDS)}"
    raise ReplayError(
        f"{source}: {what} is neither a ZTF alert (fields {ztf}) nor a Rubin alert (named"
        f" lsst.vM_N.alert, or fields {rubin}); its fields: {', '.join(fields) or 'none'}"
    )


def wire_message(raw: RawRecord, schema_id: int | None) -> bytes:
    """The alert as its survey sends it: ZTF a whole container file per message (``schema_id``
    None), Rubin the record behind the 5-byte Confluent header of its schema id."""
    from alertsieve.alerts.ztf import one_alert_container

    return (
        one_alert_container(raw.schema_json, raw.body)
        if schema_id is None
        else frame(schema_id, raw.body)
    )


def avro_files(paths: list[Path | str]) -> list[Path]:
    """Files named by ``paths``; folders contribute their ``*.avro`` files (recursively)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.rglob("*.avro"))
            if not found:
                raise ReplayError(f"{p} is a folder without any .avro files")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise ReplayError(f"{p} does not exist")
    return files


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
