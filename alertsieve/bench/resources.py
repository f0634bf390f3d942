"""CPU and resident memory of the parts of a run (broker, filter jobs, producers), sampled in
the background: on a machine where everything shares the same cores, who used them explains
the curves."""

from __future__ import annotations

import threading
from collections.abc import Callable

import psutil

#: role -> a function giving the root pids of that role now (children are followed)
Roles = dict[str, Callable[[], list[int]]]


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class ResourceSampler:
    """Samples every ``interval_s`` until stopped; ``summary()`` gives per role the mean and
    peak CPU (percent of one core, summed over the role's processes) and peak resident MB."""

    def __init__(self, roles: Roles, interval_s: float = 0.5):
        self.roles = roles
        self.interval_s = interval_s
        self._known: dict[int, psutil.Process] = {}
        self._samples: dict[str, list[tuple[float, float]]] = {r: [] for r in roles}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ResourceSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _process(self, proc: psutil.Process) -> psutil.Process:
        """Reuse Process objects: cpu_percent() measures since the previous call on the same
        object (the first call primes it)."""
        known = self._known.get(proc.pid)
        if known is None or known.create_time() != proc.create_time():
            known = self._known[proc.pid] = proc
            known.cpu_percent(None)
        return known

    def sample(self) -> None:
        for role, roots in self.roles.items():
            cpu = rss = 0.0
            for pid in roots():
                for proc in _tree(pid):
                    try:
                        proc = self._process(proc)
                        cpu += proc.cpu_percent(None)
                        rss += proc.memory_info().rss
                    except psutil.Error:
                        continue
            self._samples[role].append((cpu, rss / 2**20))

    def last(self) -> dict[str, dict[str, float]]:
        """Per role, the latest sample: CPU (percent of one core) and resident MB."""
        return {
            role: {"cpu_pct": round(s[-1][0], 1), "rss_mb": round(s[-1][1], 1)}
            for role, s in self._samples.items()
            if s
        }

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def summary(self) -> dict[str, dict[str, float | None]]:
        out = {}
        for role, samples in self._samples.items():
            cpus = [c for c, _ in samples[1:]]  # the first sample only primes the counters
            out[role] = {
                "cpu_mean_pct": round(sum(cpus) / len(cpus), 1) if cpus else None,
                "cpu_max_pct": round(max(cpus), 1) if cpus else None,
                "rss_max_mb": round(max((m for _, m in samples), default=0.0), 1),
                "samples": len(samples),
            }
        return out
