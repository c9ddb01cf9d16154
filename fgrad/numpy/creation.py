"""Creating arrays: from data (array, asarray, stack, concatenate) and from
shapes (zeros, ones, full, arange, linspace, eye and the *_like family).

Arrays created from shapes are constants: NumPy's own functions. Arrays
assembled from traced values (`array([x, 1.0, y])`, `stack`) are built with
the concatenate primitive, so derivatives flow through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.avals import get_aval
from ..core.trace import EVAL_TRACE, Tracer, ctx
from ..primitives import elementwise as ew
from ..primitives import shapes
from .operands import Array, ArrayLike, normalize_axes, operand, shape_of
from .shaping import expand_dims, reshape

__all__ = [
    "array", "asarray", "astype", "stack", "concatenate", "zeros", "ones", "full", "empty",
    "zeros_like", "ones_like", "full_like", "arange", "linspace", "eye",
]

zeros = np.zeros
ones = np.ones
empty = np.empty
arange = np.arange
linspace = np.linspace
eye = np.eye


def astype(x: ArrayLike, dtype: Any) -> Array:
    """`x` converted to `dtype` (a float-to-float conversion keeps the derivative)."""
    if ctx.trace is EVAL_TRACE:
        return np.asarray(x).astype(dtype)
    x = operand(x)
    dtype = np.dtype(dtype)
    return x if get_aval(x).dtype == dtype else ew.convert_element_type(x, new_dtype=dtype)


def _has_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
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


def asarray(a: Any, dtype: Any = None) -> Array:
    """numpy.asarray: `a` as an array without copying (traced values stay traced)."""
    if ctx.trace is EVAL_TRACE:
        return np.asarray(a, dtype=dtype)
    return array(a, dtype=dtype, copy=False)


def concatenate(arrays: Sequence[ArrayLike], axis: int | None = 0) -> Array:
    """numpy.concatenate along an existing axis (axis=None: of the flattened arrays)."""
    if ctx.trace is EVAL_TRACE:
        return np.concatenate(arrays, axis=axis)
    xs = [operand(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        xs = [reshape(x, -1) for x in xs]
        axis = 0
    (axis,) = normalize_axes(axis, max(len(shape_of(xs[0])), 1))
    return shapes.concatenate(*xs, axis=axis)


def stack(arrays: Sequence[ArrayLike], axis: int = 0) -> Array:
    """numpy.stack: join arrays of the same shape along a new axis."""
    if ctx.trace is EVAL_TRACE:
        return np.stack(arrays, axis=axis)
    xs = [operand(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    shapes_seen = {shape_of(x) for x in xs}
    if len(shapes_seen) > 1:
        raise ValueError("all input arrays must have the same shape")
    return shapes.concatenate(*[expand_dims(x, axis) for x in xs],
                              axis=normalize_axes(axis, len(shape_of(xs[0])) + 1)[0])


def zeros_like(a: ArrayLike, dtype: Any = None) -> Array:
    """numpy.zeros_like: a constant (zeros have no derivative to carry)."""
    aval = get_aval(a)
    return np.zeros(aval.shape, dtype or aval.dtype)


def ones_like(a: ArrayLike, dtype: Any = None) -> Array:
    aval = get_aval(a)
    return np.ones(aval.shape, dtype or aval.dtype)


def full(shape: int | Sequence[int], fill_value: ArrayLike, dtype: Any = None) -> Array:
    """numpy.full; a traced `fill_value` is broadcast, keeping its derivative."""
    if ctx.trace is EVAL_TRACE or not isinstance(fill_value, Tracer):
        return np.full(shape, fill_value, dtype=dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    value = fill_value if dtype is None else astype(fill_value, dtype)
    return shapes.broadcast_to(value, shape=tuple(int(n) for n in shape))


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype: Any = None) -> Array:
    aval = get_aval(a)
    return full(aval.shape, fill_value, dtype=dtype or aval.dtype)
