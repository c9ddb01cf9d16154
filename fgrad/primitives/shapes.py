"""Primitives that move data without arithmetic: reshape, transpose,
broadcast_to, concatenate.

Each is the namespace's function (the Array API's reshape, permute_dims,
broadcast_to, concat); NumPy's arrays take their methods, or for small
broadcasts a filled array, which cost less than the functions' wrappers.
All are linear, so each jvp is the primitive itself on the tangent and
each transpose is the inverse movement (for broadcast_to, a sum; for
concatenate, slices).
`squeeze`, `expand_dims`, `ravel` and `.T` are written on these in the NumPy layer.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, get_aval
from ..core.libraries import cast, is_dask
from ..core.rules import batch_rules, emit_rules, packing, transpose_rules, unroll_rules
from ..core.trace import Primitive
from ..ir.unroll import movement_rule
from . import batching, indexing
from . import derivatives as d

__all__ = ["reshape", "transpose", "broadcast_to", "concatenate"]


# The signatures of the binds below. Their parameters are keywords: a bind passes
# positional arguments on as operands, so `broadcast_to(x, shape)` would make the
# shape an operand and fail only when a transform reaches it. Typed this way,
# mypy rejects such a call at no run-time cost.
class _Reshape(Protocol):
    def __call__(self, x: Any, /, *, new_shape: tuple[int, ...]) -> Any: ...


class _Transpose(Protocol):
    def __call__(self, x: Any, /, *, axes: tuple[int, ...]) -> Any: ...


class _BroadcastTo(Protocol):
    def __call__(self, x: Any, /, *, shape: tuple[int, ...]) -> Any: ...


class _Concatenate(Protocol):
    def __call__(self, *xs: Any, axis: int) -> Any: ...


def _reshape_aval(x: ShapedArray, *, new_shape: tuple[int, ...]) -> ShapedArray:
    if math.prod(new_shape) != x.size:  # (math's: numpy.prod's wrapper costs microseconds)
        raise ValueError(f"cannot reshape array of size {x.size} into shape {new_shape}")
    return ShapedArray(new_shape, x.dtype)


def _reshape(xp: Any, x: Any, *, new_shape: tuple[int, ...]) -> Any:
    """Dask reshapes by merging or splitting adjacent axes only ((6, 4) to
    (2, 3, 4), not (2, 3) to (3, 2), which raises NotImplementedError): any
    other reshape merges all axes, then splits them, the chunks of the
    leading axes kept."""
    x = cast(xp, x)
    if not is_dask(xp):
        return xp.reshape(x, new_shape)
    try:
        return xp.reshape(x, new_shape)
    except NotImplementedError:
        return xp.reshape(xp.reshape(x, (-1,)), new_shape)


def _reshape_numpy(x: Any, *, new_shape: tuple[int, ...]) -> Any:
    try:
        return x.reshape(new_shape)  # the method: far cheaper than numpy.reshape's wrapper
    except AttributeError:  # a Python scalar
        return np.reshape(x, new_shape)


reshape_p = Primitive("reshape", _reshape, _reshape_aval, numpy=_reshape_numpy)
d.deflinear(reshape_p)
transpose_rules[reshape_p] = lambda ct, x, *, new_shape: [reshape(ct, new_shape=x.aval.shape)]


def _reshape_batch(args: list[Any], dims: list[Any], *, new_shape: tuple[int, ...]) -> tuple[Any, int]:
    x = batching.move_axis(args[0], dims[0], 0)
    return reshape(x, new_shape=(get_aval(x).shape[0], *new_shape)), 0


batch_rules[reshape_p] = _reshape_batch


def _transpose_aval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} are not a permutation of the {x.ndim} axes of {x}")
    return ShapedArray(tuple(x.shape[a] for a in axes), x.dtype)


def _transpose_numpy(x: Any, *, axes: tuple[int, ...]) -> Any:
    try:
        return x.transpose(axes)  # the method: cheaper than numpy.transpose's wrapper
    except AttributeError:  # a Python scalar
        return np.transpose(x, axes)


transpose_p = Primitive(
    "transpose", lambda xp, x, *, axes: xp.permute_dims(cast(xp, x), axes), _transpose_aval,
    numpy=_transpose_numpy,
)


def _transpose_emit(args: list[str], avals: list[ShapedArray], *, axes: tuple[int, ...]) -> str | None:
    """jit's code: the method, on an array (a Python scalar has none)."""
    if not avals[0].shape or avals[0].weak_type:
        return None
    if len(axes) == 2 and axes == (1, 0):
        return f"{args[0]}.T"
    return f"{args[0]}.transpose({tuple(int(a) for a in axes)!r})"


emit_rules[transpose_p] = _transpose_emit
d.deflinear(transpose_p)
transpose_rules[transpose_p] = lambda ct, x, *, axes: [
    transpose(ct, axes=tuple(int(i) for i in np.argsort(axes)))
]
batch_rules[transpose_p] = lambda args, dims, *, axes: (
    transpose(batching.move_axis(args[0], dims[0], 0), axes=(0, *(a + 1 for a in axes))), 0
)


def _broadcast_to_aval(x: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    if len(x.shape) > len(shape) or broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to shape {shape}")
    return ShapedArray(shape, x.dtype)


def _broadcast_to_numpy(x: Any, *, shape: tuple[int, ...]) -> Any:
    # A broadcast view costs no memory but ~3 us to set up; below a few
    # thousand elements filling a new array is cheaper.
    if math.prod(shape) <= 4096:
        out = np.empty(shape, x.dtype if hasattr(x, "dtype") else np.result_type(x))
        out[...] = x
        return out
    return np.broadcast_to(x, shape)


broadcast_to_p = Primitive(
    "broadcast_to", lambda xp, x, *, shape: xp.broadcast_to(cast(xp, x), shape), _broadcast_to_aval,
    numpy=_broadcast_to_numpy,
)
d.deflinear(broadcast_to_p)
transpose_rules[broadcast_to_p] = lambda ct, x, *, shape: [d.unbroadcast(ct, x.aval)]


def _broadcast_to_batch(args: list[Any], dims: list[Any], *, shape: tuple[int, ...]) -> tuple[Any, int]:
    x = batching.move_axis(args[0], dims[0], 0)
    size, *example = get_aval(x).shape
    x = reshape(x, new_shape=(size,) + (1,) * (len(shape) - len(example)) + tuple(example))
    return broadcast_to(x, shape=(size, *shape)), 0


batch_rules[broadcast_to_p] = _broadcast_to_batch


reshape: _Reshape = reshape_p.bind
transpose: _Transpose = transpose_p.bind
broadcast_to: _BroadcastTo = broadcast_to_p.bind


def _concatenate_aval(*xs: ShapedArray, axis: int) -> ShapedArray:
    first = xs[0]
    if any(x.ndim != first.ndim for x in xs) or first.ndim == 0:
        raise ValueError("all the input arrays must have the same number of dimensions (at least 1)")
    for x in xs:
        if any(n != m for i, (n, m) in enumerate(zip(x.shape, first.shape)) if i != axis):
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match "
                f"exactly, but got shapes {[x.shape for x in xs]}"
            )
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    dtype = np.result_type(*(x.dtype for x in xs))
    return ShapedArray(tuple(shape), dtype)


def _concatenate_transpose(ct: Any, *xs: Any, axis: int) -> list[Any]:
    cts: list[Any] = []
    start = 0
    for x in xs:
        size = (x.aval if d.is_linear(x) else get_aval(x)).shape[axis]
        if d.is_linear(x):
            idx = indexing.StaticIndex((slice(None),) * axis + (slice(start, start + size),))
            cts.append(d.unbroadcast(indexing.getitem(ct, idx=idx), x.aval))
        else:
            cts.append(None)
        start += size
    return cts


def _concatenate(xp: Any, *xs: Any, axis: int) -> Any:
    # In NumPy's common dtype: the standard does not promote across kinds.
    dtype = _concatenate_aval(*(get_aval(x) for x in xs), axis=axis).dtype
    return xp.concat([cast(xp, x, dtype) for x in xs], axis=axis)


concatenate_p = Primitive(
    "concatenate", _concatenate, _concatenate_aval, numpy=lambda *xs, axis: np.concatenate(xs, axis=axis)
)
d.deflinear(concatenate_p)
transpose_rules[concatenate_p] = _concatenate_transpose


def _concatenate_batch(args: list[Any], dims: list[Any], *, axis: int) -> tuple[Any, int]:
    size = batching.batch_size(args, dims)
    moved = [batching.with_batch_axis(x, dim, size) for x, dim in zip(args, dims)]
    return concatenate(*moved, axis=axis + 1), 0


batch_rules[concatenate_p] = _concatenate_batch

concatenate: _Concatenate = concatenate_p.bind

for _p in (reshape_p, transpose_p, broadcast_to_p, concatenate_p):
    unroll_rules[_p] = movement_rule(_p)
packing[reshape_p], packing[concatenate_p] = "reshape", "concatenate"
