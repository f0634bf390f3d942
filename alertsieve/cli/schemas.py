"""``alertsieve schemas view``: the filter view's field table across Rubin schema versions."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    schemas = sub.add_parser("schemas", help="the filter view across Rubin schema versions")
    schemas.add_argument(
        "what", choices=["view"], help="view: the field table (docs/filter-view.md)"
    )
    schemas.add_argument("--versions", help="comma-separated, e.g. 7.4,10.0,11.1 (default: 7.0 on)")
    schemas.set_defaults(handler=run)
    return schemas


def run(args: argparse.Namespace) -> int:
    from alertsieve.alerts.schemas import rubin_versions
    from alertsieve.alerts.view import view_document

    versions = (
        args.versions.split(",")
        if args.versions
        else [v for v in rubin_versions() if int(v.split(".")[0]) >= 7]
    )
    print(view_document(versions), end="")
    return 0
