"""Early type Ia supernova candidates in ZTF: a new, clean source away from the Galactic plane and
from any PS1 star, first seen by ZTF less than two weeks ago, that was not there at a deeper look
a few days before its first detection, and is brightening in this detection's band. Caught on the
rise, a SN Ia's first days constrain its progenitor (Yao et al. 2019, arXiv:1910.02967); spectra
taken then pay most. No classifier: the light-curve and context half of such a selection, all in
SQL.

Cuts and reasons:

- Quality: ``ZTF_CLEAN`` (``alertsieve.filtering.ztf_conditions``: ``rb >= 0.55`` and
  ``nbad = 0`` as Fink's ZTF quality cuts, ``drb > 0.5`` when present as Fink's early-SN Ia
  filter, ``fwhm <= 5``, ``elong <= 1.4``, ``|magdiff| <= 0.4`` as AMPEL's SimpleDecentFilter) and
  ``ZTF_POSITIVE`` (``isdiffpos`` 't' or '1'): a supernova adds light to a reference taken before.
- Not a known solar-system object within 20 arcsec (``NOT ZTF_NEAR_SSO``, AMPEL's
  ``min_sso_dist = 20``).
- No PS1 star under it (``NOT ZTF_PS1_STAR``: ``sgscore1 > 0.76`` within 2 arcsec, ZTF's Bright
  Transient Survey filter, dperley/ztf-bts-filters ``rcf2020.py``): a source on a star is a
  variable star or a CV, not a supernova.
- ``|b| > 7`` deg: the Bright Transient Survey's Galactic-latitude cut (``rcf2020.py``: "Require 7
  degrees away from Galactic plane"), where extinction and stellar variables dominate. Computed
  in SQL (``ZTF_SIN_B``).
- Young: ``candidate.jd - candidate.jdstarthist < 14`` d. ``jdstarthist`` is ZTF's first
  detection at this place in the whole survey, not only in the alert's 30 days of history, so
  an old variable star cannot pass on a short window. A SN Ia rises for 18.5 d on average
  (15-22 d; Miller et al. 2020, arXiv:2001.00598), and ZTF's high-cadence survey caught all 127
  of Yao et al. 2019's more than 10 d before peak: under two weeks after its first detection, a
  SN Ia is most likely still on its rise, where early spectra and colours matter.
- Appeared: the latest upper limit before the first detection (``features.prediscovery_*``) is
  less than 5 d before it (``prediscovery_days - days_since_first < 5``), and fainter than the
  source is now (``prediscovery_limit > candidate.magpsf``): the field was looked at, deeper than
  this detection, within a few days of the first one: ZTF's public survey returns to a field
  every three nights (Bellm et al. 2019, PASP 131, 068003), and 5 d allows for a night lost.
  Without a limit in the history (null) it fails: nothing shows the source is new.
- Rising in this detection's band (``ZTF_THIS_BAND``: the band's latest positive detection is
  this one, ``days_ago = 0``), never across bands, where a colour would look like a rise: brighter
  than the band's previous positive detection at more than 3 sigma (``rise_sigma > 3``,
  positive: brightening), over more than half a day (``days_between > 0.5``). A SN Ia ten days
  after explosion gains ~0.2 mag/d (a fireball, flux ~ t^2 as Miller et al. 2020 find, gains
  2.17 / t mag/d), a hundredth of a magnitude in the hour between ZTF's same-night visits:
  only a change over a day or more can show it.

Null fails every cut but ``drb``; NaN fails every cut (``NOT isnan`` where ``>`` would pass it).
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
    name="ztf_early_sn_ia",
    survey="ztf",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            ZTF_CLEAN,
            ZTF_POSITIVE,
            f"NOT {ZTF_NEAR_SSO}",
            f"NOT {ZTF_PS1_STAR}",
            ZTF_OFF_THE_PLANE,
            "candidate.jd - candidate.jdstarthist < {max_age_days}",
            "features.prediscovery_days - features.days_since_first < {max_gap_days}",
            "features.prediscovery_limit > candidate.magpsf AND NOT isnan(candidate.magpsf)",
            f"{ZTF_THIS_BAND}.days_ago = 0",
            f"{ZTF_THIS_BAND}.rise_sigma > {{min_sigma}}",
            f"{ZTF_THIS_BAND}.days_between > {{min_days_between}}",
        ]
    ),
    params={
        "min_abs_b": 7.0,
        "max_age_days": 14.0,
        "max_gap_days": 5.0,
        "min_sigma": 3.0,
        "min_days_between": 0.5,
    },
)
