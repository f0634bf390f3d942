"""A broker's export read by Spark, in parallel, into the messages its survey would have sent.

Spark reads the files (Avro of any writer, Parquet files and hive-partitioned datasets) into
rows; each partition's rows go to Python as Arrow batches, are made official
(``alertsieve.alerts.conform``) and encoded with the survey's schema of their version:
from there on a backtest reads them exactly as the job reads its topic. A record whose value its
official type cannot hold stops the read with the field and the value, before any filter runs.
"""

from __future__ import annotations

import logging

from alertsieve.alerts.export_files import FileInput, official_messages
from alertsieve.alerts.exports import ExportError

log = logging.getLogger(__name__)

MESSAGES = "key string, value binary, version string, error string"


def read_export(spark, source: FileInput):
    """The export's rows as Spark reads them (a dataset folder with its partition columns)."""
    paths = [str(source.root)] if source.root else [str(f) for f in source.files]
    return spark.read.format(source.kind).load(paths)


def export_messages(spark, source: FileInput):
    """(key, value, version) of every record of an export, each the official message of its
    alert (version: Rubin's, null for ZTF); persisted, as it is read twice (its errors checked here, then the backtest)."""
    import pyarrow as pa
    from pyspark import StorageLevel

    rows = read_export(spark, source)
    column = source.version_column
    if column:  # the one line saying what it is, per version stated; fails on no survey's alerts
        where = column if column in rows.columns else f"{source.wrapper}.{column}"
        for row in rows.select(where).distinct().collect():
            source.plan(row[0])
    else:
        source.plan(None)
    plain = FileInput(
        source.name, source.kind, [], shape=source.shape, record_name=source.record_name
    )
    schema = pa.schema(
        [
            ("key", pa.string()),
            ("value", pa.binary()),
            ("version", pa.string()),
            ("error", pa.string()),
        ]
    )

    def convert(batches):
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                try:
                    key, message, plan = next(official_messages(plain, [row]))
                    version = plan.version if plan.survey == "rubin" else None
                    out.append({"key": key, "value": message, "version": version, "error": None})
                except ExportError as e:
                    out.append({"key": None, "value": None, "version": None, "error": str(e)})
            yield pa.RecordBatch.from_pylist(out, schema=schema)

    messages = rows.mapInArrow(convert, MESSAGES).persist(StorageLevel.MEMORY_AND_DISK)
    failed = messages.where("error IS NOT NULL")
    first = failed.select("error").limit(1).collect()
    if first:
        total = failed.count()
        messages.unpersist()
        raise ExportError(
            f"{source.name}: {total} record(s) cannot be made the survey's alerts without losing"
            f" information; the first: {first[0].error}"
        )
    return messages.drop("error")
