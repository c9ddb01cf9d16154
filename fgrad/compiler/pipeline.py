"""The passes `jit` runs on a staged jaxpr, in order (`optimize_jaxpr`): the
primitives' own rewrites (`jit_rewrites`), calls inlined, loop and branch
bodies optimized as programs of their own, small arrays unrolled into
scalars, then rounds of folding, simplification, the product rewrites, CSE
and DCE until nothing changes.
"""

from __future__ import annotations

from typing import Any

from ..core.rules import jit_rewrites
from ..higher_order.cond import cond_p
from ..higher_order.jit import jit_p
from ..higher_order.scan import scan_p
from ..higher_order.while_loop import while_p
from ..ir.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Var
from ..ir.passes import cse_jaxpr, dce_closed_jaxpr, fold_constants, has_effects, rebuilt
from ..ir.unroll import unroll_small_arrays
from .rewrites import identity_products, simplify_jaxpr, sliced_products, summed_products

__all__ = ["optimize_jaxpr", "inline_calls", "rewritten", "optimized_bodies", "INLINED_CALLS", "LOOP_BODIES"]


#: The call primitives whose equations are replaced by their jaxprs.
INLINED_CALLS = frozenset({jit_p})


def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Replace each call equation (`INLINED_CALLS`) by the equations of its jaxpr, its variables renamed
    to fresh ones, its constants made constants of `closed`. Returns `closed`
    itself when there is none.

    >>> import fgrad, fgrad.numpy as fnp
    >>> inner = fgrad.jit(lambda x: fnp.sin(x) * 2.0)
    >>> print(inline_calls(fgrad.make_jaxpr(lambda x: inner(x) + 1.0)(1.0)))
    { lambda ; a:f64[]. let
        b:f64[] = sin a
        c:f64[] = mul b 2.0
        d:f64[] = add c 1.0
      in (d,) }
    """
    if not any(e.primitive in INLINED_CALLS for e in closed.eqns):
        return closed
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    eqns: list[JaxprEqn] = []
    env: dict[Var, Atom] = {}

    def splice(eqn: JaxprEqn, rename: dict[Var, Atom], fresh: bool) -> None:
        """`eqn` of some level, its variables renamed by `rename` into the
        result's, or its call's equations. Below the top level every variable
        is new (one jaxpr may be inlined twice)."""
        invars = [rename.get(a, a) if type(a) is Var else a for a in eqn.invars]
        sub = eqn.params.get("jaxpr")
        if eqn.primitive not in INLINED_CALLS or not isinstance(sub, ClosedJaxpr):
            outvars = eqn.outvars
            if fresh:
                outvars = [Var(v.aval) for v in eqn.outvars]
                rename.update(zip(eqn.outvars, outvars))
            eqns.append(JaxprEqn(eqn.primitive, invars, outvars, eqn.params, eqn.source))
            return
        inner: dict[Var, Atom] = dict(zip(sub.jaxpr.invars, invars))
        for v, c in zip(sub.jaxpr.constvars, sub.consts):
            inner[v] = new = Var(v.aval)
            constvars.append(new)
            consts.append(c)
        for e in sub.jaxpr.eqns:
            splice(e, inner, True)
        for v, a in zip(eqn.outvars, sub.jaxpr.outvars):
            rename[v] = inner.get(a, a) if type(a) is Var else a

    for eqn in closed.eqns:
        splice(eqn, env, False)
    return rebuilt(closed, eqns, env, constvars, consts)


#: The higher-order primitives whose jaxprs run once per step (or once of
#: several): their bodies are optimized as programs of their own.
LOOP_BODIES = frozenset({scan_p, while_p, cond_p})


def rewritten(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with each equation that its primitive's `jit_rewrites` rule rewrites
    replaced by the equations the rule gives (`closed` itself when none is)."""
    eqns, changed = [], False
    for eqn in closed.jaxpr.eqns:
        rule = jit_rewrites.get(eqn.primitive)
        new = None if rule is None or has_effects(eqn) else rule(eqn)
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)


def optimized_bodies(closed: ClosedJaxpr, max_rounds: int = 8) -> ClosedJaxpr:
    """`closed` with the jaxprs of its loops and conds optimized (`optimize_jaxpr`),
    each keeping its inputs and outputs; `closed` itself when none changes."""
    eqns, changed = [], False
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive in LOOP_BODIES:
            params = {k: _optimized_param(v, max_rounds) for k, v in eqn.params.items()}
            if any(params[k] is not v for k, v in eqn.params.items()):
                eqn = JaxprEqn(eqn.primitive, eqn.invars, eqn.outvars, params, eqn.source)
                changed = True
        eqns.append(eqn)
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)


def _optimized_param(value: Any, max_rounds: int) -> Any:
    if isinstance(value, ClosedJaxpr):
        new = optimize_jaxpr(value, max_rounds)
        same = new.in_avals == value.in_avals and new.out_avals == value.out_avals
        return new if same else value
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        new_values = tuple(_optimized_param(v, max_rounds) for v in value)
        return value if all(a is b for a, b in zip(new_values, value)) else new_values
    return value


def optimize_jaxpr(closed: ClosedJaxpr, max_rounds: int = 8) -> ClosedJaxpr:
    """What `jit` runs on a staged jaxpr: nested calls inlined, then constant
    folding, simplification, identity products, summed and sliced products,
    CSE and DCE, again until a round changes nothing (at most `max_rounds`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sin(x) * fnp.negative(-1.0) + fnp.sin(x) / 1.0
    >>> print(optimize_jaxpr(fgrad.make_jaxpr(f)(1.0)))
    { lambda ; a:f64[]. let b:f64[] = sin a c:f64[] = add b b in (c,) }
    """
    closed = unroll_small_arrays(optimized_bodies(inline_calls(rewritten(closed)), max_rounds))
    for _ in range(max_rounds):
        folded = fold_constants(closed)
        simplified = sliced_products(summed_products(identity_products(simplify_jaxpr(folded))))
        merged = cse_jaxpr(simplified)
        pruned = dce_closed_jaxpr(merged)
        if (
            merged is closed
            and len(pruned.eqns) == len(closed.eqns)
            and len(pruned.consts) == len(closed.consts)
        ):
            return closed
        closed = pruned
    return closed
