"""Decode one record of the filter job's output topics, whatever it carries.

A filter publishes either the original alert (``payload: alert``: Rubin's Confluent-framed Avro or
ZTF's one-alert Avro container file, byte for byte as the survey sent it) or a compact record of
chosen fields (``payload: fields``, Confluent-framed Avro or JSON). The quarantine topic carries
messages the job could not decode, with the reason. Headers say which; without headers (a record
copied elsewhere) an alert is still recognised by its first bytes. A shared record
(``delivery: shared``) is read as one match per filter it names (``matches_from_message``).
"""

from __future__ import annotations

import io
import json
import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from alertsieve.alerts import ztf
from alertsieve.alerts.schemas import (
    AlertSchema,
    LocalSchemaStore,
    SchemaError,
    SchemaStore,
    WireFormatError,
    unframe,
)
from alertsieve.publish import contract
from alertsieve.subscribe.errors import SubscribeError

log = logging.getLogger(__name__)

# Parsed schemas per store: a local store reads and parses its file on every get(), and an alert
# schema takes milliseconds to parse, far more than decoding one alert.
_parsed: weakref.WeakKeyDictionary[Any, dict[int, AlertSchema]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Decoded:
    """A decoded value and what its bytes said about it."""

    record: dict
    survey: str | None  # "rubin" or "ztf" when known
    alert_id: (
        str | None
    )  # from the record: Rubin diaSource.diaSourceId, ZTF candid, fields alert_id
    schema_id: int | None = None  # the Confluent id, for framed values
    schema: dict | None = None  # the Avro writer schema (writers type columns with it)


@dataclass
class Match:
    """One record read from an output topic: where it was read, what the headers say (which
    filter and version, where the alert came from) and the decoded ``record``."""

    topic: str
    partition: int
    offset: int
    key: str | None
    filter: str | None  # None on the quarantine topic
    filter_version: str | None
    payload: str  # contract.PAYLOAD_ALERT, PAYLOAD_FIELDS or PAYLOAD_QUARANTINE
    source_topic: str | None
    source_partition: int | None
    source_offset: int | None
    record: dict = field(repr=False)
    alert_id: str | None = None
    survey: str | None = None
    reason: str | None = None  # why the job quarantined it (quarantine topic only)
    kafka_timestamp_ms: int | None = None
    processed_at_ms: int | None = None
    #: A filter of objects' record: ``alert``, or ``annotation:<annotator>`` when an annotation
    #: ran the filter (its source is then the annotation; the alert, the object's latest)
    trigger: str | None = None
    #: The record's Avro writer schema when it had one (not in ``as_dict``: large, and the same
    #: for every alert of a version); the Parquet writers type columns with it.
    schema: dict | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """Its attributes but ``schema`` as a dict; the record itself, not a copy (an alert is
        ~100 KB)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "schema"}


def headers_dict(raw: Any) -> dict[str, str]:
    """Kafka headers (a list of (key, bytes) as confluent_kafka gives them, or a mapping) as
    strings: the job writes every header value as UTF-8 text."""
    if not raw:
        return {}
    items = raw.items() if isinstance(raw, Mapping) else raw
    out = {}
    for key, value in items:
        if isinstance(value, bytes | bytearray):
            value = bytes(value).decode("utf-8", errors="replace")
        out[str(key)] = "" if value is None else str(value)
    return out


def _where(store: SchemaStore) -> str:
    if isinstance(store, LocalSchemaStore):
        return f"the local schema store {store.directory}"
    return f"the schema registry ({type(store).__name__})"


def _schema(store: SchemaStore, schema_id: int) -> AlertSchema:
    try:
        cache = _parsed.setdefault(store, {})
    except TypeError:  # a store that cannot be weakly referenced: no cache
        cache = {}
    if schema_id not in cache:
        try:
            cache[schema_id] = store.get(schema_id)
        except SchemaError as e:
            raise SubscribeError(
                f"schema id {schema_id} is not in {_where(store)} ({e}): point --schema-dir or"
                " --schema-registry at the job's schema store"
            ) from None
    return cache[schema_id]


def _decode_framed(value: bytes, store: SchemaStore, what: str) -> tuple[dict, int, AlertSchema]:
    try:
        schema_id, body = unframe(value)
    except WireFormatError as e:
        raise SubscribeError(f"{what} is not Confluent-framed Avro ({e})") from None
    schema = _schema(store, schema_id)
    try:
        return schema.decode(body), schema_id, schema
    except Exception as e:  # fastavro raises EOFError, ValueError, IndexError... on bad bytes
        raise SubscribeError(
            f"{what} does not decode with schema id {schema_id} ({schema.name}): {e!r};"
            " is the schema store the job's?"
        ) from None


def _decode_container(value: bytes) -> tuple[dict, dict]:
    """(the alert, its writer schema) of a one-alert container file."""
    import fastavro

    try:
        reader = fastavro.reader(io.BytesIO(value))
        records = list(reader)
    except Exception as e:
        raise SubscribeError(
            f"a ZTF message that is not a readable Avro container file: {e!r}"
        ) from None
    if len(records) != 1:
        raise SubscribeError(f"a ZTF message holds {len(records)} alerts, expected exactly one")
    return records[0], reader.writer_schema


def _alert_identity(record: dict) -> tuple[str | None, str | None]:
    """(survey, alert id) of a decoded alert, by its shape."""
    if "candid" in record and "candidate" in record:
        return "ztf", str(record["candid"])
    source = record.get("diaSource")
    if isinstance(source, dict) and source.get("diaSourceId") is not None:
        return "rubin", str(source["diaSourceId"])
    for name in ("diaSourceId", "alertId"):
        if record.get(name) is not None:
            return "rubin", str(record[name])
    return None, None


def decode(value: bytes, headers: Mapping[str, str] | None, store: SchemaStore) -> Decoded:
    """Decode ``value`` as its headers describe it (see the module doc); without a ``payload``
    header it is taken for an alert and recognised by its first bytes."""
    headers = headers or {}
    value = bytes(value or b"")
    if headers.get(contract.PAYLOAD) == contract.PAYLOAD_FIELDS:
        fmt = headers.get(contract.FORMAT) or (
            contract.FORMAT_JSON if value[:1] == b"{" else contract.FORMAT_AVRO
        )
        if fmt == contract.FORMAT_JSON:
            try:
                record = json.loads(value.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise SubscribeError(f"a fields record that is not UTF-8 JSON: {e}") from None
            if not isinstance(record, dict):
                raise SubscribeError(
                    f"a fields record that is JSON {type(record).__name__}, not an object"
                )
            schema_id, definition = None, None
        elif fmt == contract.FORMAT_AVRO:
            record, schema_id, schema = _decode_framed(value, store, "a fields record")
            definition = schema.definition
        else:
            raise SubscribeError(
                f"a fields record of format {fmt!r}: expected avro or json; is alertsieve up to date?"
            )
        alert_id = record.get(contract.ALERT_ID)
        alert_id = None if alert_id is None else str(alert_id)
        return Decoded(record, record.get(contract.SURVEY), alert_id, schema_id, definition)
    if value.startswith(ztf.MAGIC):
        record, definition = _decode_container(value)
        _, alert_id = _alert_identity(record)
        return Decoded(record, "ztf", alert_id, None, definition)
    if value[:1] == b"\x00":
        record, schema_id, schema = _decode_framed(value, store, "an alert")
        survey, alert_id = _alert_identity(record)
        return Decoded(record, survey or "rubin", alert_id, schema_id, schema.definition)
    raise SubscribeError(
        f"a record of {len(value)} bytes starting {value[:4]!r} is neither a ZTF Avro container"
        " (Obj\\x01) nor Confluent-framed Avro (0x00): is this an alertsieve output topic?"
    )


def decode_record(value: bytes, headers: Mapping[str, str] | None, store: SchemaStore) -> dict:
    """The decoded record of one output-topic value (alert or fields; see :func:`decode`)."""
    return decode(value, headers, store).record


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None


def make_match(
    topic: str,
    partition: int,
    offset: int,
    key: bytes | str | None,
    value: bytes | None,
    headers: Any,
    store: SchemaStore,
) -> Match:
    """A :class:`Match` from the parts of a Kafka record (``headers`` raw or as strings)."""
    h = headers_dict(headers)
    if isinstance(key, bytes | bytearray):
        key = bytes(key).decode("utf-8", errors="replace")
    quarantined = contract.REASON in h and contract.FILTER not in h
    if quarantined:
        decoded = Decoded(
            {contract.REASON: h[contract.REASON], "value": bytes(value or b"")}, None, None
        )
        payload = contract.PAYLOAD_QUARANTINE
    else:
        decoded = decode(value or b"", h, store)
        payload = h.get(contract.PAYLOAD) or contract.PAYLOAD_ALERT
    return Match(
        topic=topic,
        partition=partition,
        offset=offset,
        key=key,
        filter=h.get(contract.FILTER),
        filter_version=h.get(contract.FILTER_VERSION),
        payload=payload,
        source_topic=h.get(contract.SOURCE_TOPIC),
        source_partition=_int(h.get(contract.SOURCE_PARTITION)),
        source_offset=_int(h.get(contract.SOURCE_OFFSET)),
        record=decoded.record,
        alert_id=decoded.alert_id or key,
        survey=decoded.survey,
        reason=h.get(contract.REASON),
        kafka_timestamp_ms=_int(h.get(contract.KAFKA_TIMESTAMP_MS)),
        processed_at_ms=_int(h.get(contract.PROCESSED_AT_MS)),
        trigger=h.get(contract.TRIGGER),
        schema=decoded.schema,
    )


def _shared_record(whole: Match, entry: Mapping[str, Any]) -> tuple[str, dict]:
    """(payload, record) of one filter's entry of a shared record: its fields after the
    envelope, as its own topic's JSON record holds them, or the alert itself."""
    fields = entry.get(contract.FIELDS)
    if not isinstance(fields, dict):
        return contract.PAYLOAD_ALERT, whole.record
    if whole.payload == contract.PAYLOAD_FIELDS:
        envelope = dict(whole.record)
    else:  # the value is the alert another filter publishes: the envelope from the headers
        envelope = {
            contract.ALERT_ID: whole.alert_id,
            contract.SURVEY: whole.survey,
            contract.SOURCE_TOPIC: whole.source_topic,
            contract.SOURCE_PARTITION: whole.source_partition,
            contract.SOURCE_OFFSET: whole.source_offset,
            contract.KAFKA_TIMESTAMP_MS: whole.kafka_timestamp_ms,
            contract.PROCESSED_AT_MS: whole.processed_at_ms,
        }
    named = {k: entry.get(k) for k in (contract.FILTER, contract.FILTER_VERSION)}
    return contract.PAYLOAD_FIELDS, {**envelope, **named, **fields}


def shared_entries(headers: Mapping[str, str]) -> list[dict] | None:
    """The ``filters`` entries of a shared record (``delivery: shared``), None for any other."""
    text = headers.get(contract.SHARED_FILTERS)
    if text is None:
        return None
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as e:
        raise SubscribeError(f"a shared record whose filters header is not JSON: {e}") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SubscribeError("a shared record whose filters header is not a list of objects")
    return entries


def matches_from_message(
    message: Any, store: SchemaStore, filters: frozenset[str] | None = None
) -> list[Match]:
    """The :class:`Match` es of a Kafka record: one, or for a shared record one per filter it
    names; only those of ``filters`` when given (a quarantined message is nobody's: kept)."""
    whole = match_from_message(message, store)
    entries = shared_entries(headers_dict(message.headers()))
    if entries is None:
        keep = filters is None or whole.filter is None or whole.filter in filters
        return [whole] if keep else []
    out = []
    for entry in entries:
        name = entry.get(contract.FILTER)
        if filters is not None and name not in filters:
            continue
        payload, record = _shared_record(whole, entry)
        out.append(
            replace(
                whole,
                filter=name,
                filter_version=entry.get(contract.FILTER_VERSION),
                payload=payload,
                record=record,
                schema=whole.schema if payload == contract.PAYLOAD_ALERT else None,
            )
        )
    return out


def match_from_message(message: Any, store: SchemaStore) -> Match:
    """A :class:`Match` from a confluent_kafka ``Message`` (anything with its accessors)."""
    return make_match(
        message.topic(),
        message.partition(),
        message.offset(),
        message.key(),
        message.value(),
        message.headers(),
        store,
    )
