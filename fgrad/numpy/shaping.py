"""Shape functions: reshape, transpose, moving, broadcasting, flipping, rolling,
tiling, repeating and splitting arrays.

All are composites of the data-movement primitives (reshape, transpose,
broadcast_to, concatenate, and getitem with a static index), so they need no
rules of their own: their derivatives, transposes and batching follow.
Counts, shifts and split points fix the result's shape, so they must be
concrete (not traced).
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..core.avals import get_aval
from ..core.trace import EVAL_TRACE, ctx
from ..primitives import indexing, shapes
from ..primitives.indexing import StaticIndex
from .operands import (
    Array,
    ArrayLike,
    axes_in_order,
    normalize_axes,
    numpy_when_eager,
    operand,
    shape_of,
    static_argument,
)

__all__ = [
    "reshape", "transpose", "expand_dims", "squeeze", "ravel", "moveaxis", "swapaxes", "broadcast_to",
    "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "roll",
    "rot90", "tile", "repeat", "split", "array_split", "hsplit", "vsplit", "dsplit", "rollaxis",
    "append", "insert", "delete", "row_stack",
]


def _resolve_shape(shape: Any, size: int) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    return shape


def reshape(a: ArrayLike, shape: int | Sequence[int], order: str = "C") -> Array:
    """numpy.reshape (C order); one dimension may be -1."""
    if ctx.trace is EVAL_TRACE:
        return np.reshape(a, shape, order=order)  # type: ignore[call-overload]
    if order != "C":
        raise NotImplementedError("fgrad.numpy.reshape supports order='C' only")
    a = operand(a)
    old = shape_of(a)
    new = _resolve_shape(shape, int(np.prod(old, dtype=np.int64)))
    return a if new == old else shapes.reshape(a, new_shape=new)


@numpy_when_eager(np.transpose)
def transpose(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """numpy.transpose: reverse the axes, or permute them as `axes` says."""
    a = operand(a)
    ndim = len(shape_of(a))
    if axes is None:
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(int(i) % ndim if ndim else int(i) for i in axes)
        if sorted(perm) != list(range(ndim)):
            raise ValueError("axes don't match array")
    return a if perm == tuple(range(ndim)) else shapes.transpose(a, axes=perm)


@numpy_when_eager(np.expand_dims)
def expand_dims(a: ArrayLike, axis: int | Sequence[int]) -> Array:
    """numpy.expand_dims: insert axes of size 1 at the positions `axis`."""
    a = operand(a)
    shape = shape_of(a)
    n_new = 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))
    new_axes = normalize_axes(axis, len(shape) + n_new)
    rest = iter(shape)
    new_shape = tuple(1 if i in new_axes else next(rest) for i in range(len(shape) + n_new))
    return shapes.reshape(a, new_shape=new_shape)


@numpy_when_eager(np.squeeze)
def squeeze(a: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """numpy.squeeze: remove axes of size 1 (all of them, or those in `axis`)."""
    a = operand(a)
    shape = shape_of(a)
    if axis is None:
        drop = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        drop = normalize_axes(axis, len(shape))
        if any(shape[i] != 1 for i in drop):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if not drop:
        return a
    return shapes.reshape(a, new_shape=tuple(n for i, n in enumerate(shape) if i not in drop))


def ravel(a: ArrayLike) -> Array:
    """numpy.ravel: the elements as a 1-d array (C order)."""
    if ctx.trace is EVAL_TRACE:
        return np.ravel(a)
    return reshape(a, -1)


@numpy_when_eager(np.moveaxis)
def moveaxis(a: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    """numpy.moveaxis: move axes to new positions, the others keeping their order.

    >>> import fgrad.numpy as fnp
    >>> fnp.moveaxis(np.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    a = operand(a)
    ndim = len(shape_of(a))
    src = axes_in_order(source, ndim, "source")
    dst = axes_in_order(destination, ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(ndim) if n not in src]
    for dest, s in sorted(zip(dst, src)):
        order.insert(dest, s)
    return transpose(a, order)


@numpy_when_eager(np.swapaxes)
def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    """numpy.swapaxes: exchange two axes.

    >>> import fgrad.numpy as fnp
    >>> fnp.swapaxes(np.zeros((2, 3)), 0, 1).shape
    (3, 2)
    """
    a = operand(a)
    ndim = len(shape_of(a))
    i, j = normalize_axis_index(axis1, ndim, "axis1"), normalize_axis_index(axis2, ndim, "axis2")
    perm = list(range(ndim))
    perm[i], perm[j] = j, i
    return transpose(a, perm)


def broadcast_to(array: ArrayLike, shape: int | Sequence[int]) -> Array:
    """numpy.broadcast_to: `array` repeated along new or size-1 axes to `shape`.

    >>> import fgrad.numpy as fnp
    >>> fnp.broadcast_to(np.arange(3.0), (2, 3)).shape
    (2, 3)
    """
    if ctx.trace is EVAL_TRACE:
        return np.broadcast_to(array, shape)
    x = operand(array)
    target = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if any(n < 0 for n in target):
        raise ValueError("all elements of broadcast shape must be non-negative")
    old = shape_of(x)
    if old == target:
        return x
    if len(old) > len(target):
        raise ValueError(f"input operand has more dimensions than allowed by the axis remapping: "
                         f"cannot broadcast shape {old} to shape {target}")
    return shapes.broadcast_to(x, shape=target)


def broadcast_arrays(*args: ArrayLike) -> tuple[Array, ...]:
    """numpy.broadcast_arrays: the arguments broadcast against each other (a tuple).

    >>> import fgrad.numpy as fnp
    >>> [a.shape for a in fnp.broadcast_arrays(np.ones(3), np.ones((2, 1)))]
    [(2, 3), (2, 3)]
    """
    if ctx.trace is EVAL_TRACE:
        return np.broadcast_arrays(*args)
    xs = [operand(a) for a in args]
    shape = np.broadcast_shapes(*(shape_of(x) for x in xs))
    return tuple(broadcast_to(x, shape) for x in xs)


def _atleast(ndim: int, arys: tuple[ArrayLike, ...], place: Callable[[tuple[int, ...]], tuple[int, ...]]
             ) -> Any:
    out = []
    for a in arys:
        x = operand(a)
        shape = shape_of(x)
        out.append(x if len(shape) >= ndim else shapes.reshape(x, new_shape=place(shape)))
    return out[0] if len(out) == 1 else tuple(out)


@numpy_when_eager(np.atleast_1d)
def atleast_1d(*arys: ArrayLike) -> Any:
    """numpy.atleast_1d: 0-d inputs become shape (1,); one array, or a tuple for several.

    >>> import fgrad.numpy as fnp
    >>> fnp.atleast_1d(2.0).shape
    (1,)
    """
    return _atleast(1, arys, lambda s: (1,))


@numpy_when_eager(np.atleast_2d)
def atleast_2d(*arys: ArrayLike) -> Any:
    """numpy.atleast_2d: () becomes (1, 1) and (N,) becomes (1, N).

    >>> import fgrad.numpy as fnp
    >>> fnp.atleast_2d(np.ones(3)).shape
    (1, 3)
    """
    return _atleast(2, arys, lambda s: (1,) * (2 - len(s)) + s)


@numpy_when_eager(np.atleast_3d)
def atleast_3d(*arys: ArrayLike) -> Any:
    """numpy.atleast_3d: () becomes (1, 1, 1), (N,) (1, N, 1) and (M, N) (M, N, 1).

    >>> import fgrad.numpy as fnp
    >>> fnp.atleast_3d(np.ones(3)).shape
    (1, 3, 1)
    """
    return _atleast(3, arys, lambda s: {0: (1, 1, 1), 1: (1, *s, 1), 2: (*s, 1)}[len(s)])


def _flip_axes(x: Any, axes: Sequence[int]) -> Any:
    """`x` reversed along `axes` (non-negative), as one getitem with negative steps."""
    ndim = len(shape_of(x))
    if not axes:
        return x
    idx = StaticIndex(slice(None, None, -1) if i in axes else slice(None) for i in range(ndim))
    return indexing.getitem(x, idx=idx)


@numpy_when_eager(np.flip)
def flip(m: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """numpy.flip: reverse the order of elements along `axis` (all axes by default).

    >>> import fgrad.numpy as fnp
    >>> fnp.flip(np.arange(3.0))
    array([2., 1., 0.])
    """
    x = operand(m)
    return _flip_axes(x, normalize_axes(axis, len(shape_of(x))))


@numpy_when_eager(np.fliplr)
def fliplr(m: ArrayLike) -> Array:
    """numpy.fliplr: reverse the columns (axis 1); needs at least 2-d.

    >>> import fgrad.numpy as fnp
    >>> fnp.fliplr(np.eye(2))
    array([[0., 1.],
           [1., 0.]])
    """
    x = operand(m)
    if len(shape_of(x)) < 2:
        raise ValueError("Input must be >= 2-d.")
    return _flip_axes(x, (1,))


@numpy_when_eager(np.flipud)
def flipud(m: ArrayLike) -> Array:
    """numpy.flipud: reverse the rows (axis 0); needs at least 1-d.

    >>> import fgrad.numpy as fnp
    >>> fnp.flipud(np.arange(3.0))
    array([2., 1., 0.])
    """
    x = operand(m)
    if len(shape_of(x)) < 1:
        raise ValueError("Input must be >= 1-d.")
    return _flip_axes(x, (0,))


@numpy_when_eager(np.roll)
def roll(a: ArrayLike, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Array:
    """numpy.roll: shift elements along axes, wrapping around (axis None: of the flattened array).

    >>> import fgrad.numpy as fnp
    >>> fnp.roll(np.arange(4.0), 1)
    array([3., 0., 1., 2.])
    """
    x = operand(a)
    shape = shape_of(x)
    shift = static_argument(shift, "roll", "shift")
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), shape)
    axes = normalize_axis_tuple(axis, len(shape), allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(len(shape)), 0)
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    for ax, offset in shifts.items():
        offset %= shape[ax] or 1  # an empty axis: nothing moves
        if offset:
            head = (slice(None),) * ax
            tail = indexing.getitem(x, idx=StaticIndex((*head, slice(-offset, None))))
            rest = indexing.getitem(x, idx=StaticIndex((*head, slice(None, -offset))))
            x = shapes.concatenate(tail, rest, axis=ax)
    return x


@numpy_when_eager(np.rot90)
def rot90(m: ArrayLike, k: int = 1, axes: Sequence[int] = (0, 1)) -> Array:
    """numpy.rot90: rotate by 90 degrees `k` times, from the first of `axes` towards the second.

    >>> import fgrad.numpy as fnp
    >>> fnp.rot90(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[2., 4.],
           [1., 3.]])
    """
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    x = operand(m)
    ndim = len(shape_of(x))
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == ndim:
        raise ValueError("Axes must be different.")
    if any(not -ndim <= a < ndim for a in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={ndim}.")
    first, second = axes[0] % ndim, axes[1] % ndim
    k = operator.index(static_argument(k, "rot90", "k")) % 4
    if k == 0:
        return x
    if k == 2:
        return _flip_axes(x, (first, second))
    perm = list(range(ndim))
    perm[first], perm[second] = second, first
    if k == 1:
        return transpose(_flip_axes(x, (second,)), perm)
    return _flip_axes(transpose(x, perm), (second,))


@numpy_when_eager(np.tile)
def tile(A: ArrayLike, reps: int | Sequence[int]) -> Array:
    """numpy.tile: `A` repeated `reps` times along each axis (the shorter of the two padded with 1s).

    >>> import fgrad.numpy as fnp
    >>> fnp.tile(np.array([1.0, 2.0]), 2)
    array([1., 2., 1., 2.])
    """
    x = operand(A)
    given = static_argument(reps, "tile", "reps")
    reps = (operator.index(given),) if np.ndim(given) == 0 else tuple(operator.index(r) for r in given)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    shape = shape_of(x)
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    if all(r == 1 for r in reps):
        return reshape(x, shape)
    # (s0, s1, ...) -> (1, s0, 1, s1, ...) -> (r0, s0, r1, s1, ...) -> (r0*s0, r1*s1, ...)
    spread = tuple(n for s in shape for n in (1, s))
    x = shapes.broadcast_to(reshape(x, spread), shape=tuple(n for r, s in zip(reps, shape) for n in (r, s)))
    return shapes.reshape(x, new_shape=tuple(r * s for r, s in zip(reps, shape)))


@numpy_when_eager(np.repeat)
def repeat(a: ArrayLike, repeats: int | Sequence[int], axis: int | None = None) -> Array:
    """numpy.repeat: each element repeated `repeats` times (an int, or one count per element)
    along `axis` (axis None: of the flattened array).

    >>> import fgrad.numpy as fnp
    >>> fnp.repeat(np.array([1.0, 2.0]), [1, 2])
    array([1., 2., 2.])
    """
    x = operand(a)
    if axis is None or not shape_of(x):  # NumPy repeats a 0-d array as a 1-d one
        x, axis = ravel(x), 0 if axis is None else axis
    shape = shape_of(x)
    ax = normalize_axis_index(axis, len(shape))
    counts = np.asarray(static_argument(repeats, "repeat", "repeats"))
    source = np.repeat(np.arange(shape[ax]), counts)  # NumPy's own checks of `repeats`
    if counts.size == 1:  # every element the same number of times: a broadcast, no gather
        r = int(counts.reshape(()))
        if r == 1:
            return x
        spread = shapes.reshape(x, new_shape=shape[: ax + 1] + (1,) + shape[ax + 1:])
        spread = shapes.broadcast_to(spread, shape=shape[: ax + 1] + (r,) + shape[ax + 1:])
        return shapes.reshape(spread, new_shape=shape[:ax] + (shape[ax] * r,) + shape[ax + 1:])
    return indexing.getitem(x, idx=StaticIndex((*(slice(None),) * ax, source)))


@numpy_when_eager(np.array_split)
def array_split(ary: ArrayLike, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Array]:
    """numpy.array_split: split into `sections` nearly equal parts (the first ones one longer),
    or at the given indices.

    >>> import fgrad.numpy as fnp
    >>> [p.tolist() for p in fnp.array_split(np.arange(5.0), 2)]
    [[0.0, 1.0, 2.0], [3.0, 4.0]]
    """
    x = operand(ary)
    shape = shape_of(x)
    ax = normalize_axis_index(axis, len(shape))
    n = shape[ax]
    spec = static_argument(indices_or_sections, "array_split", "indices_or_sections")
    if np.ndim(spec) == 0:
        sections = operator.index(spec)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        bounds = [0, *(operator.index(i) for i in spec), n]
    head = (slice(None),) * ax
    return [indexing.getitem(x, idx=StaticIndex((*head, slice(start, stop))))
            for start, stop in zip(bounds[:-1], bounds[1:])]


@numpy_when_eager(np.split)
def split(ary: ArrayLike, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Array]:
    """numpy.split: like array_split, but `sections` must divide the axis evenly.

    >>> import fgrad.numpy as fnp
    >>> [p.tolist() for p in fnp.split(np.arange(4.0), 2)]
    [[0.0, 1.0], [2.0, 3.0]]
    """
    spec = static_argument(indices_or_sections, "split", "indices_or_sections")
    if np.ndim(spec) == 0:
        shape = shape_of(operand(ary))
        n = shape[normalize_axis_index(axis, len(shape))]
        if n % operator.index(spec):  # sections=0: NumPy's ZeroDivisionError
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, spec, axis)


@numpy_when_eager(np.hsplit)
def hsplit(ary: ArrayLike, indices_or_sections: int | Sequence[int]) -> list[Array]:
    """numpy.hsplit: split along the second axis (the first, for 1-d arrays).

    >>> import fgrad.numpy as fnp
    >>> [p.shape for p in fnp.hsplit(np.zeros((2, 4)), 2)]
    [(2, 2), (2, 2)]
    """
    x = operand(ary)
    ndim = len(shape_of(x))
    if ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(x, indices_or_sections, 1 if ndim > 1 else 0)


@numpy_when_eager(np.vsplit)
def vsplit(ary: ArrayLike, indices_or_sections: int | Sequence[int]) -> list[Array]:
    """numpy.vsplit: split along the first axis of an array of 2 or more dimensions.

    >>> import fgrad.numpy as fnp
    >>> [p.shape for p in fnp.vsplit(np.zeros((4, 2)), [1])]
    [(1, 2), (3, 2)]
    """
    x = operand(ary)
    if len(shape_of(x)) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, 0)


@numpy_when_eager(np.dsplit)
def dsplit(ary: ArrayLike, indices_or_sections: int | Sequence[int]) -> list[Array]:
    """numpy.dsplit: split along the third axis of an array of 3 or more dimensions.

    >>> import fgrad.numpy as fnp
    >>> [p.shape for p in fnp.dsplit(np.zeros((1, 2, 4)), 2)]
    [(1, 2, 2), (1, 2, 2)]
    """
    x = operand(ary)
    if len(shape_of(x)) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, 2)


@numpy_when_eager(np.rollaxis)
def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """numpy.rollaxis: move `axis` to the position before `start` (moveaxis is simpler).

    >>> import fgrad.numpy as fnp
    >>> fnp.rollaxis(np.zeros((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    x = operand(a)
    n = len(shape_of(x))
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return x
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(x, axes)


def _strong(x: Any) -> Any:
    """`x` as numpy.asanyarray makes it: a Python scalar becomes a (strongly typed) array."""
    return np.asarray(x) if type(x) in (float, int, complex, bool) else operand(x)


@numpy_when_eager(np.append)
def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    """numpy.append: `values` joined after `arr` along `axis` (axis None: both flattened).

    >>> import fgrad.numpy as fnp
    >>> fnp.append(np.array([1.0, 2.0]), [[3.0]])
    array([1., 2., 3.])
    """
    from .creation import concatenate  # imported here: creation builds on this module

    x, v = _strong(arr), _strong(values)
    if axis is None:
        x, v = (ravel(x) if len(shape_of(x)) != 1 else x), ravel(v)
        axis = len(shape_of(x)) - 1
    return concatenate((x, v), axis=axis)


def _gather_flat(x: Any, positions: np.ndarray) -> Any:
    """The elements of `x` (flattened) at `positions`, an array of the result's shape."""
    flat = ravel(x)
    return reshape(indexing.getitem(flat, idx=StaticIndex((positions.ravel(),))), positions.shape)


@numpy_when_eager(np.insert)
def insert(arr: ArrayLike, obj: Any, values: ArrayLike, axis: int | None = None) -> Array:
    """numpy.insert: `values` inserted before the indices `obj` (concrete) along `axis`
    (axis None: of the flattened array).

    >>> import fgrad.numpy as fnp
    >>> fnp.insert(np.array([1.0, 2.0, 3.0]), 1, 9.0)
    array([1., 9., 2., 3.])
    """
    obj = static_argument(obj, "insert", "obj")
    x, v = _strong(arr), _strong(values)
    dtype = get_aval(x).dtype
    if get_aval(v).dtype != dtype:
        from .creation import astype  # imported here: creation builds on this module

        v = astype(v, dtype)
    # NumPy arranges the positions of the elements of `arr` and of `values`; a gather follows.
    n = int(np.prod(shape_of(x), dtype=np.int64))
    labels = np.arange(n).reshape(shape_of(x))
    value_labels = n + np.arange(int(np.prod(shape_of(v), dtype=np.int64))).reshape(shape_of(v))
    positions = np.insert(labels, obj, value_labels, axis)
    from .creation import concatenate  # imported here: creation builds on this module

    return _gather_flat(concatenate([ravel(x), ravel(v)]), positions)


@numpy_when_eager(np.delete)
def delete(arr: ArrayLike, obj: Any, axis: int | None = None) -> Array:
    """numpy.delete: `arr` without the entries `obj` (concrete indices, a slice or a mask)
    along `axis` (axis None: of the flattened array).

    >>> import fgrad.numpy as fnp
    >>> fnp.delete(np.array([1.0, 2.0, 3.0]), [0, 2])
    array([2.])
    """
    obj = static_argument(obj, "delete", "obj")
    x = _strong(arr)
    labels = np.arange(int(np.prod(shape_of(x), dtype=np.int64))).reshape(shape_of(x))
    positions = np.delete(labels, obj, axis)
    return _gather_flat(x, positions)


def row_stack(tup: Sequence[ArrayLike], *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """numpy.row_stack: NumPy's deprecated alias of vstack (with its DeprecationWarning).

    >>> import warnings, fgrad.numpy as fnp
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fnp.row_stack([np.ones(2), np.zeros(2)]).shape
    (2, 2)
    """
    if ctx.trace is EVAL_TRACE:
        return np.row_stack(tup, dtype=dtype, casting=casting)  # type: ignore[arg-type]
    from .creation import vstack  # imported here: creation builds on this module

    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning,
                  stacklevel=2)
    return vstack(tup, dtype=dtype, casting=casting)
