"""Which view fields a filter reads, as the job decides what to decode: Spark's own analysis of
the expression, a record asked only for its presence or length read as one field."""

from __future__ import annotations

import pytest

from alertsieve.alerts.view import build_view
from alertsieve.stream.references import only_existence, referenced_paths

VIEW = build_view(["7.4", "10.0", "11.1"])
HISTORY = sorted(f.path for f in VIEW if f.path.startswith("prvDiaSources[]."))


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        ("diaSource.snr > 50 AND diaSource.reliability > 0.9", ["diaSource.snr", "diaSource.reliability"]),
        ("prvDiaSources[0].psfFlux > 1", ["prvDiaSources[].psfFlux"]),
        ("size(prvDiaSources) = 0", ["prvDiaSources[].diaSourceId"]),
        ("ssSource IS NOT NULL AND diaSource.band = 'ssSource'", ["diaSource.band", "ssSource.diaSourceId"]),
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
