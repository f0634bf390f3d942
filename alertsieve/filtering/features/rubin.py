"""Rubin's light-curve features, once per alert, in Spark SQL from the alert's own history.

Filters name them as ``features.<field>`` (``features.r.rate_sigma > 5``). They are computed from
the detections an alert carries, the previous ones (``prvDiaSources``) and its own
(``diaSource``), with Spark's array functions only: no UDF, so a filter using them still runs in
Real-Time Mode, and a job whose filters name no feature computes none (Spark drops the unused
column before it runs). Fluxes are difference-image PSF fluxes (``psfFlux``, nJy): what changed
since the template, so a colour is the colour of the change.

A value that cannot be computed (too few detections, a zero or missing error, a non-positive flux
for a magnitude) is null, never NaN: Spark orders NaN above every number, so ``x > 5`` would pass it.

The module also holds the conditions the contributed filters share: ``CLEAN`` (detection
quality), ``KNOWN_MOVING_OBJECT`` and ``BAND_FEATURES`` (every band's features, for ``exists``).
Like the features they are plain Spark SQL, so the filters that use them keep Real-Time Mode.
"""

from __future__ import annotations

from alertsieve.filtering.features.sql import (
    finite,
    holds_history,
    reduced_chi2_sql,
    weighted_mean_sql,
)

BANDS = ("u", "g", "r", "i", "z", "y")

#: Days between the latest g and r detections for their colour to count as simultaneous.
COLOUR_WINDOW_DAYS = 1.0

#: (path under ``features``, unit, meaning): what docs/filters.md lists.
FEATURES: list[tuple[str, str, str]] = [
    ("n_detections", "", "detections in the history and this one, all bands"),
    ("days_since_first", "d", "this detection's MJD minus the earliest detection's"),
    (
        "g_minus_r",
        "mag",
        f"-2.5 log10(g.flux / r.flux) of the latest g and r detections, when both are positive and within {COLOUR_WINDOW_DAYS:g} d",
    ),
    ("n_negative", "", "detections fainter than the template (psfFlux < 0), all bands"),
    *[
        (f"<band>.{name}", unit, meaning)
        for name, unit, meaning in [
            ("n", "", "detections in the band (u, g, r, i, z, y)"),
            ("flux", "nJy", "psfFlux of the band's latest detection"),
            ("snr", "", "that flux over its psfFluxErr"),
            (
                "days_ago",
                "d",
                "this detection's MJD minus the band's latest detection's (0 when it is this one)",
            ),
            ("rate", "nJy/d", "flux change per day between the band's latest two detections"),
            (
                "rate_sigma",
                "",
                "that flux change over its error (sqrt of the two errors squared): its significance",
            ),
            ("days_between", "d", "days between the band's latest two detections"),
            (
                "rise",
                "mag/d",
                "magnitudes gained per day between those two (positive: brightening), when both fluxes are positive",
            ),
            (
                "chi2",
                "",
                "reduced chi-square of the band's fluxes about their inverse-variance weighted mean (2 or more detections)",
            ),
            (
                "sign_changes",
                "",
                "times the band's flux changes sign from one detection to the next: crossings of the template's brightness",
            ),
        ]
    ],
]

_DETECTION = (
    "named_struct('mjd', double({m}), 'band', {b}, 'flux', double({f}), 'err', double({e}))"
)

#: Every detection as (mjd, band, flux, err), oldest first. The history's fields are read as
#: ``prvDiaSources.<field>`` arrays (Spark prunes the decode to exactly these four) and zipped with
#: ``arrays_zip``: each array is built once. (Indexing ``prvDiaSources.band[i]`` in a lambda built
#: the whole array again for every entry: 1,000 earlier detections cost 30 times 25's.)
DETECTIONS = (
    "array_sort(concat("
    "coalesce(transform(arrays_zip(prvDiaSources.midpointMjdTai, prvDiaSources.band,"
    " prvDiaSources.psfFlux, prvDiaSources.psfFluxErr), p -> "
    + _DETECTION.format(m="p.midpointMjdTai", b="p.band", f="p.psfFlux", e="p.psfFluxErr")
    + "), array()), array("
    + _DETECTION.format(
        m="diaSource.midpointMjdTai",
        b="diaSource.band",
        f="diaSource.psfFlux",
        e="diaSource.psfFluxErr",
    )
    + ")), (a, b) -> CASE WHEN a.mjd < b.mjd THEN -1 WHEN a.mjd > b.mjd THEN 1 ELSE 0 END)"
)


def band_sql(band: str) -> str:
    """The struct of one band's features, over ``_det_<band>`` (its detections, oldest first) and
    ``_mean_<band>`` (their weighted mean flux)."""
    det, mean = f"_det_{band}", f"_mean_{band}"
    last, prev = f"try_element_at({det}, -1)", f"try_element_at({det}, -2)"
    change = f"({last}.flux - {prev}.flux)"
    days = f"({last}.mjd - {prev}.mjd)"
    fields = {
        "n": f"size({det})",
        "flux": finite(f"{last}.flux"),
        "snr": finite(f"try_divide({last}.flux, {last}.err)"),
        "days_ago": finite(f"_now - {last}.mjd"),
        "rate": finite(f"try_divide({change}, {days})"),
        "rate_sigma": finite(
            f"try_divide({change}, sqrt({last}.err * {last}.err + {prev}.err * {prev}.err))"
        ),
        "days_between": finite(days),
        "rise": finite(
            f"CASE WHEN {last}.flux > 0 AND {prev}.flux > 0"
            f" THEN try_divide(2.5 * log10({last}.flux / {prev}.flux), {days}) END"
        ),
        "chi2": reduced_chi2_sql(det, mean),
        # Each detection against the one before it (the first against itself, never a change).
        "sign_changes": f"size(filter({det}, (d, i) -> d.flux * try_element_at({det}, greatest(i, 1)).flux < 0))",
    }
    return "named_struct(" + ", ".join(f"'{k}', {v}" for k, v in fields.items()) + ")"


def features_sql() -> str:
    """The ``features`` struct, over ``_det``, ``_det_<band>``, ``_mean_<band>`` and ``_now`` (this
    detection's MJD)."""
    g, r = "try_element_at(_det_g, -1)", "try_element_at(_det_r, -1)"
    colour = (
        f"CASE WHEN {g}.flux > 0 AND {r}.flux > 0 AND abs({g}.mjd - {r}.mjd) <= {COLOUR_WINDOW_DAYS}"
        f" THEN -2.5 * log10({g}.flux / {r}.flux) END"
    )
    fields = {
        "n_detections": "size(_det)",
        "days_since_first": finite("_now - array_min(transform(_det, d -> d.mjd))"),
        "g_minus_r": finite(colour),
        "n_negative": "size(filter(_det, d -> d.flux < 0))",
        **{band: band_sql(band) for band in BANDS},
    }
    return "named_struct(" + ", ".join(f"'{k}', {v}" for k, v in fields.items()) + ")"


#: Per-detection flags that say a measurement is not to be trusted: Fink's Rubin quality block
#: (fink-filters ``rubin/blocks.py`` ``b_good_quality``: a dipole, which is a subtraction residual
#: or a moving blend; failed shape, PSF, centroid, aperture or forced-photometry measurements;
#: the forced photometry at the image edge; interpolated, cosmic-ray or bad pixels in the
#: footprint), and the satellite trails Rubin masks: a glint trail and the streak mask plane.
QUALITY_FLAGS = (
    "isDipole",
    "shape_flag",
    "psfFlux_flag",
    "centroid_flag",
    "apFlux_flag",
    "forced_PsfFlux_flag",
    "forced_PsfFlux_flag_edge",
    "pixelFlags_interpolated",
    "pixelFlags_cr",
    "pixelFlags_bad",
    "glint_trail",
    "pixelFlags_streak",
)

#: A detection with none of ``QUALITY_FLAGS`` set. A flag that is null counts as not set, on
#: purpose: ``isDipole`` and ``glint_trail`` do not exist before schema 8.0, so they are null for
#: every 7.x alert, and ``NOT flag`` would reject them all (null is no match).
CLEAN = " AND ".join(f"NOT coalesce(diaSource.{flag}, false)" for flag in QUALITY_FLAGS)

#: The six bands' feature structs as one array, for a condition on any band:
#: ``exists(BAND_FEATURES, b -> b.n >= 5 AND ...)``.
BAND_FEATURES = "array(" + ", ".join(f"features.{band}" for band in BANDS) + ")"

#: Rubin associated the detection with a known solar-system object: an ``ssSource`` record
#: (schema 8.0 on), or an ``ssObjectId`` that is not 0 (every version; 0 and null mean none).
KNOWN_MOVING_OBJECT = "(ssSource IS NOT NULL OR coalesce(diaSource.ssObjectId, 0) <> 0)"

#: What a detection needs for the features: the fields read of ``diaSource`` and of each entry
#: of ``prvDiaSources``.
READS = ("midpointMjdTai", "band", "psfFlux", "psfFluxErr")


def has_history(frame) -> bool:
    """Whether ``frame`` holds a Rubin alert's detection and history with the fields the features read."""
    return holds_history(frame, "diaSource", "prvDiaSources", READS)


def with_features(frame):
    """``frame`` (the alert's top-level fields as columns) with its ``features`` column, for
    Rubin alerts; other frames as they are. In steps, so the sorted detections, each band's share
    of them and its weighted mean are built once per alert and read by every feature (Spark does
    not merge a projection into the next when that would compute a costly expression twice)."""
    from pyspark.sql import functions as F

    if not has_history(frame):
        return frame
    bands = {f"_det_{b}": F.expr(f"filter(_det, d -> d.band = '{b}')") for b in BANDS}
    means = {f"_mean_{b}": F.expr(weighted_mean_sql(f"_det_{b}")) for b in BANDS}
    first = frame.select(
        "*",
        F.expr(DETECTIONS).alias("_det"),
        F.expr("double(diaSource.midpointMjdTai)").alias("_now"),
    )
    steps = first.select("*", *[c.alias(name) for name, c in bands.items()])
    steps = steps.select("*", *[c.alias(name) for name, c in means.items()])
    return steps.withColumn("features", F.expr(features_sql())).drop("_det", "_now", *bands, *means)


#: The view fields the features read, as ``alertsieve.filtering.references`` names paths.
READ_PATHS = [f"diaSource.{f}" for f in READS] + [f"prvDiaSources[].{f}" for f in READS]
