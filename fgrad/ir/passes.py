"""Rewrites of jaxprs. Each pass takes a jaxpr and returns a new one.

Primitives are pure unless listed in `core.rules.effectful` (printing,
callbacks); an equation with an effect, or with a sub-jaxpr that has one, is
never dropped.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

from ..core.rules import effectful
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, sub_jaxprs

__all__ = ["dce_jaxpr", "dce_closed_jaxpr", "has_effects", "last_uses"]


def has_effects(eqn: JaxprEqn) -> bool:
    """Whether `eqn` does anything besides computing its outputs."""
    if eqn.primitive in effectful:
        return True
    return any(has_effects(e) for _, sub in sub_jaxprs(eqn) for e in sub.eqns)


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


def last_uses(jaxpr: Jaxpr, reverse: bool = False) -> dict[int, list[Var]]:
    """Liveness: for each equation index, the variables whose last use is that
    equation, so that an interpreter can release them right after it. Inputs
    and constants are included. With `reverse`, for an interpreter that runs
    the equations backwards (the backward pass), the last use is the first in
    order; otherwise a variable the jaxpr outputs is never released.
    Cached per jaxpr, which is never changed once built.

    >>> import fgrad, fgrad.numpy as fnp
    >>> jaxpr = fgrad.make_jaxpr(lambda x: fnp.sin(x) * x)(1.0).jaxpr
    >>> {i: len(vs) for i, vs in last_uses(jaxpr).items()}
    {1: 2}
    """
    with _lock:
        found = _last_uses.get(jaxpr, {}).get(reverse)
    if found is not None:
        return found
    last: dict[Var, int] = {}
    eqns = jaxpr.eqns
    order = range(len(eqns) - 1, -1, -1) if reverse else range(len(eqns))
    for i in order:
        for a in eqns[i].invars:
            if type(a) is Var:
                last[a] = i
    if not reverse:
        for a in jaxpr.outvars:
            if type(a) is Var:
                last.pop(a, None)
    out: dict[int, list[Var]] = {}
    for v, i in last.items():
        out.setdefault(i, []).append(v)
    with _lock:
        _last_uses.setdefault(jaxpr, {})[reverse] = out
    return out


_last_uses: weakref.WeakKeyDictionary[Jaxpr, dict[bool, dict[int, list[Var]]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
