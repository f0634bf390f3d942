"""What filters see of a decoded alert: its fields, its light-curve features, the catalogs they
name and the models' scores they read, as columns of one frame (the hot path, the start-up samples, backtest and diff)."""

from __future__ import annotations

from alertsieve.catalogs.context import Context, with_context
from alertsieve.filtering.objects import with_object_columns
from alertsieve.filtering.scores.column import Scoring, with_scores


def filter_view(
    decoded,
    keep: tuple[str, ...] = (),
    context: Context | None = None,
    scoring: Scoring | None = None,
):
    """What filters see: the alert struct's top-level fields as columns (``diaSource.snr``), for
    Rubin and ZTF alerts the light-curve ``features`` (``alertsieve.filtering.features``), and the
    catalogs the filters name (``xmatch``, ``watch``: ``alertsieve.catalogs.context``) and the
    scores of the models they read (``scores``: ``alertsieve.filtering.scores``), beside the
    ``keep`` columns of ``decoded``; ``object`` and ``annotations`` as typed nulls, which only
    the objects query fills (``alertsieve.filtering.objects``)."""
    from pyspark.sql import functions as F

    from alertsieve.filtering.features import with_features

    alert = [
        F.col(f"alert.`{name}`").alias(name) for name in decoded.schema["alert"].dataType.names
    ]
    view = with_scores(with_context(with_features(decoded.select(*keep, *alert)), context), scoring)
    return with_object_columns(view)
