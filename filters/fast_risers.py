"""Fast risers: young sources brightening by more than 0.3 mag a day in the band of this
detection. Kilonovae, young supernovae, fast blue optical transients and GRB afterglows rise this
fast; a supernova's fireball (flux growing as the square of its age) gains 2.17 / age mag a day,
so only in its first week.

Cuts and reasons:

- The rise: between this detection and the previous one in the same band (``features.<band>``
  whose latest detection is this one, ``days_ago = 0``), never a line through several bands,
  where a colour would look like a rise:
  - ``rise > 0.3`` mag/d, Fink's threshold for fast transients and kilonovae (fink-filters
    ``fast_transient_gvom``; ZTFReST asks 1 mag/d, Andreoni et al. 2021, ApJ 918, 63);
  - ``days_between > 0.5`` d: two points over more than half a day, as Fink's rate-based
    kilonova filter asks, so the rate is not a few minutes' noise;
  - ``rate_sigma > 3``: the flux change is significant at 3 sigma (Fink: rate with SNR > 3).
  Only detections count, not upper limits, as in both.
- Young: first detected less than 5 days ago (``features.days_since_first``), Fink's age cut for
  fast transients: a variable star brightening fast has a long history.
- Never brighter before: no earlier forced-photometry measurement in this band (Rubin measures
  the object's position on every visit, detected or not) above this flux by more than 3 sigma.
  A transient on its first rise has never been brighter; a variable star coming back has.
- Quality: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``); ``reliability > 0.5`` (more likely real than not:
  the history confirms the source); not a known solar-system object.

Features are null, never NaN; NaN never passes the other cuts. Matches keep their cutouts in the
archive (``cutouts=True``): a fast riser is worth looking at.
"""

from alertsieve.filtering.features import BAND_FEATURES, CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.model import AlertFilter

#: Forced photometry in this band brighter than this detection by more than {min_sigma} sigma.
_BRIGHTER_BEFORE = (
    "filter(coalesce(prvDiaForcedSources.psfFlux, array()), (f, i) ->"
    " prvDiaForcedSources.band[i] = diaSource.band AND NOT isnan(f)"
    " AND double(f) - double(diaSource.psfFlux) > {min_sigma} * sqrt("
    "double(prvDiaForcedSources.psfFluxErr[i]) * double(prvDiaForcedSources.psfFluxErr[i])"
    " + double(diaSource.psfFluxErr) * double(diaSource.psfFluxErr)))"
)

FILTER = AlertFilter(
    name="fast_risers",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            f"exists({BAND_FEATURES}, b -> b.days_ago = 0 AND b.rise > {{min_rise}}"
            " AND b.days_between > {min_days_between} AND b.rate_sigma > {min_sigma})",
            "features.days_since_first < {max_age_days}",
            f"size({_BRIGHTER_BEFORE}) = 0",
            CLEAN,
            "diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)",
            f"NOT {KNOWN_MOVING_OBJECT}",
        ]
    ),
    params={
        "min_rise": 0.3,
        "min_days_between": 0.5,
        "min_sigma": 3.0,
        "max_age_days": 5.0,
        "min_reliability": 0.5,
    },
    cutouts=True,  # a fast riser is worth looking at: keep its images in the archive
)
