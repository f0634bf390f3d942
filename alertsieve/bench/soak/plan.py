"""What a soak runs: its alerts, pace, trigger and filters, and how often it samples. Apart from the
soak itself so that the command line shows these defaults without importing the producer and the job."""

from __future__ import annotations

from dataclasses import dataclass

from alertsieve.sim import VISIT_CADENCE_S


@dataclass(frozen=True)
class SoakPlan:
    alerts: int
    trigger: str = "realtime"  # or "micro"
    filters: int = 10
    kill_after_s: float | None = None
    rate: int | None = None  # alerts every second, instead of visits
    visit_size: int = 10_000
    interval_s: float = VISIT_CADENCE_S
    sample_s: float = 5.0
    heap_every_s: float = 300.0
    oracle_visits: int = 3  # visits re-simulated for the Delta check (evenly spread)
    #: the archive's upkeep (compaction and VACUUM) and the history it keeps: within the run, so
    #: a run shows the archive's files bounded (a job keeps a week: delta_retention_hours)
    upkeep_s: float = 300.0
    retention_hours: float = 0.25

    @property
    def per_visit(self) -> int:
        return self.rate or self.visit_size

    @property
    def visits(self) -> int:
        return max(1, self.alerts // self.per_visit)

    @property
    def every_s(self) -> float:
        return 1.0 if self.rate else self.interval_s


#: ``--quick``: three visits of 300 alerts, 3 s apart, sampled every second, each visit checked.
QUICK_SOAK = SoakPlan(
    alerts=900,
    visit_size=300,
    interval_s=3.0,
    sample_s=1.0,
    heap_every_s=10.0,
    oracle_visits=3,
    upkeep_s=5.0,
    retention_hours=0.0,
)
