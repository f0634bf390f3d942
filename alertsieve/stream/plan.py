"""What a job runs, settled before its first alert: the filters (chosen, parameterised and checked
on sample alerts) and how alerts are decoded for them and for the archive."""

from __future__ import annotations

from dataclasses import dataclass

from alertsieve.alerts.replay import ID_FIELDS
from alertsieve.alerts.schemas import (
    CUTOUTS,
    AlertSchema,
    load_rubin_schema,
    open_store,
    without_fields,
)
from alertsieve.filtering.checks import validate
from alertsieve.filtering.discovery import discover
from alertsieve.filtering.model import Filter, FilterError, with_params
from alertsieve.stream.config import JobConfig
from alertsieve.stream.decode import DecodePlan, decoded_records, make_plan


@dataclass(frozen=True)
class JobPlan:
    filters: list[Filter]
    reader: AlertSchema
    slim_reader: AlertSchema  # the reader without cutouts: what filters see
    decode: DecodePlan  # for filtering: Avro skips the ~100 KB of cutouts
    archive: DecodePlan  # for the Delta archive: with cutouts only if someone keeps them
    id_field: str | None  # the alert id of the schema, else the Kafka key is the id


def plan_job(spark, cfg: JobConfig) -> JobPlan:
    """Everything a bad setting or filter can break, checked before the stream starts."""
    store = open_store(cfg.schema_registry, cfg.schema_dir)
    reader = load_rubin_schema(cfg.reader_schema_version)

    def decode_plan(schema: AlertSchema) -> DecodePlan:
        if cfg.wire_format == "plain":
            return make_plan(schema, [load_rubin_schema(cfg.writer_schema_version)], "plain")
        return make_plan(schema, store.candidates(f"{cfg.topic or 'alerts'}-value"))

    # Filters read everything but the cutouts: Avro resolution then skips ~100 KB of image
    # bytes per alert instead of copying them into every row.
    slim = without_fields(reader, CUTOUTS)
    filtering = decode_plan(slim)
    filters = select_filters(cfg)
    # The Delta archive keeps cutouts for every match (delta_cutouts) or for the matches of
    # the filters that ask for them (cutouts=True); only then are they decoded at all.
    keep_cutouts = cfg.delta_cutouts or any(f.cutouts for f in filters)
    names = {x["name"] for x in reader.definition["fields"]}
    validate(filters, _sample_alerts(spark, reader, cfg.reader_schema_version))
    return JobPlan(
        filters=filters,
        reader=reader,
        slim_reader=slim,
        decode=filtering,
        archive=decode_plan(reader) if keep_cutouts else filtering,
        id_field=next((f for f in ID_FIELDS if f in names), None),
    )


def select_filters(cfg: JobConfig) -> list[Filter]:
    """The settings' SQL filters and code filters, then the discovered ones, with their
    parameters set; only those named by ``filters`` (``--filters``) if given."""
    filters = cfg.settings_filters()
    if cfg.discover_filters or cfg.filter_paths:
        filters += discover(
            cfg.filter_paths, builtin=cfg.discover_filters, entry_points=cfg.discover_filters
        )
    where = cfg.config_file or "filter_params"
    unknown = set(cfg.filter_params) - {f.name for f in filters}
    if unknown:
        raise FilterError(f"{where}: filter_params names unknown filter(s) {sorted(unknown)}")
    filters = [with_params(f, cfg.filter_params.get(f.name, {}), where) for f in filters]
    if not cfg.filters:
        return filters
    by_name = {f.name: f for f in filters}
    missing = [n for n in cfg.filters if n not in by_name]
    if missing:
        raise FilterError(f"--filters names unknown filter(s) {missing}; known: {sorted(by_name)}")
    return [by_name[n] for n in cfg.filters]


def _sample_alerts(spark, reader: AlertSchema, version: str | None, n: int = 64):
    """Simulated alerts of the reader's version, decoded as the job decodes: filters are
    compiled and Python filters run against them at start-up."""
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    sim = AlertSimulator(SimulationConfig(schema_version=version, stamp_size=8, seed=7))
    return decoded_records(spark, reader, list(sim.visit_alerts(0, count=n)), CUTOUTS)
