"""CATS, the broad classifier Fink runs on every LSSTCam alert: which of five kinds of light curve
an alert's is, from a convolutional and recurrent network (the CBPF Alert Transient Search,
Fraga et al. 2024, A&A 692, A208, arXiv:2404.08798) trained on ELAsTiCC simulations.

Read as ``scores.cats.class``, Fink's code of the most probable kind (11 SN-like, 12 fast,
13 long, 21 periodic, 22 non-periodic, e.g. AGN), ``scores.cats.score`` its probability, and each
kind's probability: ``scores.cats.sn_like``, ``.fast``, ``.long``, ``.periodic``,
``.non_periodic``.

Origin: ``fink-science`` 7.4.0 (PyPI, Apache-2.0, AstroLab Software), its function
``fink_science.rubin.cats.processor.predict_nn`` and model ``cats_small_nometa_serial.keras``,
and fink-broker's ``science.py``, which maps the most probable class to its code. The Keras
network is converted to ONNX (``files/cats.onnx``, by ``training/cats_to_onnx.py``) so a job
needs no TensorFlow. The suite checks every probability against the package's function on the
real LSSTCam alerts and on simulated deep-field histories.

What it does, as fink-science does it:

- The points are the alert's ``prvDiaSources`` then its ``diaSource``, in that order (not sorted
  by time): days since the first of them, flux and flux error each scaled to 0..1 over the
  curve (a curve of one point: 1), and the band as 1..6 for u, g, r, i, z, y.
- Curves are cut to their last 395 points and padded after their end with -999 (band 0) to 395
  rows, the network's fixed input.

Where the network answers NaN (fink-science scales a curve whose fluxes or errors are all equal
by dividing by zero), the probabilities are null and the alert is not classified (class -1,
score 0): Fink's argmax reads NaN as SN-like (11), which no filter should take for an answer.

As Fink's production does, an alert with a single detection (no ``prvDiaSources``) is not
classified: class -1, score 0, probabilities null (fink-science 7.4.0's function still scores
it; its later versions return zeros there). That rule is the model's gate, so those alerts are
not even sent to the network. The network costs ~7 ms of one core per classified alert here,
whatever the curve's length (it always reads 395 rows): see docs/models.md for what that means
for a job's rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from alertsieve.filtering.scores.arrays import categories, lists
from alertsieve.filtering.scores.light_curves import light_curve
from alertsieve.filtering.scores.model import Model

if TYPE_CHECKING:  # numpy is the job's: a subscriber's install imports this without it
    import numpy as np

FILES = Path(__file__).resolve().parent / "files"
#: The kinds, in the order of the network's outputs, and Fink's code of each.
KINDS = {"sn_like": 11, "fast": 12, "long": 13, "periodic": 21, "non_periodic": 22}
#: Rubin's bands as the network reads them.
BAND_CODES = {"u": 1, "g": 2, "r": 3, "i": 4, "z": 5, "y": 6}
#: The network's input rows, and what pads them.
ROWS, PAD = 395, -999.0
#: Alerts the network runs at once.
CHUNK = 64


def load(files, runtime):
    """The network, opened with the job's ONNX Runtime settings."""
    return runtime.onnx(Path(files["network"]))


def _scaled(values: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each curve's values scaled to 0..1 over the curve (fink-science's ``norm_column``: a
    curve of one point is 1, a flat or NaN-holding curve is NaN)."""
    import numpy as np

    starts = offsets[:-1]
    repeat = np.repeat(np.arange(len(lengths)), lengths)
    low = np.minimum.reduceat(values, starts)[repeat]
    span = np.maximum.reduceat(values, starts)[repeat] - low
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = (values - low) / span
    return np.where(lengths[repeat] == 1, 1.0, scaled)


def curves(batch) -> np.ndarray:
    """The network's input for every alert of an Arrow batch: (alerts, 395, 4) float32."""
    import numpy as np

    mjd, offsets = lists(batch, "midpointMjdTai")
    band, _ = categories(batch, "band", list(BAND_CODES))
    flux, _ = lists(batch, "psfFlux")
    error, _ = lists(batch, "psfFluxErr")
    lengths = np.diff(offsets)
    if (lengths == 0).any():
        raise ValueError("an alert without a detection: CATS needs at least one")
    if ((band < 0) | (band >= len(BAND_CODES))).any():
        raise ValueError("a band that is not Rubin's ugrizy (or none): CATS cannot read it")
    owner = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(len(mjd)) - offsets[:-1][owner]
    days = mjd - mjd[offsets[:-1]][owner]
    columns = [
        days,
        _scaled(flux, offsets, lengths),
        _scaled(error, offsets, lengths),
        np.asarray(list(BAND_CODES.values()), dtype=np.float64)[band],
    ]
    out = np.full((len(lengths), ROWS, 4), PAD, dtype=np.float32)
    out[:, :, 3] = 0.0
    # the last 395 points of a longer curve (Keras' pad_sequences cuts the front)
    row = position - np.maximum(lengths - ROWS, 0)[owner]
    kept = row >= 0
    for c, values in enumerate(columns):
        out[owner[kept], row[kept], c] = values[kept].astype(np.float32)
    return out


def predict(session, batch):
    """Class code, score and the five probabilities of each alert of an Arrow batch."""
    import numpy as np

    inputs = curves(batch)
    probabilities = np.concatenate(
        [
            session.run(None, {"curves": inputs[i : i + CHUNK]})[0]
            for i in range(0, len(inputs), CHUNK)
        ]
    ).astype(np.float64)
    best = np.argmax(probabilities, axis=1)
    unanswered = np.isnan(probabilities).any(axis=1)
    return {
        "class": np.where(unanswered, -1, np.asarray(list(KINDS.values()))[best]),
        "score": np.where(unanswered, 0.0, probabilities[np.arange(len(best)), best]),
        **{kind: probabilities[:, i] for i, kind in enumerate(KINDS)},
    }


MODEL = Model(
    name="cats",
    survey="rubin",
    description=__doc__,
    source=(
        "fink-science 7.4.0 (PyPI, Apache-2.0): fink_science.rubin.cats, model"
        " cats_small_nometa_serial.keras; class codes as fink-broker's rubin/science.py;"
        " arXiv:2404.08798"
    ),
    columns={
        field: light_curve("rubin", field)
        for field in ("midpointMjdTai", "band", "psfFlux", "psfFluxErr")
    },
    files={"network": FILES / "cats.onnx"},
    outputs=("class", "score", *KINDS),
    types={"class": "int"},
    batch="arrow",
    gate="size(prvDiaSources) > 0",
    defaults={"class": -1, "score": 0.0},
    load=load,
    predict=predict,
)
