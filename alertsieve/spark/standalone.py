"""A Spark standalone cluster on this machine (a master and N workers, loopback only), started
with pyspark's own ``spark-class``: the same topology as a real cluster, for tests and for
trying ``--master spark://...`` without one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from alertsieve.errors import AlertsieveError
from alertsieve.localhost import HOST, free_port, pid_alive


class StandaloneError(AlertsieveError, RuntimeError):
    pass


@dataclass
class StandaloneCluster:
    master_url: str
    webui_port: int
    log_dir: Path
    pids: list[int] = field(default_factory=list)

    def alive_workers(self) -> int:
        """Workers the master counts; 0 while its web UI is not up, or while another page answers
        on its port (an HTML page seen once in the suite): ``start`` then waits, and stops the
        cluster it launched when it times out, rather than leave it running."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.webui_port}/json", timeout=2) as r:
                return int(json.load(r).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def stop(self, timeout: float = 20) -> None:
        for pid in reversed(self.pids):  # workers first, then the master
            if pid_alive(pid):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(pid_alive(p) for p in self.pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self.pids:
            if pid_alive(pid):
                os.killpg(pid, signal.SIGKILL)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _spark_class() -> str:
    path = Path(sys.executable).parent / "spark-class"
    if not path.exists():
        raise StandaloneError(f"{path} not found: pyspark is not installed in this environment")
    return str(path)


def _launch(args: list[str], log: Path, env: dict[str, str]) -> int:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [_spark_class(), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        ).pid


def start(
    log_dir: Path | str, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 60
) -> StandaloneCluster:
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    taken: set[int] = set()
    port, webui = free_port(taken), free_port(taken)
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "SPARK_LOCAL_IP": HOST, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    cluster = StandaloneCluster(f"spark://{HOST}:{port}", webui, log_dir)
    cluster.pids.append(
        _launch(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(port),
                "--webui-port",
                str(webui),
            ],
            log_dir / "master.log",
            env,
        )
    )
    for i in range(workers):
        cluster.pids.append(
            _launch(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    cluster.master_url,
                    "--host",
                    HOST,
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--webui-port",
                    str(free_port(taken)),
                    "--work-dir",
                    str(log_dir / f"work-{i}"),
                ],
                log_dir / f"worker-{i}.log",
                env,
            )
        )
    deadline = time.monotonic() + timeout
    while cluster.alive_workers() < workers:
        if time.monotonic() > deadline or not all(pid_alive(p) for p in cluster.pids):
            cluster.stop()
            raise StandaloneError(
                f"standalone cluster did not come up with {workers} workers; see {log_dir}"
            )
        time.sleep(0.5)
    return cluster
