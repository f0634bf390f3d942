"""The filter job run in the benchmark's own session, on a thread, while the benchmark sends it
alerts: started, awaited until its query reads, and stopped (every query of the session) however
the measurement ends. ``bench stream``'s cadence run and ``bench latency`` share it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from alertsieve.errors import AlertsieveError
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import QUERY_NAME, FilterStream


@contextmanager
def live_job(spark, cfg: JobConfig) -> Iterator[FilterStream]:
    """``cfg``'s job running on a thread, its query started; stopped on leaving."""
    job = FilterStream(spark, cfg)
    runner = threading.Thread(target=job.run, daemon=True)
    runner.start()
    try:
        while not any(q.name == QUERY_NAME for q in spark.streams.active):
            if not runner.is_alive():
                raise AlertsieveError(
                    "the job stopped before its query started (see its error above)"
                )
            time.sleep(0.5)
        yield job
    finally:
        for q in spark.streams.active:
            q.stop()
        runner.join(60)
