"""Variable stars with a long ZTF history: a PS1 star under the source, first detected by ZTF more
than 90 days ago, whose positive detections in one band within the alert's 30 days scatter far
more than their errors allow, by a large amplitude. Pulsating stars, eclipsing binaries and
young stellar objects keep coming back to the alert stream; this is their stream, and the one
transient filters should not be fed.

Cuts and reasons:

- A star: a PS1 source with ``sgscore1 > 0.76`` within 2 arcsec (``ZTF_PS1_STAR``: Tachibana &
  Miller 2018's threshold as ZTF's Bright Transient Survey filter uses it, dperley/ztf-bts-filters
  ``rcf2020.py``). A galaxy nucleus varies too (an AGN), but is not a star.
- Long history: ``candidate.jd - candidate.jdstarthist > 90`` d, over ZTF's whole record at this
  place: the age after which the Bright Transient Survey filter starts to call a repeating source
  a variable rather than a transient (``rcf2020.py``, ``variablesource``: "(a) 90+days old").
- Varying, in one band (``features.g``, ``.r`` or ``.i``, over positive detections only):
  - ``n >= 5`` detections: four degrees of freedom at least, for the chi-square;
  - ``chi2 > 5``, the reduced chi-square of the magnitudes about their weighted mean: with four
    degrees of freedom or more, noise alone exceeds 5 with probability below 5e-4, so the scatter
    is the star's;
  - ``amplitude > 0.3`` mag (faintest minus brightest): the difference flux changes by a third or
    more, well above ZTF's zero-point scatter (``magzpscirms``, a few hundredths of a magnitude in
    these alerts), which a bright star's small errors would otherwise turn into a large chi2.
  Magnitudes here are of the difference flux (``magpsf``: what changed since the reference
  image), so the amplitude is that of the change, not the star's own.
- Not a known solar-system object within 20 arcsec (``NOT ZTF_NEAR_SSO``): an asteroid passing a
  star would be measured instead of it.
- Quality: ``ZTF_CLEAN`` (``alertsieve.filtering.ztf_conditions``). Not ``ZTF_POSITIVE``: a
  variable star is in the reference image at some brightness and goes below it as often as above;
  a negative detection is as real as a positive one.

Null fails every cut but ``drb`` (a null ``jdstarthist``: the age is unknown); NaN fails every cut
(``NOT isnan(jdstarthist)``: ``jd - NaN > 90`` would pass in Spark).
"""

from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.ztf_conditions import ZTF_CLEAN, ZTF_NEAR_SSO, ZTF_PS1_STAR

FILTER = AlertFilter(
    name="ztf_long_variables",
    survey="ztf",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            ZTF_PS1_STAR,
            "candidate.jd - candidate.jdstarthist > {min_age_days}"
            " AND NOT isnan(candidate.jdstarthist)",
            "exists(array(features.g, features.r, features.i), b -> b.n >= {min_detections}"
            " AND b.chi2 > {min_chi2} AND b.amplitude > {min_amplitude})",
            f"NOT {ZTF_NEAR_SSO}",
            ZTF_CLEAN,
        ]
    ),
    params={"min_age_days": 90.0, "min_detections": 5, "min_chi2": 5.0, "min_amplitude": 0.3},
)
