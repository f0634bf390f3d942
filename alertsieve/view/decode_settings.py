"""The settings a decoder is built from: the few a job's settings hold about its input's survey and
writer schemas, so that a backtest, a check or a benchmark builds a decoder without a whole job's
settings (``JobConfig.decode_settings`` gives a job's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class DecodeSettings:
    """What ``alertsieve.view.surveys`` reads to build a decoder; defaults are a job's."""

    survey: Literal["auto", "rubin", "ztf"] = "auto"  # auto: told by the topic's first messages
    topic: str | None = (
        None  # its ``<topic>-value`` subject names the Rubin writers (default alerts)
    )
    schema_versions: tuple[str, ...] | None = None  # Rubin versions read (default: 7.0 on)
    wire_format: Literal["confluent", "plain"] = "confluent"
    writer_schema_version: str | None = None  # with wire_format plain: the producer's Rubin version
    schema_registry: str | None = None  # else the local schema store
    schema_dir: str | None = None  # the local schema store
    where: str = "the command line"  # where the settings came from, for errors
