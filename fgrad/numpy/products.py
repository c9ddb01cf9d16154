"""Products of arrays: matmul and dot."""

from __future__ import annotations

import numpy as np

from ..core.trace import EVAL_TRACE, ctx
from ..primitives import elementwise as ew
from ..primitives import linalg
from .operands import Array, ArrayLike, ndim_of, operand

__all__ = ["matmul", "dot"]


def matmul(a: ArrayLike, b: ArrayLike, /) -> Array:
    """numpy.matmul (the `@` operator): stacks of matrices, 1-d operands promoted."""
    if ctx.trace is EVAL_TRACE:
        return np.matmul(a, b)
    return linalg.matmul(operand(a), operand(b))


def dot(a: ArrayLike, b: ArrayLike) -> Array:
    """numpy.dot: a product of scalars, an inner product of vectors, or a matrix
    product (contracting the last axis of `a` with the first of a matrix `b`)."""
    if ctx.trace is EVAL_TRACE:
        return np.dot(a, b)
    a, b = operand(a), operand(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return ew.mul(a, b)
    if ndim_of(b) <= 2:
        return linalg.matmul(a, b)
    raise NotImplementedError(
        "fgrad.numpy.dot with a second operand of more than 2 dimensions is not supported "
        "yet; use fgrad.numpy.matmul (which treats it as a stack of matrices) instead"
    )
