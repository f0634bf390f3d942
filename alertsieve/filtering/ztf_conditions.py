"""Conditions the contributed ZTF filters share, as Spark SQL text over a ZTF alert's fields
(``candidate.<field>``): detection quality, the sign of the subtraction, known solar-system
objects, a Pan-STARRS1 star under the source, and the Galactic latitude. Plain SQL, no UDF, so
the filters built from them keep Real-Time Mode, as the Rubin ones do
(``alertsieve.filtering.features.CLEAN``).

Nulls and NaN, decided once here:

- A quality field that is null (``rb``, ``nbad``, ``fwhm``, ``elong``, ``magdiff``) fails the
  cut, as AMPEL rejects an alert that lacks any field it cuts on (ampel-ztf
  ``ampel/ztf/t0/DecentFilter.py``, ``_alert_has_keys``). The exception is ``drb``: older alerts
  have none (it came with the deep-learning classifier of Duev et al. 2019, MNRAS 489, 3582), so a
  null ``drb`` is not cut on, as AMPEL does ("some older alerts dont have drb, dont want to leave
  them out entirely"); a present one is.
- NaN passes no cut. Spark orders NaN above every number, so every ``>`` / ``>=`` cut here also
  says ``NOT isnan(x)``; a ``<`` / ``<=`` cut fails on NaN by itself.
- ``ssdistnr``, ``ssmagnr``, ``distpsnr1`` and ``sgscore1`` describe the nearest known
  solar-system object or PS1 source "if exists within 30 arcsec" (the schema); ZTF writes -999
  when there is none. A null or NaN there counts as none too: no known object, no PS1 star.
"""

from __future__ import annotations

#: The real-bogus scores. ``rb >= 0.55``: Fink's ZTF quality cut (fink-filters
#: ``fink_filters/filter_quality_cuts/filter.py``, ``ztf_quality_cuts``: ``rb >= 0.55`` and
#: ``nbad == 0``), the random-forest score of Mahabal et al. 2019 (PASP 131, 038002).
#: ``drb > 0.5``, when present: the deep-learning score (Duev et al. 2019) at the threshold Fink's
#: ZTF early-SN Ia and early-kilonova filters use (``filter_early_sn_candidates``,
#: ``filter_early_kn_candidates``: ``drb > 0.5``): more likely real than bogus.
ZTF_REAL = (
    "candidate.rb >= 0.55 AND NOT isnan(candidate.rb)"
    " AND (candidate.drb IS NULL OR (candidate.drb > 0.5 AND NOT isnan(candidate.drb)))"
)

#: Image-quality cuts, one per field, so a filter may leave one out (trailed asteroids are
#: elongated). Thresholds are AMPEL's SimpleDecentFilter defaults (Ampel-HU-astro
#: ``ampel/contrib/hu/t0/SimpleDecentFilter.py``: ``max_fwhm = 5``, ``max_elong = 1.4``,
#: ``max_magdiff = 0.4``, rejecting ``fwhm > 5``, ``elong > 1.4``, ``abs(magdiff) > 0.4``); ``nbad``
#: is Fink's (``ztf_quality_cuts``: ``nbad == 0``).
ZTF_QUALITY_CUTS: dict[str, str] = {
    # No prior-tagged bad pixel in the 5 x 5 pixel stamp around the source.
    "nbad": "candidate.nbad = 0",
    # FWHM of the source in the science image at most 5 pixels (5.05 arcsec): a wider one is bad
    # seeing, a blend or a residual of an extended source, not a clean point source.
    "fwhm": "candidate.fwhm <= 5.0",
    # aimage / bimage at most 1.4: streaks, cosmic-ray tracks and dipoles are elongated.
    "elong": "candidate.elong <= 1.4",
    # Aperture minus PSF magnitude within 0.4 mag: a point source measures the same both ways; a
    # subtraction residual or an extended blob does not.
    "magdiff": "abs(candidate.magdiff) <= 0.4",
}

#: A clean, real detection: ``ZTF_REAL`` and every ``ZTF_QUALITY_CUTS``.
ZTF_CLEAN = " AND ".join([ZTF_REAL, *ZTF_QUALITY_CUTS.values()])

#: ``ZTF_CLEAN`` without the elongation cut, for moving objects: a fast asteroid trails.
ZTF_CLEAN_UNTRAILED = " AND ".join(
    [ZTF_REAL, *(sql for name, sql in ZTF_QUALITY_CUTS.items() if name != "elong")]
)

#: Brighter than the reference image: ``isdiffpos`` 't' or '1' (the schema: "candidate is from
#: positive (sci minus ref) subtraction"). A new transient or a moving object only adds light; a
#: negative subtraction is a reference source that faded. Null fails.
ZTF_POSITIVE = "candidate.isdiffpos IN ('t', '1')"


def known_sso_within(arcsec: float) -> str:
    """A known solar-system object within ``arcsec`` of the candidate: ``0 <= ssdistnr < arcsec``
    (ZTF matches the MPC's known objects within 30 arcsec, else -999). Null or NaN: none."""
    return f"coalesce(candidate.ssdistnr >= 0 AND candidate.ssdistnr < {arcsec:g}, false)"


#: Radius (arcsec) for a detection to *be* a known solar-system object: Fink's ``roid_catcher``
#: (fink-science ``fink_science/asteroids/processor.py``: "alerts should be at max 5'' away from
#: MPC object", ``0 <= ssdistnr < 5``, its flag 3).
SSO_MATCH_ARCSEC = 5.0
#: Radius (arcsec) within which a known solar-system object vetoes a transient: AMPEL's
#: ``min_sso_dist = 20`` (SimpleDecentFilter, and the infant-SN tuned RedshiftCatalogFilter),
#: rejecting ``0 <= ssdistnr < 20``. Wider than the match: a veto should not let an asteroid with
#: a poorly known orbit through.
SSO_VETO_ARCSEC = 20.0

#: The detection is a known solar-system object (within ``SSO_MATCH_ARCSEC``).
ZTF_KNOWN_SSO = known_sso_within(SSO_MATCH_ARCSEC)
#: A known solar-system object near the detection (within ``SSO_VETO_ARCSEC``); transient filters
#: ask ``NOT ZTF_NEAR_SSO``.
ZTF_NEAR_SSO = known_sso_within(SSO_VETO_ARCSEC)

#: PS1 star/galaxy score above which the nearest PS1 source is a star: 0.76, the threshold of
#: Tachibana & Miller 2018 (PASP 130, 128001) as Fink's ``roid_catcher`` quotes it, and the one
#: ZTF's Bright Transient Survey filter uses (dperley/ztf-bts-filters ``rcf2020.py``:
#: ``sgscore1 > 0.76 and distpsnr1 < 2`` is a "pointunderneath").
PS1_STAR_SGSCORE = 0.76
#: Within this distance (arcsec) the PS1 star is under the source: BTS's 2 arcsec (AMPEL's
#: ``ps1_sgveto_rad = 2`` too), twice ZTF's ~1 arcsec pixel.
PS1_STAR_ARCSEC = 2.0

#: A Pan-STARRS1 star under the source: ``sgscore1 > 0.76`` within 2 arcsec. For a transient
#: filter (``NOT ZTF_PS1_STAR``) it means a variable star or a CV rather than a supernova; for a
#: variable-star filter it is the star. Null, NaN or -999 (no PS1 source): no star.
ZTF_PS1_STAR = (
    f"coalesce(candidate.sgscore1 > {PS1_STAR_SGSCORE} AND NOT isnan(candidate.sgscore1)"
    f" AND candidate.distpsnr1 >= 0 AND candidate.distpsnr1 < {PS1_STAR_ARCSEC:g}, false)"
)

_RA, _DEC = "radians(candidate.ra)", "radians(candidate.dec)"
#: sin(Galactic latitude) of the candidate: the third row of the ICRS -> Galactic rotation
#: (Hipparcos, ESA 1997, vol. 1, sec. 1.5.3) applied to the unit vector of (ra, dec), as the
#: Rubin ``extragalactic`` filter computes it. Use as ``abs(ZTF_SIN_B) > sin(radians(b_min))``
#: with ``ZTF_FINITE_POSITION`` (NaN coordinates give NaN, which ``>`` would pass).
ZTF_SIN_B = (
    f"(-0.8676661490190047D * cos({_DEC}) * cos({_RA})"
    f" - 0.1980763734312015D * cos({_DEC}) * sin({_RA})"
    f" + 0.4559837761750669D * sin({_DEC}))"
)
#: The candidate's coordinates are numbers.
ZTF_FINITE_POSITION = "NOT isnan(candidate.ra) AND NOT isnan(candidate.dec)"
#: Farther than the filter's parameter ``min_abs_b`` (degrees) from the Galactic plane.
ZTF_OFF_THE_PLANE = f"abs({ZTF_SIN_B}) > sin(radians({{min_abs_b}})) AND {ZTF_FINITE_POSITION}"

#: The per-band feature struct of this candidate's band (``fid`` 1, 2, 3 = g, r, i): where a
#: filter compares this detection with the band's previous one, never across bands (a colour
#: would look like a rise). Null for another ``fid`` (a CASE, not an array index: index 0 is an
#: error in Spark, not a null).
ZTF_THIS_BAND = (
    "(CASE candidate.fid WHEN 1 THEN features.g WHEN 2 THEN features.r WHEN 3 THEN features.i END)"
)
