"""Young transients rising steadily in ZTF: four or more detections in this detection's band over
the last 15 days, on a straight line in magnitude that brightens by more than 0.05 mag a day, at
5 sigma. A supernova on its way to peak does this (a type Ia rises for about 18 days, Firth et al.
2015, MNRAS 446, 3895; ZTF sees it every 2-3 nights per band); a single pair of points, which is
all the SQL features compare (``rise`` between the band's last two detections), also catches a
variable star's upswing or one bad measurement. A line through every point, weighted by its
error, reads best in Python: the whole batch's light curves are fitted at once
(``alertsieve.filtering.batch_fits``), a few array operations however many alerts.

Cuts and reasons:

- The fit, in this detection's band only (a line through several bands would fit a colour):
  every positive detection of the band (``isdiffpos`` 't' or '1': light added to the reference)
  from the last ``window_days`` = 15 d, this one included (upper limits are no detections);
  - at least ``min_points`` = 4: a line through 3 points has a single degree of freedom, and
    ZTF's same-field revisits give 3 points in a week to any source;
  - spanning at least ``min_span_days`` = 2 d: points of one night (ZTF revisits a field within
    hours) turn a 0.05 mag error into a rate of a magnitude a day;
  - slope brighter than ``min_rise`` = 0.05 mag/d (0.75 mag over the window: a SN Ia gains about
    2 mag in its last two weeks to peak), at ``min_sigma`` = 5 sigma of the weighted fit
    (weights 1 / sigmapsf^2, its standard error from the weights alone).
- Young in ZTF's whole record: first detected here less than ``max_age_days`` = 30 d ago
  (``jd - jdstarthist``): a supernova's rise is over by then, a variable star's history is long.
- The detection itself: ``ZTF_CLEAN`` (real-bogus and image quality), ``ZTF_POSITIVE``, no PS1
  star under it (``NOT ZTF_PS1_STAR``) and no known solar-system object within 20 arcsec
  (``NOT ZTF_NEAR_SSO``), decided in SQL (``alertsieve.filtering.ztf_conditions``).

An earlier point with a null or NaN magnitude, error or time is left out; this detection's own
must be measured (error above 0), and a null age fails. Python filters run in micro-batches only
(Real-Time Mode runs SQL): a job in Real-Time Mode that names it refuses to start, saying so.

Of the 124 real ZTF alerts with histories (tests/data/real/ztf-3.3-histories) it selects two, the
two young supernovae there (ZTF21acoshvy and ZTF21acobels, first detected 10 and 13 days before): 7
and 8 positive detections in their band (this one included) over those days, on lines brightening by
about 0.2 and 0.1 mag a day. ``ztf_fast_transients`` rightly leaves them (slower than 0.3 mag a day
between the last two points); ``ztf_early_sn_ia`` takes one of them (ZTF21acoshvy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alertsieve.filtering.features.sql import detections_sql
from alertsieve.filtering.model import python_filter
from alertsieve.filtering.ztf_conditions import ZTF_CLEAN, ZTF_NEAR_SSO, ZTF_POSITIVE, ZTF_PS1_STAR

if TYPE_CHECKING:  # pandas and numpy are the job's, not a subscriber's (filters list imports this)
    import pandas as pd


#: This detection and the earlier ones of its band where light was added (isdiffpos 't' or '1').
_BAND_POINTS = detections_sql(
    "candidate",
    "prv_candidates",
    {"jd": "jd", "mag": "magpsf", "sigma": "sigmapsf", "fid": "fid", "isdiffpos": "isdiffpos"},
    keep="p.fid = candidate.fid AND p.isdiffpos IN ('t', '1')",
)


@python_filter(
    name="ztf_steady_risers",
    survey="ztf",
    contact="alertsieve maintainers",
    columns={
        "detection_ok": f"coalesce({ZTF_CLEAN} AND {ZTF_POSITIVE} AND NOT {ZTF_PS1_STAR}"
        f" AND NOT {ZTF_NEAR_SSO}, false)",
        "jd": "candidate.jd",
        "age": "candidate.jd - candidate.jdstarthist",
        "mag": "candidate.magpsf",
        "sigma": "candidate.sigmapsf",
        "times": f"transform({_BAND_POINTS}, p -> p.jd)",
        "mags": f"transform({_BAND_POINTS}, p -> p.mag)",
        "sigmas": f"transform({_BAND_POINTS}, p -> p.sigma)",
    },
    params={
        "window_days": 15.0,
        "min_points": 4,
        "min_span_days": 2.0,
        "min_rise": 0.05,
        "min_sigma": 5.0,
        "max_age_days": 30.0,
    },
)
def ztf_steady_risers(
    alerts: pd.DataFrame,
    window_days: float,
    min_points: int,
    min_span_days: float,
    min_rise: float,
    min_sigma: float,
    max_age_days: float,
) -> pd.Series:
    """Each alert: a clean, young detection whose band's last ``window_days`` fit a steady rise
    (magnitudes fall as light grows: a rise is a negative slope). One fit for the whole batch."""
    import numpy as np
    import pandas as pd

    from alertsieve.filtering.batch_fits import fit_lines

    jd = alerts["jd"].to_numpy(dtype=float)
    line = fit_lines(alerts["times"], alerts["mags"], alerts["sigmas"], jd - window_days, jd)
    with np.errstate(invalid="ignore"):
        measured_now = np.isfinite(alerts["mag"].to_numpy(dtype=float)) & (
            alerts["sigma"].to_numpy(dtype=float) > 0
        )
        young = alerts["age"].to_numpy(dtype=float) < max_age_days
        rising = (-line.slope > min_rise) & (-line.slope / line.error > min_sigma)
    steady = (line.points >= min_points) & (line.span >= min_span_days)
    ok = alerts["detection_ok"].to_numpy(dtype=bool)
    return pd.Series(ok & measured_now & young & steady & rising, index=alerts.index)
