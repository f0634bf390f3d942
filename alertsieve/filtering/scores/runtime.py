"""Where a model runs: in Spark's Python workers, loaded once per worker process and per version
of its files (not per batch: an ONNX forest takes ~0.2 s to load), each chunk of rows scored in
a guard that turns an exception into null scores and an error, so one failing model cannot
stop the batch and the filters that do not read it go on.

ONNX Runtime is the way to run a converted model (scikit-learn through ``skl2onnx``, PyTorch,
Keras): ``Runtime.onnx`` opens a graph with the job's threads and execution providers. One
intra-op thread by default: Spark already runs a Python worker per core, and a tree ensemble's
sum is bit-stable only when one thread adds it up."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The fields of a model's column beside its outputs: the first error of the chunk, the seconds
#: the chunk took and its rows (on the chunk's first row; the job sums them per batch).
ERROR, SECONDS, ROWS = "_error", "_seconds", "_rows"

#: Per worker process: (model name, version) -> what its ``load`` returned.
_LOADED: dict[tuple[str, str], Any] = {}


@dataclass(frozen=True)
class Runtime:
    """How the job runs models: ONNX Runtime's intra-op threads and execution providers."""

    threads: int = 1
    providers: tuple[str, ...] = ("CPUExecutionProvider",)

    def onnx(self, graph: bytes | str | Path):
        """An ONNX Runtime session of ``graph`` (a file or its bytes) with these settings."""
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: not a warning per chunk on output shapes
        source = str(graph) if isinstance(graph, Path) else graph
        return onnxruntime.InferenceSession(
            source, sess_options=options, providers=list(self.providers)
        )


def loaded(name: str, version: str, load: Callable, files: Mapping[str, Path], runtime: Runtime):
    """The model's loaded state in this process, loading it the first time its version is met."""
    key = (name, version)
    if key not in _LOADED:
        _LOADED[key] = load({k: Path(v) for k, v in files.items()}, runtime)
    return _LOADED[key]


def guarded(model, runtime: Runtime) -> Callable:
    """The pandas UDF body of ``model`` (an ``alertsieve.filtering.scores.model.Model``): its
    columns in, a frame of its outputs plus ERROR, SECONDS and ROWS out. An exception, or a
    result of the wrong shape, gives nulls for the chunk and the error on its first row."""
    name, version, outputs = model.name, model.version, model.output_names
    load, predict, files = model.load, model.predict, dict(model.files)

    def run(columns):
        import pandas as pd

        start = time.perf_counter()
        rows = len(columns)
        try:
            state = loaded(name, version, load, files, runtime)
            out = _as_frame(predict(state, columns), outputs, rows).astype("float64")
            error = [None] * rows
        except Exception as e:  # noqa: BLE001 - reported per batch, see the module's docstring
            out = pd.DataFrame({o: pd.Series([None] * rows, dtype=object) for o in outputs})
            error = [f"model {name}: {type(e).__name__}: {e}"] + [None] * (rows - 1)
        out[ERROR] = error
        out[SECONDS] = [time.perf_counter() - start] + [None] * (rows - 1)
        out[ROWS] = [rows] + [None] * (rows - 1)
        return out.reset_index(drop=True)

    return run


def _as_frame(result, outputs: list[str], rows: int):
    """``predict``'s result as a frame of ``outputs``, or a TypeError saying what came back."""
    import numpy as np
    import pandas as pd

    if isinstance(result, pd.Series | np.ndarray) and len(outputs) == 1:
        result = pd.DataFrame({outputs[0]: np.asarray(result, dtype="float64").reshape(-1)})
    if not isinstance(result, pd.DataFrame):
        raise TypeError(
            f"predict returned {type(result).__name__}; expected a float Series (one output)"
            f" or a DataFrame of {outputs}"
        )
    missing = [o for o in outputs if o not in result.columns]
    if missing or len(result) != rows:
        raise TypeError(
            f"predict returned {len(result)} rows of {list(result.columns)}; expected {rows}"
            f" rows of {outputs}"
        )
    return result[outputs].reset_index(drop=True)
