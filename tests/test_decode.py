"""Decoding without Kafka in the way: the plain (schemaless) wire format and its reasons."""

from __future__ import annotations

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.stream.config import JobConfig
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import rubin_decoder


def test_plain_schemaless_avro_with_a_configured_schema(spark):
    schema = load_rubin_schema("11.0")
    alerts = list(
        AlertSimulator(SimulationConfig(schema_version="11.0", stamp_size=0, seed=9)).visit_alerts(
            0, count=5
        )
    )
    values = [schema.encode(a) for a in alerts] + [b"", schema.encode(alerts[0])[:40]]
    decoder = rubin_decoder(
        JobConfig(topic="t", wire_format="plain", writer_schema_version="11.0").decode_settings
    )
    out = decoder.decode(message_frame(spark, values), ["diaSourceId"]).orderBy("_offset").collect()
    assert [r["alert"]["diaSourceId"] for r in out[:5]] == [a["diaSourceId"] for a in alerts]
    assert [r["_reason"] for r in out] == [None] * 5 + [
        "empty message",
        "undecodable Avro body for lsst.v11_0.alert",
    ]
