"""Which view fields a filter reads, as the job decides what to decode: Spark's own analysis of
the expression, a record asked only for its presence or length read as one field."""

from __future__ import annotations

import pytest

from alertsieve.alerts.view import build_view
from alertsieve.filtering.lacking import lacking_fields
from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.prepare import filter_reads
from alertsieve.filtering.references import referenced_paths
from alertsieve.filtering.sql_text import minds_null, only_existence
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.surveys import make_decoder

VIEW = build_view(["7.4", "10.0", "11.1"])
HISTORY = sorted(f.path for f in VIEW if f.path.startswith("prvDiaSources[]."))


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        (
            "diaSource.snr > 50 AND diaSource.reliability > 0.9",
            ["diaSource.snr", "diaSource.reliability"],
        ),
        ("prvDiaSources[0].psfFlux > 1", ["prvDiaSources[].psfFlux"]),
        ("size(prvDiaSources) = 0", ["prvDiaSources[].diaSourceId"]),
        (
            "ssSource IS NOT NULL AND diaSource.band = 'ssSource'",
            ["diaSource.band", "ssSource.diaSourceId"],
        ),
        ("coalesce(diaSourceId, alertId) > 0", ["diaSourceId", "alertId"]),
        # A lambda over the history: Spark cannot tell which fields, so the whole record is read.
        ("exists(prvDiaSources, s -> s.band = 'g')", HISTORY),
    ],
)
def test_paths_a_filter_reads(spark, expression, paths):
    assert sorted(referenced_paths(spark, VIEW, [expression])) == sorted(paths)


def test_a_record_used_for_more_than_its_presence_is_read_whole():
    assert only_existence("size(prvDiaSources) > 2 OR ssSource IS NULL", "prvDiaSources")
    assert not only_existence("to_json(diaObject) LIKE '%nDiaSources%'", "diaObject")
    assert not only_existence("ssSource IS NOT NULL AND ssSource.ssObjectId > 0", "ssSource")


def test_a_field_whose_null_the_filter_handles():
    assert minds_null(
        "NOT coalesce(diaSource.isDipole, false) AND diaSource.snr > 5", "diaSource.isDipole"
    )
    assert minds_null(
        "ssSource IS NOT NULL OR coalesce(`diaSource`.`ssObjectId`, 0) <> 0", "diaSource.ssObjectId"
    )
    assert minds_null("ssSource IS NOT NULL OR ifnull(x, 0) > 1", "ssSource")
    assert not minds_null(
        "coalesce(diaSource.isDipole, false) OR diaSource.isDipole", "diaSource.isDipole"
    )
    assert not minds_null("coalesce(diaSource.snr, 0) > 0", "diaSource.isDipole")  # not read at all
    assert not minds_null("coalesce(diaSource.isDipoleX, false)", "diaSource.isDipole")
    assert not minds_null("ssSource IS NOT NULL AND ssSource.ssObjectId > 0", "ssSource")
    assert not minds_null(
        "note = 'coalesce(diaSource.isDipole, 1)' AND diaSource.isDipole", "diaSource.isDipole"
    )


def test_versions_lacking_a_field_are_named_unless_the_filter_says_what_its_null_means(spark):
    decoder = make_decoder(DecodeSettings(topic="alerts"), [])
    bare = AlertFilter(name="bare", sql="diaSource.isDipole OR diaObject.nDiaSources > 1")
    minded = AlertFilter(
        name="minded", sql="NOT coalesce(diaSource.isDipole, false) AND ssSource IS NULL"
    )
    old = ["7.0", "7.1", "7.2", "7.3", "7.4"]
    assert lacking_fields(
        decoder, [bare, minded], filter_reads(spark, decoder, [bare, minded])
    ) == {"bare": {"diaSource.isDipole": old, "diaObject.nDiaSources": old}}


def test_one_analysis_per_expression_shape():
    from alertsieve.filtering.references import shape

    assert shape("pmod(diaSource.diaSourceId, 5000) = 17 AND diaSource.snr > 5.5e1") == shape(
        "pmod(diaSource.diaSourceId, 750) = 3 AND diaSource.snr > 6"
    )
    # Quoted text names fields (diaSource['snr']) and numbers inside names stay: other shapes.
    assert shape("diaSource['snr'] > 1") != shape("diaSource['psfFlux'] > 1")
    assert shape("`band 1` = 'g1'") == "`band 1` = 'g1'"
    assert shape("prvDiaSources[0].psfFlux > 1") == "prvDiaSources[0].psfFlux > 0"
