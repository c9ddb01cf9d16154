"""Creating arrays: from data (array, asarray, copy), by assembling arrays
(stack, concatenate, hstack, vstack, dstack, column_stack, meshgrid, pad),
building matrices (diag, diagflat, tril, triu) and from shapes (zeros, ones,
full, empty, arange, linspace, eye and the *_like family).

Arrays created from shapes are constants: NumPy's own functions (but for
linspace between traced end points, written on the ufuncs), whose arrays are
read-only while a transform traces, as JAX's are immutable, so that
``acc = zeros_like(x); acc += x`` rebinds `acc` to a traced sum as in JAX
(`dispatch._array_ufunc`) and no alias of the old array misses a change. Arrays
assembled from traced values (`array([x, 1.0, y])`, `stack`, `pad`) are built
with the data-movement primitives (concatenate, reshape, broadcast_to,
getitem, index_add) and `where`, so derivatives flow through them with no
rules of their own.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.avals import get_aval
from ..core.libraries import is_library_array
from ..core.trace import EVAL_TRACE, Tracer, ctx
from ..primitives import elementwise as ew
from ..primitives import indexing, shapes
from ..primitives.indexing import StaticIndex
from . import ufuncs
from .indexing import at, diagonal
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
from .reductions import any as _any
from .reductions import cumprod
from .shaping import (
    _flip_axes,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_to,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
    transpose,
)

__all__ = [
    "array", "asarray", "astype", "copy", "stack", "concatenate", "hstack", "vstack", "dstack",
    "column_stack", "meshgrid", "pad", "diag", "diagflat", "tril", "triu", "zeros", "ones", "full",
    "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace", "eye",
    "identity", "tri", "logspace", "geomspace", "vander", "r_", "c_", "mgrid", "ogrid",
]



def _constant(out: Any) -> Any:
    """An array made from a shape, read-only while a transform traces, as JAX's arrays are
    immutable: then ``a += v`` with a traced `v` may rebind `a` to the traced sum
    (`dispatch._array_ufunc`), and no other name or list holding the old array can miss a
    change, since nothing can change it. Eagerly, NumPy's writable array."""
    if ctx.trace is not EVAL_TRACE and type(out) is np.ndarray:
        out.flags.writeable = False
    return out


def zeros(shape: int | Sequence[int], dtype: Any = float, order: str = "C", **kwargs: Any) -> Array:
    """numpy.zeros; read-only under a transform, where ``a += traced`` rebinds `a`, as in JAX.

    >>> import fgrad.numpy as fnp
    >>> fnp.zeros(2)
    array([0., 0.])
    """
    return _constant(np.zeros(shape, dtype, order, **kwargs))  # type: ignore[call-overload]


def ones(shape: int | Sequence[int], dtype: Any = None, order: str = "C", **kwargs: Any) -> Array:
    """numpy.ones; read-only under a transform, as `zeros`.

    >>> import fgrad.numpy as fnp
    >>> fnp.ones(2)
    array([1., 1.])
    """
    return _constant(np.ones(shape, dtype, order, **kwargs))  # type: ignore[call-overload]


def empty(shape: int | Sequence[int], dtype: Any = float, order: str = "C", **kwargs: Any) -> Array:
    """numpy.empty (zeros under a transform, read-only as `zeros`: a constant with no
    derivative, whose values nothing may depend on).

    >>> import fgrad.numpy as fnp
    >>> fnp.empty(2).shape
    (2,)
    """
    if ctx.trace is EVAL_TRACE:
        return np.empty(shape, dtype, order, **kwargs)  # type: ignore[call-overload]
    return _constant(np.zeros(shape, dtype, order, **kwargs))  # type: ignore[call-overload]


def arange(*args: Any, **kwargs: Any) -> Array:
    """numpy.arange; read-only under a transform, as `zeros`.

    >>> import fgrad.numpy as fnp
    >>> fnp.arange(3)
    array([0, 1, 2])
    """
    return _constant(np.arange(*args, **kwargs))


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C",
        **kwargs: Any) -> Array:
    """numpy.eye; read-only under a transform, as `zeros`.

    >>> import fgrad.numpy as fnp
    >>> fnp.eye(2)
    array([[1., 0.],
           [0., 1.]])
    """
    return _constant(np.eye(N, M, k, dtype, order, **kwargs))  # type: ignore[call-overload]


def astype(x: ArrayLike, dtype: Any) -> Array:
    """`x` converted to `dtype` (a float-to-float conversion keeps the derivative)."""
    if ctx.trace is EVAL_TRACE:
        return np.asarray(x).astype(dtype)
    x = operand(x)
    dtype = np.dtype(dtype)
    return x if get_aval(x).dtype == dtype else ew.convert_element_type(x, new_dtype=dtype)


def _has_tracer(x: Any) -> bool:
    """Whether the nested list `x` holds a tracer or another library's array
    (stacked by primitives, not converted by NumPy)."""
    if isinstance(x, Tracer) or is_library_array(x):
        return True
    return isinstance(x, (list, tuple)) and any(_has_tracer(v) for v in x)


def _assemble(x: Any) -> Any:
    """A nested list holding tracers, as one traced array (NumPy promotion)."""
    if not isinstance(x, (list, tuple)):
        return operand(x)
    if not x:
        return np.asarray(x)
    parts = [_assemble(v) for v in x]
    return stack(parts)


def array(object: Any, dtype: Any = None, copy: bool = True, ndmin: int = 0) -> Array:
    """numpy.array; nested lists may hold traced values, which are stacked."""
    if ctx.trace is EVAL_TRACE:
        return np.array(object, dtype=dtype, copy=copy, ndmin=ndmin)
    out = _assemble(object) if _has_tracer(object) else operand(object)
    if isinstance(out, np.ndarray) and copy:
        out = out.copy()
    if dtype is not None:
        out = astype(out, dtype)
    shape = shape_of(out)
    if len(shape) < ndmin:
        out = reshape(out, (1,) * (ndmin - len(shape)) + shape)
    return out


@numpy_when_eager(np.copy)
def copy(a: ArrayLike, order: str = "K", subok: bool = False) -> Array:
    """numpy.copy: an array with the same values (traced values are immutable: no copy needed)."""
    x = operand(a)
    return x.copy() if isinstance(x, np.ndarray) else x


def asarray(a: Any, dtype: Any = None) -> Array:
    """numpy.asarray: `a` as an array without copying (traced values stay traced)."""
    if ctx.trace is EVAL_TRACE:
        return np.asarray(a, dtype=dtype)
    return array(a, dtype=dtype, copy=False)


def _cast_all(xs: list[Any], dtype: Any, casting: str) -> list[Any]:
    """The arrays converted to `dtype` (None: unchanged), NumPy's TypeError if `casting` forbids it."""
    if dtype is None:
        return xs
    dtype = np.dtype(dtype)
    for x in xs:
        src = get_aval(x).dtype
        if not np.can_cast(src, dtype, casting):  # type: ignore[arg-type]
            raise TypeError(
                f"Cannot cast array data from {src!r} to {dtype!r} according to the rule {casting!r}")
    return [astype(x, dtype) for x in xs]


def concatenate(arrays: Sequence[ArrayLike], axis: int | None = 0, out: None = None, dtype: Any = None,
                casting: str = "same_kind") -> Array:
    """numpy.concatenate along an existing axis (axis=None: of the flattened arrays)."""
    if ctx.trace is EVAL_TRACE:
        return np.concatenate(arrays, axis=axis, out=out, dtype=dtype, casting=casting)  # type: ignore[call-overload]
    check_no_out(out, "concatenate")
    xs = [operand(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    xs = _cast_all(xs, dtype, casting)
    if axis is None:
        xs = [reshape(x, -1) for x in xs]
        axis = 0
    if not shape_of(xs[0]):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    (axis,) = normalize_axes(axis, len(shape_of(xs[0])))
    return xs[0] if len(xs) == 1 else shapes.concatenate(*xs, axis=axis)


@numpy_when_eager(np.stack)
def stack(arrays: Sequence[ArrayLike], axis: int = 0, out: None = None, *, dtype: Any = None,
          casting: str = "same_kind") -> Array:
    """numpy.stack: join arrays of the same shape along a new axis."""
    xs = [operand(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    shapes_seen = {shape_of(x) for x in xs}
    if len(shapes_seen) > 1:
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axes(axis, len(shape_of(xs[0])) + 1)[0]
    return concatenate([expand_dims(x, axis) for x in xs], axis, out, dtype, casting)


@numpy_when_eager(np.hstack)
def hstack(tup: Sequence[ArrayLike], *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """numpy.hstack: concatenate along the second axis (the first, for 1-d arrays).

    >>> import fgrad.numpy as fnp
    >>> fnp.hstack([np.ones(2), np.zeros(1)])
    array([1., 1., 0.])
    """
    xs = [atleast_1d(a) for a in tup]
    axis = 0 if xs and len(shape_of(xs[0])) == 1 else 1
    return concatenate(xs, axis, dtype=dtype, casting=casting)


@numpy_when_eager(np.vstack)
def vstack(tup: Sequence[ArrayLike], *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """numpy.vstack: concatenate along the first axis, 1-d arrays (N,) taken as rows (1, N).

    >>> import fgrad.numpy as fnp
    >>> fnp.vstack([np.ones(2), np.zeros(2)]).shape
    (2, 2)
    """
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


@numpy_when_eager(np.dstack)
def dstack(tup: Sequence[ArrayLike]) -> Array:
    """numpy.dstack: concatenate along the third axis (as atleast_3d shapes them).

    >>> import fgrad.numpy as fnp
    >>> fnp.dstack([np.ones(2), np.zeros(2)]).shape
    (1, 2, 2)
    """
    return concatenate([atleast_3d(a) for a in tup], 2)


@numpy_when_eager(np.column_stack)
def column_stack(tup: Sequence[ArrayLike]) -> Array:
    """numpy.column_stack: 1-d arrays as columns (N, 1), then concatenate along the second axis.

    >>> import fgrad.numpy as fnp
    >>> fnp.column_stack([np.ones(2), np.zeros(2)]).shape
    (2, 2)
    """
    columns = []
    for a in tup:
        x = operand(a)
        shape = shape_of(x)
        columns.append(x if len(shape) >= 2 else reshape(x, (-1, 1) if shape else (1, 1)))
    return concatenate(columns, 1)


def meshgrid(*xi: ArrayLike, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Array, ...]:
    """numpy.meshgrid: coordinate arrays from coordinate vectors, with 'xy' (Cartesian: the
    first two axes swapped) or 'ij' (matrix) indexing; `sparse` keeps the size-1 axes.

    >>> import fgrad.numpy as fnp
    >>> [g.shape for g in fnp.meshgrid(np.ones(2), np.ones(3))]
    [(3, 2), (3, 2)]
    """
    if ctx.trace is EVAL_TRACE:
        return tuple(np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing))  # type: ignore[call-overload]
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    out = []
    for i, x in enumerate(xi):
        axis = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and ndim > 1 else i
        out.append(reshape(x, (1,) * axis + (-1,) + (1,) * (ndim - axis - 1)))
    return tuple(out) if sparse else broadcast_arrays(*out)


def _pad_pairs(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """`pad_width` in any of NumPy's forms as one (before, after) pair per axis."""
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            both = (width, width) if isinstance(width, (int, np.integer)) else tuple(width)
            pairs[normalize_axis_index(axis, ndim)] = (int(both[0]), int(both[1]))
        pad_width = pairs
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    if widths.size and widths.min() < 0:
        raise ValueError("index can't contain negative values")
    if widths.ndim < 3 and widths.size == 1:
        widths = widths.reshape(1, 1)
    elif widths.ndim < 3 and widths.size == 2 and widths.shape != (2, 1):
        widths = widths.reshape(1, 2)
    return [(int(b), int(a)) for b, a in np.broadcast_to(widths, (ndim, 2))]


_PAD_KEYWORDS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}, "linear_ramp": {"end_values"},
    "maximum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"},
    "minimum": {"stat_length"},
}


def _pad_constant(x: Any, widths: list[tuple[int, int]], constant_values: ArrayLike) -> Any:
    """Blocks of the constants concatenated on each axis in turn, so that later axes
    fill the corners (as NumPy does)."""
    values = operand(constant_values)
    vshape = shape_of(values)
    size = int(np.prod(vshape, dtype=np.int64))
    table_shape = (1, 1) if size == 1 else (1, 2) if size == 2 and vshape != (2, 1) else vshape
    ndim = len(widths)
    traced = isinstance(values, Tracer)
    if traced:
        table = shapes.broadcast_to(shapes.reshape(values, new_shape=table_shape), shape=(ndim, 2))
    else:
        table = np.broadcast_to(np.reshape(values, table_shape), (ndim, 2))
    dtype = get_aval(x).dtype
    for ax, pair in enumerate(widths):
        parts = []
        for side, width in enumerate(pair):
            if not width:
                continue
            shape = shape_of(x)
            block_shape = (*shape[:ax], width, *shape[ax + 1:])
            if traced:
                value = astype(indexing.getitem(table, idx=StaticIndex((ax, side))), dtype)
                parts.append((side, shapes.broadcast_to(value, shape=block_shape)))
            else:
                parts.append((side, np.full(block_shape, table[ax, side], dtype)))
        if parts:
            blocks = [p for side, p in parts if side == 0] + [x] + [p for side, p in parts if side == 1]
            x = shapes.concatenate(*blocks, axis=ax)
    return x


@numpy_when_eager(np.pad)
def pad(array: ArrayLike, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """numpy.pad with modes 'constant' (`constant_values`, which may be traced), 'edge',
    'reflect', 'symmetric' (reflect_type 'even'), 'wrap' and 'empty' (filled with zeros).

    >>> import fgrad.numpy as fnp
    >>> fnp.pad(np.array([1.0, 2.0]), (1, 2), mode="edge")
    array([1., 1., 2., 2., 2.])
    """
    x = operand(array)
    shape = shape_of(x)
    widths = _pad_pairs(static_argument(pad_width, "pad", "pad_width"), len(shape))
    if callable(mode):
        raise NotImplementedError("fgrad.numpy.pad does not support a function as `mode` under a transform")
    if mode not in _PAD_KEYWORDS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - _PAD_KEYWORDS[mode]
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode in ("linear_ramp", "maximum", "mean", "median", "minimum"):
        raise NotImplementedError(
            f"fgrad.numpy.pad does not support mode '{mode}' yet; the supported modes are 'constant', "
            "'edge', 'reflect', 'symmetric', 'wrap' and 'empty'"
        )
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("fgrad.numpy.pad supports reflect_type='even' only")
    if mode in ("constant", "empty"):
        return _pad_constant(x, widths, kwargs.get("constant_values", 0))
    for ax, (before, after) in enumerate(widths):
        if shape[ax] == 0 and (before or after):
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
    for ax, (before, after) in enumerate(widths):
        if before or after:
            # NumPy pads the positions 0..n-1 as it would the values: that is the gather.
            source = np.pad(np.arange(shape[ax]), (before, after), mode=mode)  # type: ignore[call-overload]
            x = indexing.getitem(x, idx=StaticIndex((*(slice(None),) * ax, source)))
    return x


@numpy_when_eager(np.diag)
def diag(v: ArrayLike, k: int = 0) -> Array:
    """numpy.diag: a 1-d `v` as the k-th diagonal of a square matrix, or the k-th diagonal
    of a 2-d `v`.

    >>> import fgrad.numpy as fnp
    >>> fnp.diag(np.array([1.0, 2.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    x = operand(v)
    shape = shape_of(x)
    if len(shape) == 2:
        return diagonal(x, k)
    if len(shape) != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n, m = shape[0], shape[0] + abs(k)
    # In the flattened (m, m) matrix the diagonal is every (m + 1)-th element:
    # a strided slice, whose transpose is a strided slice too.
    start = k if k >= 0 else -k * m
    flat = indexing.index_add(np.zeros(m * m, get_aval(x).dtype), x,
                              idx=StaticIndex((slice(start, start + n * (m + 1), m + 1),)))
    return shapes.reshape(flat, new_shape=(m, m))


@numpy_when_eager(np.diagflat)
def diagflat(v: ArrayLike, k: int = 0) -> Array:
    """numpy.diagflat: the flattened `v` as the k-th diagonal of a square matrix.

    >>> import fgrad.numpy as fnp
    >>> fnp.diagflat(np.ones((1, 2))).shape
    (2, 2)
    """
    return diag(ravel(v), k)


def _triangle(x: Any, keep: np.ndarray) -> Any:
    return ew.where(keep, x, np.zeros((), get_aval(x).dtype))


@numpy_when_eager(np.tril)
def tril(m: ArrayLike, k: int = 0) -> Array:
    """numpy.tril: zeros above the k-th diagonal of the last two axes.

    >>> import fgrad.numpy as fnp
    >>> fnp.tril(np.ones((2, 2)))
    array([[1., 0.],
           [1., 1.]])
    """
    x = operand(m)
    return _triangle(x, np.tri(*shape_of(x)[-2:], k=k, dtype=bool))  # type: ignore[call-overload]


@numpy_when_eager(np.triu)
def triu(m: ArrayLike, k: int = 0) -> Array:
    """numpy.triu: zeros below the k-th diagonal of the last two axes.

    >>> import fgrad.numpy as fnp
    >>> fnp.triu(np.ones((2, 2)))
    array([[1., 1.],
           [0., 1.]])
    """
    x = operand(m)
    return _triangle(x, ~np.tri(*shape_of(x)[-2:], k=k - 1, dtype=bool))  # type: ignore[call-overload]


def zeros_like(a: ArrayLike, dtype: Any = None) -> Array:
    """numpy.zeros_like: a constant (zeros have no derivative to carry)."""
    aval = get_aval(a)
    return _constant(np.zeros(aval.shape, dtype or aval.dtype))


def ones_like(a: ArrayLike, dtype: Any = None) -> Array:
    """numpy.ones_like: a constant of `a`'s shape and dtype."""
    aval = get_aval(a)
    return _constant(np.ones(aval.shape, dtype or aval.dtype))


def full(shape: int | Sequence[int], fill_value: ArrayLike, dtype: Any = None) -> Array:
    """numpy.full; a traced `fill_value` is broadcast, keeping its derivative."""
    if ctx.trace is EVAL_TRACE or not isinstance(fill_value, Tracer):
        return _constant(np.full(shape, fill_value, dtype=dtype))
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    value = fill_value if dtype is None else astype(fill_value, dtype)
    return shapes.broadcast_to(value, shape=tuple(int(n) for n in shape))


def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    """numpy.linspace: `num` evenly spaced samples from `start` to `stop`, which may be
    traced (and arrays: then the samples run along `axis`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fnp.linspace(0.0, 1.0, 5)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> fgrad.jacfwd(lambda stop: fnp.linspace(0.0, stop, 5))(2.0)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    if ctx.trace is EVAL_TRACE or not (_has_tracer(start) or _has_tracer(stop)):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis, device=device)  # type: ignore[call-overload]
        return (_constant(out[0]), out[1]) if retstep else _constant(out)
    if device not in (None, "cpu"):
        raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: {device}')
    num = operator.index(static_argument(num, "linspace", "num"))
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = num - 1 if endpoint else num
    weak = ew.PYTHON_SCALAR_TYPES
    start, stop = (v if type(v) in weak else operand(v) for v in (start, stop))
    # NumPy's promotion of the end points (Python scalars weak), made inexact.
    dt = np.result_type(*(v if type(v) in weak else get_aval(v).dtype for v in (start, stop)), 0.0)
    start, stop = astype(start, dt), astype(stop, dt)
    delta = ufuncs.subtract(stop, start)
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * len(shape_of(delta)))
    step: Any
    if div > 0:
        step = ufuncs.divide(delta, div)
        # As NumPy: where a step underflows to zero (denormal deltas), scale before multiplying.
        underflow = _any(ufuncs.equal(step, 0))
        y = ufuncs.where(underflow, ufuncs.multiply(y / div, delta), ufuncs.multiply(y, step))
    else:  # 0 samples, or 1 with the end point: the step is undefined
        step = np.nan
        y = ufuncs.multiply(y, delta)
    y = ufuncs.add(y, start)
    if endpoint and num > 1:
        y = at(y)[-1].set(stop)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        if np.issubdtype(dtype, np.integer):
            y = ufuncs.floor(y)
        y = astype(y, dtype)
    return (y, step) if retstep else y


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype: Any = None) -> Array:
    """numpy.full_like: `fill_value` in `a`'s shape (and dtype); a traced value keeps its derivative."""
    aval = get_aval(a)
    return full(aval.shape, fill_value, dtype=dtype or aval.dtype)


def empty_like(prototype: ArrayLike, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: int | Sequence[int] | None = None, *, device: Any = None) -> Array:
    """numpy.empty_like: a new array of the prototype's shape and dtype, contents unspecified
    (zeros under a transform: a constant, with no derivative)."""
    if ctx.trace is EVAL_TRACE:
        return np.empty_like(prototype, dtype, order, subok, shape, device=device)  # type: ignore[call-overload]
    aval = get_aval(prototype)
    return _constant(np.zeros(aval.shape if shape is None else shape, dtype or aval.dtype))


def identity(n: int, dtype: Any = None, *, like: Any = None) -> Array:
    """numpy.identity: the `n` x `n` identity matrix (a constant).

    >>> import fgrad.numpy as fnp
    >>> fnp.identity(2)
    array([[1., 0.],
           [0., 1.]])
    """
    if ctx.trace is not EVAL_TRACE:
        n = static_argument(n, "identity", "n")
    return _constant(np.identity(n, dtype, like=like))


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = float, *, like: Any = None) -> Array:
    """numpy.tri: ones at and below the `k`-th diagonal of an `N` x `M` array (a constant).

    >>> import fgrad.numpy as fnp
    >>> fnp.tri(2, 3, dtype=int)
    array([[1, 0, 0],
           [1, 1, 0]])
    """
    if ctx.trace is not EVAL_TRACE:
        N, M, k = (static_argument(v, "tri", name) for v, name in ((N, "N"), (M, "M"), (k, "k")))
    return np.tri(N, M, k, dtype, like=like)


def logspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True,
             base: ArrayLike = 10.0, dtype: Any = None, axis: int = 0) -> Array:
    """numpy.logspace: ``base ** linspace(start, stop, num)``; the arguments may be traced.

    >>> import fgrad.numpy as fnp
    >>> fnp.logspace(0.0, 2.0, 3)
    array([  1.,  10., 100.])
    """
    if ctx.trace is EVAL_TRACE or not (_has_tracer(start) or _has_tracer(stop) or _has_tracer(base)):
        return np.logspace(start, stop, num, endpoint, base, dtype, axis)
    start, stop, base = (operand(v) for v in (start, stop, base))
    ndmax = len(np.broadcast_shapes(*(shape_of(v) for v in (start, stop, base))))
    start, stop, base = (array(v, copy=False, ndmin=ndmax) for v in (start, stop, base))
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = ufuncs.power(expand_dims(base, axis), y)
    return out if dtype is None else astype(out, dtype)


def geomspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Array:
    """numpy.geomspace: `num` samples evenly spaced on a log scale from `start` to `stop`
    (which may be traced; real values).

    >>> import fgrad.numpy as fnp
    >>> fnp.geomspace(1.0, 100.0, 3)
    array([  1.,  10., 100.])
    """
    if ctx.trace is EVAL_TRACE or not (_has_tracer(start) or _has_tracer(stop)):
        return np.geomspace(start, stop, num, endpoint, dtype, axis)
    num = operator.index(static_argument(num, "geomspace", "num"))
    start, stop = (np.asarray(v) if type(v) in (float, int, complex, bool) else operand(v)
                   for v in (start, stop))
    known = concrete_value([start, stop], None)
    if known is not None and builtins.any(np.any(np.asarray(v) == 0) for v in known):
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(get_aval(start).dtype, get_aval(stop).dtype, float(num), np.zeros((), dtype))
    if dt.kind == "c":
        raise NotImplementedError("fgrad.numpy.geomspace supports real end points only under a transform")
    out_dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = astype(start, dt), astype(stop, dt)
    out_sign = ufuncs.sign(start)
    start = ufuncs.divide(start, out_sign)
    stop = ufuncs.divide(stop, out_sign)
    result = logspace(ufuncs.log10(start), ufuncs.log10(stop), num=num, endpoint=endpoint, base=10.0,
                      dtype=dt)
    if num > 0:
        result = at(result)[0].set(start)
        if num > 1 and endpoint:
            result = at(result)[-1].set(stop)
    result = ufuncs.multiply(result, out_sign)
    if axis != 0:
        result = moveaxis(result, 0, axis)
    return astype(result, out_dtype)


@numpy_when_eager(np.vander)
def vander(x: ArrayLike, N: int | None = None, increasing: bool = False) -> Array:
    """numpy.vander: the Vandermonde matrix, columns the powers of `x` (decreasing by default).

    >>> import fgrad.numpy as fnp
    >>> fnp.vander(np.array([2.0, 3.0]), 3)
    array([[4., 2., 1.],
           [9., 3., 1.]])
    """
    v = np.asarray(x) if type(x) in (float, int, complex, bool) else operand(x)
    shape = shape_of(v)
    if len(shape) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = shape[0]
    N = n if N is None else operator.index(static_argument(N, "vander", "N"))
    dtype = np.promote_types(get_aval(v).dtype, int)
    v = astype(v, dtype)
    columns = [np.ones((n, 1 if N > 0 else 0), dtype)]
    if N > 1:  # x, x**2, ... as NumPy computes them: running products
        columns.append(cumprod(broadcast_to(reshape(v, (n, 1)), (n, N - 1)), axis=1))
    out = concatenate(columns, axis=1)
    return out if increasing else _flip_axes(out, (1,))


def _key_has_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    if isinstance(x, slice):
        return any(_key_has_tracer(v) for v in (x.start, x.stop, x.step))
    return isinstance(x, (list, tuple)) and builtins.any(_key_has_tracer(v) for v in x)


class _Concatenator:
    """numpy.r_ and numpy.c_: index expressions that concatenate arrays, scalars and ranges of
    numbers (slices, whose numbers must be concrete) along an axis, traced values included.

    >>> r_[[1.0, 2.0], 0.5, 0:3]
    array([1. , 2. , 0.5, 0. , 1. , 2. ])
    >>> c_[[1.0, 2.0], [3.0, 4.0]]
    array([[1., 3.],
           [2., 4.]])
    """

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int) -> None:
        self._name, self._axis, self._ndmin, self._trans1d = name, axis, ndmin, trans1d
        self._numpy = getattr(np, name)

    def __repr__(self) -> str:
        return f"fgrad.numpy.{self._name}"

    def __len__(self) -> int:
        return 0

    def __getitem__(self, key: Any) -> Array:
        if ctx.trace is EVAL_TRACE or not _key_has_tracer(key):
            return self._numpy[key]
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self._axis, self._ndmin, self._trans1d
        items: list[Any] = []
        kinds: list[Any] = []  # what fixes the result's dtype, as in NumPy: scalars weakly
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise NotImplementedError(f"fgrad.numpy.{self._name} does not make matrices (the 'r' and "
                                              "'c' directives) under a transform")
                try:
                    vec = [int(v) for v in item.split(",")]
                except ValueError as err:
                    raise ValueError(f"unknown special directive {item!r}" if "," in item
                                     else "unknown special directive") from err
                axis, ndmin, trans1d = (vec + [ndmin, trans1d][len(vec) - 1:])[:3]
                continue
            if isinstance(item, slice):
                item = np.r_[_concrete_slices(item, self._name)]
            scalar = type(item) in (int, float, complex, bool) or isinstance(item, np.generic)
            item = operand(item)
            kinds.append(item if scalar else get_aval(item).dtype)
            nd = get_aval(item).ndim
            if nd < ndmin:
                item = reshape(item, (1,) * (ndmin - nd) + shape_of(item))
                if trans1d != -1:
                    k2, k1 = ndmin - nd, trans1d
                    if k1 < 0:
                        k1 += k2 + 1
                    axes = list(range(ndmin))
                    item = transpose(item, axes[:k1] + axes[k2:] + axes[k1:k2])
            items.append(item)
        dtype = np.result_type(*kinds)
        return concatenate([i if get_aval(i).dtype == dtype else astype(i, dtype) for i in items], axis=axis)


r_ = _Concatenator("r_", 0, 1, -1)
c_ = _Concatenator("c_", -1, 2, 0)


class _Grid:
    """numpy.mgrid and numpy.ogrid: dense and open grids of the ranges of numbers in an index
    expression (constants; traced numbers must have concrete values).

    >>> mgrid[0:2, 0:3][1]
    array([[0, 1, 2],
           [0, 1, 2]])
    >>> ogrid[0:1:3j]
    array([0. , 0.5, 1. ])
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._numpy = getattr(np, name)

    def __repr__(self) -> str:
        return f"fgrad.numpy.{self._name}"

    def __getitem__(self, key: Any) -> Any:
        if ctx.trace is EVAL_TRACE or not _key_has_tracer(key):
            return self._numpy[key]
        return self._numpy[_concrete_slices(key, self._name)]


def _concrete_slices(key: Any, name: str) -> Any:
    if isinstance(key, tuple):
        return tuple(_concrete_slices(k, name) for k in key)
    if isinstance(key, slice):
        start, stop, step = static_argument([key.start, key.stop, key.step], name, "the slices' numbers")
        return slice(start, stop, step)
    return static_argument(key, name, "the slices' numbers")


mgrid = _Grid("mgrid")
ogrid = _Grid("ogrid")
