"""Filters: a name, what it is for, where its matches go, and a SQL condition over alert fields.

Every filter compiles to a boolean Spark Column evaluated on the same decoded batch, so ten
filters cost one decode. Filters are checked against the reader schema before the stream starts:
a typo fails at start-up with the filter's name, where it came from, and Spark's own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")


class FilterError(ValueError):
    """A filter that cannot run: named, located, and with the fix where we know it."""


@dataclass(frozen=True)
class AlertFilter:
    name: str
    sql: str
    description: str = ""
    topic: str | None = None  # default: <output prefix><name>
    origin: str = "command line"  # the file or flag it came from, for error messages

    def output_topic(self, prefix: str) -> str:
        return self.topic or f"{prefix}{self.name}"

    def column(self):
        from pyspark.sql import functions as F

        return F.expr(self.sql)


def parse_sql_flag(flag: str) -> AlertFilter:
    """``NAME=EXPRESSION`` from ``--sql``."""
    name, sep, expression = flag.partition("=")
    if not sep or not expression.strip():
        raise FilterError(
            f"--sql {flag!r}: expected NAME=EXPRESSION, e.g. bright='diaSource.snr > 50'"
        )
    return AlertFilter(name=name.strip(), sql=expression.strip(), origin=f"--sql {name.strip()}")


def from_config(entries: Iterable[dict], origin: str) -> list[AlertFilter]:
    out = []
    for i, entry in enumerate(entries):
        where = f"{origin} (filters[{i}])"
        unknown = set(entry) - {"name", "sql", "description", "topic"}
        if unknown or "name" not in entry or "sql" not in entry:
            raise FilterError(
                f"{where}: a filter needs 'name' and 'sql' (optional: 'description', 'topic');"
                f" got {sorted(entry)}"
            )
        out.append(AlertFilter(origin=where, **entry))
    return out


def validate(filters: list[AlertFilter], alerts) -> None:
    """Check names and compile every filter against ``alerts`` (an empty DataFrame with the
    decoded alert's columns), so a bad filter fails before any alert is read."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql.types import BooleanType

    seen: dict[str, AlertFilter] = {}
    for f in filters:
        if not NAME.match(f.name):
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): names are letters, digits, '_' and '-',"
                " starting with a letter (they become topic and table names)"
            )
        if f.name in seen:
            raise FilterError(
                f"filter {f.name!r} is defined twice: {seen[f.name].origin} and {f.origin}"
            )
        seen[f.name] = f
        try:
            dtype = alerts.select(f.column().alias("m")).schema["m"].dataType
        except (AnalysisException, ParseException) as e:
            first = str(e).strip().splitlines()[0]
            raise FilterError(f"filter {f.name!r} ({f.origin}): {first}") from None
        if not isinstance(dtype, BooleanType):
            raise FilterError(
                f"filter {f.name!r} ({f.origin}): the expression is {dtype.simpleString()}, not"
                " boolean; write a condition such as `diaSource.snr > 50`"
            )
