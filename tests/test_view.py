"""The filter view across Rubin versions, checked against the schemas themselves and against real
alerts (LSSTCam v10.0, Operations Rehearsal v7.4) decoded by fastavro."""

from __future__ import annotations

from pathlib import Path

import fastavro
import pytest

from alertsieve.alerts.schemas import load_rubin_schema, rubin_versions
from alertsieve.alerts.view import (
    WIDENING,
    ViewError,
    build_view,
    leaves,
    missing_in,
    presence_table,
)

REAL = Path(__file__).parent / "data" / "real"
MODERN = [v for v in rubin_versions() if int(v.split(".")[0]) >= 7]
ROOT = Path(__file__).resolve().parents[1]


def _widens_to(kind: str, view_kind: str) -> bool:
    return kind == view_kind or (
        kind in WIDENING
        and view_kind in WIDENING
        and WIDENING.index(kind) <= WIDENING.index(view_kind)
    )


def test_every_field_of_every_version_is_in_the_view_with_a_type_it_widens_to():
    view = {f.path: f for f in build_view(MODERN)}
    for version in MODERN:
        for path, (kind, nullable, _) in leaves(load_rubin_schema(version).definition).items():
            f = view[path]
            assert version in f.versions
            assert _widens_to(kind, f.type), (version, path, kind, f.type)
            assert f.nullable or not nullable, (version, path)
    for f in view.values():
        if len(f.versions) < len(MODERN):
            assert f.nullable, f"{f.path} is missing from some versions, so it must be nullable"


def test_what_moved_between_versions():
    view = {f.path: f for f in build_view(["7.4", "10.0", "11.1"])}
    assert view["alertId"].versions == ["7.4"]  # v8 keyed alerts by their diaSourceId
    assert view["diaSourceId"].versions == ["10.0", "11.1"]
    assert view["diaSource.psfFlux"].versions == ["7.4", "10.0", "11.1"]
    assert view["diaSource.exposureTime"].versions == ["11.1"]
    assert missing_in(
        list(view.values()), ["diaSource.exposureTime", "diaSource.ra"], ["7.4", "11.1"]
    ) == {"diaSource.exposureTime": ["7.4"], "diaSource.ra": []}


def test_types_that_cannot_share_a_column_are_refused():
    from alertsieve.alerts.view import widen

    assert widen("int", "double", "x") == "double"
    with pytest.raises(ViewError, match="x: string in one version and long in another"):
        widen("string", "long", "x")


@pytest.mark.parametrize(
    ("name", "version"),
    [("rubin-lsstcam-v10_0.avro", "10.0"), ("rubin-opsrehearsal-v7_4.avro", "7.4")],
)
def test_real_alerts_are_written_with_lsst_alert_packet_schemas_and_fit_the_view(name, version):
    """The real files' own writer schema is lsst-alert-packet's schema of that version, and every
    value of every real alert sits at a path of the view."""
    with open(REAL / name, "rb") as f:
        reader = fastavro.reader(f)
        writer = reader.writer_schema
        alerts = list(reader)
    ours = load_rubin_schema(version)
    assert fastavro.schema.to_parsing_canonical_form(writer) == (
        fastavro.schema.to_parsing_canonical_form(ours.parsed)
    )
    view = {f.path for f in build_view(MODERN)}

    def paths(node, prefix=""):
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, f"{prefix}.{k}" if prefix else k)
        elif isinstance(node, list):
            for item in node:
                yield from paths(item, f"{prefix}[]")
        elif node is not None:  # a null record (no history, no ssSource) has no leaves to place
            yield prefix

    seen = {p for a in alerts for p in paths(a)}
    assert len(alerts) == 6 and seen and seen <= view, sorted(seen - view)[:5]


def test_the_documented_view_is_the_generated_one():
    """docs/filter-view.md is `alertsieve schemas view` as of now: regenerate it when the schemas
    (lsst-alert-packet) change."""
    from alertsieve.alerts.view import view_document

    doc = (ROOT / "docs" / "filter-view.md").read_text()
    assert doc == view_document(MODERN)
    assert presence_table(MODERN) in doc
