"""Rewrites of jaxprs. Each pass takes a jaxpr and returns a new one.

Primitives are pure unless listed in `core.rules.effectful` (printing,
callbacks); an equation with an effect, or with a sub-jaxpr that has one, is
never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.rules import effectful
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var

__all__ = ["dce_jaxpr", "dce_closed_jaxpr", "has_effects", "last_uses"]


def has_effects(eqn: JaxprEqn) -> bool:
    """Whether `eqn` does anything besides computing its outputs."""
    if eqn.primitive in effectful:
        return True
    subs = [p for p in eqn.params.values() if isinstance(p, (Jaxpr, ClosedJaxpr))]
    return any(has_effects(e) for sub in subs for e in sub.eqns)


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> Jaxpr:
    """Drop equations no output depends on, except those with effects.

    With `used_outputs`, only the outputs marked True are kept. Constant
    variables that only dead equations used are dropped too, so the arrays
    behind them can be freed; the kept ones keep their order.
    """
    outvars = jaxpr.outvars if used_outputs is None else [a for a, u in zip(jaxpr.outvars, used_outputs) if u]
    live: set[Var] = {a for a in outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars) or has_effects(eqn):
            kept.append(eqn)
            live.update(a for a in eqn.invars if isinstance(a, Var))
    kept.reverse()
    constvars = [v for v in jaxpr.constvars if v in live]
    return Jaxpr(constvars, jaxpr.invars, outvars, kept)


def dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs: Sequence[bool] | None = None) -> ClosedJaxpr:
    """`dce_jaxpr` of a closed jaxpr, keeping only the constants still used."""
    jaxpr = dce_jaxpr(closed.jaxpr, used_outputs)
    const_of = dict(zip(closed.jaxpr.constvars, closed.consts))
    return ClosedJaxpr(jaxpr, [const_of[v] for v in jaxpr.constvars])


def last_uses(jaxpr: Jaxpr) -> dict[int, list[Var]]:
    """Liveness: for each equation index, the variables (inputs and constants
    included, outputs excluded) whose last use is that equation, so that an
    interpreter can release them right after it."""
    last: dict[Var, int] = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if type(a) is Var:
                last[a] = i
    for a in jaxpr.outvars:
        if type(a) is Var:
            last.pop(a, None)
    out: dict[int, list[Var]] = {}
    for v, i in last.items():
        out.setdefault(i, []).append(v)
    return out
