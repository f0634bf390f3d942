"""An embedded Kafka cluster (KRaft, combined broker+controller nodes) run natively from jars.

No Docker and no Kafka distribution: the broker jars come from Maven Central (``alertsieve.spark.jars``)
and each node is a plain ``java kafka.Kafka server.properties`` process. Everything a cluster
owns lives in one data directory, so two clusters started by different processes never collide
as long as their directories differ, and a restart from the same directory keeps topics, offsets
and the same ports (clients' bootstrap addresses stay valid).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from alertsieve.errors import AlertsieveError
from alertsieve.kafka import broker_security
from alertsieve.kafka.broker_security import SecureListener
from alertsieve.localhost import HOST, free_port, pid_alive, port_free
from alertsieve.paths import cache_dir
from alertsieve.spark.jars import JarFetchError, java_executable, kafka_broker_jars

STATE_FILE = "cluster.json"
MIN_JAVA = 17


class KafkaLocalError(AlertsieveError, RuntimeError):
    """A problem starting or stopping the embedded cluster, worded for the person at the shell."""


@dataclass
class Node:
    node_id: int
    port: int
    controller_port: int
    pid: int | None = None
    secure_port: int | None = None  # the SASL/SCRAM (+TLS) listener, if the cluster has one

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass
class Cluster:
    data_dir: Path
    cluster_id: str
    nodes: list[Node] = field(default_factory=list)
    secure: SecureListener | None = None

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes)

    @property
    def secure_bootstrap_servers(self) -> str:
        """The SASL/SCRAM (+TLS) listeners; clients need ``client_conf()`` with them."""
        if self.secure is None:
            raise KafkaLocalError(f"the cluster in {self.data_dir} has no secured listener")
        return ",".join(f"{HOST}:{n.secure_port}" for n in self.nodes)

    def client_conf(self) -> dict[str, str]:
        """Settings to reach ``secure_bootstrap_servers``."""
        if self.secure is None:
            raise KafkaLocalError(f"the cluster in {self.data_dir} has no secured listener")
        return broker_security.client_conf(self.data_dir, self.secure)

    @property
    def replication_factor(self) -> int:
        return min(3, len(self.nodes))

    def node_dir(self, node: Node) -> Path:
        return self.data_dir / f"node-{node.node_id}"

    def save(self) -> None:
        state = {
            "cluster_id": self.cluster_id,
            "nodes": [asdict(n) for n in self.nodes],
            "secure": asdict(self.secure) if self.secure else None,
        }
        (self.data_dir / STATE_FILE).write_text(json.dumps(state, indent=2))

    @classmethod
    def load(cls, data_dir: Path) -> Cluster | None:
        path = Path(data_dir) / STATE_FILE
        if not path.exists():
            return None
        state = json.loads(path.read_text())
        secure = SecureListener(**state["secure"]) if state.get("secure") else None
        return cls(Path(data_dir), state["cluster_id"], [Node(**n) for n in state["nodes"]], secure)


def default_data_dir() -> Path:
    return cache_dir() / "kafka"


def _check_java() -> str:
    try:
        java = java_executable()
    except JarFetchError as e:
        raise KafkaLocalError(str(e)) from None
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    try:
        version = out.split('"')[1]
        major = int(
            version.split(".")[0] if not version.startswith("1.") else version.split(".")[1]
        )
    except (IndexError, ValueError):
        return java
    if major < MIN_JAVA:
        raise KafkaLocalError(
            f"Kafka 4 needs Java {MIN_JAVA}+, but {java} is Java {version}: install OpenJDK 17"
            " (apt-get install openjdk-17-jre-headless) or point JAVA_HOME at one"
        )
    return java


def _server_properties(cluster: Cluster, node: Node) -> str:
    voters = ",".join(f"{n.node_id}@{HOST}:{n.controller_port}" for n in cluster.nodes)
    rf = cluster.replication_factor
    min_isr = 2 if rf >= 3 else 1
    listeners = f"PLAINTEXT://{HOST}:{node.port}"
    protocols = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    if cluster.secure:
        listeners += f",{broker_security.LISTENER}://{HOST}:{node.secure_port}"
        protocols += f",{broker_security.LISTENER}:{cluster.secure.protocol}"
    props = {
        "process.roles": "broker,controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": f"{listeners},CONTROLLER://{HOST}:{node.controller_port}",
        "advertised.listeners": listeners,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": protocols,
        "log.dirs": cluster.node_dir(node) / "data",
        "num.partitions": 1,
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": 0,
        # Rubin alerts are ~80-140 KB; leave generous room for outliers (and the 10 MB bad-input case).
        "message.max.bytes": 16 * 1024 * 1024,
        "replica.fetch.max.bytes": 16 * 1024 * 1024,
        "log.retention.hours": 24,
        # How often retention is applied (Kafka's default: 5 minutes): a topic given a short
        # retention.ms loses its closed segments within a second, as a test of losses needs.
        "log.retention.check.interval.ms": 1000,
        "auto.create.topics.enable": "false",
    }
    if cluster.secure:
        props |= broker_security.server_properties(cluster.data_dir, cluster.secure)
    return "".join(f"{k}={v}\n" for k, v in props.items())


LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
"""


def _new_cluster_id() -> str:
    """A base64 UUID as Kafka makes them, never starting with '-' (the storage tool would read
    it as an option, as Kafka's own Uuid.randomUuid also avoids)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _plan(data_dir: Path, brokers: int, port: int | None, secure: SecureListener | None) -> Cluster:
    taken: set[int] = set()
    nodes = []
    for i in range(brokers):
        if port is not None:
            p = port + i
            if not port_free(p):
                raise KafkaLocalError(
                    f"port {p} on {HOST} is already in use: choose another with --port,"
                    " or omit --port to pick a free one"
                )
            taken.add(p)
        else:
            p = free_port(taken)
        node = Node(node_id=i + 1, port=p, controller_port=free_port(taken))
        if secure is not None:
            node.secure_port = free_port(taken)
        nodes.append(node)
    return Cluster(data_dir, _new_cluster_id(), nodes, secure)


def _format(cluster: Cluster, node: Node, java: str, classpath: str) -> None:
    props = cluster.node_dir(node) / "server.properties"
    proc = subprocess.run(
        [
            java,
            "-cp",
            classpath,
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cluster.cluster_id,
            "-c",
            str(props),
            "--ignore-formatted",
            *(broker_security.format_arguments(cluster.secure) if cluster.secure else []),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise KafkaLocalError(f"formatting {props.parent} failed:\n{proc.stdout}{proc.stderr}")


def _launch(cluster: Cluster, node: Node, java: str, classpath: str, heap: str) -> int:
    ndir = cluster.node_dir(node)
    (ndir / "logs").mkdir(parents=True, exist_ok=True)
    (ndir / "log4j2.properties").write_text(LOG4J2)
    cmd = [
        java,
        f"-Xmx{heap}",
        f"-Xms{heap}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={ndir / 'logs'}",
        f"-Dlog4j2.configurationFile={ndir / 'log4j2.properties'}",
        "-cp",
        classpath,
        "kafka.Kafka",
        str(ndir / "server.properties"),
    ]
    with open(ndir / "logs" / "stdout.log", "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # outlives the CLI that started it; Ctrl-C in a shell won't kill it
        )
    return proc.pid


def _wait_ready(cluster: Cluster, timeout: float) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    last = "no answer"
    while time.monotonic() < deadline:
        for node in cluster.nodes:
            if not pid_alive(node.pid):
                log = cluster.node_dir(node) / "logs" / "stdout.log"
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                raise KafkaLocalError(
                    f"broker {node.node_id} exited during start-up ({log}):\n{tail}"
                )
        try:
            md = admin.list_topics(timeout=2)
            if len(md.brokers) == len(cluster.nodes):
                return
            last = f"{len(md.brokers)} of {len(cluster.nodes)} brokers registered"
        except Exception as e:  # noqa: BLE001 - the broker is still coming up; report the last one
            last = str(e)
        time.sleep(0.2)
    raise KafkaLocalError(
        f"Kafka did not become ready within {timeout:.0f}s ({last}); see {cluster.data_dir}/node-*/logs"
    )


def start(
    data_dir: Path | str | None = None,
    brokers: int = 1,
    port: int | None = None,
    heap: str = "512m",
    timeout: float = 90.0,
    secure: SecureListener | None = None,
) -> Cluster:
    """Start (or restart) the cluster kept in ``data_dir`` and wait until every broker answers.

    A restart reuses the cluster id, the data and the ports recorded in the directory.
    ``secure`` adds a SASL/SCRAM listener (TLS unless ``secure.tls`` is False) with one user.
    """
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    java = _check_java()
    try:
        classpath = kafka_broker_jars().classpath
    except JarFetchError as e:
        raise KafkaLocalError(str(e)) from None
    cluster = Cluster.load(data_dir)
    if cluster and any(pid_alive(n.pid) for n in cluster.nodes):
        raise KafkaLocalError(
            f"a Kafka cluster is already running from {data_dir} at {cluster.bootstrap_servers}:"
            " stop it with `alertsieve kafka stop`, or use another --data-dir"
        )
    if cluster and len(cluster.nodes) != brokers:
        raise KafkaLocalError(
            f"{data_dir} holds a {len(cluster.nodes)}-broker cluster, not {brokers}: start it with"
            f" --brokers {len(cluster.nodes)}, or use another --data-dir (or `alertsieve kafka"
            " stop --purge` to delete it)"
        )
    if cluster is None:
        data_dir.mkdir(parents=True, exist_ok=True)
        cluster = _plan(data_dir, brokers, port, secure)
        if secure is not None and secure.tls:
            broker_security.make_tls(data_dir, java, secure)
    else:
        for n in cluster.nodes:
            for p in (n.port, n.controller_port):
                if not port_free(p):
                    raise KafkaLocalError(
                        f"port {p}, recorded for broker {n.node_id} in {data_dir}, is taken by"
                        " another process: free it, or use another --data-dir"
                    )
    for node in cluster.nodes:
        cluster.node_dir(node).mkdir(parents=True, exist_ok=True)
        (cluster.node_dir(node) / "server.properties").write_text(_server_properties(cluster, node))
        _format(cluster, node, java, classpath)
    try:
        for node in cluster.nodes:
            node.pid = _launch(cluster, node, java, classpath, heap)
        cluster.save()
        _wait_ready(cluster, timeout)
    except BaseException:
        stop(data_dir)
        raise
    return cluster


def stop(data_dir: Path | str | None = None, timeout: float = 30.0) -> list[int]:
    """Stop every node (SIGTERM, then SIGKILL after ``timeout``); returns the pids stopped."""
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    cluster = Cluster.load(data_dir)
    if cluster is None:
        return []
    running = [n for n in cluster.nodes if pid_alive(n.pid)]
    for n in running:
        os.kill(n.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(pid_alive(n.pid) for n in running) and time.monotonic() < deadline:
        time.sleep(0.1)
    for n in running:
        if pid_alive(n.pid):
            os.kill(n.pid, signal.SIGKILL)
    for n in running:
        _reap(n.pid)
    stopped = [n.pid for n in running]
    for n in cluster.nodes:
        n.pid = None
    cluster.save()
    return stopped


def kill_node(data_dir: Path | str, node_id: int, sig: int = signal.SIGKILL) -> int:
    """Kill one broker of a running cluster (the fault tests' broker crash); returns its pid."""
    cluster = Cluster.load(Path(data_dir))
    node = next((n for n in cluster.nodes if n.node_id == node_id), None) if cluster else None
    if node is None or not pid_alive(node.pid):
        raise KafkaLocalError(f"no running broker {node_id} in {data_dir}")
    os.kill(node.pid, sig)
    deadline = time.monotonic() + 30
    while pid_alive(node.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    _reap(node.pid)
    pid, node.pid = node.pid, None
    cluster.save()
    return pid


def restart_node(
    data_dir: Path | str, node_id: int, heap: str = "512m", timeout: float = 90.0
) -> Cluster:
    """Bring a stopped broker back with its data, ports and settings; wait until the whole
    cluster answers again."""
    cluster = Cluster.load(Path(data_dir))
    node = next((n for n in cluster.nodes if n.node_id == node_id), None) if cluster else None
    if node is None:
        raise KafkaLocalError(f"no broker {node_id} in {data_dir}")
    if pid_alive(node.pid):
        raise KafkaLocalError(f"broker {node_id} in {data_dir} is running (pid {node.pid})")
    node.pid = _launch(cluster, node, _check_java(), kafka_broker_jars().classpath, heap)
    cluster.save()
    _wait_ready(cluster, timeout)
    return cluster


def _reap(pid: int) -> None:
    """Collect the exit status if the broker is our own child, so it does not linger as a zombie.
    Blocking is safe: every node passed here has exited or was just sent SIGKILL."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # not ours (started by another command): its parent reaps it
        pass


def status(data_dir: Path | str | None = None) -> dict:
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    cluster = Cluster.load(data_dir)
    if cluster is None:
        return {"data_dir": str(data_dir), "exists": False, "running": False}
    nodes = [{**asdict(n), "alive": pid_alive(n.pid)} for n in cluster.nodes]
    return {
        "data_dir": str(data_dir),
        "exists": True,
        "running": all(n["alive"] for n in nodes),
        "bootstrap_servers": cluster.bootstrap_servers,
        "cluster_id": cluster.cluster_id,
        "nodes": nodes,
    }


def purge(data_dir: Path | str | None = None) -> None:
    """Delete a stopped cluster's directory (topics, offsets, logs)."""
    import shutil

    data_dir = Path(data_dir) if data_dir else default_data_dir()
    cluster = Cluster.load(data_dir)
    if cluster and any(pid_alive(n.pid) for n in cluster.nodes):
        raise KafkaLocalError(f"the cluster in {data_dir} is still running: stop it first")
    shutil.rmtree(data_dir, ignore_errors=True)
