"""A light curve as the brokers hand it to their classifiers: the alert's earlier detections of a
field, then its own detection's (Fink's ``concat_col``), as one SQL list over the filter view.
Not sorted: the classifiers get the points in the order the alert carries them, as in Fink."""

from __future__ import annotations

#: Where each survey keeps an alert's earlier detections and its own.
_HISTORY = {"rubin": ("prvDiaSources", "diaSource"), "ztf": ("prv_candidates", "candidate")}


def light_curve(survey: str, field: str) -> str:
    """SQL of ``field`` over the alert's history then the alert (an empty history if none)."""
    history, current = _HISTORY[survey]
    return f"concat(coalesce({history}.{field}, array()), array({current}.{field}))"
