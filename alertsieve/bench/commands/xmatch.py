"""What a catalog crossmatch costs per visit, by catalog size: `alertsieve bench xmatch`.

One simulated 10,000-alert visit (no cutouts: the join reads two numbers of each alert) is decoded
and filtered in Spark, as the job does, twice per catalog size: once with a filter naming the
catalog (``xmatch.NAME.distance_arcsec < R``: the broadcast join, the distance, the nearest) and
once with a filter that reads the same position without a catalog (the baseline, same run). The
catalogs are uniform over the sky (a real all-sky catalog's density varies; the join's cost is
that of the pixels an alert meets, and of broadcasting the whole index to every task).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from alertsieve.catalogs.store import add_catalog
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.prepare import prepare
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import rubin_decoder

log = logging.getLogger(__name__)


def _uniform_catalog(path: Path, rows: int, seed: int = 3) -> None:
    import pandas as pd

    rng = np.random.default_rng(seed)
    pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "ra": rng.uniform(0, 360, rows),
            "dec": np.degrees(np.arcsin(rng.uniform(-1, 1, rows))),
            "mag": rng.uniform(10, 21, rows).astype(np.float32),
        }
    ).to_parquet(path)


def _heap_mb(spark) -> float:
    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    spark._jvm.java.lang.System.gc()
    return (runtime.totalMemory() - runtime.freeMemory()) / 2**20


def _visit_seconds(spark, frame, repeats: int) -> tuple[float, int]:
    """(the best of ``repeats`` timed passes after a warm-up, matches): one aggregate over every alert."""
    from pyspark.sql import functions as F

    count = frame.agg(F.sum(F.col("m").cast("int")).alias("n"))
    matches = count.collect()[0]["n"] or 0  # warm-up: plans, broadcasts, compiles
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        count.collect()
        best = min(best, time.perf_counter() - start)
    return best, int(matches)


def bench_xmatch(
    sizes: tuple[int, ...] = (100_000, 1_000_000, 10_000_000),
    radius_arcsec: float = 2.0,
    alerts: int = 10_000,
    repeats: int = 3,
) -> dict:
    from alertsieve.alerts.schemas import load_rubin_schema
    from alertsieve.bench.place import bench_place
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    with bench_place("xmatch", kafka=False) as bench:
        spark, workdir = bench.spark, bench.workdir
        schema = load_rubin_schema("11.1")
        sim = AlertSimulator(SimulationConfig(schema_version="11.1", stamp_size=0, seed=5))
        messages = [schema.encode_framed(a) for a in sim.visit_alerts(0, count=alerts)]
        decoder = rubin_decoder(
            DecodeSettings(survey="rubin", topic="x", schema_versions=("11.1",))
        )
        raw = message_frame(spark, messages).cache()
        raw.count()

        def frame(sql: str):
            f = AlertFilter(name="m", sql=sql)
            prepared = prepare(spark, [f], decoder, catalog_dir=workdir / "catalogs")
            decoded = decoder.decode(raw, prepared.paths)
            return filter_view(decoded, (), prepared.context).select(f.evaluate()[0].alias("m"))

        baseline, _ = _visit_seconds(
            spark, frame(f"abs(diaSource.ra - diaSource.dec) < {radius_arcsec / 3600}"), repeats
        )
        out = {
            "alerts": alerts,
            "radius_arcsec": radius_arcsec,
            "baseline_visit_s": round(baseline, 3),
            "heap_before_mb": round(_heap_mb(spark), 1),
            "catalogs": [],
        }
        for rows in sizes:
            out["catalogs"].append(
                _catalog_point(spark, workdir, frame, rows, radius_arcsec, baseline, repeats)
            )
            log.info("%s", out["catalogs"][-1])
            spark.catalog.clearCache()
            raw.cache().count()
    return out


#: ``--quick``: 300 alerts, catalogs of 10,000 and 100,000 rows, one timed pass; a radius of 10
#: arcmin, so that a uniform catalog this small still gives some alerts a match.
QUICK = {"sizes": (10_000, 100_000), "alerts": 300, "repeats": 1, "radius_arcsec": 600.0}


def _catalog_point(
    spark, workdir: Path, frame, rows: int, radius_arcsec: float, baseline: float, repeats: int
) -> dict:
    """One catalog size: its index built, then the visit filtered against it; a size that does
    not fit is a result (its error, the root cause's first line)."""
    point: dict = {"rows": rows}
    try:
        _uniform_catalog(workdir / "cat.parquet", rows)
        start = time.perf_counter()
        meta = add_catalog(
            workdir / "catalogs", "cat", str(workdir / "cat.parquet"), "ra", "dec", radius_arcsec
        )
        point["index_build_s"] = round(time.perf_counter() - start, 1)
        index = workdir / "catalogs" / "cat" / "index.parquet"
        point["index_mb_on_disk"] = round(index.stat().st_size / 2**20, 1)
        point["order"] = meta.order
        start = time.perf_counter()
        seconds, matches = _visit_seconds(
            spark, frame(f"xmatch.cat.distance_arcsec < {radius_arcsec}"), repeats
        )
        point["first_visit_s"] = round(time.perf_counter() - start - seconds * repeats, 2)
        point.update(
            visit_s=round(seconds, 3),
            join_cost_s=round(seconds - baseline, 3),
            ratio_to_baseline=round(seconds / baseline, 2),
            matches=matches,
            heap_after_mb=round(_heap_mb(spark), 1),
        )
    except Exception as e:  # noqa: BLE001 - a size that does not fit is a result
        cause = getattr(e, "java_exception", None)
        while cause is not None and cause.getCause() is not None:
            cause = cause.getCause()
        point["error"] = str(cause.toString() if cause is not None else e).splitlines()[0][:400]
    return point
