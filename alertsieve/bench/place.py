"""Where a benchmark runs: a broker (the embedded one it starts, or an existing one), a work folder
and one SparkSession, all stopped and removed after (Spark first: its Kafka clients would complain
of a broker gone); and the topic a job benchmark reads, simulated visits of 10,000 alerts on 4
partitions, with the jobs' settings over it."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alertsieve.bench.machine import describe
from alertsieve.errors import AlertsieveError
from alertsieve.kafka import embedded
from alertsieve.produce.producer import ProduceConfig, ProduceSummary, produce
from alertsieve.stream.config import JobConfig

#: A session that runs a dozen queries in a row: Spark keeps each query's idle Kafka consumers and
#: their fetched records (up to 64 MB a fetch here) for 5 minutes by default, which filled the 3 GB
#: heap by the Python runs. A job runs one query and never piles them up.
MANY_QUERIES = {
    "spark.kafka.consumer.cache.timeout": "10s",
    "spark.kafka.consumer.fetchedData.cache.timeout": "10s",
}


@dataclass(frozen=True)
class Bench:
    bootstrap: str | None  # None: a benchmark without Kafka
    workdir: Path
    own_broker: bool
    spark: Any

    def machine(self) -> dict:
        """The machine and where the broker ran, for the benchmark's JSON."""
        return describe("embedded, same machine" if self.own_broker else self.bootstrap)


@contextmanager
def bench_place(
    name: str,
    bootstrap: str | None = None,
    heap: str = "1g",
    kafka: bool = True,
    spark_conf: Mapping[str, str] | None = None,
    session: bool = True,
) -> Iterator[Bench]:
    """The broker (started here unless ``bootstrap`` is given; none without ``kafka``), a work
    folder and (unless not ``session``: the benchmark runs Spark in processes of its own) a
    session named ``alertsieve-bench-NAME``; a session already running (a notebook's, a test's)
    is used and left running, as every command does (``command_session``)."""
    from alertsieve.spark.session import command_session

    workdir = Path(tempfile.mkdtemp(prefix=f"alertsieve-bench-{name}-"))
    own_broker = kafka and bootstrap is None
    conf = {"spark.ui.enabled": "false", **(spark_conf or {})}
    try:
        if own_broker:
            bootstrap = embedded.start(workdir / "kafka", heap=heap).bootstrap_servers
        # Spark stops first: its Kafka clients would complain of a broker gone.
        with (
            command_session(f"alertsieve-bench-{name}", conf=conf)
            if session
            else nullcontext() as spark
        ):
            yield Bench(bootstrap, workdir, own_broker, spark)
    finally:
        if own_broker:
            embedded.stop(workdir / "kafka")
        shutil.rmtree(workdir, ignore_errors=True)


def available_now_job(
    bench: Bench,
    topic: str,
    label: str,
    filters: list,
    batch: int,
    output_partitions: int = 1,
    survey: str = "rubin",
) -> JobConfig:
    """An available-now job of ``filters`` over ``topic``, Kafka outputs only, its own prefix
    (``<topic>-<label>-``) and checkpoint, the bench's schema store."""
    return JobConfig(
        bootstrap=bench.bootstrap,
        topic=topic,
        available_now=True,
        max_offsets_per_trigger=batch,
        discover_filters=False,
        code_filters=filters,
        metrics_path=None,
        output_partitions=output_partitions,
        output_prefix=f"{topic}-{label}-",
        sinks=["kafka"],
        survey=survey,
        checkpoint=str(bench.workdir / f"job-{label}"),
        schema_dir=str(bench.workdir / "schemas"),
    )


@dataclass(frozen=True)
class BenchTopic:
    bench: Bench
    topic: str
    produced: ProduceSummary

    def job_config(
        self, label: str, filters: list, batch: int, output_partitions: int = 1
    ) -> JobConfig:
        """An available-now job over the topic, Kafka outputs only, its own prefix and checkpoint."""
        return available_now_job(
            self.bench, self.topic, label, filters, batch, output_partitions, survey="rubin"
        )

    @property
    def mean_alert_kb(self) -> float:
        return round(self.produced.bytes / self.produced.acked / 1e3, 1)

    def facts(self) -> dict:
        """The topic as a benchmark's JSON describes it."""
        return {"alerts": self.produced.acked, "partitions": 4, "mean_alert_kb": self.mean_alert_kb}


def visits_of(alerts: int) -> tuple[int, int]:
    """(visits, alerts per visit) holding ``alerts``: visits of 10,000 (whole ones: the rest is
    left out), or one visit of them all below that (a quick run)."""
    return (alerts // 10_000, 10_000) if alerts >= 10_000 else (1, alerts)


def fill_topic(
    bench: Bench, name: str, visits: int, alerts_per_visit: int = 10_000, **simulation: Any
) -> BenchTopic:
    """A new topic of 4 partitions holding ``visits`` simulated visits, sent back to back by two
    producers (their schemas in the bench's store; ``simulation``: more of ``ProduceConfig``'s
    settings, e.g. ``deep_share``); refused if any alert was lost."""
    topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
    produced = produce(
        ProduceConfig(
            bootstrap=bench.bootstrap,
            topic=topic,
            visits=visits,
            alerts_per_visit=alerts_per_visit,
            interval_s=0,
            producers=2,
            partitions=4,
            progress=False,
            schema_dir=str(bench.workdir / "schemas"),
            **simulation,
        )
    )
    if not produced.ok:
        raise AlertsieveError(f"filling the topic lost alerts: {produced.as_dict()}")
    return BenchTopic(bench, topic, produced)
