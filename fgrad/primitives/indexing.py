"""Indexing: `getitem` (NumPy indexing with a static index) and the scatters,
functional updates of the elements an index selects (`x.at[idx].op(y)`: a
copy of x with y combined in at idx):

| primitive | update | rules |
|---|---|---|
| index_add | `out[idx] += y` | linear; the transpose of getitem |
| index_set | `out[idx] = y` | linear |
| index_mul | `out[idx] *= y` | linear in x; full jvp |
| index_min, index_max | `out[idx] = minimum(out[idx], y)` | full jvp, ties share |

The index is a parameter, not an operand: ints, slices, None, Ellipsis, and
concrete integer or boolean arrays. Integer-array indices may select an
element several times. The combining scatters then apply every update
(`numpy.ufunc.at`); index_set keeps the last write, in NumPy's order of
assignment, and only the last write gets a derivative.

On a namespace, each is computed from the positions NumPy works out for the
static index (a take of them, or rounds of `where`); NumPy's arrays take
NumPy's own indexing and `ufunc.at`, far faster. Batch rules put the batch
first and prepend a full slice to the index.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.libraries import cast, is_dask
from ..core.rules import batch_rules, emit_rules, jvp_rules, transpose_rules, unroll_rules
from ..core.trace import EVAL_TRACE, Primitive, ctx
from ..ir.unroll import movement_rule, positions
from . import batching, shapes
from . import derivatives as d
from . import elementwise as ew

__all__ = [
    "INDEX_DTYPE", "StaticIndex", "stand_in", "indexed_shape", "broadcasts_to", "occurrence_rounds",
    "getitem", "index_add", "add_pieces", "index_set", "index_mul", "index_min", "index_max",
]


#: The dtype of the indices fgrad computes (argmax, argsort, ...): NumPy's intp.
INDEX_DTYPE = np.dtype(np.intp)


class StaticIndex(tuple):
    """A normalized NumPy index, printed in NumPy's syntax: ``[1:3, None]``."""

    __slots__ = ()

    def has_arrays(self) -> bool:
        return any(isinstance(i, np.ndarray) for i in self)

    def __str__(self) -> str:
        def one(i: Any) -> str:
            if isinstance(i, slice):
                start = "" if i.start is None else str(i.start)
                stop = "" if i.stop is None else str(i.stop)
                return f"{start}:{stop}" + ("" if i.step is None else f":{i.step}")
            if i is Ellipsis:
                return "..."
            if isinstance(i, np.ndarray):
                return f"<{i.dtype.name}{list(i.shape)}>"
            return str(i)

        return "[" + ", ".join(one(i) for i in self) + "]"

    __repr__ = __str__


def stand_in(shape: tuple[int, ...]) -> np.ndarray:
    """An array of `shape` that takes no memory (zero strides): NumPy's shape
    checks and errors run on it without touching data."""
    return np.broadcast_to(np.empty((), np.int8), shape)


def indexed_shape(shape: tuple[int, ...], idx: StaticIndex) -> tuple[int, ...]:
    """The shape of ``x[idx]`` for an `x` of `shape` (NumPy's IndexError if `idx` does not fit)."""
    # Remembered for indices of ints and slices (a trace asks again and again,
    # and a stand-in costs microseconds); an index that raises is not.
    key = _shape_key(shape, idx)
    found = _indexed_shapes.get(key) if key is not None else None
    if found is None:
        found = stand_in(shape)[tuple(idx)].shape
        if key is not None:
            if len(_indexed_shapes) > 4096:
                _indexed_shapes.clear()
            _indexed_shapes[key] = found
    return found


def _shape_key(shape: tuple[int, ...], idx: StaticIndex) -> tuple[Any, ...] | None:
    key: list[Any] = [shape]
    for i in idx:
        t = type(i)
        if t is int or i is None or i is Ellipsis:
            key.append(i)
        elif t is slice:
            key.append((i.start, i.stop, i.step))
        else:
            return None
    return tuple(key)


# Cache of indexed_shape: at most a few thousand shapes, then emptied (a dict's get,
# set and clear are atomic: threads may share it).
_indexed_shapes: dict[tuple[Any, ...], tuple[int, ...]] = {}


def _getitem_aval(x: ShapedArray, *, idx: StaticIndex) -> ShapedArray:
    return ShapedArray(indexed_shape(x.shape, idx), x.dtype)


def _getitem_impl(x: Any, *, idx: StaticIndex) -> Any:
    # A Python number (a weakly typed argument's value) is indexed as the 0-d array it stands for.
    return (np.asarray(x) if isinstance(x, (int, float, complex)) else x)[tuple(idx)]


# The implementation on a namespace. The standard indexes with ints, slices in
# bounds, None and Ellipsis (which keep Dask's chunks); not with NumPy's arrays
# in between, nor does it scatter.
# The index being static, NumPy works out which elements it selects, as flat
# positions: a getitem takes them from the flattened array, and a scatter puts
# the updates in place with `where`, in rounds that each write a position at
# most once (the r-th update of each position in round r, NumPy's order).


def _in_bounds(s: slice, n: int) -> slice:
    """`s` on an axis of `n` with its ends in bounds, as the standard wants them."""
    start, stop, step = s.indices(n)
    if not len(range(start, stop, step)):
        return slice(0, 0)
    return slice(start, None if stop < 0 else stop, step)


def _library_index(shape: tuple[int, ...], idx: StaticIndex) -> tuple[Any, ...]:
    """A basic `idx` (no arrays) for an array of `shape`, its slices in bounds."""
    taken = sum(1 for e in idx if e is not None and e is not Ellipsis)
    out: list[Any] = []
    axis = 0
    for e in idx:
        if e is Ellipsis:
            axis += len(shape) - taken
        elif isinstance(e, slice):
            e = _in_bounds(e, shape[axis])
        if e is not None and e is not Ellipsis:
            axis += 1
        out.append(e)
    return tuple(out) if Ellipsis in idx else (*out, Ellipsis)  # the standard indexes every axis


def library_take(xp: Any, x: Any, positions: Any) -> Any:
    """The elements of `x` at the flat (C order) `positions`, an integer array
    of the library or NumPy's (a static index): the flattened array's `take`.
    Dask takes NumPy's positions as they are, its own fancy indexing: as a
    Dask array, positions [0] would share their name with the offsets of
    the chunks Dask's take makes (`from_array` of the same values), which
    mixes the two up and declares a wrong shape."""
    shape = get_aval(positions).shape
    if is_dask(xp) and isinstance(positions, np.ndarray):
        flat_positions = positions.reshape(-1)
    else:
        flat_positions = xp.reshape(cast(xp, positions, INDEX_DTYPE), (-1,))
    flat = xp.take(xp.reshape(x, (-1,)), flat_positions, axis=0)
    return xp.reshape(flat, shape)


def _getitem(xp: Any, x: Any, *, idx: StaticIndex) -> Any:
    x = cast(xp, x)
    shape = get_aval(x).shape
    indexed_shape(shape, idx)  # NumPy's IndexError for an index that does not fit
    if not idx.has_arrays():
        return x[_library_index(shape, idx)]
    positions = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)[tuple(idx)]
    return library_take(xp, x, positions)


getitem_p = Primitive("getitem", _getitem, _getitem_aval, numpy=_getitem_impl)


def _getitem_emit(args: list[str], avals: list[ShapedArray], *, idx: StaticIndex) -> str | None:
    """jit's code for a basic index (ints, slices, None, Ellipsis), written out;
    an index with arrays stays a parameter."""
    if idx.has_arrays() or not avals[0].shape:
        return None
    parts = []
    for e in idx:
        if isinstance(e, slice):
            parts.append(f"slice({e.start!r}, {e.stop!r}, {e.step!r})")
        elif e is None or e is Ellipsis or type(e) is int:
            parts.append(repr(e))
        else:
            return None
    return f"{args[0]}[{', '.join(parts)},]"


emit_rules[getitem_p] = _getitem_emit
unroll_rules[getitem_p] = movement_rule(getitem_p)
d.deflinear(getitem_p)
transpose_rules[getitem_p] = lambda ct, x, *, idx: [index_add(d.zeros(x.aval), ct, idx=idx)]


# --- the scatters ------------------------------------------------------------------


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether values of `shape` broadcast to `target` (without growing it)."""
    if len(shape) > len(target):
        return False
    return all(n in (1, m) for n, m in zip(reversed(shape), reversed(target)))


def _scatter_aval(verb: str) -> Callable[..., ShapedArray]:
    def abstract_eval(x: ShapedArray, y: ShapedArray, *, idx: StaticIndex) -> ShapedArray:
        target = indexed_shape(x.shape, idx)
        if not broadcasts_to(y.shape, target):
            raise ValueError(f"cannot {verb} values of shape {y.shape} at an index selecting shape {target}")
        return x.strip_weak_type()

    return abstract_eval


def _scatter_impl(ufunc: np.ufunc) -> Callable[..., Any]:
    """`out[idx] = ufunc(out[idx], y)` on a copy of x; with `ufunc.at` when the
    index holds arrays, so that an element selected twice gets both updates."""

    def impl(x: Any, y: Any, *, idx: StaticIndex) -> Any:
        out = np.array(x, copy=True)
        if idx.has_arrays():
            target = indexed_shape(out.shape, idx)
            if np.shape(y) != target:
                # NumPy 2.4's ufunc.at reads wrong memory when values of a lower rank
                # broadcast against a multi-dimensional index (np.add.at(np.zeros(1),
                # np.zeros((2, 2), int), [1.0, 2.0]) gives 3.0); a full-shape view is right.
                y = np.broadcast_to(y, target)
            ufunc.at(out, tuple(idx), y)
        else:
            target = tuple(idx)
            out[target] = ufunc(out[target], y)
        return out

    return impl


def _index_set_impl(x: Any, y: Any, *, idx: StaticIndex) -> Any:
    out = np.array(x, copy=True)
    out[tuple(idx)] = y
    return out


def _update_rounds(shape: tuple[int, ...], idx: StaticIndex, last_only: bool
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """`out[idx] op= y` on an array of `shape` as rounds that write each position
    at most once: for each, a mask of the positions it writes and, at each,
    which element of the flattened selection goes there. `last_only`: one
    round of the writes that assignment keeps."""
    target = indexed_shape(shape, idx)
    size = int(np.prod(shape, dtype=np.int64))
    rounds = None if last_only else occurrence_rounds(shape, idx)
    if rounds is None:
        owner = np.full(shape, -1, INDEX_DTYPE)
        owner[tuple(idx)] = np.arange(int(np.prod(target, dtype=np.int64))).reshape(target)
        return [(owner >= 0, np.maximum(owner, 0))]
    where, groups = rounds
    out = []
    for g in groups:
        owner = np.full(size, -1, INDEX_DTYPE)
        owner[where[g]] = g
        out.append(((owner >= 0).reshape(shape), np.maximum(owner, 0).reshape(shape)))
    return out


def _scatter(verb: str, combine: Callable[..., Any] | None) -> Callable[..., Any]:
    """The implementation of `out[idx] = combine(xp, out[idx], y)` (`combine`
    None: `out[idx] = y`), a round at a time."""
    abstract_eval = _scatter_aval(verb)

    def impl(xp: Any, x: Any, y: Any, *, idx: StaticIndex) -> Any:
        aval = abstract_eval(get_aval(x), get_aval(y), idx=idx)
        out = cast(xp, x, aval.dtype)
        target = indexed_shape(aval.shape, idx)
        if 0 in target:
            return out
        values = xp.broadcast_to(cast(xp, y, aval.dtype), target)
        for written, source in _update_rounds(aval.shape, idx, last_only=combine is None):
            update = library_take(xp, values, source)
            if combine is not None:
                update = combine(xp, out, update)
            out = xp.where(cast(xp, written), update, out)
        return out

    return impl


def _scatter_primitive(name: str, verb: str, combine: Callable[..., Any] | None,
                       numpy: Callable[..., Any]) -> Primitive:
    return Primitive(name, _scatter(verb, combine), _scatter_aval(verb), numpy=numpy)


index_add_p = _scatter_primitive("index_add", "add", lambda xp, a, b: a + b, _scatter_impl(np.add))
index_set_p = _scatter_primitive("index_set", "set", None, _index_set_impl)
index_mul_p = _scatter_primitive("index_mul", "multiply by", lambda xp, a, b: a * b,
                                 _scatter_impl(np.multiply))
index_min_p = _scatter_primitive("index_min", "take the minimum with", lambda xp, a, b: xp.minimum(a, b),
                                 _scatter_impl(np.minimum))
index_max_p = _scatter_primitive("index_max", "take the maximum with", lambda xp, a, b: xp.maximum(a, b),
                                 _scatter_impl(np.maximum))


def _selection_positions(shape: tuple[int, ...], idx: StaticIndex) -> np.ndarray:
    """For each element ``x[idx]`` selects (in C order), its flat position in x."""
    return np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)[tuple(idx)].ravel()


def _last_writes(shape: tuple[int, ...], idx: StaticIndex) -> np.ndarray | None:
    """Which elements of the selection ``out[idx] = y`` keeps (the last writes to
    each position, as NumPy assigns), or None if no position is selected twice."""
    if not idx.has_arrays():
        return None
    selected = np.arange(int(np.prod(indexed_shape(shape, idx), dtype=np.int64)))
    owner = np.full(shape, -1, selected.dtype)
    owner[tuple(idx)] = selected.reshape(indexed_shape(shape, idx))
    kept = owner[tuple(idx)] == selected.reshape(owner[tuple(idx)].shape)
    return None if kept.all() else kept


def occurrence_rounds(shape: tuple[int, ...], idx: StaticIndex
                       ) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """The elements of the selection grouped into rounds that select each position
    of x at most once (round r: the r-th selection of each position), with
    the flat positions of the whole selection; None if no position repeats."""
    if not idx.has_arrays():
        return None
    where = _selection_positions(shape, idx)
    order = np.argsort(where, kind="stable")
    ranked = where[order]
    first = np.ones(len(ranked), bool)
    first[1:] = ranked[1:] != ranked[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(ranked)), 0))
    rank = np.empty(len(ranked), np.int64)
    rank[order] = np.arange(len(ranked)) - group_start
    if not len(rank) or rank.max() == 0:
        return None
    return where, [np.flatnonzero(rank == r) for r in range(int(rank.max()) + 1)]


# index_add and index_set are linear in (x, y) together.
d.deflinear(index_add_p)
d.deflinear(index_set_p)


def _index_add_transpose(ct: Any, x: Any, y: Any, *, idx: StaticIndex) -> list[Any]:
    ct_x = ct if d.is_linear(x) else None
    ct_y = d.unbroadcast(getitem(ct, idx=idx), y.aval) if d.is_linear(y) else None
    return [ct_x, ct_y]


def _index_set_transpose(ct: Any, x: Any, y: Any, *, idx: StaticIndex) -> list[Any]:
    # x reaches the output where it is not overwritten; y where its write is the last.
    ct_x = index_set(ct, np.zeros((), get_aval(ct).dtype), idx=idx) if d.is_linear(x) else None
    ct_y = None
    if d.is_linear(y):
        ct_y = getitem(ct, idx=idx)
        kept = _last_writes((x.aval if d.is_linear(x) else get_aval(x)).shape, idx)
        if kept is not None:
            ct_y = ew.where(kept, ct_y, np.zeros((), get_aval(ct).dtype))
        ct_y = d.unbroadcast(ct_y, y.aval)
    return [ct_x, ct_y]


transpose_rules[index_add_p] = _index_add_transpose
transpose_rules[index_set_p] = _index_set_transpose


def _scatter_unroll(combine: Primitive | None) -> Callable[..., Any]:
    """The unroll rule of a scatter: each update combined (by `combine`; None:
    set) into the element it selects, in the order of the index, as the
    implementation (and `ufunc.at`) applies them."""

    def rule(elements: list[list[Any]], avals: list[ShapedArray], emit: Callable[..., Any], *,
             idx: StaticIndex) -> list[list[Any]] | None:
        (xs, ys), (x, y) = elements, avals
        if y.dtype != x.dtype and not y.weak_type:
            return None  # the updates are cast into x's dtype
        where = positions(x.shape)[tuple(idx)]
        updates = np.broadcast_to(positions(y.shape), where.shape).ravel().tolist()
        out = list(xs)
        for p, q in zip(where.ravel().tolist(), updates):
            out[p] = ys[q] if combine is None else emit(combine, out[p], ys[q])
        return [out]

    return rule


for _p, _into in ((index_add_p, ew.add_p), (index_set_p, None), (index_mul_p, ew.mul_p),
                  (index_min_p, ew.min_p), (index_max_p, ew.max_p)):
    unroll_rules[_p] = _scatter_unroll(_into)


# --- the cotangent of many static indexings of one array ------------------------------


def _index_key(idx: StaticIndex) -> tuple[Any, ...]:
    # Slices are unhashable before Python 3.12.
    return tuple((e.start, e.stop, e.step) if isinstance(e, slice) else e for e in idx)


_positions: dict[tuple[Any, ...], tuple[np.ndarray, int | None]] = {}


def _flat_positions(shape: tuple[int, ...], idx: StaticIndex) -> tuple[np.ndarray, int | None]:
    """The flat positions a basic index selects (in C order), and the first of
    them if they are a run of consecutive positions (else None). Cached: at
    most a few thousand entries, as a program indexes at so many places."""
    key = (shape, _index_key(idx))
    found = _positions.get(key)
    if found is None:
        if len(_positions) > 4096:
            _positions.clear()
        where = _selection_positions(shape, idx)
        where.flags.writeable = False
        start = int(where[0]) if len(where) else 0
        run = start if np.array_equal(where, np.arange(start, start + len(where))) else None
        found = _positions[key] = (where, run)
    return found


_NUMPY_VALUES = frozenset({np.ndarray, np.float64, np.float32, np.complex128, np.complex64,
                           float, int, complex})


def add_pieces(aval: ShapedArray, base: Any, pieces: list[tuple[StaticIndex, Any]]) -> Any:
    """`base` (zeros where None) plus each cotangent of `pieces` added at its
    basic index (no arrays), in the order given: the cotangent of an array
    indexed at many static places (`[*x]`, `x[0] * x[3]`), built as one array.
    Adding them one by one, each scattered into a fresh array of `aval` (the
    transpose of getitem), costs the array's size per use; here it costs the
    size once plus the pieces' sizes: in place on NumPy's arrays when no
    transform is active, else as one concatenation (pieces that tile the
    array, zeros between them) or one scatter-add of all the pieces. Each
    element gets its pieces added in the same order as one by one, so the
    sums are the same.

    >>> pieces = [(StaticIndex((0,)), 1.0), (StaticIndex((slice(0, 2),)), np.array([2.0, 3.0]))]
    >>> add_pieces(ShapedArray((3,), np.dtype(np.float64)), None, pieces)
    array([3., 3., 0.])
    """
    shape, dtype = aval.shape, aval.dtype
    if (type(base) in (np.ndarray, type(None)) and all(type(ct) in _NUMPY_VALUES for _, ct in pieces)
            and ctx.trace is EVAL_TRACE):
        out = np.zeros(shape, dtype) if base is None else np.array(base, np.result_type(base, dtype))
        for idx, ct in pieces:
            at = tuple(idx)
            out[at] = out[at] + ct  # as index_add computes it: cast into out's dtype
        return out
    if len(pieces) == 1:
        idx, ct = pieces[0]
        return index_add(d.zeros(aval) if base is None else base, ct, idx=idx)
    size = math.prod(shape)
    if size == 0:
        return d.zeros(aval) if base is None else base
    runs = []
    for idx, ct in pieces:
        target = indexed_shape(shape, idx)
        if get_aval(ct).shape != target:
            ct = shapes.broadcast_to(ct, shape=target)
        runs.append((*_flat_positions(shape, idx), ct))
    tiled = None
    if base is None and all(get_aval(ct).dtype == dtype for *_, ct in runs):
        tiled = _tiling(runs, size, dtype)
    if tiled is not None:
        flat = shapes.concatenate(*tiled, axis=0) if len(tiled) > 1 else tiled[0]
    else:
        flat = (d.zeros(ShapedArray((size,), dtype)) if base is None
                else shapes.reshape(base, new_shape=(size,)))
        values = [shapes.reshape(ct, new_shape=(len(where),)) for where, _, ct in runs]
        everywhere = np.concatenate([where for where, *_ in runs])
        flat = index_add(flat, shapes.concatenate(*values, axis=0) if len(values) > 1 else values[0],
                         idx=StaticIndex((everywhere,)))
    return flat if shape == (size,) else shapes.reshape(flat, new_shape=shape)


def _tiling(runs: list[tuple[np.ndarray, int | None, Any]], size: int, dtype: np.dtype) -> list[Any] | None:
    """The flat cotangent as the parts of a concatenation, when each piece
    selects a run of consecutive positions and no two overlap: the pieces in
    the order of their positions, zeros in the gaps. None otherwise."""
    ordered = []
    for where, start, ct in runs:
        if start is None:
            return None
        if len(where):
            ordered.append((start, len(where), ct))
    ordered.sort(key=lambda run: run[0])
    parts: list[Any] = []
    end = 0
    for start, n, ct in ordered:
        if start < end:
            return None  # an overlap: those pieces add up
        if start > end:
            parts.append(d.zeros(ShapedArray((start - end,), dtype)))
        parts.append(shapes.reshape(ct, new_shape=(n,)))
        end = start + n
    if end < size:
        parts.append(d.zeros(ShapedArray((size - end,), dtype)))
    return parts


def _others_product(x: Any, y: Any, idx: StaticIndex) -> Any:
    """d out[p] / d y_j for out = index_mul(x, y): x[p] times the other factors
    multiplied into position p, for each element j of the selection (no
    division, so a zero factor is fine)."""
    shape = get_aval(x).shape
    target = indexed_shape(shape, idx)
    rounds = occurrence_rounds(shape, idx)
    if rounds is None:
        return getitem(x, idx=idx)
    where, groups = rounds
    size = len(where)
    flat_x = shapes.reshape(x, new_shape=(get_aval(x).size,))
    if get_aval(y).shape != target:
        y = shapes.broadcast_to(y, shape=target)
    flat_y = shapes.reshape(y, new_shape=(size,))
    factors = [getitem(flat_y, idx=StaticIndex((g,))) for g in groups]
    positions = [StaticIndex((where[g],)) for g in groups]
    before, after = [], [None] * len(groups)  # products of the earlier and later rounds' factors
    acc = flat_x
    for f, at in zip(factors, positions):
        before.append(getitem(acc, idx=at))
        acc = index_mul(acc, f, idx=at)
    acc = np.ones(get_aval(x).size, get_aval(x).dtype)
    for r in reversed(range(len(groups))):
        after[r] = getitem(acc, idx=positions[r])
        acc = index_mul(acc, factors[r], idx=positions[r])
    by_round = shapes.concatenate(*(ew.mul(b, a) for b, a in zip(before, after)), axis=0)
    inverse = np.empty(size, np.int64)
    inverse[np.concatenate(groups)] = np.arange(size)
    return shapes.reshape(getitem(by_round, idx=StaticIndex((inverse,))), new_shape=target)


def _index_mul_jvp(primals: list[Any], tangents: list[Any], *, idx: StaticIndex) -> tuple[Any, Any]:
    (x, y), (tx, ty) = primals, tangents
    ans = index_mul(x, y, idx=idx)
    out = None if tx is None else index_mul(tx, y, idx=idx)
    if ty is not None:
        from_y = index_add(d.zeros_like_value(ans), ew.mul(_others_product(x, y, idx), ty), idx=idx)
        out = from_y if out is None else ew.add(out, from_y)
    return ans, out


def _index_mul_transpose(ct: Any, x: Any, y: Any, *, idx: StaticIndex) -> list[Any]:
    assert not d.is_linear(y), "index_mul is linear in x only"
    return [index_mul(ct, y, idx=idx), None]


jvp_rules[index_mul_p] = _index_mul_jvp
transpose_rules[index_mul_p] = _index_mul_transpose


def _extremum_jvp(prim: Primitive) -> Callable[..., Any]:
    """The tangent of whichever of x and the updates is the result at each
    position; where several tie, the tangent is their average (JAX's convention)."""

    def jvp(primals: list[Any], tangents: list[Any], *, idx: StaticIndex) -> tuple[Any, Any]:
        (x, y), (tx, ty) = primals, tangents
        ans = prim.bind(x, y, idx=idx)
        dtype = get_aval(ans).dtype
        x_wins = ew.convert_element_type(ew.eq(x, ans), new_dtype=dtype)
        y_wins = ew.convert_element_type(ew.eq(y, getitem(ans, idx=idx)), new_dtype=dtype)
        ties = index_add(x_wins, y_wins, idx=idx)  # >= 1: something is the result
        out = None if tx is None else ew.mul(tx, ew.div(x_wins, ties))
        if ty is not None:
            y_share = ew.div(y_wins, getitem(ties, idx=idx))
            from_y = index_add(d.zeros_like_value(ans), ew.mul(ty, y_share), idx=idx)
            out = from_y if out is None else ew.add(out, from_y)
        return ans, out

    return jvp


jvp_rules[index_min_p] = _extremum_jvp(index_min_p)
jvp_rules[index_max_p] = _extremum_jvp(index_max_p)


# --- batching -------------------------------------------------------------------


def _is_advanced(i: Any) -> bool:
    return isinstance(i, (np.ndarray, int))


def _batched_index(idx: StaticIndex) -> tuple[StaticIndex, int]:
    """The index for a batch in front, and where the batch axis ends up: NumPy
    moves the axes of advanced indices (arrays, and ints next to arrays) to the
    front when a slice, None or Ellipsis separates them."""
    full = StaticIndex((slice(None), *idx))
    if not full.has_arrays():
        return full, 0
    positions = [i for i, e in enumerate(full) if _is_advanced(e)]
    if positions[-1] - positions[0] + 1 != len(positions):
        ranks = [(1 if e.dtype == bool else e.ndim) if isinstance(e, np.ndarray) else 0
                 for e in full if _is_advanced(e)]
        return full, max(ranks)
    return full, 0


def _getitem_batch(args: list[Any], dims: list[Any], *, idx: StaticIndex) -> tuple[Any, int]:
    full, out_dim = _batched_index(idx)
    return getitem(batching.move_axis(args[0], dims[0], 0), idx=full), out_dim


batch_rules[getitem_p] = _getitem_batch


def _scatter_batch(prim: Primitive) -> Callable[..., Any]:
    def rule(args: list[Any], dims: list[Any], *, idx: StaticIndex) -> tuple[Any, int]:
        (x, y), (dx, dy) = args, dims
        full, batch_at = _batched_index(idx)
        size = batching.batch_size(args, dims)
        x = batching.with_batch_axis(x, dx, size)
        # Line y up with the selection of the batched index, whose batch axis is
        # at `batch_at`: pad one example of y to the rank of one example's
        # selection, and put the batch axis (or a 1 for a shared y) there.
        rank = len(indexed_shape(get_aval(x).shape, full)) - 1
        if dy is not None:
            y = batching.move_axis(y, dy, 0)
            example = get_aval(y).shape[1:]
            lead: tuple[int, ...] = (size,)
        else:
            example = get_aval(y).shape
            lead = (1,) if batch_at else ()
        if lead:
            if dy is None or len(example) < rank:
                y = shapes.reshape(y, new_shape=lead + (1,) * (rank - len(example)) + example)
            y = batching.move_axis(y, 0, batch_at)
        return prim.bind(x, y, idx=full), 0

    return rule


for _p in (index_add_p, index_set_p, index_mul_p, index_min_p, index_max_p):
    batch_rules[_p] = _scatter_batch(_p)

getitem: Callable[..., Any] = getitem_p.bind
index_add: Callable[..., Any] = index_add_p.bind
index_set: Callable[..., Any] = index_set_p.bind
index_mul: Callable[..., Any] = index_mul_p.bind
index_min: Callable[..., Any] = index_min_p.bind
index_max: Callable[..., Any] = index_max_p.bind
