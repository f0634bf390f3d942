"""One way to say how to reach a secured Kafka, for both of our clients: librdkafka (producers,
admin, baselines) and the Java client inside Spark's Kafka source and sink spell the same
settings differently (``sasl.mechanisms`` vs ``sasl.mechanism``, username and password vs a JAAS
line, a CA file vs a truststore). Users write the settings once, librdkafka-style:

    security.protocol=SASL_SSL  sasl.mechanism=SCRAM-SHA-512  sasl.username=alice
    sasl.password=env:KAFKA_PASSWORD  ssl.ca.location=/etc/kafka/ca.pem

and each client gets its own spelling. Any other key passes through unchanged to both.
"""

from __future__ import annotations

from collections.abc import Mapping

from alertsieve.errors import AlertsieveError

SECURITY_KEYS = {
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
}
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class SecurityConfigError(AlertsieveError, ValueError):
    """Kafka security settings that cannot work together, with the fix."""


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parts(conf: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    security = {k: str(v) for k, v in conf.items() if k in SECURITY_KEYS}
    rest = {k: str(v) for k, v in conf.items() if k not in SECURITY_KEYS}
    if "sasl.mechanisms" in security:
        security.setdefault("sasl.mechanism", security.pop("sasl.mechanisms"))
    protocol = security.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise SecurityConfigError(
            f"security.protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}"
        )
    if protocol.startswith("SASL") and not (
        security.get("sasl.username") and security.get("sasl.password")
    ):
        raise SecurityConfigError(
            f"security.protocol={protocol} needs sasl.username and sasl.password"
            " (e.g. sasl.password=env:KAFKA_PASSWORD)"
        )
    return security, rest


def librdkafka_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Settings for confluent-kafka / librdkafka clients."""
    security, rest = _parts(conf)
    out = dict(rest)
    if "security.protocol" in security:
        out["security.protocol"] = security["security.protocol"]
    if "sasl.mechanism" in security:
        out["sasl.mechanisms"] = security["sasl.mechanism"]
    for key in ("sasl.username", "sasl.password", "ssl.ca.location"):
        if key in security:
            out[key] = security[key]
    return out


def java_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Settings for the Java Kafka client (Spark's source and sink, without the ``kafka.``
    prefix): a JAAS line for SASL, a PEM truststore for the CA."""
    security, rest = _parts(conf)
    out = dict(rest)
    if "security.protocol" in security:
        out["security.protocol"] = security["security.protocol"].upper()
    mechanism = security.get("sasl.mechanism", "")
    if mechanism:
        out["sasl.mechanism"] = mechanism
    if "sasl.username" in security:
        module = PLAIN_LOGIN if mechanism.upper() == "PLAIN" else SCRAM_LOGIN
        out["sasl.jaas.config"] = (
            f"{module} required username={_jaas_quote(security['sasl.username'])}"
            f" password={_jaas_quote(security['sasl.password'])};"
        )
    if "ssl.ca.location" in security:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = security["ssl.ca.location"]
    return out
