"""A survey's alerts inside a broker's export, told by content.

Brokers hand past nights out as Spark-written Avro or Parquet: the alert record renamed
(``topLevelRecord``) or wrapped in a column (``value``), its unions reordered, integers stored as
doubles and all-null fields typed null (as pandas and Spark write them), ZTF's ``candid`` kept only
inside ``candidate``, and the broker's own columns (scores, crossmatches, maps) beside the survey's.
This module is the first, pure part of reading them: from the *shape* of a file (its field names,
nested) it tells the survey, the version and what is not the survey's (:func:`plan_export`);
``alertsieve.alerts.conform`` then makes each record the official one. No I/O here:
``export_files`` reads (Python), ``alertsieve.backtest.export_reader`` (Spark).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import fastavro

from alertsieve.alerts.schemas import AlertSchema, load_rubin_schema, rubin_versions
from alertsieve.alerts.ztf import shipped_ztf_schemas
from alertsieve.errors import AlertsieveError

#: A file's fields by name: a record's (or an array of records') own shape, or None for a value.
Shape = dict[str, "Shape | None"]

Survey = Literal["rubin", "ztf"]

#: Columns a broker writes the survey's version in (Fink: ``lsst_schema_version`` = 'lsst.v10_0').
VERSION_COLUMNS = ("lsst_schema_version", "schema_version")

#: What makes a record a ZTF alert: these at the top and in ``candidate`` (every ZTF version).
ZTF_TOP = ("objectId", "candidate")
ZTF_CANDIDATE = ("jd", "fid", "magpsf", "sigmapsf", "isdiffpos", "candid")
#: What makes it a Rubin alert: the detection's time in ``diaSource`` (v5.0 on).
RUBIN_SOURCE = ("midpointMjdTai", "diaSourceId")


class ExportError(AlertsieveError, ValueError):
    """An export whose records are no survey's alerts, or a value its official type cannot hold
    without losing information."""


# --- which survey, which version ------------------------------------------------------------


@dataclass(frozen=True)
class ExportPlan:
    """How the records of one export (of one version) become official alerts."""

    survey: Survey
    version: str  # '10.0' (Rubin), '3.3' (ZTF)
    schema: AlertSchema  # the official schema the records are made to (Rubin: its id frames them)
    how: str  # how the version was told, for the one line that says it
    wrapper: str | None = None  # the column the alert is inside (Spark's ``topLevelRecord.value``)
    ignored: tuple[str, ...] = ()  # the export's fields the survey's schema lacks
    missing: tuple[str, ...] = ()  # official fields the export lacks (written as their default)
    schema_json: bytes = field(default=b"", compare=False)  # ZTF: the header every message holds

    def describe(self, source: str) -> str:
        """The one line a reader is told about ``source``."""
        line = f"{source}: {self.survey} alerts, schema {self.version} ({self.how})"
        if self.wrapper:
            line += f", inside column {self.wrapper!r}"
        if self.ignored:
            shown = ", ".join(self.ignored[:8]) + (", ..." if len(self.ignored) > 8 else "")
            line += f"; ignored {len(self.ignored)} columns the survey's schema lacks: {shown}"
        if self.missing:
            line += f"; {len(self.missing)} official fields absent, written as null"
        return line


def shape_of_avro(definition: dict) -> Shape:
    """The shape of an Avro record schema (named types expanded, unions looked through)."""

    def of(avro_type: Any) -> Shape | None:
        if isinstance(avro_type, list):
            shapes = [of(t) for t in avro_type if t != "null"]
            return next((s for s in shapes if s is not None), None)
        if isinstance(avro_type, dict):
            if avro_type["type"] == "record":
                return {f["name"]: of(f["type"]) for f in avro_type["fields"]}
            if avro_type["type"] == "array":
                return of(avro_type["items"])
        return None

    return of(fastavro.schema.expand_schema(definition)) or {}


def shape_of_arrow(schema) -> Shape:
    """The shape of a pyarrow schema (struct, list of struct)."""
    import pyarrow as pa

    def of(t) -> Shape | None:
        if pa.types.is_struct(t):
            return {t.field(i).name: of(t.field(i).type) for i in range(t.num_fields)}
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return of(t.value_type)
        return None

    return {f.name: of(f.type) for f in schema}


def shape_of_spark(schema) -> Shape:
    """The shape of a Spark StructType (struct, array of struct)."""
    from pyspark.sql.types import ArrayType, StructType

    def of(t) -> Shape | None:
        if isinstance(t, StructType):
            return {f.name: of(f.dataType) for f in t.fields}
        if isinstance(t, ArrayType):
            return of(t.elementType)
        return None

    return of(schema) or {}


def _is_ztf(shape: Shape) -> bool:
    candidate = shape.get("candidate") or {}
    return set(ZTF_TOP) <= shape.keys() and set(ZTF_CANDIDATE) <= candidate.keys()


def _is_rubin(shape: Shape) -> bool:
    return set(RUBIN_SOURCE) <= (shape.get("diaSource") or {}).keys()


def find_alert(shape: Shape, source: str) -> tuple[Survey, Shape, str | None]:
    """The survey, the alert's own shape and the column wrapping it (if one does)."""
    for wrapper, inner in [(None, shape), *((k, v) for k, v in shape.items() if v)]:
        if _is_ztf(inner):
            return "ztf", inner, wrapper
        if _is_rubin(inner):
            return "rubin", inner, wrapper
    ztf = f"{', '.join(ZTF_TOP)}{{{', '.join(ZTF_CANDIDATE)}}}"
    raise ExportError(
        f"{source}: neither ZTF alerts (fields {ztf}) nor Rubin alerts (fields"
        f" diaSource{{{', '.join(RUBIN_SOURCE)}}}), at the top or inside one column; its fields:"
        f" {', '.join(shape) or 'none'}"
    )


def _paths(shape: Shape | None, prefix: str = "") -> set[str]:
    """Every field's dotted path."""
    out: set[str] = set()
    for name, inner in (shape or {}).items():
        out.add(prefix + name)
        out |= _paths(inner, f"{prefix}{name}.")
    return out


def _at(shape: Shape, path: str) -> Shape | None:
    """The shape at a dotted path (None for a value, a null-typed field or an absent one)."""
    for name in path.split("."):
        shape = (shape or {}).get(name)
    return shape


def version_hint(text: str | None) -> str | None:
    """'10.0' from what a broker writes ('lsst.v10_0', 'lsst.v10_0.alert', 'v10.0', '10.0')."""
    import re

    if not text:
        return None
    m = re.search(r"v?(\d+)[._](\d+)", str(text))
    return f"{m[1]}.{m[2]}" if m else None


def _closest_version(alert: Shape, source: str) -> tuple[str, str]:
    """The official Rubin version whose fields the record's match best: fewest official fields
    absent, then fewest of the record's survey fields the version lacks, then the newest."""
    have = _paths(alert)
    scored = []
    for version in rubin_versions():
        official = _paths(shape_of_avro(load_rubin_schema(version).definition))
        top = {p.split(".")[0] for p in official}
        extra = {p for p in have if p.split(".")[0] in top} - official
        scored.append((len(official - have), len(extra), _version_key(version), version))
    best = min(scored, key=lambda s: (s[0], s[1], tuple(-x for x in s[2])))
    return best[3], f"the official version whose fields it has ({best[0]} absent)"


def _version_key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


@cache
def ztf_schemas() -> dict[str, tuple[dict, bytes]]:
    """The ZTF schemas alertsieve ships: version -> (definition, JSON as ZTF's headers hold it)."""
    out = {}
    for text in shipped_ztf_schemas():
        definition = json.loads(text)
        out[str(definition.get("version"))] = (definition, text)
    return out


def plan_export(shape: Shape, source: str, hint: str | None = None) -> ExportPlan:
    """How records of ``shape`` become official alerts. ``hint``: a version the file states (its
    record's name, a version column's value); otherwise Rubin's is told by the fields."""
    survey, alert, wrapper = find_alert(shape, source)
    version = version_hint(hint)
    if survey == "ztf":
        shipped = ztf_schemas()
        newest = max(shipped, key=_version_key)
        if version in shipped:
            how = "its schemavsn"
        else:
            how = f"the newest ZTF schema alertsieve ships; the export states {hint or 'none'}"
            version = newest
        definition, text = shipped[version]
        schema = AlertSchema(0, f"ztf {version}", definition)
    else:
        if version in rubin_versions():
            how = f"stated by the file: {hint}"
        else:
            version, how = _closest_version(alert, source)
        schema = load_rubin_schema(version)
        text = b""
    official = shape_of_avro(schema.definition)
    have, want = _paths(alert), _paths(official)
    ignored = sorted(p for p in have - want if "." not in p or p.rsplit(".", 1)[0] in want)
    records = {"", *(p for p in have if _at(alert, p))}  # what the export holds as records
    missing = tuple(
        p
        for p in sorted(want - have)
        if (p.rsplit(".", 1)[0] if "." in p else "") in records
        and not (survey == "ztf" and p == "candid" and "candidate.candid" in have)
    )
    return ExportPlan(
        survey, version, schema, how, wrapper, tuple(ignored), missing, schema_json=text
    )
