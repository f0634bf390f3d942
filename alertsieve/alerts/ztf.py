"""ZTF as ZTF publishes it: each Kafka message is a whole Avro container file holding one alert
(the writer schema travels inside, in the header).

A container file is itself Avro: a header (4-byte magic, a map of metadata, a 16-byte sync
marker), then blocks (record count, byte size, the records, the sync marker again). With the null
codec and one record, the whole message is therefore a valid encoding of one record whose fields
are the header's, the block's and the alert's: :func:`container_schema` writes that record down, so
Spark's ``from_avro`` reads a ZTF message in place, in the JVM, with no copy of its bytes.
The writer schema comes from the messages themselves, known by the SHA-256 of its JSON as the
header carries it (:func:`schema_fingerprint`), which Spark can compute on the raw bytes too.
"""

from __future__ import annotations

import hashlib
import io
import json

from alertsieve.errors import AlertsieveError

MAGIC = b"Obj\x01"

#: The container header as an Avro record: enough to read a message's metadata (its schema).
HEADER_FIELDS = [
    {
        "name": "_container_magic",
        "type": {"type": "fixed", "name": "alertsieve_container_magic", "size": 4},
    },
    {"name": "_container_meta", "type": {"type": "map", "values": "bytes"}},
    {
        "name": "_container_sync",
        "type": {"type": "fixed", "name": "alertsieve_container_sync", "size": 16},
    },
]
HEADER_SCHEMA = {"type": "record", "name": "alertsieve_container_header", "fields": HEADER_FIELDS}


class ContainerError(AlertsieveError, ValueError):
    """A message that is not a one-alert, uncompressed Avro container file."""


def container_schema(writer: dict) -> dict:
    """The record a one-alert, null-codec container file of ``writer`` is an encoding of."""
    block = [
        {"name": "_container_count", "type": "long"},
        {"name": "_container_size", "type": "long"},
    ]
    tail = [{"name": "_container_sync_end", "type": "alertsieve_container_sync"}]
    return {**writer, "fields": HEADER_FIELDS + block + list(writer["fields"]) + tail}


def header(message: bytes) -> dict[str, bytes]:
    """The container's metadata (``avro.schema``, ``avro.codec``) of one message."""
    import fastavro

    if not message.startswith(MAGIC):
        raise ContainerError(
            f"not an Avro container file (starts with {message[:4]!r}, not {MAGIC!r})"
        )
    return fastavro.schemaless_reader(io.BytesIO(message), HEADER_SCHEMA, None)["_container_meta"]


def schema_fingerprint(schema_json: bytes) -> str:
    """How a writer schema is known: the SHA-256 of its JSON exactly as the header holds it."""
    return hashlib.sha256(schema_json).hexdigest()


def writer_of(message: bytes) -> tuple[str, dict]:
    """(fingerprint, writer schema) of a ZTF message; refuses what ``from_avro`` could not read
    in place (a compressed block)."""
    meta = header(message)
    codec = meta.get("avro.codec", b"null")
    if codec != b"null":
        raise ContainerError(
            f"a {codec.decode()}-compressed container: only uncompressed ones are read"
        )
    raw = meta["avro.schema"]
    return schema_fingerprint(raw), json.loads(raw)


def one_alert_container(schema_json: bytes, body: bytes) -> bytes:
    """A ZTF Kafka message: an uncompressed container file of one alert whose header holds
    ``schema_json`` as given (so its fingerprint is that of the file it came from)."""
    import fastavro

    sync = hashlib.md5(schema_json + body).digest()  # any 16 bytes; these are reproducible
    out = io.BytesIO()
    fastavro.schemaless_writer(
        out,
        fastavro.parse_schema(HEADER_SCHEMA),
        {
            "_container_magic": MAGIC,
            "_container_sync": sync,
            "_container_meta": {"avro.schema": schema_json, "avro.codec": b"null"},
        },
    )
    fastavro.schemaless_writer(out, "long", 1)
    fastavro.schemaless_writer(out, "long", len(body))
    return out.getvalue() + body + sync


def shipped_ztf_schemas() -> list[bytes]:
    """The ZTF writer schemas alertsieve ships (``schemas/ztf/``, installed as the package
    ``alertsieve_schemas``), exactly as ZTF's headers hold them."""
    from importlib.resources import files

    folder = files("alertsieve_schemas") / "ztf"
    return [
        p.read_bytes()
        for p in sorted(folder.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".avsc")
    ]
