"""The suite's own guards, checked from outside, each by a pytest run of its own with this suite's
conftest: the fast tier starts no broker, server or job (issue 24, item 11); a test that hangs
fails at the suite's timeout, and a test that fails or hangs leaves none of its processes running
(item 9)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BREAKERS = """
import socket
import subprocess
import sys

import pytest

from alertsieve.kafka import embedded


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("kafka")
    try:
        yield embedded.start(data_dir)
    finally:
        embedded.stop(data_dir)  # were the guard broken


def test_a_module_fixture_starts_a_broker(broker):
    pass


def test_a_server_on_a_port():
    socket.socket().listen()


def test_a_job_process():
    subprocess.Popen([sys.executable, "-m", "alertsieve.cli", "filter", "--help"]).wait()


def test_a_plain_process():
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True).stdout == b"1\\n"


@pytest.mark.integration
def test_an_integration_test_may_start_what_it_needs():
    assert embedded.start.__module__ == "alertsieve.kafka.embedded"
    assert socket.socket.listen.__qualname__ == "socket.listen"
"""


def _pytest(folder: Path, tests: str, *options: str) -> tuple[str, dict[str, str]]:
    """A pytest run over ``tests`` with this suite's conftest: what it said, and each test's outcome."""
    for helper in ("conftest.py", "jvm_census.py"):
        (folder / helper).write_text(Path(__file__).with_name(helper).read_text())
    (folder / "test_inner.py").write_text(tests)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rA",
            *options,
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
    )
    said = done.stdout + done.stderr
    summary = {
        line.split(" ", 2)[1].split("::")[-1]: line.split(" ", 1)[0]
        for line in said.splitlines()
        if line.startswith(("PASSED ", "FAILED ", "ERROR "))
    }
    return said, summary


def test_a_fast_test_that_starts_a_broker_a_server_or_a_job_fails_saying_so(tmp_path):
    said, summary = _pytest(tmp_path, BREAKERS)
    assert (
        summary
        == {
            "test_a_module_fixture_starts_a_broker": "ERROR",  # refused while its module's fixture is set up
            "test_a_server_on_a_port": "FAILED",
            "test_a_job_process": "FAILED",
            "test_a_plain_process": "PASSED",
            "test_an_integration_test_may_start_what_it_needs": "PASSED",
        }
    ), said
    assert "a fast test started a Kafka broker: mark it integration" in said, said
    assert "a fast test started a server on a port" in said, said
    assert "a fast test started 'alertsieve filter'" in said, said


LEAVERS = '''
import os
import time
from pathlib import Path


def _job(processes, name):
    """A stand-in for a job: a shell and the child it waits for, their process ids written down."""
    job = processes(["sh", "-c", f"sleep 600 & echo $! > {name}.child; wait"], cwd=os.environ["PIDS"])
    Path(os.environ["PIDS"], f"{name}.job").write_text(str(job.pid))
    child, deadline = Path(os.environ["PIDS"], f"{name}.child"), time.monotonic() + 30
    while not (child.exists() and child.read_text().endswith("\\n")):
        assert time.monotonic() < deadline, "the job's child never started"
        time.sleep(0.05)


def test_fails_while_its_job_runs(processes):
    _job(processes, "failing")
    assert False, "failed while its job ran"


def test_hangs_while_its_job_runs(processes):
    _job(processes, "hanging")
    time.sleep(120)
'''


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie is a process that has ended, not yet reaped


def test_a_test_that_fails_or_hangs_is_stopped_and_leaves_no_process(
    tmp_path, request, monkeypatch
):
    assert float(request.config.getini("timeout")) > 0, (
        "the suite sets pytest-timeout for every test"
    )
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("PIDS", str(pids))
    said, summary = _pytest(tmp_path, LEAVERS, "-o", "timeout=5")  # the suite's timeout, shortened
    assert summary == {
        "test_fails_while_its_job_runs": "FAILED",
        "test_hangs_while_its_job_runs": "FAILED",
    }, said
    assert "Timeout (>5.0s)" in said, said
    written = {p.name: int(p.read_text()) for p in pids.iterdir()}
    assert set(written) == {"failing.job", "failing.child", "hanging.job", "hanging.child"}, written
    assert [name for name, pid in written.items() if _running(pid)] == [], said
