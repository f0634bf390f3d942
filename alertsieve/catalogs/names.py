"""Where a catalog lives and what it may be called: no numpy or HEALPix, so that a filter's
version (``publish.versions``, which fingerprints the catalogs a filter names) is computed in a
subscriber's install too."""

from __future__ import annotations

import re
from pathlib import Path

from alertsieve.errors import AlertsieveError

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class CatalogError(AlertsieveError, ValueError):
    """A catalog that cannot be built or used, named with the fix."""


def catalog_dir(root: str | Path, name: str) -> Path:
    if not NAME.match(name):
        raise CatalogError(
            f"catalog name {name!r}: use a letter then letters, digits or _ (it becomes a SQL field name)"
        )
    return Path(root) / name
