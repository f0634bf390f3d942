"""``alertsieve backtest``: filters run over a topic, Avro files, a Delta archive or simulated
alerts; a table of their matches a night, and exit 1 when one matches too much."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.cli.shared import night
from alertsieve.cli.warm import run_task


def add_parser(sub: Any) -> argparse.ArgumentParser:
    bt = sub.add_parser(
        "backtest", help="run filters over a topic, Avro files, a Delta archive or simulated alerts"
    )
    bt.add_argument("--filter", help="comma-separated filter names (default: all discovered)")
    bt.add_argument(
        "--input",
        required=True,
        action="append",
        help="a topic, an Avro or Parquet file or folder (a broker's export too; repeat for more), a job's Delta archive (its delta_path), or simulated:N",
    )
    bt.add_argument(
        "--since", type=night, help="first observing night, YYYY-MM-DD (Rubin's dayObs)"
    )
    bt.add_argument("--until", type=night, help="last observing night, YYYY-MM-DD (inclusive)")
    bt.add_argument("--bootstrap", help="Kafka bootstrap servers, when --input is a topic")
    bt.add_argument("--schema-dir", help="local schema store directory")
    bt.add_argument(
        "--max-rate", type=float, default=0.05, help="warn above this match rate (default 0.05)"
    )
    bt.add_argument("--filter-path", action="append", metavar="DIR", help="more filter modules")
    bt.add_argument(
        "--catalog-dir", default="catalogs", help="catalogs the filters name (default catalogs)"
    )
    bt.add_argument(
        "--model-path", action="append", metavar="DIR", help="more model modules (scores.*)"
    )
    bt.set_defaults(handler=run)
    return bt


def run(args: argparse.Namespace) -> int:
    return run_task("backtest", args)
