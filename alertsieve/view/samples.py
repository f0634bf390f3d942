"""Messages held in memory, decoded as the job decodes a topic's: lsst-alert-packet's sample alert
of each Rubin version, and rows shaped like the Kafka source's to carry any held message."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from alertsieve.view.decoder import Decoder


def rubin_samples(decoder: Decoder) -> list[bytes]:
    """lsst-alert-packet's ``fakeAlert.avro`` of each version the decoder reads, framed as Rubin
    sends them."""
    from lsst.alert.packet.schema import get_schema_root

    from alertsieve.alerts.replay import read_raw_records
    from alertsieve.alerts.schemas import frame

    out = []
    for schema_id, version in decoder.versions.items():
        major, minor = version.split("#")[0].split(".")
        path = Path(get_schema_root()) / major / minor / "sample_data" / "fakeAlert.avro"
        if path.exists():
            out += [
                frame(schema_id, r.body) if decoder.wire_format == "confluent" else r.body
                for r in read_raw_records(path)
            ]
    return out


def message_frame(spark, values: list[bytes], topic: str = "held"):
    """Messages held in memory as rows shaped like the Kafka source's (one partition, offsets in
    order): start-up samples go through the job's own decoder this way."""
    now = datetime.now().astimezone()
    rows = [(topic, 0, i, now, None, v) for i, v in enumerate(values)]
    schema = (
        "topic string, partition int, offset long, timestamp timestamp, key binary, value binary"
    )
    return spark.createDataFrame(rows, schema)
