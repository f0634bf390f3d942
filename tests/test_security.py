"""SASL/SCRAM over TLS against a real secured broker: the same settings, written once, reach the
producers (librdkafka) and Spark's Kafka source and sink (the Java client); a wrong password is
refused; and the password never shows up in what the job prints, logs or writes.

The broker runs Kafka's StandardAuthorizer (no ACL, no access): a filter with ``readers`` gets a
private topic. Three more SCRAM users: bob, listed, reads it with ``alertsieve listen``; carol,
unlisted, gets a one-line "not authorized" and exit 2; dave, a job principal that may not manage
ACLs, is stopped at start-up naming the permission."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from job_helpers import assert_outputs, batches, expected_matches, job_command
from kafka_helpers import SCRAM_PASSWORD

from alertsieve.cli import main
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.acls import AclError
from alertsieve.kafka.client_security import SecurityConfigError, java_conf, librdkafka_conf
from alertsieve.produce.producer import ProduceConfig, ProduceError, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job


def test_one_spelling_becomes_each_clients_own():
    conf = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 'p"w',
        "ssl.ca.location": "/ca.pem",
        "linger.ms": "5",
    }
    assert librdkafka_conf(conf) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 'p"w',
        "ssl.ca.location": "/ca.pem",
        "linger.ms": "5",
    }
    assert java_conf(conf) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="alice" password="p\\"w";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
        "linger.ms": "5",
    }


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"security.protocol": "SASL_TLS"}, "security.protocol must be one of PLAINTEXT, SSL"),
        (
            {"security.protocol": "SASL_SSL", "sasl.username": "a"},
            "needs sasl.username and sasl.password",
        ),
    ],
)
def test_impossible_security_settings_are_refused(conf, message):
    with pytest.raises(SecurityConfigError, match=message):
        java_conf(conf)


@pytest.mark.slow
@pytest.mark.integration  # the session broker's TLS listener
def test_scram_over_tls_end_to_end_and_the_password_stays_secret(
    kafka, spark, topic_name, tmp_path, capsys
):
    bootstrap = kafka.secure_bootstrap_servers
    conf = kafka.client_conf()
    schema_dir = str(tmp_path / "schemas")
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            alerts_per_visit=200,
            interval_s=0,
            stamp_size=0,
            seed=61,
            progress=False,
            schema_dir=schema_dir,
            kafka_conf=conf,
        )
    )
    assert summary.ok and summary.acked == 200

    with pytest.raises(ProduceError, match="cannot reach Kafka"):
        produce(
            ProduceConfig(
                bootstrap=bootstrap,
                topic=topic_name,
                alerts_per_visit=5,
                interval_s=0,
                stamp_size=0,
                progress=False,
                schema_dir=schema_dir,
                kafka_conf={**conf, "sasl.password": "wrong"},
            )
        )

    # The operator's ACLs: what the others may do besides what the job grants (readers).
    users = _users(kafka.bootstrap_servers, topic_name)
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({"filter_outputs": {"bright": {"readers": ["User:bob"]}}}))
    flags = ["--config", str(config)]
    for key, value in conf.items():
        value = "env:ALERTSIEVE_TEST_KAFKA_SCRAM_PASSWORD" if key == "sasl.password" else value
        flags += ["--kafka-conf", f"{key}={value}"]
    job = subprocess.run(
        job_command(bootstrap, topic_name, tmp_path, "--available-now", *flags),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ALERTSIEVE_TEST_KAFKA_SCRAM_PASSWORD": SCRAM_PASSWORD},
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert sum(b["input_rows"] for b in batches(tmp_path)) == 200

    # Checks read through the plaintext listener of the same brokers.
    total, expected = expected_matches(kafka.bootstrap_servers, topic_name, schema_dir)
    assert total == 200
    assert_outputs(spark, kafka.bootstrap_servers, topic_name, tmp_path, expected)

    written = [job.stdout, job.stderr] + [
        p.read_text(errors="replace")
        for p in Path(tmp_path).rglob("*")
        if p.is_file()
        and p.suffix in ("", ".jsonl", ".json", ".log", ".crc")
        and "delta" not in p.parts
    ]
    assert "***" in job.stdout + job.stderr  # the settings line shows the password masked
    assert not [w for w in written if SCRAM_PASSWORD in w]

    # bright's topic is private to bob (and the job); first_seen's is as the cluster has it.
    private = f"{topic_name}-bright"
    listen = ["listen", "--bootstrap", bootstrap, "--topic", private, "--from-beginning"]
    listen += ["--until-end", "--schema-dir", schema_dir, "--to", str(tmp_path / "bob.jsonl")]
    assert main([*listen, *_conf_flags(conf, *users["bob"])]) == 0
    rows = (tmp_path / "bob.jsonl").read_text().splitlines()
    got = {str(json.loads(row)["diaSource"]["diaSourceId"]) for row in rows}
    assert got == expected["bright"]
    capsys.readouterr()
    assert main([*listen, *_conf_flags(conf, *users["carol"])]) == 2
    assert capsys.readouterr().err.strip() == (
        f"alertsieve listen: error: not authorized to read {private}: its filter's readers do not"
        " name your principal (ask the job's operator), or check --kafka-conf's user"
    )

    # A job whose principal may not manage ACLs stops before its first batch, naming the permission.
    dave = {**conf, "sasl.username": users["dave"][0], "sasl.password": users["dave"][1]}
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        kafka_conf=dave,
        available_now=True,
        output_prefix=f"{topic_name}-dave-",
        sinks=["kafka"],
        discover_filters=False,
        code_filters=[AlertFilter(name="bright", sql="diaSource.snr > 50", readers=["User:bob"])],
        checkpoint=str(tmp_path / "dave"),
        metrics_path=None,
        schema_dir=schema_dir,
    )
    refused = (
        r"principal \(User:dave\) may not create or delete ACLs \(Kafka: CLUSTER_AUTHORIZATION"
    )
    with pytest.raises(AclError, match=refused):
        run_job(cfg, spark=spark)


def _users(bootstrap: str, topic: str) -> dict[str, tuple[str, str]]:
    """bob, carol and dave as SCRAM users, with the ACLs an operator gives them: readers may use
    consumer groups; dave, as a job, may use the topics and groups, create topics and write
    idempotently, but not manage ACLs (no ALTER or DESCRIBE on the cluster)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    users = {name: (name, f"{name}-pass-{topic[-8:]}") for name in ("bob", "carol", "dave")}
    admin = AdminClient({"bootstrap.servers": bootstrap})  # the plaintext listener: a super user
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    upserts = [UserScramCredentialUpsertion(u, info, p.encode()) for u, p in users.values()]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result()

    def allow(principal, restype, name, pattern, operation):
        return AclBinding(
            restype, name, pattern, f"User:{principal}", "*", operation, AclPermissionType.ALLOW
        )

    lit, prefix = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    acls = [allow(u, ResourceType.GROUP, "*", lit, AclOperation.READ) for u in users]
    acls += [
        allow("dave", ResourceType.TOPIC, topic, prefix, AclOperation.ALL),
        allow("dave", ResourceType.BROKER, "kafka-cluster", lit, AclOperation.CREATE),
        allow("dave", ResourceType.BROKER, "kafka-cluster", lit, AclOperation.IDEMPOTENT_WRITE),
    ]
    for future in admin.create_acls(acls).values():
        future.result()
    return users


def _conf_flags(conf: dict, user: str, password: str) -> list[str]:
    flags = []
    for key, value in {**conf, "sasl.username": user, "sasl.password": password}.items():
        flags += ["--kafka-conf", f"{key}={value}"]
    return flags
