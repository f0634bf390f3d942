"""Which alerts a job reads: the survey (Rubin or ZTF, set or detected from the topic's first
messages), the writer schemas its topic may carry, and so the filter view and its decoder.

Rubin: writer schemas from the schema registry when one is configured, else the local store
(every version lsst-alert-packet ships, plus replayed files' schemas); the job reads the versions
of ``schema_versions`` (7.0 on by default) and quarantines the others with the reason.
ZTF: writer schemas travel inside each message; the job knows those shipped in ``schemas/ztf/``
and those of the topic's first messages, by the SHA-256 of their JSON.
"""

from __future__ import annotations

import json

from alertsieve.alerts.schemas import (
    AlertSchema,
    SchemaError,
    SchemaStore,
    load_rubin_schema,
    open_store,
    rubin_version_of,
    view_versions,
)
from alertsieve.alerts.view import version_order, view_of
from alertsieve.alerts.ztf import (
    MAGIC,
    ContainerError,
    container_schema,
    header,
    schema_fingerprint,
    shipped_ztf_schemas,
    writer_of,
)
from alertsieve.settings import ConfigError
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.decoder import Decoder, framed


def detect_survey(messages: list[bytes]) -> str | None:
    """'ztf' when the messages are Avro container files, 'rubin' when they are framed; None
    when there is nothing to look at."""
    if not messages:
        return None
    return "ztf" if sum(m.startswith(MAGIC) for m in messages) * 2 > len(messages) else "rubin"


def survey_of(settings: DecodeSettings, head: list[bytes]) -> str:
    if settings.survey != "auto":
        return settings.survey
    return detect_survey(head) or "rubin"


def rubin_decoder(
    settings: DecodeSettings,
    store: SchemaStore | None = None,
    view_also: list[str] = (),
    ids: set[int] = frozenset(),
) -> Decoder:
    """Every Rubin writer the topic may carry that the job reads, the view of their union (and of
    the versions ``view_also``: a backtest of one file's alerts runs filters written for the
    job's view), and why the others are refused. ``ids``: schema ids messages were seen to name,
    looked up by id when the topic's subject lacks them (the registry, then Rubin's own ids of
    the shipped versions); one found nowhere is refused as an unknown schema id."""
    wanted = list(settings.schema_versions or view_versions())

    def reads(version: str) -> bool:
        """The versions asked for; by default every version from 7.0 on, those released after
        this alertsieve too (a registry may hold them)."""
        if settings.schema_versions:
            return version in wanted
        return version_order(version) >= version_order(wanted[0])

    if settings.wire_format == "plain":
        schema = load_rubin_schema(settings.writer_schema_version)
        version = rubin_version_of(schema.definition)
        return Decoder(
            "rubin",
            "plain",
            view_of({version: schema.definition}),
            {schema.schema_id: schema.definition},
            {schema.schema_id: schema.name},
            {schema.schema_id: version},
        )
    store = store or open_store(settings.schema_registry, settings.schema_dir)
    writers, names, versions, refused, definitions = {}, {}, {}, {}, {}
    schemas = store.candidates(f"{settings.topic or 'alerts'}-value")
    schemas += _by_id(store, set(ids) - {s.schema_id for s in schemas}, settings, refused)
    for schema in schemas:
        version = rubin_version_of(schema.definition)
        where = f"schema id {schema.schema_id} ({schema.name})"
        if version is None:
            refused[schema.schema_id] = (
                f"{where} is not a Rubin alert schema (this job reads survey rubin)"
            )
        elif not reads(version):
            refused[schema.schema_id] = (
                f"{where} is not among the versions this job reads ({', '.join(wanted)});"
                f" add {version} to schema_versions"
            )
        else:
            label = version if version not in definitions else f"{version}#{schema.schema_id}"
            definitions[label] = schema.definition
            writers[schema.schema_id] = framed(schema.definition)
            names[schema.schema_id] = schema.name
            versions[schema.schema_id] = label
    missing = [v for v in wanted if v not in set(versions.values())]
    if not writers or (missing and settings.schema_versions):
        source = settings.schema_registry or "the local schema store"
        raise ConfigError(
            f"{settings.where}: schema_versions {missing or wanted} have no writer schema in {source};"
            " register them, or choose from those it has"
        )
    in_view = {v: load_rubin_schema(v).definition for v in view_also if v not in definitions}
    return Decoder(
        "rubin", "confluent", view_of({**definitions, **in_view}), writers, names, versions, refused
    )


def _by_id(
    store: SchemaStore, ids: set[int], settings: DecodeSettings, refused: dict
) -> list[AlertSchema]:
    """The schemas of ``ids`` from the store, else Rubin's shipped version of that id; an id
    found nowhere goes into ``refused`` with where it was looked for."""
    found = []
    for schema_id in sorted(ids):
        try:
            found.append(store.get(schema_id))
            continue
        except SchemaError:
            pass
        try:
            found.append(load_rubin_schema(schema_id))
        except SchemaError:
            source = settings.schema_registry or "the local schema store"
            refused[schema_id] = (
                f"unknown schema id {schema_id}: neither {source} nor Rubin's shipped versions"
                " hold it; register it"
            )
    return found


def ztf_decoder(head: list[bytes]) -> Decoder:
    """The ZTF schemas shipped with alertsieve and those ``head`` carries (messages the job looked
    at before it started: the topic's first and newest, and the quarantined ones)."""
    raw = {schema_fingerprint(text): text for text in shipped_ztf_schemas()}
    for message in head:
        if message.startswith(MAGIC):
            try:
                fingerprint, _ = writer_of(message)
            except ContainerError:
                continue  # a compressed container: quarantined with its reason when read
            raw.setdefault(fingerprint, header(message)["avro.schema"])
    writers, names, versions, definitions = {}, {}, {}, {}
    for fingerprint, text in raw.items():
        definition = json.loads(text)
        version = str(definition.get("version", fingerprint[:12]))
        label = version if version not in definitions else f"{version}#{fingerprint[:12]}"
        definitions[label] = definition
        writers[fingerprint] = container_schema(definition)
        names[fingerprint] = f"ztf alert {label} (sha256 {fingerprint[:12]})"
        versions[fingerprint] = label
    ordered = dict(sorted(definitions.items(), key=lambda kv: version_order(kv[0])))
    return Decoder(
        "ztf",
        "container",
        view_of(ordered),
        writers,
        names,
        versions,
        tell="candid",
        id_path="candid",
        detection="candidate",
        observed="candidate.jd",
        night_offset=2440587.5,
        mjd_offset=2400000.5,
    )


def make_decoder(
    settings: DecodeSettings, head: list[bytes], view_also: list[str] = (), seen: list[bytes] = ()
) -> Decoder:
    """The decoder of the job's survey; ``head``: the topic's first messages (may be empty), which
    tell the survey; ``seen``: more messages whose ZTF writer schemas are learned too;
    ``view_also``: Rubin versions the view covers beyond those read."""
    if survey_of(settings, head) == "ztf":
        return ztf_decoder([*head, *seen])
    return rubin_decoder(settings, view_also=view_also, ids=framed_ids([*head, *seen]))


def framed_ids(messages: list[bytes]) -> set[int]:
    """The schema ids Confluent-framed messages name."""
    return {int.from_bytes(m[1:5], "big") for m in messages if len(m) >= 5 and m[:1] == b"\x00"}
