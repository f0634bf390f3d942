"""Filter versions: a short hash of everything that decides which alerts a filter passes.

A subscriber who sees a match, and a broker operator who changed a filter, both need to know
which filter passed an alert (boom PR #217, skyportal PR #6674). The version hashes the SQL after
its parameters are filled in, the parameters, a Python filter's source and its declared columns,
and the files of the catalogs and watchlists it reads: change any and the version changes; change
its description, contact, topic or payload and it does not. It travels in every output's headers,
in fields records, in the counts topic and in the Delta archive.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache, partial
from pathlib import Path

from alertsieve.catalogs.store import catalog_dir
from alertsieve.filtering.model import Filter
from alertsieve.filtering.sql_text import named_catalogs

#: Hex digits of a version: 48 bits, enough that two versions of one filter never collide.
VERSION_DIGITS = 12
#: The files that make a catalog's contents (its index: what the join reads, and its metadata).
CATALOG_FILES = ("meta.json", "index.parquet")


def filter_version(f: Filter, catalog_root: str | Path = "catalogs", fingerprint=None) -> str:
    """The filter's version (12 hex digits). ``fingerprint(name)``: a catalog's fingerprint
    (default: ``catalog_fingerprint`` under ``catalog_root``)."""
    digest = hashlib.sha256()
    for part in _deciding(f, fingerprint or partial(catalog_fingerprint, catalog_root)):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:VERSION_DIGITS]


def filter_versions(filters: list[Filter], catalog_root: str | Path = "catalogs") -> dict[str, str]:
    """{name: version} of ``filters``; each catalog file is read once however many filters name it."""
    fingerprint = cache(partial(catalog_fingerprint, catalog_root))
    return {f.name: filter_version(f, catalog_root, fingerprint) for f in filters}


def _deciding(f: Filter, fingerprint) -> list[str]:
    """What decides the filter's matches, as text, in a fixed order."""
    expressions = f.expressions()
    parts = [
        type(f).__name__,
        json.dumps(expressions, sort_keys=True),
        json.dumps(dict(f.params), sort_keys=True, default=repr),
    ]
    code = f.code()
    if code is not None:
        parts.append(code)
    named = sorted({n for e in expressions.values() for n in named_catalogs(e)})
    parts += [f"{family}.{name}:{fingerprint(name)}" for family, name in named]
    return parts


def catalog_fingerprint(root: str | Path, name: str) -> str:
    """SHA-256 of a catalog's files (``missing`` when it is not there: start-up then says so)."""
    folder = catalog_dir(root, name)
    digest = hashlib.sha256()
    found = False
    for file in CATALOG_FILES:
        path = folder / file
        if path.exists():
            found = True
            with open(path, "rb") as stream:
                for chunk in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest() if found else "missing"
