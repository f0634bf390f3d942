"""Known solar-system objects in ZTF: detections that ZTF's pipeline matched to a known asteroid
or comet of the Minor Planet Center (``ssdistnr``, ``ssmagnr``, ``ssnamenr``), clean, real and
as bright as the object should be, for asteroid brokers (photometry for phase curves, colours and
rotation; astrometry). Fink's ``roid`` flag 3, in SQL.

Cuts and reasons:

- A known object within 5 arcsec: ``0 <= ssdistnr < 5`` (``ZTF_KNOWN_SSO``; -999 is none), as
  Fink's ``roid_catcher`` flags ZTF's own matches (fink-science
  ``fink_science/asteroids/processor.py``: "alerts should be at max 5'' away from MPC object").
- Closer to that object than to any PS1 source: ``|distpsnr1| > ssdistnr`` (Fink:
  "Distance to Panstarrs object should be bigger than distance to MPC object"); otherwise the
  detection may be a static source the asteroid happens to pass.
- Not seen many times here: ``ndethist <= 5`` in ZTF's whole record at this place and at most 5
  detections in the alert (``features.n_detections``), Fink's ``f_ndethist`` and ``f_nalerthist``:
  an asteroid moves on, so a place detected again and again is a fixed source.
- As bright as predicted: ``|magpsf - ssmagnr| < 1`` mag. ``ssmagnr`` is the object's predicted
  magnitude, "usually V-band from MPC archive" (the schema); an asteroid's solar-like colours put
  ZTF's g and r a few tenths of a magnitude from V, and predicted magnitudes are good to a few
  tenths, so a true match lands well within 1 mag, while a coincidence with a known object much
  fainter (or brighter) than the detection does not. This cut is ours; no broker we read uses it.
- Quality: ``ZTF_CLEAN_UNTRAILED`` (``alertsieve.filtering.ztf_conditions``: ``ZTF_CLEAN`` without
  the elongation cut, since a fast asteroid trails and fast movers are among the most wanted) and
  ``ZTF_POSITIVE``: an asteroid is not in the reference image, so it only adds light.

Null fails every cut but ``drb``; NaN fails every cut (``ssdistnr`` NaN is no known object).
"""

from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.ztf_conditions import ZTF_CLEAN_UNTRAILED, ZTF_KNOWN_SSO, ZTF_POSITIVE

FILTER = AlertFilter(
    name="ztf_known_asteroids",
    survey="ztf",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            ZTF_KNOWN_SSO,
            "abs(candidate.distpsnr1) > candidate.ssdistnr AND NOT isnan(candidate.distpsnr1)",
            "candidate.ndethist <= {max_ndethist}",
            "features.n_detections <= {max_detections}",
            "abs(candidate.magpsf - candidate.ssmagnr) < {max_mag_offset}",
            ZTF_CLEAN_UNTRAILED,
            ZTF_POSITIVE,
        ]
    ),
    params={"max_ndethist": 5, "max_detections": 5, "max_mag_offset": 1.0},
)
