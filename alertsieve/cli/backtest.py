"""``alertsieve backtest``: filters run over a topic, Avro files, a Delta archive or simulated
alerts; a table of their matches a night, and exit 1 when one matches too much."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.cli.shared import chosen_filters, night


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
    bt.set_defaults(handler=run, warm=True)  # answered by the warm session (alertsieve.warm)
    return bt


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from alertsieve.backtest.report import report
    from alertsieve.backtest.run import backtest, by_survey
    from alertsieve.backtest.sources import load_sources
    from alertsieve.filtering.scores.discovery import discover_models
    from alertsieve.spark.session import command_session

    filters = chosen_filters(args.filter, args.filter_path)
    rows = []
    with command_session("alertsieve-backtest", conf={"spark.ui.enabled": "false"}) as spark:
        sources = {
            a.decoder.survey: a
            for a in load_sources(spark, args.input, args.bootstrap, args.schema_dir)
        }
        chosen = by_survey(filters, list(sources), ", ".join(args.input), named=bool(args.filter))
        read = {s: a.raw.count() for s, a in sources.items()} if len(sources) > 1 else {}
        models = discover_models(args.model_path or [])
        for survey, mine in chosen.items():
            found = backtest(
                spark, mine, sources[survey], args.catalog_dir, args.since, args.until, models
            )
            aside = sum(n for s, n in read.items() if s != survey)
            rows += [replace(r, left_aside=aside) for r in found]
        text, ok = report(rows, args.max_rate)
    print(text)
    return 0 if ok else 1
