"""What fgrad.numpy accepts: the `ArrayLike`/`Array` aliases, conversion of
operands under a transform, axis normalization, the concrete values of
arguments that fix a result's shape, and the refusal of `out=`; and the fast
path of its functions.

Every public function starts with the fast path: with no transform active
(`ctx.trace is EVAL_TRACE`) it calls NumPy directly. A function whose
signature is NumPy's own gets it from `numpy_when_eager`; one that checks,
maps or converts its arguments first writes its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeAlias, TypeVar

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.avals import get_aval
from ..core.errors import ConcretizationTypeError
from ..core.libraries import is_library_array
from ..core.trace import EVAL_TRACE, Tracer, ctx, passthrough_types, transforming

__all__ = [
    "Array", "ArrayLike", "DIRECT_TYPES", "operand", "normalize_axes", "axes_in_order", "shape_of", "ndim_of",
    "concrete_value", "static_argument", "check_no_out", "numpy_when_eager", "EAGER_NUMPY",
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
    """`x` as a value primitives take: arrays (NumPy's or another library's,
    which a transform computes on without converting), NumPy/Python scalars
    and tracers as they are; sequences converted with numpy.asarray."""
    if isinstance(x, _DIRECT) or is_library_array(x):
        return x
    if isinstance(x, (list, tuple)) and _contains_tracer(x):
        from .creation import array  # imported here: creation builds on this module

        return array(x)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"fgrad.numpy cannot use a value of type {type(x).__name__} as an array: {x!r}")
    return arr


def _contains_tracer(x: Any) -> bool:
    """Whether the nested list `x` holds a tracer or another library's array,
    which primitives stack (numpy.asarray would convert it to NumPy)."""
    if isinstance(x, Tracer) or is_library_array(x):
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


def axes_in_order(axis: int | Sequence[int], ndim: int, argname: str | None = None) -> tuple[int, ...]:
    """`axis` as non-negative ints in the order given (NumPy's normalize_axis_tuple:
    its AxisError, and a ValueError for a repeated axis)."""
    return tuple(normalize_axis_tuple(axis, ndim, argname))


def concrete_value(x: Any, message: str | None) -> Any:
    """`x` with the concrete value in place of each tracer (also inside lists,
    tuples and dicts): the tracers of grad, jvp and vjp carry one. Where no transform
    knows it (make_jaxpr, jit, vmap): None if `message` is None, else a
    ConcretizationTypeError with `message`, in which ``{aval}`` and
    ``{transform}`` stand for the traced value's type and its transform."""
    if isinstance(x, (list, tuple)):
        return type(x)(concrete_value(v, message) for v in x)
    if isinstance(x, dict):
        return {k: concrete_value(v, message) for k, v in x.items()}
    while isinstance(x, Tracer):
        try:
            x = x._concrete("value")
        except ConcretizationTypeError as err:
            if message is None:
                return None
            raise ConcretizationTypeError(
                message.format(aval=x.aval.str_short(), transform=x._trace.transform)
            ) from err
    return x


def static_argument(x: Any, function: str, argument: str) -> Any:
    """The concrete value of `argument` of fgrad.numpy.`function`, an argument that
    fixes the shape or arrangement of the result (a shift, repeat count, pad
    width), with an error naming it when only its type is known."""
    return concrete_value(
        x,
        f"fgrad.numpy.{function} needs `{argument}` as a concrete value: it fixes the shape or the "
        f"arrangement of the result, but it is a traced {{aval}} value under `{{transform}}`, where only "
        "its type is known. Pass it as a constant (a Python int or NumPy array the function closes "
        "over, functools.partial, or jit's static_argnums) rather than as a traced argument.",
    )


def check_no_out(out: Any, function: str) -> None:
    """The TypeError for `out=` given to fgrad.numpy.`function` under a transform."""
    if out is not None:
        raise TypeError(
            f"fgrad.numpy.{function} got out=, which is not supported under a transform: traced "
            "arrays cannot be written to. Use the returned value instead."
        )


P = ParamSpec("P")
R = TypeVar("R")

#: Each function made by `numpy_when_eager`, with the NumPy function it calls when no
#: transform is active.
EAGER_NUMPY: dict[Callable[..., Any], Callable[..., Any]] = {}


def numpy_when_eager(np_fn: Callable[..., Any]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The fast path of an fgrad.numpy function that has `np_fn`'s signature (the same
    parameters, in the same order, of the same kinds, with the same defaults): with no
    transform active, `np_fn` called with the caller's arguments as given; under one, the
    decorated function, which handles traced values only. A wrong call raises what it
    raised before (Python's TypeError for the same signature, from either function).
    The decorated function is one frame further from its caller: a warning it issues
    for the caller's line takes one more stacklevel.
    """

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        _ctx, _eval, _transforming = ctx, EVAL_TRACE, transforming

        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            # No thread transforms (one plain attribute), or not this one (the thread-local).
            if not _transforming.threads or _ctx.trace is _eval:
                return np_fn(*args, **kwargs)
            return fn(*args, **kwargs)

        EAGER_NUMPY[call] = np_fn
        return call

    return decorate
