"""Which models a set of filters reads: ``scores.<name>`` in their expressions and fields, each
answered by a model of the job's survey, or refused naming the filter and the fix (a typo gets
the closest names; a model of the other survey is named as such)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from alertsieve.filtering.model import Filter
from alertsieve.filtering.scores.column import named_models
from alertsieve.filtering.scores.model import Model, ModelError


def expressions_of(f: Filter) -> list[str]:
    """Everything of a filter that reads the view: its expressions and its fields (a catalog, a
    score or a field read by either is read by the filter)."""
    return [*f.expressions().values(), *f.fields.values()]


def models_read(f: Filter) -> set[str]:
    """The model names a filter reads."""
    return {n for e in expressions_of(f) for n in named_models(e)}


def choose_models(filters: Iterable[Filter], models: list[Model], survey: str) -> list[Model]:
    """The models of ``survey`` the filters read, in name order; a score no model of the survey
    gives fails naming the filter."""
    mine = {m.name: m for m in models if m.survey == survey}
    others = {m.name: m for m in models if m.survey != survey}
    chosen: dict[str, Model] = {}
    for f in filters:
        for name in sorted(models_read(f)):
            if name in mine:
                chosen[name] = mine[name]
                continue
            where = f"filter {f.name!r} ({f.origin}) reads scores.{name}"
            if name in others:
                m = others[name]
                raise ModelError(
                    f"{where}, the score of model {name} ({m.origin}), a model of {m.survey}"
                    f" alerts; this job reads {survey} alerts (its models: {_names(mine)})",
                    filter=f.name,
                )
            close = difflib.get_close_matches(name, list(mine), n=1, cutoff=0.6)
            hint = f"; did you mean scores.{close[0]}?" if close else f" ({_names(mine)})"
            raise ModelError(f"{where}: no model {name} for {survey} alerts{hint}", filter=f.name)
    return [chosen[n] for n in sorted(chosen)]


def _names(models: dict[str, Model]) -> str:
    return ", ".join(f"scores.{n}" for n in sorted(models)) or "none found"
