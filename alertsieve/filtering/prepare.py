"""Filters made ready to run over a source of alerts, the one way the job, backtest, diff,
``filters check`` and the benchmarks do it: the catalogs they name loaded, real sample alerts
decoded as the source's are, the filters checked on them, and the view fields they read found,
so the source's alerts are decoded for those fields only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alertsieve.catalogs.context import CatalogUse, Context, load_context
from alertsieve.filtering.checks import validate
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import Filter
from alertsieve.filtering.references import ViewReferences
from alertsieve.filtering.scores.choose import choose_models, expressions_of
from alertsieve.filtering.scores.column import Scoring
from alertsieve.filtering.scores.discovery import discover_models
from alertsieve.filtering.scores.model import Model
from alertsieve.filtering.scores.runtime import Runtime
from alertsieve.filtering.sql_text import named_catalogs
from alertsieve.view.decoder import Decoder, view_paths
from alertsieve.view.samples import message_frame, rubin_samples


@dataclass(frozen=True)
class Prepared:
    """What running a set of filters over a decoder's alerts needs, settled before the first."""

    context: Context  # the catalogs the filters name (xmatch.*, watch.*)
    samples: Any  # the sample alerts in the filter view, the filters checked on them
    reads: dict[str, list[str]]  # filter -> the view fields it reads
    paths: list[str]  # what to decode: the fields the filters read, the alert id, the tell
    checked: Any = None  # what the caller's ``check`` returned
    scoring: Scoring | None = None  # the models the filters read (scores.*), once per alert


def prepare(
    spark,
    filters: list[Filter],
    decoder: Decoder,
    head: list[bytes] = (),
    catalog_dir: str | Path = "catalogs",
    heap_mb: float | None = None,
    check: Callable[[Any], Any] | None = None,
    models: list[Model] | None = None,
    runtime: Runtime | None = None,
) -> Prepared:
    """Load the catalogs ``filters`` name from ``catalog_dir`` (refused when their broadcast would
    not fit a driver heap of ``heap_mb``), decode sample alerts (``head``: the source's first
    messages, ZTF's samples), validate the filters on them, then find what they read.

    ``check`` runs on the sample alerts once the filters compile and before their reads are
    analysed: what a higher layer checks on them (the fields records of ``alertsieve.publish``)
    fails there with its own message, not as an analysis error of the reads.

    ``models``: those the filters may read as ``scores.<name>`` (default: every model found,
    ``alertsieve.filtering.scores.discovery``); the ones they read run, with ``runtime``."""
    models = discover_models() if models is None else models
    context = load_context(catalog_dir, catalog_uses(filters), decoder.detection, heap_mb)
    scoring = Scoring(tuple(choose_models(filters, models, decoder.survey)), runtime or Runtime())
    samples = sample_alerts(spark, decoder, head, context, scoring)
    validate(filters, samples, decoder.view)
    checked = check(samples) if check is not None else None
    survey_models = [m for m in models if m.survey == decoder.survey]
    reads = filter_reads(spark, decoder, filters, context, survey_models)
    return Prepared(context, samples, reads, filter_paths(decoder, reads), checked, scoring)


def catalog_uses(filters: list[Filter]) -> Iterator[CatalogUse]:
    """The catalogs each filter's expressions name, in the filters' order (a fields payload may
    read them too): what ``load_context`` loads, or refuses naming the filter."""
    for f in filters:
        for expression in expressions_of(f):
            for family, name in sorted(named_catalogs(expression)):
                yield CatalogUse(f"filter {f.name!r} ({f.origin})", family, name)


def sample_alerts(
    spark,
    decoder: Decoder,
    head: list[bytes] = (),
    context: Context | None = None,
    scoring: Scoring | None = None,
):
    """Real sample alerts in the filter view (all of it but the cutouts, unless a model reads
    them: an image model), decoded as the job decodes: for Rubin, lsst-alert-packet's sample
    alert of every version the job reads; for ZTF, the topic's first messages. Filters compile
    and Python filters run on these at start-up."""
    messages = list(head) if decoder.survey == "ztf" else rubin_samples(decoder)
    models = scoring.models if scoring is not None else ()
    images = any(c in sql for m in models for sql in m.reads() for c in decoder.cutouts)
    decoded = decoder.decode(
        message_frame(spark, messages), view_paths(decoder, with_cutouts=images)
    )
    return filter_view(decoded.where("_reason IS NULL"), context=context, scoring=scoring)


def filter_reads(
    spark,
    decoder: Decoder,
    filters: list[Filter],
    context: Context | None = None,
    models: list[Model] = (),
) -> dict[str, list[str]]:
    """Per filter, the view fields it reads (Spark's analysis of its expressions, one analysis
    per expression shape: ``alertsieve.filtering.references``), a score's model's columns
    included."""
    with ViewReferences(spark, decoder.view, context, models) as refs:
        return {f.name: refs.read_by(expressions_of(f)) for f in filters}


def filter_paths(decoder: Decoder, reads: dict[str, list[str]]) -> list[str]:
    """What the hot path decodes: the fields the filters read (``filter_reads``), the alert id
    and the decoder's tell. Avro skips everything else, cutouts included."""
    used = {p for paths in reads.values() for p in paths}
    return list(
        dict.fromkeys([decoder.tell, decoder.id_path, *[p for p in decoder.paths if p in used]])
    )
