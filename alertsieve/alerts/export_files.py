"""The files people hold, found and told apart: Avro container files whatever wrote them, Parquet
files and folders of them (hive-partitioned ``Norder=/Dir=/Npix=`` datasets included).

An Avro file whose writer schema is the survey's own (an official Rubin schema, ZTF's
``ztf.alert``) is replayed byte for byte (``alertsieve.alerts.replay``). Anything else is an
*export*: its records are read (here in Python for the producer; by Spark in a backtest) and made
official by ``alertsieve.alerts.exports``, then sent as the survey sends them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from alertsieve.alerts.conform import conform, encode
from alertsieve.alerts.exports import (
    VERSION_COLUMNS,
    ExportPlan,
    Shape,
    Survey,
    find_alert,
    plan_export,
    shape_of_arrow,
    shape_of_avro,
)
from alertsieve.alerts.replay import AVRO_MAGIC, ReplayError, alert_key, writer_schema
from alertsieve.alerts.schemas import full_name, official_rubin_schema, rubin_version_of

log = logging.getLogger(__name__)

PARQUET_MAGIC = b"PAR1"
Kind = Literal["avro", "parquet"]


@dataclass
class FileInput:
    """One thing to read: official Avro files (byte for byte) or one export (Avro files of one
    writer schema, or a Parquet file or dataset), with the shape of its records."""

    name: str  # as the user named it
    kind: Kind
    files: list[Path]
    official: Survey | None = None  # the survey whose own schema the files have (byte for byte)
    shape: Shape = field(default_factory=dict)
    root: Path | None = None  # a Parquet dataset's folder (its partition columns are in paths)
    record_name: str | None = None  # an Avro writer schema's name ('lsst.v10_0.alert')
    _plans: dict = field(default_factory=dict, repr=False)

    def plan(self, hint: str | None = None) -> ExportPlan:
        """How its records (stating version ``hint``, if any) become official alerts."""
        hint = hint or self.record_name
        if hint not in self._plans:
            self._plans[hint] = plan_export(self.shape, self.name, hint)
            log.info("%s", self._plans[hint].describe(self.name))
        return self._plans[hint]

    @property
    def wrapper(self) -> str | None:
        """The column the alert is inside, if one is (Spark's ``topLevelRecord.value``)."""
        return find_alert(self.shape, self.name)[2]

    def hint(self, row: dict) -> str | None:
        """The version a record states (in a version column, beside the alert or inside its
        wrapper), or its file's record name."""
        column = self.version_column
        if column is None:
            return None
        if column in row:
            return row[column]
        return (row.get(self.wrapper) or {}).get(column) if self.wrapper else None

    def check(self) -> ExportPlan:
        """The plan of its first record: says what it is, and fails now on no survey's alerts."""
        return self.plan(self.hint(next(records(self), {})))

    @property
    def version_column(self) -> str | None:
        """The column stating each record's version, at the top or inside the alert's wrapper."""
        names = set(self.shape).union(*(inner for inner in self.shape.values() if inner))
        return next((c for c in (*VERSION_COLUMNS, "schemavsn") if c in names), None)


def _kind(path: Path) -> Kind:
    with open(path, "rb") as f:
        start = f.read(4)
    if start == AVRO_MAGIC:
        return "avro"
    if start == PARQUET_MAGIC:
        return "parquet"
    raise ReplayError(
        f"{path} is neither an Avro container file (no 'Obj\\x01' header) nor a Parquet file"
        " (no 'PAR1' header)"
    )


def _official(writer: dict) -> Survey | None:
    """The survey whose own schema an Avro file's writer schema is (its records go out as they
    are): an official Rubin schema, or ZTF's ``ztf.alert``; None for any other writer."""
    if official_rubin_schema(writer) is not None:
        return "rubin"
    return "ztf" if full_name(writer) == "ztf.alert" else None


def find_inputs(paths: list[str | Path]) -> list[FileInput]:
    """What ``paths`` hold, each told apart by content: files, and folders of ``*.avro`` or
    ``*.parquet`` files (a folder of Parquet files is one dataset, partition folders and all)."""
    inputs: list[FileInput] = []
    for p in map(Path, paths):
        if p.is_dir():
            parquet = sorted(f for f in p.rglob("*.parquet") if not f.name.startswith((".", "_")))
            avro = sorted(p.rglob("*.avro"))
            if not parquet and not avro:
                raise ReplayError(f"{p} is a folder without any .avro or .parquet files")
            inputs.extend(_parquet_folder(p, parquet))
            inputs.extend(_avro(str(p), avro))
        elif p.is_file():
            if _kind(p) == "parquet":
                inputs.append(_parquet(str(p), [p]))
            else:
                inputs.extend(_avro(str(p), [p]))
        else:
            raise ReplayError(f"{p} does not exist")
    return inputs


def _avro(name: str, files: list[Path]) -> list[FileInput]:
    """Avro files, one input per writer schema (Spark reads one schema at a time)."""
    by_writer: dict[str, FileInput] = {}
    for f in files:
        writer = writer_schema(f)
        if survey := _official(writer):
            key = survey
            by_writer.setdefault(key, FileInput(name, "avro", [], official=survey))
        else:
            import json

            key = json.dumps(writer, sort_keys=True)
            by_writer.setdefault(
                key,
                FileInput(
                    name,
                    "avro",
                    [],
                    shape=shape_of_avro(writer),
                    record_name=rubin_version_of(writer) and writer["name"],
                ),
            )
        by_writer[key].files.append(f)
    return list(by_writer.values())


def _parquet_folder(folder: Path, files: list[Path]) -> list[FileInput]:
    """A folder's Parquet files: a dataset (files in ``key=value`` partition folders below a
    folder) is one input, read with its partition columns; other files, one input per schema
    (two exports of other versions side by side are two inputs, as Avro files of two writers)."""
    import pyarrow.parquet as pq

    by_root: dict[Path, list[Path]] = {}
    for f in files:
        root = f.parent
        while root != folder and "=" in root.name:
            root = root.parent
        by_root.setdefault(root, []).append(f)
    inputs = []
    for root, group in by_root.items():
        if any(f.parent != root for f in group):
            inputs.append(_parquet(str(folder), group, root=root))
            continue
        by_schema: dict[str, list[Path]] = {}
        for f in group:
            by_schema.setdefault(str(pq.read_schema(f)), []).append(f)
        inputs.extend(_parquet(str(folder), same) for same in by_schema.values())
    return inputs


def _parquet(name: str, files: list[Path], root: Path | None = None) -> FileInput:
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(root) if root else files, format="parquet", partitioning="hive")
    return FileInput(name, "parquet", files, shape=shape_of_arrow(dataset.schema), root=root)


def records(source: FileInput) -> Iterator[dict]:
    """The export's records as dicts, in file order (Python; a backtest reads them with Spark)."""
    if source.kind == "avro":
        import fastavro

        for path in source.files:
            with open(path, "rb") as f:
                yield from fastavro.reader(f)
        return
    import pyarrow.dataset as ds

    target = str(source.root) if source.root else [str(f) for f in source.files]
    for batch in ds.dataset(target, format="parquet", partitioning="hive").to_batches():
        yield from batch.to_pylist()


def official_messages(
    source: FileInput, rows: Iterable[dict], id_of: Callable[[str], int | None] = lambda v: None
) -> Iterator[tuple[str, bytes, ExportPlan]]:
    """(key, message, plan) of each record made official and encoded as its survey sends it;
    ``id_of``: Rubin version -> the schema id to frame it with (a registry's; None: its own)."""
    for row in rows:
        plan = source.plan(source.hint(row))
        record = conform(row, plan)
        yield alert_key(record), encode(record, plan, id_of(plan.version)), plan


def count_rows(source: FileInput) -> int:
    """Records in an input, from its files' metadata: nothing decoded."""
    if source.kind == "parquet":
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(f).metadata.num_rows for f in source.files)
    from alertsieve.alerts.replay import count_records

    return sum(count_records(f) for f in source.files)
