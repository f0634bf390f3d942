"""The predicate-first matcher (``alertsieve.filtering.predicates``) without Spark: a thousand
realistic users' filters matched over simulated alerts select exactly what each filter's numpy
twin (``alertsieve.bench.user_population``, written cut by cut, independently of the clauses)
selects, each (alert, filter) pair once. tests/test_clauses.py holds it to Spark's own SQL over
real alerts; this holds it at a broker's scale, where its slices and candidates matter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from alertsieve.bench.user_population import columns, population, slim
from alertsieve.filtering.clauses import Unfit, clauses
from alertsieve.filtering.predicates import build, match
from alertsieve.filtering.predicates import columns as matcher_columns
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig


def _value(alert: dict, sql: str):
    """A compared value as Spark reads it from the view (the few forms the population writes)."""
    if sql == "size(prvDiaSources)":
        history = alert.get("prvDiaSources")
        return -1.0 if history is None else float(len(history))
    if sql.startswith("CAST(") and sql.endswith(" IS NULL AS DOUBLE)"):
        return float(alert.get(sql[5:].split(" IS NULL")[0]) is None)
    value = alert
    for key in sql.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


@pytest.fixture(scope="module")
def alerts() -> list[dict]:
    sim = AlertSimulator(SimulationConfig())
    visit = sim.visit(0)
    return [slim(sim.alert(visit, i)) for i in range(3000)]


def test_a_thousand_filters_match_as_their_twins_select_each_pair_once(alerts):
    users = population(1000, alerts[:2000], seed=5)
    found = {}
    for i, u in enumerate(users):
        try:
            found[i] = clauses(u.filter.sql)
        except Unfit:
            assert u.template == "brightening"  # x > k * y: not a comparison with a constant
    assert len(found) > 900
    p = build(found)
    batch = alerts[2000:]  # alerts the thresholds were not tuned on
    numbers = [[_value(a, v) for a in batch] for v in p.numbers]
    values = [np.array([math.nan if x is None else float(x) for x in xs]) for xs in numbers]
    nulls = [np.array([x is None for x in xs]) for xs in numbers]
    strings = [[_value(a, v) for a in batch] for v in p.strings]
    alert, filters = match(p, matcher_columns(p, values, nulls, strings))
    pairs = list(zip(alert.tolist(), filters.tolist(), strict=True))
    assert len(pairs) == len(set(pairs))
    cols = columns(batch)
    want = {(a, i) for i in found for a in np.flatnonzero(users[i].twin(cols)).tolist()}
    assert want and set(pairs) == want


def test_compiled_matches_come_first_and_tallies_count_each_match_once():
    """``predicate_first.merged`` puts each alert's compiled matches (any offset into a sliced
    Arrow list) before its predicate-first ones, as a Python loop over the same lists does; a
    tally counts the matches (never an error's negative index), read back from bytes or base64."""
    import base64

    from alertsieve.stream.predicate_first import merged, tally, tally_counts

    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        lists = [list(rng.integers(-3, 50, rng.integers(0, 4))) for _ in range(n + 3)]
        offsets = np.cumsum([0] + [len(x) for x in lists])
        flat = np.array([x for lst in lists for x in lst], np.int32)
        s = int(rng.integers(0, 3))  # an Arrow slice starts past the values' first
        pairs = sorted(
            (a, int(f)) for a in range(n) for f in rng.integers(0, 99, rng.integers(0, 3))
        )
        alerts = np.array([a for a, _ in pairs], np.int64)
        filters = np.array([f for _, f in pairs], np.int32)
        out, values = merged(offsets[s : s + n + 1], flat, alerts, filters, n)
        for r in range(n):
            want = lists[s + r] + [f for a, f in pairs if a == r]
            assert list(values[out[r] : out[r + 1]]) == want
    counted = tally(np.array([3, -1, 3, 5, 0, -4]))
    assert tally_counts([counted, base64.b64encode(counted).decode()]) == {0: 2, 3: 4, 5: 2}
