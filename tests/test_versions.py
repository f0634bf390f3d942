"""A filter's version changes with what decides its matches, and with nothing else."""

from __future__ import annotations

import json
from dataclasses import replace

from alertsieve.filtering.discovery import discover
from alertsieve.filtering.model import AlertFilter, with_params
from alertsieve.publish.versions import VERSION_DIGITS, filter_version

BASE = AlertFilter(name="bright", sql="diaSource.snr > {min_snr}", params={"min_snr": 50.0})


def test_a_version_is_short_hex_and_stable():
    v = filter_version(BASE)
    assert len(v) == VERSION_DIGITS and int(v, 16) >= 0
    assert (
        filter_version(
            AlertFilter(name="bright", sql="diaSource.snr > {min_snr}", params={"min_snr": 50.0})
        )
        == v
    )


def test_sql_and_parameters_change_it():
    v = filter_version(BASE)
    assert filter_version(replace(BASE, sql="diaSource.snr >= {min_snr}")) != v
    assert filter_version(with_params(BASE, {"min_snr": 60.0}, "test")) != v
    # the same SQL after parameters, written another way, is another text: another version
    assert filter_version(AlertFilter(name="bright", sql="diaSource.snr > 50.0")) != v


def test_what_does_not_decide_matches_does_not_change_it():
    v = filter_version(BASE)
    for change in (
        {"description": "new words"},
        {"contact": "a@b.c"},
        {"topic": "elsewhere"},
        {"payload": "fields", "fields": {"snr": "diaSource.snr"}, "format": "json"},
        {"cutouts": True},
        {"origin": "another file"},
        {"name": "renamed"},
    ):
        assert filter_version(replace(BASE, **change)) == v, change


def _python_filter(folder, body: str):
    (folder / "mine.py").write_text(
        "from alertsieve.filtering.model import python_filter\n"
        "@python_filter(name='mine', columns={'snr': 'diaSource.snr'}, params={'k': 1.0})\n"
        f"def mine(columns, k):\n    {body}\n"
    )
    (f,) = discover([folder], builtin=False, entry_points=False)
    return f


def test_a_python_filters_code_changes_it(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    c = tmp_path / "c"
    for d in (a, b, c):
        d.mkdir()
    first = filter_version(_python_filter(a, "return columns.snr > k"))
    assert filter_version(_python_filter(b, "return columns.snr > k")) == first
    assert filter_version(_python_filter(c, "return columns.snr >= k")) != first


def test_a_catalog_it_reads_changes_it(tmp_path):
    f = AlertFilter(name="near_star", sql="xmatch.stars.distance_arcsec < 2")
    folder = tmp_path / "stars"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"name": "stars", "rows": 10}))
    (folder / "index.parquet").write_bytes(b"first index")
    v = filter_version(f, tmp_path)
    assert filter_version(BASE, tmp_path) == filter_version(BASE)  # reads no catalog
    (folder / "index.parquet").write_bytes(b"rebuilt index")
    assert filter_version(f, tmp_path) != v
