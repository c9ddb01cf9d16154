"""Rewrites of jaxprs. Each pass takes a jaxpr and returns a new one."""

from __future__ import annotations

from .jaxpr import Jaxpr, Var

__all__ = ["dce_jaxpr"]


def dce_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Drop equations whose outputs no output depends on (primitives are pure).

    Constant variables that only dead equations used are dropped too, so the
    arrays behind them can be freed; the kept ones keep their order.
    """
    live: set[Var] = {a for a in jaxpr.outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(a for a in eqn.invars if isinstance(a, Var))
    kept.reverse()
    constvars = [v for v in jaxpr.constvars if v in live]
    return Jaxpr(constvars, jaxpr.invars, jaxpr.outvars, kept)
