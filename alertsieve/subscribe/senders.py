"""Matches sent where people read them, one at a time: a webhook (``listen --to https://...``,
one compact JSON object per match, which Slack's incoming webhooks take as it is) or e-mail
through SMTP (``listen --to mailto:ADDRESS --smtp HOST:PORT``, one message per match).

Both send a match until it is acknowledged (a webhook's 2xx; an SMTP server accepting the
message). A refusal that may pass (HTTP 5xx, 408, 429; SMTP 4xx) or a server that cannot be
reached is tried again after a wait that doubles from ``first_wait`` up to ``longest_wait`` (a
429's ``Retry-After`` is obeyed), so a server down for a while gets every match when it is back,
in order. A refusal for good (any other HTTP 4xx, SMTP 5xx: the address or the payload is wrong)
stops the subscriber with the server's answer; the match was not acknowledged, so with a state
file a restart sends it again. Each webhook request carries an ``Idempotency-Key`` (each mail a
``Message-ID``) made from the match's key, with which a server can drop the one repeat a
subscriber killed between an acknowledgement and its state line could send.

A rate limit per filter (``per_minute``) spaces one filter's sends out: a filter over its rate
waits for its turn (nothing is dropped), which delays the matches behind it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import smtplib
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from alertsieve.publish import contract
from alertsieve.settings import resolve_secret
from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.identity import identity
from alertsieve.subscribe.once import match_key
from alertsieve.subscribe.records import Match
from alertsieve.subscribe.rows import jsonable

log = logging.getLogger(__name__)

#: Answers after which the same request may succeed.
RETRIABLE = {408, 429}


def message(match: Match) -> dict[str, Any]:
    """The compact JSON of one match: filter, version, alert, object, position, time, the
    fields its filter chose (a fields record), and a ``text`` line for chat webhooks."""
    who = identity(match.record, match.payload, match.survey)
    chosen = (
        {k: v for k, v in match.record.items() if k not in contract.ENVELOPE}
        if match.payload == contract.PAYLOAD_FIELDS
        else {}
    )
    where = (
        f" at ra {who.ra:.5f} dec {who.dec:+.5f}"
        if isinstance(who.ra, float) and isinstance(who.dec, float)
        else ""
    )
    text = (
        f"{match.filter}: {match.survey or 'alert'} {match.alert_id}"
        f"{f' ({who.object_kind} {who.object_id})' if who.object_id else ''}{where}"
    )
    return jsonable(
        {
            "text": text,
            "filter": match.filter,
            "version": match.filter_version,
            "alert_id": match.alert_id,
            "survey": match.survey,
            "object_id": who.object_id,
            "object_kind": who.object_kind,
            "ra": who.ra,
            "dec": who.dec,
            "mjd": who.mjd,
            "fields": chosen,
        }
    )


@dataclass
class RateLimit:
    """At most ``per_minute`` posts a minute per filter, spaced evenly (a filter's first post
    never waits)."""

    per_minute: float
    _next: dict[str, float] = field(default_factory=dict)

    def wait_for(self, name: str, now: float) -> float:
        """Seconds ``name`` must wait before its next post, booking that post."""
        at = max(now, self._next.get(name, now))
        self._next[name] = at + 60.0 / self.per_minute
        return at - now


class Sender:
    """Sends matches one at a time until each is acknowledged (see the module doc); ``sleep``
    and ``clock`` are the waiting, given so the back-off is tested without waiting."""

    where = ""  # what a line about it names

    def __init__(
        self,
        *,
        per_minute: float | None = None,
        first_wait: float = 0.5,
        longest_wait: float = 30.0,
        timeout: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        if per_minute is not None and not (per_minute > 0 and math.isfinite(per_minute)):
            raise SubscribeError(f"--rate-limit {per_minute}: give sends a minute above 0")
        self.limit = RateLimit(per_minute) if per_minute else None
        self.first_wait = first_wait
        self.longest_wait = longest_wait
        self.timeout = timeout
        self.sleep = sleep
        self.clock = clock
        self.sent = 0
        self.retries = 0

    def post(self, match: Match) -> None:
        """Send one match until it is acknowledged."""
        if self.limit is not None:
            wait = self.limit.wait_for(str(match.filter), self.clock())
            if wait > 0:
                self.sleep(wait)
        key = hashlib.sha256(match_key(match).encode("utf-8")).hexdigest()[:32]
        prepared = self._prepare(match, key)
        wait = self.first_wait
        while True:
            retry_after = self._attempt(prepared, key)
            if retry_after is None:
                self.sent += 1
                return
            self.retries += 1
            self.sleep(max(wait, retry_after))
            wait = min(wait * 2, self.longest_wait)

    def _prepare(self, match: Match, key: str) -> Any:
        raise NotImplementedError

    def _attempt(self, prepared: Any, key: str) -> float | None:
        """None when acknowledged, else the least wait before trying again."""
        raise NotImplementedError


class Webhook(Sender):
    """Posts each match's :func:`message` as JSON to ``url``."""

    def __init__(self, url: str, **kwargs: Any):
        if not url.startswith(("http://", "https://")):
            raise SubscribeError(f"--to {url}: a webhook's URL starts with https:// or http://")
        super().__init__(**kwargs)
        self.url = self.where = url

    def _prepare(self, match: Match, key: str) -> bytes:
        return json.dumps(message(match), allow_nan=False).encode("utf-8")

    def _attempt(self, prepared: bytes, key: str) -> float | None:
        request = urllib.request.Request(
            self.url,
            data=prepared,
            method="POST",
            headers={"Content-Type": "application/json", "Idempotency-Key": key},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                answer.read()
            return None
        except urllib.error.HTTPError as e:
            if e.code < 500 and e.code not in RETRIABLE:
                detail = e.read(300).decode("utf-8", errors="replace").strip()
                raise SubscribeError(
                    f"the webhook {self.url} refused a match: HTTP {e.code} {e.reason}"
                    f"{f' ({detail})' if detail else ''}; check the URL and that it takes JSON"
                ) from None
            log.warning("webhook %s: HTTP %d, trying again", self.url, e.code)
            return _retry_after(e.headers.get("Retry-After"))
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            log.warning("webhook %s unreachable (%s), trying again", self.url, reason)
            return 0.0


class Mailer(Sender):
    """Mails each match to ``address`` through the SMTP server at ``server`` (HOST:PORT):
    the subject is the match's one line, the body its JSON. ``conf``: ``from``, ``user``,
    ``password`` (``env:NAME`` or ``file:PATH`` read as the job reads secrets), ``starttls``
    (true/false)."""

    def __init__(
        self, address: str, server: str, conf: dict[str, str] | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            raise SubscribeError(f"--smtp {server}: give HOST:PORT (587 for STARTTLS, 25 plain)")
        if "@" not in address:
            raise SubscribeError(f"--to mailto:{address}: give an e-mail address")
        self.address, self.host, self.port = address, host, int(port)
        self.conf = dict(conf or {})
        self.sender = self.conf.get("from", f"alertsieve@{socket.getfqdn()}")
        self.where = f"mailto:{address} via {server}"

    def _prepare(self, match: Match, key: str) -> EmailMessage:
        body = message(match)
        mail = EmailMessage()
        mail["From"], mail["To"] = self.sender, self.address
        mail["Subject"] = f"[alertsieve] {body['text']}"
        mail["Message-ID"] = f"<{key}@alertsieve>"
        mail.set_content(json.dumps(body, indent=1, allow_nan=False))
        return mail

    def _attempt(self, prepared: EmailMessage, key: str) -> float | None:
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
                if self.conf.get("starttls", "false").lower() == "true":
                    smtp.starttls()
                if self.conf.get("user"):
                    smtp.login(self.conf["user"], resolve_secret(self.conf.get("password", "")))
                smtp.send_message(prepared)
            return None
        except smtplib.SMTPResponseException as e:
            text = (
                e.smtp_error.decode("utf-8", errors="replace")
                if isinstance(e.smtp_error, bytes)
                else str(e.smtp_error)
            )
            if e.smtp_code >= 500:
                raise SubscribeError(
                    f"the SMTP server {self.host}:{self.port} refused a match: {e.smtp_code}"
                    f" {text}; check the address, --smtp-conf's user and password"
                ) from None
            log.warning("SMTP %s:%d: %d %s, trying again", self.host, self.port, e.smtp_code, text)
            return 0.0
        except (smtplib.SMTPException, OSError) as e:
            log.warning("SMTP %s:%d unreachable (%s), trying again", self.host, self.port, e)
            return 0.0


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0  # an HTTP date: the doubling wait serves
