"""Where alertsieve keeps things that outlive one run (downloaded jars, broker data)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The user cache; ``ALERTSIEVE_CACHE`` moves it (CI runners, shared clusters)."""
    root = os.environ.get("ALERTSIEVE_CACHE")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "alertsieve"
