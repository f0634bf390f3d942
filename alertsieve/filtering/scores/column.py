"""The ``scores`` column of the filter view: each model a filter reads, run once per alert.

Each model is one Arrow UDF over its declared columns (null where its gate does not pass, so
those alerts' columns are not shipped to Python), in a hidden column of its own
(``_model_<name>``: its outputs, and the chunk's error, seconds and rows); ``scores`` is a struct
of the outputs, which SQL filters, Python filters, ``fields`` payloads and backtests read. However
many filters read ``scores.x``, Spark evaluates the UDF once per row (a Python UDF is never
duplicated into the expressions that use it), which the job counts: invocations = alerts.
The measured cost of the old pandas UDF path, against this one, is in docs/benchmarks.md."""

from __future__ import annotations

import re
from dataclasses import dataclass

from alertsieve.filtering.scores.model import Model
from alertsieve.filtering.scores.runtime import ERROR, ROWS, SECONDS, Runtime, guarded
from alertsieve.filtering.sql_text import without_strings

SCORES = "scores"
_NAMED = re.compile(r"(?<![\w.`])`?scores`?\s*\.\s*`?([A-Za-z]\w*)`?", flags=re.I)


def named_models(expression: str) -> set[str]:
    """The models an expression reads: ``scores.ztf_anomaly > 0.5`` -> {'ztf_anomaly'}."""
    return set(_NAMED.findall(without_strings(expression)))


def hidden(model: Model) -> str:
    """The column holding ``model``'s UDF result: outputs, error, seconds, rows."""
    return f"_model_{model.name}"


@dataclass(frozen=True)
class Scoring:
    """The models a job's filters read, in a fixed order, and how they run."""

    models: tuple[Model, ...] = ()
    runtime: Runtime = Runtime()

    @property
    def versions(self) -> dict[str, str]:
        return {m.name: m.version for m in self.models}


def result_type(model: Model) -> str:
    """The UDF's struct: each output of its type, then the error, seconds and rows of its chunk."""
    outputs = ", ".join(f"`{o}`: {model.output_type(o)}" for o in model.output_names)
    return f"struct<{outputs}, {ERROR}: string, {SECONDS}: double, {ROWS}: long>"


def scores_column(model: Model, result):
    """``scores.<name>``: the output itself (one output), or a struct of the outputs."""
    from pyspark.sql import functions as F

    if not model.outputs:
        return result[model.name].alias(model.name)
    return F.struct(*[result[o].alias(o) for o in model.outputs]).alias(model.name)


def with_scores(frame, scoring: Scoring | None):
    """``frame`` (the filter view) with each model's hidden column and ``scores``; as it is when
    no filter reads a score."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    if scoring is None or not scoring.models:
        return frame
    for model in scoring.models:
        run = guarded(model, scoring.runtime)
        udf = arrow_udf(run, result_type(model))
        inputs = F.struct(*[F.expr(sql).alias(c) for c, sql in model.columns.items()])
        if model.gate:
            inputs = F.when(F.expr(model.gate), inputs)
        frame = frame.withColumn(hidden(model), udf(inputs))
    scores = [scores_column(m, F.col(hidden(m))) for m in scoring.models]
    return frame.withColumn(SCORES, F.struct(*scores))


def scores_type(models: list[Model]) -> str:
    """The type ``scores`` takes when every model of ``models`` runs: what the start-up analysis
    of a filter stands in for it (a typed null), without running any."""
    parts = []
    for m in models:
        if m.outputs:
            inner = ", ".join(f"`{o}`: {m.output_type(o)}" for o in m.outputs)
            parts.append(f"`{m.name}`: struct<{inner}>")
        else:
            parts.append(f"`{m.name}`: {m.output_type(m.name)}")
    return f"struct<{', '.join(parts)}>"
