"""docker/ cannot run here (no Docker engine), so its structure is checked instead: the compose
topology is the one tested natively (3 KRaft brokers with the embedded cluster's durability
settings, a Spark master with 2 workers, JupyterLab), every service built from the one image,
ports on loopback, and the Dockerfile installs what `make setup` installs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from alertsieve.kafka.embedded import Cluster, Node, _server_properties
from alertsieve.spark.jars import KAFKA_VERSION

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
BROKERS = ["kafka-1", "kafka-2", "kafka-3"]


def native_properties() -> dict[str, str]:
    """What `alertsieve kafka start --brokers 3` writes for its first node."""
    cluster = Cluster(Path("/tmp/x"), "id", [Node(i, 9000 + i, 9100 + i) for i in (1, 2, 3)])
    text = _server_properties(cluster, cluster.nodes[0])
    return dict(line.split("=", 1) for line in text.splitlines())


def env_property(env: dict, name: str):
    return env.get("KAFKA_" + name.upper().replace(".", "_"))


def test_services_are_the_documented_topology():
    assert sorted(SERVICES) == sorted(
        [*BROKERS, "spark-master", "spark-worker-1", "spark-worker-2", "jupyterlab"]
    )


@pytest.mark.parametrize(
    "prop",
    [
        "process.roles",
        "default.replication.factor",
        "min.insync.replicas",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "auto.create.topics.enable",
        "message.max.bytes",
        "replica.fetch.max.bytes",
        "log.retention.hours",
        "controller.listener.names",
    ],
)
def test_brokers_have_the_native_clusters_settings(prop):
    native = native_properties()[prop]
    for name in BROKERS:
        assert str(env_property(SERVICES[name]["environment"], prop)) == native, (name, prop)


def test_brokers_form_one_kraft_quorum():
    ids = [SERVICES[b]["environment"]["KAFKA_NODE_ID"] for b in BROKERS]
    assert ids == [1, 2, 3]
    for b in BROKERS:
        env = SERVICES[b]["environment"]
        assert (
            env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"
        )
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", env["CLUSTER_ID"]), "a base64url UUID"
        assert f"INTERNAL://{b}:9092" in env["KAFKA_ADVERTISED_LISTENERS"]
        assert SERVICES[b]["image"] == f"apache/kafka:{KAFKA_VERSION}"


def test_spark_and_lab_run_the_project_image():
    for name in ("spark-master", "spark-worker-1", "spark-worker-2", "jupyterlab"):
        service = SERVICES[name]
        assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
        assert service["image"] == "alertsieve:latest"
    assert SERVICES["spark-master"]["command"][:2] == [
        "spark-class",
        "org.apache.spark.deploy.master.Master",
    ]
    for w in ("spark-worker-1", "spark-worker-2"):
        assert SERVICES[w]["command"][1:3] == [
            "org.apache.spark.deploy.worker.Worker",
            "spark://spark-master:7077",
        ]
    assert (
        SERVICES["jupyterlab"]["environment"]["ALERTSIEVE_SPARK_MASTER"]
        == "spark://spark-master:7077"
    )


def test_published_ports_are_loopback_only():
    for name, service in SERVICES.items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)


def test_dockerfile_installs_what_make_setup_does():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    python = re.search(r"^FROM python:(\d+\.\d+)", text, re.M)
    env_yml = (ROOT / "environment.yml").read_text()
    assert python and f"python={python.group(1)}" in env_yml
    assert "openjdk-17-jre-headless" in text
    assert re.search(r"pip install .*-e '\.\[notebooks\]'", text) and "alertsieve setup" in text
    for source in re.findall(r"^COPY (\S+)", text, re.M):
        assert (ROOT / source).exists(), f"Dockerfile copies {source}, which the repository lacks"
