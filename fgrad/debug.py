"""fgrad.debug: looking at values and gradients as they flow, functionally.

* `print(fmt, *args)` prints when the computation runs — at once in plain
  Python, with the primal values under grad/jvp/vjp, and when a jaxpr made
  by make_jaxpr is evaluated (it is an equation of the jaxpr, not a side
  effect of tracing).
* `tap_grad(x, fn)` returns x unchanged and calls `fn(cotangent)` with the
  cotangent that reaches x in the backward pass: PyTorch's `register_hook`.
* `debug_nans()` (also `fgrad.debug_nans`; or FGRAD_DEBUG_NANS=1 in the
  environment) checks the result of every primitive and raises
  FloatingPointError at the first NaN, naming the primitive and, in a
  backward pass, the forward operation whose derivative it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from .api.pytree import tree_flatten
from .core.avals import ShapedArray
from .core.trace import EVAL_TRACE, EvalTrace, Primitive, ctx, transforming

__all__ = ["print", "tap_grad", "debug_nans"]


from .higher_order.effects import Named, debug_print_p, tap_grad_p


def print(fmt: str, *args: Any, **kwargs: Any) -> None:
    """Print `fmt.format(*args, **kwargs)` with concrete values when the
    computation runs (args may be pytrees of arrays or traced values).

    >>> print("x = {}", 2.0)
    x = 2.0
    """
    leaves, tree = tree_flatten((args, kwargs))
    debug_print_p.bind(*leaves, fmt=fmt, tree=tree)


# --- tap_grad ----------------------------------------------------------------------


def tap_grad(x: Any, fn: Callable[[Any], Any]) -> Any:
    """`x`, unchanged; in the backward pass `fn` is called with the cotangent
    that reaches `x` (the functional form of PyTorch's `register_hook`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sin(tap_grad(x * 2.0, lambda g: print("g = {}", g))))(0.0)
    g = 1.0
    np.float64(2.0)
    """
    if ctx.trace is EVAL_TRACE:
        return x
    return tap_grad_p.bind(x, callback=Named(fn))


# --- debug_nans --------------------------------------------------------------------


def _nan_where(x: Any) -> str | None:
    arr = np.asarray(x) if isinstance(x, (np.ndarray, np.generic, float, complex)) else None
    if arr is None or arr.dtype.kind not in "fc" or not np.isnan(arr).any():
        return None
    if arr.ndim == 0:
        return "its (scalar) result"
    index = tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])
    return f"{int(np.isnan(arr).sum())} of {arr.size} entries, first at index {index}"


class _NanCheckingTrace(EvalTrace):
    """Evaluation that checks every primitive's result for NaN."""

    __slots__ = ()

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        out = prim.impl(*args, **params)
        for i, o in enumerate(out if prim.multiple_results else [out]):
            where = _nan_where(o)
            if where is not None:
                shapes = ", ".join(str(ShapedArray(np.shape(a), np.result_type(a))) for a in args)
                inputs_nan = any(_nan_where(a) for a in args)
                raise FloatingPointError(
                    f"the primitive `{prim.name}` produced NaN ({where}"
                    + (f", output {i}" if prim.multiple_results else "")
                    + f") from inputs {shapes}"
                    + (" that already held NaN" if inputs_nan else "")
                    + " (debug_nans is on)"
                )
        return out


_NAN_TRACE = _NanCheckingTrace(None, "evaluation with NaN checks")


class debug_nans:
    """Raise FloatingPointError at the first primitive whose result holds NaN.

    Use it as a context manager around (not inside) transformed code:

    >>> import fgrad, fgrad.numpy as fnp
    >>> with debug_nans():
    ...     fgrad.grad(lambda x: fnp.sqrt(x) * 0.0)(0.0)  # doctest: +SKIP
    FloatingPointError: the primitive `mul` produced NaN ...

    Setting FGRAD_DEBUG_NANS=1 in the environment turns it on for the whole
    process, every thread included; `with debug_nans():` for the thread that
    enters it. Evaluation is slower while it is on.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.prev: Any = None

    def __enter__(self) -> debug_nans:
        if ctx.trace not in (EVAL_TRACE, _NAN_TRACE):
            raise RuntimeError(
                "debug_nans must be entered outside any transformation (it replaces evaluation "
                "itself); put the `with debug_nans():` around the call to grad/vjp/..."
            )
        self.prev = ctx.trace
        transforming.enter(ctx.__dict__)  # evaluation itself replaced: no NumPy fast path for fgrad.numpy
        ctx.trace = _NAN_TRACE if self.enabled else EVAL_TRACE
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        ctx.trace = self.prev
        transforming.leave(ctx.__dict__)


if os.environ.get("FGRAD_DEBUG_NANS", "") not in ("", "0"):
    type(ctx).initial = _NAN_TRACE  # the trace every new thread starts with
    transforming.hold_forever()
    ctx.trace = _NAN_TRACE
