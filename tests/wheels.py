"""A wheel of this checkout, and installing it into another environment: the wheel tests run it
from a fresh environment, the TOM test from the TOM's own (``make tom``'s .venv-tom)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The TOM's environment: the wheel's light core and the ``tom`` extra, no Spark (Makefile).
TOM_ENV = ROOT / ".venv-tom"

#: What a build of this checkout does not read (the library, filters/, schemas/, conf/, the
#: README and the project files are what it does).
NOT_BUILT = {
    "tests",
    "notebooks",
    "docs",
    "docker",
    "jobs",
    "results",
    "data",
    "catalogs",
    "checkpoints",
    "spark-warehouse",
    "build",
}


def _not_built(folder: str, names: list[str]) -> set[str]:
    """Left out of the copy: hidden and generated files anywhere, and NOT_BUILT at the top."""
    top = NOT_BUILT if Path(folder) == ROOT else set()
    return {
        n
        for n in names
        if n.startswith(".") or n == "__pycache__" or n.endswith(".egg-info") or n in top
    }


def build_wheel(work: Path) -> Path:
    """The wheel of this checkout, built in ``work`` from a copy (a build leaves build/ and
    *.egg-info behind), without build isolation: no download."""
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_not_built)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(work / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (work / "dist").glob("alertsieve-*.whl")
    return wheel


def install_wheel(wheel: Path, python: Path) -> None:
    """``wheel`` into the environment of ``python``, alone (its dependencies are there), over any
    alertsieve it held."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--force-reinstall",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def fresh_install(wheel: Path, venv: Path) -> Path:
    """A new environment with ``wheel`` installed as a subscriber installs it (no extras, its
    dependencies resolved from the package index): its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return venv / "bin"
