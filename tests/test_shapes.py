"""Shapes of filters: the constants lifted out of SQL text, and which filters share a shape."""

from __future__ import annotations

from alertsieve.filtering.model import AlertFilter, PythonFilter
from alertsieve.filtering.shapes import find_shapes, lift


def test_numbers_and_strings_are_lifted_with_their_kinds():
    lifted = lift(
        "diaSource.snr > 5.5 AND diaSource.band IN ('g', 'r') AND size(prvDiaSources) <= 3000000000"
    )
    assert lifted.constants == (5.5, "g", "r", 3000000000)
    assert lifted.kinds == ("double", "string", "string", "bigint")
    assert lifted.render(["a", "b", "c", "d"]) == (
        "diaSource.snr > a AND diaSource.band IN (b, c) AND size(prvDiaSources) <= d"
    )


def test_the_text_around_the_constants_is_the_shape():
    one = lift("diaSource.snr >  30 AND diaSource.reliability > 0.9")
    other = lift("diaSource.snr > 12 AND   diaSource.reliability > 1e-3")
    assert one.key == other.key and one.constants == (30, 0.9) and other.constants == (12, 0.001)
    assert lift("diaSource.snr > 5").key != lift("diaSource.snr > 5.0").key  # int, double
    # declination is a field, not the DEC type: its cut is lifted (it kept sky boxes compiled)
    box = lift("diaSource.ra BETWEEN 21.9 AND 51.3 AND diaSource.dec > -15.8")
    assert box.constants == (21.9, 51.3, 15.8)
    assert box.key == lift("diaSource.ra BETWEEN 1.5 AND 2.5 AND diaSource.dec > -3.5").key


def test_what_is_not_a_value_stays_in_the_text():
    assert lift("x1 > 2L AND CAST(y AS DECIMAL(10, 2)) > 0.5").constants == (0.5,)
    assert lift("s = 'it''s' AND t = 'a\\'b' AND u = 'c'").constants == ("c",)
    assert lift("ts > now() - INTERVAL 3 DAYS").constants == ()
    assert lift("diaSource.snr > 5").pieces == ("diaSource.snr > ", "")


def test_filters_that_share_a_shape_and_a_record_are_grouped():
    filters = [
        AlertFilter(name="a", sql="diaSource.snr > {t}", params={"t": 5.0}),
        AlertFilter(name="b", sql="diaSource.snr > 7.5"),
        AlertFilter(
            name="c", sql="diaSource.snr > 9.0", payload="fields", fields={"s": "diaSource.snr"}
        ),
        AlertFilter(name="d", sql="diaSource.reliability > 0.5"),
        PythonFilter(name="p", function=lambda c: c.x > 1, columns={"x": "diaSource.snr"}),
        AlertFilter(name="e", sql="ssSource IS NOT NULL"),
        AlertFilter(name="f", sql="ssSource IS NOT NULL"),
    ]
    shapes = find_shapes(filters)
    assert [(s.members, s.constants) for s in shapes] == [((0, 1), ((5.0,), (7.5,)))]
