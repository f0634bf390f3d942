"""Each contributed filter on hand-made alerts that must pass and must not, evaluated exactly as
the job evaluates it (encoded, decoded by Spark's from_avro, filter columns, pandas UDFs)."""

from __future__ import annotations

import copy

import pytest
from pyspark.sql import functions as F

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.filtering.backtest import records_source
from alertsieve.filtering.checks import validate
from alertsieve.filtering.discovery import discover, load_filter_file
from alertsieve.filtering.model import FilterError
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

SCHEMA = load_rubin_schema()
SIM = AlertSimulator(SimulationConfig(seed=3, stamp_size=0))
FILTERS = {f.name: f for f in discover(entry_points=False)}


def alert_of(population: str, **changes) -> dict:
    """A simulated alert of ``population`` with ``changes`` ("diaSource.snr": 5.0, ...) applied."""
    visit = SIM.visit(0)
    truth = next(
        t for t in (SIM.truth(visit, i) for i in range(2000)) if t.population == population
    )
    record = copy.deepcopy(SIM.record(truth))
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = record
        for p in parents:
            node = node[p]
        node[leaf] = value
    return record


@pytest.fixture(scope="module")
def evaluate(spark):
    def run(name: str, records: list[dict]) -> list[bool]:
        alerts = records_source(spark, SCHEMA, records).decoded()
        match, error = FILTERS[name].evaluate()
        out = alerts.select(
            match.alias("m"), (error if error is not None else F.lit(None)).alias("e")
        ).collect()
        assert [r["e"] for r in out] == [None] * len(out)
        return [bool(r["m"]) for r in out]

    return run


def test_six_contributed_filters_both_kinds():
    assert set(FILTERS) == {
        "bright_high_snr",
        "new_sources",
        "solar_system",
        "periodic_variables",
        "fast_risers",
        "extragalactic",
    }
    kinds = {type(f).__name__ for f in FILTERS.values()}
    assert kinds == {"AlertFilter", "PythonFilter"}
    assert all(f.description and f.contact for f in FILTERS.values())


CASES = {
    "bright_high_snr": [
        (alert_of("bright", **{"diaSource.snr": 120.0, "diaSource.reliability": 0.95}), True),
        (alert_of("bright", **{"diaSource.snr": 120.0, "diaSource.reliability": 0.5}), False),
        (alert_of("bright", **{"diaSource.snr": 20.0, "diaSource.reliability": 0.99}), False),
    ],
    "new_sources": [
        (alert_of("new", **{"diaSource.reliability": 0.9}), True),
        (alert_of("new", **{"diaSource.reliability": 0.3}), False),
        (alert_of("bright"), False),  # has a history
    ],
    "solar_system": [
        (alert_of("solar_system", **{"diaSource.reliability": 0.9}), True),
        (alert_of("solar_system", **{"diaSource.reliability": 0.1}), False),
        (alert_of("ordinary"), False),
    ],
    "periodic_variables": [
        (alert_of("variable", **{"diaSource.extendedness": 0.05}), True),
        (alert_of("variable", **{"diaSource.extendedness": 0.9}), False),  # a galaxy
        (alert_of("new"), False),  # seen once
    ],
    "fast_risers": [
        (alert_of("rising"), True),
        (alert_of("rising", prvDiaSources=[]), False),  # one point is no light curve
        (alert_of("bright"), False),  # steady
    ],
    "extragalactic": [
        (
            alert_of(
                "new",
                **{"diaSource.ra": 192.86, "diaSource.dec": 27.13, "diaSource.reliability": 0.95},
            ),
            True,
        ),
        (
            alert_of(
                "new",
                **{"diaSource.ra": 266.40, "diaSource.dec": -28.94, "diaSource.reliability": 0.95},
            ),
            False,
        ),
        (
            alert_of(
                "solar_system",
                **{"diaSource.ra": 192.86, "diaSource.dec": 27.13, "diaSource.reliability": 0.95},
            ),
            False,
        ),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_filter_passes_what_it_should_and_nothing_else(evaluate, name):
    records, expected = zip(*CASES[name], strict=True)
    assert evaluate(name, list(records)) == list(expected)


def _module(tmp_path, text: str):
    path = tmp_path / "my_filter.py"
    path.write_text(text)
    return path


def test_syntax_error_names_the_file(tmp_path):
    path = _module(
        tmp_path,
        "from alertsieve.filtering.model import AlertFilter\nFILTER = AlertFilter(name='x', sql=\n",
    )
    with pytest.raises(
        FilterError, match=f"{path}: the filter module cannot be imported: SyntaxError"
    ):
        load_filter_file(path)


def test_module_without_filter_says_what_to_write(tmp_path):
    with pytest.raises(FilterError, match="defines no filter; assign an AlertFilter"):
        load_filter_file(_module(tmp_path, "X = 1\n"))


PY_FILTER = """
import pandas as pd
from alertsieve.filtering.model import python_filter

@python_filter(name="{name}", columns={columns})
def f(alerts, **_):
    {body}
"""


@pytest.mark.parametrize(
    ("columns", "body", "message"),
    [
        ({"snr": "diaSource.snrr"}, "return alerts['snr'] > 1", "[FIELD_NOT_FOUND]"),
        (
            {"snr": "diaSource.snr"},
            "return alerts['snr'] * 2",
            "returned a Series of float32, not booleans",
        ),
        (
            {"snr": "diaSource.snr"},
            "return True",
            "returned bool of length ?; expected a boolean pandas Series",
        ),
        (
            {"snr": "diaSource.snr"},
            "raise RuntimeError('no calibration')",
            "RuntimeError: no calibration",
        ),
    ],
)
def test_broken_python_filters_fail_at_start_up(spark, tmp_path, columns, body, message):
    path = _module(tmp_path, PY_FILTER.format(name="broken", columns=columns, body=body))
    (broken,) = load_filter_file(path)
    sample = records_source(spark, SCHEMA, list(SIM.visit_alerts(0, count=32))).decoded()
    with pytest.raises(FilterError) as err:
        validate([broken], sample)
    assert f"filter 'broken' ({path})" in str(err.value) and message in str(err.value)


def test_all_contributed_filters_on_a_simulated_visit_equal_plain_python(spark):
    """Every contributed filter as the job evaluates it (from_avro, columns, pandas UDFs) over 600
    simulated alerts, against the plain-Python oracles over the same bytes decoded by fastavro."""
    from oracles import contributed_filters_in_plain_python

    records = list(AlertSimulator(SimulationConfig(seed=12, stamp_size=0)).visit_alerts(0, count=600))
    decoded = {str(r["diaSourceId"]): SCHEMA.decode(SCHEMA.encode(r)) for r in records}
    expected = contributed_filters_in_plain_python(decoded)
    alerts = records_source(spark, SCHEMA, records).decoded()
    flags = [FILTERS[name].evaluate()[0].alias(name) for name in expected]
    rows = alerts.select(F.col("diaSourceId").cast("string").alias("id"), *flags).collect()
    got = {name: {r["id"] for r in rows if r[name]} for name in expected}
    assert got == expected
    assert sum(map(len, expected.values())) > 0
