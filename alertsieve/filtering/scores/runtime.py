"""Where a model runs: in Spark's Python workers, loaded once per worker process and per version
of its files (not per batch: an ONNX forest takes ~0.2 s to load), each Arrow batch of rows
(an Arrow UDF: the columns arrive as Arrow arrays, not through pandas row by row) scored in a
guard that turns an exception into null scores and an error, so one failing model cannot
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
    """The Arrow UDF body of ``model`` (an ``alertsieve.filtering.scores.model.Model``): a struct
    of its columns in (null where its gate did not pass), a struct of its outputs plus ERROR,
    SECONDS and ROWS out. Only the rows the gate passed reach ``predict``; the others get the
    model's defaults. An exception, or a result of the wrong shape, gives nulls for the chunk and
    the error on its first row."""
    name, version, outputs = model.name, model.version, model.output_names
    load, predict, files, batch = model.load, model.predict, dict(model.files), model.batch
    types = {o: arrow_type(model.output_type(o)) for o in outputs}
    defaults = {o: model.defaults.get(o) for o in outputs}

    def run(inputs):
        import numpy as np
        import pyarrow as pa

        start = time.perf_counter()
        rows = len(inputs)
        error = None
        try:
            state = loaded(name, version, load, files, runtime)
            passed = inputs.is_valid().to_numpy(zero_copy_only=False)
            scored = int(passed.sum())
            chosen = inputs if scored == rows else inputs.filter(pa.array(passed))
            result = {}
            if scored:
                rowset = pa.RecordBatch.from_struct_array(chosen)
                taken = rowset.to_pandas() if batch == "pandas" else rowset
                result = _as_arrays(predict(state, taken), outputs, types, scored)
            columns = [_spread(result.get(o), passed, defaults[o], types[o]) for o in outputs]
        except Exception as e:  # noqa: BLE001 - reported per batch, see the module's docstring
            columns = [pa.nulls(rows, types[o]) for o in outputs]
            error = f"model {name}: {type(e).__name__}: {e}"
        first = np.zeros(rows, dtype=bool)
        first[:1] = True
        seconds = time.perf_counter() - start
        return pa.StructArray.from_arrays(
            [
                *columns,
                pa.array([error] + [None] * (rows - 1), pa.string())[:rows],
                pa.array([seconds] * rows, pa.float64(), mask=~first),
                pa.array([rows] * rows, pa.int64(), mask=~first),
            ],
            names=[*outputs, ERROR, SECONDS, ROWS],
        )

    import pyarrow as pa

    # Arrays in, an array out: what makes Spark call it as a scalar Arrow UDF.
    run.__annotations__ = {"inputs": pa.Array, "return": pa.Array}
    return run


def arrow_type(kind: str):
    """A Spark SQL output type (``alertsieve.filtering.scores.model.OUTPUT_TYPES``) as Arrow's."""
    import pyarrow as pa

    return {
        "double": pa.float64(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "boolean": pa.bool_(),
        "string": pa.string(),
    }[kind]


def _as_arrays(result, outputs: list[str], types: dict, rows: int) -> dict:
    """``predict``'s result as one Arrow array per output, NaN made null (Spark orders NaN above
    every number: ``scores.x > 0.5`` would pass an alert the model could not score), or a
    TypeError saying what came back."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    if isinstance(result, pa.RecordBatch | pa.Table):
        result = {n: result.column(n) for n in result.column_names}
    elif isinstance(result, pd.DataFrame):
        result = {c: result[c] for c in result.columns}
    elif len(outputs) == 1 and isinstance(result, pd.Series | np.ndarray | pa.Array | list):
        result = {outputs[0]: result}
    if not isinstance(result, dict):
        raise TypeError(
            f"predict returned {type(result).__name__}; expected an array (one output)"
            f" or a mapping of {outputs}"
        )
    missing = [o for o in outputs if o not in result]
    lengths = {o: len(result[o]) for o in outputs if o not in missing}
    if missing or any(n != rows for n in lengths.values()):
        raise TypeError(
            f"predict returned {lengths} rows of {list(result)}; expected {rows} rows of {outputs}"
        )
    return {o: _array(result[o], types[o]) for o in outputs}


def _array(values, kind):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array(np.asarray(values), from_pandas=True)
    if pa.types.is_floating(values.type):
        values = pc.if_else(pc.is_nan(values), pa.scalar(None, values.type), values)
    return values.cast(kind)


def _spread(values, passed, default, kind):
    """The scored rows' values in their places, ``default`` where the gate did not pass."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if values is not None and passed.all():
        return values
    if values is None:
        values = pa.nulls(0, kind)
    index = pa.array(np.cumsum(passed) - 1, mask=~passed)
    spread = values.take(index) if len(values) else pa.nulls(len(passed), kind)
    if default is None:
        return spread
    return pc.if_else(pa.array(passed), spread, pa.scalar(default, kind))
