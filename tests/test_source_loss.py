"""Alerts lost at the source (``on_source_loss``): a job stopped while its input's retention
deletes what it had not read yet goes on from the earliest offset held, says so in one line,
and counts the lost offsets on the counts topic, which ``listen --verify`` reports as lost, not
missing. On the embedded broker with a short retention; the oracle is the offsets the test
produced and plain Python over the real alerts' records."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import fastavro
import pytest
from job_helpers import counted_batches, wait_for
from kafka_helpers import consume_all, send

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic, watermarks
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import JobFailed, run_job
from alertsieve.stream.source_loss import lost_ranges, read_ranges

REAL = Path(__file__).parent / "data" / "real"
BRIGHT = "diaSource.snr > 10"


def test_the_lost_ranges_are_where_the_earliest_offsets_moved_past_the_batch_start():
    progress = {
        "sources": [
            {
                "startOffset": '{"t": {"0": 10, "1": 5}}',
                "endOffset": '{"t": {"0": 30, "1": 25, "2": 4}}',  # 2: new to the query
            }
        ]
    }
    ranges = read_ranges(progress)
    assert ranges == {"t": {"0": [10, 30], "1": [5, 25]}}
    assert lost_ranges(ranges, 12, {("t", "0"): 18, ("t", "1"): 9}) == {
        "t": {"0": [10, 18], "1": [5, 9]}
    }
    # retention went further after the batch: trimmed to what the batch did not read
    assert lost_ranges(ranges, 10, {("t", "0"): 18, ("t", "1"): 9}) == {
        "t": {"0": [10, 18], "1": [5, 7]}
    }
    assert lost_ranges(ranges, 0, {("t", "0"): 18}) == {}


def _send(bootstrap: str, topic: str, alerts: list[dict], timestamp: int = 0) -> None:
    schema = load_rubin_schema("10.0")
    messages = [(str(a["diaSourceId"]), schema.encode_framed(a)) for a in alerts]
    send(bootstrap, topic, messages, timestamp)


def _shorten_retention(bootstrap: str, topic: str, ms: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("retention.ms", ms, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    (done,) = admin.incremental_alter_configs([resource]).values()
    done.result(30)


@pytest.mark.integration
def test_alerts_the_input_no_longer_holds_are_counted_lost_and_the_job_goes_on(
    kafka, spark, tmp_path, topic_name, caplog
):
    bootstrap = kafka.bootstrap_servers
    alerts = [a for f in ("rubin-lsstcam-v10_0.avro", "rubin-lsstcam-v10_0-b.avro")
              for a in fastavro.reader((REAL / f).open("rb"))]  # fmt: skip
    create_topic(bootstrap, topic_name, 1, config={"segment.ms": "100"})
    prefix = f"{topic_name}-"

    def run(on_source_loss: str) -> list[dict]:
        cfg = JobConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            survey="rubin",
            available_now=True,
            sinks=["kafka"],
            output_prefix=prefix,
            output_partitions=1,
            discover_filters=False,
            code_filters=[AlertFilter(name="bright", sql=BRIGHT)],
            checkpoint=str(tmp_path / "ckpt"),
            metrics_path=None,
            on_source_loss=on_source_loss,
        )
        return run_job(cfg, spark=spark)

    _send(bootstrap, topic_name, alerts[:4])
    assert sum(b["input_rows"] for b in run("continue")) == 4
    _send(bootstrap, topic_name, alerts[4:])  # while the job is stopped
    # The next alerts are stamped ten minutes ahead (their producer's clock): they start a new
    # segment, and no retention of the test's takes them.
    later = int(time.time() * 1000) + 600_000
    _send(bootstrap, topic_name, alerts, timestamp=later)
    _shorten_retention(bootstrap, topic_name, "100")  # the closed segment, offsets 0-7, goes
    held = lambda: watermarks(bootstrap, [(topic_name, 0)])[(topic_name, 0)]  # noqa: E731
    wait_for(lambda: held() == (8, 16), "offsets 0-7 deleted by retention", 60)

    with pytest.raises(JobFailed, match="on_source_loss: continue the job goes on"):
        run("fail")  # today's stop, for those who want it
    with caplog.at_level(logging.WARNING, logger="alertsieve"):
        lines = run("continue")
    assert sum(b["input_rows"] for b in lines) == 8
    said = [r.getMessage() for r in caplog.records if "lost at the source" in r.getMessage()]
    assert (
        len(said) == 1
        and f"4 alerts lost at the source, never read: {topic_name} partition 0 offsets 4-7 (4)"
        in said[0]
    )
    lost = [
        b["lost_at_source"]
        for b in counted_batches(bootstrap, f"{prefix}counts")
        if "lost_at_source" in b
    ]
    assert lost == [{topic_name: {"0": [4, 8]}}]

    read = alerts[:4] + alerts
    published = sorted(m.key().decode() for m in consume_all(bootstrap, f"{prefix}bright"))
    assert published == sorted(
        str(a["diaSourceId"]) for a in read if (a["diaSource"].get("snr") or 0) > 10
    )
    listen = subprocess.run(
        [sys.executable, "-m", "alertsieve.cli", "listen", "--bootstrap", bootstrap, "--topic",
         f"{prefix}bright", "--from-beginning", "--until-end", "--verify"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert listen.returncode == 0, listen.stdout[-2000:] + listen.stderr[-2000:]
    verdict = listen.stdout.splitlines()[-1]
    assert verdict.startswith(f"verified: complete, {len(published)} of {len(published)}"), verdict
    assert (
        f"4 alerts lost at the source before the job read them ({topic_name} 0 [4, 8))" in verdict
    ), verdict
