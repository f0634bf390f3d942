"""Supernova candidates on the real sky, as Fink's classifiers see Rubin alerts: CATS calls the
light curve SN-like, SuperNNova is confident it is a supernova, and Rubin's own real/bogus
score calls the detection real. Both scores are the models Fink runs on every LSSTCam alert
(``models/cats.py``, ``models/snn_sn_vs_other.py``), equal to fink-science's on real alerts.

Cuts and reasons (rates: the 47 real LSSTCam alerts of tests/data/rubin-light-curves, 2025-12):

- ``scores.cats.class = 11``: CATS' most probable kind is SN-like. A single detection is not
  classified (class -1, as in Fink's production): CATS needs a light curve. 3 of 47 pass.
- ``scores.cats.score > {min_cats}``: and SN-like is more probable than the other four kinds
  together. 3 of 47 (0.93, 0.94, 0.99).
- ``scores.snn_sn_vs_other > {min_snn}``: SuperNNova's probability of a supernova. A single point
  scores 0.72-0.78 whatever it is (on the real alerts: the network's answer for one epoch), so
  0.8 asks for a light curve that says more. 2 of 47 (0.83 and 0.84, the alerts with 17 and 23
  detections).
- ``diaSource.reliability > {min_reliability}``, not NaN (Spark orders NaN above every number):
  Rubin's real/bogus score says nine in ten such detections are real (Rubin stopped sending alerts
  below 0.5 in 2026). 2 of 47 pass all four.
"""

from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="rubin_supernova_candidates",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=(
        "scores.cats.class = 11"
        " AND scores.cats.score > {min_cats}"
        " AND scores.snn_sn_vs_other > {min_snn}"
        " AND diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)"
    ),
    params={"min_cats": 0.5, "min_snn": 0.8, "min_reliability": 0.9},
)
