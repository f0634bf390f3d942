"""Models in the stream: ``scores.ztf_anomaly`` equal to fink-science 7.4.0's own functions on the
124 real ZTF alerts with light curves (tests/fink_oracle.py), through the filter view, backtest
and ``filters diff`` (one preparation) and through a whole job publishing the score; the job runs
the model once per alert however many filters read it; a model that raises gives null scores
where it raised and nothing else changes; a score from the other survey, or misspelt, is refused
at start-up with the fix."""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pytest
from crafted import ztf_history_files
from fink_oracle import fink_anomaly_scores, fink_model_files
from job_helpers import counted_batches
from kafka_helpers import consume_all

from alertsieve import cli
from alertsieve.backtest.diff import diff
from alertsieve.backtest.run import backtest
from alertsieve.backtest.sources import load_alerts
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import AlertFilter, FilterError
from alertsieve.filtering.prepare import prepare
from alertsieve.filtering.scores.discovery import discover_models
from alertsieve.filtering.scores.model import file_digest
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.publish.versions import filter_version
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job

HISTORIES = Path(__file__).parent / "data/real/ztf-3.3-histories"
#: Thresholds of the ten filters reading one score (the job's invocation counter must not care).
THRESHOLDS = [-0.03, -0.025, -0.022, -0.02, -0.019, -0.018, -0.017, -0.016, -0.014, -0.001]
#: A plain-Python model on Arrow batches (no ONNX): twice the detection's magnitude, raising on
#: any batch that holds the alert POISONED (the real alert with the smallest candid).
FLAKY = """
from alertsieve.filtering.scores.arrays import scalars
from alertsieve.filtering.scores.model import Model

POISONED = {poisoned}


def load(files, runtime):
    return 2.0


def predict(factor, batch):
    if (scalars(batch, "candid", dtype="int64") == POISONED).any():
        raise RuntimeError("cannot score alert {poisoned}")
    return scalars(batch, "magpsf") * factor


MODEL = Model(
    name="flaky",
    survey="ztf",
    description="twice the magnitude, failing on one alert",
    source="tests/test_models.py",
    columns={{"candid": "candid", "magpsf": "candidate.magpsf"}},
    batch="arrow",
    load=load,
    predict=predict,
)
"""


def _alerts() -> list[dict]:
    out = []
    for path in ztf_history_files():
        with open(path, "rb") as f:
            out.append(next(fastavro.reader(f)))
    return out


@pytest.fixture(scope="module")
def oracle() -> dict[int, float]:
    """{candid: fink-science's score} of the 124 real alerts."""
    alerts = _alerts()
    return dict(zip((a["candid"] for a in alerts), fink_anomaly_scores(alerts), strict=True))


def _below(name: str, threshold: float) -> AlertFilter:
    return AlertFilter(name=name, survey="ztf", sql=f"scores.ztf_anomaly < {threshold}")


def test_the_forests_are_fink_sciences_own_files():
    """The files carried in models/files/ are byte for byte those of fink-science 7.4.0."""
    (model,) = [m for m in discover_models() if m.name == "ztf_anomaly"]
    package = fink_model_files()
    assert {k: file_digest(Path(p)) for k, p in model.files.items()} == {
        k: file_digest(Path(p)) for k, p in package.items()
    }


@pytest.mark.slow  # three passes over the real alerts with the model: ~25 s
def test_the_view_backtest_and_diff_give_fink_sciences_scores(spark, oracle):
    """One preparation: the filter view's scores equal fink-science's on every real alert (zeros
    where it gives zero), and backtest and ``filters diff`` decide on the same scores."""
    alerts = load_alerts(spark, str(HISTORIES))
    probe = AlertFilter(name="probe", survey="ztf", sql="scores.ztf_anomaly IS NOT NULL")
    prepared = prepare(spark, [probe], alerts.decoder, alerts.head)
    assert [m.name for m in prepared.scoring.models] == ["ztf_anomaly"]
    decoded = alerts.decoder.decode(alerts.raw, prepared.paths)
    view = filter_view(decoded, ("_reason",), prepared.context, prepared.scoring)
    got = {
        r["candid"]: r["s"] for r in view.selectExpr("candid", "scores.ztf_anomaly AS s").collect()
    }
    assert got.keys() == oracle.keys()
    assert max(abs(got[c] - oracle[c]) for c in oracle) < 1e-6
    assert {c for c, s in got.items() if s == 0} == {c for c, s in oracle.items() if s == 0}
    assert 0 < sum(s == 0 for s in oracle.values()) < len(oracle)  # both kinds met

    filters = [_below(f"below_{i}", t) for i, t in enumerate(THRESHOLDS)]
    rows = {r.name: r.matches for r in backtest(spark, filters, alerts)}
    assert rows == {
        f.name: sum(s < t for s in oracle.values())
        for f, t in zip(filters, THRESHOLDS, strict=True)
    }

    before, after = _below("moved", -0.02), _below("moved", -0.017)
    d = diff(spark, before, after, alerts)
    assert d.added == sorted(str(c) for c, s in oracle.items() if -0.02 <= s < -0.017)
    assert d.dropped == []
    assert (d.before, d.after) == (
        sum(s < -0.02 for s in oracle.values()),
        sum(s < -0.017 for s in oracle.values()),
    )


def test_a_models_version_is_in_the_version_of_the_filters_reading_it():
    """A new model file (or code) gives every filter reading its score a new version."""
    f = _below("reader", -0.02)
    assert filter_version(f, model_versions={"ztf_anomaly": "aaa"}) != filter_version(
        f, model_versions={"ztf_anomaly": "bbb"}
    )
    plain = AlertFilter(name="plain", survey="ztf", sql="candidate.magpsf < 18")
    assert filter_version(plain, model_versions={"ztf_anomaly": "aaa"}) == filter_version(plain)


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        (
            "scores.ztf_anomaly < -0.02",
            "reads scores.ztf_anomaly, the score of model ztf_anomaly ({origin}), a model of ztf"
            " alerts; this job reads rubin alerts",
        ),
        (
            "scores.ztf_anomly < -0.02",
            "reads scores.ztf_anomly: no model ztf_anomly for ztf alerts; did you mean"
            " scores.ztf_anomaly?",
        ),
    ],
)
def test_filters_check_names_the_models_survey_or_the_closest_name(
    spark, tmp_path, capsys, sql, said
):
    survey = "rubin" if "anomaly" in sql else "ztf"
    (tmp_path / "scored.py").write_text(
        "from alertsieve.filtering.model import AlertFilter\n\n"
        f'FILTER = AlertFilter(name="scored", survey="{survey}", sql="{sql}")\n'
    )
    assert cli.main(["filters", "check", "scored", "--filter-path", str(tmp_path)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    (model,) = [m for m in discover_models() if m.name == "ztf_anomaly"]
    assert line.startswith(f"FAILED  filter 'scored' ({tmp_path / 'scored.py'}) ")
    assert said.format(origin=model.origin) in line


@pytest.mark.integration
def test_a_job_publishes_fink_sciences_scores_runs_a_model_once_and_survives_a_failing_one(
    kafka, spark, tmp_path, topic_name, oracle
):
    """The 124 real alerts through a whole job: a fields filter publishes ``scores.ztf_anomaly``
    (and ``scores.flaky``) for every alert, ten filters read the same score, one SQL filter none.
    Published scores equal fink-science's; the model ran once per alert; ``flaky`` raised on the
    chunk holding one alert: its scores are null there and only there, the filter reading it is
    told (console line, metrics, counts topic), and every other filter's output is exact."""
    bootstrap = kafka.bootstrap_servers
    alerts = {a["candid"]: a for a in _alerts()}
    poisoned = min(alerts)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "flaky.py").write_text(FLAKY.format(poisoned=poisoned))
    create_topic(bootstrap, topic_name, 2)
    summary = produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            replay=[str(HISTORIES)],
            alerts_per_visit=124,
            interval_s=0,
            progress=False,
            schema_dir=str(tmp_path / "schemas"),
        )
    )
    assert summary.ok and summary.acked == len(alerts)
    below = {f"below_{i}": t for i, t in enumerate(THRESHOLDS)}
    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        max_offsets_per_trigger=40,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        model_paths=[str(tmp_path / "models")],
        model_threads=1,  # bit-stable forests: the oracle opens them with one thread too
        model_providers=["CPUExecutionProvider"],
        sql_filters=[
            {
                "name": "scored",
                "sql": "true",
                "payload": "fields",
                "format": "json",
                "fields": {
                    "candid": "candid",
                    "anomaly": "scores.ztf_anomaly",
                    "flaky": "scores.flaky",
                },
            },
            *[{"name": n, "sql": f"scores.ztf_anomaly < {t}"} for n, t in below.items()],
            {"name": "flaky_reader", "sql": "scores.flaky > 0"},
            {"name": "bright", "sql": "candidate.magpsf < 18"},
        ],
        sinks=["kafka"],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=None,
    )
    lines = run_job(cfg, spark=spark)

    assert sum(b["input_rows"] for b in lines) == len(alerts)
    assert sum(b["model_invocations"]["ztf_anomaly"] for b in lines) == len(alerts)
    assert sum(b["model_invocations"]["flaky"] for b in lines) == len(alerts)
    assert all(b["model_seconds"]["ztf_anomaly"] > 0 for b in lines)

    records = [json.loads(m.value()) for m in consume_all(bootstrap, f"{prefix}scored")]
    published = {r["candid"]: r for r in records}
    assert published.keys() == alerts.keys()
    assert max(abs(published[c]["anomaly"] - oracle[c]) for c in oracle) < 1e-6
    assert {c for c, r in published.items() if r["anomaly"] == 0} == {
        c for c, s in oracle.items() if s == 0
    }
    nulls = {c for c, r in published.items() if r["flaky"] is None}
    assert poisoned in nulls and len(nulls) < len(alerts)
    for c, r in published.items():
        if c not in nulls:
            assert r["flaky"] == pytest.approx(2 * alerts[c]["candidate"]["magpsf"], rel=1e-6)

    def matched(name: str) -> set[int]:
        return {int(m.key()) for m in consume_all(bootstrap, f"{prefix}{name}")}

    for name, t in below.items():
        assert matched(name) == {c for c, s in oracle.items() if s < t}, name
    assert matched("bright") == {c for c, a in alerts.items() if a["candidate"]["magpsf"] < 18}
    assert matched("flaky_reader") == set(alerts) - nulls

    failed = [b for b in lines if b["model_errors"]]
    assert len(failed) == 1
    assert failed[0]["model_errors"] == {
        "flaky": f"model flaky: RuntimeError: cannot score alert {poisoned}"
    }
    assert failed[0]["filter_errors"]["flaky_reader"] == failed[0]["model_errors"]["flaky"]
    assert "scored" in failed[0]["filter_errors"]  # its fields read the score too
    counted = counted_batches(bootstrap, f"{prefix}counts")
    errors = [
        b["filters"]["flaky_reader"]["error"]
        for b in counted
        if "error" in b["filters"]["flaky_reader"]
    ]
    assert errors == [failed[0]["model_errors"]["flaky"]]


def test_a_model_module_without_a_model_or_with_a_bad_survey_fails_naming_the_file(tmp_path):
    (tmp_path / "empty.py").write_text("X = 1\n")
    with pytest.raises(FilterError, match=r"empty\.py: defines no model; assign MODEL = Model"):
        discover_models([tmp_path / "empty.py"], builtin=False, entry_points=False)
    (tmp_path / "odd.py").write_text(
        FLAKY.format(poisoned=0).replace('survey="ztf"', 'survey="lsst"')
    )
    with pytest.raises(FilterError, match=r"model 'flaky' \(.*odd\.py\): survey 'lsst'"):
        discover_models([tmp_path / "odd.py"], builtin=False, entry_points=False)
    (tmp_path / "odd.py").write_text(FLAKY.format(poisoned=0).replace('"arrow"', '"polars"'))
    with pytest.raises(FilterError, match=r"odd\.py\): batch 'polars': give one of pandas, arrow"):
        discover_models([tmp_path / "odd.py"], builtin=False, entry_points=False)
    (tmp_path / "odd.py").write_text(
        FLAKY.format(poisoned=0).replace(
            'batch="arrow"', 'batch="arrow", types={"flaky": "float8"}'
        )
    )
    with pytest.raises(FilterError, match=r"output 'flaky' of type 'float8': give one of double"):
        discover_models([tmp_path / "odd.py"], builtin=False, entry_points=False)


@pytest.mark.slow  # 1,000 simulated and 147 real alerts through the view: ~30 s
def test_the_rubin_models_scores_equal_onnxruntime_over_numpy_features(spark):
    """``scores.rubin_transients.{rising,bogus}`` through the filter view equal the model's ONNX
    file run by onnxruntime over features computed in numpy from fastavro-decoded alerts
    (tests/rubin_model_oracle.py): 1,000 simulated alerts of a visit and the real LSSTCam and
    Operations Rehearsal alerts, every schema version they carry."""
    from crafted import real_messages
    from rubin_model_oracle import rubin_transients_scores

    from alertsieve.alerts.schemas import load_rubin_schema, unframe
    from alertsieve.backtest.sources import messages_source, records_source
    from alertsieve.filtering.scores.column import Scoring
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
    from alertsieve.view.decoder import view_paths

    schema = load_rubin_schema()
    sim = AlertSimulator(SimulationConfig(seed=44, stamp_size=0, max_history=30))
    records = list(sim.visit_alerts(0, count=1000))
    simulated = [schema.decode(schema.encode(r)) for r in records]
    messages = real_messages()
    real = [load_rubin_schema(i).decode(body) for i, body in (unframe(m) for _, m in messages)]
    scoring = Scoring(tuple(m for m in discover_models() if m.name == "rubin_transients"))
    for source, alerts in [
        (records_source(spark, schema, records), simulated),
        (messages_source(spark, "real", messages), real),
    ]:
        decoded = source.decoder.decode(source.raw, view_paths(source.decoder, with_cutouts=False))
        view = filter_view(decoded, ("_offset",), scoring=scoring).orderBy("_offset")
        got = [r.asDict() for r in view.select("scores.rubin_transients.*").collect()]
        want = rubin_transients_scores(alerts)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert abs(g["rising"] - w["rising"]) < 1e-6 and abs(g["bogus"] - w["bogus"]) < 1e-6
        if alerts is simulated:  # not vacuous: the visit holds risers the forest is sure of
            assert any(w["rising"] > 0.9 for w in want)
