"""The topic a job benchmark reads: simulated visits of 10,000 alerts on 4 partitions, on the
embedded broker it starts (or an existing one), and the jobs' settings over it."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from alertsieve.errors import AlertsieveError
from alertsieve.kafka import embedded
from alertsieve.produce.producer import ProduceConfig, ProduceSummary, produce
from alertsieve.stream.config import JobConfig


@dataclass(frozen=True)
class BenchTopic:
    bootstrap: str
    topic: str
    produced: ProduceSummary
    workdir: Path
    own_broker: bool

    def job_config(self, label: str, filters: list, batch: int) -> JobConfig:
        """An available-now job over the topic, Kafka outputs only, its own prefix and checkpoint."""
        return JobConfig(bootstrap=self.bootstrap, topic=self.topic, available_now=True, max_offsets_per_trigger=batch,
                         discover_filters=False, code_filters=filters, metrics_path=None, output_partitions=1,
                         output_prefix=f"{self.topic}-{label}-", sinks=["kafka"], survey="rubin",
                         checkpoint=str(self.workdir / f"job-{label}"), schema_dir=str(self.workdir / "schemas"))  # fmt: skip


@contextmanager
def bench_topic(name: str, alerts: int, bootstrap: str | None = None, heap: str = "1g") -> Iterator[BenchTopic]:
    """A filled topic; the broker (when started here) and the work folder removed after."""
    workdir = Path(tempfile.mkdtemp(prefix=f"alertsieve-bench-{name}-"))
    own_broker = bootstrap is None
    if own_broker:
        bootstrap = embedded.start(workdir / "kafka", heap=heap).bootstrap_servers
    try:
        topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
        produced = produce(ProduceConfig(bootstrap=bootstrap, topic=topic, visits=alerts // 10_000, alerts_per_visit=10_000,
                                         interval_s=0, producers=2, partitions=4, progress=False,
                                         schema_dir=str(workdir / "schemas")))  # fmt: skip
        if not produced.ok:
            raise AlertsieveError(f"filling the topic lost alerts: {produced.as_dict()}")
        yield BenchTopic(bootstrap, topic, produced, workdir, own_broker)
    finally:
        if own_broker:
            embedded.stop(workdir / "kafka")
        shutil.rmtree(workdir, ignore_errors=True)
