"""A filter author's loop as functions: backtest a filter, check it on every schema version, diff
a change against the copy that runs now. The command line calls them in its own process or hands
them to the warm session (``alertsieve.warm``), which keeps one SparkSession between calls.

Each takes ``say``, where its report's lines go (``print`` for a command, the warm session's
socket for a warm one), and keyword arguments named as the command's flags; each returns the
command's exit code. Failures the author can mend raise ``AlertsieveError`` subclasses. Their
imports are inside them: a warm command's own process loads none of the job's modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date

Say = Callable[[str], None]
_QUIET_UI = {"spark.ui.enabled": "false"}


def backtest(
    say: Say,
    *,
    input: list[str],
    filter: str | None = None,
    since: date | None = None,
    until: date | None = None,
    bootstrap: str | None = None,
    schema_dir: str | None = None,
    max_rate: float = 0.05,
    filter_path: list[str] | None = None,
    catalog_dir: str = "catalogs",
    model_path: list[str] | None = None,
) -> int:
    """The filters over ``input`` (each survey's alerts to its own filters, the others left
    aside and counted); 1 when a filter matches more than ``max_rate``."""
    from alertsieve.backtest.report import report
    from alertsieve.backtest.run import backtest as run_backtest
    from alertsieve.backtest.run import by_survey
    from alertsieve.backtest.sources import load_sources
    from alertsieve.filtering.discovery import chosen
    from alertsieve.filtering.scores.discovery import discover_models
    from alertsieve.spark.session import command_session

    filters = chosen(filter, filter_path)
    rows = []
    with command_session("alertsieve-backtest", conf=_QUIET_UI) as spark:
        sources = {a.decoder.survey: a for a in load_sources(spark, input, bootstrap, schema_dir)}
        chosen_by_survey = by_survey(filters, list(sources), ", ".join(input), named=bool(filter))
        read = {s: a.raw.count() for s, a in sources.items()} if len(sources) > 1 else {}
        models = discover_models(model_path or [])
        for survey, mine in chosen_by_survey.items():
            found = run_backtest(spark, mine, sources[survey], catalog_dir, since, until, models)
            aside = sum(n for s, n in read.items() if s != survey)
            rows += [replace(r, left_aside=aside) for r in found]
        text, ok = report(rows, max_rate)
    say(text)
    return 0 if ok else 1


def check(
    say: Say,
    *,
    name: str | None = None,
    filter_path: list[str] | None = None,
    catalog_dir: str = "catalogs",
    model_path: list[str] | None = None,
) -> int:
    """Each filter compiled and run on sample alerts of every schema version of its survey, a
    line each (``ok`` with the fields it lacks on older versions, or ``FAILED`` and why); 1 when
    one failed."""
    from alertsieve.catalogs.store import CatalogError
    from alertsieve.filtering.discovery import chosen
    from alertsieve.filtering.lacking import lacking_fields, lacking_lines
    from alertsieve.filtering.model import FilterError
    from alertsieve.filtering.prepare import prepare
    from alertsieve.filtering.scores.discovery import discover_models
    from alertsieve.publish.payloads import check_payload, record_types
    from alertsieve.spark.session import command_session
    from alertsieve.view.decode_settings import DecodeSettings
    from alertsieve.view.surveys import rubin_decoder, ztf_decoder

    filters = chosen(name, filter_path)
    decoders = {"rubin": rubin_decoder(DecodeSettings(survey="rubin")), "ztf": ztf_decoder([])}
    models = discover_models(model_path or [])
    failures = 0
    with command_session("alertsieve-filters-check", conf=_QUIET_UI) as spark:
        for f in filters:
            decoder = decoders[f.survey or "rubin"]

            def payload(samples, f=f, decoder=decoder) -> None:
                check_payload(f)
                record_types([f], decoder, {f.name: ""}, samples)  # its fields, every version

            try:
                prepared = prepare(
                    spark, [f], decoder, catalog_dir=catalog_dir, check=payload, models=models
                )
                say(f"ok      {f.name} ({decoder.survey})")
                for line in lacking_lines(lacking_fields(decoder, [f], prepared.reads)):
                    say(f"        {line}")
            except (FilterError, CatalogError) as e:
                failures += 1
                say(f"FAILED  {e}")
    return 1 if failures else 0


def diff(
    say: Say,
    *,
    name: str | None = None,
    input: list[str] | None = None,
    against: str | None = None,
    bootstrap: str | None = None,
    schema_dir: str | None = None,
    show: int = 20,
    filter_path: list[str] | None = None,
    catalog_dir: str = "catalogs",
    model_path: list[str] | None = None,
) -> int:
    """The alerts of ``input`` that the discovered version of filter ``name`` adds and drops
    against the one at ``against`` (the copy that runs now)."""
    from alertsieve.backtest.diff import diff as run_diff
    from alertsieve.backtest.diff import diff_lines, filter_named
    from alertsieve.backtest.sources import load_alerts
    from alertsieve.filtering.model import FilterError
    from alertsieve.filtering.scores.discovery import discover_models
    from alertsieve.spark.session import command_session

    if not name or "," in name or not input or not against:
        raise FilterError(
            "filters diff takes one filter NAME, --input (alerts) and --against PATH"
            " (the file or folder holding the filter as it runs now)"
        )
    after = filter_named(name, filter_path or [])
    before = filter_named(name, [against], builtin=False)
    with command_session("alertsieve-filters-diff", conf=_QUIET_UI) as spark:
        alerts = load_alerts(spark, input, bootstrap, schema_dir)
        result = run_diff(
            spark, before, after, alerts, catalog_dir, discover_models(model_path or [])
        )
    say("\n".join(diff_lines(result, against, after.origin, show)))
    return 0


#: The tasks by the command that runs them: what a warm request names.
TASKS: dict[str, Callable[..., int]] = {
    "backtest": backtest,
    "filters check": check,
    "filters diff": diff,
}
