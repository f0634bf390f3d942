"""A second ZTF writer schema for the tests, and real ZTF alerts written with it.

ZTF's alert schema 4.01 added ``fp_hists``, the forced-photometry history; its record is ZTF's own
(``tests/data/ztf-4.01``, see its SOURCES.md). The schema here is the shipped 3.3 alert schema with
that field added: a writer schema a job has not seen at start-up, whose alerts carry every 3.3
field unchanged."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro

from alertsieve.alerts.ztf import one_alert_container, shipped_ztf_schemas

FP_HIST = Path(__file__).parent / "data" / "ztf-4.01" / "fp_hist.avsc"


def ztf_401_schema() -> dict:
    (text,) = shipped_ztf_schemas()
    schema = json.loads(text)
    fp_hist = json.loads(FP_HIST.read_text())
    fp_hists = {"type": "array", "items": fp_hist}
    field = {"name": "fp_hists", "type": ["null", fp_hists], "default": None}
    return {**schema, "version": "4.01", "fields": [*schema["fields"], field]}


def as_ztf_401(container: bytes) -> bytes:
    """A ZTF message (a one-alert container) written again with the 4.01 schema: the same alert,
    ``fp_hists`` null."""
    (record,) = fastavro.reader(io.BytesIO(container))
    schema = ztf_401_schema()
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), {**record, "fp_hists": None})
    return one_alert_container(json.dumps(schema).encode(), body.getvalue())
