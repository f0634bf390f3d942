"""Supernovae caught on their rise, as the Rubin transients model sees them
(``scores.rubin_transients``, ``models/rubin_transients.py``): a detection the forest takes for a
riser and not for an artefact, clean by Rubin's own score. A light-curve twin of ``fast_risers``
(which cuts on the features in SQL): where both agree, a spectrum is worth asking for.

Cuts and reasons:

- ``scores.rubin_transients.rising > {min_rising}``: the forest's probability that the detection
  is a supernova brighter than at its last visit in this band. Its probabilities are those of its
  training mix (a third risers, where the stream has ~0.3%), so a high threshold keeps the
  sure ones: 0.9.
- ``scores.rubin_transients.bogus < {max_bogus}``: and not an artefact by the same forest: 0.1.
- ``diaSource.reliability > {min_reliability}``, not NaN (Spark orders NaN above every number):
  Rubin's own real/bogus score agrees (0.5: the cut Rubin applies before sending alerts since
  2026).
"""

from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="rubin_rising_transients",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=(
        "scores.rubin_transients.rising > {min_rising}"
        " AND scores.rubin_transients.bogus < {max_bogus}"
        " AND diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)"
    ),
    params={"min_rising": 0.9, "max_bogus": 0.1, "min_reliability": 0.5},
)
