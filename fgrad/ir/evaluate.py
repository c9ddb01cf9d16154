"""Running a jaxpr: bind each equation's primitive on the current trace.

Because it binds rather than calls NumPy, evaluating a jaxpr under a transform
transforms it: `eval_jaxpr` is how jaxprs are differentiated, staged again or
simply run. Each value is released after its last use (`passes.last_uses`),
so that a long jaxpr does not hold all its intermediates at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.trace import Trace, ctx
from .jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from .passes import last_uses

__all__ = ["eval_jaxpr", "eval_closed_now", "evaluation_trace"]


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Evaluate `jaxpr` on `args`; returns the list of its outputs.

    >>> import fgrad, fgrad.numpy as fnp
    >>> closed = fgrad.make_jaxpr(lambda x: x * 2.0)(1.0)
    >>> eval_jaxpr(closed.jaxpr, closed.consts, fnp.float64(3.0))
    [np.float64(6.0)]
    """
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"the jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(a: Var | Literal) -> Any:
        return a.val if isinstance(a, Literal) else env[a]

    release = last_uses(jaxpr)
    for i, eqn in enumerate(jaxpr.eqns):
        outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, outs))
        else:
            env[eqn.outvars[0]] = outs
        for v in release.get(i, ()):
            del env[v]
    return [read(a) for a in jaxpr.outvars]


def evaluation_trace() -> Trace:
    """The trace at the root of the current one: evaluation, or evaluation
    with NaN checks (debug_nans)."""
    root = ctx.trace
    while root.parent is not None:
        root = root.parent
    return root


def eval_closed_now(closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluate `closed` with evaluation current: the impl of a higher-order
    primitive, whose equations are computed, not handed again to whichever
    transform passed the primitive down to evaluation."""
    prev = ctx.trace
    ctx.trace = evaluation_trace()
    try:
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    finally:
        ctx.trace = prev
