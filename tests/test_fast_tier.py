"""The fast tier's guard, checked from outside: a pytest run of its own, with this suite's conftest,
over tests that break the promise in each way it can be broken (issue 24, item 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BREAKERS = '''
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
'''


def test_a_fast_test_that_starts_a_broker_a_server_or_a_job_fails_saying_so(tmp_path):
    (tmp_path / "conftest.py").write_text((Path(__file__).with_name("conftest.py")).read_text())
    (tmp_path / "test_breakers.py").write_text(BREAKERS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    said = done.stdout + done.stderr
    summary = {line.split(" ", 2)[1].split("::")[-1]: line.split(" ", 1)[0]
               for line in said.splitlines() if line.startswith(("PASSED ", "FAILED ", "ERROR "))}  # fmt: skip
    assert summary == {
        "test_a_module_fixture_starts_a_broker": "ERROR",  # refused while its module's fixture is set up
        "test_a_server_on_a_port": "FAILED",
        "test_a_job_process": "FAILED",
        "test_a_plain_process": "PASSED",
        "test_an_integration_test_may_start_what_it_needs": "PASSED",
    }, said
    assert "a fast test started a Kafka broker: mark it integration" in said, said
    assert "a fast test started a server on a port" in said, said
    assert "a fast test started 'alertsieve filter'" in said, said
