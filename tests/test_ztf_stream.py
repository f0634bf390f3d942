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
    summary = produce(ProduceConfig(bootstrap=bootstrap, topic=topic_name, replay=[str(tmp_path / "export")],
                                    alerts_per_visit=100, interval_s=0, progress=False,
                                    schema_dir=str(tmp_path / "schemas")))  # fmt: skip
    assert summary.ok and summary.acked == len(alerts)

    prefix = f"{topic_name}-"
    cfg = JobConfig(bootstrap=bootstrap, topic=topic_name, available_now=True, output_prefix=prefix,
                    output_partitions=1, discover_filters=True, delta_path=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), metrics_path=None)  # fmt: skip
    lines = run_job(cfg, spark=spark, console=False)

    assert sum(b["input_rows"] for b in lines) == len(alerts)
    assert sum(b["quarantined_rows"] for b in lines) == 0
    expected = {name: {str(a["candid"]) for a in alerts if oracle(a)} for name, oracle in ztf_oracles().items()}
    assert all(expected.values()), expected  # each filter passes some real or edited-real alert
    matches = spark.read.format("delta").load(str(tmp_path / "delta" / "matches")).select("alert_id", "filters")
    archived = matches.collect()
    for name, want in expected.items():
        assert {m.key().decode() for m in consume_all(bootstrap, f"{prefix}{name}")} == want, name
        assert sum(b["matches"][name] for b in lines) == len(want), name
        assert {r["alert_id"] for r in archived if name in r["filters"]} == want, name
    assert set(lines[0]["matches"]) == set(expected)  # the job ran the ZTF filters only
