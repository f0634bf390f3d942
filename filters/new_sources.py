"""New sources: the first detection of an object, clean, confidently real and clearly brighter
than its template. Young transients start here; so do asteroids Rubin does not know yet (most of
this stream near the ecliptic: one detection cannot tell them apart, the second one can).

Cuts and reasons:

- First detection: no earlier detection in the alert (``features.n_detections = 1``, which counts
  the history and this one, and works when ``prvDiaSources`` is null), nor in the object's whole
  record: ``diaObject.nDiaSources = 1`` (schema 8.0 on; it also counts detections older than the
  12 months of history an alert carries; 7.x lacks it, so null is taken as 1).
- Quality: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``).
- ``reliability > 0.9``: with one detection, the real/bogus score is all there is to go on; if it
  is calibrated, at most one in ten of these is an artefact.
- ``psfFlux > 6 psfFluxErr``: positive (a new source is brighter than the template; a negative
  first detection is a template source that faded) and above 6 sigma. Rubin detects at 5 sigma
  over ~10^8 independent PSF footprints a visit (3.2 Gpixel, ~28 pixels per footprint for 0.7"
  seeing on 0.2" pixels), where Gaussian noise alone gives ~30 positive 5-sigma peaks (tail
  probability 2.9e-7) and 0.1 at 6 sigma (1e-9): with no second detection, 6 sigma rules noise out.
- Not a known solar-system object (``ssSource``, ``ssObjectId``).

NaN never passes (``NOT isnan``: Spark orders NaN above every number).
"""

from alertsieve.filtering.features import CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="new_sources",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            "features.n_detections = 1",
            "coalesce(diaObject.nDiaSources, 1) = 1",
            CLEAN,
            "diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)",
            "diaSource.psfFlux > {min_snr} * diaSource.psfFluxErr AND NOT isnan(diaSource.psfFlux)",
            f"NOT {KNOWN_MOVING_OBJECT}",
        ]
    ),
    params={"min_reliability": 0.9, "min_snr": 6.0},
)
