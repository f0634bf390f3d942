"""Every notebook runs top to bottom on a small input (a failing cell fails the test); the
notebooks check their own science (e.g. 03 compares the engine with plain Python), and here
the outputs they leave are checked."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import fastavro
import nbformat
import numpy as np
import pyarrow.parquet as pq
import pytest
from crafted import ztf_histories
from nbclient import NotebookClient
from ztf_oracles import ztf_oracles

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
EXPORT = Path(__file__).parent / "data" / "exports" / "rubin-or4-v7_1-export.parquet"


@pytest.fixture(scope="module")
def kernel():
    """One Python kernel runs every notebook, as a user's JupyterLab would run them one after
    another: a notebook's ``spark.stop()`` leaves the kernel's JVM up and the next notebook's
    session starts in it (three notebooks, one Spark JVM). Each notebook still starts from an
    empty namespace (``FRESH``), so none passes on a name another one defined."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(NOTEBOOKS))
    yield manager
    manager.shutdown_kernel(now=True)


#: The first cell ``execute`` adds: every name a notebook run before defined is dropped (IPython's
#: own names and the module's dunders stay: ``%reset -f`` would drop ``__spec__`` too, which
#: multiprocessing needs), then the notebook's environment is set.
FRESH = """def _fresh(ns, kept):
    for name in [n for n in ns if n not in kept and not (n.startswith("__") and n.endswith("__"))]:
        del ns[name]
_fresh(get_ipython().user_ns, get_ipython().user_ns_hidden)
import os
os.environ.update({env!r})"""


def execute(name: str, kernel, **env: str) -> nbformat.NotebookNode:
    """Run notebook ``name`` in ``kernel``, with ``env`` set, from an empty namespace (``FRESH``)."""
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    book.cells.insert(0, nbformat.v4.new_code_cell(FRESH.format(env=env)))
    client = NotebookClient(book, km=kernel, timeout=600, kernel_name="python3")
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    return book


def text_of(book: nbformat.NotebookNode) -> str:
    parts = []
    for cell in book.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def images_in(book: nbformat.NotebookNode) -> int:
    return sum(
        "image/png" in out.get("data", {}) for cell in book.cells for out in cell.get("outputs", [])
    )


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == [
        "01_quickstart",
        "02_explore_alerts",
        "03_write_a_filter",
        "04_scaling_analysis",
    ]


def _brightening(alert: dict) -> bool:
    """Notebook 01's filter in plain Python: flux above 5 errors, reliability above 0.5, no NaN."""
    s = alert["diaSource"]
    flux, error, reliability = s["psfFlux"], s["psfFluxErr"], s["reliability"]
    if flux is None or error is None or reliability is None:
        return False
    return not (np.isnan(flux) or np.isnan(reliability)) and flux > 5 * error and reliability > 0.5


@pytest.mark.slow
@pytest.mark.integration  # the notebooks' kernel, with its Spark (01: and a broker)
def test_01_quickstart(kernel):
    """The real alerts, a filter written to a file, checked, backtested and run live: its matches
    as plain Python over fastavro counts them, plotted (light curves, one set of cutouts)."""
    real = Path(__file__).parent / "data" / "real"
    rubin = [a for p in sorted(real.glob("rubin-*.avro")) for a in fastavro.reader(p.open("rb"))]
    ztf = sum(
        1
        for p in real.rglob("*.avro")
        if p.parent.name.startswith("ztf")
        for _ in fastavro.reader(p.open("rb"))
    )
    matches = sum(_brightening(a) for a in rubin)
    assert 0 < matches < len(rubin)  # the cut splits the alerts: all or none would prove little
    book = execute("01_quickstart", kernel)
    out = text_of(book)
    assert "ok      brightening (rubin)" in out
    assert re.search(rf"^brightening\s+{matches}\s+{len(rubin)}\s.*\brubin\s+{ztf}$", out, re.M)
    assert f"{matches} matches on alertsieve-brightening; verified: complete" in out
    assert images_in(book) == min(matches, 3) + 1  # light curves, and one alert's cutouts


@pytest.mark.slow
@pytest.mark.integration  # the notebooks' kernel, with its Spark (01: and a broker)
def test_02_explore_alerts(kernel):
    book = execute("02_explore_alerts", kernel, ALERTSIEVE_NB_ALERTS="300")
    out = text_of(book)
    assert "6 real alerts, LSSTCam v10.0" in out and "300 alerts of schema" in out
    assert (
        "star_arcsec" in out and "ngc_arcmin" in out
    )  # features and catalog matches, per real alert
    assert "visits_a_night" in out  # real histories against the simulator's
    # a broker's real export, decoded with features: its longest history first, as pyarrow reads it
    export = pq.read_table(EXPORT, columns=["prvDiaSources"]).column("prvDiaSources").to_pylist()
    longest = max(len(h or []) for h in export)
    assert "g_chi2" in out and re.search(rf"^0\s+\d+\s+{longest}\s", out, re.M), longest
    assert "124 real ZTF alerts with histories" in out
    assert "ZTF21acoshvy" in out  # the young supernova among the youngest of the ZTF features
    # real beside simulated, a real light curve, histories, real cutouts, the export's longest;
    # ZTF: a light curve and cutouts
    assert images_in(book) == 7


def _real_alerts_inside_a_galaxy(name: str) -> tuple[int, int]:
    """(real alerts closer to an OpenNGC galaxy than its semi-major axis, alerts in the file),
    by astropy over fastavro-decoded alerts: notebook 03's host cut, computed without the job."""
    import fastavro
    from astropy import units as u
    from astropy.coordinates import SkyCoord
    from pyongc import DBPATH

    with open(Path(__file__).parent / "data" / "real" / name, "rb") as f:
        sources = [a["diaSource"] for a in fastavro.reader(f)]
    with sqlite3.connect(DBPATH) as db:  # positions in radians, sizes in arcmin
        rows = db.execute(
            "SELECT ra, dec, majax FROM objects WHERE ra IS NOT NULL AND majax > 0"
            " AND type IN ('G', 'GPair', 'GTrpl', 'GGroup')"
        ).fetchall()
    ra, dec, majax = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    galaxies = SkyCoord(ra * u.rad, dec * u.rad)
    inside = 0
    for s in sources:
        separation = SkyCoord(s["ra"] * u.deg, s["dec"] * u.deg).separation(galaxies).arcmin
        inside += bool(np.any(separation < majax / 2))
    return inside, len(sources)


@pytest.mark.slow
@pytest.mark.integration  # the notebooks' kernel, with its Spark (01: and a broker)
def test_03_write_a_filter(kernel):
    book = execute("03_write_a_filter", kernel, ALERTSIEVE_NB_ALERTS="2000")
    out = text_of(book)
    assert "galaxies of 14,026 OpenNGC objects" in out
    assert re.search(
        r"engine: (\d+)  plain Python \+ astropy: \1\b", out
    )  # the notebook's own check
    assert "young_in_galaxy" in out
    for name in ("rubin-lsstcam-v10_0.avro", "rubin-opsrehearsal-v7_4.avro"):
        inside, total = _real_alerts_inside_a_galaxy(name)
        (matches,) = re.findall(rf"{re.escape(name)}: (\d+) of {total} alerts", out)
        # the host cut alone bounds the count; with no real alert inside a galaxy, it is exactly 0
        assert int(matches) <= inside and (inside > 0 or int(matches) == 0), (name, matches, inside)
    with open(
        NOTEBOOKS.parent / "tests/data/rubin-light-curves/rubin-lsstcam-v10_0.avro", "rb"
    ) as f:
        detections = [len(a.get("prvDiaSources") or []) + 1 for a in fastavro.reader(f)]
    singles = sum(n == 1 for n in detections)
    # the classifiers' section: a single detection is not classified (Fink's production rule)
    assert (
        f"{len(detections)} real LSSTCam alerts: {singles} single detections (CATS class [-1],"
        in out
    )
    # the Python filter: its count of the real ZTF alerts, as its numpy oracle counts them
    steady = ztf_oracles()["ztf_steady_risers"]
    kept = sum(steady(a) for a in ztf_histories())
    assert f"ztf_steady_risers: {kept} of {len(ztf_histories())} real ZTF alerts" in out and kept
    # the field, its galaxies and the matches; the classifiers; a light curve per steady riser
    assert images_in(book) == 2 + kept


@pytest.mark.slow
@pytest.mark.integration  # the notebooks' kernel, with its Spark (01: and a broker)
def test_04_scaling_analysis(kernel, quick_results, tmp_path):
    root, experiments, _ = quick_results
    book = execute(
        "04_scaling_analysis",
        kernel,
        ALERTSIEVE_RESULTS=str(root),
        ALERTSIEVE_FIGURES=str(tmp_path),
    )
    names = [e.name for e in experiments]
    visits = [n for n in names if n != "rate"]  # the rate study: one figure, no CPU bars
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(
        [f"{n}.png" for n in names] + [f"{n}-cpu.png" for n in visits]
    )
    assert images_in(book) == len(names) + len(visits)
    assert "DMTN-028 (AWS)" in text_of(book)


@pytest.mark.integration  # the notebooks' kernel
def test_04_runs_on_a_fresh_checkout_showing_the_committed_figures(kernel, tmp_path):
    """No results of its own (a fresh clone): it says how to make them and shows the figures
    docs/benchmarks.md quotes, and every cell still runs."""
    book = execute(
        "04_scaling_analysis",
        kernel,
        ALERTSIEVE_RESULTS=str(tmp_path / "results"),
        ALERTSIEVE_FIGURES=str(tmp_path / "figures"),
    )
    shown = ["volume", "producers", "consumers", "partitions", "filters"]
    committed = [n for n in shown if (NOTEBOOKS.parent / "docs/figures" / f"{n}.png").exists()]
    assert f"no results in {tmp_path / 'results'}: `make bench-quick` makes" in text_of(book)
    assert committed and images_in(book) == len(committed)
