"""Matches posted to a webhook (``listen --to https://...``): one compact JSON object per match,
which Slack's incoming webhooks (and anything that takes JSON) accept as it is.

A match is posted until the server acknowledges it (any 2xx): a refused request (5xx, 408, 429)
or a server that cannot be reached is tried again after a wait that doubles from
``first_wait`` up to ``longest_wait`` (a 429's ``Retry-After`` is obeyed), so a server down for
a while gets every match when it is back, in order. A request the server rejects for good (any
other 4xx: the URL or the payload is wrong) stops the subscriber with the server's answer; the
match was not acknowledged, so with a state file a restart posts it again. Each request carries an
``Idempotency-Key`` (the match's key, hashed) with which a server can drop the one repeat a
subscriber killed between an acknowledgement and its state line could send.

A rate limit per filter (``per_minute``) spaces one filter's posts out: a filter over its rate
waits for its turn (nothing is dropped), which delays the matches behind it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from alertsieve.publish import contract
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


class Webhook:
    """Posts matches to ``url`` (see the module doc); ``sleep`` and ``clock`` are the waiting,
    given so the back-off is tested without waiting."""

    def __init__(
        self,
        url: str,
        *,
        per_minute: float | None = None,
        first_wait: float = 0.5,
        longest_wait: float = 30.0,
        timeout: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not url.startswith(("http://", "https://")):
            raise SubscribeError(f"--to {url}: a webhook's URL starts with https:// or http://")
        if per_minute is not None and not (per_minute > 0 and math.isfinite(per_minute)):
            raise SubscribeError(f"--rate-limit {per_minute}: give posts a minute above 0")
        self.url = url
        self.limit = RateLimit(per_minute) if per_minute else None
        self.first_wait = first_wait
        self.longest_wait = longest_wait
        self.timeout = timeout
        self.sleep = sleep
        self.clock = clock
        self.posted = 0
        self.retries = 0

    def post(self, match: Match) -> None:
        """Post one match until the server acknowledges it."""
        if self.limit is not None:
            wait = self.limit.wait_for(str(match.filter), self.clock())
            if wait > 0:
                self.sleep(wait)
        body = json.dumps(message(match), allow_nan=False).encode("utf-8")
        key = hashlib.sha256(match_key(match).encode("utf-8")).hexdigest()[:32]
        wait = self.first_wait
        while True:
            retry_after = self._attempt(body, key)
            if retry_after is None:
                self.posted += 1
                return
            self.retries += 1
            self.sleep(max(wait, retry_after))
            wait = min(wait * 2, self.longest_wait)

    def _attempt(self, body: bytes, key: str) -> float | None:
        """None when acknowledged, else the least wait before trying again."""
        request = urllib.request.Request(
            self.url,
            data=body,
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


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0  # an HTTP date: the doubling wait serves
