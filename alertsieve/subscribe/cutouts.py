"""Save an alert's image stamps as FITS files, so any FITS viewer (ds9, astropy) opens them.

Rubin carries each stamp as the FITS file's bytes (``cutoutDifference``, ``cutoutScience``,
``cutoutTemplate``; null when absent); ZTF as ``{"fileName": ..., "stampData": gzip-compressed
FITS}``. Both are written ungzipped as ``<alert_id>_<field>.fits``. A fields record has no stamps
unless its filter chose them (then they are saved the same way).
"""

from __future__ import annotations

import gzip
import logging
import re
from pathlib import Path
from typing import Any

from alertsieve.alerts.schemas import CUTOUTS

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
FITS_START = b"SIMPLE  ="


def stamp_bytes(value: Any) -> bytes | None:
    """The FITS bytes of one stamp field (Rubin bytes, or ZTF's dict), ungzipped; None if absent."""
    if isinstance(value, dict):
        value = value.get("stampData")
    if not isinstance(value, bytes | bytearray | memoryview) or not value:
        return None
    data = bytes(value)
    return gzip.decompress(data) if data.startswith(GZIP_MAGIC) else data


def save_cutouts(record: dict, alert_id: str | int | None, directory: Path | str) -> list[Path]:
    """Write the stamps of ``record`` into ``directory``; returns the files written."""
    directory = Path(directory)
    name = re.sub(r"[^\w.+-]", "_", str(alert_id if alert_id is not None else "alert"))
    written = []
    for field in CUTOUTS:
        data = stamp_bytes(record.get(field))
        if data is None:
            continue
        if not data.startswith(FITS_START):
            log.warning(
                "alert %s: %s does not start like a FITS file; written anyway", alert_id, field
            )
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}_{field}.fits"
        path.write_bytes(data)
        written.append(path)
    return written
