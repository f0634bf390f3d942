"""Users' SQL is untrusted input: what a filter's text may hold is decided before any of it runs
(functions by allowlist, sizes bounded, patterns that cannot backtrack without bound), its
parameters are values and never text, and its errors on an alert are its own no-match.

The oracle of each outcome is plain Python over the real ZTF alerts of tests/data/real as
fastavro decodes them; the refusals are checked through ``validate``, the one check that
``filters check``, the job's start-up and a ``--watch`` deployment run.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import fastavro
import pytest

from alertsieve.filtering.checks import validate
from alertsieve.filtering.model import AlertFilter, FilterError, with_params
from alertsieve.filtering.untrusted import (
    ALLOWED_FUNCTIONS,
    MAX_BUILT,
    REFUSED,
    UntrustedSqlError,
    fill,
    pattern_refusal,
    refusals,
)

DATA = Path(__file__).parent / "data"
ZTF = sorted((DATA / "real" / "ztf-3.3").glob("*.avro"))
#: The table of a new user's mistakes docs/operating.md checks (``filters check``).
MISTAKES = DATA / "untrusted" / "mistakes.yaml"


@pytest.fixture(scope="module")
def ztf(spark):
    """(the real ZTF alerts in the filter view, the same alerts as fastavro reads them)."""
    from alertsieve.filtering.prepare import sample_alerts
    from alertsieve.view.surveys import ztf_decoder

    messages = [p.read_bytes() for p in ZTF]
    view = sample_alerts(spark, ztf_decoder(messages[:1]), messages)
    alerts = [next(iter(fastavro.reader(io.BytesIO(m)))) for m in messages]
    return view.cache(), alerts


def _refused(ztf, sql: str, **params) -> str:
    view, _ = ztf
    f = AlertFilter(name="f", sql=sql, params=params, origin="users.yaml (filters[0])")
    with pytest.raises(FilterError) as caught:
        validate([f], view)
    return str(caught.value)


def test_the_documented_mistakes_are_refused_or_run_contained(ztf):
    """docs/operating.md's table: each refused with its line, or (the error, the injection)
    compiled to run, as ``filters check`` says."""
    from alertsieve.filtering.tables import load_filter_table

    view, _ = ztf
    said = {}
    for f in load_filter_table(MISTAKES):
        try:
            validate([f], view)
            said[f.name] = "ok"
        except FilterError as e:
            said[f.name] = str(e).split(": sql is refused: ", 1)[1]
    assert said == {
        "zero_fid": "ok",
        "exit_jvm": "java_method(...) calls Java code by name: it could stop the job or read its"
        " secrets",
        "injected": "ok",
        "big_string": "repeat(...) builds 500,000,000 characters or elements, above 10,000",
        "big_array": "sequence(...) builds 300,000,000 characters or elements, above 10,000",
        "backtracks": "RLIKE's pattern '(a+)+$' repeats a group that repeats or has alternatives"
        " (it can backtrack without bound)",
        "sampled": "rand(...) is random: a replayed batch would publish other matches (for a"
        " deterministic sample, xxhash64(objectId) % 100 < 10)",
        "int_id": "ok",
    }


# --- allowlist ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        (
            "java_method('java.lang.System', 'exit', 3) IS NULL",
            "java_method(...) calls Java code by name",
        ),
        ("reflect('java.lang.System', 'getenv', 'HOME') IS NOT NULL", "reflect(...) calls Java"),
        ("IDENTIFIER('reflect')('java.lang.System', 'getenv') IS NULL", "IDENTIFIER(...)"),
        ("rand() < 0.1", "rand(...) is random: a replayed batch would publish other matches"),
        ("candidate.jd > unix_timestamp()", "unix_timestamp() without an argument reads the clock"),
        ("current_date IS NOT NULL", "current_date reads the clock"),
        ("raise_error('stop') IS NULL", "raise_error(...) raises an error on purpose"),
        ("candidate.magpsf > (SELECT 1)", "it contains SELECT"),
        ("count(candidate.magpsf) > 1", "count(...) aggregates over many rows"),
        ("xpath_boolean('<a/>', 'a') IS NULL", "xpath_boolean(...) is not on the list"),
        ("candidate.magpsf > :limit", "a parameter marker (:name): parameters are {name}"),
    ],
)
def test_functions_off_the_list_are_refused_naming_the_filter_the_file_and_why(ztf, sql, said):
    message = _refused(ztf, sql)
    assert message.startswith("filter 'f' (users.yaml (filters[0])): sql is refused: ")
    assert said in message


def test_the_list_is_spark_s_own_functions_and_none_it_refuses(spark):
    known = {r[0] for r in spark.sql("SHOW FUNCTIONS").collect()} | {"cast", "try_cast", "case"}
    assert sorted(ALLOWED_FUNCTIONS - known) == []
    assert sorted(ALLOWED_FUNCTIONS & set(REFUSED)) == []


def test_a_broker_s_users_filters_pass(spark):
    """The bench's realistic population passes (its 10,000 cost the check at start-up the
    seconds docs/benchmarks.md gives, measured over ``alertsieve bench``'s population)."""
    from alertsieve.bench.user_population import population, slim
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    sim = AlertSimulator(SimulationConfig())
    visit = sim.visit(0)
    users = population(1000, [slim(sim.alert(visit, i)) for i in range(2000)], seed=5)
    texts = [u.filter.expressions()["sql"] for u in users]
    found = refusals(spark, texts)
    assert [(t, why) for t, why in zip(texts, found, strict=True) if why] == []


# --- parameters -----------------------------------------------------------------------------------

INJECTION = "t' OR candidate.magpsf > 0 OR 'a' = 'b"


def test_a_parameter_is_a_typed_literal_whatever_it_holds(ztf):
    view, alerts = ztf
    sign = AlertFilter(
        name="sign",
        sql="candidate.magpsf < 15.5 AND candidate.isdiffpos = '{sign}'",
        params={"sign": "f"},
    )
    injected = replace(with_params(sign, {"sign": INJECTION}, "users.yaml"), name="injected")
    assert injected.expressions()["sql"] == (
        "candidate.magpsf < 15.5 AND candidate.isdiffpos = 't\\' OR candidate.magpsf > 0 OR"
        " \\'a\\' = \\'b'"
    )
    validate([sign, injected], view)
    rows = view.select(*[f.evaluate()[0].alias(f.name) for f in (sign, injected)]).collect()
    want = sum(
        a["candidate"]["magpsf"] < 15.5 and a["candidate"]["isdiffpos"] == "f" for a in alerts
    )
    assert 0 < want < len(alerts)
    assert sum(r["sign"] for r in rows) == want
    assert sum(r["injected"] for r in rows) == 0  # no alert's isdiffpos is that string


@pytest.mark.parametrize(
    ("sql", "params", "said"),
    [
        (
            "objectId LIKE 'ZTF{year}%'",
            {"year": "18"},
            "a parameter inside the string 'ZTF{year}%'",
        ),
        ("{x.__class__} IS NULL", {"x": 1}, "{x.__class__} is not a parameter"),
        ("candidate.fid IN {bands}", {"bands": [1, 2]}, "parameter 'bands' is a list"),
    ],
)
def test_parameters_that_would_be_text_are_refused(ztf, sql, params, said):
    assert said in _refused(ztf, sql, **params)


def test_numbers_and_booleans_read_as_before():
    assert fill(
        "x > {a} AND y < {b} AND z = {c} AND w = {{d}}", {"a": 5, "b": -1.5e-05, "c": True}
    ) == ("x > 5 AND y < -1.5e-05 AND z = TRUE AND w = {d}")
    with pytest.raises(KeyError, match="nope"):
        fill("x > {nope}", {})
    with pytest.raises(UntrustedSqlError):
        fill("x = '{a}{b}'", {"a": "1", "b": "2"})


# --- cost -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("length(repeat('x', 500000000)) > 0", "repeat(...) builds 500,000,000 characters"),
        ("size(sequence(1, 300000000)) > 0", "sequence(...) builds 300,000,000 characters"),
        (
            "length(repeat(repeat('x', 1000), 1000)) > 0",
            "builds 1,000,000 characters or elements (nested builders multiply)",
        ),
        (
            "size(array_repeat(objectId, candidate.nid)) > 0",
            "array_repeat(...)'s size (argument 2)",
        ),
        ("length(lpad(objectId, 20000, 'x')) > 0", "lpad(...) builds 20,000"),
        ("length(format_string('%0100000000d', candidate.nid)) > 0", "format pads to more than"),
        ("size(sequence(1, candidate.nid)) > 0", "sequence(...) takes constant integers"),
        (
            "size(flatten(transform(sequence(1, 10000), x -> sequence(1, 10000)))) > 0",
            "sequence(...) builds 100,000,000 characters or elements (nested builders multiply)",
        ),
        ("objectId RLIKE '(a+)+$'", "RLIKE's pattern '(a+)+$' repeats a group that repeats"),
        ("regexp_extract(objectId, '(a|aa)*b', 0) = ''", "regexp_extract(...)'s pattern"),
        ("objectId RLIKE candidate.programpi", "RLIKE's pattern is a constant string"),
        ("objectId RLIKE '(a)\\\\1'", "has a back-reference"),
        ("(" * 70 + "candidate.magpsf > 1" + ")" * 70, "its brackets nest 70 deep, above 64"),
        (
            "candidate.magpsf IN (" + ", ".join(["1.5"] * 5000) + ")",
            "it is 25,020 characters, above 20,000 (a long list of values belongs in a watch",
        ),
    ],
)
def test_values_built_from_a_size_and_patterns_that_backtrack_are_bounded(ztf, sql, said):
    assert said in _refused(ztf, sql)


def test_bounded_builders_and_plain_patterns_run_and_agree_with_python(ztf):
    view, alerts = ztf
    filters = [
        AlertFilter(name="padded", sql=f"length(lpad(objectId, {MAX_BUILT}, '0')) = {MAX_BUILT}"),
        AlertFilter(name="year", sql="objectId RLIKE '^ZTF1[89][a-z]{7}$'"),
    ]
    validate(filters, view)
    rows = view.select(*[f.evaluate()[0].alias(f.name) for f in filters]).collect()
    assert all(r["padded"] for r in rows)
    import re

    want = [re.fullmatch(r"ZTF1[89][a-z]{7}", a["objectId"]) is not None for a in alerts]
    assert [r["year"] for r in rows] == want and any(want)


@pytest.mark.parametrize(
    ("pattern", "refused"),
    [("(ab)+c", False), ("a.*b.*c", False), ("[(+]+x", False), ("(?i)abc+", False),
     ("((a)*)*", True), ("(?:ab|cd)+", True), ("(x+x+)+y", True)],
)  # fmt: skip
def test_pattern_check(pattern, refused):
    assert (pattern_refusal(pattern) is not None) == refused


# --- runtime errors -------------------------------------------------------------------------------


def test_an_error_on_an_alert_is_that_filter_s_no_match_and_is_reported(ztf):
    """A division by zero and a cast that fails: ANSI Spark raises on each alert; contained,
    each is no match, named, and the filter beside them is unchanged."""
    view, alerts = ztf
    filters = [
        AlertFilter(name="zero_fid", sql="candidate.magpsf / (candidate.fid - candidate.fid) > 1"),
        AlertFilter(name="int_id", sql="cast(objectId AS int) > 0"),
        AlertFilter(name="bright", sql="candidate.magpsf < 18"),
    ]
    validate(filters, view)
    columns = []
    for f in filters:
        match, error = f.evaluate()
        columns += [match.alias(f.name), error.alias(f"{f.name}_error")]
    rows = view.select(*columns).collect()
    assert len(rows) == len(alerts)
    assert sum(r["zero_fid"] for r in rows) == sum(r["int_id"] for r in rows) == 0
    assert [r["bright"] for r in rows] == [a["candidate"]["magpsf"] < 18 for a in alerts]
    failed = sum(a["candidate"]["magpsf"] is not None for a in alerts)  # x / 0 raises, null / 0 not
    assert sum(r["zero_fid_error"] is not None for r in rows) == failed == len(alerts)
    assert sum(r["int_id_error"] is not None for r in rows) == len(alerts)  # 'ZTF18...' is no int
    assert all(r["bright_error"] is None for r in rows)
    assert rows[0]["zero_fid_error"].startswith("zero_fid: its SQL raised an error on an alert")


def test_the_hot_path_s_outcome_is_each_filter_s_index_or_its_error_s(ztf):
    from alertsieve.filtering.model import AlertFilter as A
    from alertsieve.spark.contained import outcome

    view, alerts = ztf
    # x / 0 where magpsf >= 15.5; else magpsf / 1 > 15: 7 or no match
    f = A(name="g", sql="candidate.magpsf / cast(candidate.magpsf < 15.5 AS int) > 15")
    got = [r[0] for r in view.select(outcome(f.condition(), 7, -9)).collect()]
    mags = [a["candidate"]["magpsf"] for a in alerts]
    want = [-9 if m >= 15.5 else (7 if m > 15 else None) for m in mags]
    assert got == want and set(want) == {-9, 7, None}


def test_filters_matched_predicate_first_count_the_values_that_raised(ztf):
    """Predicate first (from 100 SQL filters), a value that raises reads as null, as
    ``try_divide`` gives, and the alert is an error of each filter comparing it."""
    from pyspark.sql import functions as F

    from alertsieve.stream.predicate_first import outcomes, predicate_filters

    view, alerts = ztf
    filters = [
        AlertFilter(name="zero_fid", sql="candidate.magpsf / (candidate.fid - 2) > 1"),
        AlertFilter(name="bright", sql="candidate.magpsf < 15.5"),
        AlertFilter(
            name="either", sql="candidate.magpsf / (candidate.fid - 2) > 1 OR candidate.magpsf < 15"
        ),
    ]
    p = predicate_filters(view, filters)
    assert p is not None and p.filters == [0, 1, 2]
    none = F.array().cast("array<int>")
    rows = view.select(outcomes(p, none, F.lit(True), -2).alias("r")).collect()
    mags = [a["candidate"]["magpsf"] for a in alerts]
    assert all(a["candidate"]["fid"] == 2 for a in alerts)  # x / 0 on each
    assert [sorted(r["r"]["m"]) for r in rows] == [
        sorted([-2, -4] + ([1] if m < 15.5 else []) + ([2] if m < 15 else [])) for m in mags
    ]
