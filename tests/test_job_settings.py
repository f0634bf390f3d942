"""Settings no other test sets, in one run of the job from a settings file (its own process, so
that spark_conf makes its session): two topics read through topic_pattern, a contributed filter
with a parameter overridden (filter_params) publishing fields as JSON (filter_outputs), the archive
keeping every match's cutouts (delta_cutouts) but not the messages (delta_messages: false), and a
Delta default set through spark_conf. The oracles: plain Python over the fastavro-decoded inputs
(tests/oracles.py), the Delta log's own JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml
from job_helpers import JOB_FILTERS
from kafka_helpers import consume_all
from oracles import _bright_high_snr

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.filtering.discovery import discover
from alertsieve.produce.producer import ProduceConfig, produce

ROOT = Path(__file__).resolve().parents[1]
RETENTION = "interval 3 days"


def test_pattern_params_outputs_cutouts_and_spark_conf_from_a_settings_file(
    kafka, spark, topic_name, tmp_path
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    topics = [f"{topic_name}-a", f"{topic_name}-b"]
    for topic, seed in zip(topics, (5, 6), strict=True):
        assert produce(
            ProduceConfig(
                bootstrap=bootstrap,
                topic=topic,
                visits=1,
                alerts_per_visit=300,
                interval_s=0,
                stamp_size=16,
                seed=seed,
                progress=False,
                schema_dir=schema_dir,
            )
        ).ok
    store = LocalSchemaStore(schema_dir)
    alerts, origin = {}, {}
    for topic in topics:
        for m in consume_all(bootstrap, topic):
            schema_id, body = unframe(m.value())
            alerts[m.key().decode()] = store.get(schema_id).decode(body)
            origin[m.key().decode()] = topic
    assert len(alerts) == 600

    params = dict(
        next(f for f in discover(entry_points=False) if f.name == "bright_high_snr").params
    )
    settings = {
        "bootstrap": bootstrap,
        "topic_pattern": f"{topic_name}-[ab]",
        "available_now": True,
        "starting_offsets": "earliest",
        "output_prefix": f"{topic_name}-out-",
        "discover_filters": False,
        "filter_paths": [str(ROOT / "filters" / "bright_high_snr.py")],
        "sql_filters": [{"name": "bright", "sql": JOB_FILTERS["bright"][0]}],
        "filter_params": {"bright_high_snr": {"max_mag": 22.0}},
        "filter_outputs": {
            "bright_high_snr": {
                "payload": "fields",
                "fields": {"snr": "diaSource.snr"},
                "format": "json",
            }
        },
        "delta_cutouts": True,
        "delta_messages": False,
        "spark_conf": {
            "spark.databricks.delta.properties.defaults.logRetentionDuration": RETENTION
        },
        "delta_path": str(tmp_path / "delta"),
        "checkpoint": str(tmp_path / "ckpt"),
        "metrics_path": None,
        "schema_dir": schema_dir,
        "master": "local[2]",
    }
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump(settings))
    done = subprocess.run(
        [sys.executable, "-m", "alertsieve.cli", "filter", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "done: " in done.stdout and ", 600 alerts, 0 quarantined" in done.stdout

    # filter_params: max_mag 22 instead of its default 20 (more alerts pass: the override is felt)
    science = partial(_bright_high_snr, **{**params, "max_mag": 22.0})
    want = {k for k, a in alerts.items() if science(a)}
    assert len(want) > sum(_bright_high_snr(a, **params) for a in alerts.values())
    # topic_pattern: both topics read; filter_outputs: JSON records of the one field asked for
    records = {
        m.key().decode(): json.loads(m.value())
        for m in consume_all(bootstrap, f"{topic_name}-out-bright_high_snr")
    }
    assert set(records) == want and {origin[k] for k in want} == set(topics)
    for key, record in records.items():
        assert record["snr"] == pytest.approx(alerts[key]["diaSource"]["snr"], rel=1e-6), key
    bright = {k for k, a in alerts.items() if JOB_FILTERS["bright"][1](a)}
    assert {m.key().decode() for m in consume_all(bootstrap, f"{topic_name}-out-bright")} == bright

    table = spark.read.format("delta").load(str(tmp_path / "delta" / "matches"))
    assert "message" not in table.columns  # delta_messages: false
    rows = (
        table.where("array_contains(filters, 'bright')")
        .select("alert_id", "topic", "cutoutDifference")
        .collect()
    )
    assert {r["alert_id"] for r in rows} == bright and {r["topic"] for r in rows} <= set(topics)
    for (
        r
    ) in rows:  # delta_cutouts: every alert match keeps its cutouts, though no filter asks for them
        assert (
            r["cutoutDifference"] == alerts[r["alert_id"]]["cutoutDifference"]
            and r["cutoutDifference"]
        )
    # spark_conf reached the job's session: its default table property is on the table it created
    first = (
        (tmp_path / "delta" / "matches" / "_delta_log" / "00000000000000000000.json")
        .read_text()
        .splitlines()
    )
    metadata = next(json.loads(line)["metaData"] for line in first if '"metaData"' in line)
    assert metadata["configuration"]["delta.logRetentionDuration"] == RETENTION
