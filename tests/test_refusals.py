"""One bad filter refused alone (``on_bad_filter: skip``): at start-up the job's plan leaves out a
filter that fails its checks and a module that does not import, each with its reason, and runs the
rest; with ``fail`` (the default) the first error stops it. The bookkeeping of a running job's
versions (``alertsieve.filtering.refusals``) is pure and checked here too; test_watch deploys
through it."""

from __future__ import annotations

import pytest
from crafted import REAL

from alertsieve.filtering.model import AlertFilter, FilterError
from alertsieve.filtering.refusals import Refusals
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import plan_job

GOOD = AlertFilter(name="good", sql="diaSource.snr > 5", origin="good.py")
CHANGED = AlertFilter(name="good", sql="diaSource.snr > 6", origin="good.py")
TABLE_ROW = AlertFilter(name="row", sql="diaSource.snr > 7", origin="t.yaml (filters[0])")


def test_fail_raises_the_error_and_skip_leaves_the_named_filter_out():
    error = FilterError("filter 'good' (good.py): no field", filter="good")
    with pytest.raises(FilterError, match="no field"):
        Refusals(skip=False).leave_out([GOOD, TABLE_ROW], error)
    refusals = Refusals(skip=True)
    assert refusals.leave_out([GOOD, TABLE_ROW], error) == [TABLE_ROW]
    assert refusals.lines() == ["refused good: filter 'good' (good.py): no field; left out"]
    with pytest.raises(FilterError, match="not one of these"):  # names none of the set: raised
        refusals.leave_out([TABLE_ROW], FilterError("not one of these", filter="other"))


def test_a_refused_change_keeps_its_running_version_once():
    refusals = Refusals(skip=True, running=[GOOD, TABLE_ROW])
    error = FilterError("filter 'good': broken", filter="good")
    assert refusals.leave_out([CHANGED, TABLE_ROW], error) == [TABLE_ROW, GOOD]
    assert refusals.kept == {"good"}
    # The running version fails too (a catalog it reads changed): left out, not tried again.
    assert refusals.leave_out([TABLE_ROW, GOOD], error) == [TABLE_ROW]
    assert refusals.kept == set()


def test_a_file_that_does_not_load_keeps_its_running_filters():
    refusals = Refusals(skip=True, running=[GOOD, TABLE_ROW])
    refusals.file_failed(FilterError("t.yaml: not YAML", origin="t.yaml"))
    assert refusals.kept_from_failed_files() == [TABLE_ROW]
    assert refusals.lines() == ["refused t.yaml: not YAML; its running version goes on"]


def _folder(tmp_path):
    folder = tmp_path / "filters"
    folder.mkdir()
    header = "from alertsieve.filtering.model import AlertFilter\n\n"
    files = {
        "bright.py": 'FILTER = AlertFilter(name="bright", sql="diaSource.snr > 5")\n',
        "typo.py": 'FILTER = AlertFilter(name="typo", sql="diaSource.snrr > 5")\n',
        "broken.py": "FILTER = AlertFilter(name='broken', sql=\n",  # a syntax error
        "no_fields.py": 'FILTER = AlertFilter(name="no_fields", sql="true", payload="fields")\n',
    }
    for name, text in files.items():
        (folder / name).write_text(header + text)
    return folder


def test_the_plan_runs_the_good_filters_and_names_each_refused_one(kafka, spark, tmp_path):
    topic = f"refusals-{tmp_path.name}"
    assert produce(
        ProduceConfig(
            bootstrap=kafka.bootstrap_servers,
            topic=topic,
            replay=[str(REAL / "rubin-lsstcam-v10_0.avro")],
            interval_s=0,
            partitions=1,
            progress=False,
            schema_dir=str(tmp_path / "schemas"),
        )
    ).ok
    folder = _folder(tmp_path)
    settings = dict(
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        discover_filters=False,
        filter_paths=[str(folder)],
        schema_dir=str(tmp_path / "schemas"),
        checkpoint=str(tmp_path / "ckpt"),
    )
    with pytest.raises(FilterError, match=r"broken.py: the filter module cannot be imported"):
        plan_job(spark, JobConfig(**settings))  # fail: the first bad file stops it

    plan = plan_job(spark, JobConfig(**settings, on_bad_filter="skip"))
    assert [f.name for f in plan.filters] == ["bright"]
    reasons = plan.refusals.refused
    assert set(reasons) == {str(folder / "broken.py"), "typo", "no_fields"}
    assert "SyntaxError" in reasons[str(folder / "broken.py")]
    assert "diaSource.snrr" in reasons["typo"] and "did you mean" in reasons["typo"]
    assert "payload 'fields' needs fields" in reasons["no_fields"]
    assert plan.refusals.kept == set()
