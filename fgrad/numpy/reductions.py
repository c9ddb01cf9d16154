"""Reductions and cumulative operations: sum, prod, mean, var, std, max, min,
ptp, argmax, argmin, all, any, count_nonzero, average, the NaN-ignoring
nansum, nanmean, nanmax, nanmin, and cumsum, cumprod.

Each is NumPy's function with its common arguments (axis, negative and tuples,
keepdims, dtype, ddof; initial and where for sum, prod, max, min, all, any);
`out=` is accepted with no transform active only, since traced arrays are
immutable. The composites (mean, var, average, the nan family, ...) are
written on the reduction primitives and need no rules.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.avals import get_aval, is_inexact_dtype
from ..core.trace import EVAL_TRACE, ctx
from ..primitives import elementwise as ew
from ..primitives import indexing, shapes
from ..primitives import reductions as red
from ..primitives.indexing import StaticIndex
from .operands import (
    Array,
    ArrayLike,
    axes_in_order,
    check_no_out,
    concrete_value,
    ndim_of,
    normalize_axes,
    numpy_when_eager,
    operand,
    shape_of,
    static_argument,
)
from .shaping import broadcast_to, ravel, reshape

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "ptp", "argmax", "argmin",
    "all", "any", "count_nonzero", "average", "nansum", "nanmean", "nanmax", "nanmin", "cumsum", "cumprod",
    "diff", "gradient", "ediff1d", "trapezoid", "allclose", "array_equal", "cov", "corrcoef", "bincount",
    "histogram",
]

Axis = int | Sequence[int] | None


def _keep(out: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    return shapes.reshape(out, new_shape=red.kept_shape(shape, axes)) if keepdims else out


def _reduction_axes(axis: Axis, ndim: int) -> tuple[int, ...]:
    """`normalize_axes`, with the leniency of NumPy's ufunc reductions (sum, max, all,
    ...; not mean or var): a 0-d array takes an int axis 0 or -1 as no axis."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1):
        return ()
    return normalize_axes(axis, ndim)


# For each reduction taking initial= and where=: the value that leaves its
# result unchanged (None: there is none, so `where` needs `initial`), how
# `initial` joins the result, and NumPy's name of the operation.
_IDENTITY_AND_JOIN: dict[Any, tuple[Any, Any, str]] = {
    red.reduce_sum: (0, ew.add, "add"), red.reduce_prod: (1, ew.mul, "multiply"),
    red.reduce_max: (None, ew.maximum, "maximum"), red.reduce_min: (None, ew.minimum, "minimum"),
    red.reduce_and: (True, None, "logical_and"), red.reduce_or: (False, None, "logical_or"),
}


def _masked(a: Any, where: Any, fill: Any) -> Any:
    """`a` with `fill` where the mask `where` (broadcast to a's shape, as NumPy's) is False."""
    mask = operand(where)
    mask_dtype = get_aval(mask).dtype
    if mask_dtype != np.bool_:
        if not isinstance(where, int):  # NumPy takes a Python int, not an array of another dtype
            raise TypeError(f"Cannot cast array data from {mask_dtype!r} to dtype('bool') according to the "
                            "rule 'safe'")
        mask = bool(where)
    shape, mask_shape = shape_of(a), shape_of(mask)
    if len(mask_shape) > len(shape):
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    if builtins.any(m not in (1, n) for m, n in zip(mask_shape[::-1], shape[::-1])):
        raise ValueError("operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {shape} {mask_shape}")
    return ew.where(mask, a, _astype(operand(fill), get_aval(a).dtype))


def _given(initial: Any, where: Any) -> dict[str, Any]:
    """NumPy's keywords `initial` and `where`, those given only: NumPy sums another
    way (not pairwise) when `where` is passed at all."""
    given: dict[str, Any] = {} if initial is None else {"initial": initial}
    if where is not True:
        given["where"] = where
    return given


def _reduce(prim_fn: Any, a: Any, axis: Axis, keepdims: bool, dtype: Any = None, initial: Any = None,
            where: Any = True) -> Any:
    """`prim_fn` over `axis` of `a`, computed in `dtype` and returning it (NumPy's `dtype=`),
    joined with `initial`, over the elements where `where` is True."""
    if dtype is not None:
        dtype = np.dtype(dtype)
        a = _astype(a, dtype)
    shape = shape_of(a)
    axes = _reduction_axes(axis, len(shape))
    identity, join, name = _IDENTITY_AND_JOIN[prim_fn]
    if where is not True:
        if identity is None and initial is None:
            raise ValueError(f"reduction operation '{name}' does not have an identity, so to use a where "
                             "mask one has to specify 'initial'")
        a = _masked(a, where, initial if identity is None else identity)
    if initial is not None and identity is None and builtins.any(shape[i] == 0 for i in axes):
        # max or min of no elements: the initial value alone
        kept = tuple(n for i, n in enumerate(shape) if i not in axes)
        out = shapes.broadcast_to(_astype(operand(initial), get_aval(a).dtype), shape=kept)
    else:
        out = prim_fn(a, axes=axes)
        if initial is not None:
            out = join(out, _astype(operand(initial), get_aval(out).dtype))
    out = _keep(out, shape, axes, keepdims)
    return out if dtype is None else _astype(out, dtype)


def _astype(x: Any, dtype: np.dtype) -> Any:
    return x if get_aval(x).dtype == dtype else ew.convert_element_type(x, new_dtype=dtype)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[i] for i in axes)


def _isnan(x: Any) -> Any:
    return ew.ne(x, x)  # NaN is the only value not equal to itself


def sum(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
    initial: Any = None, where: Any = True,
) -> Array:
    """numpy.sum over `axis` (all axes by default), plus `initial`, of the elements
    where `where` is True.

    >>> sum([[1.0, 2.0], [3.0, 4.0]], axis=-1)
    array([3., 7.])
    """
    if ctx.trace is EVAL_TRACE:
        if initial is None and where is True:
            return np.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        return np.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **_given(initial, where))
    check_no_out(out, "sum")
    a = operand(a)
    if axis is None and dtype is None and not keepdims and initial is None and where is True:
        return red.reduce_sum(a, axes=tuple(range(ndim_of(a))))  # the plain sum(x), often in a loop
    return _reduce(red.reduce_sum, a, axis, keepdims, dtype, initial, where)


def prod(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
    initial: Any = None, where: Any = True,
) -> Array:
    """numpy.prod over `axis` (times `initial`, of the elements where `where` is True);
    its derivative is right with zeros among the elements (products of the other
    elements, no division).

    >>> prod([[1.0, 2.0], [3.0, 4.0]], axis=0)
    array([3., 8.])
    """
    if ctx.trace is EVAL_TRACE:
        if initial is None and where is True:
            return np.prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        return np.prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **_given(initial, where))
    check_no_out(out, "prod")
    return _reduce(red.reduce_prod, operand(a), axis, keepdims, dtype, initial, where)


_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def mean(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False
) -> Array:
    """numpy.mean: the sum divided by the number of elements reduced (summed in
    float64 for integers and booleans and in float32 for float16, as NumPy does).

    >>> mean([1, 2, 3, 4])
    np.float64(2.5)
    """
    if ctx.trace is EVAL_TRACE:
        return np.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    check_no_out(out, "mean")
    a = operand(a)
    shape = shape_of(a)
    count = _count(shape, normalize_axes(axis, len(shape)))
    given = get_aval(a).dtype
    if dtype is not None:
        dtype = result_dtype = np.dtype(dtype)
    elif given.kind in "biu":
        dtype, result_dtype = _F64, None
    elif given == _F16:
        dtype, result_dtype = _F32, _F16
    else:
        result_dtype = None
    result = ew.div(sum(a, axis=axis, dtype=dtype, keepdims=keepdims), count)
    return result if result_dtype is None else _astype(result, result_dtype)


def _as_inexact(a: Any, dtype: Any) -> Any:
    """`a` in `dtype`, or as float64 if it is integer or boolean (NumPy's var and mean)."""
    if dtype is not None:
        return _astype(a, np.dtype(dtype))
    return a if is_inexact_dtype(get_aval(a).dtype) else _astype(a, np.dtype(np.float64))


def var(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: float = 0,
    keepdims: bool = False,
) -> Array:
    """numpy.var: the mean squared deviation from the mean, with `ddof` taken
    from the count (ddof=1: the unbiased estimate).

    >>> var([1.0, 2.0, 3.0, 4.0], ddof=1)
    np.float64(1.6666666666666667)
    """
    if ctx.trace is EVAL_TRACE:
        return np.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    check_no_out(out, "var")
    a = _as_inexact(operand(a), dtype)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    count = _count(shape, axes)
    # NumPy's var takes the mean in the array's own dtype, float16 too (unlike mean).
    center = _keep(ew.div(red.reduce_sum(a, axes=axes), count), shape, axes, True)
    centered = ew.sub(a, center)
    if get_aval(centered).dtype.kind == "c":
        centered = ew.absolute(centered)
    total = red.reduce_sum(ew.square(centered), axes=axes)
    return _keep(ew.div(total, builtins.max(count - ddof, 0)), shape, axes, keepdims)


def std(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: float = 0,
    keepdims: bool = False,
) -> Array:
    """numpy.std: the square root of `var` (its derivative is infinite where all
    the elements reduced are equal).

    >>> std([1.0, 3.0])
    np.float64(1.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.std(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    check_no_out(out, "std")
    return ew.sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))


def max(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False, initial: Any = None,
        where: Any = True) -> Array:
    """numpy.max (with `initial` among the elements; of the elements where `where` is
    True, which needs `initial`); where several elements tie for the maximum, the
    derivative is shared equally between them.

    >>> max([[1.0, 5.0], [3.0, 2.0]], axis=1)
    array([5., 3.])
    """
    if ctx.trace is EVAL_TRACE:
        if initial is None and where is True:
            return np.max(a, axis=axis, out=out, keepdims=keepdims)
        return np.max(a, axis=axis, out=out, keepdims=keepdims, **_given(initial, where))
    check_no_out(out, "max")
    return _reduce(red.reduce_max, operand(a), axis, keepdims, None, initial, where)


def min(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False, initial: Any = None,
        where: Any = True) -> Array:
    """numpy.min (`initial` and `where` as for max); ties share the derivative equally.

    >>> min([[1.0, 5.0], [3.0, 2.0]], axis=1)
    array([1., 2.])
    """
    if ctx.trace is EVAL_TRACE:
        if initial is None and where is True:
            return np.min(a, axis=axis, out=out, keepdims=keepdims)
        return np.min(a, axis=axis, out=out, keepdims=keepdims, **_given(initial, where))
    check_no_out(out, "min")
    return _reduce(red.reduce_min, operand(a), axis, keepdims, None, initial, where)


amax = max
amin = min


def ptp(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False) -> Array:
    """numpy.ptp ("peak to peak"): the maximum minus the minimum.

    >>> ptp([[1.0, 5.0], [3.0, 2.0]], axis=0)
    array([2., 3.])
    """
    if ctx.trace is EVAL_TRACE:
        return np.ptp(a, axis=axis, out=out, keepdims=keepdims)
    check_no_out(out, "ptp")
    a = operand(a)
    return ew.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def _index_reduce(prim_fn: Any, a: Any, axis: int | None, keepdims: bool) -> Any:
    a = operand(a)
    shape = shape_of(a)
    if axis is None:
        out = prim_fn(ravel(a), axis=0)
        return shapes.reshape(out, new_shape=(1,) * len(shape)) if keepdims else out
    axis = operator.index(axis)
    if not shape:  # NumPy treats a 0-d array as 1-d here, and its result as 0-d
        normalize_axes(axis, 1)
        return prim_fn(shapes.reshape(a, new_shape=(1,)), axis=0)
    axes = normalize_axes(axis, len(shape))
    return _keep(prim_fn(a, axis=axes[0]), shape, axes, keepdims)


def argmax(a: ArrayLike, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Array:
    """numpy.argmax: the index of the (first) maximum along `axis`, of the
    flattened array by default; an integer, without a derivative.

    >>> argmax([[1.0, 5.0], [3.0, 2.0]], axis=1)
    array([1, 0])
    """
    if ctx.trace is EVAL_TRACE:
        return np.argmax(a, axis=axis, out=out, keepdims=keepdims)
    check_no_out(out, "argmax")
    return _index_reduce(red.argmax, a, axis, keepdims)


def argmin(a: ArrayLike, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Array:
    """numpy.argmin: the index of the (first) minimum; an integer, without a derivative.

    >>> argmin([3.0, 1.0, 2.0])
    np.int64(1)
    """
    if ctx.trace is EVAL_TRACE:
        return np.argmin(a, axis=axis, out=out, keepdims=keepdims)
    check_no_out(out, "argmin")
    return _index_reduce(red.argmin, a, axis, keepdims)


def all(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False, *,
        where: Any = True) -> Array:
    """numpy.all: whether every element along `axis` (where `where` is True) is nonzero
    (True if there are none).

    >>> all([[1.0, 0.0], [2.0, 3.0]], axis=1)
    array([False,  True])
    """
    if ctx.trace is EVAL_TRACE:
        if where is True:
            return np.all(a, axis=axis, out=out, keepdims=keepdims)  # type: ignore[arg-type]
        return np.all(a, axis=axis, out=out, keepdims=keepdims, where=where)  # type: ignore[arg-type]
    check_no_out(out, "all")
    return _reduce(red.reduce_and, operand(a), axis, keepdims, where=where)


def any(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False, *,
        where: Any = True) -> Array:
    """numpy.any: whether some element along `axis` (where `where` is True) is nonzero
    (False if there are none).

    >>> any([[1.0, 0.0], [0.0, 0.0]], axis=1)
    array([ True, False])
    """
    if ctx.trace is EVAL_TRACE:
        if where is True:
            return np.any(a, axis=axis, out=out, keepdims=keepdims)  # type: ignore[arg-type]
        return np.any(a, axis=axis, out=out, keepdims=keepdims, where=where)  # type: ignore[arg-type]
    check_no_out(out, "any")
    return _reduce(red.reduce_or, operand(a), axis, keepdims, where=where)


@numpy_when_eager(np.count_nonzero)
def count_nonzero(a: ArrayLike, axis: Axis = None, *, keepdims: bool = False) -> Array:
    """numpy.count_nonzero: how many elements along `axis` are nonzero (an integer).

    >>> count_nonzero([[1.0, 0.0], [2.0, 3.0]], axis=0)
    array([2, 1])
    """
    out = _reduce(red.reduce_sum, ew.ne(operand(a), 0), axis, keepdims)
    return _astype(out, np.dtype(np.intp))


def average(
    a: ArrayLike, axis: Axis = None, weights: ArrayLike | None = None, returned: bool = False,
    *, keepdims: bool = False,
) -> Any:
    """numpy.average: the mean of `a` weighted by `weights` (of a's shape, or of the
    shape of a's `axis`); with `returned`, also the sum of the weights.

    >>> average([1.0, 2.0, 4.0], weights=[3.0, 0.0, 1.0])
    np.float64(1.75)
    """
    if ctx.trace is EVAL_TRACE:
        return np.average(a, axis=axis, weights=weights, returned=returned,  # type: ignore[call-overload]
                          keepdims=keepdims)
    a = operand(a)
    shape = shape_of(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        avg_shape = shape_of(avg)
        scale = np.full(avg_shape, math.prod(shape) / builtins.max(math.prod(avg_shape), 1),
                        get_aval(avg).dtype)[()]
        return (avg, scale) if returned else avg
    w = operand(weights)
    w_shape = shape_of(w)
    if w_shape != shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        given = axes_in_order(axis, len(shape))
        if w_shape != tuple(shape[i] for i in given):
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        order = tuple(int(i) for i in np.argsort(given))
        if order != tuple(range(len(order))):
            w = shapes.transpose(w, axes=order)
        w = shapes.reshape(w, new_shape=tuple(n if i in given else 1 for i, n in enumerate(shape)))
    a_dtype, w_dtype = get_aval(a).dtype, get_aval(w).dtype
    if a_dtype.kind in "biu":
        dtype = np.result_type(a_dtype, w_dtype, np.float64)
    else:
        dtype = np.result_type(a_dtype, w_dtype)
    a, w = _astype(a, dtype), _astype(w, dtype)
    scale = sum(w, axis=axis, keepdims=keepdims)
    known = concrete_value(scale, None)  # None: not known under this transform
    if known is not None and np.any(np.asarray(known) == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = ew.div(sum(ew.mul(a, w), axis=axis, keepdims=keepdims), scale)
    if not returned:
        return avg
    avg_shape = shape_of(avg)
    return avg, scale if shape_of(scale) == avg_shape else shapes.broadcast_to(scale, shape=avg_shape)


def nansum(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False
) -> Array:
    """numpy.nansum: the sum with NaNs counted as zero (they get no derivative either).

    >>> nansum([1.0, np.nan, 2.0])
    np.float64(3.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.nansum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    check_no_out(out, "nansum")
    a = operand(a)
    if is_inexact_dtype(get_aval(a).dtype):
        a = ew.where(_isnan(a), 0, a)
    return sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(
    a: ArrayLike, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False
) -> Array:
    """numpy.nanmean: the mean of the elements that are not NaN (NaN where there are none).

    >>> nanmean([1.0, np.nan, 2.0])
    np.float64(1.5)
    """
    if ctx.trace is EVAL_TRACE:
        return np.nanmean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    check_no_out(out, "nanmean")
    a = operand(a)
    if not is_inexact_dtype(get_aval(a).dtype):
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    a = _as_inexact(a, dtype)
    present = ew.eq(a, a)
    total = sum(ew.where(present, a, 0), axis=axis, keepdims=keepdims)
    count = sum(present, axis=axis, keepdims=keepdims)
    return ew.div(total, _astype(count, get_aval(total).dtype))


def _nan_extremum(reduce: Any, a: Any, axis: Axis, keepdims: bool, fill: float) -> Any:
    a = operand(a)
    if not is_inexact_dtype(get_aval(a).dtype):
        return _reduce(reduce, a, axis, keepdims)
    missing = _isnan(a)
    result = _reduce(reduce, ew.where(missing, fill, a), axis, keepdims)
    return ew.where(_reduce(red.reduce_and, missing, axis, keepdims), np.nan, result)


def nanmax(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False) -> Array:
    """numpy.nanmax: the maximum ignoring NaNs (NaN where all are NaN).

    >>> nanmax([1.0, np.nan, 2.0])
    np.float64(2.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.nanmax(a, axis=axis, out=out, keepdims=keepdims)
    check_no_out(out, "nanmax")
    return _nan_extremum(red.reduce_max, a, axis, keepdims, -np.inf)


def nanmin(a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False) -> Array:
    """numpy.nanmin: the minimum ignoring NaNs (NaN where all are NaN).

    >>> nanmin([1.0, np.nan, 2.0])
    np.float64(1.0)
    """
    if ctx.trace is EVAL_TRACE:
        return np.nanmin(a, axis=axis, out=out, keepdims=keepdims)
    check_no_out(out, "nanmin")
    return _nan_extremum(red.reduce_min, a, axis, keepdims, np.inf)


def _cumulative(prim_fn: Any, a: Any, axis: int | None, dtype: Any) -> Any:
    a = operand(a)
    if dtype is not None:
        dtype = np.dtype(dtype)
        a = _astype(a, dtype)
    shape = shape_of(a)
    if axis is None:  # of the flattened array
        a, shape, axis = ravel(a), (math.prod(shape),), 0
    elif not shape:  # NumPy treats a 0-d array as 1-d here
        a, shape = shapes.reshape(a, new_shape=(1,)), (1,)
    (axis,) = normalize_axes(operator.index(axis), len(shape))
    out = prim_fn(a, axis=axis, reverse=False)
    return out if dtype is None else _astype(out, dtype)


@numpy_when_eager(np.cumsum)
def cumsum(a: ArrayLike, axis: int | None = None, dtype: Any = None, out: Any = None) -> Array:
    """numpy.cumsum: the running sums along `axis` (of the flattened array by default).

    >>> cumsum([[1.0, 2.0], [3.0, 4.0]], axis=0)
    array([[1., 2.],
           [4., 6.]])
    """
    check_no_out(out, "cumsum")
    return _cumulative(red.cumsum, a, axis, dtype)


@numpy_when_eager(np.cumprod)
def cumprod(a: ArrayLike, axis: int | None = None, dtype: Any = None, out: Any = None) -> Array:
    """numpy.cumprod: the running products along `axis` (of the flattened array by
    default); the derivative is right with zeros among the elements.

    >>> cumprod([1.0, 2.0, 3.0])
    array([1., 2., 6.])
    """
    check_no_out(out, "cumprod")
    return _cumulative(red.cumprod, a, axis, dtype)


_NO_VALUE: Any = np._NoValue  # NumPy's marker for an argument not given


def _slice_axis(x: Any, axis: int, s: slice) -> Any:
    return indexing.getitem(x, idx=StaticIndex((*(slice(None),) * axis, s)))


def _strong(x: Any) -> Any:
    """`x` as numpy.asanyarray makes it: a Python scalar becomes a (strongly typed) array."""
    return np.asarray(x) if type(x) in (float, int, complex, bool) else operand(x)


def _join(xs: list[Any], axis: int) -> Any:
    """numpy.concatenate of operands along an existing axis (NumPy's promotion)."""
    dt = np.result_type(*(get_aval(x).dtype for x in xs))
    xs = [x if get_aval(x).dtype == dt else _astype(x, dt) for x in xs]
    return xs[0] if len(xs) == 1 else shapes.concatenate(*xs, axis=axis)


@numpy_when_eager(np.diff)
def diff(a: ArrayLike, n: int = 1, axis: int = -1, prepend: ArrayLike = _NO_VALUE,
         append: ArrayLike = _NO_VALUE) -> Array:
    """numpy.diff: the `n`-th differences along `axis`, after joining `prepend` and `append`.

    >>> diff([1.0, 4.0, 9.0, 16.0]), diff([1.0, 4.0, 9.0, 16.0], n=2)
    (array([3., 5., 7.]), array([2., 2.]))
    """
    n = operator.index(static_argument(n, "diff", "n"))
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    x = _strong(a)
    shape = shape_of(x)
    if not shape:
        raise ValueError("diff requires input that is at least one dimensional")
    (axis,) = normalize_axes(operator.index(axis), len(shape))
    combined = []
    for i, extra in enumerate((prepend, append)):
        if extra is not _NO_VALUE:
            extra = _strong(extra)
            if not shape_of(extra):
                extra = broadcast_to(extra, (*shape[:axis], 1, *shape[axis + 1:]))
            combined.append(extra)
        if i == 0:
            combined.append(x)
    x = _join(combined, axis)
    op = ew.ne if get_aval(x).dtype == np.bool_ else ew.sub
    for _ in range(n):
        x = op(_slice_axis(x, axis, slice(1, None)), _slice_axis(x, axis, slice(None, -1)))
    return x


def _spacing(distances: Any, length: int) -> Any:
    """One axis's spacing as numpy.gradient takes it: a scalar as given, else the differences of
    the 1-d coordinates. Concrete coordinates evenly spaced become one scalar, as NumPy's; traced
    ones never do, so that their derivative is that of the uneven formulas they are a case of."""
    d = _strong(distances)
    if ndim_of(d) == 0:
        return distances
    if ndim_of(d) != 1:
        raise ValueError("distances must be either scalars or 1d")
    if shape_of(d)[0] != length:
        raise ValueError("when 1d, distances must match the length of the corresponding dimension")
    integer = np.issubdtype(get_aval(d).dtype, np.integer)
    if isinstance(d, np.ndarray):  # concrete, not traced
        dx = np.diff(d.astype(np.float64) if integer else d)
        return dx[0] if (dx == dx[0]).all() else dx  # NumPy's IndexError for one coordinate
    if length < 2:
        raise IndexError("index 0 is out of bounds for axis 0 with size 0")
    return diff(_astype(d, np.dtype(np.float64)) if integer else d)


def _gradient_along(f: Any, axis: int, dx: Any, edge_order: int) -> Any:
    """numpy.gradient's formulas along one axis (second order inside; first or second order at
    the two ends), on slices of `f` joined back together: NumPy's operations in NumPy's order."""
    length = shape_of(f)[axis]
    if length < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least (edge_order + 1) elements are required.")
    if edge_order != 1 and length < 3:  # NumPy takes any other edge_order as 2 and indexes f[2]
        raise IndexError(f"index {length} is out of bounds for axis {axis} with size {length}")

    def at(start: int | None, stop: int | None) -> Any:
        return _slice_axis(f, axis, slice(start, stop))

    uniform = ndim_of(_strong(dx)) == 0
    if uniform:
        inner = (at(2, None) - at(None, -2)) / (2.0 * dx)
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        along = [1] * len(shape_of(f))
        along[axis] = -1
        a, b, c = (reshape(v, along) for v in (-dx2 / (dx1 * (dx1 + dx2)), (dx2 - dx1) / (dx1 * dx2),
                                               dx1 / (dx2 * (dx1 + dx2))))
        inner = a * at(None, -2) + b * at(1, -1) + c * at(2, None)
    if edge_order == 1:
        first = (at(1, 2) - at(0, 1)) / (dx if uniform else dx[0])
        last = (at(-1, None) - at(-2, -1)) / (dx if uniform else dx[-1])
    else:
        if uniform:
            a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
        else:
            dx1, dx2 = dx[0], dx[1]
            a, b, c = (-(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2)), (dx1 + dx2) / (dx1 * dx2),
                       -dx1 / (dx2 * (dx1 + dx2)))
        first = a * at(0, 1) + b * at(1, 2) + c * at(2, 3)
        if uniform:
            a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
        else:
            dx1, dx2 = dx[-2], dx[-1]
            a, b, c = (dx2 / (dx1 * (dx1 + dx2)), -(dx2 + dx1) / (dx1 * dx2),
                       (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2)))
        last = a * at(-3, -2) + b * at(-2, -1) + c * at(-1, None)
    return _join([first, inner, last], axis)


@numpy_when_eager(np.gradient)
def gradient(f: ArrayLike, *varargs: ArrayLike, axis: Axis = None,
             edge_order: int = 1) -> Array | tuple[Array, ...]:
    """numpy.gradient: the derivative of samples `f` along each of `axis` by central differences
    inside and one-sided ones (of order `edge_order`) at the ends. The spacing `varargs` is
    nothing (1), one scalar for all axes, or per axis a scalar or the 1-d sample coordinates;
    differentiable in `f` and in the spacing. One array for one axis, else a tuple.

    >>> gradient([1.0, 4.0, 9.0, 16.0]), gradient([1.0, 4.0, 9.0, 16.0], 2.0, edge_order=2)
    (array([3., 4., 6., 7.]), array([1., 2., 3., 4.]))
    """
    f = _strong(f)
    shape = shape_of(f)
    axes = tuple(range(len(shape))) if axis is None else axes_in_order(axis, len(shape))
    if not varargs:
        spacings: list[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and ndim_of(_strong(varargs[0])) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = [_spacing(d, shape[ax]) for d, ax in zip(varargs, axes)]
    else:
        raise TypeError("invalid number of arguments")
    edge_order = static_argument(edge_order, "gradient", "edge_order")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    dtype = get_aval(f).dtype
    if not is_inexact_dtype(dtype):  # integers are differenced as float64 (bool raises, as NumPy's)
        if np.issubdtype(dtype, np.integer):
            f = _astype(f, np.dtype(np.float64))
        dtype = np.dtype(np.float64)
    outs = [_astype(_gradient_along(f, ax, dx, edge_order), dtype) for ax, dx in zip(axes, spacings)]
    return outs[0] if len(axes) == 1 else tuple(outs)


@numpy_when_eager(np.ediff1d)
def ediff1d(ary: ArrayLike, to_end: ArrayLike | None = None, to_begin: ArrayLike | None = None) -> Array:
    """numpy.ediff1d: the differences of consecutive elements of the flattened array, with
    `to_begin` and `to_end` put before and after.

    >>> ediff1d([1.0, 2.0, 4.0], to_begin=-1.0)
    array([-1.,  1.,  2.])
    """
    x = ravel(_strong(ary))
    dtype = get_aval(x).dtype
    out = ew.sub(_slice_axis(x, 0, slice(1, None)), _slice_axis(x, 0, slice(None, -1)))
    parts: list[Any] = []
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None:
            parts.append(None)
            continue
        extra = _strong(extra)
        if not np.can_cast(get_aval(extra).dtype, dtype, casting="same_kind"):
            raise TypeError(
                f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        parts.append(_astype(ravel(extra), dtype))
    begin, end = parts
    return _join([p for p in (begin, out, end) if p is not None], 0)


@numpy_when_eager(np.trapezoid)
def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: ArrayLike = 1.0, axis: int = -1) -> Array:
    """numpy.trapezoid: the integral of `y` along `axis` by the trapezoidal rule, at sample
    points `x` or spaced `dx`.

    >>> trapezoid([1.0, 2.0, 3.0]), trapezoid([1.0, 2.0, 3.0], x=[0.0, 1.0, 3.0])
    (np.float64(4.0), np.float64(6.5))
    """
    y = _strong(y)
    nd = len(shape_of(y))
    d: Any
    if x is None:
        d = dx
    else:
        x = _strong(x)
        if len(shape_of(x)) == 1:
            d = diff(x)
            shape = [1] * nd
            shape[axis] = shape_of(d)[0]
            d = reshape(d, shape)
        else:
            d = diff(x, axis=axis)
    (ax,) = normalize_axes(operator.index(axis), nd)
    pairs = ew.add(_slice_axis(y, ax, slice(1, None)), _slice_axis(y, ax, slice(None, -1)))
    return sum(ew.div(ew.mul(d, pairs), 2.0), axis=ax)


def _concrete_bool(function: str, args: Any) -> Any:
    return concrete_value(
        args,
        f"fgrad.numpy.{function} returns a Python bool, so it needs concrete values, but it got a "
        "traced {aval} value under `{transform}`, where only its type is known. Compare outside the "
        "transformed function, or use a traced boolean such as fgrad.numpy.all(fgrad.numpy.isclose(a, b)).",
    )


def allclose(a: ArrayLike, b: ArrayLike, rtol: ArrayLike = 1e-05, atol: ArrayLike = 1e-08,
             equal_nan: bool = False) -> bool:
    """numpy.allclose: whether all elements are close (a Python bool: needs concrete values).

    >>> allclose([1.0, 2.0], [1.0, 2.0 + 1e-9])
    True
    """
    if ctx.trace is EVAL_TRACE:
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    a, b, rtol, atol = _concrete_bool("allclose", [a, b, rtol, atol])
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1: ArrayLike, a2: ArrayLike, equal_nan: bool = False) -> bool:
    """numpy.array_equal: whether the shapes and elements are equal (a Python bool: needs concrete values).

    >>> array_equal([1.0, 2.0], [1.0, 2.0]), array_equal([1.0], [1.0, 1.0])
    (True, False)
    """
    if ctx.trace is EVAL_TRACE:
        return bool(np.array_equal(a1, a2, equal_nan=equal_nan))
    a1, a2 = _concrete_bool("array_equal", [a1, a2])
    return bool(np.array_equal(a1, a2, equal_nan=equal_nan))


def _rows(x: Any, rowvar: bool, dtype: Any, first: bool) -> Any:
    import fgrad.numpy as fnp

    nd = len(shape_of(x))
    x = fnp.atleast_2d(_astype(x, dtype))
    transpose = nd != 1 if first else shape_of(x)[0] != 1
    return x if rowvar or not transpose else fnp.transpose(x)


def _cov_weights(w: Any, kind: str, n: int) -> tuple[Any, Any, Any]:
    """numpy.cov's checks of `fweights` or `aweights` (`kind`) for n observations: the
    weights as float64, their value (None where it is not known: jit, vmap), and None,
    or where the value is not known a mask of where they are valid, for the nan that
    stands in for NumPy's errors."""
    w = _strong(w)
    if get_aval(w).dtype.kind == "c":
        raise TypeError(f"fgrad.numpy.cov: {kind} must be real, got a {get_aval(w).dtype} array")
    value = concrete_value(w, None)
    if value is not None:
        value = np.asarray(value, dtype=np.float64)
    w = _astype(w, np.dtype(np.float64))
    if kind == "fweights" and value is not None and not np.all(value == np.around(value)):
        raise TypeError(f"fweights must be integer: they count repeated observations, got {value}; "
                        "pass real-valued weights as aweights")
    w_shape = shape_of(w)
    if len(w_shape) > 1:
        raise RuntimeError(f"cannot handle multidimensional {kind}: got shape {w_shape}, expected ({n},), "
                           "one weight per observation")
    if len(w_shape) == 0 or w_shape[0] != n:
        # (NumPy's own error for a 0-d array is the IndexError of w.shape[0].)
        error = IndexError if len(w_shape) == 0 else RuntimeError
        raise error(f"incompatible numbers of samples and {kind}: {n} observations, {kind} of shape "
                    f"{w_shape}; give one weight per observation")
    if value is not None:
        if np.any(value < 0):
            raise ValueError(f"{kind} cannot be negative, got {value}")
        return w, value, None
    import fgrad.numpy as fnp

    valid = fnp.all(fnp.greater_equal(w, 0))
    if kind == "fweights":
        valid = fnp.logical_and(valid, fnp.all(fnp.equal(w, fnp.round(w))))
    return w, None, valid


@numpy_when_eager(np.cov)
def cov(m: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: ArrayLike | None = None, aweights: ArrayLike | None = None, *,
        dtype: Any = None) -> Array:
    """numpy.cov: the covariance matrix of the variables in the rows (columns if not `rowvar`)
    of `m` and `y`, the observations weighted by the integer frequencies `fweights` and the
    weights `aweights`, differentiable in m, y and the weights. NumPy's errors for invalid
    weights where their values are known; under jit or vmap, where they are not, a nan
    result instead.

    >>> cov([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
    array([[ 1., -1.],
           [-1.,  1.]])
    >>> cov([0.0, 1.0, 2.0], aweights=[1.0, 1.0, 2.0])
    array(1.1)
    """
    import fgrad.numpy as fnp

    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _strong(m)
    if len(shape_of(m)) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _strong(y)
        if len(shape_of(y)) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(*(get_aval(v).dtype for v in (m, y) if v is not None), np.float64)
    x = _rows(m, rowvar, dtype, True)
    if shape_of(x)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        x = _join([x, _rows(y, rowvar, dtype, False)], 0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    n = shape_of(x)[1]
    w: Any = None  # the product of the weights given
    value: Any = 1.0  # its value, None where it is not known
    valids: list[Any] = []
    aw: Any = None
    for weights, kind in [(fweights, "fweights"), (aweights, "aweights")]:
        if weights is not None:
            weights, known, valid = _cov_weights(weights, kind, n)
            w = weights if w is None else fnp.multiply(w, weights)
            value = None if value is None or known is None else value * known
            valids += [] if valid is None else [valid]
            aw = weights if kind == "aweights" else None
    if w is not None and value is not None and np.sum(value) == 0:  # average's error, where it is known
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    if w is None:
        fact: Any = n - ddof
    else:
        avg, w_sum = average(x, axis=1, weights=w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = fnp.subtract(w_sum, ddof)
        else:
            fact = fnp.subtract(w_sum, fnp.divide(fnp.multiply(ddof, sum(fnp.multiply(w, aw))), w_sum))
    known = concrete_value(fact, None)
    if known is not None and known <= 0:
        import warnings

        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning,
                      stacklevel=3)  # the caller's line, past numpy_when_eager's frame
        fact = 0.0
    elif known is None:  # NumPy's 0 for no degrees of freedom left, where they are not known
        fact = fnp.where(fnp.greater(fact, 0), fact, 0.0)
    if w is None:
        x = fnp.subtract(x, mean(x, axis=1, keepdims=True))
        c = fnp.matmul(x, fnp.conj(fnp.transpose(x)))
        return fnp.squeeze(fnp.multiply(c, float(np.true_divide(1, fact))))
    x = fnp.subtract(x, avg[:, None])
    c = fnp.multiply(fnp.matmul(x, fnp.conj(fnp.transpose(fnp.multiply(x, w)))), fnp.true_divide(1, fact))
    for valid in valids:
        c = fnp.where(valid, c, np.nan)
    return fnp.squeeze(c)


def corrcoef(x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, *, dtype: Any = None) -> Array:
    """numpy.corrcoef: the Pearson correlation coefficients of the variables (rows of `x` and `y`).

    >>> corrcoef([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]]).round(4)
    array([[ 1.   , -0.982],
           [-0.982,  1.   ]])
    """
    if ctx.trace is EVAL_TRACE:
        return np.corrcoef(x, y, rowvar, dtype=dtype)
    import fgrad.numpy as fnp

    c = cov(x, y, rowvar, dtype=dtype)
    if not shape_of(c):
        return fnp.divide(c, c)
    d = fnp.sqrt(fnp.real(fnp.diagonal(c)))
    c = fnp.divide(fnp.divide(c, d[:, None]), d[None, :])
    if get_aval(c).dtype.kind == "c":
        return fnp.add(fnp.clip(fnp.real(c), -1, 1), fnp.multiply(1j, fnp.clip(fnp.imag(c), -1, 1)))
    return fnp.clip(c, -1, 1)


def _concrete_counts(function: str, args: Any) -> Any:
    return concrete_value(
        args,
        f"fgrad.numpy.{function} needs concrete values: the values of its input fix the shape of its "
        "result, but it got a traced {aval} value under `{transform}`, where only its type is known. "
        f"Call {function} outside the transformed function, or under grad, jvp or vjp, whose tracers "
        "carry values.",
    )


def bincount(x: ArrayLike, /, weights: ArrayLike | None = None, minlength: int = 0) -> Array:
    """numpy.bincount: the number of occurrences of each value of the non-negative ints `x` (needs
    their concrete values), or the sums of `weights` by value (differentiable in `weights`).

    >>> bincount([0, 1, 1, 3]), bincount([0, 1, 1], weights=[0.5, 1.0, 2.0])
    (array([1, 2, 0, 1]), array([0.5, 3. ]))
    """
    if ctx.trace is EVAL_TRACE:
        return np.bincount(x, weights, minlength)
    import fgrad.numpy as fnp

    xs = _concrete_counts("bincount", x)
    minlength = operator.index(static_argument(minlength, "bincount", "minlength"))
    counts = np.bincount(xs, None, minlength)
    if weights is None:
        return counts
    w = _astype(_strong(weights), np.dtype(np.float64))
    if shape_of(w) != np.shape(xs):
        raise ValueError("The weights and list don't have the same length.")
    return fnp.at(np.zeros(len(counts)))[np.asarray(xs, np.intp)].add(w)


@numpy_when_eager(np.histogram)
def histogram(a: ArrayLike, bins: Any = 10, range: tuple[float, float] | None = None,
              density: bool | None = None, weights: ArrayLike | None = None) -> tuple[Array, Array]:
    """numpy.histogram: the counts of `a` in each bin and the bin edges (needs concrete values;
    no derivative).

    >>> histogram([0.5, 1.5, 1.6], bins=2, range=(0.0, 2.0))
    (array([1, 2]), array([0., 1., 2.]))
    """
    a, bins, range, weights = _concrete_counts("histogram", [a, bins, range, weights])
    return np.histogram(a, bins, range, density, weights)
