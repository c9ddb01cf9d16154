"""What fgrad.numpy accepts: the `ArrayLike`/`Array` aliases, conversion of
operands under a transform, and axis normalization.

Every public function starts with the fast path: with no transform active
(`ctx.trace is EVAL_TRACE`) it calls NumPy directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np

from ..core.avals import get_aval
from ..core.trace import Tracer, passthrough_types

__all__ = [
    "Array", "ArrayLike", "DIRECT_TYPES", "operand", "normalize_axes", "shape_of", "ndim_of",
]

#: What fgrad.numpy functions return: a NumPy array or scalar, or a tracer
#: (which supports the same operators, attributes and methods) under a transform.
Array: TypeAlias = Any
#: What they accept: the above, Python scalars, and (nested) lists of numbers.
ArrayLike: TypeAlias = Any

_DIRECT = (Tracer, np.ndarray, np.generic, float, int, bool, complex)

#: Exact types `operand` returns unchanged: `type(x) in DIRECT_TYPES` first
#: saves the call on the hot path. It holds every Tracer subclass too.
DIRECT_TYPES = passthrough_types
DIRECT_TYPES.update({np.ndarray, np.float64, np.float32, float, int, bool, complex})


def operand(x: Any) -> Any:
    """`x` as a value primitives take: arrays, NumPy/Python scalars and tracers
    as they are; sequences converted with numpy.asarray."""
    if isinstance(x, _DIRECT):
        return x
    if isinstance(x, (list, tuple)) and _contains_tracer(x):
        from .creation import array  # imported here: creation builds on this module

        return array(x)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"fgrad.numpy cannot use a value of type {type(x).__name__} as an array: {x!r}")
    return arr


def _contains_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    return isinstance(x, (list, tuple)) and any(_contains_tracer(v) for v in x)


def shape_of(x: Any) -> tuple[int, ...]:
    shape = getattr(x, "shape", None)  # arrays, NumPy scalars, tracers
    return get_aval(x).shape if shape is None else shape


def ndim_of(x: Any) -> int:
    return get_aval(x).ndim


def normalize_axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Axes as a sorted tuple of non-negative ints (None: all axes); NumPy's
    AxisError for an axis out of range or repeated."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim if ndim else a)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))
