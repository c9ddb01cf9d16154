"""The `jit` primitive: a call of a staged, closure-converted jaxpr.

`jit_p` takes its jaxpr's inputs as operands and runs the jaxpr as generated
Python code (`ir/codegen.py`; under debug_nans, equation by equation). Its
forward, transpose and batch rules are those of every call-like primitive
(`call.py`): `jit` of the transformed jaxpr, so `grad(jit(f))`, `vmap(jit(f))`
and `jit(jit(f))` stay jit equations. Reverse mode splits the jvp jaxpr by
partial evaluation: the known part (the primal computation and the residuals
it leaves) runs now as one jit call, and the unknown part, linear in the
tangents, is staged as another, which the backward pass transposes.

The public `fgrad.jit` (tracing, caching, pytrees) is in `api/jit.py`.
"""

from __future__ import annotations

from typing import Any

from ..core.avals import ShapedArray
from ..core.libraries import generic_impls
from ..core.rules import Linearization, batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from ..ir.cache import cached_per_jaxpr
from ..ir.check import check_operands
from ..ir.codegen import runner
from ..ir.jaxpr import ClosedJaxpr, sub_jaxprs
from .call import call_batch, call_jvp, call_transpose, linearize_inline, unpack_tangents
from .forward import jvp_jaxpr
from .partial_eval import partial_eval_jaxpr
from .reverse import LinearizeTrace

__all__ = ["jit_p"]


def _jit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str) -> list[Any]:
    return runner(jaxpr)(*args)


def _jit_aval(*avals: ShapedArray, jaxpr: ClosedJaxpr, name: str) -> list[ShapedArray]:
    check_operands(f"jit of {name}", list(avals), jaxpr)
    return jaxpr.out_avals


jit_p = Primitive("jit", _jit_impl, _jit_aval, multiple_results=True)
generic_impls.add(jit_p)


def _jit_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                   jaxpr: ClosedJaxpr, name: str) -> tuple[list[Any], list[Any]]:
    if _higher_order(jaxpr):
        # The jvp of a checkpoint, a custom rule or a loop mixes primal and
        # tangent work in one equation, which splitting by equations cannot
        # separate (and a custom_vjp has no jvp): differentiate the jaxpr as if
        # it were inline, each equation with its own reverse-mode rule.
        return linearize_inline(trace, jaxpr, primals, tangents)
    nonzeros = tuple(t is not None for t in tangents)
    jvp, out_nonzeros = jvp_jaxpr(jaxpr, nonzeros, False)
    unknowns = (False,) * len(primals) + (True,) * sum(nonzeros)
    n_out = len(jaxpr.out_avals)
    # Every tangent output goes to the linear part, even one that does not
    # depend on the tangents (a custom rule's constant): it is then a residual.
    instantiate = (False,) * n_out + (True,) * sum(out_nonzeros)
    known, unknown, out_unknowns, _ = partial_eval_jaxpr(jvp, unknowns, instantiate)
    assert out_unknowns == instantiate, out_unknowns  # primal outputs never need a tangent
    outs_and_res = jit_p.bind(*primals, jaxpr=known, name=name)  # now, on the primal trace
    outs, res = outs_and_res[:n_out], outs_and_res[n_out:]
    t_outs = trace.stage(jit_p, [*res, *(t for t in tangents if t is not None)],
                         {"jaxpr": unknown, "name": name}) if sum(out_nonzeros) else []
    return outs, unpack_tangents([*outs, *t_outs], n_out, out_nonzeros)[1]


@cached_per_jaxpr
def _higher_order(closed: ClosedJaxpr) -> bool:
    """Whether an equation of `closed` holds a jaxpr of its own."""
    return any(sub_jaxprs(e) for e in closed.jaxpr.eqns)


jvp_rules[jit_p] = Linearization(call_jvp(jit_p), _jit_linearize)
transpose_rules[jit_p] = call_transpose(jit_p)
batch_rules[jit_p] = call_batch(jit_p)
