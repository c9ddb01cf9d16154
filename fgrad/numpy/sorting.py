"""Sorting and searching: sort, argsort, partition, argpartition, lexsort,
searchsorted, median, and unique (on concrete values only).

sort's derivative permutes the tangent as the values are permuted; median's
flows to the middle element, or half to each of the two middle ones. Index
results (argsort, searchsorted, ...) have no derivative. Sorts under a
transform are stable, whatever `kind` asks for.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.avals import get_aval, is_inexact_dtype
from ..core.trace import EVAL_TRACE, Tracer, ctx
from ..primitives import elementwise as ew
from ..primitives import indexing, shapes, sorting
from ..primitives import reductions as red
from .indexing import static_index
from .operands import (
    Array,
    ArrayLike,
    check_no_out,
    concrete_value,
    normalize_axes,
    operand,
    shape_of,
    static_argument,
)
from .reductions import mean
from .shaping import ravel

__all__ = [
    "sort", "argsort", "partition", "argpartition", "lexsort", "searchsorted", "median", "unique",
]


def _along(a: Any, axis: int | None, zero_d_as_1d: bool = False) -> tuple[Any, int]:
    """`a` and the non-negative axis to work along (axis None: the flattened array;
    with `zero_d_as_1d`, a 0-d `a` is taken as 1-d, as NumPy's argsort does)."""
    a = operand(a)
    shape = shape_of(a)
    if axis is None or (zero_d_as_1d and not shape):
        a = ravel(a)
        if axis is None:
            return a, 0
        shape = (1,)
    (axis,) = normalize_axes(operator.index(axis), len(shape))
    return a, axis


def _check_order(order: Any) -> None:
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")


def sort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
         stable: bool | None = None) -> Array:
    """numpy.sort along `axis` (the last by default; None: the flattened array). Its
    derivative moves each tangent with its value.

    >>> sort([[3.0, 1.0, 2.0]])
    array([[1., 2., 3.]])
    """
    if ctx.trace is EVAL_TRACE:
        return np.sort(a, axis=axis, kind=kind, order=order, stable=stable)  # type: ignore[arg-type]
    _check_order(order)
    a, axis = _along(a, axis)
    return sorting.sort(a, axis=axis)


def argsort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
            stable: bool | None = None) -> Array:
    """numpy.argsort: the indices that sort `a` along `axis` (a stable sort under a
    transform: ties keep their order); integers, without a derivative.

    >>> argsort([3.0, 1.0, 2.0])
    array([1, 2, 0])
    """
    if ctx.trace is EVAL_TRACE:
        return np.argsort(a, axis=axis, kind=kind, order=order, stable=stable)  # type: ignore[arg-type]
    _check_order(order)
    a, axis = _along(a, axis, zero_d_as_1d=True)
    return sorting.argsort(a, axis=axis)


def _kth(kth: int | Sequence[int], n: int, function: str) -> tuple[int, ...]:
    """The `kth` positions as non-negative ints, with NumPy's errors."""
    out = []
    for k in np.atleast_1d(np.asarray(static_argument(kth, function, "kth"))).ravel():
        if not np.issubdtype(type(k), np.integer):
            raise TypeError(f"Partition index must be integer, got {k!r}")
        if not -n <= k < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")
        out.append(int(k) % n)
    return tuple(out)


def argpartition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1, kind: str = "introselect",
                 order: Any = None) -> Array:
    """numpy.argpartition: indices that put the elements a sort would put at the
    `kth` positions there, smaller ones before and larger ones after (NumPy's
    own arrangement); integers, without a derivative.

    >>> argpartition([3.0, 4.0, 1.0, 2.0], 1)[1]
    np.int64(3)
    """
    if ctx.trace is EVAL_TRACE:
        return np.argpartition(a, kth, axis=axis, kind=kind, order=order)  # type: ignore[arg-type]
    _check_order(order)
    a, axis = _along(a, axis, zero_d_as_1d=True)
    return sorting.argpartition(a, kth=_kth(kth, shape_of(a)[axis], "argpartition"), axis=axis)


def partition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1, kind: str = "introselect",
              order: Any = None) -> Array:
    """numpy.partition: the elements a sort would put at the `kth` positions are
    there, smaller ones before and larger ones after, in NumPy's own arrangement.
    The derivative moves each tangent with its value.

    >>> partition([3.0, 4.0, 1.0, 2.0], 1)[1]
    np.float64(2.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.partition(a, kth, axis=axis, kind=kind, order=order)  # type: ignore[call-overload]
    _check_order(order)
    a, axis = _along(a, axis)
    taken_from = sorting.argpartition(a, kth=_kth(kth, shape_of(a)[axis], "partition"), axis=axis)
    # out[i] = a[taken_from[i]]: `a` sorted by the inverse permutation.
    return sorting.sort_by_key(sorting.argsort(taken_from, axis=axis), a, axis=axis)


def lexsort(keys: Any, axis: int = -1) -> Array:
    """numpy.lexsort: the indices that sort by several keys along `axis`, the last
    key first (`keys` a sequence of equal-shape arrays, or the rows of an array);
    integers, without a derivative.

    >>> lexsort(([1.0, 0.0, 2.0], [1.0, 1.0, 0.0]))
    array([2, 1, 0])
    """
    if ctx.trace is EVAL_TRACE:
        return np.lexsort(keys, axis=axis)
    if isinstance(keys, (Tracer, np.ndarray)) and keys.ndim == 1:
        keys = [keys]  # a single key
    keys = [operand(k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = shape_of(keys[0])
    if any(shape_of(k) != shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    (axis,) = normalize_axes(operator.index(axis), len(shape))
    positions = np.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1))
    order: Any = np.broadcast_to(positions, shape)
    # Stable sorts by each key in turn, from the least significant: each sort
    # rearranges the positions and the keys still to come.
    for i, key in enumerate(keys):
        order = sorting.sort_by_key(key, order, axis=axis)
        keys[i + 1:] = [sorting.sort_by_key(key, k, axis=axis) for k in keys[i + 1:]]
    return order


def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: ArrayLike | None = None) -> Array:
    """numpy.searchsorted: where the values `v` would go in the sorted 1-d array `a`
    (`sorter`: the indices that sort `a`); integers, without a derivative.

    >>> searchsorted([1.0, 2.0, 3.0], [2.5, 0.0])
    array([2, 0])
    """
    if ctx.trace is EVAL_TRACE:
        return np.searchsorted(a, v, side=side, sorter=sorter)  # type: ignore[call-overload]
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = operand(a)
    if sorter is not None:
        a = indexing.getitem(a, idx=static_index(sorter))
    return sorting.searchsorted(a, operand(v), side=side)


def median(a: ArrayLike, axis: int | Sequence[int] | None = None, out: Any = None,
           overwrite_input: bool = False, keepdims: bool = False) -> Array:
    """numpy.median along `axis` (all axes by default; NaN if a NaN is among the
    elements). The derivative flows to the middle element, or half to each of
    the two middle elements when their count is even.

    >>> median([[4.0, 1.0, 3.0, 2.0]], axis=-1)
    array([2.5])
    """
    if ctx.trace is EVAL_TRACE:
        return np.median(a, axis=axis, out=out, overwrite_input=overwrite_input, keepdims=keepdims)
    check_no_out(out, "median")
    a = operand(a)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    n = math.prod(shape[i] for i in axes)
    # The reduced axes moved to the end and flattened into one, which is sorted.
    if axes != tuple(range(len(kept), len(shape))):
        a = shapes.transpose(a, axes=kept + axes)
    lead = (slice(None),) * len(kept)
    flat = shapes.reshape(a, new_shape=tuple(shape[i] for i in kept) + (n,))
    if n == 0:
        result = mean(flat, axis=-1)  # NaN, with NumPy's warning
    else:
        ordered = sorting.sort(flat, axis=len(kept))
        middle = indexing.getitem(ordered, idx=indexing.StaticIndex((*lead, slice((n - 1) // 2, n // 2 + 1))))
        result = mean(middle, axis=-1)
        if is_inexact_dtype(get_aval(flat).dtype):  # NaNs sort last: one at the end means NaN
            last = indexing.getitem(ordered, idx=indexing.StaticIndex((*lead, n - 1)))
            result = ew.where(ew.ne(last, last), np.nan, result)
    return shapes.reshape(result, new_shape=red.kept_shape(shape, axes)) if keepdims else result


def unique(ar: ArrayLike, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True) -> Any:
    """numpy.unique of concrete values: under grad, jvp or vjp, the unique values of
    the primal, without a derivative; under make_jaxpr, jit or vmap an error,
    since the shape of the result depends on the values.

    >>> unique([3.0, 1.0, 3.0])
    array([1., 3.])
    """
    if ctx.trace is EVAL_TRACE:
        return np.unique(ar, return_index=return_index, return_inverse=return_inverse,  # type: ignore[call-overload]
                         return_counts=return_counts, axis=axis, equal_nan=equal_nan)
    value = concrete_value(
        operand(ar),
        "fgrad.numpy.unique needs concrete values: the shape of its result depends on them, but it got "
        "a traced {aval} value whose value is not known under `{transform}` (make_jaxpr, jit or vmap). "
        "Call it outside the transformed function, or on values that are not traced.",
    )
    return np.unique(value, return_index=return_index, return_inverse=return_inverse,  # type: ignore[call-overload]
                     return_counts=return_counts, axis=axis, equal_nan=equal_nan)
