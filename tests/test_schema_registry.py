"""The Schema Registry (`schema_registry`, `produce --schema-registry`): confluent-kafka's own client
and our store on it against a registry speaking the Confluent REST API over HTTP
(tests/registry_server.py); then a visit produced through the registry and filtered by a job that
reads it. The oracle: the registry's own records, the message bytes read by hand, fastavro."""

from __future__ import annotations

import io
import json
import struct

import fastavro
import pytest
from job_helpers import JOB_FILTERS, NAMES
from kafka_helpers import consume_all
from registry_server import FIRST_ID, serve

from alertsieve.alerts.schemas import RegistrySchemaStore, SchemaError, load_rubin_schema
from alertsieve.filtering.model import AlertFilter
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.settings import ConfigError
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job
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
