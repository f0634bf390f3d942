"""SASL/SCRAM over TLS against a real secured broker: the same settings, written once, reach the
producers (librdkafka) and Spark's Kafka source and sink (the Java client); a wrong password is
refused; and the password never shows up in what the job prints, logs or writes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from job_helpers import assert_outputs, batches, expected_matches, job_command
from kafka_helpers import SCRAM_PASSWORD

from alertsieve.kafka.client_security import SecurityConfigError, java_conf, librdkafka_conf
from alertsieve.produce.producer import ProduceConfig, ProduceError, produce


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
    kafka, spark, topic_name, tmp_path
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

    flags = []
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
