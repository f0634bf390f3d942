"""What a job runs, settled before its first alert: the survey and its filter view, the filters
(chosen, parameterised and checked on real sample alerts of every version the topic may carry),
and which view fields the hot path decodes: only those the filters and the outputs read."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, replace

from alertsieve.alerts.view import version_order
from alertsieve.catalogs.context import Context
from alertsieve.catalogs.store import describe
from alertsieve.filtering.discovery import discover, looked_in
from alertsieve.filtering.lacking import lacking_fields, lacking_lines
from alertsieve.filtering.model import Filter, FilterError, with_params
from alertsieve.filtering.objects import check_triggers
from alertsieve.filtering.predicates import Predicates
from alertsieve.filtering.prepare import prepare
from alertsieve.filtering.refusals import SKIP, Refusals
from alertsieve.filtering.scores.choose import models_read
from alertsieve.filtering.scores.column import Scoring
from alertsieve.filtering.scores.discovery import discover_models
from alertsieve.filtering.scores.runtime import Runtime
from alertsieve.filtering.shapes import Shape
from alertsieve.kafka.acls import PRINCIPAL
from alertsieve.kafka.topics import head_messages
from alertsieve.publish import contract
from alertsieve.publish.counts import Published
from alertsieve.publish.payloads import (
    FieldsPayload,
    check_payload,
    envelope_paths,
    payloads,
    record_types,
)
from alertsieve.publish.versions import filter_versions
from alertsieve.spark.session import driver_heap_mb
from alertsieve.stream.admission import over_cap
from alertsieve.stream.config import JobConfig
from alertsieve.stream.predicate_first import predicate_filters
from alertsieve.stream.shaped import runnable_shapes
from alertsieve.view.decoder import Decoder
from alertsieve.view.surveys import make_decoder


@dataclass(frozen=True)
class JobPlan:
    filters: list[Filter]
    decoder: Decoder
    paths: list[str]  # what the hot path decodes: the filters' fields and the alert id
    archive_paths: list[str]  # what the Delta archive keeps (see archive_paths)
    lacking: dict[str, dict[str, list[str]]]  # filter -> field it reads -> versions without it
    context: Context | None = None  # the catalogs the filters name (xmatch.*, watch.*)
    versions: dict[str, str] = dataclasses.field(default_factory=dict)  # filter -> its version
    payloads: dict[str, FieldsPayload] = dataclasses.field(
        default_factory=dict
    )  # the fields filters' records
    #: ``on_bad_filter: skip``: what was left out and why, which running versions go on
    refusals: Refusals | None = None
    scoring: Scoring | None = None  # the models the filters read (scores.*), run once per alert
    #: Filters that run as rows of a table, a condition per shape (``alertsieve.stream.shaped``)
    shapes: tuple[Shape, ...] = ()
    #: Filters matched together predicate first (``alertsieve.stream.predicate_first``)
    predicates: Predicates | None = None

    @property
    def compiled(self) -> list[int]:
        """The indices of the filters compiled one by one (in no shape, not predicate first)."""
        elsewhere = {i for s in self.shapes for i in s.members}
        elsewhere |= set(self.predicates.filters if self.predicates else ())
        return [i for i in range(len(self.filters)) if i not in elsewhere]

    @property
    def indexed(self) -> list[int]:
        """The filters whose matches are their index in an alert's outcomes, labelled from the
        plan's arrays (``alertsieve.stream.records.outcomes``): compiled or predicate first."""
        first = self.predicates.filters if self.predicates else []
        return sorted([*self.compiled, *first])

    @property
    def readers(self) -> dict[str, list[str]]:
        """model -> the filters that read its score (told when it fails)."""
        models = [m.name for m in (self.scoring.models if self.scoring else ())]
        return {m: [f.name for f in self.filters if m in models_read(f)] for m in models}

    def describe(self) -> list[str]:
        """What a person starting the job should know: the survey, versions, view and what each
        filter reads that some version lacks (null there)."""
        d = self.decoder
        versions = sorted(set(d.versions.values()), key=version_order)
        lines = [
            f"survey {d.survey}: {len(d.writers)} writer schema(s), versions {', '.join(versions)};"
            f" decoding {len(self.paths)} of the view's {len(d.view)} fields"
        ]
        if self.predicates:
            lines.append(f"filters: {len(self.predicates.filters)} matched predicate first")
        if self.shapes:
            lifted = [s for s in self.shapes if s.lifted is not None]
            clauses = {i for s in self.shapes if s.lifted is None for i in s.members}
            rows = sum(len(s.members) for s in lifted)
            lines.append(
                f"filters: {rows} as rows of {len(lifted)} shape(s),"
                + (f" {len(clauses)} as clauses," if clauses else "")
                + f" {len(self.compiled)} compiled one by one"
            )
        lines += [f"catalog {describe(m)}" for m in (self.context.catalogs if self.context else ())]
        lines += [
            f"model {m.name} {m.version} ({m.origin}), read by {', '.join(self.readers[m.name])}"
            for m in (self.scoring.models if self.scoring else ())
        ]
        return lines + lacking_lines(self.lacking)


def plan_job(
    spark,
    cfg: JobConfig,
    running: JobPlan | None = None,
    learned: list[bytes] = (),
    filters: list[Filter] | None = None,
    selected: Callable[[list[Filter]], None] | None = None,
) -> JobPlan:
    """Everything a bad setting or filter can break, checked before the stream starts (or, with
    ``running``, the job's plan under ``--watch``, before a deployment). With ``on_bad_filter:
    skip`` a bad filter is left out, its running version kept (``alertsieve.filtering.refusals``).
    ``learned``: messages of writer schemas the running job met (``alertsieve.stream.new_writers``),
    planned for with the running ``filters``. ``selected`` is told the filters once they are
    read, before they are checked (the job creates their topics meanwhile)."""
    topics = cfg.topic and [cfg.topic] or cfg.topic_pattern
    head = head_messages(cfg.bootstrap, topics, extra=cfg.kafka_conf)
    seen = [*newest_messages(cfg, topics), *learned]
    decoder = make_decoder(cfg.decode_settings, head, seen=seen)
    refusals = Refusals(cfg.on_bad_filter == SKIP, running.filters if running else [])
    filters = filters or select_filters(cfg, decoder.survey, refusals)
    if selected is not None:
        selected(filters)
    models = discover_models(cfg.model_paths)
    runtime = Runtime(cfg.model_threads, tuple(cfg.model_providers))
    admitted = dict(running.versions) if running else {}  # versions that need no admission
    while True:
        try:
            prepared = prepare(
                spark,
                filters,
                decoder,
                head,
                cfg.catalog_dir,
                driver_heap_mb(spark),
                check=lambda samples, chosen=filters: how_they_run(
                    cfg, decoder, models, chosen, samples
                ),
                models=models,
                runtime=runtime,
            )
            versions = prepared.checked[0]
            refused = over_cap(spark, cfg, filters, versions, admitted)
            over = {e.filter for e in refused}
            admitted |= {f.name: versions[f.name] for f in filters if f.name not in over}
            if not refused:
                break
            for error in refused:
                filters = refusals.leave_out(filters, error)
        except FilterError as e:
            filters = refusals.leave_out(filters, e)
        if not filters:
            raise _nothing_left(decoder.survey, refusals)
    return _assembled(cfg, filters, decoder, prepared, refusals)


def how_they_run(
    cfg: JobConfig, decoder: Decoder, models: list, filters: list[Filter], samples
) -> tuple[dict[str, str], dict, tuple[Shape, ...], Predicates | None]:
    """The filters' versions, their fields records' types, compiled on the ``samples`` (the
    view of the sample alerts), and how they run: the filters matched predicate first and the
    shapes that run as data (the others compile one by one)."""
    versions = filter_versions(filters, cfg.catalog_dir, models)
    predicates = predicate_filters(samples, filters) if predicate_first(cfg, filters) else None
    if predicates is not None and len(predicates.filters) < max(cfg.predicates_from, 1):
        predicates = None
    taken = frozenset(predicates.filters if predicates else ())
    # Shared delivery publishes an alert once from its one row: no shaped join, whose rows are
    # one per match (its filters compile one by one).
    shared = cfg.delivery == contract.DELIVERY_SHARED
    shapes = (
        runnable_shapes(samples, filters, cfg.free_sql_rows_from, taken)
        if cfg.filters_as_data and not shared
        else ()
    )
    return versions, record_types(filters, decoder, versions, samples), shapes, predicates


def _assembled(cfg: JobConfig, filters: list[Filter], decoder: Decoder, prepared, refusals):
    """The plan of the ``prepared`` filters."""
    versions, types, shapes, predicates = prepared.checked
    paths = prepared.paths
    if types:
        paths = list(dict.fromkeys([*paths, *envelope_paths(decoder)]))
    return JobPlan(
        filters=filters,
        decoder=decoder,
        paths=paths,
        # The Delta archive keeps cutouts for every match (delta_cutouts) or for the matches of
        # the filters that ask for them (cutouts=True); only then are they decoded at all.
        archive_paths=archive_paths(
            decoder, paths, cfg.delta_cutouts or any(f.cutouts for f in filters)
        ),
        lacking=lacking_fields(decoder, filters, prepared.reads),
        context=prepared.context,
        versions=versions,
        payloads=payloads(
            filters, types, lambda f: contract.filter_topic(f, cfg.output_prefix), _store(cfg)
        )
        if types
        else {},
        refusals=refusals,
        scoring=prepared.scoring,
        shapes=shapes,
        predicates=predicates,
    )


def published(plan: JobPlan, cfg: JobConfig) -> list[Published]:
    """The plan's filters as the counts topic names them."""
    return [Published(f.name, plan.versions[f.name], cfg.topic_of(f)) for f in plan.filters]


def predicate_first(cfg: JobConfig, filters: list[Filter]) -> bool:
    """Whether the job may match filters predicate first: in micro-batches (Real-Time Mode runs
    no Python UDF) without ``--watch`` (which deploys shaped filters as rows without a restart),
    with at least ``predicates_from`` SQL filters."""
    sql = sum(not f.runs_python for f in filters)
    return not cfg.realtime and not cfg.watch and sql >= max(cfg.predicates_from, 1)


def _nothing_left(survey: str, refusals: Refusals) -> FilterError:
    return FilterError(
        f"no filter for {survey} alerts left to run: every one was refused;"
        f" {' | '.join(refusals.lines())}"
    )


def _store(cfg: JobConfig):
    """Where fields records' Avro schemas are registered: the job's registry or schema store."""
    from alertsieve.alerts.schemas import open_store

    return open_store(cfg.schema_registry, cfg.schema_dir)


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
    return [
        p
        for p in decoder.paths
        if (p in set(keep) and not p.startswith(cutouts))
        or (with_cutouts and p.startswith(cutouts))
    ]


def select_filters(cfg: JobConfig, survey: str, refusals: Refusals | None = None) -> list[Filter]:
    """The settings' SQL filters and code filters, then the discovered ones of this survey, with
    their parameters set; only those named by ``filters`` (``--filters``) if given. ``refusals``
    (``on_bad_filter: skip``) leaves out a file or filter that fails, keeping its running one."""
    refusals = refusals or Refusals(skip=False)
    filters = cfg.settings_filters()
    if cfg.discover_filters or cfg.filter_paths:
        found = discover(
            cfg.filter_paths,
            builtin=cfg.discover_filters,
            entry_points=cfg.discover_filters,
            on_bad_file=refusals.file_failed if refusals.skip else None,
        )
        found += refusals.kept_from_failed_files()
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
    filters = _each(
        filters, lambda f: with_params(f, cfg.filter_params.get(f.name, {}), where), refusals
    )
    unknown = set(cfg.filter_outputs) - {f.name for f in filters}
    if unknown:
        raise FilterError(
            f"{cfg.config_file or 'filter_outputs'}: filter_outputs names unknown filter(s) {sorted(unknown)}"
        )
    filters = [
        replace(f, **cfg.filter_outputs[f.name].model_dump(exclude_unset=True))
        if f.name in cfg.filter_outputs
        else f
        for f in filters
    ]
    filters = _each(filters, lambda f: check_output(f, cfg) or f, refusals)
    if not filters:
        where = looked_in(cfg.filter_paths, cfg.discover_filters, cfg.discover_filters)
        raise FilterError(
            f"no filter for {survey} alerts to run: looked in {where}, and the settings name"
            " none (sql_filters, --sql); add a filter module there, or give --filter-path DIR"
            " or --sql NAME=CONDITION"
        )
    if not cfg.filters:
        return filters
    by_name = {f.name: f for f in filters}
    missing = [n for n in cfg.filters if n not in by_name]
    if missing:
        raise FilterError(f"--filters names unknown filter(s) {missing}; known: {sorted(by_name)}")
    return [by_name[n] for n in cfg.filters]


def _each(
    filters: list[Filter], step: Callable[[Filter], Filter], refusals: Refusals
) -> list[Filter]:
    """Each filter replaced by ``step(filter)``; one whose step fails is left out by ``refusals``
    (or its error raised, when the job does not skip bad filters)."""
    out, done = list(filters), {}
    for f in filters:
        try:
            done[id(f)] = step(f)
        except FilterError as e:
            out = refusals.leave_out(out, e)
    return [done.get(id(g), g) for g in out]


def check_output(f: Filter, cfg: JobConfig) -> None:
    """A filter's payload is well formed, its readers are principals and its topic is not one of
    the job's own."""
    check_payload(f)
    check_triggers(f)
    reserved = {cfg.quarantine_topic: contract.QUARANTINE, cfg.counts_topic: contract.COUNTS}
    if cfg.delivery == contract.DELIVERY_SHARED:
        reserved[cfg.shared_topic] = "shared matches"
    for reader in f.readers:
        if not PRINCIPAL.match(reader):
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): readers: {reader!r} is not a Kafka principal;"
                f" write it as User:{reader.split(':')[-1] or 'name'}",
                filter=f.name,
            )
    kinds = {contract.RECORDS, contract.BYTES}
    if set(f.quota) - kinds or any(
        type(v) is not int or v <= 0 for v in f.quota.values() if v is not None
    ):
        raise FilterError(
            f"filter {f.name!r} ({f.origin}): quota {dict(f.quota)}: give records and/or bytes"
            " per UTC day, as positive integers, e.g. quota: {records: 10000}",
            filter=f.name,
        )
    topic = contract.filter_topic(f, cfg.output_prefix)
    if topic in reserved:
        raise FilterError(
            f"filter {f.name!r} ({f.origin}) would publish to {topic},"
            f" the job's {reserved[topic]} topic; rename it or set its topic",
            filter=f.name,
        )


def newest_messages(cfg: JobConfig, topics: list[str] | str) -> list[bytes]:
    """The newest messages of the input and of the quarantine topic, for the ZTF writer schemas a
    job learns at start-up beside the first messages': a schema ZTF began to send after the
    topic's start is among the newest, and one a running job quarantined ("restart the job to
    read it") is on the quarantine topic, its original bytes."""
    newest = head_messages(cfg.bootstrap, topics, extra=cfg.kafka_conf, newest=True)
    return newest + head_messages(
        cfg.bootstrap, [cfg.quarantine_topic], extra=cfg.kafka_conf, newest=True
    )
