"""Known solar-system objects: detections Rubin associated with a known asteroid or comet, clean
and real, for asteroid and comet brokers (photometry for phase curves, colours and rotation;
astrometry).

Cuts and reasons:

- A known object: an ``ssSource`` record (schema 8.0 on) or a non-zero ``diaSource.ssObjectId``
  (every version) (``alertsieve.filtering.features.KNOWN_MOVING_OBJECT``).
- Quality: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``): a measurement on bad pixels is no use to a phase
  curve either.
- ``reliability > 0.5``: more likely real than not, the score's decision boundary. The association
  with a known orbit already vouches for the source, so the score need not carry it alone.

Not cut on: trailing (fast movers trail, and are among the most wanted), extendedness (activity
makes a comet extended). NaN never passes (``NOT isnan``).
"""

from alertsieve.filtering.features import CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="solar_system",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            KNOWN_MOVING_OBJECT,
            CLEAN,
            "diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)",
        ]
    ),
    params={"min_reliability": 0.5},
)
