"""Gather and scatter: indexing whose integer indices are operands, traced or
not (`getitem` and the `index_*` scatters take theirs as a parameter).

Both take the indexed array `x` and one integer index array per leading axis
of x, `gather(x, i0, i1, ...)`: the index arrays broadcast together to a shape
R, and the result is ``x[i0, i1, ...]``, of shape R followed by the axes of x
that no index array covers (taken whole). Every NumPy index with traced
integer arrays (slices, None, Ellipsis and ints mixed in) has this form: the
NumPy layer turns slices into ranges along their own axis of R
(`numpy/indexing.py`).

| primitive | result | rules |
|---|---|---|
| gather | ``x[idx]`` | linear in x; transpose scatter_add |
| scatter_add | a copy of x with ``out[idx] += y`` | linear in (x, y); transpose gather |
| scatter_set | a copy of x with ``out[idx] = y`` | linear in (x, y) |
| scatter_mul | a copy of x with ``out[idx] *= y`` | linear in x; full jvp |
| scatter_min, scatter_max | ``out[idx] = minimum(out[idx], y)`` | full jvp, ties share |
| scatter_mul_cofactors | d out / d y of scatter_mul | first order only |

Indices fgrad cannot check when it traces follow JAX: a negative index
counts from the end, then a gather clamps what is still out of bounds into
the axis (`mode="clip"`), and a scatter drops updates out of bounds
(`mode="drop"`; `"clip"` clamps them instead). The transpose of a clamping
gather is a clamping scatter_add; that of a dropping scatter_add is a gather
that gives 0 out of bounds (`mode="fill"`). A position selected several times
gets every update (as `numpy.ufunc.at`); scatter_set keeps NumPy's last write,
and only that write gets a derivative.

Batch rules put the batch axis of x in front and index it with a range of its
own, so that a batch of x, of indices, of updates, or any mix, is one gather
or scatter again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, get_aval
from ..core.libraries import cast, dtype_of, library_of_namespace
from ..core.rules import batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, shapes
from . import derivatives as d
from . import elementwise as ew

__all__ = [
    "gather", "scatter_add", "scatter_set", "scatter_mul", "scatter_min", "scatter_max",
    "GATHER_MODES", "SCATTER_MODES",
]

GATHER_MODES = ("clip", "fill")
SCATTER_MODES = ("clip", "drop")


# --- shapes and values -------------------------------------------------------------


def _selection(x: ShapedArray, indices: Sequence[ShapedArray], what: str) -> tuple[int, ...]:
    """The shape ``x[indices]`` selects: the indices' broadcast shape, then the axes
    of x they do not cover (TypeError or ValueError for indices that do not fit)."""
    if len(indices) > x.ndim:
        raise ValueError(f"{what}: {len(indices)} index arrays for an array of rank {x.ndim} "
                         f"({x.str_short()})")
    for i in indices:
        if i.dtype.kind not in "iu":
            raise TypeError(f"{what}: indices must be integers, but one is {i.str_short()}")
    return broadcast_shapes(*(i.shape for i in indices)) + x.shape[len(indices):]


def _normalized(x_shape: tuple[int, ...], indices: Sequence[Any], mode: str) -> tuple[list[Any], Any]:
    """The indices with negative ones counted from the end and the rest clamped
    into bounds, and (for a dropping or filling mode) where they all were in
    bounds, broadcast to their common shape (None for "clip")."""
    out, inside = [], None
    for i, n in zip(indices, x_shape):
        i = np.asarray(i)
        i = np.where(i < 0, i + n, i)
        if mode != "clip":
            ok = (i >= 0) & (i < n)
            inside = ok if inside is None else inside & ok
        out.append(np.clip(i, 0, max(n - 1, 0)))
    if inside is not None:
        inside = np.broadcast_to(inside, broadcast_shapes(*(np.shape(i) for i in indices)))
    return out, inside


def _gather_impl(x: Any, *indices: Any, mode: str) -> Any:
    x = np.asarray(x)
    idx, inside = _normalized(x.shape, indices, mode)
    out = x[tuple(idx)]
    if inside is not None and not inside.all():
        mask = inside.reshape(inside.shape + (1,) * (x.ndim - len(indices)))
        out = np.where(mask, out, np.zeros((), x.dtype))
    return out


def _gather_aval(x: ShapedArray, *indices: ShapedArray, mode: str) -> ShapedArray:
    if mode not in GATHER_MODES:
        raise ValueError(f"gather: mode must be one of {GATHER_MODES}, not {mode!r}")
    return ShapedArray(_selection(x, indices, "gather"), x.dtype)


# --- the implementation on a namespace ---------------------------------------------------
# The indices are the library's arrays (perhaps lazy): normalized as the NumPy
# impls do, with `where` and `clip`, they give each selected row's flat
# position among the leading axes of x, which the index arrays cover. A gather
# is then one `take` of rows. The standard has no scatter, nor assignment at
# positions that may repeat: a scatter compares every row of x with every
# selected one (a mask of their product's size, hence ONE_HOT_LIMIT) and
# reduces the updates that land on each row: sum, prod, min, max, or the last
# one for a set. Sums and products so combine one position's updates in
# another order than numpy.ufunc.at does, which may change the last bits.

#: The most elements (rows of x, times selected rows, times a row's length) a scatter compares.
ONE_HOT_LIMIT = 1 << 24


def _library_rows(xp: Any, shape: tuple[int, ...], indices: Sequence[Any], mode: str
                  ) -> tuple[Any, Any]:
    """`_normalized` on the library: the flat position of each selected row
    among the leading axes of an x of `shape` that the indices cover, as a
    vector, and (modes "fill" and "drop") whether all its indices were in
    bounds, else None."""
    selected = broadcast_shapes(*(get_aval(i).shape for i in indices))
    flat, inside = cast(xp, np.zeros((), np.intp)), None
    for k, (i, n) in enumerate(zip(indices, shape)):
        i = cast(xp, i, np.dtype(np.intp))
        i = xp.where(i < 0, i + n, i)
        if mode != "clip":
            ok = (i >= 0) & (i < n)
            inside = ok if inside is None else inside & ok
        flat = flat + xp.clip(i, 0, max(n - 1, 0)) * math.prod(shape[k + 1:len(indices)])

    def vector(z: Any) -> Any:
        return xp.reshape(xp.broadcast_to(z, selected), (math.prod(selected),))

    return vector(flat), None if inside is None else vector(inside)


def _as_rows(xp: Any, x: Any, covered: int) -> Any:
    """`x` as a matrix: a row for each position of its first `covered` axes."""
    shape = get_aval(x).shape
    return xp.reshape(x, (math.prod(shape[:covered]), math.prod(shape[covered:])))


def _gather(xp: Any, x: Any, *indices: Any, mode: str) -> Any:
    aval = _gather_aval(get_aval(x), *(get_aval(i) for i in indices), mode=mode)
    x = cast(xp, x)
    flat, inside = _library_rows(xp, get_aval(x).shape, indices, mode)
    out = xp.take(_as_rows(xp, x, len(indices)), flat, axis=0)
    if inside is not None:
        out = xp.where(inside[:, None], out, cast(xp, 0, aval.dtype))
    return xp.reshape(out, aval.shape)


def _compared(xp: Any, size: int, name: str) -> None:
    """The NotImplementedError of a scatter whose comparisons would take `size` elements, too many."""
    if size > ONE_HOT_LIMIT:
        raise NotImplementedError(
            f"the primitive `{name}` on arrays of {library_of_namespace(xp).name} compares the positions it "
            "updates "
            f"with every position they may land on, {size} elements here, more than fgrad's limit of "
            f"{ONE_HOT_LIMIT} (gather.ONE_HOT_LIMIT). Update fewer elements at a time, or pass the "
            "indices as constants (close over them), which fgrad scatters without comparing."
        )


def _scatter(name: str, verb: str, reduce: str | None) -> Callable[..., Any]:
    """The implementation of the scatter `name`: each row of x with the updates
    that land on it combined in by the standard's reduction `reduce` (None:
    the last one)."""
    abstract_eval = _scatter_aval(verb)

    def impl(xp: Any, x: Any, y: Any, *indices: Any, mode: str) -> Any:
        aval = abstract_eval(get_aval(x), get_aval(y), *(get_aval(i) for i in indices), mode=mode)
        selected = broadcast_shapes(*(get_aval(i).shape for i in indices))
        x_rows = _as_rows(xp, cast(xp, x, aval.dtype), len(indices))
        (n, width), count = get_aval(x_rows).shape, math.prod(selected)
        if not n * width * count:
            return cast(xp, x, aval.dtype)
        _compared(xp, n * count * width, name)
        flat, inside = _library_rows(xp, aval.shape, indices, mode)
        target = selected + aval.shape[len(indices):]
        values = xp.reshape(xp.broadcast_to(cast(xp, y, aval.dtype), target), (count, width))
        hits = xp.arange(n, dtype=dtype_of(xp, np.intp))[:, None] == flat[None, :]
        if inside is not None:
            hits = hits & inside[None, :]
        if reduce is None:
            last = xp.max(xp.where(hits, xp.arange(count, dtype=dtype_of(xp, np.intp))[None, :], -1), axis=1)
            update = xp.take(values, xp.clip(last, 0, count - 1), axis=0)
        elif reduce in ("min", "max"):  # x itself where nothing lands: no identity needed
            landing = xp.where(hits[:, :, None], values[None, ...], x_rows[:, None, :])
            update = getattr(xp, reduce)(landing, axis=1)
        else:
            identity = cast(xp, 0 if reduce == "sum" else 1, aval.dtype)
            update = getattr(xp, reduce)(xp.where(hits[:, :, None], values[None, ...], identity), axis=1,
                                         dtype=dtype_of(xp, aval.dtype))
            update = x_rows + update if reduce == "sum" else x_rows * update
        out = xp.where(xp.any(hits, axis=1)[:, None], update, x_rows)
        return xp.reshape(out, aval.shape)

    return impl


def _cofactors(xp: Any, x: Any, y: Any, *indices: Any, mode: str) -> Any:
    # For each selected element: x at its position times the product of the
    # other updates that land there (the other selected elements of its row).
    aval = _cofactors_aval(get_aval(x), get_aval(y), *(get_aval(i) for i in indices), mode=mode)
    x_rows = _as_rows(xp, cast(xp, x, aval.dtype), len(indices))
    width = get_aval(x_rows).shape[1]
    count = math.prod(broadcast_shapes(*(get_aval(i).shape for i in indices)))
    if not count * width:
        return xp.zeros(aval.shape, dtype=dtype_of(xp, aval.dtype))
    _compared(xp, count * count * width, "scatter_mul_cofactors")
    flat, inside = _library_rows(xp, get_aval(x).shape, indices, mode)
    values = xp.reshape(xp.broadcast_to(cast(xp, y, aval.dtype), aval.shape), (count, width))
    numbers = xp.arange(count, dtype=dtype_of(xp, np.intp))
    others = (flat[:, None] == flat[None, :]) & (numbers[:, None] != numbers[None, :])
    if inside is not None:
        others = others & inside[None, :]
    factors = xp.where(others[:, :, None], values[None, ...], cast(xp, 1, aval.dtype))
    product = xp.prod(factors, axis=1, dtype=dtype_of(xp, aval.dtype))
    out = xp.take(x_rows, flat, axis=0) * product
    if inside is not None:
        out = xp.where(inside[:, None], out, cast(xp, 0, aval.dtype))
    return xp.reshape(out, aval.shape)


gather_p = Primitive("gather", _gather, _gather_aval, numpy=_gather_impl)


def _scatter_impl(combine: np.ufunc | None) -> Callable[..., Any]:
    """`out[idx] = combine(out[idx], y)` (`combine` None: `out[idx] = y`) on a copy
    of x, every selection of a position applied, updates out of bounds dropped
    or clamped as `mode` says."""

    def impl(x: Any, y: Any, *indices: Any, mode: str) -> Any:
        out = np.array(x, copy=True)
        idx, inside = _normalized(out.shape, indices, mode)
        target = broadcast_shapes(*(np.shape(i) for i in idx)) + out.shape[len(idx):]
        values = np.broadcast_to(np.asarray(y, out.dtype), target)
        if inside is not None and not inside.all():
            idx = [np.broadcast_to(i, inside.shape)[inside] for i in idx]
            values = values[inside]
        if combine is None:
            out[tuple(idx)] = values
        else:
            # A full-shape copy of the values: NumPy's ufunc.at misreads lower-rank
            # values broadcast against a multi-dimensional index. (np.require, not
            # ascontiguousarray, which makes a 0-d value 1-d.)
            combine.at(out, tuple(idx), np.require(values, requirements="C"))
        return out

    return impl


def _scatter_aval(verb: str) -> Callable[..., ShapedArray]:
    def abstract_eval(x: ShapedArray, y: ShapedArray, *indices: ShapedArray, mode: str) -> ShapedArray:
        if mode not in SCATTER_MODES:
            raise ValueError(f"scatter: mode must be one of {SCATTER_MODES}, not {mode!r}")
        target = _selection(x, indices, "scatter")
        if len(y.shape) > len(target) or any(n not in (1, m) for n, m in zip(y.shape[::-1], target[::-1])):
            raise ValueError(f"cannot {verb} values of shape {y.shape} at an index selecting shape {target}")
        return x.strip_weak_type()

    return abstract_eval


def _scatter_primitive(name: str, verb: str, reduce: str | None, ufunc: np.ufunc | None) -> Primitive:
    return Primitive(name, _scatter(name, verb, reduce), _scatter_aval(verb), numpy=_scatter_impl(ufunc))


scatter_add_p = _scatter_primitive("scatter_add", "add", "sum", np.add)
scatter_set_p = _scatter_primitive("scatter_set", "set", None, None)
scatter_mul_p = _scatter_primitive("scatter_mul", "multiply by", "prod", np.multiply)
scatter_min_p = _scatter_primitive("scatter_min", "take the minimum with", "min", np.minimum)
scatter_max_p = _scatter_primitive("scatter_max", "take the maximum with", "max", np.maximum)

gather: Callable[..., Any] = gather_p.bind
scatter_add: Callable[..., Any] = scatter_add_p.bind
scatter_set: Callable[..., Any] = scatter_set_p.bind
scatter_mul: Callable[..., Any] = scatter_mul_p.bind
scatter_min: Callable[..., Any] = scatter_min_p.bind
scatter_max: Callable[..., Any] = scatter_max_p.bind


def _inverse_mode(mode: str) -> str:
    """The mode of the transpose: a clamping gather spreads back onto the clamped
    positions, a scatter that drops an update gives it no cotangent."""
    return {"clip": "clip", "fill": "drop", "drop": "fill"}[mode]


def _selected_shape(x: Any, indices: Sequence[Any]) -> tuple[int, ...]:
    return broadcast_shapes(*(get_aval(i).shape for i in indices)) + get_aval(x).shape[len(indices):]


# --- forward and reverse mode ----------------------------------------------------


def _gather_jvp(primals: list[Any], tangents: list[Any], *, mode: str) -> tuple[Any, Any]:
    x, *indices = primals
    tx = tangents[0]
    return gather(x, *indices, mode=mode), None if tx is None else gather(tx, *indices, mode=mode)


def _gather_transpose(ct: Any, x: Any, *indices: Any, mode: str) -> list[Any]:
    assert d.is_linear(x) and not any(d.is_linear(i) for i in indices), "gather is linear in x only"
    return [scatter_add(d.zeros(x.aval), ct, *indices, mode=_inverse_mode(mode)), *(None for _ in indices)]


jvp_rules[gather_p] = _gather_jvp
transpose_rules[gather_p] = _gather_transpose


def _linear_scatter_jvp(prim: Primitive) -> Callable[..., Any]:
    """scatter_add and scatter_set are linear in (x, y) together."""

    def jvp(primals: list[Any], tangents: list[Any], *, mode: str) -> tuple[Any, Any]:
        x, y, *indices = primals
        tx, ty = tangents[:2]
        ans = prim.bind(x, y, *indices, mode=mode)
        if tx is None and ty is None:
            return ans, None
        tx = d.zeros_like_value(ans) if tx is None else tx
        ty = d.zeros_like_value(y) if ty is None else ty
        if get_aval(ty).dtype != get_aval(ans).dtype:
            ty = ew.convert_element_type(ty, new_dtype=get_aval(ans).dtype)
        return ans, prim.bind(tx, ty, *indices, mode=mode)

    return jvp


def _scatter_add_transpose(ct: Any, x: Any, y: Any, *indices: Any, mode: str) -> list[Any]:
    ct_x = ct if d.is_linear(x) else None
    ct_y = None
    if d.is_linear(y):
        ct_y = d.unbroadcast(gather(ct, *indices, mode=_inverse_mode(mode)), y.aval)
    return [ct_x, ct_y, *(None for _ in indices)]


def _last_writes(shape: tuple[int, ...], indices: Sequence[Any], mode: str) -> Any:
    """1 where an element of the selection is the write scatter_set keeps (NumPy's
    last write to its position), else 0: found by scattering each element's
    number and gathering back which number each position kept."""
    target = broadcast_shapes(*(get_aval(i).shape for i in indices)) + shape[len(indices):]
    numbers = np.arange(math.prod(target), dtype=np.intp).reshape(target)
    owner = scatter_set(np.full(shape, -1, np.intp), numbers, *indices, mode=mode)
    return ew.eq(gather(owner, *indices, mode="clip" if mode == "clip" else "fill"), numbers)


def _scatter_set_transpose(ct: Any, x: Any, y: Any, *indices: Any, mode: str) -> list[Any]:
    # x reaches the output where no update lands; y where its write is the last.
    ct_x = scatter_set(ct, np.zeros((), get_aval(ct).dtype), *indices, mode=mode) if d.is_linear(x) else None
    ct_y = None
    if d.is_linear(y):
        shape = ct.shape
        picked = gather(ct, *indices, mode=_inverse_mode(mode))
        kept = _last_writes(shape, indices, mode)
        ct_y = d.unbroadcast(ew.where(kept, picked, np.zeros((), get_aval(ct).dtype)), y.aval)
    return [ct_x, ct_y, *(None for _ in indices)]


jvp_rules[scatter_add_p] = _linear_scatter_jvp(scatter_add_p)
jvp_rules[scatter_set_p] = _linear_scatter_jvp(scatter_set_p)
transpose_rules[scatter_add_p] = _scatter_add_transpose
transpose_rules[scatter_set_p] = _scatter_set_transpose


def _cofactors_impl(x: Any, y: Any, *indices: Any, mode: str) -> Any:
    """For each element j of the selection, d out[p_j] / d y_j of scatter_mul: x at
    p_j times the other updates of p_j (no division: a zero factor is fine);
    0 for an update that is dropped."""
    x = np.asarray(x)
    idx, inside = _normalized(x.shape, indices, mode)
    target = broadcast_shapes(*(np.shape(i) for i in idx)) + x.shape[len(idx):]
    dtype = np.result_type(x, y)
    values = np.broadcast_to(np.asarray(y, dtype), target).ravel()
    # The flat position in x of each element of the selection.
    positions = np.arange(x.size).reshape(x.shape)[tuple(idx)]
    positions = np.broadcast_to(positions, target).ravel()
    keep = np.ones(len(values), bool) if inside is None else np.broadcast_to(
        inside.reshape(inside.shape + (1,) * (x.ndim - len(idx))), target).ravel()
    order = np.argsort(np.where(keep, positions, -1), kind="stable")
    out = np.zeros(len(values), dtype)
    start = 0
    ranked = np.where(keep, positions, -1)[order]
    while start < len(order):  # one group of elements per position, in NumPy's order
        stop = start + 1
        while stop < len(order) and ranked[stop] == ranked[start]:
            stop += 1
        group = order[start:stop]
        if ranked[start] >= 0:
            factors = values[group]
            before = np.concatenate(([1], np.cumprod(factors[:-1])))
            after = np.concatenate((np.cumprod(factors[::-1][:-1])[::-1], [1]))
            out[group] = x.ravel()[ranked[start]] * before * after
        start = stop
    return out.reshape(target)


def _cofactors_aval(x: ShapedArray, y: ShapedArray, *indices: ShapedArray, mode: str) -> ShapedArray:
    return ShapedArray(_selection(x, indices, "scatter"), np.result_type(x.dtype, y.dtype))


scatter_mul_cofactors_p = Primitive(
    "scatter_mul_cofactors", _cofactors, _cofactors_aval, numpy=_cofactors_impl
)


def _cofactors_jvp(primals: list[Any], tangents: list[Any], *, mode: str) -> tuple[Any, Any]:
    if all(t is None for t in tangents):
        return scatter_mul_cofactors_p.bind(*primals, mode=mode), None
    raise NotImplementedError(
        "the second derivative of at[...].multiply with traced indices is not supported: fgrad "
        "differentiates it once. Pass the indices as constants (close over them) for higher orders."
    )


jvp_rules[scatter_mul_cofactors_p] = _cofactors_jvp


def _scatter_mul_jvp(primals: list[Any], tangents: list[Any], *, mode: str) -> tuple[Any, Any]:
    x, y, *indices = primals
    tx, ty = tangents[:2]
    ans = scatter_mul(x, y, *indices, mode=mode)
    out = None if tx is None else scatter_mul(tx, y, *indices, mode=mode)
    if ty is not None:
        cofactors = scatter_mul_cofactors_p.bind(x, y, *indices, mode=mode)
        from_y = scatter_add(d.zeros_like_value(ans), ew.mul(cofactors, ty), *indices, mode=mode)
        out = from_y if out is None else ew.add(out, from_y)
    return ans, out


def _scatter_mul_transpose(ct: Any, x: Any, y: Any, *indices: Any, mode: str) -> list[Any]:
    assert not d.is_linear(y), "scatter_mul is linear in x only"
    return [scatter_mul(ct, y, *indices, mode=mode), None, *(None for _ in indices)]


jvp_rules[scatter_mul_p] = _scatter_mul_jvp
transpose_rules[scatter_mul_p] = _scatter_mul_transpose


def _extremum_jvp(prim: Primitive) -> Callable[..., Any]:
    """The tangent of whichever of x and the updates is the result at each
    position; where several tie, their average (JAX's convention)."""

    def jvp(primals: list[Any], tangents: list[Any], *, mode: str) -> tuple[Any, Any]:
        x, y, *indices = primals
        tx, ty = tangents[:2]
        ans = prim.bind(x, y, *indices, mode=mode)
        dtype = get_aval(ans).dtype
        back = "clip" if mode == "clip" else "fill"
        x_wins = ew.convert_element_type(ew.eq(x, ans), new_dtype=dtype)
        y_wins = ew.convert_element_type(ew.eq(y, gather(ans, *indices, mode=back)), new_dtype=dtype)
        ties = scatter_add(x_wins, y_wins, *indices, mode=mode)  # >= 1: something is the result
        out = None if tx is None else ew.mul(tx, ew.div(x_wins, ties))
        if ty is not None:
            # A dropped update gathers a tie count of 0 (fill): its share is 0, not nan.
            counts = gather(ties, *indices, mode=back)
            share = ew.where(ew.eq(counts, 0), np.zeros((), dtype), ew.div(y_wins, ew.where(
                ew.eq(counts, 0), np.ones((), dtype), counts)))
            from_y = scatter_add(d.zeros_like_value(ans), ew.mul(ty, share), *indices, mode=mode)
            out = from_y if out is None else ew.add(out, from_y)
        return ans, out

    return jvp


jvp_rules[scatter_min_p] = _extremum_jvp(scatter_min_p)
jvp_rules[scatter_max_p] = _extremum_jvp(scatter_max_p)


# --- batching -------------------------------------------------------------------


def _batched_indices(indices: Sequence[Any], dims: Sequence[int | None], size: int,
                     x_batched: bool) -> list[Any]:
    """The index arrays of a batch: each batched one with its batch axis in front
    and ones after it up to the common rank, and (when x has a batch axis in
    front) a range over the batch first, so that example b reads x[b]."""
    examples = [get_aval(i).shape if dim is None else get_aval(i).shape[:dim] + get_aval(i).shape[dim + 1:]
                for i, dim in zip(indices, dims)]
    rank = len(broadcast_shapes(*examples))
    out = []
    for i, dim in zip(indices, dims):
        if dim is not None:
            i = batching.move_axis(i, dim, 0)
            example = get_aval(i).shape[1:]
            i = shapes.reshape(i, new_shape=(size,) + (1,) * (rank - len(example)) + example)
        out.append(i)
    if x_batched:
        out.insert(0, np.arange(size, dtype=np.intp).reshape((size,) + (1,) * rank))
    return out


def _gather_batch(args: list[Any], dims: list[Any], *, mode: str) -> tuple[Any, int]:
    x, *indices = args
    dx, *index_dims = dims
    size = batching.batch_size(args, dims)
    if dx is not None:
        x = batching.move_axis(x, dx, 0)
    batched = _batched_indices(indices, index_dims, size, dx is not None)
    return gather(x, *batched, mode=mode), 0


def _scatter_batch(prim: Primitive) -> Callable[..., Any]:
    def rule(args: list[Any], dims: list[Any], *, mode: str) -> tuple[Any, int]:
        x, y, *indices = args
        dx, dy, *index_dims = dims
        size = batching.batch_size(args, dims)
        x = batching.with_batch_axis(x, dx, size)  # every example updates its own copy
        batched = _batched_indices(indices, index_dims, size, True)
        if dy is not None:
            # Line y's examples up with the selection: its batch axis in front,
            # ones after it up to the rank of one example's selection.
            y = batching.move_axis(y, dy, 0)
            rank = len(_selected_shape(x, batched)) - 1
            example = get_aval(y).shape[1:]
            if len(example) < rank:
                y = shapes.reshape(y, new_shape=(size,) + (1,) * (rank - len(example)) + example)
        return prim.bind(x, y, *batched, mode=mode), 0

    return rule


batch_rules[gather_p] = _gather_batch
for _p in (scatter_add_p, scatter_set_p, scatter_mul_p, scatter_min_p, scatter_max_p,
           scatter_mul_cofactors_p):
    batch_rules[_p] = _scatter_batch(_p)
