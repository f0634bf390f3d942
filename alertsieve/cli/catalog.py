"""``alertsieve catalog add|list`` and ``alertsieve watch add|list``: a catalog indexed for
``xmatch.NAME`` in filters, and a watchlist or watchmap for ``watch.NAME``."""

from __future__ import annotations

import argparse
from typing import Any

from alertsieve.settings import SettingsError


def add_parsers(sub: Any) -> None:
    """``catalog`` and ``watch``: the same verbs, name, file, position columns and folder."""
    cat = _sky_table_parser(
        sub,
        "catalog",
        "index a CSV or Parquet catalog for xmatch.NAME in filters",
        "a .csv or .parquet file, or builtin:hipparcos, builtin:openngc",
    )
    cat.add_argument("--radius", type=float, default=2.0, help="match radius, arcsec (default 2)")
    watch = _sky_table_parser(
        sub,
        "watch",
        "a watchlist (CSV of name, ra, dec, radius) or a watchmap (MOC) for watch.NAME",
        "a watchlist .csv/.parquet, or with --map a MOC .fits or a CSV of pixels",
    )
    watch.add_argument(
        "--radius-column",
        default="radius",
        help="column of each entry's radius, arcsec (default radius)",
    )
    watch.add_argument(
        "--radius",
        type=float,
        default=None,
        help="one radius (arcsec) for every entry, instead of a column",
    )
    watch.add_argument(
        "--map",
        action="store_true",
        help="FILE is a sky region: a MOC FITS file, or a CSV of nested pixels (ipix) with --order",
    )
    watch.add_argument("--order", type=int, help="HEALPix order of a CSV of pixels")


def _sky_table_parser(sub: Any, command: str, what: str, file_help: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(command, help=what)
    parser.add_argument(
        "action", choices=["add", "list"], help="add one from FILE, or list those there are"
    )
    parser.add_argument(
        "name",
        nargs="?",
        help=f"its name in SQL ({'xmatch' if command == 'catalog' else 'watch'}.NAME)",
    )
    parser.add_argument("file", nargs="?", help=file_help)
    parser.add_argument(
        "--ra", default="ra", help="column of right ascension, degrees (default ra)"
    )
    parser.add_argument("--dec", default="dec", help="column of declination, degrees (default dec)")
    parser.add_argument(
        "--catalog-dir", default="catalogs", help="the catalog folder (default catalogs)"
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """``catalog add|list`` and ``watch add|list``: index a file for ``xmatch.NAME`` / ``watch.NAME``."""
    from alertsieve.catalogs.store import add_catalog, add_watchmap, describe, list_catalogs

    if args.action == "list":
        family = "xmatch" if args.command == "catalog" else "watch"
        for meta in list_catalogs(args.catalog_dir):
            if meta.family == family:
                print(describe(meta))
        return 0
    if not (args.name and args.file):
        raise SettingsError(f"{args.command} add needs NAME and FILE")
    if args.command == "catalog":
        meta = add_catalog(args.catalog_dir, args.name, args.file, args.ra, args.dec, args.radius)
    elif args.map:
        meta = add_watchmap(args.catalog_dir, args.name, args.file, args.order)
    else:
        meta = add_catalog(
            args.catalog_dir,
            args.name,
            args.file,
            args.ra,
            args.dec,
            args.radius or 1.0,
            kind="watchlist",
            radius_column=None if args.radius else args.radius_column,
        )
    print(describe(meta))
    print(f"filters read it as {meta.family}.{meta.name} (catalog folder {args.catalog_dir})")
    return 0
