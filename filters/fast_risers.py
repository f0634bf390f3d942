"""Fast risers: sources brightening faster than a threshold in magnitudes per day over their
recent light curve (previous detections plus this one). Young supernovae, kilonovae and flares
rise fast; most variables and noise do not rise steadily."""

import numpy as np
import pandas as pd

from alertsieve.filtering.model import python_filter

ZERO_POINT = 31.4  # AB magnitude of 1 nJy


def brightening_rate(times: np.ndarray, fluxes: np.ndarray) -> float:
    """Magnitudes per day gained (positive = brightening) from a straight-line fit."""
    magnitudes = ZERO_POINT - 2.5 * np.log10(fluxes)
    return -float(np.polyfit(times, magnitudes, 1)[0])


@python_filter(
    name="fast_risers",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    columns={
        "times": "concat(transform(prvDiaSources, s -> s.midpointMjdTai), array(diaSource.midpointMjdTai))",
        "fluxes": "concat(transform(prvDiaSources, s -> double(s.psfFlux)), array(double(diaSource.psfFlux)))",
    },
    params={"min_mag_per_day": 0.15, "min_points": 3, "max_days": 10.0},
    cutouts=True,  # a fast riser is worth looking at: keep its images in the archive
)
def fast_risers(
    alerts: pd.DataFrame, min_mag_per_day: float, min_points: int, max_days: float
) -> pd.Series:
    def rising(times, fluxes) -> bool:
        if times is None or fluxes is None:
            return False
        t, f = np.asarray(times, float), np.asarray(fluxes, float)
        recent = t >= t[-1] - max_days
        t, f = t[recent], f[recent]
        if len(t) < min_points or not np.all(f > 0) or np.ptp(t) == 0:
            return False
        return f[-1] == f.max() and brightening_rate(t, f) > min_mag_per_day

    return pd.Series(
        [rising(t, f) for t, f in zip(alerts["times"], alerts["fluxes"], strict=True)], dtype=bool
    )
