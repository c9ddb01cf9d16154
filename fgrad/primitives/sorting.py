"""Sorting along one axis: sort, argsort, argpartition, sort_by_key, and searchsorted.

`sort_by_key(keys, values)` reorders `values` the way a stable sort reorders
`keys`. It is linear in `values`, and it is sort's derivative: sorting
permutes the tangent exactly as it permutes the values (ties in the stable
order). Its transpose applies the inverse permutation, which is again a sort
by key: by the positions the first sort took the elements from (the argsort
of the keys). Permutations thus stay operands, never static indices, so
their derivatives also trace under make_jaxpr and batch under vmap.

argsort (always stable), argpartition (NumPy's own arrangement) and
searchsorted give integers: no derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.libraries import cast
from ..core.rules import batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, indexing, shapes
from . import derivatives as d
from . import elementwise as ew
from . import reductions as red

__all__ = ["sort", "argsort", "argpartition", "sort_by_key", "searchsorted"]


def _sort_aval(x: ShapedArray, *, axis: int) -> ShapedArray:
    red.check_axes(x, (axis,))
    return x.strip_weak_type()


def _sort_impl(x: Any, *, axis: int) -> Any:
    out = np.array(x, copy=True)
    out.sort(axis=axis)  # the method: no Python wrapper
    return out


# --- the implementations on a namespace ---------------------------------------------------
# The standard's sort and argsort (stable, NaN last as NumPy's where the library
# computes with NumPy). It orders real numbers only: booleans are sorted as
# uint8. argpartition is a full stable argsort, which is one of the
# arrangements a partition allows (NumPy leaves the order within each part
# unspecified).


def _sortable(xp: Any, x: Any, dtype: np.dtype | None = None) -> Any:
    """`x` (in `dtype`, if given) as an array the standard sorts."""
    dtype = get_aval(x).dtype if dtype is None else dtype
    return cast(xp, x, np.dtype(np.uint8) if dtype.kind == "b" else dtype)


def _argsort(xp: Any, x: Any, *, axis: int) -> Any:
    red.check_axes(get_aval(x), (axis,))
    return cast(xp, xp.argsort(_sortable(xp, x), axis=axis, stable=True), indexing.INDEX_DTYPE)


def _sort(xp: Any, x: Any, *, axis: int) -> Any:
    dtype = _sort_aval(get_aval(x), axis=axis).dtype
    return cast(xp, xp.sort(_sortable(xp, x), axis=axis, stable=True), dtype)


def _argpartition(xp: Any, x: Any, *, kth: tuple[int, ...], axis: int) -> Any:
    _argpartition_aval(get_aval(x), kth=kth, axis=axis)
    return _argsort(xp, x, axis=axis)


def _take_along_axis(xp: Any, x: Any, indices: Any, axis: int) -> Any:
    """The standard's take_along_axis, or for a library without it (Dask) the
    same elements taken from the flattened array: an element's flat position
    is its index along `axis` times that axis's stride, plus the position of
    its line."""
    native = getattr(xp, "take_along_axis", None)
    if native is not None:
        return native(x, indices, axis=axis)
    shape = get_aval(x).shape
    stride = int(np.prod(shape[axis + 1:], dtype=np.int64))
    lines = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    lines = lines[(slice(None),) * axis + (slice(0, 1),)]  # each line's first position
    positions = cast(xp, lines, indexing.INDEX_DTYPE) + cast(xp, indices, indexing.INDEX_DTYPE) * stride
    return indexing.library_take(xp, x, positions)


def _sort_by_key(xp: Any, keys: Any, values: Any, *, axis: int) -> Any:
    dtype = _sort_by_key_aval(get_aval(keys), get_aval(values), axis=axis).dtype
    order = xp.argsort(_sortable(xp, keys), axis=axis, stable=True)
    return _take_along_axis(xp, cast(xp, values, dtype), order, axis)


def _searchsorted(xp: Any, a: Any, v: Any, *, side: str) -> Any:
    # Both in NumPy's common dtype, in which NumPy compares them. A 0-d `v` is
    # looked up as a 1-d one: Dask's blocks would write into NumPy's scalar
    # result.
    shape = _searchsorted_aval(get_aval(a), get_aval(v), side=side).shape
    dtype = np.result_type(get_aval(a).dtype, get_aval(v).dtype)
    v = _sortable(xp, v, dtype)
    if not shape:
        return xp.reshape(_searchsorted(xp, a, xp.reshape(v, (1,)), side=side), ())
    found = xp.searchsorted(_sortable(xp, a, dtype), v, side=side)
    return cast(xp, found, indexing.INDEX_DTYPE)


sort_p = Primitive("sort", _sort, _sort_aval, numpy=_sort_impl)


def _sort_jvp(primals: list[Any], tangents: list[Any], *, axis: int) -> tuple[Any, Any]:
    (x,), (g,) = primals, tangents
    return sort(x, axis=axis), sort_by_key(x, g, axis=axis)


jvp_rules[sort_p] = _sort_jvp


def _argsort_aval(x: ShapedArray, *, axis: int) -> ShapedArray:
    red.check_axes(x, (axis,))
    return ShapedArray(x.shape, indexing.INDEX_DTYPE)


argsort_p = Primitive(
    "argsort", _argsort, _argsort_aval,
    numpy=lambda x, *, axis: np.asarray(x).argsort(axis=axis, kind="stable"),
)
d.defnojvp(argsort_p)


def _axis_batch(prim: Primitive) -> Callable[..., Any]:
    """The batch rule of a primitive of one operand working along `axis`, keeping the shape."""

    def rule(args: list[Any], dims: list[Any], *, axis: int) -> tuple[Any, int]:
        (x,), (dim,) = args, dims
        return prim.bind(x, axis=batching.batched_axis(axis, dim)), dim

    return rule


batch_rules[sort_p] = _axis_batch(sort_p)
batch_rules[argsort_p] = _axis_batch(argsort_p)


def _argpartition_aval(x: ShapedArray, *, kth: tuple[int, ...], axis: int) -> ShapedArray:
    red.check_axes(x, (axis,))
    if any(not 0 <= k < x.shape[axis] for k in kth):
        raise ValueError(f"kth {kth} out of bounds ({x.shape[axis]})")
    return ShapedArray(x.shape, indexing.INDEX_DTYPE)


argpartition_p = Primitive(
    "argpartition", _argpartition, _argpartition_aval,
    numpy=lambda x, *, kth, axis: np.asarray(x).argpartition(kth, axis=axis),
)
d.defnojvp(argpartition_p)


def _argpartition_batch(
    args: list[Any], dims: list[Any], *, kth: tuple[int, ...], axis: int
) -> tuple[Any, int]:
    (x,), (dim,) = args, dims
    return argpartition(x, kth=kth, axis=batching.batched_axis(axis, dim)), dim


batch_rules[argpartition_p] = _argpartition_batch


# --- sort_by_key: values in the order a stable sort of the keys puts them ---------------

def _sort_by_key_aval(keys: ShapedArray, values: ShapedArray, *, axis: int) -> ShapedArray:
    if keys.shape != values.shape:
        raise ValueError(f"sort_by_key: keys of shape {keys.shape} and values of shape {values.shape} "
                         "must have the same shape")
    red.check_axes(keys, (axis,))
    return values.strip_weak_type()


def _sort_by_key_impl(keys: Any, values: Any, *, axis: int) -> Any:
    order = np.asarray(keys).argsort(axis=axis, kind="stable")
    return np.take_along_axis(np.asarray(values), order, axis=axis)


sort_by_key_p = Primitive("sort_by_key", _sort_by_key, _sort_by_key_aval, numpy=_sort_by_key_impl)


def _sort_by_key_jvp(primals: list[Any], tangents: list[Any], *, axis: int) -> tuple[Any, Any]:
    # Linear in the values; the keys only choose the order (no derivative).
    (keys, values), (_, t) = primals, tangents
    out = sort_by_key(keys, values, axis=axis)
    return out, None if t is None else sort_by_key(keys, t, axis=axis)


def _sort_by_key_transpose(ct: Any, keys: Any, values: Any, *, axis: int) -> list[Any]:
    assert not d.is_linear(keys), "sort_by_key is linear in its values only"
    # out[i] = values[p[i]] with p = argsort(keys); so ct_values[p[i]] = ct[i],
    # i.e. ct_values = ct[argsort(p)]: ct sorted by the key p.
    return [None, sort_by_key(argsort(keys, axis=axis), ct, axis=axis)]


jvp_rules[sort_by_key_p] = _sort_by_key_jvp
transpose_rules[sort_by_key_p] = _sort_by_key_transpose


def _sort_by_key_batch(args: list[Any], dims: list[Any], *, axis: int) -> tuple[Any, int]:
    (keys, values), (dk, dv) = args, dims
    if dk is not None and dk == dv:
        return sort_by_key(keys, values, axis=batching.batched_axis(axis, dk)), dk
    size = batching.batch_size(args, dims)
    keys = batching.with_batch_axis(keys, dk, size)
    values = batching.with_batch_axis(values, dv, size)
    return sort_by_key(keys, values, axis=axis + 1), 0


batch_rules[sort_by_key_p] = _sort_by_key_batch


# --- searchsorted ------------------------------------------------------------------------

def _searchsorted_aval(a: ShapedArray, v: ShapedArray, *, side: str) -> ShapedArray:
    if a.ndim != 1:
        raise ValueError(f"searchsorted: the sorted array must be 1-d, got shape {a.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    return ShapedArray(v.shape, indexing.INDEX_DTYPE)


searchsorted_p = Primitive(
    "searchsorted", _searchsorted, _searchsorted_aval,
    numpy=lambda a, v, *, side: np.asarray(a).searchsorted(v, side=side),
)
d.defnojvp(searchsorted_p)


def _searchsorted_batch(args: list[Any], dims: list[Any], *, side: str) -> tuple[Any, int]:
    (a, v), (da, dv) = args, dims
    if da is None:  # one sorted array for all: the result has v's shape, batch axis included
        return searchsorted(a, v, side=side), dv
    # A sorted array per example: count the elements before each v (NaN sorts last).
    size = batching.batch_size(args, dims)
    a = batching.move_axis(a, da, 0)
    v = batching.with_batch_axis(v, dv, size)
    v_shape = get_aval(v).shape
    a = shapes.reshape(a, new_shape=(size,) + (1,) * (len(v_shape) - 1) + get_aval(a).shape[1:])
    v = shapes.reshape(v, new_shape=(*v_shape, 1))
    before = ew.lt(a, v) if side == "left" else ew.le(a, v)
    if get_aval(v).dtype.kind in "fc" or get_aval(a).dtype.kind in "fc":
        v_nan = ew.ne(v, v)
        before = ew.where(v_nan, ew.eq(a, a) if side == "left" else True, before)
    count = red.reduce_sum(before, axes=(len(v_shape),))
    if get_aval(count).dtype != indexing.INDEX_DTYPE:
        count = ew.convert_element_type(count, new_dtype=indexing.INDEX_DTYPE)
    return count, 0


batch_rules[searchsorted_p] = _searchsorted_batch

sort: Callable[..., Any] = sort_p.bind
argsort: Callable[..., Any] = argsort_p.bind
argpartition: Callable[..., Any] = argpartition_p.bind
sort_by_key: Callable[..., Any] = sort_by_key_p.bind
searchsorted: Callable[..., Any] = searchsorted_p.bind
