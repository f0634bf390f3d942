"""One Kafka broker and one SparkSession for the whole test session; unique topics per test.

Tiers: a test that uses the broker (directly or through a fixture) is marked ``integration`` here
(tests that start clusters or whole processes say so themselves), so
``make test-fast`` (``-m "not integration and not slow"``) runs the pure logic and Spark on static
DataFrames without starting a broker; ``make test`` runs everything."""

from __future__ import annotations

import uuid

import pytest

from alertsieve.kafka import embedded


def pytest_collection_modifyitems(items):
    for item in items:
        if "kafka" in item.fixturenames:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("kafka")
    cluster = embedded.start(data_dir)
    yield cluster
    # Spark first: its cached Kafka producers would otherwise complain about a broker gone away.
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
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
def topic_name(request) -> str:
    """A topic name no other test (or earlier run against the same broker) uses."""
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def quick_results(kafka, tmp_path_factory):
    """The --quick scale of two experiment files, run once against the session's broker: the
    runner's tests and notebook 04 both read it. Returns (results folder, experiments, results)."""
    from pathlib import Path

    from alertsieve.bench.experiments import load_experiment
    from alertsieve.bench.runner import run_experiments

    folder = Path(__file__).resolve().parents[1] / "conf" / "experiments"
    experiments = [load_experiment(folder / f"{n}.yaml", quick=True) for n in QUICK_EXPERIMENTS]
    root = tmp_path_factory.mktemp("results")
    written = run_experiments(experiments, root, kafka.bootstrap_servers, progress=False)
    return root, experiments, written


#: Run at the quick scale in the suite (the others differ only in which setting they vary).
QUICK_EXPERIMENTS = ("consumers", "rate")


@pytest.fixture(scope="session")
def field_catalog(tmp_path_factory):
    """A catalog folder with the catalog ``field`` around the stream tests' visits (tests/field_catalog.py)."""
    from field_catalog import write_catalog

    return write_catalog(tmp_path_factory.mktemp("catalogs"))
