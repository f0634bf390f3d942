"""The SNAD anomaly score of a ZTF alert as fink-science 7.4.0's own functions compute it: the
oracle of ``models/ztf_anomaly.py``. Nothing here computes a feature or runs a forest: the
alert's light curve is handed to ``extract_features_ad_raw`` as Fink's ``concat_col`` builds it
(``prv_candidates`` then ``candidate``), and its features to ``anomaly_score`` (model "").

Three shims let the package run here, none touching what it computes: fink-science calls
``pandas.read_csv(squeeze=True)``, gone in pandas 2 (the shim squeezes as pandas 1 did); it
reuses any ``forest_*_AAD.onnx`` left in /tmp by an earlier run or another version (deleted
first); and it opens its forests with ONNX Runtime's default threads, with which a forest's sum
is not bit-stable (opened here with one, as the job does).

Also ELEPHANT's hostless statistics of a ZTF alert's stamps, the oracle of
``models/ztf_hostless.py``: the stamps' bytes handed to fink-science's
``HostLessExtragalactic.process_candidate_fink`` with the settings carried beside the model
(``fink_hostless``, whose docstring says how its generator is seeded)."""

from __future__ import annotations

import glob
import json
import os
from functools import cache
from pathlib import Path

#: The alert fields fink-science's anomaly features read, in its argument order.
LIGHT_CURVE = ["magpsf", "jd", "sigmapsf", "fid", "distnr", "magnr", "sigmagnr", "isdiffpos"]


@cache
def _fink():
    """fink-science's two functions, with the shims above installed once."""
    import onnxruntime
    import pandas as pd

    read_csv = pd.read_csv

    def squeezing_read_csv(*args, squeeze: bool = False, **kwargs):
        frame = read_csv(*args, **kwargs)
        return frame.squeeze("columns") if squeeze else frame

    pd.read_csv = squeezing_read_csv
    for stale in glob.glob("/tmp/forest_*_AAD*.onnx"):
        os.remove(stale)
    from fink_science.ztf.ad_features.processor import extract_features_ad_raw
    from fink_science.ztf.anomaly_detection import processor

    session = onnxruntime.InferenceSession

    def one_thread(path, *args, **kwargs):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        return session(path, sess_options=options)

    processor.rt.InferenceSession = one_thread
    return extract_features_ad_raw, processor.anomaly_score.func


def fink_anomaly_scores(alerts: list[dict]) -> list[float]:
    """Each alert's score (an alert as fastavro decodes it), by fink-science 7.4.0, in one batch
    as Fink's pandas UDF scores a batch."""
    import warnings

    import pandas as pd

    features_of, anomaly_score = _fink()
    features = []
    for a in alerts:
        history = [*(a.get("prv_candidates") or []), a["candidate"]]
        columns = [[h.get(k) for h in history] for k in LIGHT_CURVE]
        features.append(features_of(*columns[:4], a["objectId"], *columns[4:]))
    with warnings.catch_warnings():  # pandas 2 on its fillna(inplace=True): it still fills
        warnings.simplefilter("ignore", FutureWarning)
        return [float(s) for s in anomaly_score(pd.Series(features))]


def fink_model_files() -> dict[str, str]:
    """The package's own files of the forests and the means, by the names models/ztf_anomaly.py
    gives its copies."""
    import fink_science

    folder = os.path.join(os.path.dirname(fink_science.__file__), "data/models/anomaly_detection")
    return {
        "forests": os.path.join(folder, "anomaly_detection_forest_AAD.zip"),
        "r_means": os.path.join(folder, "r_means.csv"),
        "g_means": os.path.join(folder, "g_means.csv"),
    }


#: fink-science's settings of the hostless statistics (its config.json at the 7.4.0 tag, which
#: its wheel lacks), as carried beside the model.
HOSTLESS_CONFIG = Path(__file__).resolve().parents[1] / "models/files/ztf_hostless_config.json"
#: The seed fink-science gives numpy's global generator when its hostless module is imported.
HOSTLESS_SEED = 1337


@cache
def _hostless():
    """fink-science's ``HostLessExtragalactic`` with the carried settings. Its modules switch every
    warning off at import (``warnings.filterwarnings("ignore")``): undone here on return."""
    import warnings

    with warnings.catch_warnings():
        from fink_science.ztf.hostless_detection.run_pipeline import HostLessExtragalactic

    return HostLessExtragalactic(json.loads(HOSTLESS_CONFIG.read_text()))


def fink_hostless(science: bytes, template: bytes) -> tuple[float, float]:
    """(kstest_science, kstest_template) of one ZTF alert's stamps (the gzipped FITS bytes of
    ``cutoutScience.stampData`` and ``cutoutTemplate.stampData``), by fink-science 7.4.0's
    ``process_candidate_fink``; -99 where it finds no hostless candidate.

    One shim, which picks one of the values Fink can give rather than changing how it computes
    them: the package seeds numpy's global generator once, at import, and draws its noise and
    shuffles from it, so in Fink an alert's value depends on the candidates its worker scored
    before it. The generator is seeded again (1337, the package's seed) before each alert: the
    value Fink gives an alert that is the first candidate its worker meets."""
    import warnings

    import numpy as np

    hostless = _hostless()
    np.random.seed(HOSTLESS_SEED)
    with warnings.catch_warnings():  # astropy on NaN pixels, as the package silences it
        warnings.simplefilter("ignore")
        kstest_science, kstest_template = hostless.process_candidate_fink(science, template)
    return float(kstest_science), float(kstest_template)
