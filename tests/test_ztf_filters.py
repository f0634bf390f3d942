"""The four contributed ZTF filters (filters/ztf_*.py) at their cuts: edited copies of a real ZTF
3.3 alert (tests/crafted.py ``ztf_made_to_pass``, one base per filter) just inside and just
outside every cut, with NaN, null, -999 sentinels, each sign and band, and edited histories.
Each case is decided by the filter's independent plain-Python oracle (tests/ztf_oracles.py, numpy
features from tests/oracles.py) over the record as Avro gives it back (floats rounded to 32 bits),
and by the filter's SQL as the job evaluates it (one-alert containers decoded by Spark into the
filter view with its features). Then the filters against their oracles over the 124 real ZTF
alerts with histories and the edited copies."""

from __future__ import annotations

import copy
import io
import json
import math

import fastavro
import pytest
from crafted import (
    ZTF_EDITED_FOR,
    changed,
    ztf_histories,
    ztf_history_files,
    ztf_made_to_pass,
    ztf_messages,
)
from pyspark.sql import functions as F
from ztf_oracles import ztf_oracles

from alertsieve.alerts.ztf import header, one_alert_container
from alertsieve.filtering.discovery import discover
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.scores.choose import models_read
from alertsieve.view.decoder import view_paths
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import ztf_decoder

Case = tuple[str, dict, bool]

#: The contributed ZTF filters of alert fields alone (those reading a model's score are
#: test_models.py's: their oracle runs the model's own package).
FILTERS = {
    f.name: f for f in discover(entry_points=False) if f.survey == "ztf" and not models_read(f)
}
ORACLES = {name: test for name, test in ztf_oracles().items() if name in FILTERS}
NAN = float("nan")

#: The real files' writer schema, as their headers hold it and parsed.
SCHEMA_JSON: bytes = header(ztf_history_files()[0].read_bytes())["avro.schema"]
WRITER = fastavro.parse_schema(json.loads(SCHEMA_JSON))
#: The real alert the bases are made of: a g-band candidate with detections and upper limits.
REAL = ztf_histories()[0]
PRV_FIELDS = list(REAL["prv_candidates"][0])
#: One of its upper limits: the template of the limits made here.
LIMIT = next(p for p in REAL["prv_candidates"] if p["candid"] is None)
#: {filter: a copy of REAL made to pass it}. STEADY: first seen 20 d ago, 0.1 mag/d brighter
#: every 3 d over 12 d (19.2 to 18.0 +- 0.08). EARLY: first seen 5 d ago, limit 20.5 mag at 7 d,
#: detections at 5 d (18.8 +- 0.08) and 2 d (18.4 +- 0.06), now 18.0 +- 0.05. FAST: detections at
#: 1.5 d (19.5 +- 0.1) and 1 d (19.0 +- 0.08), now 18.0 +- 0.05. VARIABLE: a PS1 star, five
#: detections 5-25 d ago, 17.0-18.0 mag. ASTEROID: 1.5 arcsec from a known object of 18.3 mag.
BASES = dict(zip(ZTF_EDITED_FOR, ztf_made_to_pass(REAL), strict=True))
EARLY, FAST, VARIABLE, ASTEROID, STEADY = BASES.values()

#: (ra, dec) at Galactic latitude b (l = 100 deg), by astropy: what ZTF_SIN_B meets at the cuts.
AT_LATITUDE = {
    7.01: (321.411752, 60.362721),
    6.99: (321.440101, 60.348459),
    -7.01: (336.505523, 49.277174),
    -6.99: (336.489223, 49.294114),
    10.01: (316.863928, 62.428369),
    9.99: (316.896287, 62.415118),
    -10.01: (338.830714, 46.711851),
    -9.99: (338.815957, 46.729104),
}
#: (sgscore1, distpsnr1, a PS1 star under the source).
PS1 = [
    (0.77, 1.98, True),
    (0.75, 1.98, False),
    (0.77, 2.02, False),
    (0.77, 0.01, True),
    (0.77, -0.01, False),
    (0.77, -999.0, False),
    (-999.0, 1.98, False),
    (None, 1.98, False),
    (NAN, 1.98, False),
    (0.77, None, False),
    (0.77, NAN, False),
]


def detection(
    base: dict,
    days: float,
    mag: float,
    err: float | None = 0.05,
    fid: int | None = None,
    sign: str = "t",
) -> dict:
    """A detection ``days`` before ``base``'s candidate, its fields copied from the candidate."""
    c = base["candidate"]
    entry = {name: copy.deepcopy(c.get(name)) for name in PRV_FIELDS}
    return {
        **entry,
        "jd": c["jd"] - days,
        "fid": c["fid"] if fid is None else fid,
        "magpsf": mag,
        "sigmapsf": err,
        "isdiffpos": sign,
        "candid": c["candid"] - 1 - round(days * 1e4),
    }


def limit(base: dict, days: float, depth: float | None) -> dict:
    """An upper limit (no candid) ``days`` before ``base``'s candidate, ``depth`` mag deep."""
    return {**copy.deepcopy(LIMIT), "jd": base["candidate"]["jd"] - days, "diffmaglim": depth}


def with_history(
    base: dict, detections: list[dict] | None = None, limits: list[dict] | None = None
) -> dict:
    """``base`` with its history's detections or upper limits replaced (None: kept)."""
    old = base["prv_candidates"] or []
    if detections is None:
        detections = [p for p in old if p["candid"] is not None]
    if limits is None:
        limits = [p for p in old if p["candid"] is None]
    return changed(base, prv_candidates=sorted([*detections, *limits], key=lambda p: p["jd"]))


def light_curve(base: dict, *points: tuple) -> dict:
    """``base`` with its history's detections replaced by ``detection(base, *point)`` each."""
    return with_history(base, [detection(base, *p) for p in points])


def in_band(base: dict, fid: int) -> dict:
    """``base`` with its candidate and every detection of its history in band ``fid``."""
    detections = [{**p, "fid": fid} for p in base["prv_candidates"] if p["candid"] is not None]
    return with_history(changed(base, **{"candidate.fid": fid}), detections)


def at(base: dict, path: str, *outcomes: tuple) -> list[Case]:
    """A case per (value, expected): ``base`` with ``path`` set to the value."""
    name = path.rsplit(".", 1)[-1]
    return [(f"{name} {value}", changed(base, **{path: value}), want) for value, want in outcomes]


def clean_cases(base: dict, min_drb: float = 0.5, trailed_ok: bool = False) -> list[Case]:
    """ZTF_CLEAN (or, ``trailed_ok``, ZTF_CLEAN_UNTRAILED) at each cut; a null drb passes."""
    c = "candidate."
    return [
        *at(base, c + "rb", (0.555, True), (0.545, False), (None, False), (NAN, False)),
        *at(
            base,
            c + "drb",
            (round(min_drb * 1.01, 4), True),
            (round(min_drb * 0.99, 4), False),
            (None, True),
            (NAN, False),
        ),
        *at(base, c + "nbad", (1, False), (None, False)),
        *at(base, c + "fwhm", (4.95, True), (5.05, False), (None, False), (NAN, False)),
        *at(
            base,
            c + "elong",
            (1.386, True),
            (1.414, trailed_ok),
            (None, trailed_ok),
            (NAN, trailed_ok),
        ),
        *at(
            base,
            c + "magdiff",
            (0.396, True),
            (-0.396, True),
            (0.404, False),
            (-0.404, False),
            (None, False),
            (NAN, False),
        ),
    ]


def sign_cases(base: dict, positive_only: bool = True) -> list[Case]:
    """isdiffpos '1' (positive), 'f' and '0' (negative); the bases are 't'."""
    return at(
        base, "candidate.isdiffpos", ("1", True), ("f", not positive_only), ("0", not positive_only)
    )


def band_cases(base: dict) -> list[Case]:
    """The candidate and its history in g, r, i, and in a fid that is no ZTF band."""
    return [(f"fid {fid}", in_band(base, fid), fid in (1, 2, 3)) for fid in (1, 2, 3, 4)]


def sso_veto_cases(base: dict) -> list[Case]:
    """``NOT ZTF_NEAR_SSO``: a known object at 0 <= ssdistnr < 20 arcsec vetoes."""
    return at(
        base,
        "candidate.ssdistnr",
        (19.8, False),
        (20.2, True),
        (0.0, False),
        (-0.01, True),
        (-999.0, True),
        (None, True),
        (NAN, True),
    )


def ps1_cases(base: dict, star: bool) -> list[Case]:
    """``ZTF_PS1_STAR`` (``star``) or its negation at each cut, sentinel, null and NaN."""
    return [
        (
            f"sgscore1 {s}, distpsnr1 {d}",
            changed(base, **{"candidate.sgscore1": s, "candidate.distpsnr1": d}),
            is_star == star,
        )
        for s, d, is_star in PS1
    ]


def latitude_cases(base: dict, min_abs_b: float) -> list[Case]:
    """|b| just either side of ``min_abs_b`` on both sides of the plane; ra or dec NaN."""
    bs = [round(sign * (min_abs_b + d), 2) for sign in (1, -1) for d in (0.01, -0.01)]
    return [
        *[
            (
                f"b = {b:+}",
                changed(
                    base,
                    **dict(zip(("candidate.ra", "candidate.dec"), AT_LATITUDE[b], strict=True)),
                ),
                abs(b) > min_abs_b,
            )
            for b in bs
        ],
        *at(base, "candidate.ra", (NAN, False)),
        *at(base, "candidate.dec", (NAN, False)),
    ]


def age_cases(base: dict, days: float, young: bool) -> list[Case]:
    """``jd - jdstarthist`` 0.01 d either side of ``days`` (``young``: must be below it); null
    and NaN fail."""
    jd = base["candidate"]["jd"]
    ages = [(days - 0.01, young), (days + 0.01, not young)]
    return [
        *[
            (
                f"first seen by ZTF {a:g} d ago",
                changed(base, **{"candidate.jdstarthist": jd - a}),
                want,
            )
            for a, want in ages
        ],
        *at(base, "candidate.jdstarthist", (None, False), (NAN, False)),
    ]


def sigma_apart(base: dict, first: tuple, prev_days: float, sigma: float) -> dict:
    """``base`` (now 18.0 +- 0.05) detected at ``first`` (days, mag, err) and ``prev_days`` ago,
    fainter then by ``sigma`` times the error of the difference (both errors 0.05)."""
    return light_curve(base, first, (prev_days, 18.0 + sigma * math.hypot(0.05, 0.05)))


def swinging(mags: list[float], err: float) -> dict:
    """VARIABLE now at ``mags[-1]`` and before at the others, 5 d apart, every error ``err``."""
    *before, now = mags
    points = [(5.0 * (len(before) - k), m, err) for k, m in enumerate(before)]
    return changed(
        light_curve(VARIABLE, *points), **{"candidate.magpsf": now, "candidate.sigmapsf": err}
    )


#: Six magnitudes alternating by 0.5 mag: reduced chi2 = 0.075 / err**2.
SIX_SWINGS = [17.0, 17.5] * 3
#: FAST's rise over 1 d with both errors e = 1 / (sigma sqrt 2): 1 mag at ``sigma``.
FAST_AT = {s: 1 / (s * math.sqrt(2)) for s in (3.03, 2.97)}


def steady(*points: tuple) -> dict:
    """STEADY (now 18.0 +- 0.05) with earlier detections ``(days, mag[, err, fid, sign])``."""
    return light_curve(STEADY, *points)


#: STEADY's line at a rise of ``r`` mag/d, 3 d apart, errors 0.08.
def rising_at(rate: float, err: float = 0.08) -> dict:
    return steady(*[(d, 18.0 + rate * d, err) for d in (3.0, 6.0, 9.0, 12.0)])


CASES: dict[str, list[Case]] = {
    "ztf_steady_risers": [
        ("made to pass", STEADY, True),
        ("0.06 mag/d", rising_at(0.06), True),
        ("0.04 mag/d", rising_at(0.04), False),
        ("fading", rising_at(-0.1), False),
        # 0.1 mag/d over 12 d, the earlier points' errors e (this one's 0.05), by numpy:
        ("0.1 mag/d, earlier errors 0.30: 5.24 sigma", rising_at(0.1, 0.30), True),
        ("0.1 mag/d, earlier errors 0.32: 4.94 sigma", rising_at(0.1, 0.32), False),
        (
            "3 earlier points: 4 in all",
            steady((3, 18.3, 0.08), (6, 18.6, 0.08), (9, 18.9, 0.08)),
            True,
        ),
        ("2 earlier points: 3 in all", steady((3, 18.3, 0.08), (6, 18.6, 0.08)), False),
        (
            "4 points over 2.1 d, 0.3 mag/d",
            steady((0.7, 18.21, 0.03), (1.4, 18.42, 0.03), (2.1, 18.63, 0.03)),
            True,
        ),
        (
            "4 points over 1.9 d, 0.3 mag/d",
            steady((0.6, 18.18, 0.03), (1.2, 18.36, 0.03), (1.9, 18.57, 0.03)),
            False,
        ),
        (
            "the oldest point 15.5 d ago, outside the window",
            steady((3, 18.3, 0.08), (6, 18.6, 0.08), (15.5, 19.55, 0.08)),
            False,
        ),
        (
            "a point in another band",
            steady(
                (3, 18.3, 0.08),
                (6, 18.6, 0.08),
                (9, 18.9, 0.08, 3 - STEADY["candidate"]["fid"] % 2),
            ),
            False,
        ),
        (
            "a negative subtraction among the points",
            steady((3, 18.3, 0.08), (6, 18.6, 0.08), (9, 18.9, 0.08, None, "f")),
            False,
        ),
        (
            "a point without an error",
            steady((3, 18.3, 0.08), (6, 18.6, 0.08), (9, 18.9, None)),
            False,
        ),
        (
            "a NaN magnitude",
            steady((3, 18.3, 0.08), (6, 18.6, 0.08), (9, NAN, 0.08)),
            False,
        ),
        *at(STEADY, "candidate.magpsf", (NAN, False)),
        *at(STEADY, "candidate.sigmapsf", (NAN, False), (0.0, False)),
        *age_cases(STEADY, 30.0, young=True),
        *clean_cases(STEADY),
        *sign_cases(STEADY),
        *sso_veto_cases(STEADY),
        *ps1_cases(STEADY, star=False),
    ],
    "ztf_early_sn_ia": [
        ("made to pass", EARLY, True),
        ("3.03 sigma brighter than 2 d ago", sigma_apart(EARLY, (5, 18.8, 0.08), 2, 3.03), True),
        ("2.97 sigma brighter than 2 d ago", sigma_apart(EARLY, (5, 18.8, 0.08), 2, 2.97), False),
        ("fading", light_curve(EARLY, (5, 18.8, 0.08), (2, 17.6, 0.06)), False),
        (
            "previous detection 0.51 d ago",
            light_curve(EARLY, (5, 18.8, 0.08), (0.51, 18.4, 0.06)),
            True,
        ),
        (
            "previous detection 0.49 d ago",
            light_curve(EARLY, (5, 18.8, 0.08), (0.49, 18.4, 0.06)),
            False,
        ),
        (
            "a colour: history in r, now g",
            light_curve(EARLY, (5, 18.8, 0.08, 2), (2, 18.4, 0.06, 2)),
            False,
        ),
        (
            "a negative detection between: the one before counts",
            light_curve(EARLY, (5, 18.8, 0.08), (2, 18.4, 0.06, None, "f")),
            True,
        ),
        (
            "limit 4.99 d before the first detection",
            with_history(EARLY, limits=[limit(EARLY, 9.99, 20.5)]),
            True,
        ),
        (
            "limit 5.01 d before the first detection",
            with_history(EARLY, limits=[limit(EARLY, 10.01, 20.5)]),
            False,
        ),
        ("no upper limit", with_history(EARLY, limits=[]), False),
        (
            "only a limit after the first detection",
            with_history(EARLY, limits=[limit(EARLY, 3, 20.5)]),
            False,
        ),
        ("limit 18.05 mag, now 18.0", with_history(EARLY, limits=[limit(EARLY, 7, 18.05)]), True),
        ("limit 17.95 mag, now 18.0", with_history(EARLY, limits=[limit(EARLY, 7, 17.95)]), False),
        (
            "the latest limit counts, not a deeper older one",
            with_history(EARLY, limits=[limit(EARLY, 9, 20.5), limit(EARLY, 7, 17.95)]),
            False,
        ),
        ("limit diffmaglim null", with_history(EARLY, limits=[limit(EARLY, 7, None)]), False),
        ("limit diffmaglim NaN", with_history(EARLY, limits=[limit(EARLY, 7, NAN)]), False),
        *at(EARLY, "candidate.magpsf", (NAN, False)),
        *age_cases(EARLY, 14.0, young=True),
        *latitude_cases(EARLY, 7.0),
        *ps1_cases(EARLY, star=False),
        *sso_veto_cases(EARLY),
        *clean_cases(EARLY),
        *sign_cases(EARLY),
        *band_cases(EARLY),
    ],
    "ztf_fast_transients": [
        ("made to pass", FAST, True),
        ("rising 0.303 mag/d", light_curve(FAST, (1.5, 19.5, 0.1), (1, 18.303, 0.05)), True),
        ("rising 0.297 mag/d", light_curve(FAST, (1.5, 19.5, 0.1), (1, 18.297, 0.05)), False),
        *[
            (
                f"{s} sigma",
                changed(
                    light_curve(FAST, (1.5, 19.5, 0.1), (1, 19.0, e)), **{"candidate.sigmapsf": e}
                ),
                s > 3,
            )
            for s, e in FAST_AT.items()
        ],
        (
            "previous detection 0.51 d ago",
            light_curve(FAST, (1.5, 19.5, 0.1), (0.51, 19.0, 0.08)),
            True,
        ),
        (
            "previous detection 0.49 d ago",
            light_curve(FAST, (1.5, 19.5, 0.1), (0.49, 19.0, 0.08)),
            False,
        ),
        ("fading", light_curve(FAST, (1.5, 19.5, 0.1), (1, 17.0, 0.08)), False),
        (
            "a colour: history in r, now g",
            light_curve(FAST, (1.5, 19.5, 0.1, 2), (1, 19.0, 0.08, 2)),
            False,
        ),
        ("one detection", with_history(FAST, detections=[]), False),
        *at(FAST, "candidate.ndethist", (19, True), (20, False)),
        *at(FAST, "candidate.classtar", (0.404, True), (0.396, False), (None, False), (NAN, False)),
        *age_cases(FAST, 14.0, young=True),
        *latitude_cases(FAST, 10.0),
        *ps1_cases(FAST, star=False),
        *sso_veto_cases(FAST),
        *clean_cases(FAST, min_drb=0.9),
        *sign_cases(FAST),
        *band_cases(FAST),
    ],
    "ztf_long_variables": [
        ("made to pass", VARIABLE, True),
        ("5 detections in g", swinging([17.0, 17.1, 17.9, 17.2, 17.8], 0.05), True),
        ("4 detections in g", swinging([17.1, 17.9, 17.2, 17.8], 0.05), False),
        ("chi2 5.05", swinging(SIX_SWINGS, math.sqrt(0.075 / 5.05)), True),
        ("chi2 4.95", swinging(SIX_SWINGS, math.sqrt(0.075 / 4.95)), False),
        ("amplitude 0.31 mag", swinging([17.0, 17.31] * 3, 0.01), True),
        ("amplitude 0.29 mag", swinging([17.0, 17.29] * 3, 0.01), False),
        (
            "swinging in g and r, 3 detections each",
            light_curve(
                VARIABLE,
                *[
                    (d, m, 0.05, 2 - k % 2)
                    for k, (d, m) in enumerate(
                        [(5, 17.1), (10, 17.9), (15, 17.2), (20, 18.0), (25, 17.0)]
                    )
                ],
            ),
            False,
        ),
        (
            "a history sigmapsf null",
            light_curve(
                VARIABLE,
                (5, 17.1, 0.05),
                (10, 17.9, None),
                (15, 17.2, 0.05),
                (20, 18.0, 0.05),
                (25, 17.0, 0.05),
            ),
            False,
        ),
        *age_cases(VARIABLE, 90.0, young=False),
        *ps1_cases(VARIABLE, star=True),
        *sso_veto_cases(VARIABLE),
        *clean_cases(VARIABLE),
        *sign_cases(VARIABLE, positive_only=False),
        *band_cases(VARIABLE),
    ],
    "ztf_known_asteroids": [
        ("made to pass", ASTEROID, True),
        *at(
            ASTEROID,
            "candidate.ssdistnr",
            (4.95, True),
            (5.05, False),
            (0.0, True),
            (-0.01, False),
            (-999.0, False),
            (None, False),
            (NAN, False),
        ),
        *at(
            ASTEROID,
            "candidate.distpsnr1",
            (1.52, True),
            (1.48, False),
            (-1.52, True),
            (-1.48, False),
            (-999.0, True),
            (None, False),
            (NAN, False),
        ),
        *at(ASTEROID, "candidate.ndethist", (5, True), (6, False)),
        ("5 detections", light_curve(ASTEROID, *[(d, 18.0) for d in (1, 2, 3, 4)]), True),
        ("6 detections", light_curve(ASTEROID, *[(d, 18.0) for d in (1, 2, 3, 4, 5)]), False),
        (
            "6 detections, one negative",
            light_curve(ASTEROID, *[(d, 18.0) for d in (1, 2, 3, 4)], (5, 18.0, 0.05, None, "f")),
            False,
        ),
        *at(
            ASTEROID,
            "candidate.ssmagnr",
            (18.98, True),
            (19.02, False),
            (17.02, True),
            (16.98, False),
            (-999.0, False),
            (None, False),
            (NAN, False),
        ),
        *at(ASTEROID, "candidate.magpsf", (NAN, False)),
        *clean_cases(ASTEROID, trailed_ok=True),
        *sign_cases(ASTEROID),
    ],
}


def _decoded(record: dict) -> dict:
    """The record as the job receives it: through Avro with the real writer schema (floats
    rounded to 32 bits)."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, WRITER, record)
    body.seek(0)
    return fastavro.schemaless_reader(body, WRITER, None)


def _message(record: dict) -> bytes:
    """``record`` as ZTF sends it: a one-alert container with the real file's schema JSON."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, WRITER, record)
    return one_alert_container(SCHEMA_JSON, body.getvalue())


def _decide(spark, messages: list[bytes]) -> list[dict[str, bool]]:
    """Every ZTF filter's decision per message, as the job makes it (decoded by Spark into the
    filter view and its features; a null match is no match), none quarantined."""
    decoder = ztf_decoder(messages[:1])
    decoded = decoder.decode(
        message_frame(spark, messages), view_paths(decoder, with_cutouts=False)
    )
    view = filter_view(decoded, ("_offset", "_reason")).orderBy("_offset")
    flags = [F.coalesce(f.evaluate()[0], F.lit(False)).alias(name) for name, f in FILTERS.items()]
    rows = view.select("_reason", *flags).collect()
    assert [r["_reason"] for r in rows] == [None] * len(messages)
    return [{name: r[name] for name in FILTERS} for r in rows]


@pytest.fixture(scope="module")
def case_decisions(spark) -> dict[str, list[bool]]:
    """The cases of every filter, decoded once; each filter's decisions on its own cases."""
    owners = [name for name, cases in CASES.items() for _ in cases]
    rows = _decide(spark, [_message(record) for cases in CASES.values() for _, record, _ in cases])
    out: dict[str, list[bool]] = {name: [] for name in CASES}
    for name, row in zip(owners, rows, strict=True):
        out[name].append(row[name])
    return out


def test_the_ztf_filters_four_in_sql_one_in_python():
    """The contributed ZTF filters of alert fields: four SQL filters (Real-Time Mode) and one
    Python filter, the example of one; each described, with a contact."""
    assert set(FILTERS) == set(CASES) == set(ZTF_EDITED_FOR)
    python = {name for name, f in FILTERS.items() if not isinstance(f, AlertFilter)}
    assert python == {"ztf_steady_risers"}
    assert all(f.description and f.contact and f.survey == "ztf" for f in FILTERS.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_oracle_decides_each_case_as_written(name):
    """The cases are what they say, by the plain-Python science (no Spark); the base passes."""
    assert ORACLES[name](_decoded(BASES[name]))
    labels = [label for label, _, _ in CASES[name]]
    assert len(set(labels)) == len(labels)
    got = {label: ORACLES[name](_decoded(record)) for label, record, _ in CASES[name]}
    assert got == {label: want for label, _, want in CASES[name]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_filter_passes_what_it_should_and_nothing_else(case_decisions, name):
    labels, _, wants = zip(*CASES[name], strict=True)
    assert dict(zip(labels, case_decisions[name], strict=True)) == dict(
        zip(labels, wants, strict=True)
    )


def test_ztf_filters_equal_their_oracles_on_real_histories_and_edited_copies(spark):
    """Every ZTF filter through the job's decoder on the real alerts with histories and the
    ``ztf_made_to_pass`` copies, against its oracle over the same bytes as fastavro reads them."""
    messages = [m for _, m in ztf_messages()]
    rows = _decide(spark, messages)
    records = [next(fastavro.reader(io.BytesIO(m))) for m in messages]
    real = len(ztf_history_files())
    for name, oracle in ORACLES.items():
        want = [oracle(a) for a in records]
        assert [r[name] for r in rows] == want, name
        assert any(want), name  # not vacuous
        assert sum(r[name] for r in rows[:real]) == sum(want[:real]), name
