"""Indexing traced arrays: `x[idx]` with NumPy's basic indexing (ints, slices,
None, Ellipsis) and concrete integer or boolean arrays."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core.trace import Tracer
from ..primitives import indexing
from ..primitives.indexing import StaticIndex
from .operands import Array, ArrayLike, operand

__all__: list[str] = []  # indexing is reached through x[idx]



def _index_entry(i: Any) -> Any:
    if i is None or i is Ellipsis:
        return i
    if isinstance(i, slice):
        return slice(*(None if v is None else operator.index(v) for v in (i.start, i.stop, i.step)))
    if isinstance(i, (bool, np.bool_)):
        return np.asarray(i)
    if isinstance(i, (int, np.integer)):
        return int(i)
    if isinstance(i, Tracer):
        if i.ndim == 0 and i.dtype.kind in "iu":
            return operator.index(i)  # needs a concrete value
        i = i._concrete("index")
    arr = np.asarray(i)
    if arr.dtype.kind not in "iub":
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer "
            f"or boolean arrays are valid indices, got {type(i).__name__} of dtype {arr.dtype}"
        )
    return arr


def static_index(idx: Any) -> StaticIndex:
    """`idx` normalized to the static index the getitem primitive takes."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    return StaticIndex(_index_entry(i) for i in entries)


def getitem(x: ArrayLike, idx: Any) -> Array:
    """`x[idx]` for a traced `x`."""
    return indexing.getitem(operand(x), idx=static_index(idx))
