"""The oracle of models/rubin_transients.py: its eight features written again in numpy from an
alert as fastavro decodes it (nothing of the model module is run), fed to its ONNX file by
onnxruntime. What the model's docstring promises, from the other side."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

ONNX = Path(__file__).resolve().parents[1] / "models" / "files" / "rubin_transients.onnx"
MISSING = -999.0


def _value(x) -> float:
    return MISSING if x is None or not np.isfinite(x) else float(x)


def rubin_features(alert: dict) -> np.ndarray:
    """Signal to noise, signed log10 flux, reliability, extendedness, earlier detections, days
    since the first, and against the band's latest earlier detection: flux ratio, rise per day."""
    s = alert["diaSource"]
    earlier = alert.get("prvDiaSources") or []
    flux, err = s["psfFlux"], s["psfFluxErr"]
    snr = flux / err if flux is not None and err not in (None, 0) else None
    log_flux = np.sign(flux) * np.log10(abs(flux)) if flux not in (None, 0) else None
    times = np.array([d["midpointMjdTai"] for d in earlier if d["midpointMjdTai"] is not None])
    since_first = s["midpointMjdTai"] - times.min() if times.size else None
    same_band = [
        d
        for d in earlier
        if d["band"] == s["band"] and d["midpointMjdTai"] is not None and d["psfFlux"]
    ]
    ratio = rise = None
    if same_band and flux is not None:
        last = max(same_band, key=lambda d: (d["midpointMjdTai"], d["psfFlux"]))
        ratio = flux / last["psfFlux"]
        days = max(s["midpointMjdTai"] - last["midpointMjdTai"], 0.01)
        rise = (flux - last["psfFlux"]) / abs(last["psfFlux"]) / days
    values = [snr, log_flux, s["reliability"], s["extendedness"], len(earlier), since_first]
    return np.array([_value(v) for v in [*values, ratio, rise]], dtype=np.float32)


@cache
def _session():
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(str(ONNX), sess_options=options)


def rubin_transients_scores(alerts: list[dict]) -> list[dict[str, float]]:
    """{rising, bogus} probabilities of each alert (classes: other, rising, bogus)."""
    if not alerts:
        return []
    x = np.stack([rubin_features(a) for a in alerts])
    p = _session().run(["probabilities"], {"features": x})[0]
    return [{"rising": float(r[1]), "bogus": float(r[2])} for r in p]
