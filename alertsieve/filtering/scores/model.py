"""A model: what it is, where it comes from, the view columns it reads, how to load it and how
to score a batch.

A filter author reads ``scores.<name>`` as any other column; what the model computes, and how
much it costs, is the model's module's business. The job needs from it:

- ``columns``: pandas column -> SQL expression over the filter view (features and catalog matches
  included), as a Python filter declares them: only those fields are decoded for it;
- ``files``: the files it loads (an ONNX graph, a table of means); their hashes and the module's
  source are its version, part of the version of every filter that reads it;
- ``load(files, runtime)``: called once per Python worker process and per version of the files
  (``alertsieve.filtering.scores.runtime``), returns whatever ``predict`` needs;
- ``predict(state, columns)``: one batch of rows in, one result per row out. With ``batch =
  "arrow"`` the rows come as a ``pyarrow.RecordBatch`` of ``columns`` (a light curve as one flat
  array and its offsets: ``alertsieve.filtering.scores.arrays``, no Python object per point) and
  the result is an array (one output) or a mapping output -> array; with ``batch = "pandas"``
  (the default, the easiest to write) a pandas DataFrame in, a Series or a DataFrame of
  ``outputs`` out.

A model may declare a ``gate``, a SQL condition over the view: only the alerts it passes are
sent to ``predict`` (the others are not even shipped to Python), and the others get the
model's ``defaults`` (null unless given). An expensive model runs only where it is needed, as
Fink's pre-cuts do, and a model's own rule for alerts it cannot score (CATS gives class -1 to
an alert with one detection) is a gate, not a branch inside ``predict``.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from alertsieve.filtering.model import FilterError

#: Hex digits of a model's version, as a filter's (``alertsieve.publish.versions``).
VERSION_DIGITS = 12
#: How ``predict`` takes its rows.
BATCHES = ("pandas", "arrow")
#: The types an output may take (Spark SQL names); double unless the model says otherwise.
OUTPUT_TYPES = ("double", "int", "bigint", "boolean", "string")


class ModelError(FilterError):
    """A model that cannot run, or a filter that reads a score no model gives: named, with the
    fix. A ``FilterError``: the filter reading it is refused as any filter failing its checks."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Model:
    """A model whose scores filters read as ``scores.<name>``."""

    name: str
    survey: str  # 'rubin' or 'ztf': whose alert fields its columns name
    description: str
    #: Where it comes from: paper, package and version, licence.
    source: str
    columns: Mapping[str, str]
    load: Callable[[Mapping[str, Path], Any], Any]
    predict: Callable[[Any, Any], Any]
    files: Mapping[str, Path] = field(default_factory=dict)
    #: Its outputs when more than one: ``scores.<name>.<output>``; none: ``scores.<name>``.
    outputs: Sequence[str] = ()
    #: Output -> Spark SQL type, for outputs that are not doubles (a class code: ``int``).
    types: Mapping[str, str] = field(default_factory=dict)
    #: How ``predict`` takes its rows: ``pandas`` (a DataFrame) or ``arrow`` (a RecordBatch).
    batch: str = "pandas"
    #: SQL over the view: the alerts ``predict`` scores; the others get ``defaults``.
    gate: str | None = None
    #: Output -> its value where the gate does not pass (null when not given).
    defaults: Mapping[str, Any] = field(default_factory=dict)
    origin: str = "defined in code"  # the file it came from, for error messages

    @cached_property
    def version(self) -> str:
        """A short hash of its files and its module's source: change either and every filter
        that reads its score gets a new version (``filters diff`` shows it)."""
        digest = hashlib.sha256(self.code().encode())
        for key in sorted(self.files):
            digest.update(key.encode() + b"\0")
            digest.update(file_digest(Path(self.files[key])).encode())
        return digest.hexdigest()[:VERSION_DIGITS]

    def code(self) -> str:
        """The source of the module that defines ``predict`` (its helpers with it), or of the
        two functions where there is no module file (a notebook)."""
        module = inspect.getmodule(self.predict)
        try:
            return inspect.getsource(module) if module is not None else _functions(self)
        except (OSError, TypeError):
            return _functions(self)

    @property
    def output_names(self) -> list[str]:
        """Its outputs' names, ``[name]`` for a model of one output."""
        return list(self.outputs) or [self.name]

    def output_type(self, output: str) -> str:
        """The Spark SQL type of one output."""
        return self.types.get(output, "double")

    def reads(self) -> list[str]:
        """Every SQL expression over the view it reads: its columns, and its gate."""
        return [*self.columns.values(), *([self.gate] if self.gate else [])]

    def check(self) -> None:
        """A model that cannot be run: fails naming the file and the fix."""
        from alertsieve.filtering.checks import NAME

        if not NAME.match(self.name) or "-" in self.name:
            raise ModelError(
                f"model {self.name!r} ({self.origin}): names are letters, digits and '_',"
                " starting with a letter (filters read it as scores.NAME)",
                origin=self.origin,
            )
        if self.survey not in ("rubin", "ztf"):
            raise ModelError(
                f"model {self.name!r} ({self.origin}): survey {self.survey!r}: give 'rubin' or 'ztf'",
                origin=self.origin,
            )
        if not self.columns:
            raise ModelError(
                f"model {self.name!r} ({self.origin}): declares no columns; give columns ="
                " {pandas name: SQL over the filter view}",
                origin=self.origin,
            )
        self._check_batches()
        for key, path in self.files.items():
            if not Path(path).is_file():
                raise ModelError(
                    f"model {self.name!r} ({self.origin}): file {key!r} is not at {path}",
                    origin=self.origin,
                )

    def _check_batches(self) -> None:
        """Its batch kind, output types, gate and defaults."""
        where = f"model {self.name!r} ({self.origin})"
        if self.batch not in BATCHES:
            raise ModelError(
                f"{where}: batch {self.batch!r}: give one of {', '.join(BATCHES)}",
                origin=self.origin,
            )
        for output in {*self.types, *self.defaults}:
            if output not in self.output_names:
                raise ModelError(
                    f"{where}: types/defaults name {output!r}, not one of its outputs"
                    f" {self.output_names}",
                    origin=self.origin,
                )
        for output, kind in self.types.items():
            if kind not in OUTPUT_TYPES:
                raise ModelError(
                    f"{where}: output {output!r} of type {kind!r}: give one of"
                    f" {', '.join(OUTPUT_TYPES)}",
                    origin=self.origin,
                )
        if self.gate is not None and not self.gate.strip():
            raise ModelError(
                f"{where}: gate is empty; give a SQL condition over the view, or no gate",
                origin=self.origin,
            )


def file_digest(path: Path) -> str:
    """SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _functions(model: Model) -> str:
    parts = []
    for function in (model.load, model.predict):
        try:
            parts.append(inspect.getsource(function))
        except (OSError, TypeError):
            code = function.__code__
            parts.append(code.co_code.hex() + repr(code.co_consts))
    return "\n".join(parts)
