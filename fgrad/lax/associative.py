"""`associative_scan`: all prefix combinations of an associative operation in
O(log n) rounds, as JAX's `lax.associative_scan`.

No primitive of its own: the rounds are strided slices, calls of the user's
function on whole halves of the axis, concatenation and interleaving, so
that every transform applies through those ordinary primitives, and a
traced or jitted scan has O(log n) equations, not n.

The recursion (Blelloch's odd-even scheme): combining neighbours pairwise,
``(x0 x1), (x2 x3), ...``, and scanning those halves the length and gives
the prefixes that end at the odd positions; each prefix that ends at an
even position 2k + 2 is then the odd one before it combined with x[2k + 2].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy.lib.array_utils import normalize_axis_index

from ..api.pytree import tree_flatten, tree_unflatten
from ..core.avals import get_aval
from ..numpy import concatenate, flip, reshape, stack
from ..numpy.operands import operand, shape_of

__all__ = ["associative_scan"]


def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """The prefix combinations ``[x0, fn(x0, x1), fn(fn(x0, x1), x2), ...]`` of the
    slices of `elems` (a pytree of arrays) along `axis`, for an associative `fn`,
    in O(log n) rounds (JAX's `lax.associative_scan`). `fn` combines whole
    stacks of slices at once: it takes two pytrees like `elems` whose arrays
    have equal lengths along `axis`, and combines them slice by slice (wrap a
    function of single slices in `fgrad.vmap`, with `in_axes=axis`).
    `reverse` combines from the end: ``[..., fn(fn(z, y), x), fn(z, y), z]``.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> associative_scan(fnp.add, np.arange(1.0, 5.0))
    array([ 1.,  3.,  6., 10.])
    >>> associative_scan(fnp.add, np.arange(1.0, 5.0), reverse=True)
    array([10.,  9.,  7.,  4.])
    """
    if not callable(fn):
        raise TypeError(f"associative_scan: fn must be a function of two pytrees, got {type(fn).__name__}")
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise ValueError("associative_scan: elems has no arrays to scan")
    leaves = [operand(x) for x in leaves]
    rank = len(shape_of(leaves[0]))
    if rank == 0:
        raise ValueError("associative_scan: elems must be arrays with an axis to scan along, got a scalar")
    axis = normalize_axis_index(int(axis), rank)
    if any(len(shape_of(x)) <= axis or shape_of(x)[axis] != shape_of(leaves[0])[axis] for x in leaves):
        raise ValueError("associative_scan: the arrays of elems must have the same length along axis "
                         f"{axis}, got shapes {[shape_of(x) for x in leaves]}")

    def part(x: Any, start: int, stop: int | None, step: int = 1) -> Any:
        return x[(slice(None),) * axis + (slice(start, stop, step),)]

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        expected, got = [get_aval(x).shape for x in a], [get_aval(x).shape for x in out]
        if out_tree != tree or got != expected:
            raise TypeError(
                f"associative_scan: fn must return a pytree like its arguments, of structure {tree} and "
                f"shapes {expected}, but it returned {out_tree} with shapes {got}"
            )
        return out

    def interleave(even: Any, odd: Any) -> Any:
        """even[0], odd[0], even[1], odd[1], ... (even one longer, or as long)."""
        n_odd = shape_of(odd)[axis]
        pairs = stack([part(even, 0, n_odd), odd], axis=axis + 1)
        shape = shape_of(pairs)
        both = reshape(pairs, shape[:axis] + (2 * n_odd,) + shape[axis + 2:])
        if shape_of(even)[axis] == n_odd:
            return both
        return concatenate([both, part(even, n_odd, None)], axis=axis)

    def prefixes(xs: list[Any]) -> list[Any]:
        n = shape_of(xs[0])[axis]
        if n < 2:
            return xs
        odd = prefixes(combine([part(x, 0, n - 1, 2) for x in xs], [part(x, 1, None, 2) for x in xs]))
        # The prefix ending at 2k + 2 is the one ending at 2k + 1, then x[2k + 2].
        rest = [part(x, 2, None, 2) for x in xs]
        # (n = 2: no even position after 0)
        even = rest if n == 2 else combine(odd if n % 2 else [part(o, 0, -1) for o in odd], rest)
        return [interleave(concatenate([part(x, 0, 1), e], axis=axis), o) for x, e, o in zip(xs, even, odd)]

    if reverse:
        leaves = [flip(x, axis) for x in leaves]
    out = prefixes(leaves)
    if reverse:
        out = [flip(x, axis) for x in out]
    return tree_unflatten(tree, out)
