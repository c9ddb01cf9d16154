"""Helpers that build derivative rules, shared by every primitive family.

* `defjvp(prim, *partials)`: the jvp rule from one linear function per
  argument, ``partial(g, ans, *primals, **params)``, giving that argument's
  contribution to the output tangent. Contributions are summed, then broadcast
  and cast to the output, so each partial is the calculus and nothing else.
  (Elementwise primitives give plain derivative factors instead: `JVPFactors`.)
* `deflinear(prim)`, `defbilinear(prim)`: the jvp follows from the structure
  (`LINEAR`, `BILINEAR` in core.rules).
* `defnojvp(prim)`: integer or boolean results (argmax, argsort, comparisons
  of whole arrays): no tangent flows through.
* `unbroadcast(ct, aval)`: broadcasting handled once for every transpose rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.libraries import current_library
from ..core.rules import BILINEAR, LINEAR, UndefinedPrimal, jvp_rules
from ..core.trace import Primitive, Tracer

__all__ = [
    "defjvp", "deflinear", "defbilinear", "defnojvp", "zeros_like_value", "unbroadcast", "fit_to", "zeros",
    "is_linear", "zeros_now",
]


def defjvp(prim: Primitive, *partials: Callable[..., Any] | None) -> None:
    """Register the jvp of `prim` from one partial per argument (None: that
    argument is not differentiable, e.g. the condition of `where`)."""

    def jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[Any, Any]:
        ans = prim.bind(*primals, **params)
        out = None
        for partial, t in zip(partials, tangents):
            if t is not None and partial is not None:
                contribution = partial(t, ans, *primals, **params)
                out = contribution if out is None else elementwise.add(out, contribution)
        return ans, None if out is None else fit_to(out, ans)

    jvp_rules[prim] = jvp


def deflinear(prim: Primitive) -> None:
    """`prim` is linear in all its arguments: its jvp is itself on the tangents."""
    jvp_rules[prim] = LINEAR


def defbilinear(prim: Primitive) -> None:
    """`prim` is a product, linear in each argument separately (matmul)."""
    jvp_rules[prim] = BILINEAR


def defnojvp(prim: Primitive) -> None:
    """`prim` has integer or boolean results: no tangent flows through it."""

    def jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[Any, None]:
        return prim.bind(*primals, **params), None

    jvp_rules[prim] = jvp


def is_linear(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def fit_to(t: Any, like: Any) -> Any:
    """`t` broadcast to the shape of `like` and cast to its dtype. (Their avals,
    not their own `.dtype`: either may be an array of another library, whose
    dtypes are not NumPy's.)"""
    want, have = _aval(like), _aval(t)
    if have.shape != want.shape:
        t = shapes.broadcast_to(t, shape=want.shape)
    if have.dtype != want.dtype:
        t = elementwise.convert_element_type(t, new_dtype=want.dtype)
    return t


def _aval(x: Any) -> Any:
    """What `x` is, as a shape and a NumPy dtype: a NumPy array or a tracer
    says itself (the common case, kept cheap); other values through get_aval."""
    return x if type(x) is np.ndarray or isinstance(x, Tracer) else get_aval(x)


def unbroadcast(ct: Any, aval: ShapedArray) -> Any:
    """Sum `ct` down to `aval.shape` (undoing NumPy broadcasting), cast to its
    dtype (compared as avals: `ct` may be an array of another library)."""
    shape = aval.shape
    ct_shape = _aval(ct).shape
    if ct_shape != shape:
        lead = len(ct_shape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(shape) if d == 1 and ct_shape[lead + i] != 1
        )
        if axes:
            ct = reductions.reduce_sum(ct, axes=axes)
        if _aval(ct).shape != shape:
            ct = shapes.reshape(ct, new_shape=shape)
    if _aval(ct).dtype != aval.dtype:
        ct = elementwise.convert_element_type(ct, new_dtype=aval.dtype)
    return ct


def zeros(aval: ShapedArray) -> Any:
    """Zeros of `aval`, as a primitive so that it is staged under make_jaxpr."""
    return shapes.broadcast_to(np.zeros((), aval.dtype), shape=aval.shape)


def zeros_now(aval: ShapedArray) -> Any:
    """Zeros of `aval` made now, in an impl, not staged: an array of the library
    the computation runs on (core/libraries.py), NumPy's by default."""
    lib = current_library()
    if lib is None:
        return np.zeros(aval.shape, aval.dtype)
    return lib.xp.zeros(aval.shape, dtype=lib.dtype(aval.dtype))


def zeros_like_value(x: Any) -> Any:
    return zeros(get_aval(x).strip_weak_type())


# The primitive modules build their rules with the helpers above, and the helpers
# bind their primitives: imported last, so that each side finds the other defined.
from . import elementwise, reductions, shapes  # noqa: E402
