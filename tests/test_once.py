"""Each match once, once per object, a state that survives a kill, and a webhook that retries:
the subscriber's pure parts, fast tier (no broker, no Spark).

Oracles: plain Python over fastavro-decoded real alerts (tests/data/real: the ZTF alerts with
histories, the LSSTCam v10.0 alerts), counts by hand, and a local HTTP server (the standard
library's) that refuses requests on a schedule and logs what it accepted."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import fastavro
import pytest
from crafted import ztf_history_files
from webhook_server import FlakyWebhook

from alertsieve.publish import contract
from alertsieve.subscribe.errors import SubscribeError
from alertsieve.subscribe.identity import identity, night_of
from alertsieve.subscribe.once import Gate, Recent
from alertsieve.subscribe.records import Match
from alertsieve.subscribe.senders import Mailer, RateLimit, Webhook, message
from alertsieve.subscribe.state import StateFile
from alertsieve.subscribe.writers import JsonLinesWriter

REAL = Path(__file__).parent / "data" / "real"


def _ztf_alerts() -> list[dict]:
    out = []
    for path in ztf_history_files():
        with path.open("rb") as f:
            out += list(fastavro.reader(f))
    return out


def _match(record: dict, offset: int, name: str = "f", version: str = "v1") -> Match:
    return Match(
        topic="out",
        partition=0,
        offset=offset,
        key=str(record["candid"]),
        filter=name,
        filter_version=version,
        payload=contract.PAYLOAD_ALERT,
        source_topic="ztf",
        source_partition=0,
        source_offset=offset,
        record=record,
        alert_id=str(record["candid"]),
        survey="ztf",
    )


@pytest.fixture(scope="module")
def ztf() -> list[dict]:
    return _ztf_alerts()


def test_copies_are_dropped_per_filter_version_and_counted(ztf):
    matches = [_match(a, i) for i, a in enumerate(ztf[:20])]
    gate = Gate()
    first = gate.sift(matches)
    again = gate.sift([*matches[:5], *(replace(m, filter_version="v2") for m in matches[:3])])
    assert first.kept == matches and not first.duplicates and not first.held_back
    assert again.duplicates == matches[:5] and len(again.kept) == 3  # a new version is news
    assert gate.duplicates == 5
    # Copies in one poll, before any delivery is confirmed, are dropped too.
    assert len(Gate().sift([matches[0], matches[0]]).kept) == 1
    # --keep-duplicates: the topic as it is.
    assert len(Gate(dedup=False).sift([matches[0], matches[0]]).kept) == 2


def test_the_window_is_the_bound_oldest_forgotten_first():
    recent = Recent(3, ["a", "b", "c"])
    recent.add("d")
    assert list(recent) == ["b", "c", "d"] and "a" not in recent
    with pytest.raises(SubscribeError, match="at least 1"):
        Recent(0)


def test_once_per_object_over_real_ztf_alerts_equals_plain_python(ztf):
    matches = [_match(a, i) for i, a in enumerate(ztf)]
    gate = Gate(once_per="object")
    kept = gate.sift(matches).kept
    objects = {a["objectId"] for a in ztf}
    assert len(ztf) > len(objects)  # objects with several alerts: the test can fail
    assert [m.record["objectId"] for m in kept] == list(dict.fromkeys(a["objectId"] for a in ztf))
    assert gate.held_back == len(ztf) - len(objects)
    # Per filter: another filter hears of the same objects.
    assert len(gate.sift([replace(m, filter="g") for m in matches]).kept) == len(objects)


def test_once_per_night_uses_the_observing_night(ztf):
    """The real alerts are of one night; copies a day later (new candid) are the next night's."""
    later = [
        {
            **a,
            "candid": a["candid"] + 1,
            "candidate": {**a["candidate"], "jd": a["candidate"]["jd"] + 1},
        }
        for a in ztf
    ]
    alerts = ztf + later
    kept = Gate(once_per="night").sift([_match(a, i) for i, a in enumerate(alerts)]).kept
    # Plain Python: a ZTF night turns at Palomar's noon, 20:00 UTC (JD - 2400000.5 - 20/24).
    nights = {
        (a["objectId"], int((a["candidate"]["jd"] - 2400000.5 - 20 / 24) // 1)) for a in alerts
    }
    assert len(kept) == len(nights) == 2 * len({a["objectId"] for a in ztf})


def test_the_identity_of_rubin_and_fields_records():
    with (REAL / "rubin-lsstcam-v10_0.avro").open("rb") as f:
        alert = next(fastavro.reader(f))
    who = identity(alert, contract.PAYLOAD_ALERT, "rubin")
    source = alert["diaSource"]
    assert who.object_id == str(source["diaObjectId"]) and who.object_kind == "diaObject"
    assert (who.ra, who.dec, who.mjd) == (source["ra"], source["dec"], source["midpointMjdTai"])
    fields = {contract.ALERT_ID: "1", contract.SURVEY: "ztf", "objectId": "ZTF1", "ra": 1.0}
    assert identity(fields, contract.PAYLOAD_FIELDS, "ztf").object_id == "ZTF1"
    assert identity({contract.ALERT_ID: "1"}, contract.PAYLOAD_FIELDS, "ztf").object_id is None
    # Rubin's dayObs turns at 12:00 UTC: 23:00 and 09:00 UTC the next day are one night.
    assert night_of(61000 + 23 / 24, "rubin") == night_of(61001 + 9 / 24, "rubin")


def test_a_state_file_survives_a_kill_and_cuts_the_output_back(tmp_path, ztf):
    """What a kill -9 leaves: lines written after the last state line and a torn state line.
    The restart cuts the file back to the mark and delivers nothing it had confirmed."""
    matches = [_match(a, i) for i, a in enumerate(ztf[:10])]
    out, path = tmp_path / "out.jsonl", tmp_path / "s.state"
    gate, state = Gate(), StateFile(path)
    writer = JsonLinesWriter(out)
    kept = gate.sift(matches[:6]).kept
    writer.write(kept)
    gate.delivered(kept)
    state.commit(gate, {("out", 0): 6}, writer.mark())
    writer.write(gate.sift(matches[6:]).kept)  # written, never confirmed: the kill comes
    writer.close()
    state.close()
    with path.open("a") as f:
        f.write('{"keys":["torn')
    assert len(out.read_text().splitlines()) == 10

    again = StateFile(path)
    assert again.loaded.offsets == {("out", 0): 6}
    restored = Gate()
    again.restore(restored)
    resumed = JsonLinesWriter(out, resume=again.loaded.mark)
    kept = restored.sift(matches).kept  # the topic read again from offset 0: copies dropped
    assert kept == matches[6:]
    resumed.write(kept)
    resumed.close()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["candid"] for line in lines] == [m.record["candid"] for m in matches]


def test_a_damaged_state_file_is_named_with_the_way_out(tmp_path):
    path = tmp_path / "s.state"
    path.write_text('not json\n{"keys":[]}\n')
    with pytest.raises(SubscribeError, match=r"s\.state: line 1 is not JSON.*move it away"):
        StateFile(path)


def test_the_journal_is_compacted_and_reads_back_the_same(tmp_path, monkeypatch):
    from alertsieve.subscribe import state as state_module

    monkeypatch.setattr(state_module, "COMPACT_AFTER", 4)
    path, gate = tmp_path / "s.state", Gate(window=5)
    state = StateFile(path)
    for n in range(10):
        gate.delivered([_match({"candid": n}, n)])
        state.commit(gate, {("out", 0): n + 1})
    state.close()
    assert len(path.read_text().splitlines()) < 10
    loaded = StateFile(path).loaded
    restored = Gate(window=5)
    restored.restore(loaded.keys, loaded.objects)
    assert list(restored.recent) == list(gate.recent) and loaded.offsets == {("out", 0): 10}


@pytest.fixture
def flaky():
    server = FlakyWebhook(refuse_every=5)
    yield server
    server.close()


@pytest.mark.integration  # a local HTTP server
def test_a_webhook_that_refuses_one_in_five_gets_each_match_once(flaky, ztf):
    waits: list[float] = []
    hook = Webhook(flaky.url, sleep=waits.append)
    matches = [_match(a, i) for i, a in enumerate(ztf[:12])]
    for m in matches:
        hook.post(m)
    assert [entry["alert_id"] for entry in flaky.log] == [m.alert_id for m in matches]
    assert hook.retries == flaky.requests - len(matches) == 2  # the 5th and the 10th
    first = flaky.log[0]
    assert first["filter"] == "f" and first["object_id"] == ztf[0]["objectId"]
    assert first["text"].startswith(f"f: ztf {ztf[0]['candid']} (ztf object {ztf[0]['objectId']})")


@pytest.mark.integration  # a local HTTP server
def test_a_webhook_that_rejects_a_match_for_good_stops_with_its_answer(ztf):
    class Reject(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"no such hook")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Reject)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hook = Webhook(f"http://127.0.0.1:{server.server_port}/x", sleep=lambda s: None)
        with pytest.raises(SubscribeError, match=r"HTTP 404.*no such hook.*check the URL"):
            hook.post(_match(ztf[0], 0))
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreachable_webhook_waits_doubling_up_to_the_longest(ztf):
    waits: list[float] = []
    hook = Webhook("http://127.0.0.1:9/down", sleep=waits.append, longest_wait=4)
    calls = iter([0.0] * 6 + [None])
    hook._attempt = lambda prepared, key: next(calls)  # the server comes back after six tries
    hook.post(_match(ztf[0], 0))
    assert waits == [0.5, 1, 2, 4, 4, 4]


def test_the_rate_limit_spaces_one_filters_posts_not_anothers():
    limit = RateLimit(per_minute=6)  # one post per 10 s
    assert [limit.wait_for("a", 0.0) for _ in range(3)] == [0, 10, 20]
    assert limit.wait_for("b", 0.0) == 0
    assert limit.wait_for("a", 100.0) == 0


def test_the_message_is_json_a_chat_webhook_takes(ztf):
    body = message(_match(ztf[0], 0))
    assert set(body) >= {"text", "filter", "version", "alert_id", "object_id", "ra", "dec", "mjd"}
    json.dumps(body, allow_nan=False)
    with pytest.raises(SubscribeError, match="https://"):
        Webhook("ftp://example.org")


class _Mailbox:
    """An SMTP server's handler (aiosmtpd) that answers every fifth message 451 (try again
    later) and keeps the others."""

    def __init__(self, refuse_every: int = 5, code: str = "451 4.3.2 try again later"):
        self.refuse_every, self.code, self.messages, self.tries = refuse_every, code, [], 0

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.tries += 1
        if self.refuse_every and self.tries % self.refuse_every == 0:
            return self.code
        self.messages.append(envelope)
        return "250 OK"


@pytest.fixture
def mailbox():
    from aiosmtpd.controller import Controller

    from alertsieve.localhost import free_port

    handler = _Mailbox()
    handler.port = free_port(set())
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    yield handler
    controller.stop()


@pytest.mark.integration  # a local SMTP server
def test_mail_through_smtp_retries_what_the_server_defers_and_sends_each_once(mailbox, ztf):
    import email
    from email import policy

    mailer = Mailer(
        "astro@example.org", f"127.0.0.1:{mailbox.port}", {"from": "me@example.org"},
        sleep=lambda s: None,
    )  # fmt: skip
    matches = [_match(a, i) for i, a in enumerate(ztf[:7])]
    for m in matches:
        mailer.post(m)
    mails = [email.message_from_bytes(e.content, policy=policy.default) for e in mailbox.messages]
    assert [json.loads(m.get_content())["alert_id"] for m in mails] == [m.alert_id for m in matches]
    assert mailer.retries == mailbox.tries - len(matches) == 1
    assert mails[0]["Subject"].startswith(f"[alertsieve] f: ztf {ztf[0]['candid']}")
    assert {e.rcpt_tos[0] for e in mailbox.messages} == {"astro@example.org"}
    mailbox.refuse_every, mailbox.code = 1, "550 5.1.1 no such user"
    with pytest.raises(SubscribeError, match=r"refused a match: 550 5\.1\.1 no such user"):
        mailer.post(matches[0])
    with pytest.raises(SubscribeError, match="HOST:PORT"):
        Mailer("astro@example.org", "localhost")
