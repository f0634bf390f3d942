"""The hot path: ONE stateless streaming query from the input topic to the filters' topics.

Kafka source -> decode into the filter view (only the fields the filters read) -> every filter as a
boolean column -> one row per (alert, matching filter), plus one per quarantined message -> Spark's
native Kafka sink, whose per-row ``topic`` column fans out to every filter's topic in one write.
No foreachBatch, cache or collect: nothing waits for the driver, so the same plan runs in
micro-batches or in Real-Time Mode (milliseconds from input append to output append).

What the job reports per batch is counted on the way by ``observe()`` (``alertsieve.stream.metrics``);
the Delta archive is its own query reading these topics (``alertsieve.stream.archive``).
"""

from __future__ import annotations

from alertsieve.filtering.model import PythonFilter
from alertsieve.stream.config import JobConfig
from alertsieve.stream.decode import META, flat_alert
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.sinks import headers, kafka_options

#: The name of the ``observe()`` metrics of each batch (``alertsieve.stream.metrics``).
OBSERVED = "alertsieve"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the largest alert forwarded (the embedded brokers' limit)


def flag(i: int) -> str:
    return f"_m{i}"


def error(i: int) -> str:
    return f"_e{i}"


def evaluated(raw, plan: JobPlan):
    """Kafka rows -> META, ``_schema_id``, ``_reason``, ``_alert_id``, a match flag per filter
    (``_m0``...; false for a quarantined message) and an error column per Python filter (``_e0``...)."""
    from pyspark.sql import functions as F

    decoded = plan.decoder.decode(raw, plan.paths)
    flat = decoded.select(*META, "_schema_id", "_reason", *flat_alert(decoded))
    ok = F.col("_reason").isNull()
    columns = []
    for i, f in enumerate(plan.filters):
        match, err = f.evaluate()
        columns.append((F.coalesce(match, F.lit(False)) & ok).alias(flag(i)))
        if err is not None:
            columns.append(err.alias(error(i)))
    alert_id = F.col(plan.decoder.id_path).cast("string")
    return flat.select(*META, "_schema_id", "_reason", alert_id.alias("_alert_id"), *columns)


def observed_metrics(plan: JobPlan) -> list:
    """What each batch reports, counted by Spark as the rows pass (no second pass, no collect):
    rows in, quarantined, matches per filter, the first error of each Python filter, and Kafka
    append times (for the latency of the batch)."""
    from pyspark.sql import functions as F

    ts = F.unix_micros(F.col("_timestamp")) / 1e6
    out = [
        F.count(F.lit(1)).alias("input_rows"),
        F.sum(F.col("_reason").isNotNull().cast("long")).alias("quarantined_rows"),
        F.min(ts).alias("ts_min"),
        F.percentile_approx(ts, [0.01, 0.05, 0.5], 1000).alias("ts_quantiles"),
    ]
    for i, f in enumerate(plan.filters):
        out.append(F.sum(F.col(flag(i)).cast("long")).alias(flag(i)))
        if isinstance(f, PythonFilter):
            out.append(F.first(F.col(error(i)), ignorenulls=True).alias(error(i)))
    return out


def output_rows(flags, plan: JobPlan, cfg: JobConfig):
    """One Kafka record per (alert, matching filter) and per quarantined message: the original
    bytes, keyed by the alert id (a quarantined message keeps its own key), with headers saying
    which filter and where the alert came from (or why it was quarantined)."""
    from pyspark.sql import functions as F

    targets = [
        F.when(F.col(flag(i)), F.struct(F.lit(f.output_topic(cfg.output_prefix)).alias("topic"),
                                        F.lit(f.name).alias("filter")))
        for i, f in enumerate(plan.filters)
    ]  # fmt: skip
    quarantine = F.struct(F.lit(cfg.quarantine_topic).alias("topic"), F.lit(None).cast("string").alias("filter"))
    targets.append(F.when(F.col("_reason").isNotNull(), quarantine))
    rows = flags.select(
        F.explode(F.filter(F.array(*targets), lambda t: t.isNotNull())).alias("_out"), *META, "_reason", "_alert_id"
    )  # fmt: skip
    source = {"source_topic": F.col("_topic"), "source_partition": F.col("_partition"),
              "source_offset": F.col("_offset"), "kafka_timestamp_ms": F.unix_millis(F.col("_timestamp"))}  # fmt: skip
    quarantined = F.col("_reason").isNotNull()
    return rows.select(
        F.when(quarantined, F.col("_key")).otherwise(F.col("_alert_id").cast("binary")).alias("key"),
        F.coalesce(F.col("_value"), F.lit(b"")).alias("value"),
        F.col("_out.topic").alias("topic"),
        F.when(quarantined, headers(reason=F.col("_reason"), **source))
        .otherwise(headers(filter=F.col("_out.filter"), **source,
                           processed_at_ms=F.unix_millis(F.current_timestamp())))
        .alias("headers"),
    )  # fmt: skip


def sink_options(cfg: JobConfig) -> dict[str, str]:
    """The Kafka sink's producer, made for ~100 KB records: requests as large as the topics allow
    (the Java producer's 1 MB default fails a whole batch on one large alert), batches of a few
    alerts, and a linger short enough for Real-Time Mode."""
    opts = kafka_options(cfg.bootstrap, cfg.kafka_conf)
    opts.setdefault("kafka.max.request.size", str(MAX_MESSAGE_BYTES))
    opts.setdefault("kafka.batch.size", str(1024 * 1024))
    opts.setdefault("kafka.linger.ms", "0" if cfg.realtime else "5")
    opts.setdefault("kafka.buffer.memory", str(256 * 1024 * 1024))
    return opts


def hot_path(raw, plan: JobPlan, cfg: JobConfig):
    """The streaming frame the Kafka sink writes, with its metrics observed."""
    flags = evaluated(raw, plan).observe(OBSERVED, *observed_metrics(plan))
    return output_rows(flags, plan, cfg)
