"""ZTF's light-curve features, once per alert, in Spark SQL from the alert's own history.

Filters of a ZTF job name them as ``features.<field>`` (``features.r.rise > 0.3``), as Rubin
filters do, but in ZTF's own units: magnitudes as ZTF gives them (``magpsf``, ``sigmapsf``), times
in Julian days (``jd``), bands by ``fid`` (1, 2, 3 = g, r, i).

What is a detection: the alert's ``candidate`` and every entry of ``prv_candidates`` that has a
``candid``. The other entries are upper limits (a non-detection: only ``diffmaglim``, the
faintest magnitude that image could have seen), kept apart, since a limit is no brightness.

Why per-band features use only positive detections (``isdiffpos`` 't' or '1'): ``magpsf`` is the
magnitude of the *difference* flux. On a negative subtraction ('f' or '0': fainter than the
reference image) it says how much fainter, not how bright, so a rise or an amplitude that mixed
both would compare unlike things. Negative detections are counted (``n_negative``).

Like Rubin's, the features use Spark's array functions only (Real-Time Mode keeps working), are
computed only when a filter names them, and a value that cannot be computed is null, never NaN.
"""

from __future__ import annotations

from alertsieve.filtering.features.sql import (
    finite,
    holds_history,
    reduced_chi2_sql,
    weighted_mean_sql,
)

#: ZTF's bands by ``fid``.
BANDS = {"g": 1, "r": 2, "i": 3}

#: Days between the latest g and r detections for their colour to count as simultaneous.
COLOUR_WINDOW_DAYS = 1.0

#: (path under ``features``, unit, meaning): what docs/filters.md lists.
FEATURES: list[tuple[str, str, str]] = [
    (
        "n_detections",
        "",
        "detections in the history (entries with a candid) and this one, all bands",
    ),
    ("n_upper_limits", "", "upper limits in the history (entries without a candid)"),
    ("days_since_first", "d", "this candidate's jd minus the earliest detection's"),
    (
        "n_negative",
        "",
        "detections fainter than the reference image (isdiffpos 'f' or '0'), all bands",
    ),
    (
        "g_minus_r",
        "mag",
        f"magpsf of the latest positive g detection minus the latest positive r one, when within {COLOUR_WINDOW_DAYS:g} d",
    ),
    (
        "prediscovery_days",
        "d",
        "this candidate's jd minus that of the latest upper limit before the first detection",
    ),
    (
        "prediscovery_limit",
        "mag",
        "that upper limit's diffmaglim: how faint the source was not yet seen",
    ),
    *[
        (f"<band>.{name}", unit, meaning)
        for name, unit, meaning in [
            ("n", "", "positive detections in the band (g, r, i)"),
            ("mag", "mag", "magpsf of the band's latest positive detection"),
            ("mag_err", "mag", "its sigmapsf"),
            ("days_ago", "d", "this candidate's jd minus that detection's (0 when it is this one)"),
            ("days_between", "d", "days between the band's latest two positive detections"),
            (
                "rise",
                "mag/d",
                "magnitudes gained per day between those two (positive: brightening)",
            ),
            (
                "rise_sigma",
                "",
                "that change over its error (sqrt of the two sigmapsf squared): its significance",
            ),
            (
                "chi2",
                "",
                "reduced chi-square of the band's magnitudes about their inverse-variance weighted mean (2 or more)",
            ),
            ("amplitude", "mag", "faintest minus brightest magnitude in the band (2 or more)"),
        ]
    ],
]

_ENTRY = (
    "named_struct('jd', double({p}jd{i}), 'fid', int({p}fid{i}), 'mag', double({p}magpsf{i}),"
    " 'err', double({p}sigmapsf{i}), 'negative', {p}isdiffpos{i} IN ('f', '0'),"
    " 'positive', {p}isdiffpos{i} IN ('t', '1'), 'detected', {p}candid{i} IS NOT NULL,"
    " 'limit', double({p}diffmaglim{i}))"
)
#: Oldest first, ties kept in the order given: a sort stable on ``jd`` alone (real alerts hold
#: entries of equal ``jd``, and the candidate, appended last, must stay the latest).
_BY_JD = "(a, b) -> CASE WHEN a.jd < b.jd THEN -1 WHEN a.jd > b.jd THEN 1 ELSE 0 END"

#: The history's fields, read as ``prv_candidates.<field>`` arrays (Spark prunes the decode to
#: exactly these) and zipped with ``arrays_zip``, each array built once (see the Rubin features).
_HISTORY_FIELDS = ("jd", "fid", "magpsf", "sigmapsf", "isdiffpos", "candid", "diffmaglim")

#: Every history entry as (jd, fid, mag, err, negative, positive, detected, limit), oldest first.
HISTORY = (
    "array_sort(coalesce(transform(arrays_zip("
    + ", ".join(f"prv_candidates.{f}" for f in _HISTORY_FIELDS)
    + "), h -> "
    + _ENTRY.format(p="h.", i="")
    + f"), array()), {_BY_JD})"
)

#: Every detection, oldest first: the history's detections and this candidate.
DETECTIONS = f"array_sort(concat(filter(_history, h -> h.detected), array({_ENTRY.format(p='candidate.', i='')})), {_BY_JD})"


def band_sql(band: str) -> str:
    """The struct of one band's features, over ``_pos_<band>`` (its positive detections, oldest
    first) and ``_mean_<band>`` (their weighted mean magnitude)."""
    det, mean = f"_pos_{band}", f"_mean_{band}"
    last, prev = f"try_element_at({det}, -1)", f"try_element_at({det}, -2)"
    gained = f"({prev}.mag - {last}.mag)"
    days = f"({last}.jd - {prev}.jd)"
    fields = {
        "n": f"size({det})",
        "mag": finite(f"{last}.mag"),
        "mag_err": finite(f"{last}.err"),
        "days_ago": finite(f"_now - {last}.jd"),
        "days_between": finite(days),
        "rise": finite(f"try_divide({gained}, {days})"),
        "rise_sigma": finite(
            f"try_divide({gained}, sqrt({last}.err * {last}.err + {prev}.err * {prev}.err))"
        ),
        "chi2": reduced_chi2_sql(det, mean, "mag"),
        "amplitude": finite(
            f"CASE WHEN size({det}) >= 2 AND NOT exists({det}, d -> d.mag IS NULL)"  # array_max skips nulls
            f" THEN array_max(transform({det}, d -> d.mag)) - array_min(transform({det}, d -> d.mag)) END"
        ),
    }
    return "named_struct(" + ", ".join(f"'{k}', {v}" for k, v in fields.items()) + ")"


def features_sql() -> str:
    """The ``features`` struct, over ``_history``, ``_det``, ``_pos_<band>``, ``_mean_<band>``,
    ``_prediscovery`` (the latest upper limit before the first detection) and ``_now``."""
    g, r = "try_element_at(_pos_g, -1)", "try_element_at(_pos_r, -1)"
    colour = f"CASE WHEN abs({g}.jd - {r}.jd) <= {COLOUR_WINDOW_DAYS} THEN {g}.mag - {r}.mag END"
    fields = {
        "n_detections": "size(_det)",
        "n_upper_limits": "size(filter(_history, h -> NOT h.detected))",
        "days_since_first": finite("_now - _det[0].jd"),  # the earliest: _det is sorted
        "n_negative": "size(filter(_det, d -> d.negative))",
        "g_minus_r": finite(colour),
        "prediscovery_days": finite("_now - _prediscovery.jd"),
        "prediscovery_limit": finite("_prediscovery.limit"),
        **{band: band_sql(band) for band in BANDS},
    }
    return "named_struct(" + ", ".join(f"'{k}', {v}" for k, v in fields.items()) + ")"


#: What an entry needs for the features: the fields read of ``candidate`` and of each entry of
#: ``prv_candidates``.
READS = ("jd", "fid", "magpsf", "sigmapsf", "isdiffpos", "candid", "diffmaglim")


def has_history(frame) -> bool:
    """Whether ``frame`` holds a ZTF alert's detection and history with the fields the features read."""
    return holds_history(frame, "candidate", "prv_candidates", READS)


def with_features(frame):
    """``frame`` (the alert's top-level fields as columns) with its ``features`` column. In steps,
    so the sorted entries, each band's detections and its weighted mean are built once per alert
    and read by every feature."""
    from pyspark.sql import functions as F

    bands = {
        f"_pos_{b}": F.expr(f"filter(_det, d -> d.fid = {fid} AND d.positive)")
        for b, fid in BANDS.items()
    }
    means = {f"_mean_{b}": F.expr(weighted_mean_sql(f"_pos_{b}", "mag")) for b in BANDS}
    # _det[0] is the first detection (sorted); an array_min here was computed again for every entry
    prediscovery = "try_element_at(filter(_history, h -> NOT h.detected AND h.jd < _det[0].jd), -1)"
    steps = frame.select(
        "*", F.expr(HISTORY).alias("_history"), F.expr("double(candidate.jd)").alias("_now")
    )
    steps = steps.select("*", F.expr(DETECTIONS).alias("_det"))
    steps = steps.select(
        "*", F.expr(prediscovery).alias("_prediscovery"), *[c.alias(n) for n, c in bands.items()]
    )
    steps = steps.select("*", *[c.alias(name) for name, c in means.items()])
    dropped = ("_history", "_det", "_now", "_prediscovery", *bands, *means)
    return steps.withColumn("features", F.expr(features_sql())).drop(*dropped)


#: The view fields the features read, as ``alertsieve.filtering.references`` names paths.
READ_PATHS = [f"candidate.{f}" for f in READS] + [f"prv_candidates[].{f}" for f in READS]
