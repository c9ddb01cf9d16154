"""Reductions over a tuple of axes: reduce_sum, reduce_max, reduce_min.

The axes are normalized (non-negative, sorted) by the NumPy layer, which also
implements `keepdims` with a reshape. reduce_sum is linear; its transpose
broadcasts the cotangent back. reduce_max/min share one jvp: the tangent at
the locations of the extremum, averaged over ties (JAX's convention).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray
from ..core.rules import batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from . import derivatives as d
from . import elementwise as ew
from . import shapes

__all__ = ["reduce_sum", "reduce_max", "reduce_min", "kept_shape"]


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with the reduced axes kept as size 1."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


@functools.cache
def _reduction_dtype(np_fn: Callable[..., Any], dtype: np.dtype) -> np.dtype:
    return np_fn(np.zeros(1, dtype)).dtype


def _reduction(
    name: str, np_fn: Callable[..., Any], ufunc: np.ufunc, empty_ok: bool
) -> Primitive:
    cache: dict[tuple[ShapedArray, tuple[int, ...]], ShapedArray] = {}

    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        out = cache.get((x, axes))
        if out is not None:
            return out
        if any(not 0 <= a < x.ndim for a in axes):
            raise ValueError(f"axis {axes} is out of bounds for an array of dimension {x.ndim}")
        if not empty_ok and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {np_fn.__name__} "
                             "which has no identity")
        shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
        out = cache[x, axes] = ShapedArray(shape, _reduction_dtype(np_fn, x.dtype))
        return out

    reduce = ufunc.reduce

    def impl(x: Any, *, axes: tuple[int, ...]) -> Any:
        # The ufunc's reduce skips numpy.sum's Python wrapper; numpy.sum itself
        # is kept for the small integer and bool dtypes it widens.
        if getattr(x, "dtype", None) is not None and x.dtype.kind in "fc":
            return reduce(x, axis=axes)
        return np_fn(x, axis=axes)

    return Primitive(name, impl, abstract_eval)


reduce_sum_p = _reduction("reduce_sum", np.sum, np.add, empty_ok=True)
d.deflinear(reduce_sum_p)


def _reduce_sum_transpose(ct: Any, x: Any, *, axes: tuple[int, ...]) -> list[Any]:
    shape = x.aval.shape
    return [shapes.broadcast_to(shapes.reshape(ct, new_shape=kept_shape(shape, axes)), shape=shape)]


transpose_rules[reduce_sum_p] = _reduce_sum_transpose

reduce_max_p = _reduction("reduce_max", np.max, np.maximum, empty_ok=False)
reduce_min_p = _reduction("reduce_min", np.min, np.minimum, empty_ok=False)


def _chooser_jvp(prim: Primitive) -> Callable[..., Any]:
    def jvp(primals: list[Any], tangents: list[Any], *, axes: tuple[int, ...]) -> tuple[Any, Any]:
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        at_extremum = ew.eq(x, shapes.reshape(ans, new_shape=kept_shape(x.shape, axes)))
        weights = ew.convert_element_type(at_extremum, new_dtype=g.dtype)
        weights = ew.div(weights, shapes.reshape(reduce_sum(weights, axes=axes),
                                                 new_shape=kept_shape(x.shape, axes)))
        return ans, reduce_sum(ew.mul(g, weights), axes=axes)

    return jvp


jvp_rules[reduce_max_p] = _chooser_jvp(reduce_max_p)
jvp_rules[reduce_min_p] = _chooser_jvp(reduce_min_p)


def _reduction_batch(prim: Primitive) -> Callable[..., Any]:
    def rule(args: list[Any], dims: list[Any], *, axes: tuple[int, ...]) -> tuple[Any, int]:
        (x,), (dim,) = args, dims
        actual = tuple(a if a < dim else a + 1 for a in axes)  # the example's axes, skipping the batch
        return prim.bind(x, axes=actual), dim - sum(a < dim for a in actual)

    return rule


for _p in (reduce_sum_p, reduce_max_p, reduce_min_p):
    batch_rules[_p] = _reduction_batch(_p)

reduce_sum: Callable[..., Any] = reduce_sum_p.bind
reduce_max: Callable[..., Any] = reduce_max_p.bind
reduce_min: Callable[..., Any] = reduce_min_p.bind
