"""Reductions: sum, mean, max, min (axis, keepdims) on the reduction primitives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.trace import EVAL_TRACE, ctx
from ..primitives import elementwise as ew
from ..primitives import reductions as red
from ..primitives import shapes
from .operands import Array, ArrayLike, normalize_axes, operand, shape_of

__all__ = ["sum", "mean", "max", "min", "amax", "amin"]

Axis = int | Sequence[int] | None


def _reduce(prim_fn: Any, a: Any, axis: Axis, keepdims: bool) -> Any:
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    out = prim_fn(a, axes=axes)
    if keepdims:
        out = shapes.reshape(out, new_shape=red.kept_shape(shape, axes))
    return out


def sum(a: ArrayLike, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """numpy.sum over `axis` (all axes by default)."""
    if ctx.trace is EVAL_TRACE:
        return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    a = operand(a)
    if dtype is not None:
        a = ew.convert_element_type(a, new_dtype=np.dtype(dtype))
    return _reduce(red.reduce_sum, a, axis, keepdims)


def mean(a: ArrayLike, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """numpy.mean: the sum divided by the number of elements reduced."""
    if ctx.trace is EVAL_TRACE:
        return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    a = operand(a)
    shape = shape_of(a)
    count = int(np.prod([shape[i] for i in normalize_axes(axis, len(shape))], dtype=np.int64))
    total = sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    out = ew.div(total, count)
    if dtype is not None and out.dtype != np.dtype(dtype):
        out = ew.convert_element_type(out, new_dtype=np.dtype(dtype))
    return out


def max(a: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """numpy.max; where several elements tie for the maximum, the derivative is
    shared equally between them."""
    if ctx.trace is EVAL_TRACE:
        return np.max(a, axis=axis, keepdims=keepdims)
    return _reduce(red.reduce_max, operand(a), axis, keepdims)


def min(a: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """numpy.min; ties share the derivative equally."""
    if ctx.trace is EVAL_TRACE:
        return np.min(a, axis=axis, keepdims=keepdims)
    return _reduce(red.reduce_min, operand(a), axis, keepdims)


amax = max
amin = min
