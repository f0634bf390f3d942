"""The job's input before it reads it: a topic that is not there yet is waited for.

A job deployed ahead of a survey's new topic (Rubin opens ``lsst-alerts-v<MAJOR>`` per major
version) waits for it, saying once which topic on which bootstrap, then plans from the topic's
first messages and reads it from its start (``starting_offsets`` as set: earliest by default).
With a pattern it waits for the first topic the pattern matches. An ``--available-now`` job
reads what a topic holds now, so a missing one is an error naming it (exit 2). A topic deleted
while the job runs fails the query; :func:`gone` names it in the job's error.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from confluent_kafka import KafkaException

from alertsieve.errors import AlertsieveError
from alertsieve.kafka.topics import admin
from alertsieve.stream.config import JobConfig

log = logging.getLogger(__name__)

#: Seconds between two looks for a missing topic.
POLL_SECONDS = 2.0


class InputMissing(AlertsieveError, ValueError):
    """The input topic does not exist (and the job will not wait for it)."""


def inputs(cfg: JobConfig) -> list[str] | str:
    """The input topics (a list), or their pattern."""
    return cfg.topic.split(",") if cfg.topic else cfg.topic_pattern


def _ready(metadata: dict, name: str) -> bool:
    """The topic exists and each partition has a leader (a topic just created may not yet)."""
    topic = metadata.get(name)
    return (
        topic is not None
        and topic.error is None
        and bool(topic.partitions)
        and all(p.leader >= 0 for p in topic.partitions.values())
    )


def missing(cfg: JobConfig, timeout: float = 10.0) -> list[str]:
    """The input topics not there (ready to read) yet; for a pattern, ``[pattern]`` while no
    topic matches it."""
    try:
        metadata = admin(cfg.bootstrap, cfg.kafka_conf).list_topics(timeout=timeout).topics
    except KafkaException as e:
        raise InputMissing(
            f"cannot reach Kafka at {cfg.bootstrap} to find the input topic"
            f" ({e.args[0].str() if e.args else e}): check --bootstrap and kafka_conf"
        ) from None
    wanted = inputs(cfg)
    if isinstance(wanted, str):
        found = [t for t in metadata if re.fullmatch(wanted, t) and _ready(metadata, t)]
        return [] if found else [wanted]
    return [t for t in wanted if not _ready(metadata, t)]


def _what(cfg: JobConfig, names: list[str]) -> str:
    if cfg.topic_pattern:
        return f"a topic matching {cfg.topic_pattern!r}"
    return f"input topic{'s' if len(names) > 1 else ''} {', '.join(names)}"


def await_inputs(
    cfg: JobConfig,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Return once every input topic exists (the seconds waited); an available-now job, or one
    whose ``timeout_s`` passes first, raises :class:`InputMissing` naming the topic."""
    names = missing(cfg)
    if not names:
        return 0.0
    what = _what(cfg, names)
    if cfg.available_now:
        raise InputMissing(
            f"{what} does not exist on {cfg.bootstrap}: an --available-now job reads what a topic"
            " holds; check --topic and --bootstrap, or run without --available-now to wait for it"
        )
    started = clock()
    log.warning("waiting for %s on %s: the job starts when it exists", what, cfg.bootstrap)
    while names:
        if cfg.timeout_s is not None and clock() - started >= cfg.timeout_s:
            raise InputMissing(
                f"{what} did not appear on {cfg.bootstrap} within the job's timeout"
                f" ({cfg.timeout_s:g} s)"
            )
        sleep(POLL_SECONDS)
        names = missing(cfg)
    waited = clock() - started
    log.info("%s exists after %.0f s: reading it from its start", what, waited)
    return waited


def gone(cfg: JobConfig, error: object) -> str:
    """For a query that failed because a topic is not there: which input topic is gone (a
    sentence to open the error with), else ""."""
    if "UnknownTopicOrPartition" not in str(error) and "does not host this" not in str(error):
        return ""
    try:
        names = missing(cfg, timeout=5.0)
    except InputMissing:
        return ""
    if not names:
        return ""
    return f"{_what(cfg, names)} no longer exists on {cfg.bootstrap}: was it deleted? "
