"""What decoding and filtering cost on top of Spark's own read: the same topic read three ways into
Spark's ``noop`` sink (which writes nothing), so that only reading, decoding and filtering are
compared: the bytes alone; the job's decode into the filter view plus its SQL filters; and the
whole alert decoded (every field but the cutouts, as a reader schema did before the view)."""

from __future__ import annotations

import tempfile
import time

from alertsieve.errors import AlertsieveError
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import AlertFilter
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import plan_job
from alertsieve.stream.source import source_options
from alertsieve.view.decoder import view_paths


def _noop_seconds(frame, checkpoint: str) -> tuple[float, float]:
    """(batch seconds, wall seconds) of one available-now query of ``frame`` into the noop sink.
    Batch seconds sum Spark's own trigger times (planning, reading, decoding, filtering) over
    the batches that read alerts; wall adds the query's start and stop, the same for every way."""
    start = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    wall = time.perf_counter() - start
    if query.exception():
        raise AlertsieveError(f"noop query failed: {query.exception()}")
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    return sum(p["durationMs"]["triggerExecution"] for p in batches) / 1e3, wall


def bytes_only_rate(spark, cfg: JobConfig, alerts: int) -> dict:
    """Spark reading the topic's bytes into the noop sink, nothing else: the ceiling of any
    Spark job on this topic."""
    raw = (
        spark.readStream.format("kafka")
        .options(**source_options(cfg))
        .load()
        .select("key", "value")
    )
    with tempfile.TemporaryDirectory(prefix="alertsieve-noop-") as checkpoint:
        seconds, wall = _noop_seconds(raw, checkpoint)
    return {
        "alerts": alerts,
        "seconds": round(seconds, 2),
        "alerts_per_s": round(alerts / seconds, 1),
        "wall_seconds": round(wall, 2),
    }


def decode_over_bytes(
    spark,
    bootstrap: str,
    topic: str,
    schema_dir: str,
    filters: list[AlertFilter],
    alerts: int,
    batch: int = 20_000,
    repeats: int = 3,
) -> dict:
    """Alerts/s of each way (over Spark's batch time; wall rates beside), the best of
    ``repeats`` runs taken in turn (warm JVM, same cache state for each), and their ratios to
    the bytes-only read."""
    from pyspark.sql import functions as F

    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic,
        code_filters=filters,
        discover_filters=False,
        max_offsets_per_trigger=batch,
        schema_dir=schema_dir,
        metrics_path=None,
        survey="rubin",
    )
    plan = plan_job(spark, cfg)

    def raw():
        return spark.readStream.format("kafka").options(**source_options(cfg)).load()

    def filtered(paths: list[str]):
        decoded = plan.decoder.decode(raw(), paths)
        alert = filter_view(decoded, ("_reason",))
        ok = F.col("_reason").isNull()
        return alert.select("_reason", *[(f.evaluate()[0] & ok).alias(f.name) for f in filters])

    ways = {
        "bytes_only": lambda: raw().select("key", "value"),
        "decode_view_and_filters": lambda: filtered(plan.paths),
        "decode_everything_and_filters": lambda: filtered(
            view_paths(plan.decoder, with_cutouts=False)
        ),
    }
    best = {name: (float("inf"), float("inf")) for name in ways}
    with tempfile.TemporaryDirectory(prefix="alertsieve-noop-") as folder:
        for r in range(repeats):
            for name, frame in ways.items():
                best[name] = min(best[name], _noop_seconds(frame(), f"{folder}/{name}-{r}"))
    rates = {name: round(alerts / s, 1) for name, (s, _) in best.items()}
    wall_rates = {name: round(alerts / w, 1) for name, (_, w) in best.items()}
    return {
        "sink": "noop",
        "alerts": alerts,
        "filters": len(filters),
        "fields_decoded": {
            "view": len(plan.paths),
            "everything": len(view_paths(plan.decoder, with_cutouts=False)),
        },
        "best_of": repeats,
        "batch_seconds": {name: round(s, 2) for name, (s, _) in best.items()},
        "wall_seconds": {name: round(w, 2) for name, (_, w) in best.items()},
        "alerts_per_s": rates,
        "alerts_per_s_wall": wall_rates,
        "ratio_view_and_filters_over_bytes_only": round(
            rates["decode_view_and_filters"] / rates["bytes_only"], 3
        ),
        "ratio_everything_and_filters_over_bytes_only": round(
            rates["decode_everything_and_filters"] / rates["bytes_only"], 3
        ),
    }
