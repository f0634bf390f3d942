"""Alert schemas: Rubin's official versions, the Confluent wire format, and where ids resolve.

Rubin publishes each alert as ``0x00 + 4-byte big-endian schema id + Avro body``; the id is
lsst-alert-packet's ``Schema.get_schema_id`` (v11.1 -> 1101, v7.4 -> 704). The official schemas
are lsst-alert-packet's files as that package ships them, in ``schemas/rubin/`` (installed as
``alertsieve_schemas``): a subscriber's install decodes Rubin alerts without that package, whose
own dependencies weigh more than all of the subscriber's. tests/test_schemas.py checks every file
equals the pinned lsst-alert-packet's, which the job's environment installs.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Protocol

import fastavro

from alertsieve.errors import AlertsieveError
from alertsieve.paths import cache_dir

MAGIC = 0
HEADER = struct.Struct(">bI")
#: Ids the local store gives to non-Rubin schemas (replayed files): far above Rubin's major*100+minor.
LOCAL_ID_BASE = 1 << 20


#: The FITS image stamps: 95-99% of an alert's bytes, and no filter reads them.
CUTOUTS = ("cutoutDifference", "cutoutScience", "cutoutTemplate")


class SchemaError(AlertsieveError, ValueError):
    """An unknown schema version or id, or an unusable schema."""


class WireFormatError(AlertsieveError, ValueError):
    """Bytes that are not a Confluent-framed Avro message."""


# --- Confluent wire format ------------------------------------------------------------------


def frame(schema_id: int, body: bytes) -> bytes:
    return HEADER.pack(MAGIC, schema_id) + body


def unframe(message: bytes) -> tuple[int, bytes]:
    """Split a framed message into (schema id, Avro body)."""
    if len(message) < HEADER.size:
        raise WireFormatError(f"message of {len(message)} bytes is shorter than the 5-byte header")
    magic, schema_id = HEADER.unpack_from(message)
    if magic != MAGIC:
        raise WireFormatError(f"magic byte is {magic & 0xFF:#04x}, expected 0x00")
    return schema_id, message[HEADER.size :]


# --- Rubin versions ------------------------------------------------------------------------


def _parse_version(version: str | int) -> tuple[int, int]:
    text = str(version).strip().lower().removeprefix("v")
    if m := re.fullmatch(r"(\d+)[._](\d+)", text):
        return int(m[1]), int(m[2])
    if text.isdigit() and int(text) >= 100:
        return divmod(int(text), 100)
    raise SchemaError(
        f"schema version {version!r} is neither 'MAJOR.MINOR' (e.g. 11.1) nor an id (e.g. 1101)"
    )


def rubin_schema_root() -> Path:
    """``schemas/rubin``: lsst-alert-packet's ``MAJOR/MINOR/*.avsc`` and ``latest.txt``."""
    from importlib.resources import files

    return Path(str(files("alertsieve_schemas") / "rubin"))


@cache
def rubin_versions() -> tuple[str, ...]:
    """Every version lsst-alert-packet ships, oldest first."""
    found = []
    for path in rubin_schema_root().glob("*/*/lsst.v*_*.alert.avsc"):
        found.append((int(path.parent.parent.name), int(path.parent.name)))
    return tuple(f"{a}.{b}" for a, b in sorted(found))


def view_versions() -> list[str]:
    """The versions a Rubin job reads unless told otherwise: 7.0 on, the schemas of Operations
    Rehearsal and of LSSTCam's alerts (3.0-6.1 predate any published stream)."""
    return [v for v in rubin_versions() if int(v.split(".")[0]) >= 7]


def rubin_version_of(definition: dict) -> str | None:
    """'10.0' for a schema named ``lsst.v10_0.alert``; None for any other schema."""
    m = re.fullmatch(r"lsst\.v(\d+)_(\d+)\.alert", full_name(definition))
    return f"{m[1]}.{m[2]}" if m else None


def latest_rubin_version() -> str:
    """The version lsst-alert-packet calls latest (its ``latest.txt``)."""
    return (rubin_schema_root() / "latest.txt").read_text().strip()


@dataclass(frozen=True)
class AlertSchema:
    """One writer schema: its id, a human name and the parsed definition fastavro needs."""

    schema_id: int
    name: str
    definition: dict = field(hash=False, compare=False)

    @cached_property
    def parsed(self) -> Any:
        return fastavro.parse_schema(self.definition, _force=True)

    @cached_property
    def _encoder(self) -> Any:
        import cavro

        return cavro.Schema(self.definition)

    def encode(self, record: dict) -> bytes:
        """Schemaless Avro body (no header).

        cavro writes the same bytes as fastavro (tests check it on every Rubin version) at about
        twice the speed, and serialization is what bounds a producer on a small machine.
        """
        return self._encoder.binary_encode(record)

    def decode(self, body: bytes, reader: AlertSchema | None = None) -> dict:
        import io

        return fastavro.schemaless_reader(
            io.BytesIO(body), self.parsed, reader.parsed if reader else None
        )

    def encode_framed(self, record: dict) -> bytes:
        return frame(self.schema_id, self.encode(record))

    def field_names(self) -> list[str]:
        return [f["name"] for f in self.definition["fields"]]


@cache
def load_rubin_schema(version: str | int | None = None) -> AlertSchema:
    """An official Rubin schema by version ('11.1'), id (1101) or None for the latest: the alert
    record with the records it names (``lsst.v11_1.diaSource``...) resolved from their files in
    its folder, as lsst-alert-packet's ``Schema.from_file`` resolves them; its id is
    ``get_schema_id``'s, major and two-digit minor."""
    major, minor = _parse_version(version if version is not None else latest_rubin_version())
    text = f"{major}.{minor}"
    if text not in rubin_versions():
        raise SchemaError(
            f"Rubin alert schema {text} is not shipped by lsst-alert-packet; available:"
            f" {', '.join(rubin_versions())}"
        )
    path = rubin_schema_root() / str(major) / str(minor) / f"lsst.v{major}_{minor}.alert.avsc"
    definition = _strip_fastavro_keys(fastavro.schema.load_schema(str(path), _write_hint=False))
    return AlertSchema(major * 100 + minor, f"lsst.v{major}_{minor}.alert", definition)


def _strip_fastavro_keys(node: Any) -> Any:
    """fastavro annotates parsed schemas with private keys; keep the plain Avro JSON."""
    if isinstance(node, dict):
        return {k: _strip_fastavro_keys(v) for k, v in node.items() if not k.startswith("__")}
    if isinstance(node, list):
        return [_strip_fastavro_keys(v) for v in node]
    return node


def official_rubin_schema(definition: dict) -> AlertSchema | None:
    """lsst-alert-packet's schema when ``definition`` is one of them (same canonical form)."""
    version = rubin_version_of(definition)
    if version is None or version not in rubin_versions():
        return None
    official = load_rubin_schema(version)
    canonical = fastavro.schema.to_parsing_canonical_form
    return official if canonical(official.definition) == canonical(definition) else None


def local_schema_id(definition: dict) -> int:
    """A deterministic id from the schema's canonical form: two producers registering the same
    schema in separate processes agree without talking to each other."""
    canonical = fastavro.schema.to_parsing_canonical_form(definition)
    digest = int(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"), 16)
    return LOCAL_ID_BASE + digest % ((1 << 31) - LOCAL_ID_BASE)


# --- Where ids resolve ---------------------------------------------------------------------


class SchemaStore(Protocol):
    def get(self, schema_id: int) -> AlertSchema: ...

    def register(self, definition: dict, subject: str) -> AlertSchema: ...

    def candidates(self, subject: str) -> list[AlertSchema]:
        """Writer schemas a topic may carry (what a decoder should be ready for)."""
        ...


class LocalSchemaStore:
    """A directory of ``<id>.avsc`` files, seeded with every Rubin version on first use."""

    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory else cache_dir() / "schemas"
        self.directory.mkdir(parents=True, exist_ok=True)
        for version in rubin_versions():
            schema = load_rubin_schema(version)
            path = self.directory / f"{schema.schema_id}.avsc"
            if not path.exists():
                path.write_text(json.dumps(schema.definition))

    def ids(self) -> list[int]:
        return sorted(int(p.stem) for p in self.directory.glob("*.avsc") if p.stem.isdigit())

    def get(self, schema_id: int) -> AlertSchema:
        path = self.directory / f"{schema_id}.avsc"
        if not path.exists():
            raise SchemaError(f"schema id {schema_id} is not in the local store {self.directory}")
        definition = json.loads(path.read_text())
        return AlertSchema(schema_id, full_name(definition), definition)

    def candidates(self, subject: str = "") -> list[AlertSchema]:
        return [self.get(i) for i in self.ids()]

    def register(self, definition: dict, subject: str = "") -> AlertSchema:
        """An official Rubin schema keeps its Rubin id (a replayed LSSTCam file goes out as Rubin
        sends it); any other schema gets a local id from its canonical form."""
        definition = _strip_fastavro_keys(definition)
        official = official_rubin_schema(definition)
        if official is not None:
            return official
        schema_id = local_schema_id(definition)
        path = self.directory / f"{schema_id}.avsc"
        if not path.exists():
            tmp = path.with_suffix(f".tmp{id(definition)}")
            tmp.write_text(json.dumps(definition))
            tmp.replace(path)  # atomic: concurrent producers never see half a file
        return AlertSchema(schema_id, full_name(definition), definition)


class RegistrySchemaStore:
    """A Confluent-compatible Schema Registry (Rubin runs one beside its Kafka)."""

    def __init__(self, url: str, conf: dict | None = None):
        from confluent_kafka.schema_registry import SchemaRegistryClient

        self.client = SchemaRegistryClient({"url": url, **(conf or {})})

    def get(self, schema_id: int) -> AlertSchema:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            schema = self.client.get_schema(schema_id)
        except SchemaRegistryError as e:
            raise SchemaError(f"schema id {schema_id}: {e}") from None
        definition = json.loads(schema.schema_str)
        return AlertSchema(schema_id, full_name(definition), definition)

    def candidates(self, subject: str) -> list[AlertSchema]:
        versions = self.client.get_versions(subject)
        return [self.get(self.client.get_version(subject, v).schema_id) for v in versions]

    def register(self, definition: dict, subject: str) -> AlertSchema:
        from confluent_kafka.schema_registry import Schema

        definition = _strip_fastavro_keys(definition)
        schema_id = self.client.register_schema(subject, Schema(json.dumps(definition), "AVRO"))
        return AlertSchema(schema_id, full_name(definition), definition)


def open_store(registry_url: str | None = None, directory: Path | str | None = None) -> SchemaStore:
    """The registry when a URL is configured, else the local directory store."""
    return RegistrySchemaStore(registry_url) if registry_url else LocalSchemaStore(directory)


def without_fields(schema: AlertSchema, names: tuple[str, ...]) -> AlertSchema:
    """A reader schema that skips ``names`` (top-level fields): Avro resolution drops them
    while decoding, so they cost neither copies nor memory."""
    definition = dict(schema.definition)
    definition["fields"] = [f for f in definition["fields"] if f["name"] not in names]
    return AlertSchema(schema.schema_id, schema.name, definition)


def full_name(definition: dict) -> str:
    """A named schema's full name (``ztf.alert``, ``lsst.v10_0.alert``), namespace included."""
    name = definition.get("name", "")
    namespace = definition.get("namespace")
    return f"{namespace}.{name}" if namespace and "." not in name else name
