"""Young transients rising steadily in ZTF: four or more detections in this detection's band over
the last 15 days, on a straight line in magnitude that brightens by more than 0.05 mag a day, at
5 sigma. A supernova on its way to peak does this (a type Ia rises for about 18 days, Firth et al.
2015, MNRAS 446, 3895; ZTF sees it every 2-3 nights per band); a single pair of points, which is
all the SQL features compare (``rise`` between the band's last two detections), also catches a
variable star's upswing or one bad measurement. A line through every point, weighted by its
error, needs Python: the example of a contributed Python filter.

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
must be measured (error above 0), and a null age fails. Python filters run in
micro-batches only (Real-Time Mode runs SQL), so a job in Real-Time Mode leaves it out and says so.

Of the 124 real ZTF alerts with histories (tests/data/real/ztf-3.3-histories) it selects two, the
two young supernovae there (ZTF21acoshvy and ZTF21acobels, first detected 10 and 13 days before): 7
and 8 positive detections in their band (this one included) over those days, on lines brightening by
about 0.2 and 0.1 mag a day. ``ztf_fast_transients`` rightly leaves them (slower than 0.3 mag a day
between the last two points); ``ztf_early_sn_ia`` takes one of them (ZTF21acoshvy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alertsieve.filtering.model import python_filter
from alertsieve.filtering.ztf_conditions import ZTF_CLEAN, ZTF_NEAR_SSO, ZTF_POSITIVE, ZTF_PS1_STAR

if TYPE_CHECKING:  # pandas and numpy are the job's, not a subscriber's (filters list imports this)
    import pandas as pd


@python_filter(
    name="ztf_steady_risers",
    survey="ztf",
    contact="alertsieve maintainers",
    columns={
        "detection_ok": f"coalesce({ZTF_CLEAN} AND {ZTF_POSITIVE} AND NOT {ZTF_PS1_STAR}"
        f" AND NOT {ZTF_NEAR_SSO}, false)",
        "jd": "candidate.jd",
        "jdstarthist": "candidate.jdstarthist",
        "fid": "candidate.fid",
        "mag": "candidate.magpsf",
        "sigma": "candidate.sigmapsf",
        "earlier": "transform(prv_candidates, p -> struct(p.jd AS jd, p.fid AS fid,"
        " p.magpsf AS mag, p.sigmapsf AS sigma, p.isdiffpos AS isdiffpos))",
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
    """Each alert: a clean, young detection whose band's last ``window_days`` fit a steady rise."""
    import numpy as np
    import pandas as pd

    def measured(*values) -> bool:
        return all(v is not None and not np.isnan(v) for v in values)

    def rising(row) -> bool:
        measured_now = measured(row.jd, row.mag, row.sigma) and row.sigma > 0
        if not row.detection_ok or not measured_now or not measured(row.jdstarthist):
            return False
        if not row.jd - row.jdstarthist < max_age_days:
            return False
        points = [(row.jd, row.mag, row.sigma)]
        for p in row.earlier if row.earlier is not None else []:
            if p["fid"] == row.fid and p["isdiffpos"] in ("t", "1") and p["jd"] is not None:
                points.append((p["jd"], p["mag"], p["sigma"]))
        points = [
            (t, m, s)
            for t, m, s in points
            if measured(t, m, s) and s > 0 and row.jd - window_days <= t <= row.jd
        ]
        if len(points) < min_points:
            return False
        t, m, s = (np.array(column, dtype=float) for column in zip(*points, strict=True))
        if t.max() - t.min() < min_span_days:
            return False
        w = 1 / s**2
        dt = t - np.average(t, weights=w)
        slope = np.sum(w * dt * (m - np.average(m, weights=w))) / np.sum(w * dt**2)
        error = 1 / np.sqrt(np.sum(w * dt**2))
        return bool(-slope > min_rise and -slope / error > min_sigma)

    return pd.Series([rising(r) for r in alerts.itertuples(index=False)], index=alerts.index)
