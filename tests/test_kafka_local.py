"""The embedded Kafka cluster: start, stop, restart with data kept, clear errors. (Clusters
started by different processes, and ``kafka start/status/stop`` with several brokers: test_faults'
three-broker cluster, started by the command beside the session's broker.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from confluent_kafka import Producer
from kafka_helpers import consume_all

from alertsieve.kafka import embedded
from alertsieve.kafka.topics import create_topic, end_offsets
from alertsieve.spark.jars import JarFetchError, fetch

CLI = [sys.executable, "-m", "alertsieve.cli"]


@pytest.mark.integration
def test_restart_keeps_topics_messages_and_ports(tmp_path):
    cluster = embedded.start(tmp_path / "k")
    try:
        first_bootstrap = cluster.bootstrap_servers
        create_topic(first_bootstrap, "kept", partitions=2)
        producer = Producer({"bootstrap.servers": first_bootstrap, "acks": "all"})
        for i in range(50):
            producer.produce("kept", value=f"m{i}".encode())
        assert producer.flush(30) == 0
        del producer
        stopped = embedded.stop(tmp_path / "k")
        assert stopped == [cluster.nodes[0].pid]
        assert not embedded.pid_alive(stopped[0])
        assert embedded.status(tmp_path / "k")["running"] is False

        again = embedded.start(tmp_path / "k")
        assert again.bootstrap_servers == first_bootstrap
        assert again.cluster_id == cluster.cluster_id
        assert sum(end_offsets(first_bootstrap, "kept").values()) == 50
        assert sorted(m.value().decode() for m in consume_all(first_bootstrap, "kept")) == sorted(
            f"m{i}" for i in range(50)
        )
    finally:
        embedded.stop(tmp_path / "k")


@pytest.mark.integration
def test_taken_port_is_named_in_the_error(tmp_path):
    with socket.socket() as s:
        s.bind((embedded.HOST, 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(
            embedded.KafkaLocalError, match=f"port {port} on 127.0.0.1 is already in use"
        ):
            embedded.start(tmp_path / "k", port=port)


@pytest.mark.integration  # runs `alertsieve kafka` in a process of its own
def test_missing_java_says_how_to_install_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)  # the venv's python, but no java
    out = subprocess.run(
        [*CLI, "kafka", "start", "--data-dir", str(tmp_path / "k")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 2
    assert "Java not found" in out.stderr and "JAVA_HOME" in out.stderr


def test_unfetchable_jars_name_the_artifact(tmp_path, monkeypatch):
    monkeypatch.setenv("ALERTSIEVE_CACHE", str(tmp_path))
    with pytest.raises(JarFetchError, match="could not fetch org.alertsieve.missing:nothing:0.0.1"):
        fetch(("org.alertsieve.missing:nothing:0.0.1",), "missing")


@pytest.mark.integration  # runs `alertsieve kafka` in a process of its own
def test_status_of_an_empty_directory(tmp_path):
    out = subprocess.run(
        [*CLI, "kafka", "status", "--data-dir", str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 1
    assert json.loads(out.stdout) == {"data_dir": str(tmp_path), "exists": False, "running": False}
