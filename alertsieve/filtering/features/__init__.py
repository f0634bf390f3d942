"""Light-curve features, once per alert, in Spark SQL from the alert's own history: Rubin's
(``rubin``: fluxes in nJy) or ZTF's (``ztf``: magnitudes), chosen by the fields the view holds.

Filters name them as ``features.<field>``. The Rubin names most filters import
(``CLEAN``, ``KNOWN_MOVING_OBJECT``, ``BAND_FEATURES``) are here as before.
"""

from __future__ import annotations

from alertsieve.filtering.features import rubin, ztf
from alertsieve.filtering.features.rubin import (
    BAND_FEATURES,
    BANDS,
    CLEAN,
    COLOUR_WINDOW_DAYS,
    FEATURES,
    KNOWN_MOVING_OBJECT,
)

__all__ = [
    "BAND_FEATURES",
    "BANDS",
    "CLEAN",
    "COLOUR_WINDOW_DAYS",
    "FEATURES",
    "KNOWN_MOVING_OBJECT",
    "has_history",
    "read_paths",
    "with_features",
]


def _survey(frame):
    """The features module whose history ``frame`` holds, or None."""
    return next((m for m in (rubin, ztf) if m.has_history(frame)), None)


def has_history(frame) -> bool:
    """Whether ``frame`` holds a Rubin or ZTF history with the fields the features read."""
    return _survey(frame) is not None


def with_features(frame):
    """``frame`` (an alert's top-level fields as columns) with its survey's ``features`` column;
    a frame with no history as it is."""
    survey = _survey(frame)
    return frame if survey is None else survey.with_features(frame)


def read_paths(frame) -> list[str]:
    """The view paths ``frame``'s features read (none when it has no history)."""
    survey = _survey(frame)
    return [] if survey is None else list(survey.READ_PATHS)
