"""The archive's tables kept small: compaction and VACUUM on a schedule the archive owns.

Every archive batch MERGEs a few small files into each table, and Delta's auto-compaction folds
them together, but the files it replaces stay on disk (for time travel) and the log keeps a JSON
commit per batch: ~1,300 files an hour in the night-long soak, forever. Every
``delta_upkeep_seconds`` the archive, between two of its batches (off the hot path, which never
waits for it), compacts each table (OPTIMIZE: small files into large ones) and VACUUMs it
(removes the files no version younger than ``delta_retention_hours`` references). The tables
keep that much history for time travel, and their log as long, a day at least
(``delta.logRetentionDuration``, set on the tables; Delta trims it at its checkpoints), so what
the archive holds on disk stops growing once it is that old."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

TABLES = ("matches", "quarantine")
#: Delta refuses a VACUUM keeping less than a week unless told its safety check is off.
DELTA_SAFE_HOURS = 168
LOG_HOURS_AT_LEAST = 24


class Upkeep:
    """When and how the archive compacts and vacuums its tables."""

    def __init__(
        self,
        spark,
        root: str,
        interval_s: float,
        retention_hours: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.spark, self.root = spark, root.rstrip("/")
        self.interval_s, self.retention_hours = interval_s, retention_hours
        self.clock = clock
        self.last = clock()  # the first upkeep one interval after the archive starts
        self.runs = 0
        if retention_hours < DELTA_SAFE_HOURS:
            # a shorter history than Delta's default week was asked for (delta_retention_hours)
            spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")

    def due(self) -> bool:
        return self.interval_s > 0 and self.clock() - self.last >= self.interval_s

    def run(self) -> None:
        """Compact, then vacuum, each table that exists; one log line per table."""
        from delta.tables import DeltaTable

        for name in TABLES:
            path = f"{self.root}/{name}"
            if not DeltaTable.isDeltaTable(self.spark, path):
                continue
            started = time.monotonic()
            table = DeltaTable.forPath(self.spark, path)
            if self.runs == 0:
                self._keep_history(path)
            before = table.detail().first()["numFiles"]
            table.optimize().executeCompaction()
            after = DeltaTable.forPath(self.spark, path).detail().first()["numFiles"]
            on_disk = _data_files(path)
            with _stdout_to_stderr(self.spark):
                table.vacuum(self.retention_hours)
            log.info(
                "archive upkeep: %s: %d files compacted into %d; VACUUM (keeping %g h) removed"
                " %s files; %.1f s",
                name, before, after, self.retention_hours,
                "?" if on_disk is None else on_disk - (_data_files(path) or 0),
                time.monotonic() - started,
            )  # fmt: skip
        self.last = self.clock()
        self.runs += 1

    def _keep_history(self, path: str) -> None:
        """The table's log kept as long as its files (time travel needs both), and a day at
        least: a commit is a few KB, and a reader replaying the log (the soak's) needs it whole."""
        files = _interval(self.retention_hours)
        log_hours = _interval(max(self.retention_hours, LOG_HOURS_AT_LEAST))
        self.spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ("
            f"'delta.logRetentionDuration' = '{log_hours}',"
            f" 'delta.deletedFileRetentionDuration' = '{files}')"
        )


def _interval(hours: float) -> str:
    """Hours as a Delta table property's interval (whole seconds: Delta reads no fractions)."""
    return f"interval {round(hours * 3600)} seconds"


@contextmanager
def _stdout_to_stderr(spark):
    """Delta's VACUUM prints "Deleted N files..." on the JVM's standard output, which is a
    command's own (JSON, for the benchmarks): it goes to standard error instead (the line above
    says the same)."""
    system = spark._jvm.java.lang.System
    out = system.out
    system.setOut(system.err)
    try:
        yield
    finally:
        system.setOut(out)


def _data_files(path: str) -> int | None:
    """The table's data files on a local disk (None elsewhere: s3a://, abfss://...)."""
    if "://" in path and not path.startswith("file://"):
        return None
    root = Path(path.removeprefix("file://"))
    return sum(1 for f in root.rglob("*.parquet") if "_delta_log" not in f.parts)
