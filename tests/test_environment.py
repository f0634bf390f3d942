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
    # The project itself, with the dev extra, is the only pip requirement: pyproject is the
    # single list of Python dependencies.
    assert pip_section == ["-e .[dev]"]
    assert "dev" in project["optional-dependencies"]
