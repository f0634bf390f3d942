"""Decode ZTF's container-per-message topics in the JVM: the header is read as an Avro record to
find the message's writer schema (by the SHA-256 of its JSON), and the whole message is read as
one record of that schema's container form (``alertsieve.alerts.ztf``), pruned to the fields
asked for. No Python on the path, so Real-Time Mode can run it too."""

from __future__ import annotations

import json

from alertsieve.alerts.ztf import HEADER_SCHEMA, container_schema
from alertsieve.stream.view_decode import pruned, tree


def decode_ztf(raw, writers: dict[str, dict], paths: list[str]):
    """``raw`` Kafka rows -> the same rows with ``_schema_fingerprint`` and ``alert`` (a struct of
    the fields in ``paths``, ZTF's own names: ``candidate.magpsf``, ``prv_candidates[].jd``); null
    when the message is not a container of one of ``writers`` (fingerprint -> writer schema)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    value = F.col("value")
    meta = from_avro(value, json.dumps(HEADER_SCHEMA), {"mode": "PERMISSIVE"})["_container_meta"]
    fingerprint = F.sha2(meta["avro.schema"], 256)
    step = raw.withColumn("_schema_fingerprint", fingerprint)
    wanted = tree(paths)
    alert = None
    for key, writer in writers.items():
        container = container_schema(writer)
        reader = pruned(container, wanted)
        decoded = from_avro(value, json.dumps(container),
                            {"mode": "PERMISSIVE", "avroSchema": json.dumps(reader)})  # fmt: skip
        branch = F.when(F.col("_schema_fingerprint") == key, decoded)
        alert = branch if alert is None else branch.otherwise(alert)
    return step.select(*raw.columns, "_schema_fingerprint", alert.alias("alert"))
