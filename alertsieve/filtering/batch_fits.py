"""Straight lines through many alerts' light curves at once, for Python filters (``fit_lines``).

A filter that fits each alert's history in a Python loop pays the interpreter per alert: a batch
of 10,000 alerts is 10,000 fits. ``fit_lines`` takes the batch's points as one flat array and
computes every alert's weighted least-squares line from sums by alert (``numpy.bincount``), so a batch
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


def fit_lines(
    times: pd.Series, values: pd.Series, errors: pd.Series, start: np.ndarray, end: np.ndarray
) -> Lines:
    """Per alert, the line through its points (``times``, ``values``, ``errors``: a pandas Series
    of arrays each, one array an alert, null for none) that lie within ``[start, end]`` and are
    measured (time, value and error not NaN, error above 0), each weighted by ``1 / error**2``."""
    n = len(times)
    lengths = times.map(lambda a: 0 if a is None else len(a)).to_numpy(dtype=np.int64)
    alert = np.repeat(np.arange(n), lengths)
    t, y, s = (_flat(column) for column in (times, values, errors))
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    with np.errstate(invalid="ignore"):
        kept = np.isfinite(t) & np.isfinite(y) & (s > 0) & (t >= start[alert]) & (t <= end[alert])
    alert, y, w = alert[kept], y[kept], 1 / s[kept] ** 2
    # Times from each alert's own end: sums of squares of days, not of Julian dates (2.46e6),
    # which would leave float64 a few digits to subtract.
    days = t[kept] - end[alert]

    def by_alert(weights: np.ndarray) -> np.ndarray:
        return np.bincount(alert, weights=weights, minlength=n)

    sw, st, sy = by_alert(w), by_alert(w * days), by_alert(w * y)
    stt, sty = by_alert(w * days**2), by_alert(w * days * y)
    first, last = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(first, alert, days)
    np.maximum.at(last, alert, days)
    points = np.bincount(alert, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = stt - st**2 / sw  # sum of w * (t - weighted mean t)**2
        slope = (sty - st * sy / sw) / spread
        error = 1 / np.sqrt(spread)
    flat = (points < 2) | ~(spread > 0)
    slope[flat], error[flat] = np.nan, np.nan
    return Lines(
        points=points, span=np.where(points > 1, last - first, 0.0), slope=slope, error=error
    )


def _flat(column: pd.Series) -> np.ndarray:
    """The arrays of ``column`` end to end, as floats (a null element as NaN)."""
    arrays = [np.asarray(a, dtype=float) for a in column if a is not None and len(a)]
    return np.concatenate(arrays) if arrays else np.empty(0)
