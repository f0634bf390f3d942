"""Many SQL filters in one file: a YAML table, as a broker keeps its users' filters.

A broker holding hundreds of filters (Lasair's users' SQL filters) keeps them as rows, not as
hundreds of modules. A table file in a filter folder (``*.yaml``) holds ``defaults`` (any key a
row may have) and ``filters``, one row per filter; a row's keys win over the defaults and its
``params`` add to theirs::

    defaults:
      sql: "diaSource.snr > {min_snr} AND diaSource.reliability > {min_reliability}"
      params: {min_snr: 5.0, min_reliability: 0.5}
      contact: broker@example.org
    filters:
      - name: alice_bright
        params: {min_snr: 50}
      - name: bob_moving
        sql: "ssSource IS NOT NULL AND diaSource.snr > 10"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alertsieve.filtering.model import AlertFilter, FilterError
from alertsieve.settings import SettingsError, explain, read_yaml


class SqlFilterSpec(BaseModel):
    """A SQL filter written as settings: in the job's settings (``sql_filters``), with ``--sql``,
    or as a row of a filter table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    sql: str = Field(examples=["diaSource.snr > 50"])
    description: str = ""
    topic: str | None = None
    contact: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    cutouts: bool = False
    survey: str | None = Field(None, examples=["rubin"])
    payload: Literal["alert", "fields"] = Field(
        "alert", description="alert: the original bytes; fields: a compact record"
    )
    fields: dict[str, str] = Field(default_factory=dict, examples=[{"snr": "diaSource.snr"}])
    format: Literal["avro", "json"] = Field("avro", description="of a fields record")
    max_rate: float | None = Field(
        None, gt=0, le=1, description="admission: the largest rate on the reference it may pass"
    )
    quota: dict[str, int] = Field(
        default_factory=dict, description="a daily quota: records and/or bytes per UTC day"
    )
    readers: list[str] = Field(
        default_factory=list, description="principals that alone may read its topic (User:bob)"
    )
    origin: str | None = Field(None, description="where it was written (set for --sql)")

    def to_filter(self, origin: str) -> AlertFilter:
        return AlertFilter(**{**self.model_dump(), "origin": self.origin or origin})


class FilterTable(BaseModel):
    """A table file: ``defaults`` for every row, then one row per filter."""

    model_config = ConfigDict(extra="forbid")

    defaults: dict[str, Any] = Field(
        default_factory=dict, examples=[{"sql": "diaSource.snr > {min_snr}"}]
    )
    filters: list[dict[str, Any]] = Field(
        examples=[[{"name": "bright", "params": {"min_snr": 50}}]]
    )


def load_filter_table(path: Path) -> list[AlertFilter]:
    """The filters of a table file, each with its row as origin (``file (filters[3])``)."""
    try:
        table = FilterTable.model_validate(read_yaml(path))
    except SettingsError as e:
        raise FilterError(str(e), origin=str(path)) from None
    except ValidationError as e:
        raise FilterError(explain(e, FilterTable, str(path)), origin=str(path)) from None
    out = []
    for i, row in enumerate(table.filters):
        where = f"{path} (filters[{i}])"
        merged = {
            **table.defaults,
            **row,
            "params": {**table.defaults.get("params", {}), **row.get("params", {})},
        }
        try:
            spec = SqlFilterSpec.model_validate(merged)
        except ValidationError as e:
            raise FilterError(explain(e, SqlFilterSpec, where), origin=str(path)) from None
        out.append(spec.to_filter(where))
    return out
