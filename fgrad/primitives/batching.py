"""Helpers that build batch rules (vmap), shared by every primitive family.

A batch rule gets the primitive's operands with, for each, the axis that holds
the examples (None: the operand is the same for all) and returns the result
and its batch axis. The helpers move batch axes only when a rule needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.avals import get_aval
from ..core.rules import batch_rules
from ..core.trace import Primitive

__all__ = [
    "move_axis", "with_batch_axis", "batch_size", "batched_axis", "defbatch_elementwise", "defbatch_unary",
    "defbatch_matrix_stacks",
]


def move_axis(x: Any, src: int, dst: int) -> Any:
    """`x` with its axis `src` moved to position `dst` (negative counts from the end)."""
    ndim = get_aval(x).ndim
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return shapes.transpose(x, axes=tuple(perm))


def with_batch_axis(x: Any, dim: int | None, size: int) -> Any:
    """`x` with its examples along axis 0; an unbatched `x` is repeated `size` times."""
    if dim is not None:
        return move_axis(x, dim, 0)
    shape = get_aval(x).shape
    return shapes.broadcast_to(shapes.reshape(x, new_shape=(1, *shape)), shape=(size, *shape))


def batched_axis(axis: int, dim: int) -> int:
    """Where an example's (non-negative) `axis` is in a batch whose examples are along `dim`."""
    return axis if axis < dim else axis + 1


def batch_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    for x, d in zip(args, dims):
        if d is not None:
            return get_aval(x).shape[d]
    raise ValueError("no batched operand")


def _elementwise_rule(prim: Primitive) -> Callable[..., Any]:
    def rule(args: list[Any], dims: list[int | None], **params: Any) -> tuple[Any, int]:
        ndims = [get_aval(x).ndim for x in args]
        rank = max(n - (d is not None) for n, d in zip(ndims, dims))  # of one example's result
        batched_dims = {d for d in dims if d is not None}
        if len(batched_dims) == 1 and all(
            n == rank + 1 if d is not None else n == 0 for n, d in zip(ndims, dims)
        ):
            # The batch axes already line up and unbatched operands are scalars: no move.
            return prim.bind(*args, **params), batched_dims.pop()
        moved = []
        for x, n, d in zip(args, ndims, dims):
            if d is not None:
                x = move_axis(x, d, 0)
                if n - 1 < rank:  # leave room for this operand to broadcast like one example
                    shape = get_aval(x).shape
                    x = shapes.reshape(x, new_shape=(shape[0],) + (1,) * (rank - n + 1) + shape[1:])
            moved.append(x)
        return prim.bind(*moved, **params), 0

    return rule


def defbatch_elementwise(prim: Primitive) -> None:
    """NumPy broadcasting primitives: batch axes to the front, example ranks aligned."""
    batch_rules[prim] = _elementwise_rule(prim)


def defbatch_unary(prim: Primitive) -> None:
    """A primitive acting on each element (or each example) alone: the batch axis stays."""

    def rule(args: list[Any], dims: list[int | None], **params: Any) -> tuple[Any, int | None]:
        return prim.bind(*args, **params), dims[0]

    batch_rules[prim] = rule


def defbatch_matrix_stacks(prim: Primitive) -> None:
    """A primitive on stacks of matrices (the last two axes) that broadcast
    against each other, as NumPy's linalg functions: batch axes in front, and a
    batched operand whose stack is shorter than another's gets axes of size 1,
    so that the batch axis never meets a stack axis."""

    def rule(args: list[Any], dims: list[int | None], **params: Any) -> tuple[Any, Any]:
        stack = max(get_aval(x).ndim - (dim is not None) - 2 for x, dim in zip(args, dims))
        moved = []
        for x, dim in zip(args, dims):
            if dim is not None:
                x = move_axis(x, dim, 0)
                size, *example = get_aval(x).shape
                if len(example) - 2 < stack:
                    x = shapes.reshape(x, new_shape=(size, *(1,) * (stack - len(example) + 2), *example))
            moved.append(x)
        out = prim.bind(*moved, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    batch_rules[prim] = rule


# The primitive modules use these helpers in their rules, and the helpers bind
# their primitives: imported last, so that each side finds the other defined.
from . import shapes  # noqa: E402
