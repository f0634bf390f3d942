"""One Kafka broker and one SparkSession for the whole test session; unique topics per test."""

from __future__ import annotations

import uuid

import pytest

from alertsieve import kafka_local


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("kafka")
    cluster = kafka_local.start(data_dir)
    yield cluster
    kafka_local.stop(data_dir)


@pytest.fixture(scope="session")
def spark(kafka):
    """Depends on ``kafka`` only so that it stops first: Spark's cached Kafka producers would
    otherwise complain about a broker that went away."""
    from alertsieve.spark import get_session

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
