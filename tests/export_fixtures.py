"""Broker exports of real alerts, written as brokers' Spark jobs write them, for the tests.

From the real alerts of ``tests/data/real`` (see its SOURCES.md) this writes, with Spark:
- ``rubin-v10-spark.avro/``: LSSTCam v10.0 alerts as Spark's Avro writer stores a DataFrame whose
  alert is one struct column: the record ``topLevelRecord`` with the alert in its field ``value``
  (``topLevelRecord.value``), ids stored as doubles, and the broker's columns beside it (a map of
  classifier scores, an array of crossmatch records, a score);
- ``ztf-spark.avro/``: ZTF 3.3 alerts as a broker's Spark job stores them (snappy), ``candid`` only
  inside ``candidate``, with a map of scores;
- ``ztf.parquet``: the same rows as one Parquet file;
- ``rubin-v7_4-hats/``: Operations Rehearsal v7.4 alerts as a hive-partitioned Parquet dataset laid
  out as HATS catalogs are (``Norder=/Dir=/Npix=``, HEALPix order 1);
- ``rubin-v10-null-records.avro/``: the LSSTCam v10.0 alerts as a broker that builds each struct
  field by field writes them: an absent ``ssSource`` or ``mpc_orbits`` as a record of nulls;
- ``ztf-mixed/``: one folder holding ZTF container files of real alerts under a writer schema no
  start-up knows (4.01, ``tests/ztf_versions.py``) beside a broker's Spark-written export of
  other real ZTF alerts.
The two real Parquet exports (``tests/data/exports``) are used as they are.

Run it to look at them: ``python tests/export_fixtures.py OUT_FOLDER``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ztf_versions import as_ztf_401

REAL = Path(__file__).parent / "data" / "real"
EXPORTS = Path(__file__).parent / "data" / "exports"
REAL_EXPORTS = {
    "rubin-v10-export.parquet": EXPORTS / "rubin-lsstcam-v10_0-export.parquet",
    "rubin-v7_1-export.parquet": EXPORTS / "rubin-or4-v7_1-export.parquet",
}
ZTF_FILES = 40  # of the real ZTF alerts with histories: enough for a filter to split them


def _one_file(frame, kind: str, out: Path, **options) -> Path:
    """``frame`` written by Spark as one part file in the folder ``out`` (as exports come)."""
    frame.coalesce(1).write.format(kind).options(**options).mode("overwrite").save(str(out))
    return out


def write_exports(spark, out: Path) -> dict[str, Path]:
    """Every export form, written into ``out``: name -> file or folder to read."""
    from pyspark.sql import functions as F

    from alertsieve.catalogs.healpix import with_pixel

    out.mkdir(parents=True, exist_ok=True)
    written = dict(REAL_EXPORTS)

    rubin = spark.read.format("avro").load(
        [str(REAL / "rubin-lsstcam-v10_0.avro"), str(REAL / "rubin-lsstcam-v10_0-b.avro")]
    )
    alert = F.struct(
        *[c for c in rubin.columns if c not in ("diaSourceId", "diaObject")],
        F.col("diaSourceId").cast("double").alias("diaSourceId"),
        F.col("diaObject")
        .withField("diaObjectId", F.col("diaObject.diaObjectId").cast("double"))
        .alias("diaObject"),
    )
    broker = rubin.select(
        alert.alias("value"),
        F.create_map(F.lit("snia"), F.rand(1), F.lit("kn"), F.rand(2)).alias("classifiers"),
        F.array(
            F.struct(F.lit("gaia").alias("catalog"), F.rand(3).alias("sep_arcsec")),
            F.struct(
                F.lit("simbad").alias("catalog"), F.lit(None).cast("double").alias("sep_arcsec")
            ),
        ).alias("xmatch"),
        F.rand(4).alias("anomaly_score"),
    )
    written["rubin-v10-spark.avro"] = _one_file(broker, "avro", out / "rubin-v10-spark.avro")

    ztf_files = sorted((REAL / "ztf-3.3-histories").glob("*.avro"))[:ZTF_FILES]
    ztf = spark.read.format("avro").load([str(p) for p in ztf_files])
    ztf = ztf.drop("candid").withColumn(
        "scores", F.create_map(F.lit("rf_snia"), F.rand(5), F.lit("cats"), F.rand(6))
    )
    written["ztf-spark.avro"] = _one_file(ztf, "avro", out / "ztf-spark.avro", compression="snappy")
    parquet = _one_file(ztf, "parquet", out / "ztf-parquet")
    (single,) = parquet.glob("*.parquet")
    written["ztf.parquet"] = single.rename(out / "ztf.parquet")
    shutil.rmtree(parquet)

    absent_as_nulls = [
        F.when(F.col(c).isNull(), F.struct(*[
            F.lit(None).cast(f.dataType).alias(f.name) for f in rubin.schema[c].dataType.fields
        ])).otherwise(F.col(c)).alias(c) if c in ("ssSource", "mpc_orbits") else F.col(c)
        for c in rubin.columns
    ]  # fmt: skip
    written["rubin-v10-null-records.avro"] = _one_file(
        rubin.select(absent_as_nulls), "avro", out / "rubin-v10-null-records.avro"
    )

    mixed = out / "ztf-mixed"
    mixed.mkdir()
    for f in sorted((REAL / "ztf-3.3-histories").glob("*.avro"))[ZTF_FILES : ZTF_FILES + 20]:
        (mixed / f.name).write_bytes(as_ztf_401(f.read_bytes()))
    for part in (out / "ztf-spark.avro").glob("part-*.avro"):
        shutil.copy(part, mixed / part.name)
    written["ztf-mixed"] = mixed

    opsim = spark.read.format("avro").load(str(REAL / "rubin-opsrehearsal-v7_4.avro"))
    hats = (
        with_pixel(opsim, "diaSource.ra", "diaSource.dec", 1, "Npix")
        .withColumn("Norder", F.lit(1))
        .withColumn("Dir", F.lit(0))
    )
    hats.write.partitionBy("Norder", "Dir", "Npix").mode("overwrite").parquet(
        str(out / "rubin-v7_4-hats")
    )
    written["rubin-v7_4-hats"] = out / "rubin-v7_4-hats"
    return written


if __name__ == "__main__":
    from alertsieve.spark.session import get_session

    session = get_session("export-fixtures", master="local[2]", conf={"spark.ui.enabled": "false"})
    for name, path in write_exports(session, Path(sys.argv[1])).items():
        print(f"{name}: {path}")
    session.stop()
