"""Indexing traced arrays: `x[idx]` with NumPy's basic indexing (ints, slices,
None, Ellipsis) and concrete integer or boolean arrays; take,
take_along_axis, diagonal, trace; and functional updates, ``at(x)[idx].set(v)``,
which return a new array and leave x unchanged. (``x.at[idx]`` works on traced
values only, NumPy arrays having no ``.at``: write ``at(x)[idx]`` in code that
may see either.)

An index whose value fgrad knows when it traces (a constant, or a value
under grad, whose tracers carry one) is static: a parameter of the getitem
and index_* primitives, checked as NumPy checks it. An integer index that is
itself traced (under jit, vmap over the indices, make_jaxpr) becomes an
operand of the gather and scatter primitives instead (`primitives/gather.py`):
the result's shape is the index's shape, which is known. fgrad cannot check
such an index's values, so it follows JAX: a negative index counts from the
end, then reading (indexing, take, take_along_axis, ``.at[].get()``) clamps
what is still out of bounds into the axis, and updates (``.at[].set()``,
``add`` ...) out of bounds are dropped (``mode="clip"`` clamps them). Modes
that say what to do with any index agree with and without a transform: take's
"clip" and "wrap" (NumPy's), and JAX's "fill" of take and ``.at[].get()``
(out of bounds reads ``fill_value``). A
boolean mask must stay concrete: it fixes the shape of the result.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.avals import ShapedArray, broadcast_shapes, get_aval
from ..core.libraries import is_library_array
from ..core.trace import EVAL_TRACE, Primitive, Tracer, ctx
from ..primitives import elementwise as ew
from ..primitives import gather as dynamic
from ..primitives import indexing, reductions, shapes
from ..primitives.indexing import StaticIndex, indexed_shape, stand_in
from . import ufuncs
from .operands import Array, ArrayLike, check_no_out, concrete_value, numpy_when_eager, operand, shape_of

__all__ = [
    "take", "take_along_axis", "diagonal", "trace", "at", "nonzero", "argwhere", "flatnonzero",
    "triu_indices", "tril_indices", "diag_indices", "indices", "ix_",
]


def static_index_array(x: Any, what: str = "index") -> Any:
    """`x` with its concrete value in place of any tracer (through grad's
    tracers, which carry one); a clear error for an abstract one."""
    return concrete_value(
        x,
        f"The {what} is a traced value ({{aval}} under `{{transform}}`), but fgrad needs indices as "
        "concrete values when it traces a function: they fix the shape of the result. Indexing with "
        "traced integer arrays (a dynamic gather, e.g. vmap over the indices, or make_jaxpr with the "
        "indices as an argument) is not supported yet. Pass the indices as a constant instead (close "
        "over them, or use functools.partial), or select with fgrad.numpy.where.",
    )


def _index_entry(i: Any) -> Any:
    if i is None or i is Ellipsis:
        return i
    if isinstance(i, slice):
        return slice(*(None if v is None else operator.index(static_index_array(v))
                       for v in (i.start, i.stop, i.step)))
    if isinstance(i, (bool, np.bool_)):
        return np.asarray(i)
    if isinstance(i, (int, np.integer)):
        return int(i)
    i = static_index_array(i)
    arr = np.asarray(i)
    if arr.size == 0 and isinstance(i, (list, tuple)):  # NumPy's x[[]]: an empty integer index
        arr = arr.astype(np.intp)
    if arr.dtype.kind not in "iub":
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer "
            f"or boolean arrays are valid indices, got {type(i).__name__} of dtype {arr.dtype}"
        )
    if arr.ndim == 0 and arr.dtype.kind in "iu":
        return int(arr)
    return arr


def static_index(idx: Any) -> StaticIndex:
    """`idx` normalized to the static index the getitem primitive takes."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    return StaticIndex(_index_entry(i) for i in entries)


def getitem(x: ArrayLike, idx: Any) -> Array:
    """`x[idx]` for a traced `x`."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    if any(_is_traced(e) for e in entries):
        return _gather(operand(x), entries)
    return indexing.getitem(operand(x), idx=static_index(idx))


# --- traced indices: gather and scatter -------------------------------------------


def _is_traced(entry: Any) -> bool:
    """An index entry whose values fgrad does not read: one no transform knows
    (only its type), or another library's integer array, which reading would
    convert to NumPy (and, for Dask, compute). Both index by a gather."""
    if isinstance(entry, Tracer):
        entry = concrete_value(entry, None)
        if entry is None:
            return True
    return _library_integers(entry)


def _library_integers(entry: Any) -> bool:
    return is_library_array(entry) and get_aval(entry).dtype.kind in "iu"


def _gather_form(shape: tuple[int, ...], entries: tuple[Any, ...], checked: bool = True) -> list[Any]:
    """NumPy's index `entries` into an array of `shape`, some of them traced
    integer arrays, as the gather primitive's operands: one integer array per
    leading axis of x, broadcasting to the result's leading axes, which are
    laid out as NumPy lays them out (the advanced indices' broadcast shape in
    place, or first when slices separate them; a size-1 axis for each None).
    The trailing axes that full slices take stay whole. Concrete integer indices
    out of bounds raise NumPy's IndexError, unless not `checked` (mode 'fill')."""
    items: list[Any] = []  # None, slice, or ("array", value)
    for e in entries:
        if e is None or isinstance(e, slice):
            items.append(slice(*(None if v is None else operator.index(static_index_array(v))
                                 for v in (e.start, e.stop, e.step))) if isinstance(e, slice) else None)
        elif e is Ellipsis:
            items.append(Ellipsis)
        elif isinstance(e, Tracer) or _library_integers(e):
            kind = get_aval(e).dtype.kind
            if kind == "b":
                raise IndexError(
                    f"a boolean mask index is a traced value ({get_aval(e).str_short()}): the shape of the "
                    "result would depend on its values, which fgrad does not know when it traces. "
                    "Select with fgrad.numpy.where(mask, x, 0) instead, or pass the mask as a constant."
                )
            if kind not in "iu":
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer "
                    f"or boolean arrays are valid indices, got a traced {get_aval(e).str_short()}"
                )
            items.append(("array", e))
        else:
            value = _index_entry(e)
            if isinstance(value, np.ndarray) and value.dtype == bool:
                if value.ndim == 0:
                    raise IndexError("a boolean scalar index beside a traced index is not supported; "
                                     "index with the traced index alone, then add the axis with None")
                items.extend(("array", part) for part in np.nonzero(value))
            else:
                items.append(("array", np.asarray(value)))
    taken = sum(1 for i in items if i is not None and i is not Ellipsis)
    if taken > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {taken} were indexed")
    if items.count(Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    at = items.index(Ellipsis) if Ellipsis in items else len(items)
    items[at:at + 1] = [slice(None)] * (len(shape) - taken)
    # The axes of x each item takes, and the shape of the advanced indices together.
    dims: list[int] = []  # (a None takes no axis: -1)
    axis = 0
    for item in items:
        dims.append(-1 if item is None else axis)
        axis += item is not None
    advanced = [k for k, item in enumerate(items) if isinstance(item, tuple)]
    for k in advanced:
        value, n = items[k][1], shape[dims[k]]
        concrete = checked and isinstance(value, np.ndarray) and value.size
        if concrete and not (-n <= value.min() and value.max() < n):
            np.take(np.arange(n), value)  # NumPy's IndexError, naming the index and the size
    try:
        block = broadcast_shapes(*(np.shape(items[k][1]) for k in advanced))
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            + " ".join(str(np.shape(items[k][1])) for k in advanced)
        ) from None
    # Full slices at the end stay whole; everything before becomes an index array.
    trailing = 0
    for item, dim in zip(reversed(items), reversed(dims)):
        if not isinstance(item, slice) or item.indices(shape[dim]) != (0, shape[dim], 1):
            break
        trailing += 1
    kept = items[:len(items) - trailing]
    adjacent = advanced[-1] - advanced[0] + 1 == len(advanced)
    # The leading result axes: one per slice and None, the block where NumPy puts it.
    layout: list[Any] = []
    for k, item in enumerate(kept):
        if isinstance(item, tuple):
            if k == advanced[0]:
                layout.append("block")
        else:
            layout.append(k)
    if not adjacent:
        layout = ["block"] + [a for a in layout if a != "block"]
    rank = len(layout) - 1 + len(block)
    start = 0
    positions: dict[Any, int] = {}
    for a in layout:
        positions[a] = start
        start += len(block) if a == "block" else 1
    operands: list[Any] = []
    for k, item in enumerate(kept):
        if item is None:
            continue
        if isinstance(item, slice):
            values = np.arange(*item.indices(shape[dims[k]]), dtype=np.intp)
            lead = positions[k]
            operands.append(values.reshape((1,) * lead + values.shape + (1,) * (rank - lead - 1)))
            continue
        value = item[1]
        v_shape = np.shape(value)
        lead = positions["block"] + len(block) - len(v_shape)
        new_shape = (1,) * lead + v_shape + (1,) * (rank - lead - len(v_shape))
        if not isinstance(value, np.ndarray):  # traced, or another library's: reshaped by a primitive
            operands.append(value if v_shape == new_shape else shapes.reshape(value, new_shape=new_shape))
        else:
            operands.append(value.astype(np.intp).reshape(new_shape))
    return operands


def _gather(x: Any, entries: tuple[Any, ...], mode: str = "clip") -> Any:
    return dynamic.gather(x, *_gather_form(shape_of(x), entries), mode=mode)


def _fill_default(dtype: np.dtype) -> Any:
    """JAX's fill_value for mode='fill': NaN for inexact dtypes, the most negative
    value for signed integers, the largest for unsigned ones, True for booleans."""
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if dtype.kind == "i" else info.max
    return True


def _gather_filled(x: Any, entries: tuple[Any, ...], fill_value: Any) -> Any:
    """``x[entries]`` with JAX's mode='fill': a negative index counts from the end once,
    and an element that an index still puts out of bounds is `fill_value` (None:
    `_fill_default`), from which no derivative reaches x."""
    shape = shape_of(x)
    indices = _gather_form(shape, entries, checked=False)
    out = dynamic.gather(x, *indices, mode="fill")
    inside: Any = None
    for i, n in zip(indices, shape):
        ok = ufuncs.logical_and(ufuncs.greater_equal(i, -n), ufuncs.less(i, n))
        inside = ok if inside is None else ufuncs.logical_and(inside, ok)
    if inside is None:  # slices only: nothing is out of bounds
        return out
    lead = broadcast_shapes(*(np.shape(i) for i in indices))
    if shape_of(inside) != lead:
        inside = shapes.broadcast_to(inside, shape=lead)
    inside = shapes.reshape(inside, new_shape=lead + (1,) * (len(shape) - len(indices)))
    dtype = get_aval(x).dtype
    fill = operand(_fill_default(dtype) if fill_value is None else fill_value)
    if get_aval(fill).dtype != dtype:
        fill = ew.convert_element_type(fill, new_dtype=dtype)
    return ufuncs.where(inside, out, fill)


def take(a: ArrayLike, indices: ArrayLike, axis: int | None = None, out: None = None,
         mode: str = "raise", *, unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any = None) -> Array:
    """numpy.take: the elements at `indices` along `axis` (axis None: of the flattened array).
    NumPy's modes: 'raise' (bounds-checked, negative indices count from the end), 'wrap'
    (indices modulo the axis) and 'clip' (each index clamped into the axis, so -1 takes the
    first element); and JAX's 'fill': a negative index counts from the end, and one still
    out of bounds takes `fill_value` (by default NaN for inexact dtypes, the most negative
    signed or largest unsigned integer, True). Traced indices (under jit, vmap, make_jaxpr)
    cannot be checked: 'raise' then counts negative ones from the end and clamps the rest
    into bounds, as fgrad's indexing does (JAX's own default is 'fill').
    `unique_indices` and `indices_are_sorted` are JAX's hints, accepted and ignored.

    >>> import fgrad.numpy as fnp
    >>> fnp.take(np.array([1.0, 2.0, 3.0]), [2, 0])
    array([3., 1.])
    >>> fnp.take(np.array([1.0, 2.0, 3.0]), [-1, 3], mode="fill", fill_value=0.0)
    array([3., 0.])
    """
    if mode == "fill":
        check_no_out(out, "take")
        x = operand(a)
        if axis is None:
            x = shapes.reshape(x, new_shape=(get_aval(x).size,))
        ax = normalize_axis_index(0 if axis is None else axis, len(shape_of(x)))
        y = _gather_filled(x, (*(slice(None),) * ax, indices), fill_value)
        return y[()] if ctx.trace is EVAL_TRACE and isinstance(y, np.ndarray) and y.ndim == 0 else y
    if ctx.trace is EVAL_TRACE:
        return np.take(a, indices, axis=axis, out=out, mode=mode)  # type: ignore[call-overload]
    check_no_out(out, "take")
    x = operand(a)
    if _is_traced(indices):  # the values are not known: clamped or wrapped
        if axis is None:
            x = shapes.reshape(x, new_shape=(get_aval(x).size,))
        ax = normalize_axis_index(0 if axis is None else axis, len(shape_of(x)))
        n = shape_of(x)[ax]
        if mode == "wrap":
            indices = ufuncs.remainder(indices, n)
        elif mode == "clip":  # NumPy's clip clamps the index itself: -1 takes element 0
            indices = ufuncs.clip(indices, 0, max(n - 1, 0))
        elif mode != "raise":
            raise ValueError(f"take: mode must be 'raise', 'wrap', 'clip' or 'fill', not {mode!r}")
        return _gather(x, (*(slice(None),) * ax, indices))
    indices = static_index_array(indices, "indices")
    given = shape_of(x)
    if axis is None:
        x = shapes.reshape(x, new_shape=(get_aval(x).size,))
    shape = shape_of(x)
    ax = normalize_axis_index(0 if axis is None else axis, len(shape))
    # NumPy itself converts, wraps, clips or bounds-checks the indices.
    try:
        positions = np.take(np.arange(shape[ax]), indices, mode=mode)  # type: ignore[call-overload]
    except IndexError:  # NumPy's error naming the axis and size of `a`, not of the positions
        np.take(stand_in(given), indices, axis=axis, mode=mode)  # type: ignore[call-overload]
        raise
    entry = int(positions) if positions.ndim == 0 else positions
    return indexing.getitem(x, idx=StaticIndex((*(slice(None),) * ax, entry)))


def take_along_axis(arr: ArrayLike, indices: ArrayLike, axis: int | None = -1) -> Array:
    """numpy.take_along_axis: pick along `axis` by `indices` of the same rank (other axes
    broadcast), as argsort or argmax with keepdims give them.

    >>> import fgrad.numpy as fnp
    >>> fnp.take_along_axis(np.array([[3.0, 1.0], [2.0, 4.0]]), np.array([[1], [0]]), axis=1)
    array([[1.],
           [2.]])
    """
    if ctx.trace is EVAL_TRACE:
        return np.take_along_axis(arr, indices, axis)
    x = operand(arr)
    traced = _is_traced(indices)
    ind = indices if traced else np.asarray(static_index_array(indices, "indices"))
    if traced and get_aval(ind).dtype.kind not in "iu":
        raise IndexError(f"take_along_axis: `indices` must be integers, got a traced "
                         f"{get_aval(ind).str_short()}")
    # NumPy's checks and errors, on stand-ins of the shapes.
    np.take_along_axis(stand_in(shape_of(x)), np.zeros(shape_of(ind), np.intp) if traced else ind, axis)
    if axis is None:
        x = shapes.reshape(x, new_shape=(get_aval(x).size,))
    shape = shape_of(x)
    ax = 0 if axis is None else normalize_axis_index(axis, len(shape))
    fancy = []
    for dim, n in enumerate(shape):
        if dim == ax:
            fancy.append(ind)
        else:  # this axis's positions, shaped to broadcast along it
            fancy.append(np.arange(n).reshape((1,) * dim + (n,) + (1,) * (len(shape) - dim - 1)))
    if traced:
        return _gather(x, tuple(fancy))
    return indexing.getitem(x, idx=StaticIndex(fancy))


@numpy_when_eager(np.diagonal)
def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """numpy.diagonal: the elements ``a[..., i, i + offset]`` of the plane (axis1, axis2), as
    the last axis of the result.

    >>> import fgrad.numpy as fnp
    >>> fnp.diagonal(np.arange(9.0).reshape(3, 3), offset=1)
    array([1., 5.])
    """
    x = operand(a)
    shape = shape_of(x)
    length = np.diagonal(stand_in(shape), offset, axis1, axis2).shape[-1]  # NumPy's checks and errors
    i, j = normalize_axis_index(axis1, len(shape)), normalize_axis_index(axis2, len(shape))
    perm = [k for k in range(len(shape)) if k not in (i, j)] + [i, j]
    if perm != list(range(len(shape))):
        x = shapes.transpose(x, axes=tuple(perm))
    *lead, rows, cols = shape_of(x)
    # The diagonal of a (rows, cols) block, flattened, is every (cols + 1)-th
    # element from the first one: a strided slice, which has a cheap transpose.
    start = offset if offset >= 0 else -offset * cols
    flat = shapes.reshape(x, new_shape=(*lead, rows * cols))
    step = StaticIndex((Ellipsis, slice(start, start + length * (cols + 1), cols + 1)))
    return indexing.getitem(flat, idx=step)


@numpy_when_eager(np.trace)
def trace(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Array:
    """numpy.trace: the sum along a diagonal (see diagonal); NumPy's sum dtype.

    >>> import fgrad.numpy as fnp
    >>> fnp.trace(np.eye(3))
    np.float64(3.0)
    """
    check_no_out(out, "trace")
    diag = diagonal(a, offset, axis1, axis2)
    if dtype is not None and get_aval(diag).dtype != np.dtype(dtype):
        diag = ew.convert_element_type(diag, new_dtype=np.dtype(dtype))
    return reductions.reduce_sum(diag, axes=(len(shape_of(diag)) - 1,))


# --- functional updates ---------------------------------------------------------


# JAX's out-of-bound modes; fgrad supports those of the first group.
_MODES = (None, "promise_in_bounds", "clip")
_UNSUPPORTED_MODES = ("drop", "fill")


def _axes_taken(entry: Any) -> int:
    """How many axes of the indexed array an index entry (not Ellipsis) consumes."""
    if entry is None:
        return 0
    if isinstance(entry, np.ndarray) and entry.dtype == bool:
        return entry.ndim
    return 1


def _clipped(idx: StaticIndex, shape: tuple[int, ...]) -> StaticIndex:
    """`idx` with its integer entries (ints and integer arrays) clamped into their
    axis, as JAX's mode='clip': a negative index counts from the end once, then
    anything still out of range goes to the nearest end."""
    out, axis = [], 0
    for e in idx:
        if e is Ellipsis:
            axis += len(shape) - sum(_axes_taken(other) for other in idx if other is not Ellipsis)
        elif _is_integer_entry(e) and axis < len(shape) and shape[axis]:
            n = shape[axis]
            clamped = np.clip(np.where(e < 0, e + n, e), 0, n - 1)
            e = int(clamped) if clamped.ndim == 0 else clamped
        if e is not Ellipsis:
            axis += _axes_taken(e)
        out.append(e)
    return StaticIndex(out)


def _is_integer_entry(entry: Any) -> bool:
    return isinstance(entry, int) or (isinstance(entry, np.ndarray) and entry.dtype.kind in "iu")


class IndexUpdateRef:
    """``at(x)[idx]``: the updates of `x` at `idx`, each returning a new array.

    Where an integer-array index selects an element several times, `add`,
    `multiply`, `divide`, `power`, `min`, `max` and `apply` apply every update
    (like ``numpy.ufunc.at``; divide divides by the product of the values);
    `set` keeps the last write in NumPy's order of assignment (for a 1-d
    index, the last occurrence), and only that write has a derivative. Values
    are cast to x's dtype, as JAX does, and broadcast to the selected shape.

    The keywords of JAX's methods: `indices_are_sorted` and `unique_indices`
    are hints, accepted and ignored; `mode` may be None or "promise_in_bounds"
    (an index out of bounds raises NumPy's IndexError) or "clip" (indices
    clamped into bounds); `get` also takes "fill" (or "drop") with `fill_value`,
    as JAX: a negative index counts from the end, and an element still out of
    bounds reads `fill_value` (NaN for inexact dtypes by default). Updates take
    "drop" with a traced index (their default then); "fill" is for `get` only.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def _static_index(self, method: str, mode: str | None, fill_value: Any = None) -> StaticIndex:
        if fill_value is not None:
            raise TypeError(f"at[...].{method}() got fill_value with mode={mode!r}: fill_value is "
                            "for at[...].get(mode='fill', fill_value=...) only")
        if mode in _UNSUPPORTED_MODES:
            raise TypeError(
                f"at[...].{method}() got mode={mode!r}, which fgrad does not support with an index it "
                "knows: out-of-bound indices raise NumPy's IndexError, or with mode='clip' are clamped "
                "into bounds (mode may be None, 'promise_in_bounds' or 'clip')"
            )
        if mode not in _MODES:
            raise ValueError(f"at[...].{method}(): invalid mode {mode!r}; fgrad supports None, "
                             "'promise_in_bounds' and 'clip'")
        idx = static_index(self.index)
        return _clipped(idx, shape_of(self.array)) if mode == "clip" else idx

    def _values(self, values: ArrayLike, aval: ShapedArray, target: tuple[int, ...]) -> Any:
        """`values` cast to x's dtype, a leading axis of size 1 dropped as NumPy does."""
        v = operand(values)
        v_aval = get_aval(v)
        if v_aval.dtype != aval.dtype:
            v = ew.convert_element_type(v, new_dtype=aval.dtype)
        extra = len(v_aval.shape) - len(target)
        if extra > 0 and all(n == 1 for n in v_aval.shape[:extra]):
            v = shapes.reshape(v, new_shape=v_aval.shape[extra:])
        return v

    def _traced(self) -> bool:
        entries = self.index if isinstance(self.index, tuple) else (self.index,)
        return any(_is_traced(e) for e in entries)

    def _scatter(self, prim: Primitive, values: ArrayLike, method: str, mode: str | None) -> Array:
        """The update with a traced index: out-of-bound updates dropped (JAX's
        default) or, with mode='clip', clamped into bounds."""
        if mode not in (*_MODES, "drop"):
            raise ValueError(f"at[...].{method}(): with a traced index, mode may be None, "
                             f"'promise_in_bounds', 'clip' or 'drop', not {mode!r}")
        x = operand(self.array)
        entries = self.index if isinstance(self.index, tuple) else (self.index,)
        indices = _gather_form(shape_of(x), entries)
        aval = get_aval(x).strip_weak_type()
        target = broadcast_shapes(*(np.shape(i) for i in indices)) + aval.shape[len(indices):]
        v = self._values(values, aval, target)
        scatter = _SCATTERS[prim]
        mode = "clip" if mode == "clip" else "drop"
        scatter.abstract_eval(aval, get_aval(v), *(get_aval(i) for i in indices), mode=mode)
        return scatter.bind(x, v, *indices, mode=mode)

    def _update(self, prim: Primitive, values: ArrayLike, method: str, mode: str | None) -> Array:
        if self._traced():
            return self._scatter(prim, values, method, mode)
        x = operand(self.array)
        idx = self._static_index(method, mode)
        aval = get_aval(x).strip_weak_type()
        v = self._values(values, aval, indexed_shape(aval.shape, idx))
        prim.abstract_eval(aval, get_aval(v), idx=idx)  # the same shape check with or without a transform
        return prim.bind(x, v, idx=idx)

    def _each_occurrence(self, fn: Callable[..., Any], values: ArrayLike | None, method: str,
                         mode: str | None) -> Array:
        """x with ``x[idx] = fn(x[idx])`` (or ``fn(x[idx], values)``), applied again for
        each further selection of an element, in NumPy's order (as ufunc.at)."""
        if self._traced():
            raise NotImplementedError(
                f"at[...].{method}() with a traced index is not supported: which elements it selects "
                "more than once is not known when fgrad traces. Pass the index as a constant, or "
                "write the update with at[...].set/add/multiply/min/max, which take traced indices."
            )
        x = operand(self.array)
        idx = self._static_index(method, mode)
        aval = get_aval(x).strip_weak_type()
        target = indexed_shape(aval.shape, idx)
        v = None
        if values is not None:
            v = self._values(values, aval, target)
            if not indexing.broadcasts_to(get_aval(v).shape, target):  # (power is the one with values)
                raise ValueError(f"cannot raise to the power of values of shape {get_aval(v).shape} at an "
                                 f"index selecting shape {target}")

        def update(x: Any, at: StaticIndex, v: Any) -> Any:
            new = fn(indexing.getitem(x, idx=at)) if v is None else fn(indexing.getitem(x, idx=at), v)
            if get_aval(new).dtype != aval.dtype:
                new = ew.convert_element_type(new, new_dtype=aval.dtype)
            return indexing.index_set(x, new, idx=at)

        rounds = indexing.occurrence_rounds(aval.shape, idx)
        if rounds is None:  # each element selected once at most
            return update(x, idx, v)
        # Round r updates the r-th selection of each element, in the flattened x.
        where, groups = rounds
        flat = shapes.reshape(x, new_shape=(aval.size,))
        if v is not None:
            if get_aval(v).shape != target:
                v = shapes.broadcast_to(v, shape=target)
            v = shapes.reshape(v, new_shape=(len(where),))
        for group in groups:
            v_round = None if v is None else indexing.getitem(v, idx=StaticIndex((group,)))
            flat = update(flat, StaticIndex((where[group],)), v_round)
        return shapes.reshape(flat, new_shape=aval.shape)

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: str | None = None,
            fill_value: Any = None) -> Array:
        """``x[idx]`` (a copy, not a view)."""
        x = operand(self.array)
        if mode in ("fill", "drop"):  # JAX's: for get, 'drop' is 'fill'
            entries = self.index if isinstance(self.index, tuple) else (self.index,)
            y = _gather_filled(x, entries, fill_value)
            return y[()] if ctx.trace is EVAL_TRACE and isinstance(y, np.ndarray) and y.ndim == 0 else y
        if self._traced():
            if mode not in _MODES or fill_value is not None:
                raise ValueError(f"at[...].get(): with a traced index, mode may be None, "
                                 f"'promise_in_bounds' or 'clip' (out-of-bound indices are clamped) "
                                 f"or 'fill' (they read fill_value), not {mode!r}"
                                 + (" with a fill_value" if fill_value is not None else ""))
            entries = self.index if isinstance(self.index, tuple) else (self.index,)
            return _gather(x, entries)
        idx = self._static_index("get", mode, fill_value)
        if ctx.trace is EVAL_TRACE:
            out = np.asarray(x)[tuple(idx)]
            return out.copy() if isinstance(out, np.ndarray) else out
        return indexing.getitem(x, idx=idx)

    def set(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] = values``."""
        return self._update(indexing.index_set_p, values, "set", mode)

    def add(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] += values``, repeated indices accumulating."""
        return self._update(indexing.index_add_p, values, "add", mode)

    def subtract(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] -= values``, repeated indices accumulating."""
        return self._update(indexing.index_add_p, ew.neg(operand(values)), "subtract", mode)

    def multiply(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] *= values``, repeated indices accumulating."""
        return self._update(indexing.index_mul_p, values, "multiply", mode)

    def divide(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
               mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] /= values``, for float and complex arrays: x divided by
        ones multiplied by the values at idx, as JAX does (an element selected twice is
        divided by the product of its values)."""
        x = operand(self.array)
        aval = get_aval(x).strip_weak_type()
        if aval.dtype.kind not in "fc":
            raise TypeError("at[...].divide needs a float or complex array; convert it with astype first")
        ones = shapes.broadcast_to(np.ones((), aval.dtype), shape=aval.shape)
        divisors = IndexUpdateRef(ones, self.index)._update(indexing.index_mul_p, values, "divide", mode)
        return ew.div(x, divisors)

    def power(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] **= values`` (an element selected twice is raised to
        each of its values in turn, as numpy.power.at)."""
        return self._each_occurrence(ufuncs.power, values, "power", mode)

    def min(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] = minimum(x[idx], values)``; ties share the derivative."""
        return self._update(indexing.index_min_p, values, "min", mode)

    def max(self, values: ArrayLike, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] = maximum(x[idx], values)``; ties share the derivative."""
        return self._update(indexing.index_max_p, values, "max", mode)

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: str | None = None) -> Array:
        """A copy of x with ``x[idx] = func(x[idx])`` for a unary function of fgrad.numpy
        (or a NumPy ufunc), applied once per selection of an element, as ``func.at(x, idx)``.

        >>> import fgrad.numpy as fnp
        >>> fnp.at(np.array([0.0, 1.0]))[np.array([1, 1])].apply(fnp.exp)[1] == np.exp(np.exp(1.0))
        np.True_
        """
        return self._each_occurrence(func, None, "apply", mode)

    def __repr__(self) -> str:
        return f"at({type(self.array).__name__})[{self.index!r}]"


_SCATTERS = {
    indexing.index_set_p: dynamic.scatter_set_p, indexing.index_add_p: dynamic.scatter_add_p,
    indexing.index_mul_p: dynamic.scatter_mul_p, indexing.index_min_p: dynamic.scatter_min_p,
    indexing.index_max_p: dynamic.scatter_max_p,
}


class IndexUpdateHelper:
    """``at(x)``: index it to get the functional updates of x at that index."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)


def at(x: ArrayLike) -> IndexUpdateHelper:
    """Functional updates of `x` (JAX's ``x.at``), for NumPy arrays and traced values alike:
    each returns a new array and leaves `x` unchanged. Prefer ``fnp.at(x)[idx]`` to
    ``x.at[idx]`` in code that may receive plain NumPy arrays (an argument not
    differentiated, say): ``numpy.ndarray`` has no ``.at``, only traced values do.

    >>> import fgrad.numpy as fnp
    >>> x = np.zeros(3)
    >>> fnp.at(x)[np.array([0, 0, 2])].add(1.0)
    array([2., 0., 1.])
    >>> x
    array([0., 0., 0.])
    """
    return IndexUpdateHelper(x)


def _concrete_indices(function: str, a: Any) -> Any:
    return concrete_value(
        a,
        f"fgrad.numpy.{function} needs concrete values: the number of indices it returns depends on the "
        "values of its input, but it got a traced {aval} value under `{transform}`, where only its type "
        f"is known. Call {function} outside the transformed function, or use fgrad.numpy.where with "
        "three arguments to select values instead.",
    )


@numpy_when_eager(np.nonzero)
def nonzero(a: ArrayLike) -> tuple[Array, ...]:
    """numpy.nonzero: the indices of the elements that are not zero, one array per axis
    (needs concrete values).

    >>> nonzero([[0.0, 1.5], [2.0, 0.0]])
    (array([0, 1]), array([1, 0]))
    """
    a = _concrete_indices("nonzero", a)
    if np.ndim(a) == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
                         "instead. If the context of this error is of the form `arr[nonzero(cond)]`, just "
                         "use `arr[cond]`.")
    return np.nonzero(a)


@numpy_when_eager(np.argwhere)
def argwhere(a: ArrayLike) -> Array:
    """numpy.argwhere: the indices of the non-zero elements, one row each (needs concrete values).

    >>> argwhere([[0.0, 1.5], [2.0, 0.0]])
    array([[0, 1],
           [1, 0]])
    """
    return np.argwhere(_concrete_indices("argwhere", a))


@numpy_when_eager(np.flatnonzero)
def flatnonzero(a: ArrayLike) -> Array:
    """numpy.flatnonzero: the indices of the non-zero elements of the flattened array (needs concrete values).

    >>> flatnonzero([[0.0, 1.5], [2.0, 0.0]])
    array([1, 2])
    """
    return np.flatnonzero(_concrete_indices("flatnonzero", a))


def _static(function: str, **arguments: Any) -> dict[str, Any]:
    from .operands import static_argument

    return {name: static_argument(v, function, name) for name, v in arguments.items()}


@numpy_when_eager(np.triu_indices)
def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """numpy.triu_indices: the row and column indices of the upper triangle of an (n, m) array
    (static arguments: constants).

    >>> triu_indices(2)
    (array([0, 0, 1]), array([0, 1, 1]))
    """
    return np.triu_indices(**_static("triu_indices", n=n, k=k, m=m))


@numpy_when_eager(np.tril_indices)
def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """numpy.tril_indices: the row and column indices of the lower triangle of an (n, m) array
    (static arguments: constants).

    >>> tril_indices(2)
    (array([0, 1, 1]), array([0, 0, 1]))
    """
    return np.tril_indices(**_static("tril_indices", n=n, k=k, m=m))


@numpy_when_eager(np.diag_indices)
def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """numpy.diag_indices: the indices of the main diagonal of an n x n x ... array (a constant).

    >>> diag_indices(2)
    (array([0, 1]), array([0, 1]))
    """
    return np.diag_indices(**_static("diag_indices", n=n, ndim=ndim))


@numpy_when_eager(np.indices)
def indices(dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    """numpy.indices: the grid of indices of an array of shape `dimensions` (a constant).

    >>> indices((2, 2))[1]
    array([[0, 1],
           [0, 1]])
    """
    return np.indices(_static("indices", dimensions=dimensions)["dimensions"], dtype, sparse)  # type: ignore[call-overload]


@numpy_when_eager(np.ix_)
def ix_(*args: ArrayLike) -> tuple[Array, ...]:
    """numpy.ix_: the 1-d sequences reshaped to index the cross product of their values (a boolean
    sequence needs concrete values, standing for its non-zero indices).

    >>> ix_([0, 1], [2])
    (array([[0],
           [1]]), array([[2]]))
    """
    from .shaping import reshape

    out = []
    nd = len(args)
    for k, new in enumerate(args):
        new = operand(new)
        if not isinstance(new, Tracer):
            new = np.asarray(new)
            if new.size == 0:
                new = new.astype(np.intp)
        if get_aval(new).ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if get_aval(new).dtype == np.bool_:
            (new,) = np.nonzero(_concrete_indices("ix_", new))
        out.append(reshape(new, (1,) * k + (shape_of(new)[0],) + (1,) * (nd - k - 1)))
    return tuple(out)
