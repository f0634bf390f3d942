"""A batch's outputs: each match forwarded to its filter's topic and archived in Delta once,
what could not be decoded to the quarantine topic and table.

Everything here reads the batch's narrow cached frame (``_value`` holds bytes only for matched
and quarantined alerts; ``_m*`` columns are the filters' flags)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from alertsieve.filtering.model import Filter
from alertsieve.kafka.topics import create_topic
from alertsieve.stream.config import JobConfig
from alertsieve.stream.decode import META
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.sinks import headers, kafka_options, write_delta_once, write_kafka
from alertsieve.stream.source import source_columns

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the largest alert forwarded (the embedded brokers' limit)

Phase = Callable[[str], AbstractContextManager]


def create_outputs(cfg: JobConfig, filters: list[Filter]) -> None:
    """A topic per filter and the quarantine topic, made before the first batch."""
    if "kafka" not in cfg.sinks:
        return
    for topic in [f.output_topic(cfg.output_prefix) for f in filters] + [cfg.quarantine_topic]:
        create_topic(cfg.bootstrap, topic, cfg.output_partitions,
                     config={"max.message.bytes": str(MAX_MESSAGE_BYTES)}, extra=cfg.kafka_conf)  # fmt: skip


def sink_options(cfg: JobConfig) -> dict[str, str]:
    """The Java producer's 1 MB default request would fail the whole batch on one large
    alert (they reach 10 MB): allow what the outputs' topics allow."""
    opts = kafka_options(cfg.bootstrap, cfg.kafka_conf)
    opts.setdefault("kafka.max.request.size", str(MAX_MESSAGE_BYTES))
    return opts


def write_matches(narrow, live: list[tuple[Filter, str]], cfg: JobConfig, plan: JobPlan,
                  batch_id: int, phase: Phase, writers: frozenset | None = None) -> float | None:  # fmt: skip
    """Publish the matches of the filters in ``live`` (each with its flag column); returns when
    the Kafka fan-out finished (None without a Kafka sink). ``writers``: the writer keys among
    the batch's decoded alerts, when known."""
    from pyspark.sql import functions as F

    published_at = None
    flag_names = [n for _, n in live]
    names = F.array(*[F.when(F.col(n), F.lit(f.name)) for f, n in live])
    matched = narrow.where(F.array_contains(F.array(*[F.col(n) for n in flag_names]), True))
    matched_filters = F.filter(names, lambda x: x.isNotNull())
    # Kafka forwards the cached bytes as they are: no decoding at all.
    long = matched.select(
        F.explode(matched_filters).alias("filter"), F.col("_alert_id").alias("alert_id"), *META
    )
    if "kafka" in cfg.sinks:
        topic = F.lit(None).cast("string")
        for f, _ in live:
            topic = F.when(
                F.col("filter") == f.name, F.lit(f.output_topic(cfg.output_prefix))
            ).otherwise(topic)
        with phase("kafka_out"):
            write_kafka(
                long.select(
                    F.col("alert_id").alias("key"),
                    F.col("_value").alias("value"),
                    topic.alias("topic"),
                    headers(
                        filter=F.col("filter"),
                        source_topic=F.col("_topic"),
                        source_partition=F.col("_partition"),
                        source_offset=F.col("_offset"),
                        kafka_timestamp_ms=F.unix_millis(F.col("_timestamp")),
                        processed_at_ms=F.unix_millis(F.current_timestamp()),
                    ).alias("headers"),
                ),
                sink_options(cfg),
            )
        published_at = time.time()
    if "delta" in cfg.sinks:
        # One row per matched alert, with the filters it passed: an alert is stored once
        # however many filters want it. Only these few percent are decoded a second time.
        raw_again = matched.select(
            *[F.col(m).alias(src) for m, src in META.items()], "_alert_id", *flag_names
        )
        decoded = plan.decoder.decode(raw_again, plan.archive_paths, keep=("_alert_id", *flag_names), only=writers)
        alert = F.col("alert")
        kept = {p.split(".")[0] for p in plan.archive_paths} & set(plan.decoder.cutouts)
        if kept and not cfg.delta_cutouts:
            wants = F.lit(False)
            for f, n in live:
                if f.cutouts:
                    wants = wants | F.col(n)
            for c in sorted(kept):
                alert = alert.withField(c, F.when(wants, F.col(f"alert.{c}")))
        table = (
            decoded.select(
                matched_filters.alias("filters"),
                F.col("_alert_id").alias("alert_id"),
                *source_columns(),
                F.col("_schema_id").alias("schema_id"),
                F.lit(batch_id).alias("batch_id"),
                F.current_timestamp().alias("processed_at"),
                alert.alias("alert"),
            )
            .select("*", "alert.*")
            .drop("alert")
        )
        with phase("delta_out"):
            write_delta_once(table, str(Path(cfg.delta_path) / "matches"), cfg.app_id, batch_id)
    return published_at


def write_quarantine(narrow, cfg: JobConfig, batch_id: int) -> None:
    """Every undecodable message of the batch, with its reason, to the quarantine table and topic."""
    from pyspark.sql import functions as F

    bad = narrow.where(F.col("_reason").isNotNull())
    if "delta" in cfg.sinks:
        write_delta_once(
            bad.select(
                *source_columns(),
                F.col("_key").alias("key"),
                F.col("_value").alias("value"),
                F.col("_schema_id").alias("schema_id"),
                F.col("_reason").alias("reason"),
                F.lit(batch_id).alias("batch_id"),
                F.current_timestamp().alias("quarantined_at"),
            ),
            str(Path(cfg.delta_path) / "quarantine"),
            cfg.app_id,
            batch_id,
        )
    if "kafka" in cfg.sinks:
        write_kafka(
            bad.select(
                F.col("_key").alias("key"),
                F.coalesce(F.col("_value"), F.lit(b"")).alias("value"),
                F.lit(cfg.quarantine_topic).alias("topic"),
                headers(
                    reason=F.col("_reason"),
                    source_topic=F.col("_topic"),
                    source_partition=F.col("_partition"),
                    source_offset=F.col("_offset"),
                ).alias("headers"),
            ),
            sink_options(cfg),
        )
