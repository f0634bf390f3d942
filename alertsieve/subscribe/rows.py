"""One match as one flat row, what every writer of matches writes (``writers``: JSON lines;
``parquet``: Parquet) and ``Subscriber.frames()`` tabulates: the meta columns, named with a leading
``_`` (where the match was read, which filter and version published it, which payload, where the
alert came from), beside the record's own top-level fields; values as JSON holds them; the
writers' base class. No pyarrow: a subscriber's install writes JSON lines with it."""

from __future__ import annotations

import base64
import datetime as dt
import logging
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from alertsieve.subscribe.records import Match

log = logging.getLogger(__name__)

#: The meta columns, in order, with their Arrow types (``pyarrow.type_for_alias`` names); each is
#: the Match attribute of its name without the leading ``_``.
META_COLUMNS = {
    "_topic": "string",
    "_partition": "int32",
    "_offset": "int64",
    "_filter": "string",
    "_filter_version": "string",
    "_payload": "string",
    "_source_topic": "string",
    "_source_partition": "int32",
    "_source_offset": "int64",
}
#: What a subscriber installs for the Parquet writers and ``Subscriber.frames()``.
TABLES_EXTRA = "pip install 'alertsieve[tables]'"


def row_of(match: Match | Mapping[str, Any]) -> dict[str, Any]:
    """A match (or its ``as_dict()``) as one flat row: meta columns, then the record's fields."""
    m = match.as_dict() if isinstance(match, Match) else match
    row = {name: m.get(name[1:]) for name in META_COLUMNS}
    for name, value in (m.get("record") or {}).items():
        if name in row:
            log.warning("record field %s hides a meta column of the same name: dropped", name)
            continue
        row[name] = value
    return row


def jsonable(value: Any) -> Any:
    """A value JSON can hold: bytes as base64 text, NaN and infinities as null (JSON has
    neither), dates as ISO 8601 text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


class Writer:
    """A context manager counting rows; ``write`` takes one batch of matches."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.rows = 0

    def write(self, matches: Iterable[Match | Mapping[str, Any]]) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
