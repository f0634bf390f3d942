"""Variable sources that keep varying, as Fink's CATS classifier sees Rubin alerts: a periodic
variable (an RR Lyrae, a Cepheid, an eclipsing binary...) or a non-periodic one such as an AGN,
clean by Rubin's own real/bogus score. The complement of ``rubin_supernova_candidates``: what a
transient hunter wants out of the way, and what a variability study wants in.

Cuts and reasons (rates: the 47 real LSSTCam alerts of tests/data/rubin-light-curves, 2025-12):

- ``scores.cats.class IN (21, 22)``: CATS' most probable kind is periodic (21) or non-periodic
  (22). A single detection is not classified (class -1, as in Fink's production): CATS needs a
  light curve. None of the 47 pass: the three with light curves are SN-like, the other 44
  single detections of LSSTCam's first weeks.
- ``scores.cats.score > {min_cats}``: and that kind is more probable than the other four
  together.
- ``diaSource.reliability > {min_reliability}``, not NaN (Spark orders NaN above every number):
  Rubin's real/bogus score says nine in ten such detections are real.

Variables are a large share of any night's alerts (13.6% of a simulated visit pass these cuts:
the simulator's variable stars and AGN), and this filter is meant to hand them to variability
studies whole. So it declares an admission cap of 20% (``max_rate``) instead of the 5% a job's
admission gives a filter by default, which suits a transient search: a job with admission on
would otherwise refuse it for doing what it says.
"""

from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="rubin_periodic_or_agn",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=(
        "scores.cats.class IN (21, 22)"
        " AND scores.cats.score > {min_cats}"
        " AND diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)"
    ),
    params={"min_cats": 0.5, "min_reliability": 0.9},
    max_rate=0.2,
)
