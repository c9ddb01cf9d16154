"""fgrad.numpy.linalg: norms (and, with the NumPy-surface work, the rest)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.trace import EVAL_TRACE, ctx
from ..primitives import elementwise as ew
from .operands import Array, ArrayLike, normalize_axes, operand, shape_of
from .reductions import max, sum

__all__ = ["norm"]


def norm(
    x: ArrayLike, ord: Any = None, axis: int | Sequence[int] | None = None, keepdims: bool = False
) -> Array:
    """numpy.linalg.norm for vectors (ord None/2, 1, inf) and the Frobenius
    norm of matrices (ord None or 'fro'); the default is the 2-norm of all
    elements."""
    if ctx.trace is EVAL_TRACE:
        return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)  # type: ignore[arg-type]
    x = operand(x)
    axes = normalize_axes(axis, len(shape_of(x)))
    vector = len(axes) == 1 or (axis is None and ord is None)
    if ord is None or (vector and ord == 2) or (not vector and ord == "fro"):
        return ew.sqrt(sum(ew.square(ew.absolute(x)), axis=axes, keepdims=keepdims))
    if vector and ord == 1:
        return sum(ew.absolute(x), axis=axes, keepdims=keepdims)
    if vector and ord == np.inf:
        return max(ew.absolute(x), axis=axes, keepdims=keepdims)
    raise NotImplementedError(
        f"fgrad.numpy.linalg.norm does not support ord={ord!r} for {len(axes)} axes yet; "
        "supported: ord=None, 2, 1 or inf for vectors, and None or 'fro' for matrices"
    )
