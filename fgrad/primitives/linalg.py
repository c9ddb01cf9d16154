"""matmul with NumPy's semantics: 1-d operands are promoted to a row (left) or
a column (right) and the added axis removed from the result; leading axes
broadcast as a stack of matrices.

matmul is linear in each operand. Its transpose works on the promoted 2-d
forms, so the 1-d cases need no rules of their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, get_aval
from ..core.rules import UndefinedPrimal, batch_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, elementwise, shapes
from . import derivatives as d

__all__ = ["matmul"]


_matmul_avals: dict[tuple[ShapedArray, ShapedArray], ShapedArray] = {}


def _matmul_aval(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    out = _matmul_avals.get((a, b))
    if out is None:
        out = _matmul_avals[a, b] = _compute_matmul_aval(a.strip_weak_type(), b.strip_weak_type())
    return out


def _compute_matmul_aval(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: an operand is 0-d (a scalar); use multiply or `*` instead")
    a_shape = (1, *a.shape) if a.ndim == 1 else a.shape
    b_shape = (*b.shape, 1) if b.ndim == 1 else b.shape
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(
            f"matmul: mismatch in the contracted dimension: shapes {a.shape} and {b.shape} "
            f"({a_shape[-1]} is different from {b_shape[-2]})"
        )
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    shape = batch + a_shape[-2:-1] * (a.ndim > 1) + b_shape[-1:] * (b.ndim > 1)
    dtype = np.result_type(a.dtype, b.dtype)
    return ShapedArray(shape, dtype)


matmul_p = Primitive("matmul", np.matmul, _matmul_aval)
d.defbilinear(matmul_p)


def _swap_last(x: Any) -> Any:
    nd = len(x.shape)
    return shapes.transpose(x, axes=(*range(nd - 2), nd - 1, nd - 2))


def _matrix_aval(aval: ShapedArray, left: bool) -> ShapedArray:
    if aval.ndim > 1:
        return aval
    return ShapedArray((1, *aval.shape) if left else (*aval.shape, 1), aval.dtype)


def _as_matrix(x: Any, aval: ShapedArray, left: bool) -> Any:
    if aval.ndim > 1:
        return x
    return shapes.reshape(x, new_shape=_matrix_aval(aval, left).shape)


def _matmul_transpose(ct: Any, a: Any, b: Any) -> list[Any]:
    a_linear = type(a) is UndefinedPrimal
    a_aval = a.aval if a_linear else get_aval(a)
    b_aval = b.aval if type(b) is UndefinedPrimal else get_aval(b)
    if a_aval.ndim == 2 and b_aval.ndim <= 2:  # the common cases, without the general bookkeeping
        if not a_linear:
            return [None, matmul(shapes.transpose(a, axes=(1, 0)), ct)]
        if b_aval.ndim == 2:
            return [matmul(ct, shapes.transpose(b, axes=(1, 0))), None]
        # matrix @ vector: the cotangent of the matrix is the outer product
        return [elementwise.mul(shapes.reshape(ct, new_shape=(ct.shape[0], 1)), b), None]
    a2, b2 = _matrix_aval(a_aval, left=True), _matrix_aval(b_aval, left=False)
    # Work on the 2-d forms: put back the axes that 1-d operands took out of ct.
    ct_shape = (*broadcast_shapes(a2.shape[:-2], b2.shape[:-2]), a2.shape[-2], b2.shape[-1])
    if ct.shape != ct_shape:
        ct = shapes.reshape(ct, new_shape=ct_shape)
    if a_linear:
        ct_a = d.unbroadcast(matmul(ct, _swap_last(_as_matrix(b, b_aval, left=False))), a2)
        return [shapes.reshape(ct_a, new_shape=a_aval.shape) if a_aval.ndim == 1 else ct_a, None]
    ct_b = d.unbroadcast(matmul(_swap_last(_as_matrix(a, a_aval, left=True)), ct), b2)
    return [None, shapes.reshape(ct_b, new_shape=b_aval.shape) if b_aval.ndim == 1 else ct_b]


transpose_rules[matmul_p] = _matmul_transpose


def _matmul_batch_folded(a: Any, b: Any, da: Any, db: Any) -> tuple[Any, int] | None:
    """One operand batched, the other a single matrix or vector: fold the
    batch into a matrix axis and do one matrix product (a stack of small
    products is one call per example in NumPy)."""
    if da is not None and db is None and get_aval(b).ndim <= 2:
        a = batching.move_axis(a, da, 0)
        shape = get_aval(a).shape  # (B, ..., k)
        rows = shapes.reshape(a, new_shape=(math.prod(shape[:-1]), shape[-1]))
        out = matmul(rows, b)
        tail = get_aval(b).shape[1:]  # (m,) for a matrix, () for a vector
        return shapes.reshape(out, new_shape=shape[:-1] + tail), 0
    if da is None and db is not None and get_aval(a).ndim <= 2 and get_aval(b).ndim <= 3:
        b = batching.move_axis(b, db, 0)
        size, *example = get_aval(b).shape
        if len(example) == 1:  # a @ vector, per example: (B, k) @ a.T
            return matmul(b, shapes.transpose(a, axes=tuple(reversed(range(get_aval(a).ndim))))), 0
        k, m = example  # a @ matrix, per example: a @ (k, B*m), batch ends up at axis -2
        cols = shapes.reshape(shapes.transpose(b, axes=(1, 0, 2)), new_shape=(k, size * m))
        out = matmul(a, cols)
        lead = get_aval(out).shape[:-1]
        return shapes.reshape(out, new_shape=(*lead, size, m)), len(lead)
    return None


def _matmul_batch(args: list[Any], dims: list[Any]) -> tuple[Any, int]:
    folded = _matmul_batch_folded(*args, *dims)
    if folded is not None:
        return folded
    size = batching.batch_size(args, dims)
    ranks = [get_aval(x).ndim - (dim is not None) for x, dim in zip(args, dims)]
    # One example's 1-d operands become matrices, so that the batch axis is
    # never taken for a matrix axis; then the batch axes go in front, with
    # room to broadcast against the other operand's stack of matrices.
    ops = []
    for i, (x, dim, r) in enumerate(zip(args, dims, ranks)):
        lead: tuple[int, ...] = () if dim is None else (size,)
        if dim is not None:
            x = batching.move_axis(x, dim, 0)
        if r == 1:
            k = get_aval(x).shape[-1]
            x = shapes.reshape(x, new_shape=lead + ((1, k) if i == 0 else (k, 1)))
        ops.append(x)
    stack = max(max(r, 2) for r in ranks)
    for i, (x, dim, r) in enumerate(zip(ops, dims, ranks)):
        if dim is not None and max(r, 2) < stack:
            shape = get_aval(x).shape
            ops[i] = shapes.reshape(x, new_shape=(size,) + (1,) * (stack - max(r, 2)) + shape[1:])
    out = matmul(*ops)
    shape = get_aval(out).shape
    drop = {len(shape) - 2} if ranks[0] == 1 else set()
    drop |= {len(shape) - 1} if ranks[1] == 1 else set()
    if drop:
        out = shapes.reshape(out, new_shape=tuple(n for i, n in enumerate(shape) if i not in drop))
    return out, 0


batch_rules[matmul_p] = _matmul_batch

matmul: Callable[..., Any] = matmul_p.bind
