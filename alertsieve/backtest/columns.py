"""Values of the filter view over a set of alerts, as a table: what a notebook plots (a model's
scores against the alerts' light curves) and what a test compares with its oracle. Prepared as
the job prepares its view, so the models the columns read run once per alert, with their gates."""

from __future__ import annotations

from collections.abc import Mapping

from alertsieve.backtest.sources import AlertSource
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.prepare import prepare
from alertsieve.filtering.scores.model import Model


def view_columns(
    spark,
    alerts: AlertSource,
    columns: Mapping[str, str],
    catalog_dir: str = "catalogs",
    models: list[Model] | None = None,
):
    """A pandas frame of ``columns`` (name -> SQL over the filter view: fields, ``features``,
    ``xmatch``, ``scores``), one row per decodable alert in the order they came."""
    probe = AlertFilter(
        name="columns",
        survey=alerts.decoder.survey,
        sql="true",
        payload="fields",
        fields=dict(columns),
    )
    prepared = prepare(spark, [probe], alerts.decoder, alerts.head, catalog_dir, models=models)
    decoded = alerts.decoder.decode(alerts.raw, prepared.paths)
    view = filter_view(decoded, ("_offset", "_reason"), prepared.context, prepared.scoring)
    chosen = [f"{sql} AS `{name}`" for name, sql in columns.items()]
    return view.where("_reason IS NULL").orderBy("_offset").selectExpr(*chosen).toPandas()
