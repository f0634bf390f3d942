"""Bright, confident detections: worth a look by eye on any night, and bright enough to follow.

A source brighter than its template by more than a 20th-magnitude star's flux, measured to 0.1
mag, scored real with confidence, on clean pixels, and not a known asteroid. Cuts and reasons:

- Quality: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``), and no saturated pixel at the centre: the flux of a
  saturated core is wrong, however bright it looks.
- ``reliability > 0.9``: a stream meant for eyes should waste few of them; if the score is
  calibrated, at most one in ten of these is an artefact.
- ``psfFlux > 10 psfFluxErr``: a 0.1 mag measurement (sigma_m = 1.0857 / SNR), twice Rubin's
  5-sigma detection threshold. On the flux itself, so positive: brighter than the template.
- ``psfFlux`` above 20 mag (AB): Fink's limit for its bright Rubin candidates
  (``extragalactic_lt20mag_candidate``), about what a 2-4 m telescope classifies spectroscopically.
- Not a known solar-system object: bright asteroids are many near the ecliptic and have their own
  stream (``solar_system``).

NaN never passes (``NOT isnan``: Spark orders NaN above every number).
"""

from alertsieve.filtering.features import CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="bright_high_snr",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            CLEAN,
            "NOT coalesce(diaSource.pixelFlags_saturatedCenter, false)",
            "diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)",
            "diaSource.psfFlux > {min_snr} * diaSource.psfFluxErr AND NOT isnan(diaSource.psfFlux)",
            "diaSource.psfFlux > power(10, (31.4 - {max_mag}) / 2.5)",  # AB: 31.4 mag is 1 nJy
            f"NOT {KNOWN_MOVING_OBJECT}",
        ]
    ),
    params={"min_reliability": 0.9, "min_snr": 10.0, "max_mag": 20.0},
)
