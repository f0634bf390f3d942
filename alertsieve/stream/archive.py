"""The archive: its own streaming query, on its own clock, from the filters' topics to Delta.

It reads what the hot path published (every filter's topic and the quarantine topic, with their
headers) and keeps two Delta tables:
- ``matches``: one row per alert, with the ``filters`` it passed and their ``filter_versions``
  ({name, version}), the ``fields`` records of the filters that publish fields ({filter: JSON}),
  where it came from, the fields the filters read, the detection, the alert's scalars, the
  cutouts the filters ask for and the message as it arrived (``delta_messages``: a backtest
  decodes it for any filter's fields). An alert only fields filters passed has its fields and
  versions but no alert columns: the archive keeps what was published;
- ``quarantine``: one row per message that could not be decoded, its bytes and the reason.

Exactly once, whatever the hot path or this query replays: rows are MERGEd on where the alert
came from (source topic, partition, offset), so a message published twice (Kafka is at least
once) or a batch run again after a crash changes nothing, and a filter's match that arrives in a
later batch than another filter's adds its name to the same row. The hot path never waits for it.
"""

from __future__ import annotations

import json
from pathlib import Path

from alertsieve.publish import contract
from alertsieve.stream.archive_upkeep import Upkeep
from alertsieve.stream.checkpoint import clear_interrupted_writes
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.sinks import kafka_options
from alertsieve.stream.source import source_columns
from alertsieve.view.decoder import META

KEY = ("topic", "partition", "offset")  # where an alert came from: its identity in the archive
#: The format of a shared record's fields entry: its filter's fields alone, as JSON (the
#: envelope is the row's own columns).
SHARED_FIELDS = "shared"


def archive_topics(plan: JobPlan, cfg: JobConfig) -> list[str]:
    return list(dict.fromkeys(cfg.topic_of(f) for f in plan.filters)) + [cfg.quarantine_topic]


def _header(name: str):
    """A header of the hot path's records, as a string."""
    from pyspark.sql import functions as F

    return F.get(F.filter(F.col("headers"), lambda h: h["key"] == F.lit(name)), 0)["value"].cast(
        "string"
    )


def source_rows(published, quarantine_topic: str):
    """The published records as the input rows they were (META columns), with the filter that
    published each (null for the quarantine) and the quarantine reason."""
    from pyspark.sql import functions as F

    millis = _header(contract.KAFKA_TIMESTAMP_MS).cast("long")
    # A shared record (``delivery: shared``) is a row per filter it names, each with its
    # fields (JSON text) when it publishes fields; any other record is its one filter's.
    listed = F.from_json(
        _header(contract.SHARED_FILTERS),
        f"array<struct<{contract.FILTER}: string, {contract.FILTER_VERSION}: string,"
        f" {contract.FIELDS}: string>>",
    )
    own = F.struct(
        _header(contract.FILTER).alias(contract.FILTER),
        _header(contract.FILTER_VERSION).alias(contract.FILTER_VERSION),
        F.lit(None).cast("string").alias(contract.FIELDS),
    )
    entry = F.col("_entry")
    # alert, avro, json, or SHARED_FIELDS (a shared record's entry)
    form = F.coalesce(_header(contract.FORMAT), F.lit(contract.PAYLOAD_ALERT))
    return published.select(
        "*", F.explode(F.coalesce(listed, F.array(own))).alias("_entry")
    ).select(
        _header(contract.SOURCE_TOPIC).alias("_topic"),
        _header(contract.SOURCE_PARTITION).cast("int").alias("_partition"),
        _header(contract.SOURCE_OFFSET).cast("long").alias("_offset"),
        F.when(millis.isNotNull(), F.timestamp_millis(millis)).alias("_timestamp"),
        F.col("key").alias("_key"),
        F.col("value").alias("_value"),
        F.when(F.col("topic") != quarantine_topic, entry[contract.FILTER]).alias(contract.FILTER),
        entry[contract.FILTER_VERSION].alias(contract.FILTER_VERSION),
        F.when(entry[contract.FIELDS].isNotNull(), F.lit(SHARED_FIELDS))
        .when(listed.isNotNull(), F.lit(contract.PAYLOAD_ALERT))
        .otherwise(form)
        .alias(contract.FORMAT),
        entry[contract.FIELDS].alias("_shared_fields"),
        _header(contract.REASON).alias(contract.REASON),
    )


def matches_table(rows, plan: JobPlan, cfg: JobConfig, batch_id: int):
    """One row per alert of ``rows`` (published matches): its filters, where it came from, and
    its archived fields, decoded from the original bytes (only the versions the rows carry)."""
    from pyspark.sql import functions as F

    is_alert = F.col(contract.FORMAT) == contract.PAYLOAD_ALERT
    fields = F.when(
        ~is_alert, F.struct(F.col(contract.FILTER).alias("key"), fields_json(plan).alias("value"))
    )
    per_alert = (
        rows.where(F.col(contract.FILTER).isNotNull())
        .groupBy("_topic", "_partition", "_offset")
        .agg(
            F.array_sort(F.collect_set(contract.FILTER)).alias("filters"),
            F.array_sort(
                F.collect_set(
                    F.struct(
                        F.col(contract.FILTER).alias("name"),
                        F.col(contract.FILTER_VERSION).alias("version"),
                    )
                )
            ).alias("filter_versions"),
            F.map_from_entries(F.collect_list(fields)).alias("fields"),
            F.first("_timestamp").alias("_timestamp"),
            F.first("_key").alias("_key"),
            F.first(F.when(is_alert, F.col("_value")), ignorenulls=True).alias(
                "_value"
            ),  # an alert's own bytes
        )
    )
    kept_columns = ("filters", "filter_versions", "fields")
    kafka_like = per_alert.select(*[F.col(m).alias(src) for m, src in META.items()], *kept_columns)
    decoded = plan.decoder.decode(kafka_like, plan.archive_paths, keep=kept_columns)
    alert = F.col("alert")
    kept = archived_cutouts(plan)
    if kept and not cfg.delta_cutouts:
        wanting = [f.name for f in plan.filters if f.cutouts]
        wants = (
            F.arrays_overlap(F.col("filters"), F.array(*[F.lit(n) for n in wanting]))
            if wanting
            else F.lit(False)
        )
        for c in kept:
            alert = alert.withField(c, F.when(wants, F.col(f"alert.{c}")))
    return (
        decoded.select(
            "filters",
            "filter_versions",
            "fields",
            F.col("_key").cast("string").alias("alert_id"),
            *source_columns(),
            F.col("_schema_id").alias("schema_id"),
            F.lit(batch_id).alias("batch_id"),
            F.current_timestamp().alias("processed_at"),
            alert.alias("alert"),
            *([F.col("_value").alias("message")] if cfg.delta_messages else []),
        )
        .select("*", "alert.*")
        .drop("alert")
    )


def fields_json(plan: JobPlan):
    """A published fields record as JSON text (an Avro one decoded with its filter's schema)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    text = F.when(
        F.col(contract.FORMAT) == contract.FORMAT_JSON, F.col("_value").cast("string")
    ).when(F.col(contract.FORMAT) == SHARED_FIELDS, F.col("_shared_fields"))
    for name, payload in plan.payloads.items():
        if payload.avro_schema is not None:
            body = F.expr("substring(_value, 6)")  # after the Confluent header
            record = from_avro(body, json.dumps(payload.avro_schema))
            json_text = F.to_json(record, {"ignoreNullFields": "false"})
            is_avro = F.col(contract.FORMAT) == contract.FORMAT_AVRO
            text = text.when(is_avro & (F.col(contract.FILTER) == name), json_text)
    return text


def archived_cutouts(plan: JobPlan) -> list[str]:
    """The cutout columns of the matches table (kept for the filters that ask for them)."""
    return sorted({p.split(".")[0] for p in plan.archive_paths} & set(plan.decoder.cutouts))


def quarantine_table(rows, plan: JobPlan, batch_id: int):
    """One row per quarantined message: its bytes, the schema id it named (Rubin) and why."""
    from pyspark.sql import functions as F

    bad = rows.where(F.col(contract.REASON).isNotNull()).dropDuplicates(
        ["_topic", "_partition", "_offset"]
    )
    kafka_like = bad.select(*[F.col(m).alias(src) for m, src in META.items()], contract.REASON)
    named = plan.decoder.decode(kafka_like, [], keep=(contract.REASON,))  # for the schema id only
    return named.select(
        *source_columns(),
        F.col("_key").alias("key"),
        F.col("_value").alias("value"),
        F.col("_schema_id").alias("schema_id"),
        F.col(contract.REASON),
        F.lit(batch_id).alias("batch_id"),
        F.current_timestamp().alias("quarantined_at"),
    )


def _columns(spark, path: str) -> list[str]:
    """The columns of the Delta table at ``path`` (none if there is no table yet)."""
    from delta.tables import DeltaTable

    return (
        DeltaTable.forPath(spark, path).toDF().columns
        if DeltaTable.isDeltaTable(spark, path)
        else []
    )


def merge_once(rows, path: str, on_update: dict[str, str] | None = None) -> None:
    """Insert the rows whose (topic, partition, offset) the table lacks; ``on_update``: columns
    to set where it has them (SQL over ``t``, the table, and ``s``, the rows)."""
    from delta.tables import DeltaTable

    spark = rows.sparkSession
    if not DeltaTable.isDeltaTable(spark, path):
        rows.coalesce(1).write.format("delta").mode("append").save(path)
        return
    condition = " AND ".join(f"t.`{k}` = s.`{k}`" for k in KEY)
    merge = DeltaTable.forPath(spark, path).alias("t").merge(rows.alias("s"), condition)
    if on_update:
        merge = merge.whenMatchedUpdate(set=on_update)
    merge.whenNotMatchedInsertAll().execute()


class Archive:
    """The archive query of one job's outputs."""

    def __init__(self, spark, cfg: JobConfig, plan: JobPlan, topics: list[str] | None = None):
        """``topics``: what to read (default: the plan's outputs); a redeployed job adds the
        topics of filters it no longer runs, which its checkpoint still holds offsets of."""
        self.spark, self.cfg, self.plan = spark, cfg, plan
        self.topics = topics or archive_topics(plan, cfg)
        # A job whose filters changed archives more (or fewer) fields: new columns join the table.
        spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
        # Every batch's MERGE writes a few small files (thousands by morning): after a commit that
        # leaves enough of them, Delta compacts them into one (the replaced files stay on disk for
        # time travel until the upkeep's VACUUM: alertsieve.stream.archive_upkeep).
        spark.conf.set("spark.databricks.delta.autoCompact.enabled", "true")
        self.upkeep = Upkeep(
            spark, cfg.delta_path, cfg.delta_upkeep_seconds, cfg.delta_retention_hours
        )

    def process_batch(self, published, batch_id: int) -> None:
        rows = source_rows(published, self.cfg.quarantine_topic).persist()
        try:
            root = Path(self.cfg.delta_path)
            # A later filter's match of an alert already archived adds its name, version and
            # fields, and fills what the row lacks: the cutouts if it is the first of the alert's
            # filters to want them, the alert itself if the earlier ones published fields only.
            matches = matches_table(rows, self.plan, self.cfg, batch_id)
            path = str(root / "matches")
            # a redeployed job's filters may read fields the table lacks yet: those join it
            have = set(_columns(self.spark, path))
            update = {
                f"`{c}`": f"coalesce(t.`{c}`, s.`{c}`)" if c in have else f"s.`{c}`"
                for c in matches.columns
                if c not in KEY
            }
            merged = {
                "filters": "array_sort(array_union(t.filters, s.filters))",
                "filter_versions": "array_sort(array_union(coalesce(t.filter_versions, array()), s.filter_versions))",
                "fields": "map_concat(s.fields, map_filter(coalesce(t.fields, map()),"
                " (k, v) -> NOT array_contains(map_keys(s.fields), k)))",
                "batch_id": "t.batch_id",
                "processed_at": "t.processed_at",
            }
            update |= {
                f"`{c}`": sql for c, sql in merged.items() if c in have
            }  # an older table lacks some
            merge_once(matches, path, update)
            bad = quarantine_table(rows, self.plan, batch_id)
            if not bad.isEmpty():
                merge_once(bad, str(root / "quarantine"))
        finally:
            rows.unpersist()
        if self.upkeep.due():
            self.upkeep.run()

    def start(self, available_now: bool = False):
        options = kafka_options(self.cfg.bootstrap, self.cfg.kafka_conf)
        options.update(
            subscribe=",".join(self.topics),
            startingOffsets="earliest",
            includeHeaders="true",
            failOnDataLoss="true",
        )
        options.setdefault("kafka.max.partition.fetch.bytes", str(16 * 1024 * 1024))
        if self.cfg.max_offsets_per_trigger:
            options["maxOffsetsPerTrigger"] = str(self.cfg.max_offsets_per_trigger)
        clear_interrupted_writes(self.spark, self.cfg.archive_checkpoint)
        raw = self.spark.readStream.format("kafka").options(**options).load()
        writer = (
            raw.writeStream.foreachBatch(self.process_batch)
            .option("checkpointLocation", self.cfg.archive_checkpoint)
            .queryName("alertsieve_archive")
        )
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{self.cfg.archive_trigger_seconds} seconds")
        return writer.start()
