"""What filters see beside the alert: ``xmatch.<catalog>`` and ``watch.<list or map>``.

For each catalog a job's filters name, the alert's HEALPix pixel at the catalog's order is joined
to the catalog's index (one row per pixel, its sources and its neighbours'), broadcast to every
task: a stateless stream-static join, so micro-batches and Real-Time Mode both run it. The exact
angular distance then picks the nearest source within the radius; null if none:

- ``xmatch.NAME``: ``distance_arcsec`` and the catalog's columns, of the nearest source within
  the catalog's radius;
- ``watch.NAME`` of a watchlist: ``distance_arcsec``, ``radius_arcsec`` and the list's columns
  of the nearest entry within its own radius;
- ``watch.NAME`` of a watchmap: true when the alert lies in the region (false, never null, when
  it does not).

A job whose filters name no catalog joins nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from alertsieve.catalogs.healpix import distance_arcsec_sql, with_pixel
from alertsieve.catalogs.store import (
    DEC,
    RA,
    RADIUS,
    CatalogError,
    CatalogMeta,
    catalog_dir,
    list_catalogs,
)

FAMILIES = ("xmatch", "watch")


@dataclass(frozen=True)
class CatalogUse:
    """A catalog a filter names in its SQL: who reads it (for errors: ``filter 'f' (f.py)``), its
    family (``xmatch`` or ``watch``) and its name."""

    reader: str
    family: str
    name: str


@dataclass(frozen=True)
class Context:
    """The catalogs a job's filters name, and where an alert's position is in the view."""

    root: str
    catalogs: tuple[CatalogMeta, ...]
    ra: str  # the view path of the detection's position: diaSource.ra, candidate.ra
    dec: str

    def index(self, spark, meta: CatalogMeta):
        return spark.read.parquet(str(catalog_dir(self.root, meta.name) / "index.parquet"))

    @property
    def paths(self) -> list[str]:
        """The view fields the join reads."""
        return [self.ra, self.dec] if self.catalogs else []


#: How many times its in-memory size a broadcast catalog needs of the driver's heap (the rows
#: collected, the hashed relation built from them, its serialised copy). Measured with `alertsieve
#: bench xmatch` on a 3 GB driver (2.6 GB of heap): 10^6 sources at 2 arcsec, 488 MB in memory,
#: joined alone and ran out of memory after a 49 MB catalog had been broadcast; 10^7, 4.9 GB, never.
BROADCAST_FACTOR = 5


def load_context(
    root: str | Path, uses: Iterable[CatalogUse], detection: str, heap_mb: float | None = None
) -> Context:
    """The catalogs the filters name (``uses``, in the filters' order), from the catalog folder
    ``root``: a name that is not there, or is there as another kind, fails here naming the filter
    and the fix; so do catalogs that would not fit a driver of ``heap_mb`` once broadcast
    (``check_broadcast``)."""
    known = {m.name: m for m in list_catalogs(root)}
    chosen: dict[str, CatalogMeta] = {}
    for use in uses:
        family, name = use.family, use.name
        meta = known.get(name)
        if meta is None:
            have = ", ".join(f"{m.family}.{m.name}" for m in known.values()) or "none"
            add = "catalog add" if family == "xmatch" else "watch add"
            raise CatalogError(
                f"{use.reader} reads {family}.{name}, not in the catalog folder"
                f" {root} (there: {have}); add it with: alertsieve {add} {name} FILE ..., or set catalog_dir"
            )
        if meta.family != family:
            raise CatalogError(
                f"{use.reader} reads {family}.{name}, but {name} is a {meta.kind}:"
                f" write {meta.family}.{name}"
            )
        chosen[name] = meta
    metas = tuple(chosen[n] for n in sorted(chosen))
    if heap_mb is not None:
        check_broadcast(metas, heap_mb)
    return Context(str(root), metas, f"{detection}.ra", f"{detection}.dec")


def check_broadcast(metas: tuple[CatalogMeta, ...], heap_mb: float) -> None:
    """Refuse, before any alert is read, catalogs whose broadcast would not fit the driver: Spark
    would fail the first batch with "Not enough memory to build and broadcast the table"."""
    sized = [m for m in metas if m.memory_mb]
    need = BROADCAST_FACTOR * sum(m.memory_mb for m in sized)
    if need > heap_mb:
        each = ", ".join(f"{m.family}.{m.name} {m.memory_mb:,.0f} MB" for m in sized)
        raise CatalogError(
            f"the catalogs the filters join take {need / BROADCAST_FACTOR:,.0f} MB in memory ({each}) and a"
            f" broadcast needs about {BROADCAST_FACTOR} times that, {need:,.0f} MB; the driver's heap is"
            f" {heap_mb:,.0f} MB: give the driver more memory (spark.driver.memory, spark-submit"
            " --driver-memory), or index fewer rows or columns, or a smaller radius (alertsieve catalog add)"
        )


def _match_sql(meta: CatalogMeta, sources: str, ra: str, dec: str) -> str:
    """The nearest source within the radius: ``array_min`` over structs led by the distance."""
    distance = distance_arcsec_sql(ra, dec, f"s.{RA}", f"s.{DEC}")
    fields = [f"'distance_arcsec', {distance}"]
    if meta.kind == "watchlist":
        fields.append(f"'radius_arcsec', s.{RADIUS}")
    fields += [f"'{c}', s.`{c}`" for c in meta.columns]
    within = "m.radius_arcsec" if meta.kind == "watchlist" else f"{meta.radius_arcsec!r}D"
    return f"array_min(filter(transform({sources}, s -> named_struct({', '.join(fields)})), m -> m.distance_arcsec <= {within}))"


def with_context(frame, context: Context | None, spark=None):
    """``frame`` with ``xmatch`` and ``watch`` struct columns for the catalogs of ``context``."""
    from pyspark.sql import functions as F

    if context is None or not context.catalogs:
        return frame
    spark = spark or frame.sparkSession
    results: dict[str, dict[str, object]] = {family: {} for family in FAMILIES}
    helpers = []
    for meta in context.catalogs:
        pix, found = f"_pix_{meta.name}", f"_found_{meta.name}"
        index = context.index(spark, meta).withColumnRenamed("pix", pix)
        if meta.kind == "watchmap":
            index = index.select(pix, F.lit(True).alias(found))
            result = F.coalesce(F.col(found), F.lit(False))
        else:
            index = index.withColumnRenamed("sources", found)
            result = F.expr(_match_sql(meta, found, context.ra, context.dec))
        frame = with_pixel(frame, context.ra, context.dec, meta.order, pix)
        frame = frame.join(F.broadcast(index), on=pix, how="left")
        results[meta.family][meta.name] = result
        helpers += [pix, found]
    out = frame.select(
        "*",
        *[
            F.struct(*[c.alias(n) for n, c in cols.items()]).alias(family)
            for family, cols in results.items()
            if cols
        ],
    )
    return out.drop(*helpers)


def context_types(frame, context: Context | None) -> dict:
    """The types ``xmatch`` and ``watch`` take when every catalog in the folder is joined to
    ``frame``: what Spark's analysis of a filter needs to resolve ``xmatch.NAME.column`` without
    joining (start-up checks stand them in as typed nulls)."""
    if context is None:
        return {}
    every = Context(context.root, tuple(list_catalogs(context.root)), context.ra, context.dec)
    if not every.catalogs or context.ra.split(".")[0] not in frame.columns:
        return {}
    empty = with_context(frame.limit(0), every, frame.sparkSession)
    return {family: empty.schema[family].dataType for family in FAMILIES if family in empty.columns}
