"""SuperNNova's probability that a Rubin alert is a supernova (any type) rather than anything else,
as the Fink broker computes it on every LSSTCam alert: a recurrent neural network (Möller & de
Boissière 2020, MNRAS 491, 4277, arXiv:1901.06384) trained on ELAsTiCC simulations, model
``elasticc_binary_broad/SN_vs_other``, read as ``scores.snn_sn_vs_other`` (0 to 1).

Origin: ``fink-science`` 7.4.0 (PyPI, Apache-2.0, AstroLab Software), its function
``fink_science.rubin.snn.processor.snn_ia_elasticc``, which prepares the light curve with
``fink_utils`` and classifies it with SuperNNova 3.0.51 (PyPI, MIT). The network is converted
to ONNX (``files/snn_sn_vs_other.onnx``, by ``training/snn_to_onnx.py``) so a job needs no
torch; its normalisation and feature order are the package's own files, carried byte for byte
(``files/SOURCES.md``). The suite checks every score against the package's function on the real
LSSTCam alerts and on simulated deep-field histories.

How the light curve becomes the network's input, as fink-science and SuperNNova do it:

- The points are the alert's ``prvDiaSources`` then its ``diaSource`` (``midpointMjdTai``,
  ``band``, ``psfFlux``, ``psfFluxErr``); fluxes and errors are scaled from nJy to SNANA's
  FLUXCAL (zero point 27.5) by 10^(-(31.4 - 27.5) / 2.5).
- Sorted by time, points are grouped into epochs: a point starts a new epoch when it is more than
  0.33 day after the current epoch's first point, or at the very time of the point before it.
  In each epoch and band the point with the smallest error wins (its flux, or the next one's
  where its flux is missing).
- One row per epoch: flux and error in u, g, r, i, z, Y (0 where the band is absent), days since
  the previous epoch, and which bands the epoch has (one of 63 combinations). Rubin's ``y``
  band is not SuperNNova's ``Y``: a y-band point adds an epoch with no flux, as it does in Fink.
- Flux, errors and days are clipped at the training minimum, log-transformed and standardised
  (``data_norm.json``); the network reads the epochs in time order in both directions, averages
  its last layer over them, and the first of its two softmax outputs is the score.

An alert is scored on its own light curve. In Fink's pandas UDF, alerts of one batch that share
a ``diaSourceId`` (a duplicate delivery) are merged into one light curve: the one behaviour not
reproduced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from alertsieve.filtering.scores.arrays import categories, lists, owners
from alertsieve.filtering.scores.light_curves import light_curve
from alertsieve.filtering.scores.model import Model

if TYPE_CHECKING:  # numpy is the job's: a subscriber's install imports this without it
    import numpy as np

FILES = Path(__file__).resolve().parent / "files"
#: nJy to SNANA's FLUXCAL (zero point 27.5), as fink-science scales them.
FLUXCAL = 10 ** (-(31.4 - 27.5) / 2.5)
#: Points closer than this (days) to their epoch's first point share the epoch.
EPOCH_DAYS = 0.33
#: Rows of a chunk the network runs at once, sorted by length so a chunk pads little.
CHUNK = 256


def load(files, runtime):
    """The network (ONNX), the feature order and the normalisation of the package's model."""
    import numpy as np

    settings = json.loads(Path(files["cli_args"]).read_text())
    norm = json.loads(Path(files["data_norm"]).read_text())
    bands = settings["list_filters"]
    features = settings["training_features"]
    normalised = settings["training_features_to_normalize"]
    # the feature of each set of bands an epoch may have, by its bits (band i: bit i)
    combination = np.full(1 << len(bands), -1)
    for bits in range(1, 1 << len(bands)):
        name = "".join(b for i, b in enumerate(bands) if bits >> i & 1)
        combination[bits] = features.index(name)
    return {
        "network": runtime.onnx(Path(files["network"])),
        "bands": bands,
        "combination": combination,
        "norm": np.array([[norm[f][k] for k in ("min", "mean", "std")] for f in normalised]),
        "features": len(features),
    }


def _epochs(mjd: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each (time-sorted) point's epoch time, SuperNNova's ``grouped_MJD``: alert by alert the
    same rule, run over the k-th points of every alert at once."""
    import numpy as np

    grouped = mjd.copy()
    lengths = np.diff(offsets)
    starts = offsets[:-1]
    alive = np.flatnonzero(lengths > 0)
    last_start = mjd[starts[alive]]
    for k in range(1, int(lengths.max(initial=0))):
        keep = lengths[alive] > k
        alive, last_start = alive[keep], last_start[keep]
        at = starts[alive] + k
        new = (mjd[at] == mjd[at - 1]) | (mjd[at] - last_start > EPOCH_DAYS)
        last_start = np.where(new, mjd[at], last_start)
        grouped[at] = np.where(new, mjd[at], grouped[at - 1])
    return grouped


def _first_valid(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Per group (points sorted so the wanted one comes first): its first value that is not
    NaN, as pandas' ``groupby().first()``; NaN for a group without one."""
    import numpy as np

    out = np.full(groups, np.nan)
    valid = ~np.isnan(values)
    index = np.flatnonzero(valid)
    first = np.unique(group[index], return_index=True)
    out[first[0]] = values[index[first[1]]]
    return out


def epoch_rows(state, mjd, band_code, flux, error, offsets):
    """The normalised epoch rows of every alert (``band_code``: each point's position in
    SuperNNova's bands, ``len(bands)`` for another, -1 for none): (rows (epochs, 76) float32,
    the alert of each row, in alert then time order)."""
    import numpy as np

    owner = owners(offsets)
    order = np.lexsort((mjd, owner))  # stable, as pandas' sort on (SNID, MJD)
    mjd, band_code, owner = mjd[order], band_code[order], owner[order]
    flux, error = flux[order] * FLUXCAL, error[order] * FLUXCAL
    epoch = _epochs(mjd, offsets)  # the same counts per alert, now time-sorted within each

    bands = state["bands"]
    has_band = band_code >= 0  # a point without a band is dropped by the groupby
    # per (alert, epoch, band): the smallest error first (NaN errors last)
    error_key = np.where(np.isnan(error), np.inf, error)
    pick = np.flatnonzero(has_band)
    pick = pick[np.lexsort((error_key[pick], band_code[pick], epoch[pick], owner[pick]))]
    key = np.stack([owner[pick], epoch[pick], band_code[pick]])
    starts = np.ones(len(pick), dtype=bool)
    starts[1:] = np.any(key[:, 1:] != key[:, :-1], axis=0)
    group = np.cumsum(starts) - 1
    groups = int(group[-1]) + 1 if len(group) else 0
    g_flux = _first_valid(flux[pick], group, groups)
    g_error = _first_valid(error[pick], group, groups)
    heads = pick[starts]
    g_owner, g_epoch, g_band = owner[heads], epoch[heads], band_code[heads]
    # pivot_table drops an (epoch, band) with neither a flux nor an error
    kept = ~(np.isnan(g_flux) & np.isnan(g_error))
    g_owner, g_epoch, g_band = g_owner[kept], g_epoch[kept], g_band[kept]
    g_flux, g_error = g_flux[kept], g_error[kept]

    # one row per (alert, epoch), in alert then time order
    new_row = np.ones(len(g_owner), dtype=bool)
    new_row[1:] = (g_owner[1:] != g_owner[:-1]) | (g_epoch[1:] != g_epoch[:-1])
    row = np.cumsum(new_row) - 1
    count = int(row[-1]) + 1 if len(row) else 0
    row_owner, row_epoch = g_owner[new_row], g_epoch[new_row]
    n = len(bands)
    raw = np.full((count, 2 * n + 1), np.nan)
    known = g_band < n
    raw[row[known], g_band[known]] = g_flux[known]
    raw[row[known], n + g_band[known]] = g_error[known]
    present = ~np.isnan(raw[:, :n])
    raw = np.nan_to_num(raw, nan=0.0)
    delta = np.diff(row_epoch, prepend=np.nan)
    first = np.ones(count, dtype=bool)
    first[1:] = row_owner[1:] != row_owner[:-1]
    delta[first] = 0.0
    raw[:, 2 * n] = delta
    # SuperNNova stores the pivoted table as float32, then normalises it in float64
    raw = raw.astype(np.float32).astype(np.float64)
    lo, mean, std = state["norm"].T
    normalised = (np.log(np.clip(raw, lo, np.inf) - lo + 1e-5) - mean) / std

    features = np.zeros((count, state["features"]), dtype=np.float32)
    features[:, : 2 * n + 1] = normalised
    bits = present @ (1 << np.arange(n))
    with_bands = np.flatnonzero(bits)
    features[with_bands, state["combination"][bits[with_bands]]] = 1.0
    return features, row_owner


def predict(state, batch):
    """P(SN) of each alert of an Arrow batch."""
    import numpy as np

    mjd, offsets = lists(batch, "midpointMjdTai")
    band, _ = categories(batch, "band", state["bands"])
    flux, _ = lists(batch, "psfFlux")
    error, _ = lists(batch, "psfFluxErr")
    features, row_owner = epoch_rows(state, mjd, band, flux, error, offsets)
    alerts = batch.num_rows
    lengths = np.bincount(row_owner, minlength=alerts)
    starts = np.zeros(alerts + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    scores = np.full(alerts, np.nan)
    scored = np.flatnonzero(lengths > 0)
    by_length = scored[np.argsort(lengths[scored], kind="stable")]
    for chunk in np.array_split(by_length, -(-len(by_length) // CHUNK)):
        steps = int(lengths[chunk].max())
        rows = np.zeros((steps, len(chunk), features.shape[1]), dtype=np.float32)
        column = np.repeat(np.arange(len(chunk)), lengths[chunk])
        source = np.concatenate([np.arange(starts[a], starts[a + 1]) for a in chunk])
        rows[source - starts[chunk][column], column] = features[source]
        inputs = {"rows": rows, "lengths": lengths[chunk].astype(np.int32)}
        scores[chunk] = state["network"].run(None, inputs)[0][:, 0]
    return scores


MODEL = Model(
    name="snn_sn_vs_other",
    survey="rubin",
    description=__doc__,
    source=(
        "fink-science 7.4.0 (PyPI, Apache-2.0): fink_science.rubin.snn, model"
        " elasticc_binary_broad/SN_vs_other; SuperNNova 3.0.51 (MIT), arXiv:1901.06384"
    ),
    columns={
        field: light_curve("rubin", field)
        for field in ("midpointMjdTai", "band", "psfFlux", "psfFluxErr")
    },
    files={
        "network": FILES / "snn_sn_vs_other.onnx",
        "cli_args": FILES / "snn_sn_vs_other_cli_args.json",
        "data_norm": FILES / "snn_sn_vs_other_data_norm.json",
    },
    batch="arrow",
    load=load,
    predict=predict,
)
