"""docs/filters.md's port of a Fink filter, against Fink's own: fink-filters' Rubin livestream
`most_likely_sn` (7.45), run by alertsieve's engine through the port (its columns, the
classifiers' scores of alertsieve's models) and called as Fink's distribution calls it (the
`diaSource` struct exploded into a DataFrame, `clf.*` from fink-science's own SuperNNova and CATS
in .venv-fink with Fink's production rule for single detections, `pred.is_sso`), over the same
alerts: the 47 real LSSTCam alerts with their light curves, and edited copies of them.

The copies are needed because the real alerts all pass Fink's quality block, which
`most_likely_sn` 7.45 inverts (it keeps alerts that *fail* `b_good_quality`): each copy sets
`shape_flag` (a failed shape fit), and a second copy also sets `snr` to 12 (above the filter's 10),
so the matches split the alerts. Fink's `is_sso` is taken as its processed alerts show it
(an `ssSource` record: the same on Fink's own 27 test alerts), the one column not from a package."""

from __future__ import annotations

import re
from pathlib import Path

import fastavro
import pandas as pd
import pytest
from fink_rubin_oracle import classified, prime

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.backtest.diff import diff, filter_named
from alertsieve.backtest.sources import records_source
from alertsieve.filtering.model import AlertFilter

ROOT = Path(__file__).resolve().parents[1]
LIGHT_CURVES = ROOT / "tests" / "data" / "rubin-light-curves" / "rubin-lsstcam-v10_0.avro"


def _edited(alert: dict, n: int, **changes) -> dict:
    """A copy of ``alert`` with ``diaSource`` fields changed and an id of its own."""
    source = {
        **alert["diaSource"],
        **changes,
        "diaSourceId": alert["diaSource"]["diaSourceId"] * 10 + n,
    }
    return {**alert, "diaSource": source}


def _alerts() -> list[dict]:
    with open(LIGHT_CURVES, "rb") as f:
        real = list(fastavro.reader(f))
    flagged = [_edited(a, 1, shape_flag=True) for a in real]
    bright = [_edited(a, 2, shape_flag=True, snr=12.0) for a in real]
    return real + flagged + bright


def _fink_matches(alerts: list[dict]) -> list[str]:
    """The alerts fink-filters' `most_likely_sn` keeps, called as Fink's distribution calls it."""
    from fink_filters.rubin.livestream.filter_most_likely_sn.filter import most_likely_sn

    prime(alerts)
    scores = [classified(a) for a in alerts]
    keep = most_likely_sn(
        pd.Series([s["cats"]["class"] for s in scores]),
        pd.Series([s["cats"]["score"] for s in scores]),
        pd.Series([s["snn"] for s in scores]),
        pd.DataFrame([a["diaSource"] for a in alerts]),
        pd.Series([(a["diaObject"] or {}).get("nDiaSources") for a in alerts], dtype="float"),
        pd.Series([a["ssSource"] is not None for a in alerts]),
    )
    return sorted(
        str(a["diaSource"]["diaSourceId"]) for a, k in zip(alerts, keep, strict=True) if k
    )


@pytest.mark.slow  # fink-science in its own environment, and the classifiers in Spark: ~1 min
def test_the_documented_port_of_most_likely_sn_keeps_what_fink_filters_keeps(spark, tmp_path):
    page = (ROOT / "docs" / "filters.md").read_text()
    (block,) = [
        b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "fink_most_likely_sn" in b
    ]
    (tmp_path / "fink_most_likely_sn.py").write_text(block)
    port = filter_named("fink_most_likely_sn", [tmp_path], builtin=False)
    alerts = _alerts()
    expected = _fink_matches(alerts)
    assert 0 < len(expected) < len(alerts) // 3  # some copies, not all: the cuts decide
    nothing = AlertFilter(name=port.name, survey="rubin", sql="false")
    source = records_source(spark, load_rubin_schema("10.0"), alerts)
    result = diff(spark, nothing, port, source)
    assert (result.alerts, result.added) == (len(alerts), expected)
    assert result.dropped == []
