"""``AlertsieveAlertStream``: a filter job's topics as a ``tom-alertstreams`` stream.

In the TOM's settings (``manage.py readstreams`` runs it)::

    ALERT_STREAMS = [{
        "ACTIVE": True,
        "NAME": "alertsieve.tom.stream.AlertsieveAlertStream",
        "OPTIONS": {
            "URL": "broker.example.org:9092",            # the job's Kafka
            "TOPIC_HANDLERS": {"alertsieve-fast_risers": "alertsieve.tom.handlers.save_match"},
            "GROUP_ID": "my-tom",                         # resume where the TOM stopped
            "KAFKA_CONF": {"security.protocol": "SASL_SSL", ...},   # as --kafka-conf takes them
            "SCHEMA_REGISTRY": "https://registry.example.org",      # or SCHEMA_DIR
            "START_POSITION": "earliest",                 # or "latest" (the default)
        },
    }]

It reads with ``alertsieve.subscribe.Subscriber``, so every payload the job publishes (alerts of
every Rubin version, ZTF containers, Avro and JSON fields records) reaches the handler decoded, as
a ``Match``. A message that does not decode, or that its handler fails on, is logged with its
topic, partition and offset and skipped: one bad message never stops a TOM's stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from tom_alertstreams.alertstreams.alertstream import AlertStream

from alertsieve.alerts.schemas import open_store
from alertsieve.subscribe.records import Match
from alertsieve.subscribe.subscriber import Subscriber

log = logging.getLogger(__name__)

START_POSITIONS = ("earliest", "latest")


class AlertsieveAlertStream(AlertStream):
    """Reads a filter job's output topics and hands each match to its topic's handler."""

    required_keys = ["URL", "TOPIC_HANDLERS"]
    allowed_keys = [
        "URL",
        "TOPIC_HANDLERS",
        "GROUP_ID",
        "KAFKA_CONF",
        "SCHEMA_REGISTRY",
        "SCHEMA_DIR",
        "START_POSITION",
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from django.core.exceptions import ImproperlyConfigured

        start = str(getattr(self, "start_position", "latest")).lower()
        if start not in START_POSITIONS:
            raise ImproperlyConfigured(
                f"AlertsieveAlertStream START_POSITION {start!r}: use one of {', '.join(START_POSITIONS)}"
            )
        self.from_beginning = start == "earliest"

    def subscriber(self, until_end: bool = False) -> Subscriber:
        """The subscriber of the configured topics (``until_end``: stop at today's last record)."""
        return Subscriber(
            self.url,
            list(self.alert_handler),
            from_beginning=self.from_beginning,
            until_end=until_end,
            group_id=getattr(self, "group_id", None),
            kafka_conf=getattr(self, "kafka_conf", None),
            store=open_store(
                getattr(self, "schema_registry", None), getattr(self, "schema_dir", None)
            ),
        )

    def listen(self, until_end: bool = False) -> int:
        """Hand every match to its topic's handler; forever, or (``until_end``) up to the topics'
        last records when it started. Returns how many matches were handled."""
        handled = 0
        with self.subscriber(until_end) as subscriber:
            log.info(
                "%s: reading %s from %s",
                type(self).__name__,
                ", ".join(subscriber.topics),
                self.url,
            )
            for match in subscriber.matches(skip_undecodable=True):
                handled += self._handle(self.alert_handler[match.topic], match)
        return handled

    @staticmethod
    def _handle(handler: Callable[[Match], Any], match: Match) -> int:
        try:
            handler(match)
        except Exception:
            log.exception(
                "%s[%d] offset %d: the handler failed; skipped",
                match.topic,
                match.partition,
                match.offset,
            )
            return 0
        return 1
