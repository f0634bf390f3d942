"""The filter job's settings: one typed model is the source of truth for the YAML keys, their
types and defaults, and the command-line flags (each flag is declared on the field it sets).

A settings file only needs what differs from the defaults here; a wrong type, an unknown key or a
bad value fails at start-up on one line naming the file (or flag), the key, the value and the fix.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from alertsieve.filtering.model import Filter
from alertsieve.filtering.tables import SqlFilterSpec
from alertsieve.kafka.client_security import SecurityConfigError, java_conf
from alertsieve.publish import contract
from alertsieve.settings import (
    ConfigError,
    SettingsError,
    explain,
    masked,
    read_yaml,
    resolve_secret,
)
from alertsieve.view.decode_settings import DecodeSettings


def _flag(flag: str, cli: str = "value", example: str | None = None, **extra: Any) -> dict:
    """Field metadata: the flag that sets this field and how its text becomes a value
    (value | true | false | csv | append | pairs | sql)."""
    return {"flag": flag, "cli": cli, "cli_example": example, **extra}


class Quota(BaseModel):
    """A daily quota: records and/or bytes a filter publishes per UTC day."""

    model_config = ConfigDict(extra="forbid")

    records: int | None = Field(None, gt=0)
    bytes: int | None = Field(None, gt=0)


class FilterOutput(BaseModel):
    """What a filter's matches publish, set from the job's settings (``filter_outputs``)."""

    model_config = ConfigDict(extra="forbid")

    payload: Literal["alert", "fields"] = "alert"
    fields: dict[str, str] = Field(default_factory=dict)
    format: Literal["avro", "json"] = "avro"
    max_rate: float | None = Field(None, gt=0, le=1)
    readers: list[str] | None = None
    quota: Quota | None = None


class Admission(BaseModel):
    """``admission``: each new or changed filter backtested on a reference before it publishes,
    refused when it passes more than ``max_rate`` of the reference's alerts, or when its SQL
    costs more than ``max_ms_per_alert`` on them."""

    model_config = ConfigDict(extra="forbid")

    reference: list[str] = Field(
        description="alerts as backtest --input takes them: files, a topic (on the job's"
        " bootstrap), the archive, simulated:N",
        min_length=1,
    )
    max_rate: float = Field(0.05, gt=0, le=1, description="a filter's cap unless it sets its own")
    max_ms_per_alert: float = Field(
        0.5,
        gt=0,
        description="the most a SQL filter's condition may cost, in milliseconds of a core per"
        " reference alert, measured at admission (alertsieve.backtest.cost); above it the filter"
        " is refused with its cost",
    )

    @field_validator("reference", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class JobConfig(BaseModel):
    """Every setting of ``alertsieve filter`` / ``jobs/filter_stream.py``, with its default."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    #: Old keys and where their meaning went, for the error that meets an old file.
    renamed: ClassVar[dict[str, str]] = {
        "only_filters": "filters chosen by name are 'filters: [a, b]' (like --filters a,b)",
        "trigger_seconds": "the trigger is 'trigger: SECONDS' or 'trigger: realtime[=DURATION]' (like --trigger)",
    }

    bootstrap: str = Field(
        "127.0.0.1:9092",
        description="Kafka bootstrap servers (input and outputs)",
        examples=["127.0.0.1:9092"],
        json_schema_extra=_flag("--bootstrap", example="HOST:PORT"),
    )
    topic: str | None = Field(
        None,
        description="the input topic (or topic_pattern)",
        examples=["alerts"],
        json_schema_extra=_flag("--topic"),
    )
    topic_pattern: str | None = Field(
        None,
        description="a regex of topics to read",
        examples=["alerts-.*"],
        json_schema_extra=_flag("--topic-pattern"),
    )
    starting_offsets: str = Field(
        "earliest",
        description="earliest, latest or an ISO-8601 time",
        examples=["earliest"],
        json_schema_extra=_flag("--starting-offsets"),
    )
    on_source_loss: Literal["continue", "fail"] = Field(
        "continue",
        description="when the input no longer holds offsets the checkpoint says are next"
        " (retention, a reset): continue from the earliest held, the loss logged and counted"
        " (lost_at_source), or fail the query",
        examples=["continue"],
        json_schema_extra=_flag("--on-source-loss"),
    )
    max_offsets_per_trigger: int | None = Field(
        20_000,
        gt=0,
        description="alerts per micro-batch at most (~2 visits: a batch has a fixed cost, docs/benchmarks.md)",
        examples=[20000],
        json_schema_extra=_flag("--max-offsets-per-trigger", example="20000"),
    )
    trigger: str = Field(
        "0",
        description="SECONDS between micro-batches (0: back to back), or realtime[=DURATION]:"
        " Spark's Real-Time Mode, DURATION between checkpoints (default 5 minutes)",
        examples=["0", "realtime", "realtime=1 minute"],
        json_schema_extra=_flag("--trigger", example="realtime"),
    )
    archive_trigger_seconds: float = Field(
        30.0,
        gt=0,
        description="seconds between the Delta archive's batches",
        examples=[30],
        json_schema_extra=_flag("--archive-trigger", example="30"),
    )
    available_now: bool = Field(
        False,
        description="process what is in the topic, then stop",
        examples=[True],
        json_schema_extra=_flag("--available-now", cli="true"),
    )
    filters: list[str] | None = Field(
        None,
        description="names of the filters to run (default: all)",
        examples=[["bright_high_snr", "fast_risers"]],
        json_schema_extra=_flag("--filters", cli="csv", example="bright_high_snr,fast_risers"),
    )
    sql_filters: list[SqlFilterSpec] = Field(
        default_factory=list,
        description="ad-hoc SQL filters (name, sql; optional description, topic, contact, params, cutouts)",
        examples=[[{"name": "very_bright", "sql": "diaSource.psfFlux > 1.4e6"}]],
        json_schema_extra=_flag(
            "--sql", cli="sql", example="very_bright='diaSource.psfFlux > 1.4e6'"
        ),
    )
    discover_filters: bool = Field(
        True,
        description="run the filters of filters/ and of installed packages",
        examples=[False],
        json_schema_extra=_flag(
            "--no-discover",
            cli="false",
            help="run only the filters given here (--sql, --filter-path), not those of filters/"
            " and of installed packages",
        ),
    )
    filter_paths: list[str] = Field(
        default_factory=list,
        description="more folders (or files) of filter modules",
        examples=[["~/my-filters"]],
        json_schema_extra=_flag("--filter-path", cli="append", example="DIR"),
    )
    model_paths: list[str] = Field(
        default_factory=list,
        description="more folders (or files) of model modules, whose scores filters read as"
        " scores.NAME (models/ and installed packages' are found anyway)",
        examples=[["~/my-models"]],
        json_schema_extra=_flag("--model-path", cli="append", example="DIR"),
    )
    model_threads: int = Field(
        1,
        ge=1,
        description="ONNX Runtime's intra-op threads per Python worker for each model (Spark"
        " runs a worker per core already; one thread gives the same scores run after run)",
        examples=[2],
        json_schema_extra=_flag("--model-threads", example="2"),
    )
    model_providers: list[str] = Field(
        default_factory=lambda: ["CPUExecutionProvider"],
        min_length=1,
        description="ONNX Runtime's execution providers for the models, in order of preference",
        examples=[["CUDAExecutionProvider", "CPUExecutionProvider"]],
        json_schema_extra=_flag("--model-providers", cli="csv", example="CPUExecutionProvider"),
    )
    filter_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per filter: parameters to override (typed by the filter's defaults)",
        examples=[{"bright_high_snr": {"min_snr": 100}}],
    )
    filter_outputs: dict[str, FilterOutput] = Field(
        default_factory=dict,
        description="per filter: payload (alert|fields), fields {alias: SQL}, format (avro|json),"
        " max_rate (admission), readers (principals that alone may read its topic)",
        examples=[
            {
                "bright_high_snr": {
                    "payload": "fields",
                    "fields": {"snr": "diaSource.snr"},
                    "format": "json",
                }
            }
        ],
    )
    watch: bool = Field(
        False,
        description="deploy new, changed or removed filters (and catalogs) while the job runs",
        examples=[True],
        json_schema_extra=_flag("--watch", cli="true"),
    )
    quota: Quota | None = Field(
        None,
        description="every filter's daily quota unless it has its own: records and/or bytes per"
        " UTC day; past it, its matches are withheld (counted) until the next day",
        examples=[{"records": 10000, "bytes": 100000000}],
        json_schema_extra=_flag("--quota", cli="pairs", example="records=10000"),
    )
    filters_as_data: bool = Field(
        True,
        description="SQL filters that share a shape (the same SQL, other constants) run as rows"
        " of one table, one condition per shape, so the job's code stays the size of its shapes;"
        " false compiles every filter's condition on its own",
        examples=[False],
    )
    free_sql_rows_from: int = Field(
        100,
        ge=0,
        description="with filters_as_data, from this many SQL filters of no shape, those whose"
        " condition is AND, OR and NOT over comparisons of a value with constants run as rows"
        " too (clauses); fewer compile one by one, as whole-stage code holds them (0: always)",
        examples=[0],
    )
    predicates_from: int = Field(
        100,
        ge=0,
        description="from this many SQL filters whose condition is AND, OR and NOT over"
        " comparisons of a value with constants, they are matched together predicate first:"
        " each value sorted once per batch, each filter from its tightest cut, in one Arrow UDF"
        " (micro-batches without --watch; Real-Time Mode and --watch run them as rows); fewer"
        " compile or run as rows",
        examples=[0],
    )
    on_bad_filter: Literal["fail", "skip"] = Field(
        "fail",
        description="a filter that fails its checks: fail stops the start-up (or refuses the whole"
        " --watch deployment); skip leaves it out with its reason and runs the rest (under --watch,"
        " its running version goes on)",
        examples=["skip"],
        json_schema_extra=_flag("--on-bad-filter", example="skip"),
    )
    admission: Admission | None = Field(
        None,
        description="backtest each new or changed filter on a reference (reference: INPUT;"
        " max_rate: 0.05) and refuse it above its rate (a filter's own max_rate first)",
        examples=[{"reference": "simulated:2000", "max_rate": 0.05}],
        json_schema_extra=_flag("--admission", cli="pairs", example="reference=simulated:2000"),
    )
    suspend_above: float | None = Field(
        0.5,
        gt=0,
        le=1,
        description="a SQL filter whose condition raises on more than this share of a batch's"
        " decoded alerts (a batch of at least 20) is suspended: the hot path restarts without"
        " it, the counts topic says why, and it stays out until the job restarts or its owner"
        " deploys a new version (null: never)",
        examples=[0.9],
        json_schema_extra=_flag("--suspend-above", example="0.9"),
    )
    object_ttl_days: float = Field(
        60.0,
        gt=0,
        description="an object no alert has named for this many days is forgotten: its summary"
        " and annotations leave the job's state (counted as evicted in the metrics); read by the"
        " filters of object.* and annotations.* only",
        examples=[30],
        json_schema_extra=_flag("--object-ttl-days", example="30"),
    )
    annotators: dict[str, str] = Field(
        default_factory=dict,
        description="annotator -> the Kafka principal that alone may write its annotations"
        " (<prefix>annotations-<annotator>), on a cluster with an authorizer",
        examples=[{"tns": "User:tns-bot"}],
        json_schema_extra=_flag("--annotators", cli="pairs", example="tns=User:tns-bot"),
    )
    python_filter_budget: float | None = Field(
        None,
        gt=0,
        description="seconds per 1,000 alerts a Python filter or a model may take in a batch;"
        " above, a WARNING names it with its cost (default: none)",
        examples=[0.5],
        json_schema_extra=_flag("--python-filter-budget", example="0.5"),
    )
    catalog_dir: str = Field(
        "catalogs",
        description="where catalogs, watchlists and watchmaps are (alertsieve catalog add / watch add)",
        examples=["catalogs"],
        json_schema_extra=_flag("--catalog-dir", example="DIR"),
    )
    sinks: list[Literal["kafka", "delta", "noop"]] = Field(
        default_factory=lambda: ["kafka", "delta"],
        min_length=1,
        description="kafka: a topic per filter; delta: also archive the matches in Delta, by a second query that reads those topics; noop (alone): evaluate and count every filter, build and publish no record (what a set of filters costs to evaluate)",
        examples=[["kafka", "delta"]],
        json_schema_extra=_flag("--sink", cli="csv", example="kafka,delta"),
    )
    delivery: Literal["topics", "shared"] = Field(
        "topics",
        description="topics: each filter's matches on its own topic, <prefix><filter>; shared:"
        " each alert that passed any filter published once, on <prefix>matches, its headers"
        " naming every filter and version it passed and holding their fields (filters with"
        " readers or their own topic keep it); read one filter's with listen --filter",
        examples=["shared"],
        json_schema_extra=_flag("--delivery", example="shared"),
    )
    output_prefix: str = Field(
        contract.DEFAULT_PREFIX,
        description="output topics are <prefix><filter>, <prefix>quarantine, <prefix>counts",
        examples=[contract.DEFAULT_PREFIX],
        json_schema_extra=_flag("--output-prefix"),
    )
    output_partitions: int = Field(
        4, gt=0, description="partitions of the output topics the job creates", examples=[4]
    )
    delta_path: str = Field(
        "data/delta",
        description="the archive's Delta tables (matches, quarantine)",
        examples=["data/delta"],
        json_schema_extra=_flag("--delta-path"),
    )
    delta_upkeep_seconds: float = Field(
        3600,
        ge=0,
        description="every this many seconds the archive compacts (OPTIMIZE) and vacuums its"
        " tables, between its batches; 0: never",
        examples=[3600],
        json_schema_extra=_flag("--delta-upkeep", example="3600"),
    )
    delta_retention_hours: float = Field(
        168,
        ge=0,
        description="the archive's time travel: VACUUM keeps the files (and the log) of this"
        " many hours of versions",
        examples=[168],
        json_schema_extra=_flag("--delta-retention-hours", example="168"),
    )
    delta_cutouts: bool = Field(
        False,
        description="keep every match's cutouts in the archive (else only for filters with cutouts=True)",
        examples=[True],
    )
    delta_messages: bool = Field(
        True,
        description="keep each match's message as it arrived (column message): what"
        " 'alertsieve backtest --input DELTA_PATH' decodes to run any filter over the archive",
        examples=[False],
    )
    checkpoint: str = Field(
        "checkpoints/filter_stream",
        description="where the job keeps its progress, to resume after a restart (the archive's: <checkpoint>-archive)",
        examples=["checkpoints/filter_stream"],
        json_schema_extra=_flag("--checkpoint"),
    )
    metrics_path: str | None = Field(
        "data/metrics/filter_stream.jsonl",
        description="append per-batch metrics (JSON lines) here",
        examples=["data/metrics/filter_stream.jsonl"],
        json_schema_extra=_flag("--metrics"),
    )
    prometheus_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="serve the job's metrics for Prometheus on this port (/metrics; off when unset)",
        examples=[9108],
        json_schema_extra=_flag("--prometheus-port"),
    )
    prometheus_host: str = Field(
        "127.0.0.1",
        description="the address the Prometheus endpoint listens on (0.0.0.0: every interface)",
        examples=["0.0.0.0"],
        json_schema_extra=_flag("--prometheus-host"),
    )
    kafka_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Kafka client settings for source and sinks; values env:NAME or file:PATH are read from the environment or a file",
        examples=[{"security.protocol": "SASL_SSL"}],
        json_schema_extra=_flag("--kafka-conf", cli="pairs", example="security.protocol=SASL_SSL"),
    )
    survey: Literal["auto", "rubin", "ztf"] = Field(
        "auto",
        description="whose alerts the topic carries; auto: told by its first messages (Rubin if empty)",
        examples=["rubin"],
        json_schema_extra=_flag("--survey"),
    )
    schema_versions: list[str] | None = Field(
        None,
        description="Rubin schema versions the job reads, into one filter view (default: 7.0 on)",
        examples=[["7.4", "10.0", "11.1"]],
        json_schema_extra=_flag("--schema-versions", cli="csv", example="7.4,10.0,11.1"),
    )
    wire_format: Literal["confluent", "plain"] = Field(
        "confluent",
        description="Rubin: confluent (0x00, schema id, body) or plain (a bare body of writer_schema_version)",
        examples=["confluent"],
    )
    writer_schema_version: str | None = Field(
        None, description="with wire_format plain: the producer's Rubin version", examples=["11.1"]
    )
    schema_registry: str | None = Field(
        None,
        description="a Confluent Schema Registry to resolve schema ids (else the local store)",
        examples=["http://registry:8081"],
    )
    schema_dir: str | None = Field(
        None,
        description="the local schema store (default ~/.cache/alertsieve/schemas)",
        examples=["~/.cache/alertsieve/schemas"],
    )
    master: str | None = Field(
        None,
        description="Spark master (default: spark-submit's, else local[*])",
        examples=["local[2]"],
        json_schema_extra=_flag("--master"),
    )
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Spark settings for the job's session",
        examples=[{"spark.driver.memory": "6g"}],
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="stop a continuous run after this many seconds",
        examples=[600],
        json_schema_extra=_flag("--timeout", example="600"),
    )
    code_filters: list[Any] = Field(
        default_factory=list,
        description="filter objects handed over by library code",
        json_schema_extra={"code_only": True},
    )
    config_file: str | None = Field(None, json_schema_extra={"code_only": True})

    @field_validator("code_filters")
    @classmethod
    def _filter_objects(cls, value: list[Any]) -> list[Any]:
        for f in value:
            if not isinstance(f, Filter):
                raise ValueError(
                    f"expected AlertFilter or PythonFilter objects, got {type(f).__name__}"
                )
        return value

    @field_validator("annotators")
    @classmethod
    def _annotators(cls, value: dict[str, str]) -> dict[str, str]:
        from alertsieve.kafka.acls import PRINCIPAL
        from alertsieve.publish.annotations import check_annotator

        for name, principal in value.items():
            check_annotator(name)
            if not PRINCIPAL.match(principal):
                raise ValueError(
                    f"annotators: {name}: {principal!r} is not a Kafka principal;"
                    f" write it as User:{principal.split(':')[-1] or 'name'}"
                )
        return value

    @field_validator("schema_versions")
    @classmethod
    def _versions(cls, value: list[str] | None) -> list[str] | None:
        from alertsieve.alerts.schemas import SchemaError, load_rubin_schema, rubin_version_of

        try:
            return (
                None
                if value is None
                else [rubin_version_of(load_rubin_schema(v).definition) for v in value]
            )
        except SchemaError as e:
            raise ValueError(str(e)) from None

    @field_validator("trigger", mode="before")
    @classmethod
    def _trigger(cls, value: Any) -> str:
        text = str(value).strip()
        if text == "realtime" or text.startswith("realtime="):
            duration = text.partition("=")[2] or DEFAULT_CHECKPOINT_INTERVAL
            return f"realtime={_duration(duration)}"
        try:
            seconds = float(text)
        except ValueError:
            seconds = -1.0
        if seconds < 0:
            raise ValueError("must be a number of seconds (0: back to back) or realtime[=DURATION]")
        return text

    @field_validator("starting_offsets")
    @classmethod
    def _offsets(cls, value: str) -> str:
        if value not in ("earliest", "latest"):
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError("must be earliest, latest or an ISO-8601 time") from None
        return value

    @field_validator("kafka_conf")
    @classmethod
    def _secrets(cls, value: dict[str, str]) -> dict[str, str]:
        resolved = {k: resolve_secret(v) for k, v in value.items()}
        try:
            java_conf(resolved)
        except SecurityConfigError as e:
            raise ValueError(str(e)) from None
        return resolved

    @model_validator(mode="after")
    def _consistent(self) -> JobConfig:
        if bool(self.topic) == bool(self.topic_pattern):
            raise ValueError(
                "give exactly one of 'topic' (--topic) or 'topic_pattern' (--topic-pattern)"
            )
        if self.wire_format == "plain" and not self.writer_schema_version:
            raise ValueError("wire_format 'plain' needs writer_schema_version (e.g. 11.1)")
        if "delta" in self.sinks and "kafka" not in self.sinks:
            raise ValueError(
                "sinks [delta] without kafka: the Delta archive reads the filters' topics;"
                " use sinks: [kafka, delta] (--sink kafka,delta)"
            )
        if self.delivery == contract.DELIVERY_SHARED and self.quota:
            raise ValueError(
                "delivery: shared with a quota for every filter (quota) would share nothing:"
                " a filter with a daily quota keeps its own topic; give quotas in the filters"
                " that need one, or use delivery: topics"
            )
        if self.delivery == contract.DELIVERY_SHARED and self.realtime:
            raise ValueError(
                "delivery: shared runs in micro-batches; Real-Time Mode (--trigger realtime) publishes a"
                " topic per filter: drop one of them"
            )
        if "noop" in self.sinks and len(self.sinks) > 1:
            raise ValueError(
                "sinks [noop] publishes nothing, so nothing else can read its output:"
                " give noop alone (--sink noop) or kafka[,delta]"
            )
        if self.wire_format == "plain" and self.survey == "ztf":
            raise ValueError("wire_format 'plain' is Rubin's schemaless body; ZTF sends containers")
        return self

    @property
    def where(self) -> str:
        return self.config_file or "the command line"

    @property
    def decode_settings(self) -> DecodeSettings:
        """What the job's decoder is built from (``alertsieve.view.surveys``)."""
        versions = None if self.schema_versions is None else tuple(self.schema_versions)
        return DecodeSettings(
            survey=self.survey,
            topic=self.topic,
            schema_versions=versions,
            wire_format=self.wire_format,
            writer_schema_version=self.writer_schema_version,
            schema_registry=self.schema_registry,
            schema_dir=self.schema_dir,
            where=self.where,
        )

    @property
    def trigger_seconds(self) -> float | None:
        """Seconds between micro-batches; None in Real-Time Mode."""
        return None if self.realtime else float(self.trigger)

    @property
    def realtime(self) -> str | None:
        """Real-Time Mode's checkpoint interval ('5 minutes'), or None for micro-batches."""
        return self.trigger.partition("=")[2] if self.trigger.startswith("realtime=") else None

    @property
    def archive_checkpoint(self) -> str:
        """The archive query's own checkpoint, beside the hot path's."""
        return f"{self.checkpoint.rstrip('/')}-archive"

    @property
    def objects_checkpoint(self) -> str:
        """The objects query's own checkpoint (its state store with it), beside the hot path's."""
        return f"{self.checkpoint.rstrip('/')}-objects"

    @property
    def annotations_topics(self) -> str:
        """The pattern of every annotator's topic (``contract.annotation_topic``)."""
        return contract.annotations_pattern(self.output_prefix)

    @property
    def filter_table(self) -> str:
        """The Delta table of the shaped filters' rows under ``--watch``, beside the checkpoint
        (``alertsieve.stream.shaped.store``)."""
        return f"{self.checkpoint.rstrip('/')}-filters"

    @property
    def quarantine_topic(self) -> str:
        return contract.quarantine_topic(self.output_prefix)

    @property
    def shared_topic(self) -> str:
        """Each matching alert once, with ``delivery: shared`` (``contract.shared_topic``)."""
        return contract.shared_topic(self.output_prefix)

    def topic_of(self, f) -> str:
        """Where filter ``f``'s matches are published (``contract.delivered_topic``)."""
        return contract.delivered_topic(f, self.output_prefix, self.delivery)

    @property
    def counts_topic(self) -> str:
        """One JSON record per batch: what was read and published (``alertsieve.publish.counts``)."""
        return contract.counts_topic(self.output_prefix)

    @property
    def quota_default(self) -> dict[str, int] | None:
        """Every filter's daily quota unless it has its own (``quota``), as {kind: limit}."""
        return self.quota.model_dump(exclude_none=True) if self.quota else None

    def settings_filters(self) -> list[Filter]:
        """The ad-hoc SQL filters of the settings, then those handed over in code."""
        where = self.config_file or "--sql"
        specs = [s.to_filter(f"{where} (sql_filters[{i}])") for i, s in enumerate(self.sql_filters)]
        return specs + list(self.code_filters)

    def masked_kafka_conf(self) -> dict[str, str]:
        return masked(self.kafka_conf)


DEFAULT_CHECKPOINT_INTERVAL = "5 minutes"
_UNITS = {
    "ms": "milliseconds",
    "millisecond": "milliseconds",
    "milliseconds": "milliseconds",
    "s": "seconds",
    "sec": "seconds",
    "second": "seconds",
    "seconds": "seconds",
    "m": "minutes",
    "min": "minutes",
    "minute": "minutes",
    "minutes": "minutes",
    "h": "hours",
    "hour": "hours",
    "hours": "hours",
}


def _duration(text: str) -> str:
    """'90s', '5 minutes', '1 min' -> Spark's interval spelling ('90 seconds')."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([a-z]+)\s*", text.lower())
    if not m or m[2] not in _UNITS or int(m[1]) == 0:
        raise ValueError(
            f"realtime={text}: the checkpoint interval must be like 30s, 5 minutes or 1h"
        )
    return f"{int(m[1])} {_UNITS[m[2]]}"


def flag_fields() -> dict[str, dict[str, Any]]:
    """Field name -> its flag metadata, for every field the command line can set."""
    return {
        name: info.json_schema_extra
        for name, info in JobConfig.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and "flag" in info.json_schema_extra
    }


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> JobConfig:
    """The settings file (if any), then values from the command line (``overrides``: field name
    -> value, as :func:`alertsieve.stream.flags.overrides` makes them). Filters given on both
    (``sql_filters``, ``filter_paths``, ``kafka_conf``) add up; the command line wins otherwise."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    data = read_yaml(path, ConfigError) if path else {}
    where = str(path) if path else "the command line"
    if "filters" in data and _looks_like_sql_filters(data["filters"]):
        raise ConfigError(
            f"{where}: filters = a list of SQL filters: 'filters' now chooses filters by name"
            " (like --filters); write ad-hoc SQL filters under 'sql_filters:' instead"
        )
    merged = dict(data)
    for key, value in overrides.items():
        if key in ("sql_filters", "filter_paths") and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        elif key == "kafka_conf" and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    flags = {k: meta["flag"] for k, meta in flag_fields().items() if k in overrides}
    try:
        return JobConfig.model_validate({**merged, "config_file": str(path) if path else None})
    except ValidationError as e:
        raise ConfigError(explain(e, JobConfig, where, flags)) from None
    except SettingsError as e:  # a secret that cannot be read
        raise ConfigError(f"{where}: kafka_conf: {e}") from None


def _looks_like_sql_filters(value: Any) -> bool:
    return isinstance(value, list) and any(isinstance(v, dict) for v in value)


def check_writable(cfg: JobConfig) -> None:
    """The checkpoint, the Delta tables and the metrics file must be writable before any alert
    is read: finding out at the first batch would crash the job, and again at every restart."""
    places = [("checkpoint", "--checkpoint", cfg.checkpoint)]
    if "delta" in cfg.sinks:
        places.append(("delta_path", "--delta-path", cfg.delta_path))
    if cfg.metrics_path:
        places.append(("metrics_path", "--metrics", str(Path(cfg.metrics_path).parent)))
    for name, flag, folder in places:
        if "://" in folder:  # s3a://, hdfs://, abfss://: Spark's file systems check those
            continue
        path = Path(folder)
        reason = "it is a file" if path.exists() and not path.is_dir() else _write_probe(path)
        if reason:
            raise ConfigError(
                f"{cfg.where}: {name} {folder} is not writable ({reason}); choose a folder"
                f" this user can write with {flag}"
            )


def _write_probe(path: Path) -> str | None:
    """Why ``path`` cannot be created and written to, or None if it can."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".alertsieve-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return e.strerror or str(e)
    return None
