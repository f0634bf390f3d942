"""One Kafka broker for the whole run and one SparkSession per worker; unique topics per test
(tests/README.md: the tiers, what is shared, which tests start a JVM and why).

Tiers: a test that uses the broker (directly or through a fixture) is marked ``integration`` here
(tests that start clusters or whole processes say so themselves), so
``make test-fast`` (``-m "not integration and not slow and not tools"``) runs the pure logic and
Spark on static DataFrames without starting a broker; ``make test`` runs everything, in one
process (``make test WORKERS=2``: two pytest-xdist workers). A fast test that starts a
broker, a cluster, a job's process or a server on a port fails, saying so (``pytest_runtest_call``
and ``fast_tests_start_nothing``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from alertsieve.kafka import embedded

# Commands the tests start run cold, each in its own process: a warm session outliving its test
# would hold a JVM for half an hour (test_warm.py runs the warm path itself).
os.environ["ALERTSIEVE_WARM"] = "off"

#: The run's JVM census (tests/jvm_census.py), from the session's start to its summary.
CENSUS: dict = {}
#: Each test's seconds, its setup (fixtures) and teardown included: what it costs the suite.
SPENT: Counter[str] = Counter()
#: The slowest tests the summary names.
SLOWEST = 10
#: A folder the run's processes share (the controller's and its workers', under ``-n``): where the
#: session's broker lives, so that every worker uses the one broker.
SHARED = "ALERTSIEVE_TESTS_SHARED"


def _worker(config) -> bool:
    """Whether this process is one of pytest-xdist's workers (the controller, or a run without
    ``-n``, is not)."""
    return hasattr(config, "workerinput")


def pytest_configure(config):
    if not _worker(config):
        os.environ[SHARED] = tempfile.mkdtemp(prefix="alertsieve-tests-")


def pytest_sessionstart(session):
    """The census and the clock run where the run is summed up: the controller under ``-n``
    (the workers' tests are reported to it), else the one process. The census counts every JVM
    born on the machine, whichever worker's test started it."""
    if _worker(session.config):
        return
    from jvm_census import JvmCensus

    CENSUS["run"] = JvmCensus()
    CENSUS["started"] = time.monotonic()


def pytest_runtest_logstart(nodeid, location):
    if "run" in CENSUS:
        CENSUS["run"].started(nodeid)  # a JVM born now is this test's (or its fixtures')


def pytest_runtest_logfinish(nodeid, location):
    if "run" in CENSUS:
        CENSUS["run"].finished(nodeid)


def pytest_runtest_logreport(report):
    SPENT[report.nodeid] += report.duration


def pytest_unconfigure(config):
    """The session's broker, stopped by the process that made the shared folder, once every
    worker is done with it (a run without ``-n`` has stopped it already, in its fixture)."""
    if _worker(config) or SHARED not in os.environ:
        return
    shared = Path(os.environ.pop(SHARED))
    if embedded.status(shared / "kafka")["running"]:
        embedded.stop(shared / "kafka")
    shutil.rmtree(shared, ignore_errors=True)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    """What the run cost, where every run shows it: its wall time, the JVMs it started (tests/
    jvm_census.py says why they count) and its slowest tests, so that a submission that makes the
    suite slower is seen to."""
    if "run" not in CENSUS:
        return
    census = CENSUS["run"].stop()
    minutes, seconds = divmod(round(time.monotonic() - CENSUS["started"]), 60)
    terminalreporter.write_sep(
        "=",
        f"suite: {minutes} min {seconds:02d} s of tests; "
        f"Spark JVMs and Kafka brokers started: {census.total}",
    )
    for kind, n in census.kinds.most_common():
        terminalreporter.write_line(f"{n:5d}  {kind}")
    terminalreporter.write_line("every test that started one, most first:")
    for test, n in census.tests.most_common():
        terminalreporter.write_line(f"{n:5d}  {test}")
    terminalreporter.write_line(f"the {SLOWEST} slowest tests (seconds, fixtures included):")
    for test, spent in SPENT.most_common(SLOWEST):
        terminalreporter.write_line(f"{spent:7.1f}  {test}")


#: Modules whose tests run in one worker under ``-n``: they share a session fixture that costs
#: minutes (``quick_results``: a benchmark run and its jobs; ``wheel``: a wheel built and installed).
TOGETHER = {
    "test_experiments": "quick_results",
    "test_notebooks": "quick_results",
    "test_tom": "wheel",
    "test_wheel": "wheel",
}
#: The groups that take longest, longest first (as `make test` measured them): started first, so
#: that under ``-n 2`` neither worker is left with a long one at the end while the other waits.
LONGEST_FIRST = (
    "test_bench_quick",
    "quick_results",
    "test_soak",
    "test_faults",
    "wheel",
    "test_watch",
    "test_stream_job",
    "test_archive",
    "test_many_filters",
    "test_realtime",
    "test_contributed_filters",
    "test_standalone",
    "test_ztf_stream",
    "test_front_door",
    "test_quotas",
    "test_payloads",
    "test_environment",
    "test_warm",
    "test_security",
)


def _group(module: str) -> str:
    """The unit of work a test module belongs to under ``-n``: itself, or its ``TOGETHER`` group."""
    return TOGETHER.get(module, module)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling with a module (or a ``TOGETHER`` group) a unit: its tests
    run whole in one worker, so its fixtures are set up once, and the units go out in the order
    collected (``--no-loadscope-reorder``), the longest first. (xdist's own ``loadgroup`` does
    not group under pytest 9, which ignores the node id it rewrites.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(Path(nodeid.split("::", 1)[0]).stem)

    return ModuleGroups(config, log)


def pytest_collection_modifyitems(config, items):
    """Broker users marked integration; the longest units of work first (``LONGEST_FIRST``)."""
    for item in items:
        if "kafka" in item.fixturenames or "processes" in item.fixturenames:
            item.add_marker(pytest.mark.integration)
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_group(item.path.stem), len(rank)))  # modules stay whole


#: Commands that run a job, a broker, a producer or a subscriber: processes a fast test may not start.
HEAVY_COMMANDS = {"filter", "archive", "kafka", "produce", "listen", "demo", "bench"}


def _fast(item) -> bool:
    return not (item.get_closest_marker("integration") or item.get_closest_marker("slow"))


def _refuse(what: str):
    def refused(*args, **kwargs):
        pytest.fail(
            f"a fast test started {what}: mark it integration (make test-fast starts nothing)"
        )

    return refused


@contextmanager
def _heavy_starts_refused():
    """Brokers, clusters and alertsieve's heavy commands refused while it lasts."""
    from alertsieve.spark import standalone

    popen = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        words = [str(w) for w in args] if isinstance(args, list | tuple) else str(args).split()
        for i, word in enumerate(words[:-1]):
            if (word == "alertsieve.cli" or word.endswith("/alertsieve")) and words[
                i + 1
            ] in HEAVY_COMMANDS:
                _refuse(f"'alertsieve {words[i + 1]}'")()
        popen(self, args, *rest, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedded, "start", _refuse("a Kafka broker"))
        patch.setattr(standalone, "start", _refuse("a Spark cluster"))
        patch.setattr(subprocess.Popen, "__init__", guarded)
        yield


def _guard_fast_tests(item):
    """The fast tier's promise, checked: a test neither ``integration`` nor ``slow`` starts no Kafka
    broker, no Spark cluster and no job (or producer, or subscriber) process. Guarded while its
    fixtures are set up too, module- and session-scoped ones included (set up before any
    function-scoped fixture could guard them), and while it runs."""
    if not _fast(item):
        return (yield)
    with _heavy_starts_refused():
        return (yield)


pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_guard_fast_tests)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_guard_fast_tests)


@pytest.fixture(autouse=True)
def fast_tests_start_nothing(request, monkeypatch):
    """Nor a server on a port. Spark's own session, shared by the whole run, is the one JVM a fast
    test uses, and its Python side listens on a port: servers are refused from the test's own
    fixtures on, not while the session's start."""
    if not _fast(request.node):
        yield
        return
    monkeypatch.setattr(socket.socket, "listen", _refuse("a server on a port"))
    yield


@pytest.fixture(scope="session")
def kafka(request):
    """The session's broker: plaintext for every test, and a SASL/SCRAM-over-TLS listener beside
    it (``cluster.secure_bootstrap_servers``) for the tests of secured settings, so they need no
    broker of their own. Under ``-n`` the first worker to ask starts it in the shared folder (a
    lock keeps the second waiting) and the other uses it: one broker for the run, stopped by the
    controller at its end (``pytest_unconfigure``)."""
    import fcntl

    from kafka_helpers import SCRAM_PASSWORD, SCRAM_USER

    from alertsieve.kafka.broker_security import SecureListener

    shared = Path(os.environ[SHARED])
    data_dir = shared / "kafka"
    with (shared / "kafka.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if embedded.status(data_dir)["running"]:
            cluster = embedded.Cluster.load(data_dir)
        else:
            secure = SecureListener(SCRAM_USER, SCRAM_PASSWORD)
            cluster = embedded.start(data_dir, secure=secure)
    yield cluster
    # Spark first: its cached Kafka producers would otherwise complain about a broker gone away.
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    if not _worker(request.config):
        embedded.stop(data_dir)


@pytest.fixture(scope="session")
def spark():
    from alertsieve.spark.session import get_session

    session = get_session(
        "alertsieve-tests",
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    yield session
    session.stop()


@pytest.fixture
def processes():
    """Starts a command in its own process group (so a kill takes its JVM too) and, pass or fail,
    kills every group the test started at its end: a failed wait never leaves a job on the
    machine's two cores to slow or break the tests after it. Call as ``Popen``."""
    started: list[subprocess.Popen] = []

    def start(args: list[str], **kwargs) -> subprocess.Popen:
        started.append(subprocess.Popen(args, start_new_session=True, **kwargs))
        return started[-1]

    yield start
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


@pytest.fixture
def topic_name(request) -> str:
    """A topic name no other test (or earlier run against the same broker) uses."""
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def quick_results(kafka, tmp_path_factory):
    """The --quick scale of two experiment files, run once against the session's broker by
    `alertsieve bench run`: the runner's tests and notebook 04 both read it. Returns (results
    folder, experiments, the results it wrote, in the order it ran them)."""
    from pathlib import Path

    from job_helpers import run_command

    from alertsieve.bench.experiments.matrix import load_experiment, results_file

    files = [
        Path(__file__).resolve().parents[1] / "conf" / "experiments" / f"{n}.yaml"
        for n in QUICK_EXPERIMENTS
    ]
    experiments = [load_experiment(f, quick=True) for f in files]
    root = tmp_path_factory.mktemp("results")
    done = run_command(
        [
            sys.executable,
            "-m",
            "alertsieve.cli",
            "bench",
            "run",
            *map(str, files),
            "--quick",
            "--results",
            str(root),
            "--bootstrap",
            kafka.bootstrap_servers,
            "-q",
        ],
        timeout=1500,
    )
    summary = json.loads(
        done.stdout
    )  # printed whether or not every point succeeded (exit 1 if not)
    written = [
        json.loads(line)
        for e in experiments
        for line in results_file(root, e.name).read_text().splitlines()
    ]
    assert summary["points_run"] == len(written) and done.returncode == (
        1 if summary["failed"] else 0
    ), done.stderr[-3000:]
    return root, experiments, written


#: Run at the quick scale in the suite (the others differ only in which setting they vary).
QUICK_EXPERIMENTS = ("consumers", "rate")


@pytest.fixture(scope="session")
def field_catalog(tmp_path_factory):
    """A catalog folder with the catalog ``field`` around the stream tests' visits (tests/field_catalog.py)."""
    from field_catalog import write_catalog

    return write_catalog(tmp_path_factory.mktemp("catalogs"))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """A wheel of this checkout (tests/wheels.py), built once for the tests that install it."""
    from wheels import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))
