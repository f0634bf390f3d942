"""Writer schemas first met mid-stream, read without a restart.

Rubin ships a new schema version every few months and ZTF changed its own twice; a job that runs
for months meets them. The hot path's task stops at the first message of a writer its plan does
not know (``view.decoder.NEW_WRITER``: neither read nor refused), before that batch is committed.
The job reads that one message, plans its decoding again with it (ZTF: the schema in the message;
Rubin: its id from the registry, else Rubin's shipped version of that id) and restarts the query
from its checkpoint: the batch that carries the new writer is read again with it. A writer found
nowhere becomes a refused one, its messages quarantined with the reason, and the job goes on.

The batch is read again from its start, so what it published before the task stopped is
published again (Kafka's sink is at least once; ``listen --verify`` counts them as duplicates):
nothing when the new writer's messages open a batch, as when a survey switches versions between
visits."""

from __future__ import annotations

import logging
from dataclasses import replace

from alertsieve.errors import AlertsieveError
from alertsieve.kafka.topics import message_at
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import JobPlan, plan_job
from alertsieve.view.decoder import NewWriter

log = logging.getLogger(__name__)


def new_writer_of(query) -> NewWriter | None:
    """The new writer a stopped query met, if that is why it stopped."""
    error = query.exception()
    return NewWriter.found_in(str(error)) if error is not None else None


#: Writers found nowhere after which the job stops stopping for new ones (each costs a restart
#: of the query): a stream of garbage whose every message names another id is quarantined.
MAX_UNREADABLE_WRITERS = 10


def learn(
    spark, cfg: JobConfig, running: JobPlan, writer: NewWriter, learned: list[bytes]
) -> tuple[JobPlan, list[bytes], bool]:
    """The running plan with ``writer`` read (or refused, with why), the messages learned so far
    (this writer's first message among them), and whether it is read."""
    message = message_at(
        cfg.bootstrap, writer.topic, writer.partition, writer.offset, cfg.kafka_conf
    )
    learned = [*learned, message] if message is not None else list(learned)
    key = int(writer.key) if running.decoder.survey == "rubin" else writer.key
    why = f"its message at {writer.topic}:{writer.partition}:{writer.offset} is gone"
    plan = running
    if message is not None:
        try:
            plan = plan_job(spark, cfg, running=running, learned=learned, filters=running.filters)
        except AlertsieveError as e:
            why = str(e)
    decoder = plan.decoder
    if key in decoder.writers:
        log.info(
            "new writer schema %s first met at %s:%d:%d: its task stopped there on purpose (the"
            " failed task Spark logs just before this line); decoding planned again with it, the"
            " batch that carries it is read again",
            decoder.names[key], writer.topic, writer.partition, writer.offset,
        )  # fmt: skip
        return plan, learned, True
    if key not in decoder.refused:
        refused = {**decoder.refused, key: f"writer {writer.key} cannot be read: {why}"}
        plan = replace(plan, decoder=replace(decoder, refused=refused))
    log.warning(
        "writer schema %s first met at %s:%d:%d is not read: %s; its messages go to quarantine",
        writer.key, writer.topic, writer.partition, writer.offset, plan.decoder.refused[key],
    )  # fmt: skip
    return plan, learned, False
