"""Fits to many alerts' light curves at once, for Python filters: a straight line
(``fit_lines``) or a constant (``fit_constants``) through each alert's points.

A filter that fits each alert's history in a Python loop pays the interpreter per alert: a batch
of 10,000 alerts is 10,000 fits. These take the batch's points as one flat array and compute
every alert's weighted least-squares fit from sums by alert (``numpy.bincount``), so a batch
costs a few array operations whatever its size. The SQL of the filter's ``columns`` picks the
points (a band, positive detections) as arrays; the fit decides what the points say.

numpy and pandas are the job's packages: a filter module imports this inside its function, so
a subscriber's install (which lists filters but does not run them) never needs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Lines:
    """Each alert's line, index for index with the batch."""

    #: The points the line went through.
    points: np.ndarray
    #: Days between its first and last point (0 with fewer than two).
    span: np.ndarray
    #: Change of the value a day; NaN with fewer than two points or no spread in time.
    slope: np.ndarray
    #: The slope's standard error from the points' errors alone (not scaled by the scatter).
    error: np.ndarray


@dataclass(frozen=True)
class Constants:
    """Each alert's weighted mean and the scatter about it, index for index with the batch."""

    #: The points the mean went through.
    points: np.ndarray
    #: The weighted mean of their values; NaN with no point.
    mean: np.ndarray
    #: Chi-square of the points about that mean (0 with one point, NaN with none).
    chi2: np.ndarray


@dataclass(frozen=True)
class _Points:
    """The batch's kept points end to end, each with the index of its alert."""

    alert: np.ndarray
    time: np.ndarray
    value: np.ndarray
    weight: np.ndarray
    n: int

    def by_alert(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.alert, weights=weights, minlength=self.n)

    def counts(self) -> np.ndarray:
        return np.bincount(self.alert, minlength=self.n)


def fit_lines(
    times: pd.Series, values: pd.Series, errors: pd.Series, start: np.ndarray, end: np.ndarray
) -> Lines:
    """Per alert, the line through its points (``times``, ``values``, ``errors``: a pandas Series
    of arrays each, one array an alert, null for none) that lie within ``[start, end]`` and are
    measured (time, value and error not NaN, error above 0), each weighted by ``1 / error**2``."""
    p = _points(times, values, errors, start, end)
    # Times from each alert's own end: sums of squares of days, not of Julian dates (2.46e6),
    # which would leave float64 a few digits to subtract.
    days = p.time - np.asarray(end, dtype=float)[p.alert]
    w, y = p.weight, p.value
    sw, st, sy = p.by_alert(w), p.by_alert(w * days), p.by_alert(w * y)
    stt, sty = p.by_alert(w * days**2), p.by_alert(w * days * y)
    first, last = np.full(p.n, np.inf), np.full(p.n, -np.inf)
    np.minimum.at(first, p.alert, days)
    np.maximum.at(last, p.alert, days)
    points = p.counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = stt - st**2 / sw  # sum of w * (t - weighted mean t)**2
        slope = (sty - st * sy / sw) / spread
        error = 1 / np.sqrt(spread)
    flat = (points < 2) | ~(spread > 0)
    slope[flat], error[flat] = np.nan, np.nan
    return Lines(
        points=points, span=np.where(points > 1, last - first, 0.0), slope=slope, error=error
    )


def fit_constants(
    times: pd.Series, values: pd.Series, errors: pd.Series, start: np.ndarray, end: np.ndarray
) -> Constants:
    """Per alert, the weighted mean of its points (as ``fit_lines`` keeps them) and their
    chi-square about it: how far a constant source's measurements would scatter by chance."""
    p = _points(times, values, errors, start, end)
    points = p.counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = p.by_alert(p.weight * p.value) / p.by_alert(p.weight)
    chi2 = p.by_alert(p.weight * (p.value - mean[p.alert]) ** 2)
    chi2[points == 0] = np.nan
    return Constants(points=points, mean=mean, chi2=chi2)


def _points(
    times: pd.Series, values: pd.Series, errors: pd.Series, start: np.ndarray, end: np.ndarray
) -> _Points:
    n = len(times)
    lengths = times.map(lambda a: 0 if a is None else len(a)).to_numpy(dtype=np.int64)
    alert = np.repeat(np.arange(n), lengths)
    t, y, s = (_flat(column) for column in (times, values, errors))
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    with np.errstate(invalid="ignore"):
        kept = np.isfinite(t) & np.isfinite(y) & (s > 0) & (t >= start[alert]) & (t <= end[alert])
    return _Points(alert=alert[kept], time=t[kept], value=y[kept], weight=1 / s[kept] ** 2, n=n)


def _flat(column: pd.Series) -> np.ndarray:
    """The arrays of ``column`` end to end, as floats (a null element as NaN)."""
    arrays = [np.asarray(a, dtype=float) for a in column if a is not None and len(a)]
    return np.concatenate(arrays) if arrays else np.empty(0)
