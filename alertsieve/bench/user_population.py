"""A population of users' filters as a broker holds them: many shapes, each user's own thresholds.

Users of a broker mostly fill in a template (Lasair's and BOOM's filter forms, this project's
contributed filters): a cut on ``diaSource.snr``, ``reliability``, a flux, the sky, the band, the
history, solar-system objects, with their own constants. Here 14 such shapes over 21 view fields,
each a conjunction of 1-5 cuts (ranges, ``IN`` lists, ``size(prvDiaSources)``, ``ssSource``
tests), and a share (20%) of free SQL: random and/or trees of cuts that fit no shape. Each filter
is tuned to pass a share of a reference night drawn log-uniformly in 0.01-5% (median 0.22%,
mean 0.8%: eight records per alert at a thousand filters, as a new user's mix of another
broker's forms gave; BOOM refuses a filter above 5%): its other cuts are
drawn first, then the threshold of its last cut is the quantile of the alerts that pass them that
gives its share (a filter that ties or rounding puts outside 0.01-5% is drawn again). Most publish a compact fields record (JSON or Avro, the shape's columns), a few
(3%) the whole alert.

Every filter has a twin for the oracle: the same cuts in numpy over columns read from
fastavro-decoded alerts (``columns``), with SQL's nulls (a comparison with a null is unknown,
``AND``/``OR`` over unknowns as SQL has them) and Spark's NaN (greater than any number). The
generator is seeded: the same seed and reference give the same filters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from alertsieve.filtering.model import AlertFilter

#: The view fields the population reads: path -> kind ("num", "int", "str", "size", "null").
FIELDS: dict[str, str] = {
    "diaSource.snr": "num",
    "diaSource.reliability": "num",
    "diaSource.psfFlux": "num",
    "diaSource.psfFluxErr": "num",
    "diaSource.apFlux": "num",
    "diaSource.scienceFlux": "num",
    "diaSource.templateFlux": "num",
    "diaSource.extendedness": "num",
    "diaSource.trailLength": "num",
    "diaSource.x": "num",
    "diaSource.y": "num",
    "diaSource.ra": "num",
    "diaSource.dec": "num",
    "diaSource.detector": "int",
    "diaSource.band": "str",
    "diaObject.r_psfFluxMean": "num",
    "diaObject.g_psfFluxMean": "num",
    "diaObject.r_psfFluxNdata": "int",
    "diaObject.z_fpFluxMean": "num",
    "prvDiaSources": "size",
    "ssSource": "null",
}
NUMERIC = [p for p, k in FIELDS.items() if k in ("num", "int")]
BANDS = ("u", "g", "r", "i", "z", "y")
FREE_SHARE = 0.2
ALERT_SHARE = 0.03
MIN_RATE, MAX_RATE = 1e-4, 5e-2


# --- columns and three-valued logic --------------------------------------------------------------


def _get(alert: dict, path: str):
    value = alert
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def columns(alerts: Sequence[dict]) -> dict[str, np.ndarray]:
    """The population's fields over decoded alerts: numbers as float64 (NaN kept, as Spark has
    it) beside a ``known`` mask per field (``path + "?"``: not null), strings as objects, an
    array's size, a record's presence."""
    out: dict[str, np.ndarray] = {}
    for path, kind in FIELDS.items():
        raw = [_get(a, path) for a in alerts]
        known = np.array([v is not None for v in raw])
        if kind in ("num", "int"):
            values = np.array([math.nan if v is None else float(v) for v in raw])
        elif kind == "size":
            values = np.array([-1.0 if v is None else float(len(v)) for v in raw])
        elif kind == "null":
            values, known = known.astype(float), np.ones(len(raw), bool)
        else:
            values = np.array(raw, dtype=object)
        out[path], out[path + "?"] = values, known
    return out


def slim(alert: dict) -> dict:
    """What of a decoded alert the population reads (its records, not its cutouts)."""
    return {k: alert.get(k) for k in {p.split(".")[0] for p in FIELDS}}


#: A condition's value over columns: (true, known), both boolean arrays.
Truth = tuple[np.ndarray, np.ndarray]


def conj(*parts: Truth) -> Truth:
    value = np.logical_and.reduce([v for v, _ in parts])
    false = np.logical_or.reduce([k & ~v for v, k in parts])
    known = np.logical_and.reduce([k for _, k in parts]) | false
    return value & known, known


def disj(*parts: Truth) -> Truth:
    true = np.logical_or.reduce([k & v for v, k in parts])
    known = np.logical_and.reduce([k for _, k in parts]) | true
    return true, known


def compare(x: np.ndarray, op: str, t: float) -> np.ndarray:
    """``x op t`` as Spark compares doubles: NaN above every number."""
    y = np.where(np.isnan(x), np.inf, x)
    return {">": y > t, "<": y < t, ">=": y >= t, "<=": y <= t}[op]


# --- cuts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cut:
    """One condition: its SQL and its twin."""

    sql: str
    twin: Callable[[dict], Truth]


def _literal(value: float, kind: str) -> str:
    if kind == "int":
        return str(int(value))
    return repr(float(f"{value:.6g}"))


def _kind(path: str) -> str:
    return "int" if FIELDS[path] == "int" else "num"


def threshold(path: str, op: str, t: float) -> Cut:
    text = _literal(t, _kind(path))
    t = float(text)

    def twin(c):
        return compare(c[path], op, t), c[path + "?"]

    return Cut(f"{path} {op} {text}", twin)


def between(path: str, lo: float, hi: float) -> Cut:
    a, b = _literal(lo, _kind(path)), _literal(hi, _kind(path))

    def twin(c):
        x = c[path]
        return compare(x, ">=", float(a)) & compare(x, "<=", float(b)), c[path + "?"]

    return Cut(f"{path} BETWEEN {a} AND {b}", twin)


def scaled(path: str, k: float, other: str) -> Cut:
    """``path > k * other``: brighter than k times another flux."""
    text = _literal(k, "num")

    def twin(c):
        y = c[other] * float(text)
        x, y = np.where(np.isnan(c[path]), np.inf, c[path]), np.where(np.isnan(y), np.inf, y)
        return x > y, c[path + "?"] & c[other + "?"]

    return Cut(f"{path} > {text} * {other}", twin)


def one_of(path: str, values: Sequence[str]) -> Cut:
    listed = ", ".join(f"'{v}'" for v in values)

    def twin(c):
        return np.isin(c[path].astype(str), list(values)), c[path + "?"]

    return Cut(f"{path} IN ({listed})", twin)


def history(op: str, n: int) -> Cut:
    def twin(c):
        x = c["prvDiaSources"]
        return compare(x, op, n), x >= 0

    return Cut(f"size(prvDiaSources) {op} {n}", twin)


def present(path: str, yes: bool) -> Cut:
    def twin(c):
        there = c[path].astype(bool)
        return (there if yes else ~there), np.ones(len(there), bool)

    return Cut(f"{path} IS {'NOT ' if yes else ''}NULL", twin)


# --- shapes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tuned:
    """The last cut of a filter, whose threshold sets its rate: ``path op t``."""

    path: str
    op: str


@dataclass(frozen=True)
class Template:
    """A shape: how its other cuts are drawn, which cut is tuned, and what it publishes."""

    name: str
    draw: Callable[[np.random.Generator, dict], list[Cut]]
    tuned: Tuned
    fields: dict[str, str]
    format: str = "json"


def _q(rng: np.random.Generator, c: dict, path: str, lo: float, hi: float) -> float:
    """A value of ``path`` at a random quantile between ``lo`` and ``hi`` of the reference."""
    x = c[path][c[path + "?"] & ~np.isnan(c[path])]
    return float(np.quantile(x, rng.uniform(lo, hi))) if len(x) else 0.0


def _sky_box(rng, c):
    lo, hi = sorted([_q(rng, c, "diaSource.ra", 0, 1), _q(rng, c, "diaSource.ra", 0, 1)])
    return [between("diaSource.ra", lo, hi)]


BASIC = {"snr": "diaSource.snr", "flux": "diaSource.psfFlux", "band": "diaSource.band"}
TEMPLATES: list[Template] = [
    Template("snr", lambda r, c: [], Tuned("diaSource.snr", ">"), BASIC),
    Template(
        "reliable",
        lambda r, c: [
            threshold("diaSource.reliability", ">", _q(r, c, "diaSource.reliability", 0.3, 0.9))
        ],
        Tuned("diaSource.snr", ">"),
        {**BASIC, "reliability": "diaSource.reliability"},
        "avro",
    ),
    Template(
        "flux_window",
        lambda r, c: [threshold("diaSource.psfFlux", "<", _q(r, c, "diaSource.psfFlux", 0.7, 1.0))],
        Tuned("diaSource.psfFlux", ">"),
        BASIC,
    ),
    Template(
        "band_bright",
        lambda r, c: [one_of("diaSource.band", list(r.choice(BANDS, 3, replace=False)))],
        Tuned("diaSource.apFlux", ">"),
        {**BASIC, "apflux": "diaSource.apFlux"},
        "avro",
    ),
    Template(
        "sky_box", _sky_box, Tuned("diaSource.dec", ">"), {**BASIC, "source_ra": "diaSource.ra"}
    ),
    Template(
        "new_source",
        lambda r, c: [
            history("<=", int(r.integers(0, 3))),
            threshold("diaSource.reliability", ">", _q(r, c, "diaSource.reliability", 0.2, 0.8)),
        ],
        Tuned("diaSource.snr", ">"),
        BASIC,
        "avro",
    ),
    Template(
        "long_history",
        lambda r, c: [history(">=", int(r.integers(2, 9)))],
        Tuned("diaSource.scienceFlux", ">"),
        {**BASIC, "science": "diaSource.scienceFlux"},
    ),
    Template(
        "moving",
        lambda r, c: [present("ssSource", True)],
        Tuned("diaSource.snr", ">"),
        BASIC,
    ),
    Template(
        "extended_host",
        lambda r, c: [
            threshold("diaSource.extendedness", ">", _q(r, c, "diaSource.extendedness", 0.2, 0.9))
        ],
        Tuned("diaSource.templateFlux", ">"),
        {**BASIC, "template": "diaSource.templateFlux"},
        "avro",
    ),
    Template(
        "brightening",
        lambda r, c: [
            scaled("diaSource.scienceFlux", r.uniform(1.0, 3.0), "diaSource.templateFlux")
        ],
        Tuned("diaSource.snr", ">"),
        BASIC,
    ),
    Template(
        "detector_edge",
        lambda r, c: [
            threshold("diaSource.x", "<", _q(r, c, "diaSource.x", 0.3, 0.9)),
            threshold("diaSource.y", "<", _q(r, c, "diaSource.y", 0.3, 0.9)),
            threshold("diaSource.detector", "<", _q(r, c, "diaSource.detector", 0.5, 1.0) + 1),
        ],
        Tuned("diaSource.psfFluxErr", ">"),
        BASIC,
    ),
    Template(
        "known_object",
        lambda r, c: [
            threshold("diaObject.r_psfFluxNdata", ">=", int(r.integers(0, 3))),
            threshold("diaObject.z_fpFluxMean", ">", _q(r, c, "diaObject.z_fpFluxMean", 0.0, 0.5)),
        ],
        Tuned("diaSource.snr", ">"),
        {**BASIC, "zmean": "diaObject.z_fpFluxMean"},
        "avro",
    ),
    Template(
        "colour",
        lambda r, c: [
            threshold("diaObject.g_psfFluxMean", ">", _q(r, c, "diaObject.g_psfFluxMean", 0.0, 0.6))
        ],
        Tuned("diaObject.r_psfFluxMean", ">"),
        {**BASIC, "r": "diaObject.r_psfFluxMean", "g": "diaObject.g_psfFluxMean"},
    ),
    Template(
        "quiet_trail",
        lambda r, c: [
            threshold("diaSource.trailLength", "<=", _q(r, c, "diaSource.trailLength", 0.5, 1.0)),
            present("ssSource", False),
            threshold("diaSource.reliability", ">", _q(r, c, "diaSource.reliability", 0.1, 0.6)),
            threshold("diaSource.extendedness", "<", _q(r, c, "diaSource.extendedness", 0.5, 1.0)),
        ],
        Tuned("diaSource.psfFlux", "<"),
        BASIC,
    ),
]


def _free_atom(rng: np.random.Generator, c: dict) -> Cut:
    path = str(rng.choice(NUMERIC))
    form = rng.integers(0, 4)
    if form == 0:
        lo, hi = sorted([_q(rng, c, path, 0, 1), _q(rng, c, path, 0, 1)])
        return between(path, lo, hi)
    if form == 1:
        return one_of(
            "diaSource.band", list(rng.choice(BANDS, int(rng.integers(1, 5)), replace=False))
        )
    return threshold(path, str(rng.choice([">", "<", ">=", "<="])), _q(rng, c, path, 0.05, 0.95))


def _free(rng: np.random.Generator, c: dict) -> tuple[str, Callable[[dict], Truth]]:
    """Free SQL: an and/or tree of 2-4 random cuts, in one of several forms."""
    atoms = [_free_atom(rng, c) for _ in range(int(rng.integers(2, 5)))]
    if len(atoms) == 2 or rng.random() < 0.5:
        a, rest = atoms[0], atoms[1:]
        sql = f"({a.sql} OR {' AND '.join(x.sql for x in rest)})"
        return sql, lambda cols: disj(a.twin(cols), conj(*[x.twin(cols) for x in rest]))
    sql = f"({atoms[0].sql} OR {atoms[1].sql}) AND " + " AND ".join(x.sql for x in atoms[2:])
    return sql, lambda cols: conj(
        disj(atoms[0].twin(cols), atoms[1].twin(cols)), *[x.twin(cols) for x in atoms[2:]]
    )


@dataclass(frozen=True)
class UserFilter:
    """A generated filter and its twin (``twin(columns)`` -> which alerts it passes)."""

    filter: AlertFilter
    twin: Callable[[dict], np.ndarray]
    template: str  # its shape's name, or "free"

    def test(self, alert: dict) -> bool:
        """The twin on one decoded alert (what the latency benchmarks count with)."""
        return bool(self.twin(columns([slim(alert)]))[0])


def _tune(rng, c, path: str, op: str, passing: np.ndarray) -> float | None:
    """The threshold of ``path op t`` that leaves a log-uniform share of the reference."""
    want = math.exp(rng.uniform(math.log(MIN_RATE), math.log(MAX_RATE))) * len(passing)
    x = c[path][passing & c[path + "?"]]
    x = np.where(np.isnan(x), np.inf, x)
    if len(x) < max(want, 1):
        return None
    x = np.sort(x)
    k = max(int(round(want)), 1)
    return float(x[-k - 1] if op == ">" else x[k]) if k < len(x) else None


def population(n: int, reference: Sequence[dict], seed: int = 0) -> list[UserFilter]:
    """``n`` users' filters tuned on ``reference`` (decoded alerts; see the module)."""
    rng = np.random.default_rng(seed)
    c = columns(reference)
    out: list[UserFilter] = []
    while len(out) < n:
        k = len(out)
        free = k % round(1 / FREE_SHARE) == 0
        if free:
            sql, loose = _free(rng, c)
            template_name, path, op = "free", str(rng.choice(NUMERIC)), str(rng.choice([">", "<"]))
            fields, fmt = BASIC, "json"
        else:
            t = TEMPLATES[int(rng.integers(0, len(TEMPLATES)))]
            cuts = t.draw(rng, c)
            sql = " AND ".join(x.sql for x in cuts)
            loose = (lambda cols, cuts=cuts: conj(*[x.twin(cols) for x in cuts])) if cuts else None
            template_name, path, op, fields, fmt = (
                t.name,
                t.tuned.path,
                t.tuned.op,
                t.fields,
                t.format,
            )
        passing = np.ones(len(reference), bool) if loose is None else loose(c)[0]
        value = _tune(rng, c, path, op, passing)
        if value is None:
            continue
        last = threshold(path, op, value)
        where = f"{sql} AND {last.sql}" if sql else last.sql
        everything = (
            (lambda cols, loose=loose, last=last: conj(loose(cols), last.twin(cols)))
            if loose
            else last.twin
        )
        if not MIN_RATE <= everything(c)[0].mean() <= MAX_RATE:  # ties, or the rounding
            continue
        alert = rng.random() < ALERT_SHARE
        f = AlertFilter(
            name=f"u{k:05d}_{template_name}",
            sql=where,
            payload="alert" if alert else "fields",
            fields={} if alert else dict(fields),
            format=fmt,
        )
        out.append(UserFilter(f, lambda cols, e=everything: e(cols)[0], template_name))
    return out
