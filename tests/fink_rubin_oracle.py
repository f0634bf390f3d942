"""Rubin alerts' SuperNNova and CATS scores as fink-science 7.4.0's own functions compute them:
the oracle of ``models/snn_sn_vs_other.py`` and ``models/cats.py``. Nothing here prepares a light
curve or runs a network: each alert's light curve is handed to ``snn_ia_elasticc`` (model
``elasticc_binary_broad/SN_vs_other``) and ``predict_nn`` as Fink's ``concat_col`` builds it
(``prvDiaSources`` then ``diaSource``), the plain functions under their pandas UDFs.

They need torch (SuperNNova) and TensorFlow 2.15 with numpy < 2 (CATS), which the job's
environment has not: the suite's ``.venv-fink`` (``make test`` makes it: Debian's python3-torch,
tensorflow-cpu 2.15.1 and the packages from PyPI) runs this file as a worker that lives as long
as the test session: light curves in as a JSON line on stdin, scores out as a JSON line on stdout.
Its frameworks load once a session (~12 s), not once a call; what it scored is kept for the
session (``_SCORED``), never in the repository. ``fink_rubin_scores`` is the tests' side."""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The environment holding fink-science's Rubin classifiers and their frameworks.
FINK_PYTHON = ROOT / ".venv-fink" / "bin" / "python"
#: The light-curve fields both functions read, in Fink's order for SuperNNova.
LIGHT_CURVE = ["midpointMjdTai", "band", "psfFlux", "psfFluxErr"]
SNN_MODEL = "elasticc_binary_broad/SN_vs_other"


def light_curve(alert: dict) -> dict[str, list]:
    """An alert's (as fastavro decodes it) earlier detections then its own, field by field."""
    history = [*(alert.get("prvDiaSources") or []), alert["diaSource"]]
    return {k: [h[k] for h in history] for k in LIGHT_CURVE}


#: The kinds CATS gives probabilities of, in its order, and Fink's code of each (fink-broker's
#: rubin/science.py).
CATS_CODES = {"sn_like": 11, "fast": 12, "long": 13, "periodic": 21, "non_periodic": 22}
#: Alerts already scored: their light curve (as JSON) -> scores. ``prime`` fills it in one batch.
_SCORED: dict[str, dict] = {}


def production_cats(alert: dict, probabilities: list[float]) -> dict:
    """What Fink's production makes of CATS' probabilities: a single detection, or an answer of
    NaN, is not classified (class -1, score 0, no probabilities); else the most probable kind's
    code and its probability."""
    if len(alert.get("prvDiaSources") or []) == 0 or any(p != p for p in probabilities):
        return {"class": -1, "score": 0.0, **dict.fromkeys(CATS_CODES)}
    best = max(range(len(probabilities)), key=lambda i: (probabilities[i], -i))
    return {
        "class": list(CATS_CODES.values())[best],
        "score": probabilities[best],
        **dict(zip(CATS_CODES, probabilities, strict=True)),
    }


def _key(alert: dict) -> str:
    return json.dumps([alert["diaSource"]["diaSourceId"], light_curve(alert)])


def prime(alerts) -> None:
    """Score every alert not scored yet, in one batch (the frameworks load once: ~12 s)."""
    todo = {_key(a): a for a in alerts if _key(a) not in _SCORED}
    if todo:
        _SCORED.update(zip(todo, fink_rubin_scores(list(todo.values())), strict=True))


def classified(alert: dict) -> dict:
    """One alert's ``{"snn": ..., "cats": production_cats}`` (scored now unless primed)."""
    prime([alert])
    scores = _SCORED[_key(alert)]
    return {"snn": scores["snn"], "cats": production_cats(alert, scores["cats"])}


#: What the worker writes before each answer: anything else on its stdout is a framework talking.
ANSWER = "fink-rubin-oracle: "


@cache
def _worker() -> tuple[subprocess.Popen, Path]:
    """The session's one worker in ``.venv-fink`` (and the file its stderr goes to), stopped when
    the tests' process ends."""
    log = Path(tempfile.mkstemp(prefix="fink-rubin-oracle-", suffix=".log")[1])
    worker = subprocess.Popen(
        [str(FINK_PYTHON), __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )

    def stop() -> None:
        worker.stdin.close()  # the worker ends at the end of its input
        worker.wait(60)
        log.unlink(missing_ok=True)

    atexit.register(stop)
    return worker, log


def fink_rubin_scores(alerts: list[dict]) -> list[dict]:
    """Each alert's ``{"snn": P(SN), "cats": [five class probabilities]}`` from fink-science, the
    alerts scored together as one pandas UDF batch."""
    curves = [{"id": a["diaSource"]["diaSourceId"], **light_curve(a)} for a in alerts]
    worker, log = _worker()
    worker.stdin.write(json.dumps(curves) + "\n")
    worker.stdin.flush()
    for line in worker.stdout:
        if line.startswith(ANSWER):
            out = json.loads(line.removeprefix(ANSWER))
            break
    else:
        raise RuntimeError(f"fink-science's classifiers failed:\n{log.read_text()[-4000:]}")
    if "error" in out:
        raise RuntimeError(f"fink-science's classifiers failed:\n{out['error']}")
    return [{"snn": s, "cats": c} for s, c in zip(out["snn"], out["cats"], strict=True)]


def fink_rubin_files() -> dict[str, str]:
    """The package's own files of SuperNNova's model, by the names models/snn_sn_vs_other.py
    gives its copies."""
    code = (
        "import fink_science, os;"
        f"print(os.path.join(os.path.dirname(fink_science.__file__), 'data/models/snn_models', {SNN_MODEL!r}))"
    )
    done = subprocess.run(
        [str(FINK_PYTHON), "-c", code], capture_output=True, text=True, check=True
    )
    folder = Path(done.stdout.strip())
    return {"cli_args": str(folder / "cli_args.json"), "data_norm": str(folder / "data_norm.json")}


def _score(curves: list[dict]) -> dict[str, list]:
    """In ``.venv-fink``: the two functions over the curves, as pandas Series of arrays."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import pandas as pd
    from fink_science.rubin.cats.processor import predict_nn
    from fink_science.rubin.snn.processor import snn_ia_elasticc

    def series(field: str, dtype) -> pd.Series:
        return pd.Series([np.asarray(c[field], dtype=dtype) for c in curves])

    mjd, band = series("midpointMjdTai", "float64"), series("band", object)
    flux, error = series("psfFlux", "float64"), series("psfFluxErr", "float64")
    ids = pd.Series([c["id"] for c in curves])
    snn = snn_ia_elasticc.func(ids, mjd, band, flux, error, pd.Series([SNN_MODEL] * len(ids)))
    cats = predict_nn.func(mjd, flux, error, band)
    return {
        "snn": [float(s) for s in snn],
        "cats": [[float(p) for p in probabilities] for probabilities in cats],
    }


def _serve() -> None:
    """In ``.venv-fink``: a batch of light curves a line, each answered on one line, until the
    input ends. A batch that fails is answered with its error, and the next one still runs."""
    import traceback

    for line in sys.stdin:
        try:
            answer = _score(json.loads(line))
        except Exception:
            answer = {"error": traceback.format_exc()}
        print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
