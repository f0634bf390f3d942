"""Variable sources in Rubin: the detections in this detection's band scatter more than their
errors allow for a source of constant light. Difference imaging detects a source each time its
flux differs from the template's; a source that keeps one difference flux (a transient on a
plateau, a star that moved since the template) is steady, one whose difference flux changes from
visit to visit varies: AGN, variable stars, transients that rise or fade between visits. No model
and no period: a first cut for variability studies, and a check on what a classifier calls
variable.

Cuts and reasons:

- The scatter, in this detection's band only (two bands differ by a colour, not a variation):
  every detection of the band the alert carries (``prvDiaSources``, Rubin's last 12 months, and
  this one) with a measured flux and an error above 0;
  - at least ``min_points`` = 5: with fewer, one bad measurement makes the scatter;
  - the chi-square of the fluxes about their weighted mean (weights 1 / psfFluxErr^2) so large
    that a constant source would scatter this much by chance less than ``max_chance`` = 0.001 of
    the time (chi-square distribution of n - 1 degrees of freedom): a probability, so the cut
    means the same for 5 points as for 100. The probability is why this filter is Python: SQL has
    no chi-square distribution (scipy's ``chdtrc``).
- The detection itself: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``), ``reliability > 0.5`` (more likely real than not),
  not a known solar-system object.

Variables are a large share of any night's alerts (8.5% of a simulated visit of 10,000 pass: the
simulator's variable stars and AGN, and transients detected five times or more), and this filter
hands them to variability studies whole, as ``rubin_periodic_or_agn`` does: it declares an
admission cap of 20% (``max_rate``) instead of the 5% a job's admission gives a filter by default.

All the batch's light curves are fitted at once (``alertsieve.filtering.batch_fits``): a batch of
10,000 alerts is a few array operations, not 10,000 loops. Python filters run in micro-batches
only (Real-Time Mode runs SQL): a job in Real-Time Mode that names it refuses to start, saying so.

Of the 147 real Rubin alerts of the shared corpus (47 LSSTCam, 100 Operations Rehearsal) it
selects 2, both in tests/data/real: the two LSSTCam alerts with a history
in their band (16 and 15 earlier i-band detections over 38 and 17 days; chi-square 51 over 16
and 62 over 15 degrees of freedom: chances of 2e-5 and 1e-7). The others carry fewer than 5
detections of their band. The 50 Operations Rehearsal 4 alerts of tests/data/exports (1 to 89
earlier detections each) carry no reliability score (v7.1), so none passes; without that cut, 14
of them would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alertsieve.filtering.features import CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.features.sql import detections_sql
from alertsieve.filtering.model import python_filter

if TYPE_CHECKING:  # pandas and numpy are the job's, not a subscriber's (filters list imports this)
    import pandas as pd

#: This detection and the earlier ones of its band.
_BAND_POINTS = detections_sql(
    "diaSource",
    "prvDiaSources",
    {"t": "midpointMjdTai", "flux": "psfFlux", "err": "psfFluxErr", "band": "band"},
    keep="p.band = diaSource.band",
)


@python_filter(
    name="rubin_variable_sources",
    survey="rubin",
    contact="alertsieve maintainers",
    columns={
        "detection_ok": f"coalesce({CLEAN} AND diaSource.reliability > 0.5"
        f" AND NOT isnan(diaSource.reliability) AND NOT {KNOWN_MOVING_OBJECT}, false)",
        "now": "diaSource.midpointMjdTai",
        "times": f"transform({_BAND_POINTS}, p -> double(p.t))",
        "fluxes": f"transform({_BAND_POINTS}, p -> double(p.flux))",
        "errors": f"transform({_BAND_POINTS}, p -> double(p.err))",
    },
    params={"min_points": 5, "max_chance": 0.001},
    max_rate=0.2,
)
def rubin_variable_sources(alerts: pd.DataFrame, min_points: int, max_chance: float) -> pd.Series:
    """Each alert: a clean detection whose band's fluxes scatter beyond their errors."""
    import numpy as np
    import pandas as pd
    from scipy.special import chdtrc

    from alertsieve.filtering.batch_fits import fit_constants

    now = alerts["now"].to_numpy(dtype=float)
    scatter = fit_constants(
        alerts["times"], alerts["fluxes"], alerts["errors"], np.full(len(now), -np.inf), now
    )
    enough = scatter.points >= min_points
    with np.errstate(invalid="ignore"):
        chance = chdtrc(np.maximum(scatter.points - 1, 1), scatter.chi2)
        varies = enough & (chance < max_chance)
    ok = alerts["detection_ok"].to_numpy(dtype=bool)
    return pd.Series(ok & varies, index=alerts.index)
