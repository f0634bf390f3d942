"""Rubin alerts: how likely a detection is a supernova caught on its rise, and how likely an
artefact. A small random forest (scikit-learn, converted to ONNX with ``skl2onnx``) over eight
features of the alert and its earlier detections; two outputs, read as
``scores.rubin_transients.rising`` and ``scores.rubin_transients.bogus`` (probabilities).

No light Rubin classifier is published on PyPI (2026-11), so this one shows the whole path for
Rubin alerts on data whose truth is known: it was trained on alertsieve's simulated alerts
(``alertsieve.sim``, seed 20261127, schema 10.0), whose populations the simulator draws
(``rising``: a supernova seen before and brighter now; ``bogus``: an artefact; every other
population is ``other``), in a mix with a third of each so the forest sees enough risers (the
stream has ~0.3% of them). Its probabilities are therefore those of that mix: a threshold, not
the number itself, carries over to the stream. ``models/training/rubin_transients.py`` trains and
converts it (``files/rubin_transients.onnx``; ``files/SOURCES.md`` names the run).

Features (``features``: float32, a missing value is -999, which the forest learnt as such):
the detection's signal to noise and log10 of its flux (nJy, signed), its reliability and
extendedness, its number of earlier detections and the days since the first, and against the
latest earlier detection in the same band: the flux ratio and the relative rise per day.
"""

from __future__ import annotations

from pathlib import Path

from alertsieve.filtering.scores.model import Model

FILES = Path(__file__).resolve().parent / "files"
#: The forest's classes, in the order of its probability outputs.
CLASSES = ("other", "rising", "bogus")
#: What stands for a missing feature (no earlier detection, a null field).
MISSING = -999.0
#: The fewest days between two detections for a rate: two visits of one night are minutes apart.
MIN_DAYS = 0.01


def _number(x) -> float:
    """A feature as the forest takes it: a number, or MISSING for null, NaN or infinity."""
    import math

    return MISSING if x is None or not math.isfinite(x) else float(x)


def _python(values) -> list[float | None]:
    """An array's numbers as Python floats: float32 arithmetic with NumPy scalars would round
    what float64 does not."""
    return [None if v is None else float(v) for v in (values if values is not None else [])]


def features(row) -> list[float]:
    """The eight features of one alert (a row of ``MODEL.columns``)."""
    import math

    flux, err = (None if row[k] is None else float(row[k]) for k in ("flux", "flux_err"))
    snr = flux / err if flux is not None and err else None
    log_flux = math.copysign(math.log10(abs(flux)), flux) if flux else None
    prv_flux, prv_mjd = _python(row["prv_flux"]), _python(row["prv_mjd"])
    prv_band = list(row["prv_band"]) if row["prv_band"] is not None else []
    mjds = [m for m in prv_mjd if m is not None]
    since_first = row["mjd"] - min(mjds) if mjds else None
    same = [
        (m, f)
        for m, f, b in zip(prv_mjd, prv_flux, prv_band, strict=True)
        if b == row["band"] and m is not None and f
    ]
    ratio = rise = None
    if same and flux is not None:
        m, f = max(same)
        ratio = flux / f
        rise = (flux - f) / abs(f) / max(row["mjd"] - m, MIN_DAYS)
    return [
        _number(v)
        for v in (
            snr,
            log_flux,
            row["reliability"],
            row["extendedness"],
            len(prv_flux),
            since_first,
            ratio,
            rise,
        )
    ]


def load(files, runtime):
    """The forest, opened with the job's ONNX Runtime settings."""
    return runtime.onnx(Path(files["forest"]))


def predict(forest, columns):
    """The probabilities of ``rising`` and ``bogus``."""
    import numpy as np
    import pandas as pd

    x = np.asarray([features(r) for r in columns.to_dict("records")], dtype=np.float32)
    if not len(x):
        return pd.DataFrame({"rising": [], "bogus": []})
    probabilities = forest.run(["probabilities"], {"features": x.reshape(-1, 8)})[0]
    return pd.DataFrame(
        {
            "rising": probabilities[:, CLASSES.index("rising")].astype("float64"),
            "bogus": probabilities[:, CLASSES.index("bogus")].astype("float64"),
        }
    )


MODEL = Model(
    name="rubin_transients",
    survey="rubin",
    description=__doc__,
    source=(
        "alertsieve (Apache-2.0): scikit-learn RandomForestClassifier trained on simulated alerts"
        " (models/training/rubin_transients.py), converted with skl2onnx"
    ),
    columns={
        "flux": "diaSource.psfFlux",
        "flux_err": "diaSource.psfFluxErr",
        "reliability": "diaSource.reliability",
        "extendedness": "diaSource.extendedness",
        "mjd": "diaSource.midpointMjdTai",
        "band": "diaSource.band",
        "prv_flux": "prvDiaSources.psfFlux",
        "prv_mjd": "prvDiaSources.midpointMjdTai",
        "prv_band": "prvDiaSources.band",
    },
    files={"forest": FILES / "rubin_transients.onnx"},
    outputs=("rising", "bogus"),
    load=load,
    predict=predict,
)
