"""Young extragalactic transient candidates: new light away from the Galactic plane, seen twice
at a fixed position, never fainter than the template, first seen within a supernova's rise time.
Without a host-galaxy match (a later catalogue cross-match) this is the sky and light-curve half
of the usual selection: it removes what the alert alone can show to be Galactic, moving or old.

Cuts and reasons:

- ``|b| > 20`` deg: away from the Galactic plane, where stars and their variability dominate
  (Fink's ``b_outside_galactic_plane``). Computed in SQL with the ICRS -> Galactic rotation
  (Hipparcos, ESA 1997, vol. 1, sec. 1.5.3): sin b is the third row of the matrix applied to the
  unit vector of (ra, dec).
- Two detections or more, the first at least 30 minutes ago: an asteroid moves out of its
  association radius in minutes (a main-belt asteroid ~0.6"/min), so a source seen again at the
  same place after half an hour is fixed on the sky; Rubin's own visit pairs are taken ~30 min
  apart to tell movers (Ivezic et al. 2019, ApJ 873, 111). Not a known solar-system object either.
- Never below the template (``features.n_negative = 0``) and now brighter than it at 5 sigma
  (``psfFlux > 5 psfFluxErr``, Rubin's detection threshold on the flux itself): a supernova adds
  light to a template taken before it; a variable star in the template also goes below it.
- Young: first detected less than 19 days ago, a type Ia supernova's rise time (Firth et al.
  2015, MNRAS 446, 3895): caught before peak, when classification pays most; this also drops
  long-lived variables (AGN) whatever their sign.
- Quality: none of Fink's Rubin quality flags, glint trails or satellite streaks
  (``alertsieve.filtering.features.CLEAN``); ``reliability > 0.5`` (more likely real than not: the
  second detection confirms the source).

NaN never passes (``NOT isnan``; features are null, never NaN).
"""

from alertsieve.filtering.features import CLEAN, KNOWN_MOVING_OBJECT
from alertsieve.filtering.model import AlertFilter

_RA, _DEC = "radians(diaSource.ra)", "radians(diaSource.dec)"
#: sin(galactic latitude) of the detection.
SIN_B = (
    f"(-0.8676661490190047D * cos({_DEC}) * cos({_RA})"
    f" - 0.1980763734312015D * cos({_DEC}) * sin({_RA})"
    f" + 0.4559837761750669D * sin({_DEC}))"
)

FILTER = AlertFilter(
    name="extragalactic",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=" AND ".join(
        [
            f"abs({SIN_B}) > sin(radians({{min_abs_b}})) AND NOT isnan(diaSource.ra) AND NOT isnan(diaSource.dec)",
            "features.n_detections >= 2 AND features.days_since_first * 1440 > {min_minutes_between}",
            f"NOT {KNOWN_MOVING_OBJECT}",
            "features.n_negative = 0",
            "diaSource.psfFlux > {min_snr} * diaSource.psfFluxErr AND NOT isnan(diaSource.psfFlux)",
            "features.days_since_first < {max_age_days}",
            CLEAN,
            "diaSource.reliability > {min_reliability} AND NOT isnan(diaSource.reliability)",
        ]
    ),
    params={
        "min_abs_b": 20.0,
        "min_minutes_between": 30.0,
        "min_snr": 5.0,
        "max_age_days": 19.0,
        "min_reliability": 0.5,
    },
)
