"""A SASL/SCRAM (+TLS) listener for the embedded brokers, so that secured settings are tested
against a real secured Kafka: a self-signed certificate for 127.0.0.1 made with the JDK's
keytool, one SCRAM-SHA-512 user created when the storage is formatted (KRaft keeps SCRAM
credentials in its metadata log), and the client settings to reach it.

A cluster with that listener also has Kafka's own authorizer (``StandardAuthorizer``), as a
secured production cluster does: a principal may do only what ACLs allow it (no ACL, no access).
The plaintext listener's principal (``User:ANONYMOUS``, which the controllers use too) and the
listener's own user are super users, so what runs on the plaintext listener is not changed by it;
other SCRAM users (``AdminClient.alter_user_scram_credentials``) get what ACLs grant."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from alertsieve.localhost import HOST

MECHANISM = "SCRAM-SHA-512"
LISTENER = "SECURE"


@dataclass
class SecureListener:
    username: str
    password: str
    tls: bool = True
    keystore_password: str = ""

    @property
    def protocol(self) -> str:
        return "SASL_SSL" if self.tls else "SASL_PLAINTEXT"

    def __repr__(self) -> str:  # never print the secrets
        return f"SecureListener(username={self.username!r}, protocol={self.protocol})"


def tls_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "tls"


def ca_file(data_dir: Path) -> Path:
    """The certificate clients trust (self-signed: it is its own CA)."""
    return tls_dir(data_dir) / "ca.pem"


def make_tls(data_dir: Path, java: str, secure: SecureListener) -> None:
    """A key pair and self-signed certificate for 127.0.0.1/localhost (once per cluster)."""
    folder = tls_dir(data_dir)
    keystore = folder / "broker.p12"
    if keystore.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    secure.keystore_password = secure.keystore_password or secrets.token_hex(16)
    keytool = str(Path(java).parent / "keytool")
    common = [
        "-keystore",
        str(keystore),
        "-storetype",
        "PKCS12",
        "-storepass",
        secure.keystore_password,
        "-alias",
        "broker",
    ]
    for args in (
        [
            "-genkeypair",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            "30",
            "-dname",
            "CN=localhost",
            "-ext",
            f"SAN=ip:{HOST},dns:localhost",
            "-keypass",
            secure.keystore_password,
        ],
        ["-exportcert", "-rfc", "-file", str(ca_file(data_dir))],
    ):
        proc = subprocess.run([keytool, *args, *common], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"keytool {args[0]} failed: {proc.stdout}{proc.stderr}")


def server_properties(data_dir: Path, secure: SecureListener) -> dict[str, str]:
    """What a broker adds for the secured listener (the listener itself is in the caller's
    ``listeners``)."""
    name = LISTENER.lower()
    props = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": f"User:ANONYMOUS;User:{secure.username}",
        "sasl.enabled.mechanisms": MECHANISM,
        f"listener.name.{name}.{MECHANISM.lower()}.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
    }
    if secure.tls:
        props |= {
            "ssl.keystore.location": str(tls_dir(data_dir) / "broker.p12"),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": secure.keystore_password,
            "ssl.key.password": secure.keystore_password,
        }
    return props


def format_arguments(secure: SecureListener) -> list[str]:
    """The storage tool's arguments that create the SCRAM user."""
    return ["--add-scram", f"{MECHANISM}=[name={secure.username},password={secure.password}]"]


def client_conf(data_dir: Path, secure: SecureListener) -> dict[str, str]:
    """Settings for our clients (alertsieve.kafka.client_security spelling) to reach the listener."""
    conf = {
        "security.protocol": secure.protocol,
        "sasl.mechanism": MECHANISM,
        "sasl.username": secure.username,
        "sasl.password": secure.password,
    }
    if secure.tls:
        conf["ssl.ca.location"] = str(ca_file(data_dir))
    return conf
