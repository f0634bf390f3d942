"""The Schema Registry (`schema_registry`, `produce --schema-registry`): confluent-kafka's own client
and our store on it against a registry speaking the Confluent REST API over HTTP
(tests/registry_server.py); then a visit produced through the registry and filtered by a job that
reads it. The oracle: the registry's own records, the message bytes read by hand, fastavro."""

from __future__ import annotations

import io
import json
import struct
import threading
from pathlib import Path

import fastavro
import pytest
from job_helpers import JOB_FILTERS, NAMES, counted_alerts, wait_for
from kafka_helpers import consume_all, send
from registry_server import FIRST_ID, serve

from alertsieve.alerts.schemas import RegistrySchemaStore, SchemaError, frame, load_rubin_schema
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.settings import ConfigError
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import FilterStream, run_job
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.surveys import rubin_decoder

pytestmark = pytest.mark.integration  # a server on a port of its own


def test_the_store_registers_lists_and_reads_schemas_by_id():
    new, old = load_rubin_schema("11.1"), load_rubin_schema("7.4")
    with serve() as (url, registry):
        store = RegistrySchemaStore(url)
        first = store.register(new.definition, "alerts-value")
        second = store.register(old.definition, "alerts-value")
        again = store.register(new.definition, "other-value")  # the same schema keeps its id
        assert (first.schema_id, second.schema_id, again.schema_id) == (
            FIRST_ID,
            FIRST_ID + 1,
            FIRST_ID,
        )
        assert (first.name, second.name) == ("lsst.v11_1.alert", "lsst.v7_4.alert")
        assert registry.subjects == {
            "alerts-value": [FIRST_ID, FIRST_ID + 1],
            "other-value": [FIRST_ID],
        }
        fresh = RegistrySchemaStore(url)  # a new client: what the server holds, not a cache
        assert (
            fresh.get(FIRST_ID + 1).definition == json.loads(registry.schemas[1]) == old.definition
        )
        assert [s.schema_id for s in fresh.candidates("alerts-value")] == [FIRST_ID, FIRST_ID + 1]
        with pytest.raises(SchemaError, match=f"schema id {FIRST_ID + 7}: .*not found"):
            fresh.get(FIRST_ID + 7)
        # A job reading a version the registry has no writer of is refused at start-up, saying so.
        settings = DecodeSettings(
            topic="alerts", schema_registry=url, schema_versions=("10.0", "11.1")
        )
        with pytest.raises(ConfigError) as refused:
            rubin_decoder(settings)
        assert str(refused.value) == (
            f"the command line: schema_versions ['10.0'] have no writer schema in {url};"
            " register them, or choose from those it has"
        )


def test_a_visit_produced_and_filtered_through_the_registry(kafka, spark, topic_name, tmp_path):
    bootstrap = kafka.bootstrap_servers
    with serve() as (url, registry):
        assert produce(
            ProduceConfig(
                bootstrap=bootstrap,
                topic=topic_name,
                visits=1,
                alerts_per_visit=200,
                interval_s=0,
                stamp_size=0,
                seed=17,
                progress=False,
                schema_registry=url,
            )
        ).ok
        assert registry.subjects == {
            f"{topic_name}-value": [FIRST_ID]
        }  # registered under the topic's subject
        writer = fastavro.parse_schema(json.loads(registry.schemas[0]))
        alerts = {}
        for m in consume_all(bootstrap, topic_name):
            magic, schema_id = struct.unpack(
                ">bI", m.value()[:5]
            )  # Confluent's framing, read by hand
            assert (magic, schema_id) == (0, FIRST_ID)  # the registry's id, not Rubin's
            alerts[m.key().decode()] = fastavro.schemaless_reader(
                io.BytesIO(m.value()[5:]), writer, None
            )
        assert len(alerts) == 200
        cfg = JobConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            available_now=True,
            sinks=["kafka"],
            output_prefix=f"{topic_name}-",
            discover_filters=False,
            metrics_path=None,
            code_filters=[AlertFilter(name=n, sql=JOB_FILTERS[n][0]) for n in NAMES],
            checkpoint=str(tmp_path / "ckpt"),
            schema_registry=url,
        )
        run_job(cfg, spark=spark)
    for name in NAMES:
        want = {k for k, a in alerts.items() if JOB_FILTERS[name][1](a)}
        assert (
            want
            and {m.key().decode() for m in consume_all(bootstrap, f"{topic_name}-{name}")} == want
        ), name


def _real(path: str) -> list[dict]:
    with open(Path(__file__).parent / "data" / "real" / path, "rb") as f:
        return list(fastavro.reader(f))


def test_a_running_job_reads_a_schema_id_registered_after_it_started(
    kafka, spark, topic_name, tmp_path
):
    """Real-Time Mode. The registry holds Rubin v10.0 when the job starts, and its real LSSTCam
    alerts are read; Rubin v7.4 is registered while it runs, and the real Operations Rehearsal
    alerts framed with that new id are read too, nothing quarantined and each match published
    once; a message naming an id no registry nor Rubin holds is quarantined with its reason."""
    bootstrap, subject = kafka.bootstrap_servers, f"{topic_name}-value"
    v10, v74 = (
        _real("rubin-lsstcam-v10_0.avro") + _real("rubin-lsstcam-v10_0-b.avro"),
        _real("rubin-opsrehearsal-v7_4.avro"),
    )
    create_topic(bootstrap, topic_name, 1)
    prefix = f"{topic_name}-"
    with serve() as (url, registry):
        store = RegistrySchemaStore(url)
        first = store.register(load_rubin_schema("10.0").definition, subject)
        sent = [(str(a["diaSource"]["diaSourceId"]), frame(first.schema_id, first.encode(a)))
                for a in v10]  # fmt: skip
        send(bootstrap, topic_name, sent)
        cfg = JobConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            trigger="realtime=5s",
            sinks=["kafka"],
            output_prefix=prefix,
            output_partitions=1,
            discover_filters=False,
            code_filters=[AlertFilter(name="bright", sql=BRIGHT)],
            checkpoint=str(tmp_path / "ckpt"),
            metrics_path=None,
            schema_registry=url,
        )
        stream = FilterStream(spark, cfg)
        job = threading.Thread(target=stream.run)
        try:
            job.start()
            wait_for(lambda: counted_alerts(bootstrap, f"{prefix}counts") == 8, "v10.0 read", 120)
            later = store.register(load_rubin_schema("7.4").definition, subject)
            assert later.schema_id == FIRST_ID + 1 and registry.subjects[subject] == [
                FIRST_ID,
                FIRST_ID + 1,
            ]
            newer = [(str(a["diaSource"]["diaSourceId"]), frame(later.schema_id, later.encode(a)))
                     for a in v74]  # fmt: skip
            nowhere = ("nowhere", frame(1299, first.encode(v10[0])))
            send(bootstrap, topic_name, [*newer, nowhere])
            sent += newer
            wait_for(lambda: counted_alerts(bootstrap, f"{prefix}counts") == 15, "all read", 180)
        finally:
            stream.stop()
            job.join(60)
    published = [m.key().decode() for m in consume_all(bootstrap, f"{prefix}bright")]
    bright = [k for k, a in zip([k for k, _ in sent], [*v10, *v74], strict=True) if _bright(a)]
    assert sorted(published) == sorted(bright) and {k for k, _ in newer} & set(bright)
    (quarantined,) = consume_all(bootstrap, f"{prefix}quarantine")
    assert (
        quarantined.key() == b"nowhere"
        and dict(quarantined.headers())["reason"]
        == (
            f"unknown schema id 1299: neither {url} nor Rubin's shipped versions hold it;"
            " register it"
        ).encode()
    )


BRIGHT = "diaSource.snr > 10"


def _bright(alert: dict) -> bool:
    return (alert["diaSource"].get("snr") or 0) > 10
