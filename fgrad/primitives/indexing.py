"""Indexing: `getitem` (NumPy indexing with a static index) and `index_add`,
its transpose (`x.at[idx].add(y)`: a copy of x with y added at idx). Their
batch rules put the batch first and prepend a full slice to the index.

The index is a parameter, not an operand: ints, slices, None, Ellipsis, and
concrete integer or boolean arrays. Integer-array indices may repeat, so
index_add accumulates with `numpy.add.at` when the index holds arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.rules import batch_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, shapes
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

def _batched_index(idx: StaticIndex) -> tuple[StaticIndex, int]:
    """The index for a batch in front, and where the batch axis ends up: NumPy
    moves the axes of separated integer-array indices to the front."""
    full = StaticIndex((slice(None), *idx))
    positions = [i for i, e in enumerate(full) if isinstance(e, np.ndarray)]
    if positions and positions[-1] - positions[0] + 1 != len(positions):
        arrays = [e for e in full if isinstance(e, np.ndarray)]
        return full, max(1 if a.dtype == bool else a.ndim for a in arrays)
    return full, 0


def _getitem_batch(args: list[Any], dims: list[Any], *, idx: StaticIndex) -> tuple[Any, int]:
    full, out_dim = _batched_index(idx)
    return getitem(batching.move_axis(args[0], dims[0], 0), idx=full), out_dim


batch_rules[getitem_p] = _getitem_batch


def _index_add_batch(args: list[Any], dims: list[Any], *, idx: StaticIndex) -> tuple[Any, int]:
    (x, y), (dx, dy) = args, dims
    full, moved = _batched_index(idx)
    if moved:
        raise NotImplementedError(
            "batching index_add with integer-array indices separated by other indices is not "
            "supported; put the array indices next to each other"
        )
    size = batching.batch_size(args, dims)
    x = batching.with_batch_axis(x, dx, size)
    if dy is not None:  # line one example of y up with the indexed part of one example of x
        y = batching.move_axis(y, dy, 0)
        selected = _getitem_aval(get_aval(x), idx=full).ndim
        shape = get_aval(y).shape
        if len(shape) < selected:
            y = shapes.reshape(y, new_shape=(size,) + (1,) * (selected - len(shape)) + shape[1:])
    return index_add(x, y, idx=full), 0


batch_rules[index_add_p] = _index_add_batch

getitem: Callable[..., Any] = getitem_p.bind
index_add: Callable[..., Any] = index_add_p.bind
