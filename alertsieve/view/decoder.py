"""Decode once, in the JVM, into the filter view, with a reason for every row that cannot be.

A :class:`Decoder` knows, for one survey, which writer schemas a topic may carry and how each
message names its own: Rubin's Confluent framing (``0x00``, a 4-byte schema id, the body), a plain
schemaless body of one configured version, or ZTF's container file per message (the writer schema
in its header, known by the SHA-256 of its JSON). Each writer is read with its own schema and
resolved by Avro straight into the view's paths asked for (``alertsieve.view.reader_schema``).
PERMISSIVE ``from_avro`` turns an undecodable body into nulls instead of failing the batch; a
``tell`` path that no decoded alert lacks turns those nulls into a quarantine reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from alertsieve.alerts.view import ViewField
from alertsieve.spark.constants import constant_array
from alertsieve.view.reader_schema import view_column

#: Metadata columns the job carries next to the alert's own fields (underscored: never a clash).
META = {
    "_topic": "topic",
    "_partition": "partition",
    "_offset": "offset",
    "_timestamp": "timestamp",
    "_key": "key",
    "_value": "value",
}

WireFormat = Literal["confluent", "plain", "container"]

#: The kinds of quarantine reason, for counting them (Prometheus labels: a few, not every schema
#: id or fingerprint a reason names): kind -> a regular expression of its reasons. A reason of
#: none of them counts as ``other``.
REASON_KINDS = {
    "empty": "^empty message",
    "short": "^message of .* shorter than",
    "wire_format": "^magic byte|^not an Avro container|-compressed container",
    "unknown_schema": "^unknown schema id|whose writer schema|^writer .* cannot be read",
    "version_not_read": "is not among the versions|is not a Rubin alert schema",
    "undecodable": "^undecodable",
}

#: What a task that meets a writer schema its plan does not know fails with, followed by the
#: writer's key and where the message is (``topic:partition:offset``; see ``NewWriter``).
NEW_WRITER = "alertsieve-new-writer"


@dataclass(frozen=True)
class NewWriter:
    """The first message of a writer schema a running job did not know, as its task reported."""

    key: str  # a Rubin schema id or a ZTF schema's SHA-256, as text
    topic: str
    partition: int
    offset: int

    @classmethod
    def found_in(cls, error: str) -> NewWriter | None:
        """The new writer a query's failure names, if that is why it failed."""
        import re

        m = re.search(rf"{NEW_WRITER} (\S+) at ([^\s:]+):(\d+):(\d+)", error)
        return m and cls(m[1], m[2], int(m[3]), int(m[4]))


@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity, for the cache of columns
class Decoder:
    """How one job's messages become rows of its filter view."""

    survey: Literal["rubin", "ztf"]
    wire_format: WireFormat
    view: list[ViewField]
    #: key -> the schema a whole message of that writer is an encoding of (the Confluent header
    #: or the container's header and block written in as leading fields; see ``framed``).
    writers: Mapping[Any, dict]
    names: Mapping[Any, str]  # key -> what a person calls it (lsst.v10_0.alert)
    versions: Mapping[Any, str]  # key -> its label in the view ('10.0')
    refused: Mapping[Any, str] = field(default_factory=dict)  # key -> why this job does not read it
    tell: str = "diaSource.diaSourceId"  # never null in a decoded alert of any version
    id_path: str = "diaSource.diaSourceId"  # the alert's id (the outputs' Kafka key)
    detection: str = "diaSource"  # the record of the detection that made the alert
    #: The detection's time, and the days from its zero to 1970-01-01 plus the survey's day
    #: boundary: Rubin's observing night is its ``dayObs``, the date at UTC-12h (a night in Chile
    #: is one date); ZTF's is the UTC date (a night at Palomar falls within one).
    observed: str = "diaSource.midpointMjdTai"
    night_offset: float = 40587.5
    #: What to subtract from ``observed`` for a Modified Julian Date (ZTF's is a Julian Date).
    mjd_offset: float = 0.0

    def night_sql(self) -> str:
        """The observing night of an alert in the view, as a date (no time zone involved)."""
        return f"date_add(DATE'1970-01-01', int(floor({self.observed} - {self.night_offset})))"

    @property
    def mjd_sql(self) -> str:
        """The detection's time as an MJD (Rubin's is TAI, ZTF's UTC: as each survey gives it)."""
        return f"{self.observed} - {self.mjd_offset}" if self.mjd_offset else self.observed

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.view]

    @property
    def cutouts(self) -> list[str]:
        """Top-level fields holding image stamps: ~95% of an alert's bytes, read by no filter."""
        return sorted({p.split(".")[0] for p in self.paths if p.startswith("cutout")})

    def decode(
        self,
        raw,
        paths: list[str],
        keep: tuple[str, ...] = (),
        only: frozenset | None = None,
        stop_at_new: bool = False,
    ):
        """Kafka rows -> META columns, ``keep``, ``_schema_id`` (Rubin's; null for ZTF),
        ``_reason`` (null when decoded) and ``alert`` (the view struct for ``paths``, null when
        not decoded). ``only``: the writer keys the rows are known to carry (the archive's matched
        rows); a plan over one version instead of ten is planned in a tenth of the time.
        ``stop_at_new``: a message naming a writer neither read nor refused fails the task with
        ``NEW_WRITER`` (the stream job learns it and plans again) instead of its quarantine."""
        from pyspark.sql import functions as F

        paths = list(dict.fromkeys([*paths, self.tell, self.id_path]))
        value = F.col("value")
        size = F.coalesce(F.length(value), F.lit(0))
        codec = [_container_codec(value).alias("_codec")] if self.wire_format == "container" else []
        step = raw.select(
            *[F.col(src).alias(dst) for dst, src in META.items()], *keep, "value",
            self._key(value, size).alias("_writer"), size.alias("_size"), *codec,
        )  # fmt: skip
        step = step.select("*", self._column(tuple(paths), only).alias("_decoded"))
        decoded = F.col("_decoded")
        reason = self._reason(
            F.col("_value"), F.col("_size"), F.col("_writer"), decoded, stop_at_new
        )
        schema_id = F.col("_writer") if self.survey == "rubin" else F.lit(None)
        return step.select(
            *META, *keep, schema_id.cast("long").alias("_schema_id"), reason.alias("_reason"),
            F.when(reason.isNull(), decoded).alias("alert"),
        )  # fmt: skip

    def writer_key(self, message: bytes) -> Any:
        """The writer a message names, read in Python (what ``_key`` computes in Spark)."""
        from alertsieve.alerts.schemas import WireFormatError, unframe
        from alertsieve.alerts.ztf import ContainerError, writer_of

        try:
            if self.wire_format == "plain":
                return next(iter(self.writers))
            if self.wire_format == "confluent":
                return unframe(message)[0]
            return writer_of(message)[0]
        except (WireFormatError, ContainerError):
            return None

    @cache  # noqa: B019 - a job has one decoder; its column is built once per set of paths
    def _column(self, paths: tuple[str, ...], only: frozenset | None):
        writers = {k: w for k, w in self.writers.items() if only is None or k in only}
        return view_column("_writer", writers, self.view, list(paths))

    def _key(self, value, size):
        """Which writer a message names: its schema id, or its header schema's fingerprint."""
        from pyspark.sql import functions as F

        if self.wire_format == "plain":
            (key,) = self.writers
            return F.lit(key)
        if self.wire_format == "confluent":
            return F.when(size >= 5, F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long"))
        return container_writer(value)

    def _reason(self, value, size, key, decoded, stop_at_new: bool):
        from pyspark.sql import functions as F

        def unknown(reason, why):
            """A writer neither read nor refused: its reason, or the task stopped to learn it."""
            known = [*self.writers, *self.refused]
            kind = "bigint" if all(isinstance(k, int) for k in known) else "string"
            in_known = F.array_contains(constant_array(known, kind), key.cast(kind))
            cond = ~in_known if known else F.lit(True)
            if not stop_at_new:
                return reason.when(cond, why)
            where = F.format_string(
                f"{NEW_WRITER} %s at %s:%d:%d",
                key.cast("string"), F.col("_topic"), F.col("_partition"), F.col("_offset"),
            )  # fmt: skip
            return reason.when(cond, F.raise_error(where))

        def refused(reason):
            """A writer known and not read: quarantined with why, looked up in one map (a
            ``WHEN`` per writer made the decode's generated code grow past the JVM's 64 KB per
            method with the ten thousand fields records' schemas of a local schema store),
            as one literal (``constant_array``: a column per constant took 8 s there)."""
            if not self.refused:
                return reason
            kind = "bigint" if all(isinstance(w, int) for w in self.refused) else "string"
            whys = F.map_from_arrays(
                constant_array(self.refused, kind), constant_array(self.refused.values(), "string")
            )
            why = F.try_element_at(whys, key.cast(kind))
            return reason.when(why.isNotNull(), why)

        reason = F.when(size == 0, F.lit("empty message"))

        failed = decoded.isNull() | _at(decoded, self.tell).isNull()
        if self.wire_format == "plain":
            (name,) = self.names.values()
            return reason.when(failed, F.lit(f"undecodable Avro body for {name}"))
        if self.wire_format == "confluent":
            magic = F.lower(F.hex(F.substring(value, 1, 1)))
            reason = reason.when(
                size < 5,
                F.format_string("message of %d bytes is shorter than the 5-byte header", size),
            ).when(magic != "00", F.format_string("magic byte is 0x%s, expected 0x00", magic))
            reason = unknown(refused(reason), F.format_string("unknown schema id %d", key))
            return reason.when(
                failed, F.format_string("undecodable Avro body for schema id %d", key)
            )
        codec = F.col("_codec")
        reason = reason.when(
            key.isNull(), F.format_string(
                "not an Avro container file (starts with 0x%s; ZTF sends one per message)",
                F.lower(F.hex(F.substring(value, 1, 4))),
            ),
        ).when(codec != "null", F.format_string(
            "a %s-compressed container: only uncompressed ones are read in place", codec,
        ))  # fmt: skip
        reason = unknown(refused(reason), F.format_string(
            "a ZTF container whose writer schema (sha256 %s) this job has not learned", key,
        ))  # fmt: skip
        return reason.when(
            failed, F.format_string("undecodable Avro body in a container of sha256 %s", key)
        )


def container_writer(value):
    """The writer a ZTF message names: the SHA-256 of its container's schema (null when the
    message is no container)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from alertsieve.alerts.ztf import HEADER_SCHEMA, MAGIC

    header = from_avro(value, json.dumps(HEADER_SCHEMA), {"mode": "PERMISSIVE"})
    is_container = F.substring(value, 1, 4) == F.lit(MAGIC)
    return F.when(is_container, F.sha2(header["_container_meta"]["avro.schema"], 256))


def _at(column, path: str):
    """The field at a view path of a struct column (no arrays on the way)."""
    for step in path.split("."):
        column = column[step]
    return column


def _container_codec(value):
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from alertsieve.alerts.ztf import HEADER_SCHEMA

    meta = from_avro(value, json.dumps(HEADER_SCHEMA), {"mode": "PERMISSIVE"})["_container_meta"]
    return F.coalesce(meta["avro.codec"].cast("string"), F.lit("null"))


def framed(definition: dict) -> dict:
    """The writer schema with the 5-byte Confluent header as two leading fixed fields.

    Avro writes a fixed field as its raw bytes, so a framed message *is* a valid encoding of this
    record: ``from_avro`` can read the whole Kafka value, and we avoid copying ~100 KB per alert
    into a header-less substring. The reader schema does not have these fields, so Avro
    resolution skips them.
    """
    header = [
        {
            "name": "_confluent_magic",
            "type": {"type": "fixed", "name": "alertsieve_magic", "size": 1},
        },
        {
            "name": "_confluent_schema_id",
            "type": {"type": "fixed", "name": "alertsieve_schema_id", "size": 4},
        },
    ]
    return {**definition, "fields": header + list(definition["fields"])}


def view_paths(decoder: Decoder, with_cutouts: bool) -> list[str]:
    """The whole view, with or without the image stamps."""
    cutouts = tuple(decoder.cutouts)
    return [p for p in decoder.paths if with_cutouts or not p.startswith(cutouts)]
