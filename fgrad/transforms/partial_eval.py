"""Partial evaluation: split a jaxpr into what can run now and what must wait.

Given which inputs are unknown (not available yet: tangents under
linearization, cotangents' linear inputs under transposition), the *known*
jaxpr computes every equation that needs only known values, and hands the
*unknown* jaxpr the residuals it needs from them. Reverse mode of a
higher-order primitive runs the known part at once (so Python control flow
around it keeps working under grad) and stages only the unknown part.

An equation is unknown when any of its inputs is; a higher-order equation is
not split further. Effects run in whichever part their equation lands in.
This module knows no derivative rules.
"""

from __future__ import annotations

from ..ir.cache import cached_per_jaxpr
from ..ir.jaxpr import Atom, ClosedJaxpr, Jaxpr, Var

__all__ = ["partial_eval_jaxpr"]


@cached_per_jaxpr
def partial_eval_jaxpr(
    closed: ClosedJaxpr, unknowns: tuple[bool, ...], instantiate: bool | tuple[bool, ...]
) -> tuple[ClosedJaxpr, ClosedJaxpr, tuple[bool, ...], int]:
    """Split `closed` by its unknown inputs (cached).

    Returns `(known, unknown, out_unknowns, num_res)`: `known` takes the known
    inputs and returns the known outputs, then `num_res` residuals; `unknown`
    takes the residuals, then the unknown inputs, and returns the unknown
    outputs. An output is unknown if it depends on an unknown input or is
    marked in `instantiate` (a known value the unknown part must return).

    >>> import fgrad, fgrad.numpy as fnp
    >>> closed = fgrad.make_jaxpr(lambda x, t: fnp.cos(x) * t)(1.0, 1.0)
    >>> known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (False, True), False)
    >>> print(known)
    { lambda ; a:f64[]. let b:f64[] = cos a in (b,) }
    >>> print(unknown)
    { lambda ; a:f64[] b:f64[]. let c:f64[] = mul a b in (c,) }
    """
    jaxpr = closed.jaxpr
    n_out = len(jaxpr.outvars)
    inst = (instantiate,) * n_out if isinstance(instantiate, bool) else instantiate
    unknown_vars: set[Var] = {v for v, u in zip(jaxpr.invars, unknowns) if u}
    known_eqns, unknown_eqns = [], []
    residuals: list[Var] = []
    seen: set[Var] = set()

    def residual(a: Atom) -> None:
        if type(a) is Var and a not in unknown_vars and a not in seen:
            seen.add(a)
            residuals.append(a)

    for eqn in jaxpr.eqns:
        if any(type(a) is Var and a in unknown_vars for a in eqn.invars):
            unknown_eqns.append(eqn)
            unknown_vars.update(eqn.outvars)
            for a in eqn.invars:
                residual(a)
        else:
            known_eqns.append(eqn)
    out_unknowns = tuple(
        (type(a) is Var and a in unknown_vars) or i for a, i in zip(jaxpr.outvars, inst)
    )
    for a, u in zip(jaxpr.outvars, out_unknowns):
        if u:
            residual(a)
    known_outs = [a for a, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = ClosedJaxpr(
        Jaxpr(jaxpr.constvars, [v for v, u in zip(jaxpr.invars, unknowns) if not u],
              [*known_outs, *residuals], known_eqns),
        closed.consts,
    )
    unknown = ClosedJaxpr(
        Jaxpr([], [*residuals, *(v for v, u in zip(jaxpr.invars, unknowns) if u)],
              [a for a, u in zip(jaxpr.outvars, out_unknowns) if u], unknown_eqns),
        [],
    )
    return known, unknown, out_unknowns, len(residuals)
