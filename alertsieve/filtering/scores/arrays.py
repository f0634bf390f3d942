"""An Arrow batch's columns as numpy arrays, for models that take their rows as Arrow
(``batch = "arrow"``): a scalar column as one array, a light curve (a list per alert) as one flat
array of every point and the offsets where each alert's points start. A model then works on
whole columns, with no Python object per alert or per point: what makes a model read 400
earlier detections per alert at the stream's rate."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is the job's: a subscriber's install imports this without it
    import numpy as np


def _column(batch, name: str):
    import pyarrow as pa

    column = batch.column(name)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _numpy(array, dtype) -> np.ndarray:
    """Nulls as NaN (numbers) or None (strings)."""
    import numpy as np

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
    return _numpy(pc.list_flatten(column), dtype), _offsets(column)


def categories(batch, name: str, known: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(codes, offsets) of a list-of-strings column (a light curve's bands): each point's
    position in ``known``, ``len(known)`` for any other value, -1 for null; matched by Arrow, so
    no Python string is made per point."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = _column(batch, name)
    flat = pc.list_flatten(column)
    found = pc.index_in(flat, value_set=pa.array(known, type=flat.type))
    other = pc.if_else(pc.is_null(flat), -1, len(known))
    codes = pc.coalesce(found, other).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, _offsets(column)


def _offsets(column) -> np.ndarray:
    """Where each alert's points start in a list column's flat values (a null list has none)."""
    import numpy as np
    import pyarrow.compute as pc

    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(column) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def owners(offsets: np.ndarray) -> np.ndarray:
    """The alert (its row in the batch) of each point of a flat column."""
    import numpy as np

    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
