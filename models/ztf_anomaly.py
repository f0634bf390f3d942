"""The SNAD anomaly score of ZTF alerts, as the Fink broker computes it: light-curve features of
the alert's g and r bands (Malanchev et al. 2021, MNRAS 502, 5147, arXiv:2012.01419, appendix A)
fed to two isolation forests trained with active anomaly discovery (Pruzhinskaya et al. 2023,
A&A 672, A111, arXiv:2209.00946); the more negative, the more anomalous, 0 when the alert has too
little light curve to say.

Origin: ``fink-science`` 7.4.0 (PyPI, Apache-2.0, AstroLab Software), its functions
``fink_science.ztf.ad_features.processor.extract_features_ad_raw`` (features) and
``fink_science.ztf.anomaly_detection.processor.anomaly_score`` (model ``""``: the forests of
``anomaly_detection_forest_AAD.zip``). The forests and the tables of means are carried here
(``files/``, byte for byte the package's, with its licence: ``files/SOURCES.md``) so a job does
not install fink-science and its Spark-bound imports; the suite checks them against the package's
files and every score against the package's functions on real ZTF alerts.

What it does, as fink-science does it, odd parts included:

- The light curve is the alert's ``prv_candidates`` then its ``candidate`` (Fink's ``concat_col``),
  upper limits included. Which bands it has is decided from every row, upper limits included,
  keeping g (fid 1) and r (fid 2); measurements are the rows with a magnitude and its error.
- When a reference source sits under any detection (``distnr`` within 1.5 pixels), every
  detection's magnitude is made the DC magnitude from ``magnr``, ``sigmagnr`` and ``isdiffpos``
  (``fink_utils.photometry.vect_conversion.vect_dc_mag``); a negative or missing ``magnr`` makes
  it NaN and the detection is dropped.
- A band whose extraction raises (``light-curve`` refuses times that are not strictly increasing:
  a repeated time) is dropped; a band with only upper limits stays, its features NaN.
- Unless both bands remain, every feature is NaN. NaN features are replaced by the training
  set's means (``files/ztf_anomaly_*_means.csv``); an alert whose every feature is NaN in both
  bands scores 0.
- Odd, and kept: the g band's features (fid 1) are filled with the means fink-science calls
  ``r_means`` and fed to the forest it calls ``forest_r``; the r band's go with ``g_means`` and
  ``forest_g``. The score is the mean of the two forests' last outputs, in float32.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from alertsieve.filtering.scores.arrays import categories, lists
from alertsieve.filtering.scores.light_curves import light_curve
from alertsieve.filtering.scores.model import Model

FILES = Path(__file__).resolve().parent / "files"
#: The forests' inputs, in their order (fink-science's MODEL_COLUMNS).
MODEL_COLUMNS = [
    "amplitude",
    "anderson_darling_normal",
    "beyond_1_std",
    "chi2",
    "cusum",
    "kurtosis",
    "linear_fit_slope",
    "linear_fit_slope_sigma",
    "linear_trend_noise",
    "linear_trend_sigma",
    "magnitude_percentage_ratio_20_10",
    "magnitude_percentage_ratio_40_5",
    "maximum_slope",
    "median",
    "median_absolute_deviation",
    "median_buffer_range_percentage_10",
    "skew",
    "stetson_K",
]
#: The light-curve fields it reads, history then the alert's own value.
LIGHT_CURVE_FIELDS = ("magpsf", "jd", "sigmapsf", "fid", "distnr", "magnr", "sigmagnr", "isdiffpos")
#: ZTF's filter ids of g and r: the only bands the forests know.
G, R = 1, 2
#: A reference source within this many pixels sits behind the detection (fink_utils).
SOURCE_BEHIND_PIXELS = 1.5


def _extractor():
    """The features of arXiv:2012.01419 appendix A, as fink-science extracts them (all of them:
    one that raises drops the band, whichever it is)."""
    import light_curve as lc

    return lc.Extractor(
        lc.Mean(),
        lc.WeightedMean(),
        lc.StandardDeviation(),
        lc.Median(),
        lc.Amplitude(),
        lc.BeyondNStd(nstd=1),
        lc.Cusum(),
        lc.InterPercentileRange(quantile=0.1),
        lc.Kurtosis(),
        lc.LinearTrend(),
        lc.LinearFit(),
        lc.MagnitudePercentageRatio(quantile_numerator=0.4, quantile_denominator=0.05),
        lc.MagnitudePercentageRatio(quantile_numerator=0.2, quantile_denominator=0.1),
        lc.MaximumSlope(),
        lc.MedianAbsoluteDeviation(),
        lc.MedianBufferRangePercentage(quantile=0.1),
        lc.PercentAmplitude(),
        lc.MeanVariance(),
        lc.AndersonDarlingNormal(),
        lc.ReducedChi2(),
        lc.Skew(),
        lc.StetsonK(),
    )


def _dc_magnitudes(magpsf, sigmapsf, magnr, sigmagnr, positive):
    """Apparent (DC) magnitudes and errors from difference magnitudes and the reference source's
    (ZTF Explanatory Supplement p. 107, as fink_utils computes them)."""
    import numpy as np

    magnr = np.where(magnr < 0.0, np.nan, magnr)
    difference = 10 ** (-0.4 * magpsf)
    difference_error = sigmapsf / 1.0857 * difference
    reference = 10 ** (-0.4 * magnr)
    reference_error = sigmagnr / 1.0857 * reference
    flux = np.where(positive, reference + difference, reference - difference)
    flux_error = np.sqrt(difference_error**2 + reference_error**2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return -2.5 * np.log10(flux), flux_error / flux * 1.0857


def band_features(extractor, row) -> dict[int, dict[str, float]]:
    """{fid: {feature: value}} of one alert's light curve (g and r; each field a numpy array,
    NaN where null; ``positive`` whether ``isdiffpos`` says the difference is positive), as
    ``extract_features_ad_raw`` gives them."""
    import numpy as np

    fid = np.asarray(row["fid"], dtype="int32")
    magpsf, sigmapsf = row["magpsf"], row["sigmapsf"]
    jd, distnr = row["jd"], row["distnr"]
    bands = [b for b in np.unique(fid) if b <= R]
    measured = ~(np.isnan(magpsf) | np.isnan(sigmapsf))
    magpsf, sigmapsf = magpsf[measured], sigmapsf[measured]
    kept = np.ones(len(magpsf), dtype=bool)
    behind = (distnr[measured] >= 0) & (distnr[measured] <= SOURCE_BEHIND_PIXELS)
    if behind.any():
        magpsf, sigmapsf = _dc_magnitudes(
            magpsf,
            sigmapsf,
            row["magnr"][measured],
            row["sigmagnr"][measured],
            row["positive"][measured],
        )
        kept = ~(np.isnan(magpsf) | np.isnan(sigmapsf))
        magpsf, sigmapsf = magpsf[kept], sigmapsf[kept]
    jd, fid = jd[measured][kept], fid[measured][kept]
    order = np.argsort(jd, kind="stable")
    jd, fid, magpsf, sigmapsf = jd[order], fid[order], magpsf[order], sigmapsf[order]
    out: dict[int, dict[str, float]] = {}
    for band in bands:
        here = fid == band
        try:
            values = extractor(jd[here], magpsf[here], sigmapsf[here], fill_value=np.nan)
        except Exception:  # noqa: BLE001 - fink-science drops the band, whatever the error
            continue
        out[int(band)] = dict(zip(extractor.names, (float(v) for v in values), strict=True))
    return out


def load(files, runtime):
    """The two forests (opened with the job's ONNX Runtime settings) and the tables of means."""
    import pandas as pd

    with zipfile.ZipFile(files["forests"]) as archive:
        forest_g = runtime.onnx(archive.read("forest_g_AAD.onnx"))
        forest_r = runtime.onnx(archive.read("forest_r_AAD.onnx"))
    means = {
        name: pd.read_csv(files[name], header=None, index_col=0).squeeze("columns")
        for name in ("r_means", "g_means")
    }
    return {"forest_g": forest_g, "forest_r": forest_r, **means, "extractor": _extractor()}


def light_curves(batch) -> list[dict]:
    """Each alert's light curve, field -> numpy array: views into the batch's flat columns
    (``isdiffpos`` as ``positive``: "t" or "1", as fink_utils reads it)."""
    flat = {field: lists(batch, field) for field in LIGHT_CURVE_FIELDS if field != "isdiffpos"}
    sign, offsets = categories(batch, "isdiffpos", ["t", "1"])
    flat["positive"] = ((sign == 0) | (sign == 1), offsets)
    return [
        {field: values[offsets[i] : offsets[i + 1]] for field, (values, _) in flat.items()}
        for i in range(batch.num_rows)
    ]


def predict(state, batch):
    """One score per alert (float32, as the forests give it), from an Arrow batch."""
    import numpy as np
    import pandas as pd

    extractor = state["extractor"]
    features = [band_features(extractor, row) for row in light_curves(batch)]

    def band(fid: int):
        rows = [
            f[fid] if len(f) == 2 and all(f.values()) else dict.fromkeys(MODEL_COLUMNS, np.nan)
            for f in features
        ]
        return pd.DataFrame(rows, columns=MODEL_COLUMNS, dtype="float64")

    data_r, data_g = band(G), band(R)  # fink-science's names: g's features go to forest_r
    nothing = data_r.isna().all(axis=1).to_numpy() & data_g.isna().all(axis=1).to_numpy()
    data_r = data_r.fillna(state["r_means"][MODEL_COLUMNS])
    data_g = data_g.fillna(state["g_means"][MODEL_COLUMNS])
    scores_g = state["forest_g"].run(None, {"X": data_g.to_numpy().astype(np.float32)})
    scores_r = state["forest_r"].run(None, {"X": data_r.to_numpy().astype(np.float32)})
    score = np.transpose((scores_g[-1] + scores_r[-1]) / 2)[0]
    score[nothing] = 0.0
    return pd.Series(score.astype("float64"))


MODEL = Model(
    name="ztf_anomaly",
    survey="ztf",
    description=__doc__,
    source=(
        "fink-science 7.4.0 (PyPI, Apache-2.0): fink_science.ztf.anomaly_detection, forests"
        " anomaly_detection_forest_AAD.zip; features arXiv:2012.01419, forests arXiv:2209.00946"
    ),
    columns={field: light_curve("ztf", field) for field in LIGHT_CURVE_FIELDS},
    batch="arrow",
    files={
        "forests": FILES / "ztf_anomaly_forest_AAD.zip",
        "r_means": FILES / "ztf_anomaly_r_means.csv",
        "g_means": FILES / "ztf_anomaly_g_means.csv",
    },
    load=load,
    predict=predict,
)
