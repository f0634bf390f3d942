"""What a job runs, settled before its first alert: the survey and its filter view, the filters
(chosen, parameterised and checked on real sample alerts of every version the topic may carry),
and which view fields the hot path decodes: only those the filters and the outputs read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path

from alertsieve.alerts.view import ViewField, missing_in, version_order
from alertsieve.catalogs.context import Context, load_context
from alertsieve.catalogs.store import describe
from alertsieve.filtering.checks import validate
from alertsieve.filtering.discovery import discover, looked_in
from alertsieve.filtering.model import Filter, FilterError, with_params
from alertsieve.filtering.sql_text import mentions, minds_null
from alertsieve.kafka.topics import head_messages
from alertsieve.publish import contract
from alertsieve.publish.payloads import (
    FieldsPayload,
    check_payload,
    envelope_paths,
    payloads,
    record_types,
)
from alertsieve.publish.versions import filter_versions
from alertsieve.spark.session import driver_heap_mb
from alertsieve.stream.config import JobConfig
from alertsieve.stream.decode import Decoder, filter_view
from alertsieve.stream.references import ViewReferences
from alertsieve.stream.source import message_frame
from alertsieve.stream.surveys import make_decoder


@dataclass(frozen=True)
class JobPlan:
    filters: list[Filter]
    decoder: Decoder
    paths: list[str]  # what the hot path decodes: the filters' fields and the alert id
    archive_paths: list[str]  # what the Delta archive keeps (see archive_paths)
    lacking: dict[str, dict[str, list[str]]]  # filter -> field it reads -> versions without it
    context: Context | None = None  # the catalogs the filters name (xmatch.*, watch.*)
    versions: dict[str, str] = dataclasses.field(default_factory=dict)  # filter -> its version
    payloads: dict[str, FieldsPayload] = dataclasses.field(default_factory=dict)  # the fields filters' records

    def describe(self) -> list[str]:
        """What a person starting the job should know: the survey, versions, view and what each
        filter reads that some version lacks (null there)."""
        d = self.decoder
        versions = sorted(set(d.versions.values()), key=version_order)
        lines = [
            f"survey {d.survey}: {len(d.writers)} writer schema(s), versions {', '.join(versions)};"
            f" decoding {len(self.paths)} of the view's {len(d.view)} fields"
        ]
        lines += [f"catalog {describe(m)}" for m in (self.context.catalogs if self.context else ())]
        return lines + lacking_lines(self.lacking)


def plan_job(spark, cfg: JobConfig) -> JobPlan:
    """Everything a bad setting or filter can break, checked before the stream starts."""
    topics = cfg.topic and [cfg.topic] or cfg.topic_pattern
    head = head_messages(cfg.bootstrap, topics, extra=cfg.kafka_conf)
    decoder = make_decoder(cfg, head, seen=newest_messages(cfg, topics))
    filters = select_filters(cfg, decoder.survey)
    context = load_context(cfg.catalog_dir, filters, decoder.detection, driver_heap_mb(spark))
    samples = sample_alerts(spark, decoder, head, context)
    validate(filters, samples, decoder.view)
    versions = filter_versions(filters, cfg.catalog_dir)
    types = record_types(filters, decoder, versions, samples)
    reads = filter_reads(spark, decoder, filters, context)
    paths = filter_paths(decoder, reads)
    if types:
        paths = list(dict.fromkeys([*paths, *envelope_paths(decoder)]))
    return JobPlan(
        filters=filters,
        decoder=decoder,
        paths=paths,
        # The Delta archive keeps cutouts for every match (delta_cutouts) or for the matches of
        # the filters that ask for them (cutouts=True); only then are they decoded at all.
        archive_paths=archive_paths(decoder, paths, cfg.delta_cutouts or any(f.cutouts for f in filters)),
        lacking=lacking_fields(decoder, filters, reads),
        context=context,
        versions=versions,
        payloads=payloads(filters, types, lambda f: contract.filter_topic(f, cfg.output_prefix), _store(cfg)) if types else {},
    )


def _store(cfg: JobConfig):
    """Where fields records' Avro schemas are registered: the job's registry or schema store."""
    from alertsieve.alerts.schemas import open_store

    return open_store(cfg.schema_registry, cfg.schema_dir)


def filter_reads(spark, decoder: Decoder, filters: list[Filter], context: Context | None = None) -> dict[str, list[str]]:
    """Per filter, the view fields it reads (Spark's analysis of its expressions, one analysis
    per expression shape: ``alertsieve.stream.references``)."""
    with ViewReferences(spark, decoder.view, context) as refs:
        return {f.name: refs.read_by([*f.expressions().values(), *f.fields.values()]) for f in filters}


def filter_paths(decoder: Decoder, reads: dict[str, list[str]]) -> list[str]:
    """What the hot path decodes: the fields the filters read (``filter_reads``), the alert id
    and the decoder's tell. Avro skips everything else, cutouts included."""
    used = {p for paths in reads.values() for p in paths}
    return list(dict.fromkeys([decoder.tell, decoder.id_path, *[p for p in decoder.paths if p in used]]))


def view_paths(decoder: Decoder, with_cutouts: bool) -> list[str]:
    """The whole view, with or without the image stamps."""
    cutouts = tuple(decoder.cutouts)
    return [p for p in decoder.paths if with_cutouts or not p.startswith(cutouts)]


def archive_paths(decoder: Decoder, used: list[str], with_cutouts: bool) -> list[str]:
    """What the Delta archive keeps of a match: the alert's own scalars, the detection that
    triggered it (``diaSource``; ZTF ``candidate``), the fields the filters read, and the cutouts
    if anyone keeps them. Not the whole view: projecting all ~630 fields of ten versions costs
    Spark seconds of planning per batch (measured: a third of the decode rate), and the archive
    is on the hot path until it runs on its own clock."""
    top = {decoder.id_path.split(".")[0], decoder.detection}
    keep = [p for p in decoder.paths if "." not in p and not p.endswith("[]")]
    keep += [p for p in decoder.paths if p.split(".")[0] in top and "." in p]
    keep += used
    cutouts = tuple(decoder.cutouts)
    return [p for p in decoder.paths if (p in set(keep) and not p.startswith(cutouts))
            or (with_cutouts and p.startswith(cutouts))]  # fmt: skip


def lacking_fields(decoder: Decoder, filters: list[Filter], reads: dict[str, list[str]]) -> dict[str, dict[str, list[str]]]:
    """Per filter, the fields it reads that some version the job reads lacks, unless the filter
    says what their null means (``coalesce(diaSource.isDipole, false)``, ``ssSource IS NOT
    NULL``): it has decided. A record read whole (``ssSource IS NOT NULL``) counts as one field,
    lacking where no field of it exists."""
    versions = sorted(set(decoder.versions.values()), key=version_order)
    out = {}
    for f in filters:
        expressions = list(f.expressions().values())
        missing = {p: v for p, v in _missing(decoder.view, reads[f.name], versions).items()
                   if v and not _handled(expressions, p)}  # fmt: skip
        if missing:
            out[f.name] = missing
    return out


def _handled(expressions: list[str], path: str) -> bool:
    """Whether the filter says what a null ``path`` means (or its record's, when it asks only
    whether the record is there: ``ssSource IS NOT NULL`` reads ``ssSource.diaSourceId``), and
    never reads it bare."""
    names = (path.removesuffix("[]"), path.split(".")[0].removesuffix("[]"))
    return any(minds_null(e, n) for e in expressions for n in names) and not any(
        mentions(e, names[0]) and not minds_null(e, names[0]) for e in expressions
    )


def _missing(view: list[ViewField], used: list[str], versions: list[str]) -> dict[str, list[str]]:
    by_top: dict[str, list[ViewField]] = {}
    for field in view:
        by_top.setdefault(field.path.split(".")[0], []).append(field)
    chosen, whole = set(used), {}
    for top, fields in by_top.items():
        if len(fields) > 1 and all(f.path in chosen for f in fields):
            present = {v for f in fields for v in f.versions}
            whole[top] = [v for v in versions if v not in present]
            chosen -= {f.path for f in fields}
    return {**whole, **missing_in(view, [p for p in used if p in chosen], versions)}


def lacking_lines(lacking: dict[str, dict[str, list[str]]]) -> list[str]:
    """One line per filter and set of versions: which fields it reads are null there."""
    lines = []
    for name, fields in lacking.items():
        by_versions: dict[tuple[str, ...], list[str]] = {}
        for path, missing in fields.items():
            by_versions.setdefault(tuple(missing), []).append(path)
        for missing, paths in by_versions.items():
            shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
            lines.append(f"filter {name}: null in version(s) {', '.join(missing)}: {shown}")
    return lines


def select_filters(cfg: JobConfig, survey: str) -> list[Filter]:
    """The settings' SQL filters and code filters, then the discovered ones of this survey, with
    their parameters set; only those named by ``filters`` (``--filters``) if given."""
    filters = cfg.settings_filters()
    if cfg.discover_filters or cfg.filter_paths:
        found = discover(
            cfg.filter_paths, builtin=cfg.discover_filters, entry_points=cfg.discover_filters
        )
        named = set(cfg.filters or [])
        for f in found:
            if f.survey not in (None, survey) and f.name in named:
                raise FilterError(
                    f"--filters names {f.name!r} ({f.origin}), a filter for {f.survey} alerts;"
                    f" this job reads {survey} alerts (survey: {cfg.survey})"
                )
        filters += [f for f in found if f.survey in (None, survey)]
    where = cfg.config_file or "filter_params"
    unknown = set(cfg.filter_params) - {f.name for f in filters}
    if unknown:
        raise FilterError(f"{where}: filter_params names unknown filter(s) {sorted(unknown)}")
    filters = [with_params(f, cfg.filter_params.get(f.name, {}), where) for f in filters]
    unknown = set(cfg.filter_outputs) - {f.name for f in filters}
    if unknown:
        raise FilterError(f"{cfg.config_file or 'filter_outputs'}: filter_outputs names unknown filter(s) {sorted(unknown)}")
    filters = [replace(f, **cfg.filter_outputs[f.name].model_dump(exclude_unset=True)) if f.name in cfg.filter_outputs
               else f for f in filters]  # fmt: skip
    reserved = {cfg.quarantine_topic: contract.QUARANTINE, cfg.counts_topic: contract.COUNTS}
    for f in filters:
        check_payload(f)
        topic = contract.filter_topic(f, cfg.output_prefix)
        if topic in reserved:
            raise FilterError(f"filter {f.name!r} ({f.origin}) would publish to {topic},"
                              f" the job's {reserved[topic]} topic; rename it or set its topic")  # fmt: skip
    if not filters:
        where = looked_in(cfg.filter_paths, cfg.discover_filters, cfg.discover_filters)
        raise FilterError(f"no filter for {survey} alerts to run: looked in {where}, and the settings name"
                          " none (sql_filters, --sql); add a filter module there, or give --filter-path DIR"
                          " or --sql NAME=CONDITION")  # fmt: skip
    if not cfg.filters:
        return filters
    by_name = {f.name: f for f in filters}
    missing = [n for n in cfg.filters if n not in by_name]
    if missing:
        raise FilterError(f"--filters names unknown filter(s) {missing}; known: {sorted(by_name)}")
    return [by_name[n] for n in cfg.filters]


def newest_messages(cfg: JobConfig, topics: list[str] | str) -> list[bytes]:
    """The newest messages of the input and of the quarantine topic, for the ZTF writer schemas a
    job learns at start-up beside the first messages': a schema ZTF began to send after the
    topic's start is among the newest, and one a running job quarantined ("restart the job to
    read it") is on the quarantine topic, its original bytes."""
    newest = head_messages(cfg.bootstrap, topics, extra=cfg.kafka_conf, newest=True)
    return newest + head_messages(cfg.bootstrap, [cfg.quarantine_topic], extra=cfg.kafka_conf, newest=True)


def sample_alerts(spark, decoder: Decoder, head: list[bytes] = (), context: Context | None = None):
    """Real sample alerts in the filter view (all of it but the cutouts), decoded as the job
    decodes: for Rubin, lsst-alert-packet's sample alert of every version the job reads; for ZTF,
    the topic's first messages. Filters compile and Python filters run on these at start-up."""
    messages = list(head) if decoder.survey == "ztf" else rubin_samples(decoder)
    decoded = decoder.decode(message_frame(spark, messages), view_paths(decoder, with_cutouts=False))
    return filter_view(decoded.where("_reason IS NULL"), context=context)


def rubin_samples(decoder: Decoder) -> list[bytes]:
    """lsst-alert-packet's ``fakeAlert.avro`` of each version the decoder reads, framed as Rubin
    sends them."""
    from lsst.alert.packet.schema import get_schema_root

    from alertsieve.alerts.replay import read_raw_records
    from alertsieve.alerts.schemas import frame

    out = []
    for schema_id, version in decoder.versions.items():
        major, minor = version.split("#")[0].split(".")
        path = Path(get_schema_root()) / major / minor / "sample_data" / "fakeAlert.avro"
        if path.exists():
            out += [frame(schema_id, r.body) if decoder.wire_format == "confluent" else r.body
                    for r in read_raw_records(path)]  # fmt: skip
    return out
