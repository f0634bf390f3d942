"""HEALPix in Spark SQL, so a crossmatch stays inside the JVM (no UDF: Real-Time Mode runs it).

An alert's pixel is computed by :func:`pixel_sql`, the nested-scheme ``ang2pix`` of Gorski et al.
(2005, ApJ 622, 759, section 4) written as SQL arithmetic; catalogs are indexed in Python with
``cdshealpix`` (the CDS Rust implementation), and a test holds the two equal on random and edge
positions. The catalog side lists each source under its own pixel and the 8 around it, so an
alert needs only its own pixel: at an order whose pixels are wider than the match radius, every
source within the radius of the alert is filed under the alert's pixel.
"""

from __future__ import annotations

import math

import numpy as np

#: The deepest order used: pixels of ~1.6 arcsec, far below any useful match radius.
MAX_ORDER = 17

#: Pixels at least this many match radii wide (their mean size): HEALPix pixels are not squares
#: (their narrowest width is under half the mean near the poles and face corners), and a source
#: and an alert within the radius must still be in the same pixel or neighbouring ones.
WIDTH_IN_RADII = 4.0


def pixel_size_arcsec(order: int) -> float:
    """The mean pixel size (square root of its area) at ``order``."""
    return math.degrees(math.sqrt(4 * math.pi / (12 * 4**order))) * 3600


def order_for_radius(radius_arcsec: float) -> int:
    """The deepest order whose pixels are ``WIDTH_IN_RADII`` match radii wide: the fewest sources
    per pixel an alert compares itself with, while the 8 neighbours still hold the whole disc."""
    if not radius_arcsec > 0:
        raise ValueError(f"a match radius must be positive, not {radius_arcsec}")
    order = 0
    while order < MAX_ORDER and pixel_size_arcsec(order + 1) >= WIDTH_IN_RADII * radius_arcsec:
        order += 1
    return order


def pixels(ra_deg: np.ndarray, dec_deg: np.ndarray, order: int) -> np.ndarray:
    """Nested pixel indices of positions (degrees), by cdshealpix."""
    from astropy import units as u
    from cdshealpix.nested import lonlat_to_healpix

    return np.asarray(
        lonlat_to_healpix(np.asarray(ra_deg) * u.deg, np.asarray(dec_deg) * u.deg, order),
        dtype=np.int64,
    )


def with_neighbours(pix: np.ndarray, order: int) -> np.ndarray:
    """Each pixel and its (up to) 8 neighbours, as an (n, 9) array; -1 where a pixel has only 7."""
    from cdshealpix.nested import neighbours

    return np.asarray(neighbours(pix, order), dtype=np.int64)


def _interleave(ix: str, iy: str, order: int) -> str:
    """``xy2pix``: the bits of ix at even positions, of iy at odd ones."""
    terms = [
        f"shiftleft(({ix} >> {i}) & 1, {2 * i}) | shiftleft(({iy} >> {i}) & 1, {2 * i + 1})"
        for i in range(order)
    ]
    return "(" + " | ".join(terms) + ")" if terms else "0L"


def pixel_steps(ra: str, dec: str, order: int, out: str) -> list[dict[str, str]]:
    """The nested pixel (a long) of the position ``ra``, ``dec`` (SQL, degrees) at ``order``, as
    projections to apply in turn, the last naming the column ``out``; the others add underscored
    helpers (``{out}_z``...), to drop after.

    Equatorial zone (|z| <= 2/3) and polar caps as in the paper's equations (5)-(7); the face's
    local (ix, iy) are then interleaved bit by bit. In steps because each value is read many
    times: as one expression the generated Java passes the JVM's 64 KB method limit and Spark
    falls back to interpreting it. Null when the position is null or not finite."""
    nside, p = 1 << order, out
    finite = f"NOT (isnan({ra}) OR isnan({dec}) OR abs({ra}) = double('inf') OR abs({dec}) > 90)"
    first = {
        f"{p}_z": f"CASE WHEN {finite} THEN sin(radians({dec})) END",
        f"{p}_tt": f"pmod(radians({ra}) / (pi() / 2), 4.0D)",
        # sqrt(3 (1 - |z|)) from cos(dec), to keep precision near the poles
        f"{p}_tmp": f"{nside} * cos(radians({dec})) / sqrt((1D + abs(sin(radians({dec})))) / 3D)",
    }
    z, tt, tmp = f"{p}_z", f"{p}_tt", f"{p}_tmp"
    ntt = f"least(bigint(floor({tt})), 3L)"
    second = {
        f"{p}_eq": f"abs({z}) <= 2D / 3D",
        f"{p}_north": f"{z} >= 0",
        f"{p}_jp": f"bigint(floor({nside} * (0.5D + {tt}) - {nside} * {z} * 0.75D))",
        f"{p}_jm": f"bigint(floor({nside} * (0.5D + {tt}) + {nside} * {z} * 0.75D))",
        f"{p}_ntt": ntt,
        f"{p}_pjp": f"least(bigint(floor(({tt} - {ntt}) * {tmp})), {nside - 1}L)",
        f"{p}_pjm": f"least(bigint(floor((1D - ({tt} - {ntt})) * {tmp})), {nside - 1}L)",
    }
    eq, north, jp, jm = f"{p}_eq", f"{p}_north", f"{p}_jp", f"{p}_jm"
    pn, pjp, pjm = f"{p}_ntt", f"{p}_pjp", f"{p}_pjm"
    ifp, ifm = f"({jp} >> {order})", f"({jm} >> {order})"
    third = {
        f"{p}_face": (
            f"CASE WHEN {eq} THEN CASE WHEN {ifp} = {ifm} THEN ({ifp} | 4) WHEN {ifp} < {ifm} THEN {ifp}"
            f" ELSE {ifm} + 8 END WHEN {north} THEN {pn} ELSE {pn} + 8 END"
        ),
        f"{p}_ix": f"CASE WHEN {eq} THEN {jm} & {nside - 1} WHEN {north} THEN {nside - 1} - {pjm} ELSE {pjp} END",
        f"{p}_iy": f"CASE WHEN {eq} THEN {nside - 1} - ({jp} & {nside - 1}) WHEN {north} THEN {nside - 1} - {pjp} ELSE {pjm} END",
    }
    nest = (
        f"(shiftleft(bigint({p}_face), {2 * order}) | {_interleave(f'{p}_ix', f'{p}_iy', order)})"
    )
    return [first, second, third, {out: nest}]


def helper_columns(out: str) -> list[str]:
    """The helper columns :func:`pixel_steps` leaves beside ``out``."""
    return [
        f"{out}_{n}"
        for n in (
            "z",
            "tt",
            "tmp",
            "eq",
            "north",
            "jp",
            "jm",
            "ntt",
            "pjp",
            "pjm",
            "face",
            "ix",
            "iy",
        )
    ]


def with_pixel(frame, ra: str, dec: str, order: int, out: str):
    """``frame`` with the nested pixel of (``ra``, ``dec``) at ``order`` as column ``out``."""
    from pyspark.sql import functions as F

    for step in pixel_steps(ra, dec, order, out):
        frame = frame.select("*", *[F.expr(sql).alias(name) for name, sql in step.items()])
    return frame.drop(*helper_columns(out))


def distance_arcsec_sql(ra1: str, dec1: str, ra2: str, dec2: str) -> str:
    """The angular distance (arcsec) between two positions in degrees, by the haversine formula:
    accurate at the arcsecond separations a crossmatch compares (the law of cosines is not)."""
    h = (
        f"pow(sin(radians({dec2} - {dec1}) / 2), 2)"
        f" + cos(radians({dec1})) * cos(radians({dec2})) * pow(sin(radians({ra2} - {ra1}) / 2), 2)"
    )
    return f"degrees(2 * asin(least(1D, sqrt({h})))) * 3600D"
