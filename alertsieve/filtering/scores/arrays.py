"""An Arrow batch's columns as numpy arrays, for models that take their rows as Arrow
(``batch = "arrow"``): a scalar column as one array, a light curve (a list per alert) as one flat
array of every point and the offsets where each alert's points start. A model then works on
whole columns, with no Python object per alert or per point: what makes a model read 400
earlier detections per alert at the stream's rate."""

from __future__ import annotations

import numpy as np


def _column(batch, name: str):
    import pyarrow as pa

    column = batch.column(name)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _numpy(array, dtype) -> np.ndarray:
    """Nulls as NaN (numbers) or None (strings)."""
    values = array.to_numpy(zero_copy_only=False)
    return values if dtype is None else np.asarray(values, dtype=dtype)


def scalars(batch, name: str, dtype="float64") -> np.ndarray:
    """One value per alert; a null is NaN (``dtype=None``: as Arrow converts it)."""
    return _numpy(_column(batch, name), dtype)


def lists(batch, name: str, dtype="float64") -> tuple[np.ndarray, np.ndarray]:
    """(values, offsets) of a list column: alert ``i``'s points are
    ``values[offsets[i]:offsets[i + 1]]``; a null list has none, a null point is NaN."""
    import pyarrow.compute as pc

    column = _column(batch, name)
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(column) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _numpy(pc.list_flatten(column), dtype), offsets


def owners(offsets: np.ndarray) -> np.ndarray:
    """The alert (its row in the batch) of each point of a flat column."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
