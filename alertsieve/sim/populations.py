"""The science behind simulated alerts: who is on the sky and how their light curves behave.

Pure logic, no schema and no I/O: each population turns a random generator and a visit into an
``AlertTruth`` (the current detection, its history, forced photometry, reliability). The mix is
chosen so that every contributed filter has a few percent of alerts to find.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

BANDS = "ugrizy"
#: AB magnitude of 1 nJy: m = 31.4 - 2.5 log10(flux / nJy).
ZERO_POINT = 31.4
#: Single-visit 5-sigma depths (LSST science requirements, approximate).
DEPTH = {"u": 23.9, "g": 25.0, "r": 24.7, "i": 24.0, "z": 23.3, "y": 22.1}
#: Radius of the LSST field of view (degrees).
FIELD_RADIUS = 1.75
#: Science CCDs in the LSST camera: producers split a visit by detector, as the real system does.
DETECTORS = 189
SECONDS_PER_DAY = 86400.0

DEFAULT_MIX: dict[str, float] = {
    "bright": 0.03,
    "rising": 0.03,
    "bogus": 0.05,
    "variable": 0.04,
    "solar_system": 0.03,
    "new": 0.04,
    "ordinary": 0.78,
}


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


def make_visit(seed: int, index: int, start_mjd: float = 61000.2, cadence_s: float = 39.0) -> Visit:
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
    err = flux_error(flux, band)
    return Detection(
        mjd=mjd,
        band=band,
        flux=float(flux + rng.normal(0, err)),
        flux_err=float(err),
        ra=float(ra + rng.normal(0, 1e-5)),
        dec=float(dec + rng.normal(0, 1e-5)),
        visit_id=visit.visit_id - int((visit.mjd - mjd) * 800) - 1,
        detector=int(rng.integers(0, DETECTORS)),
        source_id=_random_id(rng),
    )


def _past_epochs(rng: np.random.Generator, visit: Visit, n: int, span_days: float) -> np.ndarray:
    return np.sort(visit.mjd - rng.uniform(0.5, span_days, size=n))


def _series(
    rng: np.random.Generator,
    visit: Visit,
    ra: float,
    dec: float,
    epochs: np.ndarray,
    flux_at: Callable[[float], float],
) -> list[Detection]:
    bands = rng.choice(list(BANDS[1:]), size=len(epochs))
    return [
        _detection(rng, visit, ra, dec, float(t), str(b), flux_at(float(t)))
        for t, b in zip(epochs, bands, strict=True)
    ]


def simulate_truth(
    rng: np.random.Generator,
    visit: Visit,
    alert_index: int,
    population: str,
    max_history: int,
    max_forced: int,
) -> AlertTruth:
    """One alert's ground truth for ``population`` at ``visit``."""
    ra, dec = _position(rng, visit)
    now = visit.mjd
    hist_n = int(rng.integers(0, max_history + 1)) if max_history else 0
    forced_n = int(rng.integers(0, max_forced + 1)) if max_forced else 0
    reliability = float(rng.beta(8, 1.5))
    extendedness = float(rng.uniform(0, 1))
    template_mag = float(rng.uniform(19, 24))
    object_id: int | None = _random_id(rng)
    ss_object_id = None
    is_dipole = trailed = False
    flux_at: Callable[[float], float]

    if population == "bright":
        base = mag_to_flux(rng.uniform(15.0, 18.0))
        flux_at = lambda t: base * (1 + 0.05 * math.sin(t))  # noqa: E731
        reliability = float(rng.uniform(0.93, 1.0))
        span = 365.0
    elif population == "rising":
        slope = rng.uniform(0.2, 0.6)  # mag/day, brightening towards now
        peak = rng.uniform(18.5, 20.5)
        flux_at = lambda t: mag_to_flux(peak + slope * (now - t))  # noqa: E731
        hist_n = max(3, min(hist_n, 8)) if max_history else 0
        reliability = float(rng.uniform(0.8, 1.0))
        span = 6.0
    elif population == "bogus":
        band_depth = DEPTH[visit.band]
        fl = mag_to_flux(rng.uniform(band_depth - 0.3, band_depth + 0.4)) * rng.choice([-1.0, 1.0])
        flux_at = lambda t: fl  # noqa: E731
        reliability = float(rng.uniform(0.0, 0.25))
        hist_n = forced_n = 0
        is_dipole = bool(rng.uniform() < 0.4)
        span = 30.0
    elif population == "variable":
        period = float(np.exp(rng.uniform(np.log(0.3), np.log(20.0))))
        mean = mag_to_flux(rng.uniform(17.0, 20.0))
        amplitude = mean * rng.uniform(0.3, 0.7)
        phase = rng.uniform(0, 2 * math.pi)
        flux_at = lambda t: amplitude * math.sin(2 * math.pi * t / period + phase)  # noqa: E731
        hist_n = max(hist_n, min(max_history, 15))
        extendedness = float(rng.uniform(0, 0.1))
        template_mag = -2.5 * math.log10(mean) + ZERO_POINT
        span = 365.0
    elif population == "solar_system":
        fl = mag_to_flux(rng.uniform(19.0, 22.5))
        flux_at = lambda t: fl  # noqa: E731
        object_id = None
        ss_object_id = _random_id(rng)
        hist_n = forced_n = 0
        trailed = bool(rng.uniform() < 0.3)
        extendedness = float(rng.uniform(0, 0.2))
        span = 1.0
    elif population == "new":
        fl = mag_to_flux(rng.uniform(19.5, 22.5))
        flux_at = lambda t: fl  # noqa: E731
        hist_n = forced_n = 0
        reliability = float(rng.uniform(0.7, 1.0))
        span = 1.0
    elif population == "ordinary":
        fl = mag_to_flux(rng.uniform(22.0, 24.3)) * rng.choice([-1.0, 1.0], p=[0.3, 0.7])
        flux_at = lambda t: fl * (1 + 0.2 * math.sin(t / 3.0))  # noqa: E731
        span = 365.0
    else:
        raise ValueError(f"unknown population {population!r}; known: {', '.join(DEFAULT_MIX)}")

    history = _series(rng, visit, ra, dec, _past_epochs(rng, visit, hist_n, span), flux_at)
    forced = _series(
        rng, visit, ra, dec, _past_epochs(rng, visit, forced_n, min(span, 30.0)), flux_at
    )
    source = _detection(rng, visit, ra, dec, now, visit.band, flux_at(now))
    source.visit_id = visit.visit_id
    source.detector = alert_index % DETECTORS
    source.source_id = (visit.visit_id << 20) | alert_index
    template_flux = 0.0 if population == "solar_system" else mag_to_flux(template_mag)
    return AlertTruth(
        population=population,
        source=source,
        object_id=object_id,
        reliability=reliability,
        template_flux=template_flux,
        extendedness=extendedness,
        history=history,
        forced=forced,
        ss_object_id=ss_object_id,
        is_dipole=is_dipole,
        trailed=trailed,
    )


def choose_population(rng: np.random.Generator, mix: dict[str, float]) -> str:
    names = list(mix)
    weights = np.array([mix[n] for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=weights / weights.sum()))]
