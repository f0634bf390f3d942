"""Publish annotations of objects for a job's filters of objects to read and be run by: the client
side of ``alertsieve.publish.annotations`` (a classifier's, a person's, a TOM's), in a
subscriber's install (no Spark).

    with Annotator("kafka:9092", "tns", survey="ztf") as tns:
        tns.annotate("ZTF19acmdpyr", "SN Ia", score=0.93, attributes={"name": "2019xyz"})

Each annotation goes to the annotator's own topic, keyed by the object, acknowledged by every
replica before ``flush`` (or leaving the ``with``) returns.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

from alertsieve.kafka.client_security import librdkafka_conf
from alertsieve.publish import contract
from alertsieve.publish.annotations import AnnotationError, annotation_record, check_annotator

log = logging.getLogger(__name__)


class Annotator:
    """One annotator's producer: ``annotate`` an object, ``flush`` to have every annotation
    acknowledged (an error names the first that was not)."""

    def __init__(
        self,
        bootstrap: str,
        name: str,
        survey: str,
        prefix: str = contract.DEFAULT_PREFIX,
        kafka_conf: Mapping[str, str] | None = None,
    ):
        from confluent_kafka import Producer

        self.name, self.survey = check_annotator(name), survey
        self.topic = contract.annotation_topic(prefix, name)
        self._failed: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                **librdkafka_conf(kafka_conf or {}),
                "acks": "all",
                "enable.idempotence": True,
            }
        )

    def annotate(
        self,
        object_id: str | int,
        klass: str,
        score: float | None = None,
        attributes: Mapping[str, str] | None = None,
        time: dt.datetime | None = None,
    ) -> None:
        """Publish that this annotator calls ``object_id`` ``klass`` (with ``score`` and free
        ``attributes``, at ``time``: default now)."""
        value = annotation_record(self.survey, object_id, self.name, klass, score, attributes, time)
        self._producer.produce(
            self.topic, key=str(object_id).encode(), value=value, on_delivery=self._delivered
        )
        self._producer.poll(0)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self._failed.append(f"{msg.key().decode()}: {err}")

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every annotation is acknowledged; an error if one was refused (an ACL:
        only the annotator's own principal may write its topic) or is still waiting."""
        left = self._producer.flush(timeout_s)
        if self._failed or left:
            failed, self._failed = self._failed, []
            raise AnnotationError(
                f"annotations to {self.topic} not published: "
                + "; ".join(
                    [*failed, *([f"{left} still waiting after {timeout_s} s"] if left else [])]
                )
            )

    def __enter__(self) -> Annotator:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.flush()
