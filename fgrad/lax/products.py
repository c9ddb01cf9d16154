"""JAX's general products `lax.dot` and `lax.dot_general`, written on
`fgrad.numpy.einsum`, and the `Precision` of products (fgrad computes at
NumPy's precision whatever it says)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..numpy.operands import Array, ArrayLike, operand, shape_of
from ..numpy.products import Precision, einsum

__all__ = ["Precision", "dot", "dot_general"]

DimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]


def _dims(dims: Any, rank: int, side: str, what: str) -> tuple[int, ...]:
    out = (int(dims),) if isinstance(dims, int) else tuple(int(d) for d in dims)
    if any(not 0 <= d < rank for d in out):
        raise TypeError(f"dot_general: {side} {what} dimensions {out} must be in [0, {rank}), "
                        f"the rank of {side}")
    if len(set(out)) != len(out):
        raise TypeError(f"dot_general: {side} {what} dimensions {out} must be distinct")
    return out


def dot_general(lhs: ArrayLike, rhs: ArrayLike, dimension_numbers: DimensionNumbers, precision: Any = None,
                preferred_element_type: Any = None) -> Array:
    """The contraction JAX's `lax.dot_general` names by ``dimension_numbers =
    ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``: the result's
    axes are the batch axes, then lhs's free axes, then rhs's, in order.
    `precision` (a `Precision`, its name, or a pair) is checked and ignored;
    `preferred_element_type` is the result's dtype.

    >>> import numpy as np
    >>> dot_general(np.ones((5, 2, 3)), np.ones((5, 3, 4)), (([2], [1]), ([0], [0]))).shape
    (5, 2, 4)
    """
    a, b = operand(lhs), operand(rhs)
    a_shape, b_shape = shape_of(a), shape_of(b)
    try:
        (a_contract, b_contract), (a_batch, b_batch) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError("dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
                        f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}") from None
    a_contract, a_batch = _dims(a_contract, len(a_shape), "lhs", "contracting"), _dims(a_batch, len(a_shape),
                                                                                         "lhs", "batch")
    b_contract, b_batch = _dims(b_contract, len(b_shape), "rhs", "contracting"), _dims(b_batch, len(b_shape),
                                                                                         "rhs", "batch")
    for what, i, j in (("batch", a_batch, b_batch), ("contracting", a_contract, b_contract)):
        if [a_shape[d] for d in i] != [b_shape[d] for d in j]:
            raise TypeError(f"dot_general: the {what} dimensions {i} of lhs (shape {a_shape}) and {j} of rhs "
                            f"(shape {b_shape}) must have the same sizes")
    if set(a_batch) & set(a_contract) or set(b_batch) & set(b_contract):
        raise TypeError(f"dot_general: batch and contracting dimensions must be disjoint, got "
                        f"{dimension_numbers!r}")
    # One einsum label per axis: shared by the paired batch and contracting axes.
    a_labels, b_labels = list(range(len(a_shape))), [-1] * len(b_shape)
    for k, m in zip(a_batch + a_contract, b_batch + b_contract):
        b_labels[m] = a_labels[k]
    fresh = iter(range(len(a_shape), len(a_shape) + len(b_shape)))
    b_labels = [next(fresh) if label < 0 else label for label in b_labels]
    a_free = [a_labels[k] for k in range(len(a_shape)) if k not in a_batch + a_contract]
    b_free = [b_labels[m] for m in range(len(b_shape)) if m not in b_batch + b_contract]
    out = [a_labels[k] for k in a_batch] + a_free + b_free
    return einsum(a, a_labels, b, b_labels, out, precision=precision,
                  preferred_element_type=preferred_element_type)


def dot(lhs: ArrayLike, rhs: ArrayLike, *, dimension_numbers: DimensionNumbers | None = None,
        precision: Any = None, preferred_element_type: Any = None) -> Array:
    """A vector or matrix product (JAX's `lax.dot`): the last axis of `lhs` with
    the first of `rhs`, both of rank 1 or 2; with `dimension_numbers`, any
    contraction, as `dot_general`.

    >>> import numpy as np
    >>> dot(np.ones((2, 3)), np.ones(3))
    array([3., 3.])
    """
    if dimension_numbers is None:
        a_shape, b_shape = shape_of(operand(lhs)), shape_of(operand(rhs))
        if not (1 <= len(a_shape) <= 2 and 1 <= len(b_shape) <= 2 and a_shape[-1] == b_shape[0]):
            raise ValueError("dot: dimension_numbers must be given for anything but a matrix-matrix, "
                             f"matrix-vector or vector-vector product; got shapes {a_shape} and {b_shape}")
        dimension_numbers = (((len(a_shape) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
