"""environment.yml and pyproject.toml describe the same environment."""

from __future__ import annotations

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
    extras = makefile.split("pip install -q -e '.[", 1)[1].split("]", 1)[0]
    assert pip_section == [f"-e .[{extras}]"]
    assert set(extras.split(",")) == set(project["optional-dependencies"])


#: Packages a Spark executor must not need: they belong to the notebooks and benchmarks extras.
NOT_RUNTIME = ("matplotlib", "jupyterlab", "jupyter_server", "nbclient", "ipykernel", "psutil",
               "astropy", "IPython")  # fmt: skip

BLOCKER = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is not a runtime dependency")
sys.meta_path.insert(0, Refuse())
"""


def test_the_job_and_the_producer_run_without_notebook_or_bench_packages():
    """The runtime install is what an executor needs: the job, the decoder, the filters, the
    producer and the demo import without any package of the extras."""
    import subprocess
    import sys

    code = BLOCKER.format(blocked=set(NOT_RUNTIME)) + (
        "import alertsieve.cli, alertsieve.demo, alertsieve.stream.job, alertsieve.produce.producer\n"
        "from alertsieve.filtering.discovery import discover\n"
        "print(len(discover(entry_points=False)))\n"
        "alertsieve.cli.main(['filter', '--help'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    contributed = len(list((ROOT / "filters").glob("[!_]*.py")))  # one filter a module
    assert done.stdout.startswith(f"{contributed}\n") and "--max-offsets-per-trigger" in done.stdout


def test_runtime_dependencies_leave_out_the_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {d.split("=")[0].split(">")[0].split("<")[0] for d in project["dependencies"]}
    # astropy is a runtime one since catalogs are indexed at `catalog add` (cdshealpix needs it)
    assert not runtime & {"matplotlib", "jupyterlab", "nbclient", "ipykernel", "psutil"}
