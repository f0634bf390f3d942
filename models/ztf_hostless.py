"""ELEPHANT's hostless statistics of ZTF alerts, as the Fink broker computes them (Pessi et al.
2024, arXiv:2404.18165): whether the centre of the science stamp, and of the template stamp,
looks like structure or like shuffled noise. A hostless transient is a clear source in the
science stamp over a template with nothing under it.

Read as ``scores.hostless.kstest_science`` and ``scores.hostless.kstest_template``, each in
0..1, -99 where the stamps do not make a hostless candidate (the package's value), -1 where
the statistic is degenerate (fewer than 3 distinct distances, the package's value), null where the
gate did not pass (not examined) or a stamp is missing or not a gzipped FITS file.

Origin: ``fink-science`` 7.4.0 (PyPI, Apache-2.0, AstroLab Software), its method
``fink_science.ztf.hostless_detection.run_pipeline.HostLessExtragalactic.process_candidate_fink``
and the settings of its ``config.json`` (which the PyPI wheel lacks: carried here,
``files/ztf_hostless_config.json``, byte for byte the repository's at the 7.4.0 tag; see
``files/SOURCES.md``). The computation is written here in numpy; the suite checks both
statistics against the package's method on real ZTF alerts (``tests/test_hostless.py``).

What it computes, per alert, as the package does:

- Both stamps (63x63, else -99) are sigma-clipped (3 sigma, up to 10 rounds, astropy's
  ``sigma_clip``; NaN pixels count as clipped). The clipped stamps are clipped once more, and
  the alert is a hostless candidate when one stamp has more than 5 pixels clipped and the other
  fewer than 3; failing that, the same test on the central 14x14 pixels of the once-clipped
  stamps, clipped again. Not a candidate: -99 for both.
- Each stamp's clipped pixels are replaced by Gaussian noise of the other pixels' median and
  standard deviation. Its central 15x15 pixels give a power spectrum averaged in rings of
  radius 1..7 (times each ring's area); so do the central 15x15 pixels of 200 copies of the
  filled stamp with every pixel shuffled. The statistic is the two-sample Kolmogorov-Smirnov
  distance between the 1-D Wasserstein distances of the real spectrum to the 200 shuffled ones
  and those of the shuffled ones to each other (19,900 pairs): near 0, the centre is as
  structured as noise; near 1, it holds a source.
- The noise and the shuffles come from numpy's legacy generator seeded with 1337. Fink seeds it
  once per worker process (at import) and never again, so Fink's value for an alert depends on
  how many candidates its worker met before it; here each alert gets a generator freshly seeded
  with 1337: the value Fink gives an alert that is the first candidate its worker scores, the
  same on every run. The seed matters: over 10 seeds, the 20 real candidates of the suite's
  alerts move by 0.18 (median; up to 0.34) in ``kstest_science``, 0.12 (up to 0.28) in
  ``kstest_template``. A threshold on either is a threshold on a noisy quantity, in Fink too.

The gate is Fink's pre-cuts (its ``processor.run_potential_hostless``) that the view can
express, with the config's numbers: the alert is within 45 days of the start of its
detection history (``abs(candidate.jd - candidate.jdstarthist)``), its magnitude is 19.5 or
brighter, and its light curve (``prv_candidates`` then the alert) holds at least 3 magnitudes
(detections: upper limits have none; null and NaN are not counted, as Fink counts them).
Fink also requires one of: a SuperNNova or random-forest probability of 0.5 or more (SN Ia vs
other SNe, SN vs all, SN Ia, kilonova), a Fink class or a TNS class among the config's
(extragalactic ones: SN and kilonova candidates, AGN, QSO, ...); and that the alert is not a
known solar-system object (``roid`` 3). Those classifiers and cross-matches are not in this
view: the gate leaves them out, so it examines more alerts than Fink does, and a filter wanting
Fink's selection adds conditions of its own. Of the suite's 144 real ZTF alerts with stamps,
3 pass the gate (none of them a candidate: most have too short a light curve).

The stamps arrive as the alert carries them, gzipped FITS bytes, and are decoded here (gzip
then astropy's FITS reader, as the package does: big-endian float32, NaN kept) rather than in
the view: only the alerts the gate passes need pixels, so no other alert pays for decoding,
and no decoded image travels through Spark. Decoding is the small part: per alert, on this
project's 2-core machine, ~0.9 ms for both stamps, ~4 ms for the stamps' test, and ~70 ms
more for a candidate's statistics (the package's own code: ~0.9 s), most of it the 400
shuffles' random numbers and the 19,900 pairwise distances per stamp.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from alertsieve.filtering.scores.light_curves import light_curve
from alertsieve.filtering.scores.model import Model

if TYPE_CHECKING:  # numpy is the job's: a subscriber's install imports this without it
    import numpy as np

FILES = Path(__file__).resolve().parent / "files"
CONFIG = FILES / "ztf_hostless_config.json"
#: The package's value for an alert whose stamps are not those of a hostless candidate.
NOT_CANDIDATE = -99.0
#: Its value where the distances are too uniform to compare (fewer than 3 distinct values).
DEGENERATE = -1.0
#: The power-spectrum analysis' settings: fixed in the package's code, not in its config.
SHUFFLES, CENTRE, SEED = 200, 15, 1337


def _gate(config: dict) -> str:
    """SQL of the pre-cuts Fink applies before the statistics that the view can express."""
    detections = f"filter({light_curve('ztf', 'magpsf')}, m -> m IS NOT NULL AND NOT isnan(m))"
    return (
        f"abs(candidate.jd - candidate.jdstarthist) <= {config['cutout_timeframe']}"
        f" AND candidate.magpsf <= {config['cutout_magnitude']}"
        f" AND size({detections}) >= {config['minimum_number_of_alerts']}"
    )


def decode(stamp: bytes) -> np.ndarray | None:
    """A ZTF stamp's pixels: the primary image of the gzipped FITS file, as astropy reads it."""

    from astropy.io import fits

    with fits.open(io.BytesIO(gzip.decompress(stamp)), memmap=False) as hdus:
        return hdus[0].data


#: ``rings``' answers, made on first use in each Python worker (numpy is the job's alone).
_RINGS: dict[int, tuple] = {}


def rings(size: int = CENTRE) -> tuple[list[np.ndarray], np.ndarray]:
    """The flat indices of a size x size spectrum's frequencies in rings of radius 1, 2, ...
    (radius within half a unit), each in increasing order, and each ring's area (between radii
    r - 1/2 and r + 1/2)."""
    if size not in _RINGS:
        _RINGS[size] = _rings(size)
    return _RINGS[size]


def _rings(size: int) -> tuple[list[np.ndarray], np.ndarray]:
    import numpy as np

    k = np.fft.fftfreq(size) * size
    radius = np.sqrt(k[np.newaxis, :] ** 2 + k[:, np.newaxis] ** 2).ravel()
    ring = np.floor(radius + 0.5)
    edges = np.arange(0.5, size // 2 + 1, 1.0)
    areas = np.pi * (edges[1:] ** 2 - edges[:-1] ** 2)
    return [np.flatnonzero(ring == r) for r in range(1, size // 2 + 1)], areas


def spectra(images: np.ndarray) -> np.ndarray:
    """Ring-averaged power spectra (n, 7) of n square images (n, 15, 15), times the rings' areas.
    Each ring's powers are added one by one in index order, so the sums are those of a
    histogram filled point by point."""
    import numpy as np

    indices, areas = rings()
    power = (np.abs(np.fft.fft2(images)) ** 2).reshape(len(images), -1)
    out = np.empty((len(images), len(indices)))
    for r, pixels in enumerate(indices):
        total = power[:, pixels[0]].copy()
        for p in pixels[1:]:
            total += power[:, p]
        out[:, r] = total / len(pixels)
    return out * areas


def wasserstein(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The 1-D Wasserstein distance between the values of each row of u and the same row of v:
    the area between their empirical distribution functions, step by step over the pooled
    values. Where two pooled values tie, the step between them is 0 wide, so the running
    counts there need not count the tie's later members."""
    import numpy as np

    both = np.concatenate([u, v], axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    pooled = np.take_along_axis(both, order, axis=1)
    from_u = np.cumsum(order < u.shape[1], axis=1)[:, :-1]
    from_v = np.arange(1, both.shape[1]) - from_u
    gaps = np.abs(from_u / u.shape[1] - from_v / v.shape[1])
    return (gaps * np.diff(pooled, axis=1)).sum(axis=1)


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical
    distribution functions of a and b."""
    import numpy as np

    a, b = np.sort(a), np.sort(b)
    pooled = np.concatenate([a, b])
    gap = np.searchsorted(a, pooled, side="right") / a.size
    gap -= np.searchsorted(b, pooled, side="right") / b.size
    return float(np.max(np.abs(gap)))


def _noise_filled(image: np.ndarray, clipped: np.ndarray, rng) -> np.ndarray:
    """The image with its clipped pixels drawn from a Gaussian of the others' median and spread."""
    import numpy as np

    kept = image[~clipped]
    noise = rng.normal(np.median(kept), np.std(kept), image.shape)
    return np.where(clipped, noise, image.astype(np.float64))


def structure(image: np.ndarray, rng) -> float:
    """How unlike its own shuffles the centre of a (noise-filled) stamp is (see the module)."""
    import numpy as np

    side = image.shape[0]
    start = (side - CENTRE) // 2
    centre = np.ravel_multi_index(
        np.meshgrid(*[np.arange(start, start + CENTRE)] * 2, indexing="ij"), image.shape
    )
    flat = image.ravel()
    shuffled = np.stack([flat[rng.permutation(flat.size)[centre]] for _ in range(SHUFFLES)])
    real = spectra(image[np.newaxis, start : start + CENTRE, start : start + CENTRE])
    mixed = spectra(shuffled)
    to_real = wasserstein(mixed, np.repeat(real, SHUFFLES, axis=0))
    first, second = np.tril_indices(SHUFFLES, -1)
    between = wasserstein(mixed[first], mixed[second])
    if np.unique(to_real).size < 3 or np.unique(between).size < 3:
        return DEGENERATE
    return ks_distance(to_real, between)


def _lopsided(science, template, limits: dict) -> bool:
    """One stamp much clipped (a source) while the other is nearly untouched."""
    import numpy as np

    s, t = np.ma.count_masked(science), np.ma.count_masked(template)
    many, few = limits["max_number_of_pixels_clipped"], limits["min_number_of_pixels_clipped"]
    return (s > many and t < few) or (t > many and s < few)


def is_candidate(science, template, config: dict) -> bool:
    """The stamps' test (on the once-clipped stamps): lopsided clipping over the whole stamps,
    or over their centres."""
    from astropy.stats import sigma_clip

    clipping, limits = config["sigma_clipping_kwargs"], config["hostless_detection_with_clipping"]
    if _lopsided(sigma_clip(science, **clipping), sigma_clip(template, **clipping), limits):
        return True
    lo = int(science.shape[0] / 2 - limits["crop_radius"])
    hi = lo + 2 * limits["crop_radius"]
    return _lopsided(
        sigma_clip(science[lo:hi, lo:hi], **clipping),
        sigma_clip(template[lo:hi, lo:hi], **clipping),
        limits,
    )


def hostless(science: np.ndarray, template: np.ndarray, config: dict) -> tuple[float, float]:
    """(science, template) statistics of one alert's decoded stamps, or -99 for both."""
    import numpy as np
    from astropy.stats import sigma_clip

    shape = tuple(config["image_shape"])
    if science.shape != shape or template.shape != shape:
        return NOT_CANDIDATE, NOT_CANDIDATE
    clipping = config["sigma_clipping_kwargs"]
    clipped = [sigma_clip(science, **clipping), sigma_clip(template, **clipping)]
    if not is_candidate(*clipped, config):
        return NOT_CANDIDATE, NOT_CANDIDATE
    rng = np.random.RandomState(SEED)
    filled = [
        _noise_filled(image, np.ma.getmaskarray(c), rng)
        for image, c in zip((science, template), clipped, strict=True)
    ]
    return structure(filled[0], rng), structure(filled[1], rng)


def load(files, runtime):
    """The package's settings."""
    return json.loads(Path(files["config"]).read_text())


def predict(config, batch):
    """Both statistics of each alert of an Arrow batch of stamps (gzipped FITS bytes)."""
    import warnings

    import numpy as np
    from astropy.utils.exceptions import AstropyUserWarning

    science = batch.column("science").to_pylist()
    template = batch.column("template").to_pylist()
    out = np.full((2, len(science)), np.nan)
    with warnings.catch_warnings():
        # said per alert, as the package keeps quiet: ZTF's SIMPLE card is not quite standard,
        # NaN pixels are clipped, a stamp all clipped has no median (its statistic is then -1)
        warnings.simplefilter("ignore", AstropyUserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, (s, t) in enumerate(zip(science, template, strict=True)):
            if s is None or t is None:
                continue
            try:
                images = decode(s), decode(t)
            except (OSError, EOFError, ValueError, zlib.error):  # not gzip, or not FITS
                continue
            if images[0] is not None and images[1] is not None:
                out[:, i] = hostless(*images, config)
    return {"kstest_science": out[0], "kstest_template": out[1]}


MODEL = Model(
    name="hostless",
    survey="ztf",
    description=__doc__,
    source=(
        "fink-science 7.4.0 (PyPI, Apache-2.0): fink_science.ztf.hostless_detection"
        " (HostLessExtragalactic.process_candidate_fink), settings of its config.json at the"
        " 7.4.0 tag; ELEPHANT, arXiv:2404.18165"
    ),
    columns={"science": "cutoutScience.stampData", "template": "cutoutTemplate.stampData"},
    files={"config": CONFIG},
    outputs=("kstest_science", "kstest_template"),
    batch="arrow",
    gate=_gate(json.loads(CONFIG.read_text())),
    load=load,
    predict=predict,
)
