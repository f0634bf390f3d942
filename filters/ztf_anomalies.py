"""The most anomalous ZTF light curves by the SNAD anomaly forest (``scores.ztf_anomaly``,
``models/ztf_anomaly.py``: Fink's model, arXiv:2209.00946), from clean detections: what Fink's
anomaly channel shows its users, as a stateless cut.

Cuts and reasons:

- Quality: ``ZTF_CLEAN`` (``alertsieve.filtering.ztf_conditions``: Fink's and AMPEL's quality
  cuts): an artefact's light curve is anomalous for the wrong reason.
- ``scores.ztf_anomaly < {max_score}``: the forests' score is negative for outliers, the more
  negative the more anomalous; 0 means the alert's light curve had too little to score (fewer
  than two bands), never an anomaly. Fink's channel sends the night's 10 lowest scores, a rank
  over a whole night, which a stateless job cannot know before the night is over; a threshold is
  its stateless twin. -0.025 keeps the tail: on the 124 real ZTF alerts with light curves of
  ``tests/data/real/ztf-3.3-histories`` the scores (fink-science's own) run from -0.032 to 0,
  median -0.016, 5% below -0.0226; -0.025 passes 2 of them (1.6%), both clean. Raise it towards
  0 for more, lower it for fewer.
"""

from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.ztf_conditions import ZTF_CLEAN

FILTER = AlertFilter(
    name="ztf_anomalies",
    survey="ztf",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=f"{ZTF_CLEAN} AND scores.ztf_anomaly < {{max_score}}",
    params={"max_score": -0.025},
)
