"""The science behind simulated alerts: who is on the sky and how their light curves behave.

Pure logic, no schema and no I/O: each population turns a random generator and a visit into an
``AlertTruth`` (the current detection, its history, forced photometry, reliability). Like Rubin's,
an alert exists only for a detection: a source at least 5 sigma from the template in the difference
image now (drawn again until it is), and its history holds only its earlier detections.

How many of each a visit holds (``PER_VISIT``, one 9.6 deg2 field, averaged over the sky) comes
from Rubin's published estimates where there are some, and says so where it is an assumption:

- DMTN-102 (Rubin's alert-stream composition, section 2.2), per visit: ~7,200 variable stars,
  ~3,000 moving objects in ecliptic fields, ~200 supernovae, ~70 AGN. It does not count artefacts.
- DP0.3 (Rubin's simulated solar-system data preview): ~300 asteroid detections per visit on
  average over the sky, which replaces DMTN-102's ecliptic 3,000 here.
- Artefacts: the real Operations Rehearsal alerts (shared/real-alerts, v7.4) have a third of
  their reliability scores below 0.5 (33 of 100; 25 below 0.1), so artefacts are taken as a third
  of the stream: half as many as the astrophysical alerts.

Everything else below marked "assumption" is one: no published number was found for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from alertsieve.sim import VISIT_CADENCE_S

BANDS = "ugrizy"
#: AB magnitude of 1 nJy: m = 31.4 - 2.5 log10(flux / nJy).
ZERO_POINT = 31.4
#: Single-visit 5-sigma depths (LSST science requirements, approximate).
DEPTH = {"u": 23.9, "g": 25.0, "r": 24.7, "i": 24.0, "z": 23.3, "y": 22.1}
#: Difference-image significance of a detection: Rubin's DIA threshold (LSST DPDD).
DETECTION_SIGMA = 5.0
#: Radius of the LSST field of view (degrees).
FIELD_RADIUS = 1.75
#: Science CCDs in the LSST camera: producers split a visit by detector, as the real system does.
DETECTORS = 189
SECONDS_PER_DAY = 86400.0
#: Days from explosion to peak of a type Ia supernova (Firth et al. 2015, MNRAS 446, 3895: 18.98 d).
RISE_DAYS = 19.0
#: How fast source counts rise towards faint magnitudes (dN/dm proportional to 10^(slope m)), so
#: that, as in a real stream, most alerts are near the detection limit. Supernovae and AGN: a
#: population spread evenly through (Euclidean) space, 0.6. Asteroids: 0.30, the slope of the main
#: belt's absolute-magnitude distribution at the sizes a survey like this reaches (Gladman et al.
#: 2009, Icarus 202, 104), taken for the apparent one. Stars: 0.3 (assumption: slower than
#: Euclidean, as lines of sight leave the Galactic disc).
EUCLIDEAN_COUNTS = 0.6
ASTEROID_COUNTS = 0.30
STAR_COUNTS = 0.3

#: Alerts per visit of each population (see the module docstring for the sources).
PER_VISIT: dict[str, float] = {
    # DMTN-102's 7,200 variable stars, less the "bright" ones below.
    "variable": 7_200 - 72,
    # Sources whose difference flux is brighter than 18.5 mag: 1% of the variable-star count
    # (assumption).
    "bright": 72,
    # DP0.3's 300 asteroid detections, of which half are of objects already known, so that Rubin
    # attaches an ssSource (assumption).
    "solar_system": 150,
    # First detections: the other 150 asteroids (unknown, so new objects to Rubin) and the first
    # detection of ~10 supernovae (DMTN-102's 200 supernova alerts a visit, each supernova seen on
    # ~20 visits: assumption).
    "new": 150 + 10,
    # Supernovae on the rise, seen before: a quarter of DMTN-102's 200 (a ~19 d rise of a ~70 d
    # detectable light curve: the 70 d is an assumption).
    "rising": 50,
    # The other 140 supernovae (past peak) and DMTN-102's 70 AGN.
    "ordinary": 140 + 70,
}
#: Artefacts: half as many as the astrophysical alerts, a third of the stream (see above).
PER_VISIT["bogus"] = sum(PER_VISIT.values()) / 2

DEFAULT_MIX: dict[str, float] = {name: n / sum(PER_VISIT.values()) for name, n in PER_VISIT.items()}


def mag_to_flux(mag: float) -> float:
    return 10 ** ((ZERO_POINT - mag) / 2.5)


def flux_error(flux: float, band: str) -> float:
    """Sky-limited noise at the visit depth plus source photon noise."""
    sky = mag_to_flux(DEPTH[band]) / 5.0
    return math.sqrt(sky**2 + abs(flux))


@dataclass(frozen=True)
class Visit:
    """One pointing of the telescope: every alert of a visit shares time, band and field."""

    index: int
    visit_id: int
    mjd: float
    band: str
    ra: float
    dec: float


@dataclass
class Detection:
    mjd: float
    band: str
    flux: float  # difference-image PSF flux (nJy); negative when fainter than the template
    flux_err: float
    ra: float
    dec: float
    visit_id: int
    detector: int
    source_id: int

    @property
    def snr(self) -> float:
        return abs(self.flux) / self.flux_err


@dataclass
class AlertTruth:
    population: str
    source: Detection
    object_id: int | None
    reliability: float
    template_flux: float
    extendedness: float
    history: list[Detection] = field(default_factory=list)  # oldest first
    forced: list[Detection] = field(default_factory=list)  # oldest first
    ss_object_id: int | None = None
    is_dipole: bool = False
    trailed: bool = False


def make_visit(
    seed: int, index: int, start_mjd: float = 61000.2, cadence_s: float = VISIT_CADENCE_S
) -> Visit:
    rng = np.random.default_rng([seed, index, 0xF1E1D])
    dec = math.degrees(
        math.asin(rng.uniform(math.sin(math.radians(-75)), math.sin(math.radians(8))))
    )
    return Visit(
        index=index,
        visit_id=(seed % 1000) * 10_000_000 + index,
        mjd=start_mjd + index * cadence_s / SECONDS_PER_DAY,
        band=BANDS[int(rng.integers(1, 6))],  # u is rare in alert production; g..y
        ra=float(rng.uniform(0, 360)),
        dec=dec,
    )


def _position(rng: np.random.Generator, visit: Visit) -> tuple[float, float]:
    r = FIELD_RADIUS * math.sqrt(rng.uniform())
    theta = rng.uniform(0, 2 * math.pi)
    dec = visit.dec + r * math.sin(theta)
    ra = (visit.ra + r * math.cos(theta) / max(math.cos(math.radians(dec)), 0.05)) % 360
    return ra, max(-90.0, min(90.0, dec))


def _random_id(rng: np.random.Generator) -> int:
    return int(rng.integers(1 << 40, 1 << 62))


def _detection(
    rng: np.random.Generator,
    visit: Visit,
    ra: float,
    dec: float,
    mjd: float,
    band: str,
    flux: float,
) -> Detection:
    measured, err = _measure(rng, flux, band)
    return _detected(rng, visit, ra, dec, mjd, band, measured, err)


def _measure(rng: np.random.Generator, flux: float, band: str) -> tuple[float, float]:
    """A flux as measured (with its noise) and its error, in float32 as Rubin stores them (so the
    summaries computed here agree with the records)."""
    err = flux_error(flux, band)
    return float(np.float32(flux + rng.normal(0, err))), float(np.float32(err))


def _detected(
    rng: np.random.Generator,
    visit: Visit,
    ra: float,
    dec: float,
    mjd: float,
    band: str,
    flux: float,
    err: float,
) -> Detection:
    return Detection(
        mjd=mjd,
        band=band,
        flux=flux,
        flux_err=err,
        ra=float(ra + rng.normal(0, 1e-5)),
        dec=float(dec + rng.normal(0, 1e-5)),
        visit_id=visit.visit_id - int((visit.mjd - mjd) * 800) - 1,
        detector=int(rng.integers(0, DETECTORS)),
        source_id=_random_id(rng),
    )


#: Visits of one field in one night: a run of 1 to this many, in one band, a few to ~40 minutes
#: apart. Rubin's survey takes a field twice a night, 15-60 minutes apart, to link moving objects
#: (Ivezic et al. 2019, ApJ 873, 111, sec. 3.1); the two long real LSSTCam histories
#: (tests/data/real/rubin-lsstcam-v10_0-b.avro) show runs of 1-8 visits within 30 minutes, in one
#: band a night, nights days apart. Assumption: the run's length is uniform from 1 to 4.
MAX_VISITS_A_NIGHT = 4
VISIT_GAP_MINUTES = (1.0, 40.0)


def _past_visits(
    rng: np.random.Generator, visit: Visit, n: int, span_days: float
) -> list[tuple[float, str]]:
    """``n`` earlier visits of the field, oldest first, as (MJD, band): runs within a night in
    one band, on nights from half a day to ``span_days`` before ``visit``."""
    visits: list[tuple[float, str]] = []
    while len(visits) < n:
        t = visit.mjd - rng.uniform(0.5, max(span_days, 0.5))
        band = str(BANDS[int(rng.integers(1, 6))])
        for _ in range(int(rng.integers(1, MAX_VISITS_A_NIGHT + 1))):
            visits.append((t, band))
            t -= rng.uniform(*VISIT_GAP_MINUTES) / 1440
    return sorted(visits[:n])


def _series(
    rng: np.random.Generator,
    visit: Visit,
    ra: float,
    dec: float,
    visits: list[tuple[float, str]],
    flux_at: Callable[[float], float],
) -> list[Detection]:
    return [_detection(rng, visit, ra, dec, t, b, flux_at(t)) for t, b in visits]


def _magnitude(rng: np.random.Generator, bright: float, faint: float, slope: float) -> float:
    """A magnitude between ``bright`` and ``faint`` from counts dN/dm proportional to 10^(slope m)."""
    low, high = 10 ** (slope * bright), 10 ** (slope * faint)
    return float(math.log10(rng.uniform(low, high)) / slope)


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def simulate_truth(
    rng: np.random.Generator,
    visit: Visit,
    alert_index: int,
    population: str,
    max_history: int,
    max_forced: int,
) -> AlertTruth:
    """One alert's ground truth for ``population`` at ``visit``: drawn again until the source is a
    detection now and, for a rising supernova, until its rise is seen (see ``_rise_seen``)."""
    if population not in DEFAULT_MIX:
        raise ValueError(f"unknown population {population!r}; known: {', '.join(DEFAULT_MIX)}")
    ra, dec = _position(rng, visit)
    chance = _Chance(
        hist_n=int(rng.integers(0, max_history + 1)) if max_history else 0,
        forced_n=int(rng.integers(0, max_forced + 1)) if max_forced else 0,
        reliability=float(rng.beta(8, 1.5)),  # assumption: real sources score high, with a tail
        extendedness=float(rng.uniform(0, 1)),
        template_mag=float(rng.uniform(19, 24)),
        object_id=_random_id(rng),
    )
    while True:
        truth = _draw(rng, visit, ra, dec, alert_index, population, max_history, chance)
        if truth is not None and (population != "rising" or not max_history or _rise_seen(truth)):
            return truth


@dataclass(frozen=True)
class _Chance:
    """What is drawn for an alert whatever its source does, once: a source drawn again until it
    is detected keeps these (they are independent of its detection)."""

    hist_n: int
    forced_n: int
    reliability: float
    extendedness: float
    template_mag: float
    object_id: int


def _rise_seen(truth: AlertTruth) -> bool:
    """What makes a supernova on the rise a "rising" alert rather than a "new" one (its first
    detection) or an "ordinary" one (near peak, where the rise is lost in the noise): an earlier
    detection, and a flux now above the first one by more than 3 sigma."""
    if not truth.history:
        return False
    first, now = truth.history[0], truth.source
    return now.flux - first.flux > 3 * math.hypot(now.flux_err, first.flux_err)


@dataclass(frozen=True)
class _Source:
    """A source of a population as drawn: its light curve, how far back its history goes, and
    what it sets of the alert in place of the chance draws (``_Chance``)."""

    flux_at: Callable[[float], float]  # difference flux (nJy) at an MJD
    span: float  # days its earlier visits spread over
    hist_n: int
    forced_n: int
    reliability: float
    extendedness: float
    template_mag: float
    object_id: int | None
    ss_object_id: int | None = None
    is_dipole: bool = False
    trailed: bool = False

    @classmethod
    def of(
        cls, chance: _Chance, flux_at: Callable[[float], float], span: float, **overrides
    ) -> _Source:
        """A source with the alert's chance draws, but ``overrides``."""
        drawn = cls(
            flux_at,
            span,
            chance.hist_n,
            chance.forced_n,
            chance.reliability,
            chance.extendedness,
            chance.template_mag,
            chance.object_id,
        )
        return replace(drawn, **overrides)


def _bright(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """Assumption: bright, slowly varying, confidently real."""
    base = mag_to_flux(rng.uniform(15.0, 18.0))
    return _Source.of(
        chance,
        lambda t: base * (1 + 0.05 * math.sin(t)),
        365.0,
        reliability=float(rng.uniform(0.93, 1.0)),
    )


def _rising(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """A supernova before peak: flux grows as the square of the time since explosion (the
    expanding fireball, Riess et al. 1999, AJ 118, 2675), so it gains 2.17 / age mag a day."""
    peak = mag_to_flux(_magnitude(rng, 19.0, limit, EUCLIDEAN_COUNTS))
    explosion = visit.mjd - rng.uniform(0.0, RISE_DAYS)
    return _Source.of(
        chance,
        lambda t: peak * (max(t - explosion, 0.0) / RISE_DAYS) ** 2,
        30.0,
        hist_n=max(3, min(chance.hist_n, 8)) if max_history else 0,
    )


def _bogus(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """An artefact near the detection limit, of either sign, scored unreliable."""
    band_depth = DEPTH[visit.band]
    fl = mag_to_flux(rng.uniform(band_depth - 0.3, band_depth + 0.4)) * rng.choice([-1.0, 1.0])
    return _Source.of(
        chance,
        lambda t: fl,
        30.0,
        reliability=float(rng.uniform(0.0, 0.25)),
        hist_n=0,
        forced_n=0,
        is_dipole=bool(rng.uniform() < 0.4),
    )  # is_dipole: assumption


def _variable(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """A star varying about its template brightness, so its difference flux takes both signs.
    Assumptions: periods log-uniform from 0.1 d (RR Lyrae, delta Scuti, contact binaries) to
    100 d (Cepheids, semiregulars); semi-amplitudes log-uniform from 0.01 to 1 mag, so most
    are small (most variable stars vary by hundredths of a magnitude: Eyer & Mowlavi 2008,
    J. Phys. Conf. Ser. 118, 012010); mean magnitudes from 17 (brighter stars saturate:
    ~16 mag, Ivezic et al. 2019, ApJ 873, 111) to 25, by star counts."""
    return _pulsating(
        rng,
        chance,
        0.01,
        lambda: _magnitude(rng, 17.0, 25.0, STAR_COUNTS),
        hist_n=max(chance.hist_n, min(max_history, 15)),
    )


def _pulsating(
    rng: np.random.Generator,
    chance: _Chance,
    least_amplitude: float,
    mean_mag_of: Callable[[], float],
    **overrides,
) -> _Source:
    """A star varying sinusoidally about its template brightness: period log-uniform from 0.1 to
    100 d, semi-amplitude log-uniform from ``least_amplitude`` to 1 mag, mean magnitude drawn by
    ``mean_mag_of``, a random phase."""
    period = _log_uniform(rng, 0.1, 100.0)
    amplitude = _log_uniform(rng, least_amplitude, 1.0)
    mean_mag = mean_mag_of()
    star = mag_to_flux(mean_mag)
    phase = rng.uniform(0, 2 * math.pi)
    return _Source.of(
        chance,
        lambda t: (
            star * (10 ** (-0.4 * amplitude * math.sin(2 * math.pi * t / period + phase)) - 1)
        ),
        365.0,
        extendedness=float(rng.uniform(0, 0.1)),
        template_mag=mean_mag,
        **overrides,
    )


def _solar_system(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """A known asteroid: steady over the night, no object and no history of its own."""
    fl = mag_to_flux(_magnitude(rng, 19.0, limit, ASTEROID_COUNTS))
    return _Source.of(
        chance,
        lambda t: fl,
        1.0,
        object_id=None,
        ss_object_id=_random_id(rng),
        hist_n=0,
        forced_n=0,
        trailed=bool(rng.uniform() < 0.3),  # assumption
        extendedness=float(rng.uniform(0, 0.2)),
    )


def _new(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """Mostly unknown asteroids, so counted as asteroids."""
    fl = mag_to_flux(_magnitude(rng, 19.5, limit, ASTEROID_COUNTS))
    return _Source.of(chance, lambda t: fl, 1.0, hist_n=0, forced_n=0)


def _ordinary(
    rng: np.random.Generator, visit: Visit, limit: float, max_history: int, chance: _Chance
) -> _Source:
    """Slowly varying, 30% below the template (AGN fading: assumption)."""
    fl = mag_to_flux(_magnitude(rng, 20.0, limit, EUCLIDEAN_COUNTS)) * rng.choice(
        [-1.0, 1.0], p=[0.3, 0.7]
    )
    return _Source.of(chance, lambda t: fl * (1 + 0.2 * math.sin(t / 3.0)), 365.0)


#: How each population's sources are drawn (any other: ``_ordinary``).
_SOURCES = {
    "bright": _bright,
    "rising": _rising,
    "bogus": _bogus,
    "variable": _variable,
    "solar_system": _solar_system,
    "new": _new,
}


def _draw(
    rng: np.random.Generator,
    visit: Visit,
    ra: float,
    dec: float,
    alert_index: int,
    population: str,
    max_history: int,
    chance: _Chance,
) -> AlertTruth | None:
    """One draw of a source of ``population``; None when it is not detected now."""
    limit = DEPTH[visit.band] + 0.5  # fainter than this, a detection now is vanishingly rare
    drawn = _SOURCES.get(population, _ordinary)(rng, visit, limit, max_history, chance)
    flux, err = _measure(rng, drawn.flux_at(visit.mjd), visit.band)
    if abs(flux) < DETECTION_SIGMA * err:
        return None
    source = _detected(rng, visit, ra, dec, visit.mjd, visit.band, flux, err)
    return _alert(rng, visit, ra, dec, alert_index, population, drawn, source)


def _alert(
    rng: np.random.Generator,
    visit: Visit,
    ra: float,
    dec: float,
    alert_index: int,
    population: str,
    drawn: _Source,
    source: Detection,
) -> AlertTruth:
    """The alert of a source detected now (``source``): its identifiers, its earlier detections and
    its forced photometry."""
    source.visit_id = visit.visit_id
    source.detector = alert_index % DETECTORS
    source.source_id = (visit.visit_id << 20) | alert_index
    history = [
        d
        for d in _series(
            rng, visit, ra, dec, _past_visits(rng, visit, drawn.hist_n, drawn.span), drawn.flux_at
        )
        if d.snr >= DETECTION_SIGMA
    ]
    forced = _series(
        rng,
        visit,
        ra,
        dec,
        _past_visits(rng, visit, drawn.forced_n, min(drawn.span, 30.0)),
        drawn.flux_at,
    )
    template_flux = 0.0 if population == "solar_system" else mag_to_flux(drawn.template_mag)
    return AlertTruth(
        population=population,
        source=source,
        object_id=drawn.object_id,
        reliability=drawn.reliability,
        template_flux=template_flux,
        extendedness=drawn.extendedness,
        history=history,
        forced=forced,
        ss_object_id=drawn.ss_object_id,
        is_dipole=drawn.is_dipole,
        trailed=drawn.trailed,
    )


#: Deep-drilling fields: a few fields Rubin observes in sequences of many visits through several
#: bands, night after night, so that a source there carries hundreds of earlier detections (the
#: real LSSTCam alerts of such fields carry 300-390). Assumptions: a night's sequence holds 2 to 5
#: bands of 2 to 10 visits each, 1 to 5 minutes apart; sequences are 1 to 3 nights apart.
DEEP_BANDS_A_NIGHT = (2, 5)
DEEP_VISITS_A_BAND = (2, 10)
DEEP_VISIT_GAP_MINUTES = (1.0, 5.0)
DEEP_NIGHTS_APART = (1.0, 3.0)


def _deep_nights(rng: np.random.Generator, visit: Visit):
    """A deep field's earlier visits as (MJD, band), night by night back from ``visit``: each
    night's sequence in time order, the nights newest first (an endless generator)."""
    night = visit.mjd
    while True:
        night -= rng.uniform(*DEEP_NIGHTS_APART)
        t, sequence = night, []
        bands = rng.choice(list(BANDS), size=int(rng.integers(*DEEP_BANDS_A_NIGHT, endpoint=True)))
        for band in bands:
            for _ in range(int(rng.integers(*DEEP_VISITS_A_BAND, endpoint=True))):
                sequence.append((t, str(band)))
                t += rng.uniform(*DEEP_VISIT_GAP_MINUTES) / 1440
        yield sequence


def _deep_variable(rng: np.random.Generator, chance: _Chance) -> _Source:
    """What a deep field's hundreds of detections are of: a variable star bright and variable
    enough to stand out of its template at most visits. Assumptions: mean magnitude uniform from
    18 to 21, semi-amplitude log-uniform from 0.3 to 1 mag, period log-uniform from 0.1 to 100 d."""
    return _pulsating(rng, chance, 0.3, lambda: float(rng.uniform(18.0, 21.0)))


def deep_field_truth(
    rng: np.random.Generator, visit: Visit, alert_index: int, history: int, max_forced: int
) -> AlertTruth:
    """An alert of a deep-drilling field (``_deep_variable``) with exactly ``history`` earlier
    detections, its most recent ones, from the field's nightly sequences (detections only, as
    Rubin's ``prvDiaSources``: visits where it was within 5 sigma of its template are left out)."""
    ra, dec = _position(rng, visit)
    chance = _Chance(
        hist_n=0,
        forced_n=int(rng.integers(0, max_forced + 1)) if max_forced else 0,
        reliability=float(rng.beta(8, 1.5)),
        extendedness=0.0,
        template_mag=20.0,
        object_id=_random_id(rng),
    )
    while True:  # drawn again until detected now, as every alert is
        drawn = _deep_variable(rng, chance)
        flux, err = _measure(rng, drawn.flux_at(visit.mjd), visit.band)
        if abs(flux) >= DETECTION_SIGMA * err:
            break
    source = _detected(rng, visit, ra, dec, visit.mjd, visit.band, flux, err)
    truth = _alert(rng, visit, ra, dec, alert_index, "deep_field", drawn, source)
    earlier: list[Detection] = []
    nights = _deep_nights(rng, visit)
    while len(earlier) < history:
        night = _series(rng, visit, ra, dec, next(nights), drawn.flux_at)
        earlier = [d for d in night if d.snr >= DETECTION_SIGMA] + earlier
    truth.history = earlier[len(earlier) - history :] if history else []
    return truth


def choose_population(rng: np.random.Generator, mix: dict[str, float]) -> str:
    names = list(mix)
    weights = np.array([mix[n] for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=weights / weights.sum()))]
