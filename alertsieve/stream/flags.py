"""The filter job's command-line flags, derived from the settings model: every flag is declared
on the field it sets (``alertsieve.stream.config``), so a flag cannot exist without a setting, and
its value is checked by the same model as the settings file's."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.settings import ConfigError, SettingsError, parse_pairs, split_pair
from alertsieve.stream.config import JobConfig, flag_fields


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None, help="job YAML (e.g. conf/filter_stream.yaml)")
    sources = parser.add_mutually_exclusive_group()
    for name, meta in flag_fields().items():
        info = JobConfig.model_fields[name]
        target = sources if name in ("topic", "topic_pattern") else parser
        kind = meta["cli"]
        kwargs: dict[str, Any] = {"dest": name, "help": info.description}
        if kind == "true":
            kwargs.update(action="store_const", const=True)
        elif kind == "false":
            kwargs.update(action="store_const", const=False, help=meta["help"])
        elif kind == "pairs":  # as every command takes --kafka-conf: several after one flag
            kwargs.update(action="extend", nargs="+", metavar=_metavar(kind))
        elif kind in ("append", "sql"):
            kwargs.update(action="append", metavar=_metavar(kind))
        else:
            kwargs.update(metavar=_metavar(kind))
        target.add_argument(meta["flag"], **kwargs)


def _metavar(kind: str) -> str | None:
    return {"pairs": "KEY=VALUE", "sql": "NAME=EXPRESSION", "append": "DIR", "csv": "A,B"}.get(kind)


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Field name -> value for every flag given (None: not given), ready for ``load_config``."""
    out: dict[str, Any] = {}
    for name, meta in flag_fields().items():
        raw = getattr(args, name, None)
        if raw is None:
            continue
        try:
            out[name] = _convert(meta, raw)
        except SettingsError as e:  # said where the settings' own errors say it: the command line
            raise ConfigError(f"the command line: {e}") from None
    return out


def _convert(meta: dict[str, Any], raw: Any) -> Any:
    kind = meta["cli"]
    if kind == "csv":
        return [part.strip() for part in raw.split(",") if part.strip()]
    if kind == "pairs":
        return parse_pairs(meta["flag"], raw)
    if kind == "sql":
        specs = []
        for text in raw:
            name, expression = split_pair(
                meta["flag"], text, "NAME=EXPRESSION, e.g. bright='diaSource.snr > 50'"
            )
            specs.append({"name": name, "sql": expression, "origin": f"--sql {name}"})
        return specs
    return raw
