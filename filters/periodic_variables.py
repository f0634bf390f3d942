"""Periodic-variable candidates: sources seen to swing above and below their template brightness
at least twice over, in one band, by more than their errors allow. A variable star is in Rubin's
template at about its mean brightness, so its difference flux changes sign as it varies: two full
cycles about the template (four sign changes between consecutive detections) is the least that
shows a variation repeating. A supernova or a flare only ever adds light; a star that faded once
changes sign once.

Cuts and reasons:

- In some band (``features.<band>``): ``sign_changes >= 4`` (two cycles) and ``chi2 > 5``, the
  reduced chi-square of the band's fluxes about their weighted mean: with at least five
  detections (four changes need them) noise alone exceeds 5 with probability below 5e-4, so the
  crossings are not just a faint source's noise about zero.
- Quality: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``); ``reliability > 0.5`` (more likely real than not: the
  light curve confirms the source); not a known solar-system object.

Not cut on: ``extendedness``, which describes the difference-image source (point-like for any
variable), not whether the object is a star. AGN also vary about their template, without a
period; one alert cannot tell them apart (DMTN-102: ~70 AGN to ~7,200 variable stars a visit).
Features are null, never NaN.
"""

from alertsieve.filtering.features import BAND_FEATURES, CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="periodic_variables",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            f"exists({BAND_FEATURES}, b -> b.sign_changes >= {{min_sign_changes}} AND b.chi2 > {{min_chi2}})",
            CLEAN,
            "diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)",
            f"NOT {KNOWN_MOVING_OBJECT}",
        ]
    ),
    params={"min_sign_changes": 4, "min_chi2": 5.0, "min_reliability": 0.5},
)
