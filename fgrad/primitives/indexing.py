"""Indexing: `getitem` (NumPy indexing with a static index) and `index_add`,
its transpose (`x.at[idx].add(y)`: a copy of x with y added at idx).

The index is a parameter, not an operand: ints, slices, None, Ellipsis, and
concrete integer or boolean arrays. Integer-array indices may repeat, so
index_add accumulates with `numpy.add.at` when the index holds arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray
from ..core.rules import transpose_rules
from ..core.trace import Primitive
from . import derivatives as d

__all__ = ["StaticIndex", "getitem", "index_add"]


class StaticIndex(tuple):
    """A normalized NumPy index, printed in NumPy's syntax: ``[1:3, None]``."""

    __slots__ = ()

    def has_arrays(self) -> bool:
        return any(isinstance(i, np.ndarray) for i in self)

    def __str__(self) -> str:
        def one(i: Any) -> str:
            if isinstance(i, slice):
                start = "" if i.start is None else str(i.start)
                stop = "" if i.stop is None else str(i.stop)
                return f"{start}:{stop}" + ("" if i.step is None else f":{i.step}")
            if i is Ellipsis:
                return "..."
            if isinstance(i, np.ndarray):
                return f"<{i.dtype.name}{list(i.shape)}>"
            return str(i)

        return "[" + ", ".join(one(i) for i in self) + "]"

    __repr__ = __str__


def _getitem_aval(x: ShapedArray, *, idx: StaticIndex) -> ShapedArray:
    # Index a zero-strided stand-in: NumPy works out the shape (and raises its
    # own IndexError) without touching memory.
    stand_in = np.broadcast_to(np.empty((), x.dtype), x.shape)
    return ShapedArray(stand_in[tuple(idx)].shape, x.dtype)


getitem_p = Primitive("getitem", lambda x, *, idx: x[tuple(idx)], _getitem_aval)
d.deflinear(getitem_p)
transpose_rules[getitem_p] = lambda ct, x, *, idx: [index_add(d.zeros(x.aval), ct, idx=idx)]


def _index_add_impl(x: Any, y: Any, *, idx: StaticIndex) -> Any:
    out = np.array(x, copy=True)
    if idx.has_arrays():
        np.add.at(out, tuple(idx), y)
    else:
        out[tuple(idx)] += y
    return out


def _index_add_aval(x: ShapedArray, y: ShapedArray, *, idx: StaticIndex) -> ShapedArray:
    target = _getitem_aval(x, idx=idx).shape
    if np.broadcast_shapes(y.shape, target) != target:
        raise ValueError(f"cannot add values of shape {y.shape} at an index selecting shape {target}")
    return x


def _index_add_transpose(ct: Any, x: Any, y: Any, *, idx: StaticIndex) -> list[Any]:
    ct_x = ct if d.is_linear(x) else None
    ct_y = d.unbroadcast(getitem(ct, idx=idx), y.aval) if d.is_linear(y) else None
    return [ct_x, ct_y]


index_add_p = Primitive("index_add", _index_add_impl, _index_add_aval)
d.deflinear(index_add_p)
transpose_rules[index_add_p] = _index_add_transpose

getitem: Callable[..., Any] = getitem_p.bind
index_add: Callable[..., Any] = index_add_p.bind
