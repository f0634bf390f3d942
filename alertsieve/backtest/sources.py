"""What a backtest or a diff runs over: a topic (read once, start to end), files (a replay: Rubin
or ZTF Avro, byte for byte, and brokers' Avro and Parquet exports made official, as ``produce
--replay`` would send them), ``simulated:N`` alerts, or a job's
Delta archive (the messages of its matches, as they arrived), as Kafka rows with the decoder that
reads them as the stream job would."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alertsieve.alerts.schemas import LOCAL_ID_BASE, open_store, view_versions
from alertsieve.alerts.view import version_order
from alertsieve.filtering.model import FilterError
from alertsieve.kafka.topics import head_messages
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.decoder import Decoder, container_writer, view_paths
from alertsieve.view.surveys import make_decoder


@dataclass
class AlertSource:
    """Alerts to backtest on, as Kafka rows (topic, partition, offset, timestamp, key, value) and
    the decoder that reads them: the job's own decoding, quarantine reasons included."""

    raw: Any
    decoder: Decoder
    head: list[bytes]  # the first messages: ZTF's sample alerts for the start-up checks
    archived: bool = False  # a job's archived matches (see archive_source)

    def decoded(self, paths: list[str] | None = None):
        """The decodable alerts in the filter view: ``paths`` only, or all of it but cutouts."""
        paths = paths or view_paths(self.decoder, with_cutouts=False)
        return self.decoder.decode(self.raw, paths).where("_reason IS NULL").select("alert.*")


def survey_inputs(paths: list[str]) -> dict[str, list]:
    """The files and exports of ``paths`` by survey, in the order first met: files of several
    surveys are not undecodable, just each survey's own."""
    from alertsieve.alerts.export_files import find_inputs

    by_survey: dict[str, list] = {}
    for source in find_inputs(paths):
        by_survey.setdefault(source.official or source.check().survey, []).append(source)
    return by_survey


def survey_sources(spark, paths: list[str], schema_dir: str | None = None) -> list[AlertSource]:
    """Files as the job would read them had they been replayed (official Avro byte for byte,
    exports of any writer read by Spark and made official), one source a survey: each
    survey's filters read its own alerts."""
    name = ",".join(paths)
    return [
        _inputs_source(spark, inputs, name, schema_dir) for inputs in survey_inputs(paths).values()
    ]


def _inputs_source(spark, inputs: list, name: str, schema_dir: str | None) -> AlertSource:
    from functools import reduce

    from alertsieve.alerts.replay import read_raw_records, wire_message
    from alertsieve.backtest.export_reader import export_messages

    store = open_store(None, schema_dir)
    official, frames, versions = [], [], set()
    for source in inputs:
        if not source.official:
            messages = export_messages(spark, source)
            versions |= {
                r.version for r in messages.select("version").distinct().collect() if r.version
            }
            frames.append(messages.select("key", "value"))
            continue
        for path in source.files:
            for raw in read_raw_records(path):
                schema_id = (
                    None
                    if source.official == "ztf"
                    else store.register(raw.writer_schema).schema_id
                )
                official.append((raw.key, wire_message(raw, schema_id)))
    if official:
        frames.append(spark.createDataFrame(official, "key string, value binary"))
    raw = as_topic(reduce(lambda a, b: a.unionByName(b), frames), name)
    head = [r.value for r in raw.select("value").limit(20).collect()]
    if not head:
        raise FilterError(f"no alerts in {name}")
    stated = _rubin_versions_in([m for _, m in official]) or ()  # every writer, not the first's
    rubin = tuple(sorted(versions.union(stated), key=version_order))
    settings = DecodeSettings(topic=name, schema_dir=schema_dir, schema_versions=rubin or None)
    decoder = make_decoder(settings, head, view_also=view_versions(), seen=one_per_writer(raw))
    return AlertSource(raw, decoder, head)


def one_per_writer(raw) -> list[bytes]:
    """A message of each ZTF writer schema the input holds: a backtest reads a finite input, so
    it learns every writer first (a stream learns them as they come)."""
    from pyspark.sql import functions as F

    writers = raw.select(container_writer(F.col("value")).alias("writer"), "value")
    firsts = writers.where("writer IS NOT NULL").groupBy("writer").agg(F.first("value"))
    return [r[1] for r in firsts.collect()]


def _simulated(count: int, version: str | None) -> list[tuple[str, bytes]]:
    from alertsieve.alerts.replay import alert_key
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    sim = AlertSimulator(SimulationConfig(schema_version=version, stamp_size=0, seed=11))
    per_visit = 10_000
    return [
        (alert_key(a), sim.schema.encode_framed(a))
        for v in range(-(-count // per_visit))
        for a in sim.visit_alerts(v, count=min(per_visit, count - v * per_visit))
    ]


def load_alerts(
    spark,
    source: str | list[str],
    bootstrap: str | None = None,
    schema_dir: str | None = None,
    version: str | None = None,
    survey: str | None = None,
) -> AlertSource:
    """``simulated:N`` alerts (of ``version``), Avro or Parquet files or folders of them (Rubin or ZTF; a
    list of them is one input; of several surveys, ``survey``'s alerts, or the first survey's),
    a job's Delta archive (its ``delta_path``, its ``matches`` table, or ``delta:URI``), or a
    topic (with ``bootstrap``): ready to decode as the job decodes."""
    sources = [source] if isinstance(source, str) else list(source)
    table = _matches_table(sources[0]) if len(sources) == 1 else None
    if table is not None:
        return archive_source(spark, table, schema_dir)
    if len(sources) == 1 and sources[0].startswith("simulated"):
        count = int(sources[0].partition(":")[2] or 10_000)
        return messages_source(spark, sources[0], _simulated(count, version), schema_dir)
    missing = [s for s in sources if not Path(s).exists()]
    if not missing:
        by_survey = survey_inputs(sources)
        inputs = by_survey.get(survey) or next(iter(by_survey.values()))
        return _inputs_source(spark, inputs, ",".join(sources), schema_dir)
    if len(sources) > 1:
        raise FilterError(
            f"{missing[0]!r} does not exist: several inputs must all be files or folders"
        )
    (source,) = sources  # a topic
    if not bootstrap:
        raise FilterError(
            f"{source!r} is neither a file nor a folder; to read a topic, give --bootstrap"
        )
    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
    )
    head = head_messages(bootstrap, [source])
    return AlertSource(
        raw, make_decoder(DecodeSettings(topic=source, schema_dir=schema_dir), head), head
    )


def load_sources(
    spark, source: str | list[str], bootstrap: str | None = None, schema_dir: str | None = None
) -> list[AlertSource]:
    """As ``load_alerts``, but files of several surveys give one source a survey."""
    sources = [source] if isinstance(source, str) else list(source)
    files = all(Path(s).exists() for s in sources) and _matches_table(sources[0]) is None
    if not files:
        return [load_alerts(spark, sources, bootstrap, schema_dir)]
    return survey_sources(spark, sources, schema_dir)


def _matches_table(source: str) -> str | None:
    """The archive's matches table that ``source`` names, if it names one."""
    if source.startswith("delta:"):
        return source.removeprefix("delta:")
    for table in (Path(source), Path(source) / "matches"):
        if (table / "_delta_log").is_dir():
            return str(table)
    return None


def archive_source(spark, table: str, schema_dir: str | None = None) -> AlertSource:
    """The matches a job archived in Delta, as the messages they arrived as: any filter's fields
    decode from them exactly as in the stream (the table's own columns hold only the fields the
    job's filters read). ``schema_dir``: the job's, for simulated alerts' local schema ids."""
    from pyspark.sql import functions as F

    frame = spark.read.format("delta").load(table)
    if "message" not in frame.columns:
        raise FilterError(
            f"{table} keeps no messages (no column 'message'): it was archived with"
            " delta_messages: false, or before archives kept them; a backtest decodes the"
            " messages, so archive with delta_messages: true (the default)"
        )
    raw = frame.where(F.col("message").isNotNull()).select(
        "topic",
        "partition",
        "offset",
        F.col("kafka_timestamp").alias("timestamp"),
        F.col("alert_id").cast("binary").alias("key"),
        F.col("message").alias("value"),
    )
    head = [r.value for r in raw.limit(20).collect()]
    if not head:
        raise FilterError(f"{table} holds no archived messages: nothing to backtest")
    settings = DecodeSettings(topic=frame.select("topic").first()[0], schema_dir=schema_dir)
    return AlertSource(
        raw, make_decoder(settings, head, view_also=view_versions()), head, archived=True
    )


def as_topic(pairs, name: str):
    """(key, value) rows as the rows of a topic called ``name`` (one partition, in order)."""
    from pyspark.sql import functions as F

    return pairs.select(
        F.lit(name).alias("topic"),
        F.lit(0).alias("partition"),
        F.monotonically_increasing_id().alias("offset"),
        F.current_timestamp().alias("timestamp"),
        F.col("key").cast("binary").alias("key"),
        "value",
    )


def messages_source(
    spark, name: str, messages: list[tuple[str, bytes]], schema_dir: str | None = None
) -> AlertSource:
    """(key, message) pairs as if read from a topic called ``name``, with a decoder for the
    versions they carry into the job's whole view (filters name fields of every version)."""

    raw = as_topic(spark.createDataFrame(messages, "key string, value binary"), name)
    head = [m for _, m in messages]
    settings = DecodeSettings(
        topic=name, schema_dir=schema_dir, schema_versions=_rubin_versions_in(head)
    )
    return AlertSource(raw, make_decoder(settings, head, view_also=view_versions()), head[:20])


def records_source(spark, schema, records: list[dict]) -> AlertSource:
    """Alert records (dicts) of a Rubin ``schema``, framed as Rubin sends them."""
    from alertsieve.alerts.replay import alert_key

    return messages_source(
        spark, "records", [(alert_key(r), schema.encode_framed(r)) for r in records]
    )


def _rubin_versions_in(messages: list[bytes]) -> tuple[str, ...] | None:
    """The Rubin versions among framed messages (None when none is): a decoder for just those."""
    from alertsieve.alerts.schemas import (
        SchemaError,
        WireFormatError,
        load_rubin_schema,
        rubin_version_of,
        unframe,
    )

    found = set()
    for m in messages:
        try:
            found.add(unframe(m)[0])
        except WireFormatError:
            continue
    versions = set()
    for i in (i for i in found if i < LOCAL_ID_BASE):
        try:
            versions.add(rubin_version_of(load_rubin_schema(i).definition))
        except SchemaError:  # no such version: its messages are quarantined, "unknown schema id"
            continue
    return tuple(sorted(versions, key=version_order)) or None
