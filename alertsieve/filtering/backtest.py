"""`alertsieve backtest`: run filters over past or simulated alerts and say what they would send.

The input is a topic (read once, start to end), Avro container files (a replay: Rubin or ZTF, as
``produce --replay`` would send them; the real corpus), ``simulated:N`` alerts, or a job's Delta
archive (the messages of its matches, as they arrived); alerts are decoded exactly as the stream
job decodes them, reading only the fields the filters name, and can be limited to a range of
observing nights. The report gives matches, the match rate, the alerts a night that rate implies
at Rubin's 10 million, the matches of each night, and a warning above a configurable rate: a
filter passing 5% of the stream is rarely what its author meant.

An archive holds only what the job's filters matched, so a backtest over it answers "which of
those would this filter keep": its rate is of the archived alerts, and its alerts a night are the
archive's own counts, not an extrapolation to the stream.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from alertsieve.alerts.schemas import LOCAL_ID_BASE, open_store, view_versions
from alertsieve.alerts.view import version_order
from alertsieve.catalogs.context import load_context
from alertsieve.filtering.checks import validate
from alertsieve.filtering.model import Filter, FilterError
from alertsieve.kafka.topics import head_messages
from alertsieve.spark.session import driver_heap_mb
from alertsieve.stream.config import JobConfig
from alertsieve.stream.decode import Decoder, filter_view
from alertsieve.stream.plan import filter_paths, filter_reads, sample_alerts, view_paths
from alertsieve.stream.surveys import make_decoder

log = logging.getLogger(__name__)

#: Alerts a night each survey sends, for a rate's "per night": Rubin's ~10 million (design
#: brief; DMTN-102), ZTF's about a million (0.6-1.2 million routinely, Patterson et al. 2019,
#: PASP 131, 018001).
ALERTS_PER_NIGHT = {"rubin": 10_000_000, "ztf": 1_000_000}


@dataclass
class BacktestRow:
    name: str
    matches: int
    alerts: int
    errors: int
    first_error: str | None
    nights: dict[date, int] = field(default_factory=dict)  # observing night -> matches
    night_alerts: dict[date, int] = field(default_factory=dict)  # observing night -> alerts
    archived: bool = False  # the alerts are an archive's matches, not a sample of the stream
    alerts_per_night: int = ALERTS_PER_NIGHT["rubin"]  # the survey's whole stream a night

    @property
    def rate(self) -> float:
        return self.matches / self.alerts if self.alerts else 0.0

    @property
    def per_night(self) -> int:
        """Alerts a night: the rate at the survey's whole stream a night, or over an archive its
        mean a night."""
        if self.archived:
            return round(self.matches / len(self.night_alerts)) if self.night_alerts else 0
        return round(self.rate * self.alerts_per_night)


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


def _messages_from_files(paths: list[str], schema_dir: str | None) -> list[tuple[str, bytes]]:
    """(key, message) of every alert in the files, as its survey sends it (see produce --replay)."""
    from alertsieve.alerts.replay import (
        avro_files,
        read_raw_records,
        survey_of_schema,
        wire_message,
        writer_schema,
    )

    store = open_store(None, schema_dir)
    out = []
    for path in avro_files(paths):
        ztf = survey_of_schema(writer_schema(path), path) == "ztf"
        for raw in read_raw_records(path):
            schema_id = None if ztf else store.register(raw.writer_schema).schema_id
            out.append((raw.key, wire_message(raw, schema_id)))
    if not out:
        raise FilterError(f"no alerts in {paths}")
    return out


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


def load_alerts(spark, source: str | list[str], bootstrap: str | None = None, schema_dir: str | None = None,
                version: str | None = None) -> AlertSource:  # fmt: skip
    """``simulated:N`` alerts (of ``version``), Avro files or folders of them (Rubin or ZTF; a
    list of them is one input), a job's Delta archive (its ``delta_path``, its ``matches`` table,
    or ``delta:URI``), or a topic (with ``bootstrap``): ready to decode as the job decodes."""
    sources = [source] if isinstance(source, str) else list(source)
    table = _matches_table(sources[0]) if len(sources) == 1 else None
    if table is not None:
        return archive_source(spark, table, schema_dir)
    if len(sources) == 1 and sources[0].startswith("simulated"):
        count = int(sources[0].partition(":")[2] or 10_000)
        return messages_source(spark, sources[0], _simulated(count, version), schema_dir)
    missing = [s for s in sources if not Path(s).exists()]
    if not missing:
        return messages_source(spark, ",".join(sources), _messages_from_files(sources, schema_dir), schema_dir)
    if len(sources) > 1:
        raise FilterError(f"{missing[0]!r} does not exist: several inputs must all be Avro files or folders")
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
    return AlertSource(raw, make_decoder(JobConfig(topic=source, schema_dir=schema_dir), head), head)


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
        "topic", "partition", "offset", F.col("kafka_timestamp").alias("timestamp"),
        F.col("alert_id").cast("binary").alias("key"), F.col("message").alias("value"),
    )  # fmt: skip
    head = [r.value for r in raw.limit(20).collect()]
    if not head:
        raise FilterError(f"{table} holds no archived messages: nothing to backtest")
    cfg = JobConfig(topic=frame.select("topic").first()[0], schema_dir=schema_dir)
    return AlertSource(raw, make_decoder(cfg, head, view_also=view_versions()), head, archived=True)


def messages_source(spark, name: str, messages: list[tuple[str, bytes]],
                    schema_dir: str | None = None) -> AlertSource:  # fmt: skip
    """(key, message) pairs as if read from a topic called ``name``, with a decoder for the
    versions they carry into the job's whole view (filters name fields of every version)."""
    from pyspark.sql import functions as F

    raw = spark.createDataFrame(messages, "key string, value binary").select(
        F.lit(name).alias("topic"), F.lit(0).alias("partition"),
        F.monotonically_increasing_id().alias("offset"), F.current_timestamp().alias("timestamp"),
        F.col("key").cast("binary").alias("key"), "value",
    )  # fmt: skip
    head = [m for _, m in messages]
    cfg = JobConfig(topic=name, schema_dir=schema_dir, schema_versions=_rubin_versions_in(head))
    return AlertSource(raw, make_decoder(cfg, head, view_also=view_versions()), head[:20])


def records_source(spark, schema, records: list[dict]) -> AlertSource:
    """Alert records (dicts) of a Rubin ``schema``, framed as Rubin sends them."""
    from alertsieve.alerts.replay import alert_key

    return messages_source(spark, "records", [(alert_key(r), schema.encode_framed(r)) for r in records])


def _rubin_versions_in(messages: list[bytes]) -> list[str] | None:
    """The Rubin versions among framed messages (None when none is): a decoder for just those."""
    from alertsieve.alerts.schemas import (
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
    versions = {rubin_version_of(load_rubin_schema(i).definition) for i in found if i < LOCAL_ID_BASE}
    return sorted(versions, key=version_order) or None


def backtest(spark, filters: list[Filter], alerts: AlertSource, catalog_dir: str = "catalogs",
             since: date | None = None, until: date | None = None) -> list[BacktestRow]:  # fmt: skip
    """Every filter over the same alerts, in one pass, decoding only the fields they read, with
    the catalogs they name from ``catalog_dir``; only the observing nights from ``since`` to
    ``until`` (inclusive) when given."""
    from pyspark.sql import functions as F

    context = load_context(catalog_dir, filters, alerts.decoder.detection, driver_heap_mb(spark))
    validate(filters, sample_alerts(spark, alerts.decoder, alerts.head, context), alerts.decoder.view)
    paths = filter_paths(alerts.decoder, filter_reads(spark, alerts.decoder, filters, context))
    decoded = alerts.decoder.decode(alerts.raw, list(dict.fromkeys([*paths, alerts.decoder.observed])))
    ok = F.col("_reason").isNull()
    alert = filter_view(decoded, ("_reason",), context).withColumn("_night", F.expr(alerts.decoder.night_sql()))
    if since is not None:
        alert = alert.where(~ok | (F.col("_night") >= F.lit(since)))
    if until is not None:
        alert = alert.where(~ok | (F.col("_night") <= F.lit(until)))
    columns = [F.count(F.lit(1)).alias("n"), F.sum((~ok).cast("int")).alias("quarantined"),
               F.first("_reason", ignorenulls=True).alias("why")]  # fmt: skip
    for i, f in enumerate(filters):
        match, error = f.evaluate()
        columns.append(F.sum((F.coalesce(match, F.lit(False)) & ok).cast("int")).alias(f"m{i}"))
        if error is not None:
            columns += [
                F.count(error).alias(f"e{i}"),
                F.first(error, ignorenulls=True).alias(f"x{i}"),
            ]
    by_night = [r.asDict() for r in alert.groupBy("_night").agg(*columns).collect()]
    total = {c: sum(int(r[c] or 0) for r in by_night) for c in ("n", "quarantined")}
    if total["quarantined"]:
        why = next(r["why"] for r in by_night if r["why"])
        log.warning("%d of %d alerts could not be decoded (e.g. %s); rates are over the decoded ones",
                    total["quarantined"], total["n"], why)
    nights = {r["_night"]: int(r["n"]) - int(r["quarantined"] or 0) for r in by_night if r["_night"] is not None}
    return [
        BacktestRow(
            f.name,
            sum(int(r[f"m{i}"] or 0) for r in by_night),
            total["n"] - total["quarantined"],
            sum(int(r.get(f"e{i}") or 0) for r in by_night),
            next((r[f"x{i}"] for r in by_night if r.get(f"x{i}")), None),
            {r["_night"]: int(r[f"m{i}"] or 0) for r in by_night if r["_night"] is not None},
            nights,
            alerts.archived,
            ALERTS_PER_NIGHT[alerts.decoder.survey],
        )
        for i, f in enumerate(filters)
    ]


def report(rows: list[BacktestRow], max_rate: float) -> tuple[str, bool]:
    """A readable table and whether every filter stayed under ``max_rate`` without errors; then,
    over more than one observing night, each night's alerts and matches."""
    archived = any(r.archived for r in rows)
    lines = [f"{'filter':<24} {'matches':>8} {'alerts':>8} {'rate':>8} {'per night':>10}"]
    ok = True
    for r in rows:
        flag = ""
        if r.errors:
            flag, ok = f"  ERROR in {r.errors} batch(es): {r.first_error}", False
        elif (r.per_night > max_rate * r.alerts_per_night) if archived else (r.rate > max_rate):
            limit = f"{round(max_rate * r.alerts_per_night):,} a night" if archived else f"{max_rate:.1%}"
            flag, ok = f"  WARNING: above {limit}", False
        lines.append(
            f"{r.name:<24} {r.matches:>8} {r.alerts:>8} {_percent(r.rate):>8} {r.per_night:>10,}{flag}"
        )
    if archived:
        lines.append("(an archive: alerts are the job's archived matches; rate is of those, per night"
                     " the archive's mean a night)")  # fmt: skip
    nights = sorted(rows[0].night_alerts) if rows else []
    if len(nights) > 1:
        lines += ["", f"{'night':<12} {'alerts':>8}  " + "  ".join(r.name for r in rows)]
        for night in nights:
            counts = "  ".join(f"{r.nights.get(night, 0):>{len(r.name)}}" for r in rows)
            lines.append(f"{night.isoformat():<12} {rows[0].night_alerts[night]:>8}  {counts}")
    return "\n".join(lines), ok


def _percent(rate: float) -> str:
    """A rate as a percentage, with two significant digits below 0.1% (4 in 100,000: 0.004%)."""
    return f"{rate:.2%}" if rate == 0 or rate >= 0.001 else f"{rate * 100:.2g}%"


def for_survey(filters: list[Filter], survey: str, source: str, named: bool) -> list[Filter]:
    """The filters written for ``survey``'s alerts; naming one written for another is an error."""
    other = [f for f in filters if f.survey not in (None, survey)]
    if named and other:
        f = other[0]
        raise FilterError(f"--filter names {f.name!r} ({f.origin}), a filter for {f.survey} alerts;"
                          f" {source} holds {survey} alerts")  # fmt: skip
    mine = [f for f in filters if f.survey in (None, survey)]
    if not mine:
        raise FilterError(
            f"{source} holds {survey} alerts and none of the {len(filters)} filters found is for them"
            f" (they declare survey {sorted({str(f.survey) for f in filters})}): give --filter-path a"
            f" filter module that sets survey = {survey!r}"
        )
    return mine
