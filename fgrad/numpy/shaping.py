"""Shape functions: reshape, transpose, expand_dims, squeeze, ravel, on the
reshape/transpose primitives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.trace import EVAL_TRACE, ctx
from ..primitives import shapes
from .operands import Array, ArrayLike, normalize_axes, operand, shape_of

__all__ = ["reshape", "transpose", "expand_dims", "squeeze", "ravel"]


def _resolve_shape(shape: Any, size: int) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    return shape


def reshape(a: ArrayLike, shape: int | Sequence[int], order: str = "C") -> Array:
    """numpy.reshape (C order); one dimension may be -1."""
    if ctx.trace is EVAL_TRACE:
        return np.reshape(a, shape, order=order)  # type: ignore[call-overload]
    if order != "C":
        raise NotImplementedError("fgrad.numpy.reshape supports order='C' only")
    a = operand(a)
    old = shape_of(a)
    new = _resolve_shape(shape, int(np.prod(old, dtype=np.int64)))
    return a if new == old else shapes.reshape(a, new_shape=new)


def transpose(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """numpy.transpose: reverse the axes, or permute them as `axes` says."""
    if ctx.trace is EVAL_TRACE:
        return np.transpose(a, axes)
    a = operand(a)
    ndim = len(shape_of(a))
    if axes is None:
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(int(i) % ndim if ndim else int(i) for i in axes)
        if sorted(perm) != list(range(ndim)):
            raise ValueError("axes don't match array")
    return a if perm == tuple(range(ndim)) else shapes.transpose(a, axes=perm)


def expand_dims(a: ArrayLike, axis: int | Sequence[int]) -> Array:
    """numpy.expand_dims: insert axes of size 1 at the positions `axis`."""
    if ctx.trace is EVAL_TRACE:
        return np.expand_dims(a, axis)
    a = operand(a)
    shape = shape_of(a)
    n_new = 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))
    new_axes = normalize_axes(axis, len(shape) + n_new)
    rest = iter(shape)
    new_shape = tuple(1 if i in new_axes else next(rest) for i in range(len(shape) + n_new))
    return shapes.reshape(a, new_shape=new_shape)


def squeeze(a: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """numpy.squeeze: remove axes of size 1 (all of them, or those in `axis`)."""
    if ctx.trace is EVAL_TRACE:
        return np.squeeze(a, axis)
    a = operand(a)
    shape = shape_of(a)
    if axis is None:
        drop = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        drop = normalize_axes(axis, len(shape))
        if any(shape[i] != 1 for i in drop):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if not drop:
        return a
    return shapes.reshape(a, new_shape=tuple(n for i, n in enumerate(shape) if i not in drop))


def ravel(a: ArrayLike) -> Array:
    """numpy.ravel: the elements as a 1-d array (C order)."""
    if ctx.trace is EVAL_TRACE:
        return np.ravel(a)
    return reshape(a, -1)
