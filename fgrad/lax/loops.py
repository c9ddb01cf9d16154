"""`while_loop` and `fori_loop` (JAX's `lax`): the condition and the body are
staged at the carry and bound as one `while` primitive
(`fgrad/higher_order/while_loop.py`, with its rules, reverse mode included).
`fori_loop` with bounds known when it is called is a `scan` (its number of
steps is fixed); with traced bounds, a `while_loop` over (i, value)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..api.pytree import tree_unflatten
from ..core.avals import get_aval
from ..higher_order._common import concrete
from ..higher_order.while_loop import while_p
from ._common import avals_of, check_same, leaves_of, stage

__all__ = ["while_loop", "fori_loop", "while_p"]


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """`val = body_fun(val)` while `cond_fun(val)`, from `init_val` (JAX's
    `lax.while_loop`). The body must return a carry of the same structure,
    shapes and dtypes. Differentiable in both modes, under jit and vmap too
    (reverse mode keeps every iteration's residuals: memory grows with the
    number of iterations; see the module's docstring).

    >>> import fgrad
    >>> while_loop(lambda x: x < 10.0, lambda x: x * 2.0, 1.0)
    np.float64(16.0)
    >>> fgrad.grad(lambda x: while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x))(1.0)
    np.float64(16.0)
    """
    leaves, tree = leaves_of(init_val)
    avals = avals_of(leaves)
    test = stage(cond_fun, [tree], [avals], getattr(cond_fun, "__name__", "cond_fun"))
    (pred,) = test.out_avals if len(test.out_avals) == 1 else (None,)
    if pred is None or pred.shape != () or pred.dtype != np.dtype(bool):
        got = ", ".join(a.str_short() for a in test.out_avals)
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but it returns ({got})")
    body = stage(body_fun, [tree], [avals], getattr(body_fun, "__name__", "body_fun"))
    check_same("while_loop: body_fun must return a carry of the type it takes (the carry given, then the "
               "body's result)", tree, avals, body.out_tree, body.out_avals, init_val)
    outs = while_p.bind(*test.consts, *body.consts, *leaves, cond_jaxpr=test.jaxpr, body_jaxpr=body.jaxpr,
                        cond_nconsts=len(test.consts), body_nconsts=len(body.consts))
    return tree_unflatten(tree, outs)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any, *,
              checkpoints: int | None = None) -> Any:
    """`val = body_fun(i, val)` for i from `lower` to `upper` (JAX's
    `lax.fori_loop`). With bounds known when it is called it is a `scan`
    (`checkpoints=k` as scan's: reverse mode keeps at most k + 1 carries and
    recomputes the rest on the binomial schedule); with traced bounds, a
    `while_loop` (reverse mode works for both).

    >>> fori_loop(0, 4, lambda i, x: x + i, 0.0)
    np.float64(6.0)
    """
    lo, hi = concrete(lower), concrete(upper)
    for name, v in (("lower", lower), ("upper", upper)):
        aval = get_aval(leaves_of(v)[0][0]) if leaves_of(v)[0] else None
        if aval is None or aval.shape != () or aval.dtype.kind not in "iu":
            raise TypeError(f"fori_loop: `{name}` must be an integer scalar, not {v!r}")
    if lo is not None and hi is not None and not _traced(lower) and not _traced(upper):
        from .scan import scan

        start = int(lo)

        def step(carry: Any, _: Any) -> Any:
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, out), _ = scan(step, (np.asarray(start, get_aval(leaves_of(lower)[0][0]).dtype), init_val), None,
                           length=max(int(hi) - start, 0), checkpoints=checkpoints)
        return out
    if checkpoints is not None:
        raise ValueError("fori_loop: checkpoints needs bounds known when fori_loop is called (it makes the "
                         "loop a scan of a fixed number of steps); with traced bounds it is a while_loop")

    def goes_on(carry: Any) -> Any:
        return carry[0] < upper

    def step_once(carry: Any) -> Any:
        i, val = carry
        return i + 1, body_fun(i, val)

    return while_loop(goes_on, step_once, (lower, init_val))[1]


def _traced(x: Any) -> bool:
    from ..core.trace import Tracer

    return isinstance(x, Tracer)
