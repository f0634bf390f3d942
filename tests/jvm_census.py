"""How many Java virtual machines the test run starts, by kind, printed at the end of every run.

Each Spark JVM costs ~10 s bare and a job process ~20-45 s before its first batch on these two
cores: the count is what the suite's time is made of, so every run shows it beside its slowest
tests. A thread samples the machine's processes twice a second and keeps every Java process
not already there when the run began (process birth times drift from the wall clock by a second
or so, so the run's start is a set of processes, not a time).

Short-lived tools are counted apart, not as JVMs the suite waits on: a ``java -version`` probe,
Kafka's storage formatter, and Spark's launcher (``spark-class`` first runs
``org.apache.spark.launcher.Main`` to build the real command line, then execs it; the launcher's
own command line names the main class it builds for, so it is told apart first). Sampling can
miss a process that lives under half a second: a launcher sometimes, never a JVM the suite pays
for. Under ``-n 2`` it runs in the controller, which hears of every test either worker starts and
ends; a JVM born while two tests run is put down to both ("A or B")."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

import psutil

#: Spark's launcher: builds a JVM's command line and exits (see the module's doc).
LAUNCHER = "Spark's launcher (a tool)"
#: Any other Java process that is not a Spark or Kafka JVM (a ``java -version`` probe, Kafka's
#: storage formatter).
TOOL = "other Java tool"

#: The main class (or a word of it) of each kind, in the order they are tried.
KINDS = (
    (LAUNCHER, "org.apache.spark.launcher.Main"),
    ("Kafka broker", "kafka.Kafka"),
    ("Spark cluster master/worker", "org.apache.spark.deploy.master.Master"),
    ("Spark cluster master/worker", "org.apache.spark.deploy.worker.Worker"),
    ("Spark executor", "CoarseGrainedExecutorBackend"),
    ("Spark driver", "org.apache.spark.deploy.SparkSubmit"),
)

SAMPLE_EVERY_S = 0.5


def kind_of(cmdline: list[str]) -> str:
    """The kind of Java process a command line starts: its main class decides."""
    for kind, word in KINDS:
        if any(part == word or part.endswith(word) for part in cmdline):
            return kind
    return TOOL


@dataclass
class Census:
    """What a run started: Java processes per kind, and per test those the suite waits on (a
    session fixture's broker counts for the first test that asked for it)."""

    kinds: Counter[str]
    tests: Counter[str]

    @property
    def total(self) -> int:
        """Spark JVMs and Kafka brokers: every kind but short-lived tools."""
        return sum(n for kind, n in self.kinds.items() if kind not in (TOOL, LAUNCHER))


class JvmCensus:
    """Samples the Java processes born while it runs, each with the test running then;
    ``stop()`` ends the sampling and returns the census."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, float], tuple[str, str]] = {}
        #: The tests running now, in the order they started (two at once under ``-n 2``).
        self.running: dict[str, None] = {}
        self.already_running = set(self._java_processes())
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._sample_until_stopped, daemon=True, name="jvm-census"
        )
        self._thread.start()

    def started(self, test: str) -> None:
        self.running[test] = None

    def finished(self, test: str) -> None:
        self.running.pop(test, None)

    @property
    def current_test(self) -> str:
        """Who a JVM born now belongs to: the test running, or each of the tests running at once
        (a sample cannot tell which of two workers' tests started it)."""
        return " or ".join(self.running) or "the session's start"

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self.sample()

    @staticmethod
    def _java_processes() -> dict[tuple[int, float], list[str]]:
        found = {}
        for proc in psutil.process_iter(["pid", "name", "cmdline", "create_time"]):
            info = proc.info
            if info["name"] == "java" and info["cmdline"]:
                found[(info["pid"], info["create_time"])] = info["cmdline"]
        return found

    def sample(self) -> None:
        for key, cmdline in self._java_processes().items():
            if key not in self.already_running:
                self.seen.setdefault(key, (kind_of(cmdline), self.current_test))

    def stop(self) -> Census:
        self._stop.set()
        self._thread.join()
        self.sample()
        kinds = Counter(kind for kind, _ in self.seen.values())
        tests = Counter(test for kind, test in self.seen.values() if kind not in (TOOL, LAUNCHER))
        return Census(kinds, tests)
