"""Slices whose start is a value, as JAX's `lax.dynamic_slice` and
`lax.dynamic_update_slice` and their one-axis forms.

The size of a slice is static (it fixes the result's shape); its start may be
traced (under jit, make_jaxpr, vmap over the starts). As in JAX a negative
start counts from the end, then every start is clamped so that the whole
slice fits: ``dynamic_slice(x, (5,), (3,))`` of a length-6 `x` is ``x[3:6]``.

No primitive of their own: a start fgrad knows when it traces (a constant, or
a value under grad, whose tracers carry one) gives a static slice (`getitem`
and `index_set`, whose transposes are cheap); a traced start gives the
positions ``start + arange(size)`` along its axis, a gather for the slice and
a scatter for the update (`primitives/gather.py`), through ``fnp.at``. Every
transform of those primitives applies, a batch of starts under vmap included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.avals import get_aval
from ..core.libraries import is_library_array
from ..numpy import expand_dims, squeeze, ufuncs
from ..numpy.indexing import at
from ..numpy.operands import Array, ArrayLike, concrete_value, shape_of
from ..numpy.operands import operand as as_operand
from ..primitives import indexing
from ..primitives.indexing import StaticIndex

__all__ = [
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
]


def _start_list(x_shape: tuple[int, ...], start_indices: Any, what: str) -> list[Any]:
    """The start indices as one scalar per axis of x: a sequence as given, a 1-d
    array (NumPy's or traced) split into its elements."""
    if isinstance(start_indices, (list, tuple)):
        starts = list(start_indices)
    else:
        shape = get_aval(start_indices).shape
        if len(shape) != 1:
            raise ValueError(f"{what}: the start indices must be a sequence of scalars or a 1-d array, "
                             f"got an array of shape {shape}")
        starts = [start_indices[k] for k in range(shape[0])]
    if len(starts) != len(x_shape):
        raise ValueError(f"{what}: {len(starts)} start indices for an operand of shape {x_shape}: "
                         f"give one per axis ({len(x_shape)})")
    return starts


def _clamped_start(start: Any, n: int, size: int, allow_negative: bool, what: str) -> Any:
    """`start` counted from the end if negative (and allowed), then clamped into
    [0, n - size]: an int when fgrad knows it, else a traced integer scalar."""
    value = concrete_value(start, None)
    if value is not None and not is_library_array(value):
        arr = np.asarray(value)
        if arr.ndim != 0 or arr.dtype.kind not in "iu":
            raise TypeError(f"{what}: each start index must be an integer scalar, got {arr.dtype} of shape "
                            f"{arr.shape}: {value!r}")
        i = int(arr)
        if i < 0 and not allow_negative:
            raise ValueError(f"{what}: index {i} is out of bounds for an axis of size {n} with "
                             "allow_negative_indices=False")
        i = i + n if i < 0 else i
        return min(max(i, 0), n - size)
    aval = get_aval(start)
    if aval.ndim != 0 or aval.dtype.kind not in "iu":
        raise TypeError(f"{what}: each start index must be an integer scalar, got a traced "
                        f"{aval.str_short()}")
    if allow_negative and aval.dtype.kind == "i":
        start = ufuncs.where(ufuncs.less(start, 0), ufuncs.add(start, n), start)
    return ufuncs.clip(start, 0, n - size)


def _negatives(allow: bool | Sequence[bool], rank: int) -> list[bool]:
    return [bool(allow)] * rank if isinstance(allow, (bool, np.bool_)) else [bool(a) for a in allow]


def _positions(x_shape: tuple[int, ...], starts: list[Any], sizes: Sequence[int]) -> tuple[Any, ...]:
    """The block of `sizes` at `starts` (clamped, some traced) as a NumPy index: an
    array of positions per axis up to the last that is traced or not taken
    whole, each shaped to broadcast to the block."""
    covered = 1 + max(k for k, (s, n, m) in enumerate(zip(starts, sizes, x_shape))
                      if not isinstance(s, int) or n != m)
    entries: list[Any] = []
    for k in range(covered):
        lay = (1,) * k + (sizes[k],) + (1,) * (covered - k - 1)
        if isinstance(starts[k], int):
            entries.append(np.arange(starts[k], starts[k] + sizes[k]).reshape(lay))
        else:
            entries.append(ufuncs.add(np.arange(sizes[k]).reshape(lay), starts[k]))
    return tuple(entries)


def _slices(starts: list[Any], sizes: Sequence[int]) -> StaticIndex | None:
    """The block as static slices when fgrad knows every start, else None."""
    if all(isinstance(s, int) for s in starts):
        return StaticIndex(slice(s, s + n) for s, n in zip(starts, sizes))
    return None


def _sizes(x_shape: tuple[int, ...], slice_sizes: Sequence[int], what: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(n) for n in slice_sizes)
    except TypeError:
        raise TypeError(f"{what}: slice_sizes must be a sequence of ints, got {slice_sizes!r}") from None
    if len(sizes) != len(x_shape):
        raise TypeError(f"{what}: slice_sizes {sizes} must have one size per axis of the operand, "
                        f"of shape {x_shape}")
    if any(n < 0 or n > m for n, m in zip(sizes, x_shape)):
        raise TypeError(f"{what}: slice_sizes {sizes} must be between 0 and the operand's shape {x_shape}")
    return sizes


def dynamic_slice(operand: ArrayLike, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Array:
    """The block of shape `slice_sizes` of `operand` that starts at `start_indices`
    (one integer per axis, which may be traced), as JAX's `lax.dynamic_slice`: a
    negative start counts from the end, then each start is clamped so that the
    block fits (``allow_negative_indices=False``: a negative start is clamped to 0).

    >>> import numpy as np
    >>> dynamic_slice(np.arange(12).reshape(3, 4), (1, 1), (2, 3))
    array([[ 5,  6,  7],
           [ 9, 10, 11]])
    >>> dynamic_slice(np.arange(5), (4,), (3,))
    array([2, 3, 4])
    """
    x = as_operand(operand)
    shape = shape_of(x)
    sizes = _sizes(shape, slice_sizes, "dynamic_slice")
    starts = _start_list(shape, start_indices, "dynamic_slice")
    negatives = _negatives(allow_negative_indices, len(shape))
    starts = [_clamped_start(s, n, m, neg, "dynamic_slice")
              for s, n, m, neg in zip(starts, shape, sizes, negatives)]
    slices = _slices(starts, sizes)
    if slices is not None:  # a static slice (a view eagerly), whose transpose is cheap
        return indexing.getitem(x, idx=slices)
    return at(x)[_positions(shape, starts, sizes)].get()


def dynamic_update_slice(operand: ArrayLike, update: ArrayLike, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Array:
    """A copy of `operand` with the block at `start_indices` (one integer per axis,
    which may be traced) replaced by `update`, of the operand's rank and dtype, as
    JAX's `lax.dynamic_update_slice`: starts are counted and clamped as
    `dynamic_slice`'s, so that the whole update fits.

    >>> import numpy as np
    >>> dynamic_update_slice(np.zeros(6), np.ones(3), (5,))
    array([0., 0., 0., 1., 1., 1.])
    """
    x, u = as_operand(operand), as_operand(update)
    shape, u_aval = shape_of(x), get_aval(u)
    if u_aval.ndim != len(shape) or any(n > m for n, m in zip(u_aval.shape, shape)):
        raise TypeError(f"dynamic_update_slice: the update, of shape {u_aval.shape}, must have the operand's "
                        f"rank and fit in its shape {shape}")
    if u_aval.dtype != get_aval(x).dtype:
        raise TypeError(f"dynamic_update_slice: the update's dtype {u_aval.dtype} differs from the operand's "
                        f"{get_aval(x).dtype}; convert it with .astype first")
    starts = _start_list(shape, start_indices, "dynamic_update_slice")
    negatives = _negatives(allow_negative_indices, len(shape))
    starts = [_clamped_start(s, n, m, neg, "dynamic_update_slice")
              for s, n, m, neg in zip(starts, shape, u_aval.shape, negatives)]
    slices = _slices(starts, u_aval.shape)
    if slices is not None:
        return at(x)[tuple(slices)].set(u)
    # (in bounds after the clamping: "clip" saves the scatter its bounds mask)
    return at(x)[_positions(shape, starts, u_aval.shape)].set(u, mode="clip")


def _one_axis(x: Any, start: Any, axis: int) -> tuple[int, list[Any], list[bool]]:
    """The axis, normalized, and the starts and negative-index flags that put
    `start` on it and 0 on every other axis."""
    rank = len(shape_of(x))
    axis = normalize_axis_index(int(axis), rank)
    starts: list[Any] = [0] * rank
    starts[axis] = start
    return axis, starts, [k == axis for k in range(rank)]


def dynamic_slice_in_dim(operand: ArrayLike, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Array:
    """``operand[..., start_index:start_index + slice_size]`` along `axis`, the start
    possibly traced and clamped as `dynamic_slice`'s (JAX's `lax.dynamic_slice_in_dim`).

    >>> import numpy as np
    >>> dynamic_slice_in_dim(np.arange(12).reshape(3, 4), 1, 2, axis=1)
    array([[ 1,  2],
           [ 5,  6],
           [ 9, 10]])
    """
    x = as_operand(operand)
    axis, starts, negatives = _one_axis(x, start_index, axis)
    sizes = list(shape_of(x))
    sizes[axis] = int(slice_size)
    return dynamic_slice(x, starts, sizes,
                         allow_negative_indices=[n and allow_negative_indices for n in negatives])


def dynamic_index_in_dim(operand: ArrayLike, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Array:
    """``operand[..., index]`` along `axis`, the index possibly traced and clamped into
    the axis (JAX's `lax.dynamic_index_in_dim`); `keepdims` keeps the axis, of size 1.

    >>> import numpy as np
    >>> dynamic_index_in_dim(np.arange(12).reshape(3, 4), 1, axis=1, keepdims=False)
    array([1, 5, 9])
    """
    x = as_operand(operand)
    out = dynamic_slice_in_dim(x, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, normalize_axis_index(int(axis), len(shape_of(x))))


def dynamic_update_slice_in_dim(operand: ArrayLike, update: ArrayLike, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Array:
    """A copy of `operand` with `update` written along `axis` from `start_index`
    (possibly traced, clamped so the update fits), at 0 along the other axes
    (JAX's `lax.dynamic_update_slice_in_dim`).

    >>> import numpy as np
    >>> dynamic_update_slice_in_dim(np.zeros((3, 2)), np.ones((1, 2)), 1, axis=0)
    array([[0., 0.],
           [1., 1.],
           [0., 0.]])
    """
    x = as_operand(operand)
    _, starts, negatives = _one_axis(x, start_index, axis)
    return dynamic_update_slice(x, update, starts,
                                allow_negative_indices=[n and allow_negative_indices for n in negatives])


def dynamic_update_index_in_dim(operand: ArrayLike, update: ArrayLike, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Array:
    """A copy of `operand` with position `index` (possibly traced, clamped into the
    axis) along `axis` replaced by `update`, which may lack that axis (JAX's
    `lax.dynamic_update_index_in_dim`).

    >>> import numpy as np
    >>> dynamic_update_index_in_dim(np.zeros((3, 2)), np.ones(2), 2, axis=0)
    array([[0., 0.],
           [0., 0.],
           [1., 1.]])
    """
    x, u = as_operand(operand), as_operand(update)
    rank = len(shape_of(x))
    axis = normalize_axis_index(int(axis), rank)
    if get_aval(u).ndim == rank - 1:
        u = expand_dims(u, axis)
    return dynamic_update_slice_in_dim(x, u, index, axis, allow_negative_indices=allow_negative_indices)
