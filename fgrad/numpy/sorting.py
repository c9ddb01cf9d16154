"""Sorting and searching: sort, argsort, partition, argpartition, lexsort,
searchsorted, median, and unique (whose result's shape needs concrete values).

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
from .indexing import static_index, take
from .operands import (
    Array,
    ArrayLike,
    check_no_out,
    concrete_value,
    normalize_axes,
    numpy_when_eager,
    operand,
    shape_of,
    static_argument,
)
from .reductions import mean
from .shaping import ravel

__all__ = [
    "sort", "argsort", "partition", "argpartition", "lexsort", "searchsorted", "median", "unique",
    "quantile", "percentile", "nanmedian", "interp",
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


@numpy_when_eager(np.sort)
def sort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
         stable: bool | None = None) -> Array:
    """numpy.sort along `axis` (the last by default; None: the flattened array). Its
    derivative moves each tangent with its value.

    >>> sort([[3.0, 1.0, 2.0]])
    array([[1., 2., 3.]])
    """
    _check_order(order)
    a, axis = _along(a, axis)
    return sorting.sort(a, axis=axis)


@numpy_when_eager(np.argsort)
def argsort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
            stable: bool | None = None) -> Array:
    """numpy.argsort: the indices that sort `a` along `axis` (a stable sort under a
    transform: ties keep their order); integers, without a derivative.

    >>> argsort([3.0, 1.0, 2.0])
    array([1, 2, 0])
    """
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


@numpy_when_eager(np.argpartition)
def argpartition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1, kind: str = "introselect",
                 order: Any = None) -> Array:
    """numpy.argpartition: indices that put the elements a sort would put at the
    `kth` positions there, smaller ones before and larger ones after (NumPy's
    own arrangement); integers, without a derivative.

    >>> argpartition([3.0, 4.0, 1.0, 2.0], 1)[1]
    np.int64(3)
    """
    _check_order(order)
    a, axis = _along(a, axis, zero_d_as_1d=True)
    return sorting.argpartition(a, kth=_kth(kth, shape_of(a)[axis], "argpartition"), axis=axis)


@numpy_when_eager(np.partition)
def partition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1, kind: str = "introselect",
              order: Any = None) -> Array:
    """numpy.partition: the elements a sort would put at the `kth` positions are
    there, smaller ones before and larger ones after, in NumPy's own arrangement.
    The derivative moves each tangent with its value.

    >>> partition([3.0, 4.0, 1.0, 2.0], 1)[1]
    np.float64(2.0)
    """
    _check_order(order)
    a, axis = _along(a, axis)
    taken_from = sorting.argpartition(a, kth=_kth(kth, shape_of(a)[axis], "partition"), axis=axis)
    # out[i] = a[taken_from[i]]: `a` sorted by the inverse permutation.
    return sorting.sort_by_key(sorting.argsort(taken_from, axis=axis), a, axis=axis)


@numpy_when_eager(np.lexsort)
def lexsort(keys: Any, axis: int = -1) -> Array:
    """numpy.lexsort: the indices that sort by several keys along `axis`, the last
    key first (`keys` a sequence of equal-shape arrays, or the rows of an array);
    integers, without a derivative.

    >>> lexsort(([1.0, 0.0, 2.0], [1.0, 1.0, 0.0]))
    array([2, 1, 0])
    """
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


@numpy_when_eager(np.searchsorted)
def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: ArrayLike | None = None) -> Array:
    """numpy.searchsorted: where the values `v` would go in the sorted 1-d array `a`
    (`sorter`: the indices that sort `a`); integers, without a derivative.

    >>> searchsorted([1.0, 2.0, 3.0], [2.5, 0.0])
    array([2, 0])
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = operand(a)
    if sorter is not None:
        a = indexing.getitem(a, idx=static_index(sorter))
    return sorting.searchsorted(a, operand(v), side=side)


@numpy_when_eager(np.median)
def median(a: ArrayLike, axis: int | Sequence[int] | None = None, out: Any = None,
           overwrite_input: bool = False, keepdims: bool = False) -> Array:
    """numpy.median along `axis` (all axes by default; NaN if a NaN is among the
    elements). The derivative flows to the middle element, or half to each of
    the two middle elements when their count is even.

    >>> median([[4.0, 1.0, 3.0, 2.0]], axis=-1)
    array([2.5])
    """
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
    """numpy.unique. Under grad, jvp or vjp the unique values are found from the
    primal and taken from `ar` where each first occurs, so the derivative flows
    to those elements (JAX's convention at ties); indices and counts have none.
    Under make_jaxpr, jit or vmap it raises: the shape of the result depends on
    the values.

    >>> unique([3.0, 1.0, 3.0])
    array([1., 3.])
    """
    if ctx.trace is EVAL_TRACE:
        return np.unique(ar, return_index=return_index, return_inverse=return_inverse,  # type: ignore[call-overload]
                         return_counts=return_counts, axis=axis, equal_nan=equal_nan)
    ar = operand(ar)
    value = concrete_value(
        ar,
        "fgrad.numpy.unique needs concrete values: the shape of its result depends on them, but it got "
        "a traced {aval} value whose value is not known under `{transform}` (make_jaxpr, jit or vmap). "
        "Call it outside the transformed function, or on values that are not traced.",
    )
    found = np.unique(value, return_index=True, return_inverse=return_inverse,  # type: ignore[call-overload]
                      return_counts=return_counts, axis=axis, equal_nan=equal_nan)
    first = found[1]
    # the values themselves, as elements of `ar`: differentiable
    values = take(ar, first, axis=axis) if isinstance(ar, Tracer) else found[0]
    extra = ([first] if return_index else []) + list(found[2:])
    return (values, *extra) if extra else values


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(a: Any, q: Any, axis: Any, method: str, keepdims: bool, function: str, given: Any) -> Any:
    import fgrad.numpy as fnp

    if method not in _QUANTILE_METHODS:
        methods = ", ".join(_QUANTILE_METHODS)
        raise NotImplementedError(f"fgrad.numpy.{function} supports the methods {methods} under a transform, "
                                  f"not {method!r}")
    a = operand(a)
    shape = get_aval(a).shape
    dtype = np.asarray(getattr(np, function)(np.zeros(1, get_aval(a).dtype), given, method=method)).dtype
    axes = normalize_axes(axis, len(shape))
    rest = [i for i in range(len(shape)) if i not in axes]
    n = int(np.prod([shape[i] for i in axes], dtype=int))
    x = fnp.reshape(fnp.transpose(a, [*axes, *rest]), (n, *[shape[i] for i in rest]))
    x = fnp.sort(fnp.astype(x, dtype) if get_aval(x).dtype != dtype else x, axis=0)
    q = np.asarray(q, np.float64)
    vi = n * q + (1 + q * (1 - 1 - 1)) - 1  # NumPy's virtual index for method 'linear' (alpha = beta = 1)
    lo = np.clip(np.floor(vi), 0, n - 1).astype(np.intp)
    hi = np.clip(lo + 1, 0, n - 1)
    gamma = vi - np.floor(vi)
    if method == "lower":
        hi, gamma = lo, 0 * gamma
    elif method == "higher":
        hi = np.clip(np.ceil(vi), 0, n - 1).astype(np.intp)
        lo, gamma = hi, 0 * gamma
    elif method == "nearest":
        lo = hi = np.clip(np.around(vi), 0, n - 1).astype(np.intp)
    elif method == "midpoint":
        gamma = np.where(vi == np.floor(vi), 0.0, 0.5)
    below, above = x[lo.ravel()], x[hi.ravel()]
    t = np.reshape(gamma.ravel(), (-1,) + (1,) * len(rest)).astype(dtype)
    diff = fnp.subtract(above, below)
    # NumPy's _lerp: from the nearer end, so that t = 0 and t = 1 give the end values exactly
    out = fnp.where(t >= 0.5, fnp.subtract(above, fnp.multiply(diff, 1 - t)),
                    fnp.add(below, fnp.multiply(diff, t)))
    if n and dtype.kind in "fc":
        out = fnp.where(fnp.isnan(x[n - 1]), np.array(np.nan, dtype), out)
    out = fnp.reshape(out, (*q.shape, *[shape[i] for i in rest]))
    if keepdims:
        out = fnp.reshape(out, (*q.shape, *[1 if i in axes else shape[i] for i in range(len(shape))]))
    return out


def quantile(a: ArrayLike, q: ArrayLike, axis: int | Sequence[int] | None = None, out: Any = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False) -> Array:
    """numpy.quantile: the `q`-th quantiles (`q` in [0, 1], concrete) of `a` along `axis`.

    >>> quantile([1.0, 2.0, 4.0, 8.0], [0.25, 0.5])
    array([1.75, 3.  ])
    """
    if ctx.trace is EVAL_TRACE:
        return np.quantile(a, q, axis, out, overwrite_input, method, keepdims)  # type: ignore[call-overload]
    check_no_out(out, "quantile")
    given = static_argument(q, "quantile", "q")
    q = np.asarray(given)
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _quantile(a, q, axis, method, keepdims, "quantile", given)


def percentile(a: ArrayLike, q: ArrayLike, axis: int | Sequence[int] | None = None, out: Any = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False) -> Array:
    """numpy.percentile: the `q`-th percentiles (`q` in [0, 100], concrete) of `a` along `axis`.

    >>> percentile([1.0, 2.0, 4.0, 8.0], 50)
    np.float64(3.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.percentile(a, q, axis, out, overwrite_input, method, keepdims)  # type: ignore[call-overload]
    check_no_out(out, "percentile")
    given = static_argument(q, "percentile", "q")
    q = np.asarray(given)
    q = np.true_divide(q, np.asarray(100, q.dtype) if q.dtype.kind == "f" else 100)
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile(a, q, axis, method, keepdims, "percentile", given)


def nanmedian(a: ArrayLike, axis: int | Sequence[int] | None = None, out: Any = None,
              overwrite_input: bool = False, keepdims: bool = False) -> Array:
    """numpy.nanmedian: the median along `axis` of the values that are not NaN (NaN where all are).

    >>> nanmedian([1.0, np.nan, 4.0, 2.0])
    np.float64(2.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.nanmedian(a, axis, out, overwrite_input, keepdims)
    import fgrad.numpy as fnp

    check_no_out(out, "nanmedian")
    a = operand(a)
    shape = get_aval(a).shape
    if get_aval(a).dtype.kind not in "fc":
        return median(a, axis, keepdims=keepdims)
    axes = normalize_axes(axis, len(shape))
    rest = [i for i in range(len(shape)) if i not in axes]
    n = int(np.prod([shape[i] for i in axes], dtype=int))
    x = fnp.sort(fnp.reshape(fnp.transpose(a, [*axes, *rest]), (n, *[shape[i] for i in rest])), axis=0)
    count = fnp.sum(fnp.logical_not(fnp.isnan(x)), axis=0, keepdims=True)  # NaNs sort last
    lo = fnp.maximum(fnp.floor_divide(count - 1, 2), 0)
    hi = fnp.minimum(fnp.floor_divide(count, 2), max(n - 1, 0))
    both = fnp.take_along_axis(x, fnp.concatenate([lo, hi]), axis=0) if n else fnp.zeros((2, *x.shape[1:]))
    out = fnp.where(count[0] > 0, fnp.mean(both, axis=0), np.nan)
    if keepdims:
        out = fnp.reshape(out, [1 if i in axes else shape[i] for i in range(len(shape))])
    return out


@numpy_when_eager(np.interp)
def interp(x: ArrayLike, xp: ArrayLike, fp: ArrayLike, left: ArrayLike | None = None,
           right: ArrayLike | None = None, period: float | None = None) -> Array:
    """numpy.interp: the piecewise linear interpolant of the points (`xp`, `fp`) at `x`
    (differentiable in `x`, `xp` and `fp`, the values `left` and `right` beyond the ends).

    >>> interp([0.5, 1.5, 3.0], [0.0, 1.0, 2.0], [0.0, 10.0, 0.0])
    array([5., 5., 0.])
    """
    import fgrad.numpy as fnp

    x, xp, fp = operand(x), operand(xp), operand(fp)
    real = np.complex128 if get_aval(fp).dtype.kind == "c" else np.float64
    x, xp, fp = fnp.astype(x, np.float64), fnp.astype(xp, np.float64), fnp.astype(fp, real)
    if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1:
        raise ValueError("object too deep for desired array" if max(get_aval(xp).ndim, get_aval(fp).ndim) > 1
                         else "object of too small depth for desired array")
    if shape_of(xp)[0] != shape_of(fp)[0]:
        raise ValueError("fp and xp are not of the same length.")
    if shape_of(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        period = static_argument(period, "interp", "period")
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        x, xp = fnp.mod(x, period), fnp.mod(xp, period)
        order = fnp.argsort(xp)
        xp, fp = fnp.take(xp, order), fnp.take(fp, order)
        xp = fnp.concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = fnp.concatenate([fp[-1:], fp, fp[0:1]])
    n = shape_of(xp)[0]
    first, last = fp[0], fp[n - 1]
    if n == 1:
        y = fnp.broadcast_to(first, shape_of(x))
    else:
        j = fnp.clip(fnp.searchsorted(xp, x, side="right") - 1, 0, n - 2)
        x0, f0 = fnp.take(xp, j), fnp.take(fp, j)
        slope = fnp.divide(fnp.subtract(fnp.take(fp, j + 1), f0), fnp.subtract(fnp.take(xp, j + 1), x0))
        y = fnp.add(fnp.multiply(slope, fnp.subtract(x, x0)), f0)
        y = fnp.where(fnp.equal(x, x0), f0, y)
    y = fnp.where(fnp.equal(x, xp[n - 1]), last, y)
    y = fnp.where(fnp.less(x, xp[0]), first if left is None else fnp.astype(operand(left), real), y)
    above = last if right is None else fnp.astype(operand(right), real)
    return fnp.where(fnp.greater(x, xp[n - 1]), above, y)
