"""Catalogs, watchlists and watchmaps on disk: what ``alertsieve catalog add`` and ``watch add``
write, and what a job reads back at start-up.

A folder per name under the catalog folder (``catalogs/`` by default): ``meta.json`` (kind,
source, columns, match radius, HEALPix order) and ``index.parquet``, one row per HEALPix pixel
with every source of that pixel and of the 8 around it (``alertsieve.catalogs.healpix``). The
stream joins an alert's pixel to that table: one row, no aggregation, so the join stays stateless.
A watchmap's index is its set of pixels.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from alertsieve.catalogs.healpix import order_for_radius, pixel_size_arcsec, pixels, with_neighbours
from alertsieve.catalogs.names import CatalogError, catalog_dir

Kind = Literal["catalog", "watchlist", "watchmap"]
#: Columns a catalog's rows keep beside the user's: its position in degrees, named for the join.
RA, DEC, RADIUS = "_ra", "_dec", "_radius_arcsec"
#: The most pixels a watchmap keeps (8 bytes each, broadcast to every task).
MAP_PIXELS = 4_000_000


@dataclass(frozen=True)
class CatalogMeta:
    name: str
    kind: Kind
    source: str  # the file (or builtin) it was built from
    rows: int
    order: int  # HEALPix order of the index
    radius_arcsec: float | None  # a catalog's match radius; a watchlist's largest; none for a map
    columns: list[str]  # the user's columns, in the file's order (a catalog, a watchlist)
    memory_mb: float | None = (
        None  # the index in memory (Arrow): what a broadcast holds; older ones lack it
    )

    @property
    def family(self) -> str:
        """The SQL name filters use: ``xmatch.<name>`` for a catalog, ``watch.<name>`` for the others."""
        return "xmatch" if self.kind == "catalog" else "watch"


def load_meta(root: str | Path, name: str) -> CatalogMeta:
    path = catalog_dir(root, name) / "meta.json"
    if not path.exists():
        raise CatalogError(
            f"no catalog {name!r} in {root}; add it with: alertsieve catalog add {name} FILE --ra COL --dec COL"
        )
    return CatalogMeta(**json.loads(path.read_text()))


def list_catalogs(root: str | Path) -> list[CatalogMeta]:
    """Every catalog, watchlist and watchmap under ``root``, by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return [load_meta(root, p.name) for p in sorted(root.iterdir()) if (p / "meta.json").exists()]


def read_table(source: str):
    """A CSV or Parquet file (or ``builtin:hipparcos``, ``builtin:openngc``) as a pandas frame."""
    import pandas as pd

    if source.startswith("builtin:"):
        from alertsieve.catalogs.builtin import BUILTIN

        name = source.partition(":")[2]
        if name not in BUILTIN:
            raise CatalogError(
                f"{source}: no such builtin catalog; there are {', '.join(f'builtin:{n}' for n in BUILTIN)}"
            )
        return BUILTIN[name]()
    path = Path(source)
    if not path.exists():
        raise CatalogError(f"{source}: no such file")
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    if path.suffix.lower() in (".csv", ".txt"):
        return pd.read_csv(path)
    raise CatalogError(f"{source}: give a .csv or .parquet file")


def _column(table, name: str, what: str, source: str) -> np.ndarray:
    if name not in table.columns:
        raise CatalogError(
            f"{source}: no column {name!r} for {what}; its columns are {', '.join(map(str, table.columns))}"
        )
    return np.asarray(table[name], dtype=float)


def add_catalog(
    root: str | Path,
    name: str,
    source: str,
    ra: str,
    dec: str,
    radius_arcsec: float,
    kind: Kind = "catalog",
    radius_column: str | None = None,
) -> CatalogMeta:
    """Index ``source`` as catalog (or watchlist) ``name``: positions in degrees in columns
    ``ra``, ``dec``; a watchlist's per-row radius (arcsec) in ``radius_column``. Rows without a
    finite position are refused, with their count, rather than silently dropped."""
    import pyarrow as pa

    catalog_dir(root, name)  # a bad name fails before the file is read
    table = read_table(source)
    ra_deg, dec_deg = _column(table, ra, "--ra", source), _column(table, dec, "--dec", source)
    bad = ~(np.isfinite(ra_deg) & np.isfinite(dec_deg) & (np.abs(dec_deg) <= 90))
    if bad.any():
        raise CatalogError(
            f"{source}: {int(bad.sum())} of {len(table)} rows have no finite position in {ra}/{dec} (first: row {int(np.argmax(bad))}); drop or fix them"
        )
    radii = (
        _column(table, radius_column, "--radius-column", source)
        if radius_column
        else np.full(len(table), float(radius_arcsec))
    )
    if not (np.isfinite(radii) & (radii > 0)).all():
        raise CatalogError(f"{source}: match radii must be positive numbers of arcsec")
    order = order_for_radius(float(radii.max()))
    user = table.rename(columns=str)
    clash = [c for c in user.columns if c in (RA, DEC, RADIUS, "distance_arcsec")]
    if clash:
        raise CatalogError(
            f"{source}: column(s) {clash} are names the crossmatch sets; rename them"
        )
    rows = pa.Table.from_pandas(user, preserve_index=False)
    rows = rows.append_column(RA, pa.array(ra_deg % 360.0)).append_column(DEC, pa.array(dec_deg))
    if kind == "watchlist":
        rows = rows.append_column(RADIUS, pa.array(radii))
    index = _by_pixel(rows, pixels(ra_deg, dec_deg, order), order)
    meta = CatalogMeta(
        name=name,
        kind=kind,
        source=str(source),
        rows=len(table),
        order=order,
        radius_arcsec=float(radii.max()),
        columns=list(user.columns),
    )
    return _write(root, meta, index)


def _by_pixel(rows, own: np.ndarray, order: int):
    """One row per pixel: the sources of the pixel and of its neighbours (``sources``)."""
    import pyarrow as pa

    around = with_neighbours(own, order)  # (n, 9)
    source = np.repeat(np.arange(len(own)), around.shape[1])
    pix = around.ravel()
    keep = pix >= 0
    pix, source = pix[keep], source[keep]
    order_ = np.argsort(pix, kind="stable")
    pix, source = pix[order_], source[order_]
    starts = np.flatnonzero(np.r_[True, pix[1:] != pix[:-1]])
    offsets = pa.array(np.r_[starts, len(pix)].astype(np.int32))
    taken = rows.take(pa.array(source)).combine_chunks()
    structs = pa.StructArray.from_arrays(
        [c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in taken.columns],
        names=rows.column_names,
    )
    return pa.table(
        {"pix": pa.array(pix[starts]), "sources": pa.ListArray.from_arrays(offsets, structs)}
    )


def add_watchmap(root: str | Path, name: str, source: str, order: int | None = None) -> CatalogMeta:
    """A sky region as watchmap ``name``: a MOC FITS file (MOC 2.0 ranges or MOC 1.x UNIQ cells)
    or a CSV of nested HEALPix pixels (column ``ipix``) at ``order``. Stored as pixels of one
    order, so an alert's test is one equi-join: the map's deepest order, at most 12 (~52 arcsec)
    and shallower while that would take more than ``MAP_PIXELS`` pixels; coarser cells are cut
    into their children there, finer ones grow to their parent (the map then covers up to a
    pixel more at its edge)."""
    import pyarrow as pa

    catalog_dir(root, name)
    ranges, deepest = _map_ranges(source, order)
    deepest = min(deepest, 12)
    while deepest > 0 and _count(ranges, deepest) > MAP_PIXELS:
        deepest -= 1
    shift = 2 * (MOC_ORDER - deepest)
    pix = np.unique(
        np.concatenate(
            [np.arange(s >> shift, ((e - 1) >> shift) + 1, dtype=np.int64) for s, e in ranges]
        )
    )
    meta = CatalogMeta(
        name=name,
        kind="watchmap",
        source=str(source),
        rows=len(pix),
        order=deepest,
        radius_arcsec=None,
        columns=[],
    )
    return _write(root, meta, pa.table({"pix": pa.array(pix)}))


#: The order of a MOC's ranges (MOC 2.0): every cell is a range of pixels at order 29.
MOC_ORDER = 29


def _count(ranges: np.ndarray, order: int) -> int:
    shift = 2 * (MOC_ORDER - order)
    return int((((ranges[:, 1] - 1) >> shift) - (ranges[:, 0] >> shift) + 1).sum())


def _map_ranges(source: str, order: int | None) -> tuple[np.ndarray, int]:
    """The region as [start, end) ranges of order-29 pixels, and its deepest order."""
    import pandas as pd

    path = Path(source)
    if not path.exists():
        raise CatalogError(f"{source}: no such file")
    if path.suffix.lower() in (".fits", ".fit"):
        from astropy.io import fits

        with fits.open(path) as hdus:
            table, header = hdus[1].data, hdus[1].header
            names = [c.upper() for c in table.columns.names]
            if "RANGE" in names:  # MOC 2.0: start, end, start, end... at order 29
                return np.asarray(table.field(0), dtype=np.int64).reshape(-1, 2), int(
                    header.get("MOCORD_S", MOC_ORDER)
                )
            if "UNIQ" not in names:
                raise CatalogError(
                    f"{source}: not a MOC (a binary table with a RANGE or UNIQ column)"
                )
            uniq = np.asarray(table.field(names.index("UNIQ")), dtype=np.int64)
        orders = (np.floor(np.log2(uniq / 4) / 2)).astype(np.int64)
        return _cells_to_ranges(uniq - 4 * (np.int64(4) ** orders), orders), int(orders.max())
    if order is None:
        raise CatalogError(f"{source}: a CSV of pixels needs its HEALPix order (--order N)")
    table = pd.read_csv(path)
    if "ipix" not in table.columns:
        raise CatalogError(
            f"{source}: a CSV of pixels needs a column 'ipix' (nested indices at order {order})"
        )
    ipix = np.asarray(table["ipix"], dtype=np.int64)
    return _cells_to_ranges(ipix, np.full(len(ipix), order, dtype=np.int64)), int(order)


def _cells_to_ranges(ipix: np.ndarray, orders: np.ndarray) -> np.ndarray:
    shift = 2 * (MOC_ORDER - orders)
    return np.stack([ipix << shift, (ipix + 1) << shift], axis=1)


def _write(root: str | Path, meta: CatalogMeta, index) -> CatalogMeta:
    """The catalog's folder, its index and its meta (with the index's size in memory)."""
    import pyarrow.parquet as pq

    folder = catalog_dir(root, meta.name)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pq.write_table(index, folder / "index.parquet")
    meta = replace(meta, memory_mb=round(index.nbytes / 2**20, 1))
    (folder / "meta.json").write_text(json.dumps(asdict(meta), indent=1))
    return meta


def describe(meta: CatalogMeta) -> str:
    """One line per catalog for ``alertsieve catalog list``."""
    label = "largest radius" if meta.kind == "watchlist" else "radius"
    radius = f", {label} {meta.radius_arcsec:g} arcsec" if meta.radius_arcsec else ""
    return (
        f"{meta.family}.{meta.name}: {meta.kind} of {meta.rows:,} {'pixels' if meta.kind == 'watchmap' else 'rows'}"
        f" from {meta.source}{radius}; HEALPix order {meta.order} ({pixel_size_arcsec(meta.order):.0f} arcsec pixels)"
        + (f"; {meta.memory_mb:,.0f} MB in memory" if meta.memory_mb else "")
    )
