"""Scaling experiments as data: a YAML file names a base setting and the lists to vary; its
points are the product of those lists. Pure logic: parsing, expanding, keys, the results file
and the reduction of a point's raw measurements to the numbers the notebooks plot.

An experiment file::

    name: producers
    description: DMTN-028's producer study
    dimension: producers          # the x axis of the analysis
    base: {alerts_per_visit: 10000, visits: 3, interval_s: 20}
    matrix: {producers: [1, 2, 4], stamps: [true, false]}
    quick: {base: {alerts_per_visit: 200, visits: 1}, matrix: {producers: [1, 2]}}

``quick`` replaces keys of ``base`` and ``matrix`` for a small run (CI, a first look).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alertsieve.bench.batches import batch_reaching, visit_done_times
from alertsieve.settings import SettingsError, explain, read_yaml


class ExperimentError(SettingsError):
    """An experiment file that cannot run, named with the file, the field and the fix."""


class Point(BaseModel):
    """One run: a fresh topic, ``visits`` visits at the cadence, ``consumers`` filter jobs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alerts_per_visit: int = Field(1_000, gt=0, examples=[10000])
    stamps: bool = Field(
        True,
        strict=True,
        examples=[True],
        description="FITS cutouts in every alert (~98 KB with, ~3 KB without)",
    )
    producers: int = Field(
        2, gt=0, examples=[2], description="producer processes, each sending a share of every visit"
    )
    partitions: int = Field(4, gt=0, examples=[4], description="of the alert topic")
    consumers: int = Field(
        1,
        gt=0,
        examples=[1],
        description="filter jobs, each its own consumer group reading the whole stream",
    )
    filters: int = Field(
        10,
        gt=0,
        examples=[10],
        description="SQL filters per job (the benchmark's broker-like cuts)",
    )
    visits: int = Field(3, gt=0, examples=[3])
    interval_s: float = Field(
        20.0, gt=0, examples=[20], description="cadence: a visit starts every interval_s seconds"
    )
    max_offsets_per_trigger: int = Field(20_000, gt=0, examples=[20000])
    sinks: tuple[Literal["kafka", "delta"], ...] = Field(
        ("kafka",), min_length=1, examples=[["kafka"]]
    )
    trigger: Literal["0", "realtime"] = Field(
        "0",
        examples=["realtime"],
        description="the job's trigger: micro-batches as fast as they go, or Real-Time Mode",
    )
    rate: float | None = Field(
        None,
        gt=0,
        examples=[250],
        description="alerts/s sent steadily for steady_s seconds instead of visits at the cadence (latency against rate)",
    )
    steady_s: float = Field(
        20.0, gt=0, examples=[20], description="with rate: seconds of steady sending"
    )

    @property
    def key(self) -> str:
        """Same settings, same key: how a resumed run knows a point is done."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def label(self) -> str:
        if self.rate:
            mode = "Real-Time Mode" if self.trigger == "realtime" else "micro-batch"
            return f"{self.rate:g} alerts/s for {self.steady_s:g}s, {mode}, {self.partitions}part {self.filters}F"
        stamps = "stamps" if self.stamps else "no stamps"
        return (
            f"{self.alerts_per_visit} alerts/visit, {stamps}, {self.producers}P"
            f" {self.partitions}part {self.consumers}C {self.filters}F"
        )


class QuickScale(BaseModel):
    """Keys of ``base`` and ``matrix`` replaced for a small run."""

    model_config = ConfigDict(extra="forbid")

    base: dict[str, Any] = Field(default_factory=dict, examples=[{"visits": 1}])
    matrix: dict[str, list[Any]] = Field(default_factory=dict, examples=[{"producers": [1, 2]}])


class ExperimentFile(BaseModel):
    """What an experiment YAML holds (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, examples=["producers"])
    description: str = ""
    dimension: str | None = Field(
        None, examples=["producers"], description="the x axis of the analysis"
    )
    base: dict[str, Any] = Field(
        default_factory=dict, examples=[{"alerts_per_visit": 10000, "visits": 3}]
    )
    matrix: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        default_factory=dict, examples=[{"producers": [1, 2, 4]}]
    )
    quick: QuickScale = Field(default_factory=QuickScale, examples=[{"base": {"visits": 1}}])


@dataclass
class Experiment:
    name: str
    description: str
    dimension: str
    base: dict[str, Any]
    matrix: dict[str, list[Any]]
    source: str = "<memory>"
    points: list[Point] = field(default_factory=list)


def _point(values: dict[str, Any], where: str) -> Point:
    try:
        return Point.model_validate(values)
    except ValidationError as e:
        raise ExperimentError(explain(e, Point, where)) from None


def parse_experiment(data: dict[str, Any], source: str, quick: bool = False) -> Experiment:
    if not isinstance(data, dict):
        raise ExperimentError(f"{source}: expected a mapping with name, base and matrix")
    try:
        spec = ExperimentFile.model_validate(data)
    except ValidationError as e:
        raise ExperimentError(explain(e, ExperimentFile, source)) from None
    base = dict(spec.base)
    matrix = dict(spec.matrix)
    if quick:
        base.update(spec.quick.base)
        matrix.update(spec.quick.matrix)
    dimension = spec.dimension or next(iter(matrix), None)
    if dimension not in Point.model_fields:
        raise ExperimentError(
            f"{source}: dimension = {dimension!r}: must name a point setting"
            f" (one of {', '.join(Point.model_fields)})"
        )
    points = []
    for combo in itertools.product(*matrix.values()):
        values = {**base, **dict(zip(matrix, combo, strict=True))}
        points.append(_point(values, f"{source} (point {values})"))
    return Experiment(
        name=spec.name or Path(source).stem,
        description=spec.description.strip(),
        dimension=dimension,
        base=base,
        matrix=matrix,
        source=source,
        points=points,
    )


def load_experiment(path: str | Path, quick: bool = False) -> Experiment:
    return parse_experiment(read_yaml(path, ExperimentError), str(path), quick=quick)


# -- the results file ------------------------------------------------------------------------


def results_file(root: str | Path, experiment: str) -> Path:
    return Path(root) / experiment / "results.jsonl"


def done_keys(path: Path) -> set[str]:
    """Points with a successful result: a resumed run skips them (failed ones run again)."""
    if not path.exists():
        return set()
    return {
        line["key"]
        for line in map(json.loads, filter(str.strip, path.read_text().splitlines()))
        if line.get("status") == "ok"
    }


def append_result(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(result) + "\n")


def load_results(root: str | Path) -> list[dict]:
    """Every experiment's results under ``root`` (one folder per experiment); for a point run
    more than once, its last result."""
    latest: dict[tuple[str, str], dict] = {}
    for path in sorted(Path(root).glob("*/results.jsonl")):
        for text in path.read_text().splitlines():
            if text.strip():
                line = json.loads(text)
                latest[(line["experiment"], line["key"])] = line
    return list(latest.values())


# -- reducing a point's measurements ----------------------------------------------------------


def typical(values: list[float | None]) -> float | None:
    """The typical visit: the median over the measured visits (warm-up is not among them)."""
    known = [v for v in values if v is not None]
    return round(median(known), 3) if known else None


def producer_summary(reports: list[dict]) -> dict:
    """Per visit: the slowest producer's wall time is the visit's producing time."""
    visits = sorted({r["visit_index"] for r in reports})
    per_visit = []
    for v in visits:
        mine = [r for r in reports if r["visit_index"] == v]
        per_visit.append(
            {
                "alerts": sum(r["alerts"] for r in mine),
                "bytes": sum(r["bytes"] for r in mine),
                "acked": sum(r["acked"] for r in mine),
                "produce_s": round(max(r["wall_s"] for r in mine), 3),
                "serialize_s": round(max(r["serialize_s"] for r in mine), 3),
                "first_alert_at": min(r["started_at"] for r in mine),
            }
        )
    alerts = sum(v["alerts"] for v in per_visit)
    return {
        "visits": per_visit,
        "alerts": alerts,
        "acked": sum(v["acked"] for v in per_visit),
        "mean_alert_kb": round(sum(v["bytes"] for v in per_visit) / max(alerts, 1) / 1e3, 1),
        "produce_s": typical([v["produce_s"] for v in per_visit]),
    }


def consumer_summary(
    lines: list[dict], topic: str, ends: list[dict], first_alert_at: list[float], warm_end: dict
) -> dict:
    """One filter job's batches reduced to: when each visit was fully filtered (after its
    first alert was produced), its throughput while busy, and the latency it reports. Batches
    up to the one that finished the warm-up visit (``warm_end``) are left out."""
    warm = batch_reaching(lines, topic, warm_end)
    after = warm["batch_id"] if warm else -1
    busy = [x for x in lines if x["input_rows"] and x["batch_id"] > after]
    done = visit_done_times(lines, topic, ends)
    filtered = [
        round(d - f, 3) if d is not None else None
        for d, f in zip(done, first_alert_at, strict=True)
    ]
    busy_s = sum(x["batch_seconds"] for x in busy)
    rows = sum(x["input_rows"] for x in busy)
    return {
        "batches": len(busy),
        "alerts": rows,
        "matches": sum(sum(x["matches"].values()) for x in busy),
        "quarantined": sum(x["quarantined_rows"] for x in busy),
        "visit_filtered_s": filtered,
        "filtered_s": typical(filtered),
        "busy_alerts_per_s": round(rows / busy_s, 1) if busy_s else None,
        "batch_latency_p99_worst_s": max((x["latency_s"]["p99"] for x in busy), default=None),
    }


def headline(result: dict) -> dict:
    """The few numbers a scaling plot needs from one point's result."""
    consumers = result.get("consumers") or []
    filtered = [c["filtered_s"] for c in consumers if c.get("filtered_s") is not None]
    rates = [c["busy_alerts_per_s"] for c in consumers if c.get("busy_alerts_per_s")]
    produce_s = (result.get("producer") or {}).get("produce_s")
    alerts = result["point"]["alerts_per_visit"]
    latency = result.get("latency_s") or {}
    sent = result.get("sent") or {}
    return {
        "sent_alerts_per_s": sent.get("alerts_per_s"),
        "caught_up_after_last_ack_s": result.get("caught_up_after_last_ack_s"),
        "produce_s": produce_s,
        "produce_alerts_per_s": round(alerts / produce_s, 1) if produce_s else None,
        "filtered_s": max(filtered) if filtered else None,  # the slowest consumer group
        "consumer_alerts_per_s": round(sum(rates) / len(rates), 1) if rates else None,
        "total_alerts_per_s": round(sum(rates), 1) if rates else None,
        "latency_p50_s": latency.get("p50"),
        "latency_p99_s": latency.get("p99"),
    }
