"""`alertsieve backtest`: run filters over past or simulated alerts and say what they would send.

The input is a topic (read once, start to end), Avro container files (a replay), or
``simulated:N`` alerts; alerts are decoded exactly as the stream job decodes them. The report
gives matches, the match rate, the alerts a night that rate implies at Rubin's 10 million, and a
warning above a configurable rate: a filter passing 5% of the stream is rarely what its author
meant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from alertsieve.alerts.schemas import CUTOUTS, load_rubin_schema, open_store, without_fields
from alertsieve.filtering.checks import validate
from alertsieve.filtering.model import Filter, FilterError
from alertsieve.stream.decode import decode, decoded_records, make_plan

ALERTS_PER_NIGHT = 10_000_000


@dataclass
class BacktestRow:
    name: str
    matches: int
    alerts: int
    errors: int
    first_error: str | None

    @property
    def rate(self) -> float:
        return self.matches / self.alerts if self.alerts else 0.0

    @property
    def per_night(self) -> int:
        return round(self.rate * ALERTS_PER_NIGHT)


def _alerts_from_files(spark, paths: list[str], reader):
    from pyspark.sql.avro.functions import from_avro

    from alertsieve.alerts.replay import avro_files, read_raw_records

    slim = json.dumps(without_fields(reader, CUTOUTS).definition)
    frames = []
    by_schema: dict[str, list[tuple[bytes]]] = {}
    for path in avro_files(paths):
        for raw in read_raw_records(path):
            by_schema.setdefault(json.dumps(raw.writer_schema), []).append((raw.body,))
    for writer_json, rows in by_schema.items():
        df = spark.createDataFrame(rows, "value binary")
        frames.append(
            df.select(from_avro("value", writer_json, {"avroSchema": slim}).alias("a")).select(
                "a.*"
            )
        )
    if not frames:
        raise FilterError(f"no alerts in {paths}")
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _alerts_from_topic(spark, bootstrap: str, topic: str, reader, schema_dir: str | None):
    store = open_store(None, schema_dir)
    plan = make_plan(without_fields(reader, CUTOUTS), store.candidates(f"{topic}-value"))
    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    return decode(raw, plan).where("_reason IS NULL").select("alert.*")


def load_alerts(
    spark,
    source: str,
    bootstrap: str | None = None,
    schema_dir: str | None = None,
    reader_version: str | None = None,
):
    """A DataFrame of decoded alerts (the reader schema, without cutouts) from ``source``."""
    reader = load_rubin_schema(reader_version)
    if source.startswith("simulated"):
        from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

        count = int(source.partition(":")[2] or 10_000)
        sim = AlertSimulator(SimulationConfig(schema_version=reader_version, stamp_size=0, seed=11))
        per_visit = 10_000
        records = [
            a
            for v in range(-(-count // per_visit))
            for a in sim.visit_alerts(v, count=min(per_visit, count - v * per_visit))
        ]
        return decoded_records(spark, reader, records, CUTOUTS)
    if Path(source).exists():
        return _alerts_from_files(spark, [source], reader)
    if not bootstrap:
        raise FilterError(
            f"{source!r} is neither a file nor a folder; to read a topic, give --bootstrap"
        )
    return _alerts_from_topic(spark, bootstrap, source, reader, schema_dir)


def backtest(spark, filters: list[Filter], alerts) -> list[BacktestRow]:
    """Every filter over the same alerts, in one pass."""
    from pyspark.sql import functions as F

    validate(filters, alerts.limit(64))
    columns = [F.count(F.lit(1)).alias("n")]
    for i, f in enumerate(filters):
        match, error = f.evaluate()
        columns.append(F.sum(F.coalesce(match, F.lit(False)).cast("int")).alias(f"m{i}"))
        if error is not None:
            columns += [
                F.count(error).alias(f"e{i}"),
                F.first(error, ignorenulls=True).alias(f"x{i}"),
            ]
    row = alerts.agg(*columns).collect()[0].asDict()
    return [
        BacktestRow(
            f.name,
            int(row[f"m{i}"] or 0),
            int(row["n"]),
            int(row.get(f"e{i}") or 0),
            row.get(f"x{i}"),
        )
        for i, f in enumerate(filters)
    ]


def report(rows: list[BacktestRow], max_rate: float) -> tuple[str, bool]:
    """A readable table and whether every filter stayed under ``max_rate`` without errors."""
    lines = [f"{'filter':<24} {'matches':>8} {'alerts':>8} {'rate':>8} {'per night':>10}"]
    ok = True
    for r in rows:
        flag = ""
        if r.errors:
            flag, ok = f"  ERROR in {r.errors} batch(es): {r.first_error}", False
        elif r.rate > max_rate:
            flag, ok = f"  WARNING: above {max_rate:.1%}", False
        lines.append(
            f"{r.name:<24} {r.matches:>8} {r.alerts:>8} {r.rate:>8.2%} {r.per_night:>10,}{flag}"
        )
    return "\n".join(lines), ok
