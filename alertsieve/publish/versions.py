"""Filter versions: a short hash of everything that decides which alerts a filter passes.

A subscriber who sees a match, and a broker operator who changed a filter, both need to know
which filter passed an alert (boom PR #217, skyportal PR #6674). The version hashes the SQL after
its parameters are filled in, the parameters, a Python filter's source and its declared columns,
the files of the catalogs and watchlists it reads, and the version of each model whose score it
reads (its files and code: ``alertsieve.filtering.scores.model``): change any and the version changes; change
its description, contact, topic or payload and it does not. It travels in every output's headers,
in fields records, in the counts topic and in the Delta archive.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from functools import cache, partial
from pathlib import Path

from alertsieve.catalogs.names import catalog_dir
from alertsieve.filtering.model import Filter
from alertsieve.filtering.scores.choose import models_read
from alertsieve.filtering.scores.discovery import discover_models
from alertsieve.filtering.scores.model import Model
from alertsieve.filtering.sql_text import named_catalogs

#: Hex digits of a version: 48 bits, enough that two versions of one filter never collide.
VERSION_DIGITS = 12
#: The files that make a catalog's contents (its index: what the join reads, and its metadata).
CATALOG_FILES = ("meta.json", "index.parquet")


def filter_version(
    f: Filter,
    catalog_root: str | Path = "catalogs",
    fingerprint=None,
    model_versions: Mapping[str, str] | None = None,
) -> str:
    """The filter's version (12 hex digits). ``fingerprint(name)``: a catalog's fingerprint
    (default: ``catalog_fingerprint`` under ``catalog_root``); ``model_versions``: each model's
    version (default: the models found, ``discover_models``, looked up only for a filter that
    reads a score)."""
    if model_versions is None:
        model_versions = model_versions_of(discover_models) if models_read(f) else {}
    digest = hashlib.sha256()
    fingerprint = fingerprint or partial(catalog_fingerprint, catalog_root)
    for part in _deciding(f, fingerprint, model_versions):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:VERSION_DIGITS]


def filter_versions(
    filters: list[Filter], catalog_root: str | Path = "catalogs", models: list[Model] | None = None
) -> dict[str, str]:
    """{name: version} of ``filters``; each catalog file is read once however many filters name
    it. ``models``: those the filters may read (default: the models found)."""
    fingerprint = cache(partial(catalog_fingerprint, catalog_root))
    versions = (
        model_versions_of(lambda: models if models is not None else discover_models())
        if any(models_read(f) for f in filters)
        else {}
    )
    return {f.name: filter_version(f, catalog_root, fingerprint, versions) for f in filters}


def model_versions_of(models: Callable[[], list[Model]]) -> dict[str, str]:
    """{model name: version} of the models ``models()`` gives (a survey's models have distinct
    names from the other's: discovery refuses a name defined twice)."""
    return {m.name: m.version for m in models()}


def _deciding(f: Filter, fingerprint, model_versions: Mapping[str, str]) -> list[str]:
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
    parts += [f"scores.{n}:{model_versions.get(n, 'missing')}" for n in sorted(models_read(f))]
    if tuple(f.triggers) != ("alert",):  # what runs it decides its matches too
        parts.append(f"triggers:{','.join(sorted(f.triggers))}")
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
