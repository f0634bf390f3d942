"""Fast extragalactic transient candidates in ZTF: young sources brightening by more than 0.3 mag a
day in the band of this detection, at 3 sigma, away from stars, the Galactic plane and known
asteroids. Kilonovae, GRB afterglows, fast blue optical transients and supernovae in their first
days rise this fast; a supernova's fireball (flux growing as the square of its age) gains 2.17 /
age mag a day, so only in its first week.

Cuts and reasons:

- The rise, in this detection's band only (``ZTF_THIS_BAND``: the band's latest positive
  detection is this one, ``days_ago = 0``), never a line through several bands, where a colour
  would look like a rise:
  - ``rise > 0.3`` mag/d: Fink's threshold for fast transients, a brightening of at least 0.3
    mag/d at SNR > 3 (fink-filters ``rubin/livestream/filter_fast_transient_gvom``); Fink's ZTF
    rate-based kilonova filter, built on Andreoni et al. 2021 (ZTFReST, arXiv:2104.06352), asks
    the same 0.3 mag/d of a fading source (``filter_rate_based_kn_candidates``);
  - ``rise_sigma > 3``: the change is significant at 3 sigma, as Fink asks;
  - ``days_between > 0.5`` d: the two detections more than half a day apart, as Fink's ZTF
    rate-based kilonova filter fits a rate only over more than 0.5 d: ZTF's same-night visits,
    an hour or so apart, turn a 0.1 mag error into a rate of several mag/d.
  Only positive detections count (the features' own choice), not upper limits.
- Young, in ZTF's whole record, not only the alert's 30 days: first detected at this place less
  than 14 d ago (``candidate.jd - candidate.jdstarthist < 14``) and fewer than 20 detections
  there (``ndethist < 20``), Fink's rate-based kilonova cuts (``new_detection``,
  ``small_detection_history``). A variable star brightening fast has a long history.
- A point source with a confident deep real-bogus score: ``classtar > 0.4`` (SExtractor's
  star/galaxy score of the detection) and ``drb > 0.9`` (when present), Fink's rate-based kilonova
  cuts (``high_classtar``, ``high_drb``): with one fast rise to go on, the source must be real.
- Away from stars: no PS1 star under it (``NOT ZTF_PS1_STAR``, ``sgscore1 > 0.76`` within 2
  arcsec, the Bright Transient Survey's test) and ``|b| > 10`` deg (Fink's rate-based kilonova
  filter, ``awaw_from_galactic_plane``): the fast risers of a ZTF search are mostly Galactic
  cataclysmic variables (Andreoni et al. 2020, arXiv:2008.00008).
- Not a known solar-system object within 20 arcsec (``NOT ZTF_NEAR_SSO``; Fink asks 10).
- Quality: ``ZTF_CLEAN`` (``alertsieve.filtering.ztf_conditions``) and ``ZTF_POSITIVE``: a new
  source adds light to the reference image.

Null fails every cut but ``drb``; NaN fails every cut. Matches keep their cutouts in the archive
(``cutouts=True``): a fast riser is worth looking at.

Of the 124 real ZTF alerts with histories (tests/data/real/ztf-3.3-histories) it selects none,
rightly: only four alerts, of three objects, are under 14 days old in ZTF's record. Two objects
are supernovae 10 and 13 days after their first detection, past the fast part of their rise
(ZTF21acoshvy gains 0.06 mag/d in g over its last 3 days; the latest same-band pairs of
ZTF21acobels are minutes apart); the third is a known asteroid, detected once. ZTF21acptaer rises
0.18 mag/d, but was first detected 753 days ago; the others are variable stars seen for years.
"""

from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.ztf_conditions import (
    ZTF_CLEAN,
    ZTF_NEAR_SSO,
    ZTF_OFF_THE_PLANE,
    ZTF_POSITIVE,
    ZTF_PS1_STAR,
    ZTF_THIS_BAND,
)

FILTER = AlertFilter(
    name="ztf_fast_transients",
    survey="ztf",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            f"{ZTF_THIS_BAND}.days_ago = 0",
            f"{ZTF_THIS_BAND}.rise > {{min_rise}}",
            f"{ZTF_THIS_BAND}.rise_sigma > {{min_sigma}}",
            f"{ZTF_THIS_BAND}.days_between > {{min_days_between}}",
            "candidate.jd - candidate.jdstarthist < {max_age_days}",
            "candidate.ndethist < {max_ndethist}",
            "candidate.classtar > {min_classtar} AND NOT isnan(candidate.classtar)",
            "(candidate.drb IS NULL OR (candidate.drb > {min_drb} AND NOT isnan(candidate.drb)))",
            f"NOT {ZTF_PS1_STAR}",
            ZTF_OFF_THE_PLANE,
            f"NOT {ZTF_NEAR_SSO}",
            ZTF_CLEAN,
            ZTF_POSITIVE,
        ]
    ),
    params={
        "min_rise": 0.3,
        "min_sigma": 3.0,
        "min_days_between": 0.5,
        "max_age_days": 14.0,
        "max_ndethist": 20,
        "min_classtar": 0.4,
        "min_drb": 0.9,
        "min_abs_b": 10.0,
    },
    cutouts=True,  # a fast riser is worth looking at: keep its images in the archive
)
