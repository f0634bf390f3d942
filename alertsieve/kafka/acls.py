"""Private topics: a filter's ``readers`` as Kafka ACLs on its topic, and an annotator's
principal as the only writer of its topic (``writers``).

On a cluster with an authorizer, the topic of a filter that names ``readers`` (principals, e.g.
``User:bob``) gets ACLs letting those principals, and the job's own (its archive reads the topic),
read it: READ and DESCRIBE on the topic's literal name. Where ACLs decide (a secured cluster: no
ACL, no access), nobody else reads it. The job keeps these ACLs equal to the filter's readers
each time it creates its outputs (start-up and every ``--watch`` deployment): missing ones are
created, those of a principal no longer listed deleted. Only READ and DESCRIBE ALLOW bindings on
the job's filters' topics are touched; a filter without readers leaves its topic as the cluster's
own ACLs have it.

Managing ACLs needs the job's principal to hold ALTER (and DESCRIBE) on the cluster; without it
the job stops at start-up naming the principal and the permission.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from alertsieve.errors import AlertsieveError

log = logging.getLogger(__name__)

PRINCIPAL = re.compile(r"^User:\S+$")


class AclError(AlertsieveError, RuntimeError):
    """The job could not make a filter's topic private as its ``readers`` say."""


def job_principal(kafka_conf: Mapping[str, str]) -> str | None:
    """The job's own principal on a SASL listener (``User:<sasl.username>``), if it has one."""
    user = kafka_conf.get("sasl.username")
    return f"User:{user}" if user else None


def _bindings(topic: str, principals: Sequence[str], operations: Sequence) -> set:
    from confluent_kafka.admin import (
        AclBinding,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return {
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            operation,
            AclPermissionType.ALLOW,
        )
        for principal in principals
        for operation in operations
    }


def _refused(error, principal: str | None, doing: str) -> AclError:
    return AclError(
        f"the job's principal ({principal or 'the plaintext listener'}) may not {doing} (Kafka:"
        f" {error}); grant it ALTER and DESCRIBE on the cluster (kafka-acls.sh --add"
        f" --allow-principal {principal or 'User:...'} --operation Alter --operation Describe"
        " --cluster), or drop the filters' readers"
    )


def sync_readers(
    bootstrap: str, readers: Mapping[str, Sequence[str]], kafka_conf: Mapping[str, str]
) -> None:
    """Make each topic of ``readers`` ({topic: principals}) readable by those principals and the
    job's own only; a topic with no principals gets its READ and DESCRIBE bindings removed."""
    from confluent_kafka.admin import AclOperation

    principal = job_principal(kafka_conf)
    grants = {t: [*p, *([principal] if principal and p else [])] for t, p in readers.items()}
    reads = (AclOperation.READ, AclOperation.DESCRIBE)
    _sync(bootstrap, grants, kafka_conf, reads, "filters name readers for", "readers")


def sync_writers(
    bootstrap: str, writers: Mapping[str, Sequence[str]], kafka_conf: Mapping[str, str]
) -> None:
    """Make each topic of ``writers`` ({topic: principals}: an annotator's topic and its
    principal) writable by those principals only: nobody else publishes under its name."""
    from confluent_kafka.admin import AclOperation

    writes = (AclOperation.WRITE, AclOperation.DESCRIBE)
    _sync(bootstrap, dict(writers), kafka_conf, writes, "annotators name writers for", "writers")


def _sync(
    bootstrap: str,
    grants: Mapping[str, Sequence[str]],
    kafka_conf: Mapping[str, str],
    operations: Sequence,
    named: str,
    what: str,
) -> None:
    """Each topic of ``grants`` with ALLOW bindings of ``operations`` for its principals only."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from alertsieve.kafka.topics import admin

    principal = job_principal(kafka_conf)
    client = admin(bootstrap, dict(kafka_conf))
    every_topic = AclBindingFilter(
        ResourceType.TOPIC,
        None,
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ALLOW,
    )
    try:
        existing = client.describe_acls(every_topic, request_timeout=30).result()
    except KafkaException as e:
        error = e.args[0]
        if error.name() == "SECURITY_DISABLED":
            if any(grants.values()):
                listed = sorted(t for t, r in grants.items() if r)
                raise AclError(
                    f"{named} {listed}, but the Kafka cluster at {bootstrap} has no"
                    " authorizer: their topics would be open to every client. Enable an"
                    f" authorizer (authorizer.class.name) or drop the {what}"
                ) from None
            return
        raise _refused(error.name(), principal, "read the cluster's ACLs") from None
    have = {b for b in existing if b.name in grants and b.operation in set(operations)}
    want = set()
    for topic, principals in grants.items():
        want |= _bindings(topic, principals, operations)
    missing, stale = sorted(want - have, key=str), sorted(have - want, key=str)
    try:
        for future in client.create_acls(missing, request_timeout=30).values() if missing else []:
            future.result()
        if stale:
            for future in client.delete_acls(
                [_filter_of(b) for b in stale], request_timeout=30
            ).values():
                future.result()
    except KafkaException as e:
        raise _refused(e.args[0].name(), principal, "create or delete ACLs") from None
    if missing or stale:
        log.info(
            "%s: %d ACL(s) created, %d deleted on %s",
            what,
            len(missing),
            len(stale),
            ", ".join(sorted({b.name for b in [*missing, *stale]})),
        )


def _filter_of(binding):
    from confluent_kafka.admin import AclBindingFilter

    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )
