"""An alertsieve command (a filter job, the archive) run by a benchmark as a process of its own.

Each runs in its own process group, so that stopping or killing it takes its JVM too, with its
output appended to a log whose last lines explain a failure. Benchmarks stop them as a user
would (Ctrl-C: the job stops its queries and writes its last metrics) and kill them -9 when a
fault is the point.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

log = logging.getLogger(__name__)


class JobProcess:
    """One command, started (and restarted) in its own process group, its output in ``log_path``."""

    def __init__(self, name: str, args: list[str], log_path: Path):
        self.name, self.args, self.log_path = name, args, log_path
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        with open(self.log_path, "a") as out:  # a restart appends: the log keeps every life
            self.process = subprocess.Popen(
                self.args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def pids(self) -> list[int]:
        return [self.process.pid] if self.alive() else []

    def jvm(self) -> int | None:
        """The JVM pyspark started for this process, if any."""
        for pid in self.pids():
            try:
                for child in psutil.Process(pid).children(recursive=True):
                    if child.name() == "java":
                        return child.pid
            except psutil.NoSuchProcess:
                return None
        return None

    def tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        """kill -9 of the whole group: Python and its JVM, no goodbye."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Ctrl-C: the job stops its queries and writes its last metrics; then kill what is left."""
        if self.alive():
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in %.0f s: killed", self.name, timeout_s)
        self.kill()


def wait_for(
    done: Callable[[], bool],
    what: str,
    timeout_s: float,
    processes: Sequence[JobProcess],
    error: type[Exception],
) -> None:
    """Wait until ``done()``; raise ``error`` as soon as one of ``processes`` exits (its log's
    last lines in the message) or when ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while not done():
        for p in processes:
            if not p.alive():
                raise error(f"{p.name} exited ({p.returncode}) before {what}:\n{p.tail()}")
        if time.monotonic() > deadline:
            raise error(
                f"not {what} after {timeout_s:.0f} s:\n" + "\n".join(p.tail(8) for p in processes)
            )
        time.sleep(0.5)


def children_except(processes: Sequence[JobProcess], others: Sequence[int] = ()) -> list[int]:
    """This process's children that are none of ``processes`` nor ``others``: the producers a
    benchmark started (``produce()`` spawns a fresh set for each visit), with the embedded broker
    unless it is among ``others``."""
    known = {pid for p in processes for pid in p.pids()} | set(others)
    return [c.pid for c in psutil.Process().children() if c.pid not in known]
