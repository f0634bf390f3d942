"""A batch whose every message was quarantined says why, in one line with the likely fix; a batch
with one decoded message says nothing. The reasons are written as ``alertsieve.view.decoder``
and ``alertsieve.view.surveys`` write them. The last test runs the real job (integration)."""

from __future__ import annotations

import json
import logging

import pytest
from confluent_kafka import Producer
from crafted import real_messages
from kafka_helpers import consume_all

from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topics
from alertsieve.stream.config import JobConfig
from alertsieve.stream.diagnosis import Diagnoser, diagnose
from alertsieve.stream.job import run_job
from alertsieve.stream.metrics import BatchStats, MetricsLog

ZTF_FIX = (
    "--survey ztf but the messages are Confluent-framed (Rubin's wire format): were they"
    " replayed as Rubin? run with --survey rubin, or replay the files as ZTF"
)
CONTAINER = "not an Avro container file (starts with 0x{}; ZTF sends one per message)"
UNKNOWN_ID_FIX = (
    "the job looked that id up when it first met it (in schema_registry, else the local store, then"
    " Rubin's shipped versions) and found it nowhere: point schema_registry at the producer's"
    " registry, or register the schema there, then restart the job (it looks the quarantined"
    " messages' ids up again)"
)


def _stats(
    first: str | None,
    last: str | None = None,
    rows: int = 12,
    quarantined: int | None = None,
    batch_id: int = 3,
) -> BatchStats:
    """A batch of ``rows`` messages, all quarantined unless told, its reasons from ``first`` to
    ``last`` in sort order (``last``: ``first`` when not given)."""
    quarantined = rows if quarantined is None else quarantined
    return BatchStats(
        batch_id=batch_id,
        input_rows=rows,
        decoded_rows=rows - quarantined,
        quarantined_rows=quarantined,
        matches={},
        batch_seconds=1.0,
        output_time=0.0,
        latency_s={},
        reason_min=first,
        reason_max=first if last is None else last,
    )


def _head(reason: str) -> str:
    return f"batch 3: every message was quarantined (12 of 12): {reason}"


#: (first reason, last reason, survey, wire format, the reason as the line shows it, the fix):
#: reasons written as the decoder writes them, every kind the job can meet.
CASES = [
    (CONTAINER.format("000003e8"), None, "ztf", "container", CONTAINER.format("000003e8"), ZTF_FIX),
    (
        CONTAINER.format("00000002"),
        CONTAINER.format("00000003"),
        "ztf",
        "container",
        "not an Avro container file (starts with 0x0000000...",
        ZTF_FIX,
    ),
    (
        CONTAINER.format("7b226964"),
        None,
        "ztf",
        "container",
        CONTAINER.format("7b226964"),  # JSON
        "the messages are neither ZTF's Avro container files nor Confluent-framed: is --topic the alert stream?",
    ),
    (
        "a deflate-compressed container: only uncompressed ones are read in place",
        None,
        "ztf",
        "container",
        "a deflate-compressed container: only uncompressed ones are read in place",
        "the producer compresses its containers: have it write them uncompressed (codec null), as ZTF sends them",
    ),
    (
        "a ZTF container whose writer schema (sha256 0a1b) this job has not learned",
        "a ZTF container whose writer schema (sha256 9f8e) this job has not learned",
        "ztf",
        "container",
        "a ZTF container whose writer schema (sha256 ...",
        "a running job learns a new ZTF writer schema from its first message; where the job did not"
        " (a backtest of a topic), restart it: at start-up it learns them from schemas/ztf/, the"
        " topic's first and newest messages and the quarantined ones (which keep their bytes on the"
        " quarantine topic)",
    ),
    (
        "undecodable Avro body in a container of sha256 0a1b",
        None,
        "ztf",
        "container",
        "undecodable Avro body in a container of sha256 0a1b",
        "the containers do not match their own header's schema: the files are corrupt or truncated",
    ),
    # b"Obj\x01": the magic byte Rubin's framing checks first is 0x4f.
    (
        "magic byte is 0x4f, expected 0x00",
        None,
        "rubin",
        "confluent",
        "magic byte is 0x4f, expected 0x00",
        "the messages start like Avro container files (b'Obj\\x01', ZTF's wire format): run with --survey ztf",
    ),
    (
        "magic byte is 0x12, expected 0x00",
        "magic byte is 0x9c, expected 0x00",
        "rubin",
        "confluent",
        "magic byte is 0x...",
        "the messages are not Confluent-framed: bare Avro bodies of one schema version need"
        " wire_format: plain and writer_schema_version in the settings file",
    ),
    (
        "unknown schema id 777777",
        None,
        "rubin",
        "confluent",
        "unknown schema id 777777",
        UNKNOWN_ID_FIX,
    ),
    (
        "unknown schema id 777777",
        "unknown schema id 9",
        "rubin",
        "confluent",
        "unknown schema id ...",
        UNKNOWN_ID_FIX,
    ),
    (
        "undecodable Avro body for schema id 1000",
        None,
        "rubin",
        "confluent",
        "undecodable Avro body for schema id 1000",
        "the bodies do not match the schema registered under that id: does the job read the producer's registry"
        " (schema_registry in the settings file)?",
    ),
    (
        "schema id 704 (lsst.v7_4.alert) is not among the versions this job reads (10.0, 11.1); add 7.4 to"
        " schema_versions",
        None,
        "rubin",
        "confluent",
        "schema id 704 (lsst.v7_4.alert) is not among the versions this job reads (10.0, 11.1); add 7.4 to"
        " schema_versions",
        "add the version to --schema-versions (schema_versions in the settings file)",
    ),
    (
        "schema id 5 (elsewhere.NotAnAlert) is not a Rubin alert schema (this job reads survey rubin)",
        None,
        "rubin",
        "confluent",
        "schema id 5 (elsewhere.NotAnAlert) is not a Rubin alert schema (this job reads survey rubin)",
        "the topic carries records of another schema: is --topic the alert stream?",
    ),
    (
        "undecodable Avro body for lsst.v11_1.alert",
        None,
        "rubin",
        "plain",
        "undecodable Avro body for lsst.v11_1.alert",
        "wire_format plain reads every message as a bare body of writer_schema_version: set it to the producer's"
        " version, or wire_format confluent for Confluent-framed messages (--survey ztf for ZTF's containers)",
    ),
]


@pytest.mark.parametrize(("first", "last", "survey", "wire_format", "shown", "fix"), CASES)
def test_a_batch_that_quarantined_everything_gets_the_reason_and_its_fix(
    first, last, survey, wire_format, shown, fix
):
    assert diagnose(_stats(first, last), survey, wire_format) == f"{_head(shown)} | likely: {fix}"


def test_a_detected_survey_is_named_as_detected():
    line = diagnose(_stats(CONTAINER.format("000003e8")), "ztf", "container", detected=True)
    assert line.endswith(
        " | likely: survey ztf (detected from the topic's first messages) but the messages"
        " are Confluent-framed (Rubin's wire format): were they replayed as Rubin? run"
        " with --survey rubin, or replay the files as ZTF"
    )


def test_one_reason_without_a_known_fix_is_named_alone():
    assert diagnose(_stats("empty message", batch_id=0, rows=1), "rubin", "confluent") == (
        "batch 0: every message was quarantined (1 of 1): empty message"
    )


def test_reasons_of_different_kinds_give_no_line():
    assert diagnose(_stats("empty message", "unknown schema id 9"), "rubin", "confluent") is None
    codecs = ("a deflate-compressed container: ...", "a snappy-compressed container: ...")
    assert diagnose(_stats(*codecs), "ztf", "container") is None


def test_a_batch_with_one_good_message_gives_no_diagnosis():
    reason = CONTAINER.format("000003e8")
    assert diagnose(_stats(reason, rows=12, quarantined=11), "ztf", "container") is None
    assert diagnose(_stats(None, rows=0, quarantined=0), "ztf", "container") is None


def test_a_diagnosis_is_repeated_only_every_so_many_batches():
    diagnoser = Diagnoser("ztf", "container", every=3)
    framed, other = CONTAINER.format("000003e8"), "empty message"
    said = [diagnoser(_stats(framed, batch_id=b)) is not None for b in range(7)]
    assert said == [True, False, False, True, False, False, True]
    assert diagnoser(_stats(other, batch_id=7)) is not None  # another reason: said at once
    assert diagnoser(_stats(framed, rows=12, quarantined=1, batch_id=8)) is None


def _progress(batch_id: int, rows: int, quarantined: int, reason: str) -> dict:
    """A hot-path progress report, as the query listener hands it over."""
    return {
        "name": "hot",
        "batchId": batch_id,
        "timestamp": "2026-11-24T10:00:00.000Z",
        "durationMs": {"triggerExecution": 1000},
        "observedMetrics": {
            "alertsieve_input": {"input_rows": rows, "log_append_time_rows": rows},
            "alertsieve": {
                "quarantined_rows": quarantined,
                "matches": [],
                "reason_min": reason,
                "reason_max": reason,
            },
        },
    }


def test_the_job_logs_the_diagnosis_as_a_warning_after_the_batch_line(tmp_path, caplog):
    reason = CONTAINER.format("000003e8")
    log = MetricsLog(
        tmp_path / "m.jsonl", ["a"], query_name="hot", diagnose=Diagnoser("ztf", "container")
    )
    with caplog.at_level(logging.INFO, logger="alertsieve.stream.metrics"):
        log.add_progress(_progress(0, 5, 5, reason))
        log.add_progress(_progress(1, 5, 4, reason))  # one decoded: no diagnosis
    want = f"batch 0: every message was quarantined (5 of 5): {reason} | likely: {ZTF_FIX}"
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert len(said) == 3 and said[1] == (logging.WARNING, want), said
    assert said[0][0] == said[2][0] == logging.INFO
    assert said[0][1].startswith("batch 0: 5 alerts (5 quarantined)")
    assert said[2][1].startswith("batch 1: 5 alerts (4 quarantined)")
    first = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])
    assert (first["reason_min"], first["reason_max"]) == (reason, reason)


def test_a_ztf_job_fed_only_rubin_messages_says_so_in_its_first_batch(
    kafka, spark, tmp_path, topic_name, caplog
):
    """The real job (``survey: ztf``) on a topic of Rubin's real alerts, Confluent-framed: one
    available-now batch, the one-line diagnosis in its log, and every message
    on the quarantine topic with its reason. Integration: a broker and Spark."""
    bootstrap = kafka.bootstrap_servers
    create_topics(bootstrap, [topic_name], 1)
    sent = dict(real_messages())  # schema ids 1000 and 704: reasons differing in their 4th byte
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in sent.items():
        producer.produce(topic_name, value=value, key=key)
    assert producer.flush(60) == 0

    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        survey="ztf",
        available_now=True,
        sinks=["kafka"],
        output_prefix=f"{topic_name}-",
        output_partitions=1,
        discover_filters=False,
        code_filters=[AlertFilter(name="bright", sql="candidate.magpsf < 15.5")],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=str(tmp_path / "m.jsonl"),
    )
    with caplog.at_level(logging.INFO, logger="alertsieve.stream.metrics"):
        written = run_job(cfg, spark=spark)

    n = len(sent)
    want = (
        f"batch 0: every message was quarantined ({n} of {n}): not an Avro container file"
        f" (starts with 0x0000000... | likely: {ZTF_FIX}"
    )
    assert [b["batch_id"] for b in written] == [0] and written[0]["quarantined_rows"] == n
    assert (logging.WARNING, want) in [(r.levelno, r.getMessage()) for r in caplog.records]
    quarantined = {
        m.key().decode(): dict(m.headers()) for m in consume_all(bootstrap, cfg.quarantine_topic)
    }
    assert set(quarantined) == set(sent)
    assert all(
        h["reason"].decode().startswith("not an Avro container file (starts with 0x00")
        for h in quarantined.values()
    )
