"""The real ZTF alerts with histories (and edited copies made to pass each contributed ZTF
filter), exported as a broker's Spark job writes them (record ``topLevelRecord``, fields
reordered, unions flipped, snappy blocks), replayed with ``alertsieve produce --replay``, and
filtered by a job that detects the survey from the messages: nothing quarantined, and every ZTF
filter's topic and Delta rows equal its plain-Python oracle over the fastavro-decoded records."""

from __future__ import annotations

import io
import json

import fastavro
from crafted import spark_export, ztf_messages
from kafka_helpers import consume_all
from ztf_oracles import ztf_oracles

from alertsieve.alerts.ztf import header
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job


def _export(folder, messages: list[tuple[str, bytes]]) -> list[dict]:
    """The alerts of ``messages`` written as one snappy Avro file of a Spark export; returns them
    as fastavro reads them back from that file."""
    records = [next(fastavro.reader(io.BytesIO(m))) for _, m in messages]
    schema = spark_export(json.loads(header(messages[0][1])["avro.schema"]))
    folder.mkdir()
    with open(folder / "part-00000.avro", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec="snappy")
    with open(folder / "part-00000.avro", "rb") as f:
        return list(fastavro.reader(f))


def test_a_spark_export_of_real_ztf_alerts_is_replayed_and_filtered_as_plain_python_says(
    kafka, spark, tmp_path, topic_name
):
    bootstrap = kafka.bootstrap_servers
    alerts = _export(tmp_path / "export", ztf_messages())
    create_topic(bootstrap, topic_name, 2)
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            replay=[str(tmp_path / "export")],
            alerts_per_visit=100,
            interval_s=0,
            progress=False,
            schema_dir=str(tmp_path / "schemas"),
        )
    )
    assert summary.ok and summary.acked == len(alerts)

    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=True,
        delta_path=str(tmp_path / "delta"),
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=None,
    )
    lines = run_job(cfg, spark=spark)

    assert sum(b["input_rows"] for b in lines) == len(alerts)
    assert sum(b["quarantined_rows"] for b in lines) == 0
    expected = {
        name: {str(a["candid"]) for a in alerts if oracle(a)}
        for name, oracle in ztf_oracles().items()
    }
    assert all(expected.values()), expected  # each filter passes some real or edited-real alert
    matches = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "matches"))
        .select("alert_id", "filters")
    )
    archived = matches.collect()
    for name, want in expected.items():
        assert {m.key().decode() for m in consume_all(bootstrap, f"{prefix}{name}")} == want, name
        assert sum(b["matches"][name] for b in lines) == len(want), name
        assert {r["alert_id"] for r in archived if name in r["filters"]} == want, name
    assert set(lines[0]["matches"]) == set(expected)  # the job ran the ZTF filters only


def _exported_messages(messages: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The same alerts as ZTF-framed messages under the Spark export's writer schema: a schema
    the job does not ship, known only from the messages."""
    from alertsieve.alerts.ztf import one_alert_container

    schema = spark_export(json.loads(header(messages[0][1])["avro.schema"]))
    text, parsed = json.dumps(schema).encode(), fastavro.parse_schema(schema)
    out = []
    for key, message in messages:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, next(fastavro.reader(io.BytesIO(message))))
        out.append((key, one_alert_container(text, body.getvalue())))
    return out


def test_a_ztf_schema_is_learned_from_the_newest_and_the_quarantined_messages(
    kafka, spark, tmp_path, topic_name
):
    """A writer schema that is not among the topic's first messages: learned at start-up from its
    newest ones; one in the middle is quarantined ("restart the job to read it"), and the restart
    learns it from the quarantine topic."""
    from confluent_kafka import Producer

    bootstrap = kafka.bootstrap_servers
    real = ztf_messages()[:30]
    exported = _exported_messages(real[12:18])

    def run(topic: str, messages: list[tuple[str, bytes]], checkpoint: str) -> list[dict]:
        create_topic(bootstrap, topic, 1)
        producer = Producer({"bootstrap.servers": bootstrap})
        for key, value in messages:
            producer.produce(topic, key=key, value=value)
        assert producer.flush(30) == 0
        cfg = JobConfig(
            bootstrap=bootstrap,
            topic=topic,
            survey="ztf",
            available_now=True,
            sinks=["kafka"],
            output_prefix=f"{topic_name}-",
            output_partitions=1,
            discover_filters=False,
            code_filters=[AlertFilter(name="bright", sql="candidate.magpsf < 17")],
            checkpoint=str(tmp_path / checkpoint),
            metrics_path=None,
        )
        return run_job(cfg, spark=spark)

    middle = [*real[:12], *exported, *real[18:]]  # the first and newest messages: 3.3 only
    lines = run(topic_name, middle, "a")
    assert sum(b["quarantined_rows"] for b in lines) == len(exported)
    quarantine = {
        m.key().decode(): dict(m.headers())
        for m in consume_all(bootstrap, f"{topic_name}-quarantine")
    }
    assert set(quarantine) == {k for k, _ in exported}
    assert all(
        b"was not seen at start-up: restart the job to read it" in h["reason"]
        for h in quarantine.values()
    )

    lines = run(topic_name, [], "b")  # restarted (afresh): the quarantined messages told the schema
    assert (
        sum(b["input_rows"] for b in lines) == len(middle)
        and sum(b["quarantined_rows"] for b in lines) == 0
    )

    newest = [*real[:12], *exported]  # the new schema at the end only
    lines = run(f"{topic_name}-newest", newest, "c")
    assert (
        sum(b["input_rows"] for b in lines) == len(newest)
        and sum(b["quarantined_rows"] for b in lines) == 0
    )
