"""environment.yml and pyproject.toml describe the same environment."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_conda_environment_matches_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = env["dependencies"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python="))
    minimum = project["requires-python"].split(",")[0].removeprefix(">=")
    assert python == f"python={minimum}"
    assert "openjdk=17" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict))
    # The project itself, with the extras `make setup` installs, is the only pip requirement:
    # pyproject is the single list of Python dependencies.
    makefile = (ROOT / "Makefile").read_text()
    extras = re.search(r"pip install -q (?:--python \S+ )?-e '\.\[([\w,]+)\]'", makefile)[1]
    assert pip_section == [f"-e .[{extras}]"]
    # Every extra but the TOM's (an environment of its own, from the wheel) and the tables (which
    # the stream extra brings).
    optional = project["optional-dependencies"]
    assert set(extras.split(",")) == set(optional) - {"tom", "tables"}
    assert "alertsieve[tables]" in optional["stream"]
    assert '"alertsieve[tom] @ file://' in makefile


def _runtime(project: dict) -> list[str]:
    """What the job runs on: the core, and the stream extra with the tables it brings."""
    optional = project["optional-dependencies"]
    return [*project["dependencies"], *optional["stream"], *optional["tables"]]


def _names(requirements: list[str]) -> set[str]:
    """Import names of requirement strings ("pytest-timeout>=2.3" -> "pytest_timeout")."""
    return {re.split(r"[<>=\[ ]", r, maxsplit=1)[0].replace("-", "_").lower() for r in requirements}


def extras_only() -> set[str]:
    """What only the notebooks, bench, TOM and dev extras install, read from pyproject.toml (with
    what JupyterLab brings: its server and IPython), less the build tools the wheel test needs,
    which any Python may have."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = _names([r for rs in project["optional-dependencies"].values() for r in rs])
    return (extras - _names(_runtime(project)) - {"setuptools", "wheel", "alertsieve"}) | {
        "jupyter_server",
        "IPython",
    }


#: Installed as ``sitecustomize`` (PYTHONPATH), so that every Python process of the run refuses
#: the extras: the commands, and the job's Python workers that run Python filters on executors.
#: Probing with find_spec (as pyspark does for optional packages) still answers; importing fails.
BLOCKER = """
import importlib.abc, importlib.machinery, sys
class Refuse(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            return importlib.machinery.ModuleSpec(name, self)
    def create_module(self, spec):
        raise ModuleNotFoundError(f"{{spec.name}} is not a runtime dependency")
    def exec_module(self, module):
        pass
sys.meta_path.insert(0, Refuse())
"""

PYTHON_FILTER = """
from alertsieve.filtering.model import python_filter

@python_filter(name="py_bright", columns={"snr": "diaSource.snr"})
def py_bright(alerts):
    return alerts["snr"] > 30
"""


def test_the_job_and_the_producer_run_without_notebook_or_bench_packages(
    kafka, topic_name, tmp_path
):
    """The runtime install is what the producer, the job and its executors need: a visit produced
    and filtered (SQL filters and a Python one, on Python workers) with every package of the extras
    refused, its matches equal to plain Python."""
    import subprocess
    import sys

    from job_helpers import expected_matches, job_command
    from kafka_helpers import consume_all

    blocked = extras_only()
    assert {"matplotlib", "psutil", "jupyterlab", "pytest"} <= blocked and "astropy" not in blocked
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    (tmp_path / "filters").mkdir()
    (tmp_path / "filters" / "py_bright.py").write_text(PYTHON_FILTER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")

    def run(args: list[str]) -> str:
        done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done.stdout + done.stderr

    refused = subprocess.run(
        [sys.executable, "-c", "import matplotlib"], capture_output=True, text=True, env=env
    )
    assert "matplotlib is not a runtime dependency" in refused.stderr  # the blocker is in place
    run(
        [
            sys.executable,
            "-m",
            "alertsieve.cli",
            "produce",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic_name,
            "--alerts-per-visit",
            "200",
            "--interval",
            "0",
            "--no-stamps",
            "--seed",
            "13",
            "--schema-dir",
            schema_dir,
        ]
    )
    run(
        job_command(
            bootstrap,
            topic_name,
            tmp_path,
            "--available-now",
            "--filter-path",
            str(tmp_path / "filters"),
        )
    )

    total, expected = expected_matches(bootstrap, topic_name, schema_dir)
    assert total == 200
    for name, want in expected.items():
        assert {m.key().decode() for m in consume_all(bootstrap, f"{topic_name}-{name}")} == want, (
            name
        )
    from alertsieve.alerts.schemas import LocalSchemaStore, unframe

    store = LocalSchemaStore(schema_dir)
    snr = {
        m.key().decode(): store.get(unframe(m.value())[0]).decode(unframe(m.value())[1])[
            "diaSource"
        ]["snr"]
        for m in consume_all(bootstrap, topic_name)
    }
    got = {m.key().decode() for m in consume_all(bootstrap, f"{topic_name}-py_bright")}
    assert got == {k for k, v in snr.items() if v > 30} and got


def test_a_subscribers_install_leaves_out_the_job():
    """``pip install alertsieve`` is the light core: Kafka, Avro, settings; the job, Arrow and
    numpy are extras (tests/test_tom.py installs it and listens)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert _names(project["dependencies"]) == {"confluent_kafka", "fastavro", "pydantic", "pyyaml"}
    assert {"pyspark", "delta_spark", "numpy", "astropy", "lsst_alert_packet"} <= _names(
        project["optional-dependencies"]["stream"]
    )
