"""The `jit` primitive: a call of a staged, closure-converted jaxpr.

`jit_p` takes its jaxpr's inputs as operands and runs the jaxpr as generated
Python code (`ir/codegen.py`; under debug_nans, equation by equation). Its
forward, transpose and batch rules are those of every call-like primitive
(`call.py`): `jit` of the transformed jaxpr, so `grad(jit(f))`, `vmap(jit(f))`
and `jit(jit(f))` stay jit equations. Reverse mode linearizes the jaxpr
(`linearize_jaxpr`, each equation by its own rule, so control flow and custom
rules inside are split too): the known part (the primal computation and the
residuals it leaves) runs now as one jit call, and the linear part is staged
as another, which the backward pass transposes.

The public `fgrad.jit` (tracing, caching, pytrees) is in `api/jit.py`.
"""

from __future__ import annotations

from typing import Any

from ..core.avals import ShapedArray
from ..core.libraries import on_every_namespace
from ..core.rules import Linearization, batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from ..ir.check import check_operands
from ..ir.codegen import runner
from ..ir.jaxpr import ClosedJaxpr
from ..transforms.reverse import LinearizeTrace, linearize_jaxpr
from .call import call_batch, call_jvp, call_transpose

__all__ = ["jit_p"]


def _jit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str) -> list[Any]:
    return runner(jaxpr)(*args)


def _jit_aval(*avals: ShapedArray, jaxpr: ClosedJaxpr, name: str) -> list[ShapedArray]:
    check_operands(f"jit of {name}", list(avals), jaxpr)
    return jaxpr.out_avals


jit_p = Primitive("jit", on_every_namespace(_jit_impl), _jit_aval, multiple_results=True)


def _jit_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                   jaxpr: ClosedJaxpr, name: str) -> tuple[list[Any], list[Any]]:
    # The jaxpr linearized once, each equation by its own rule (linearize_jaxpr),
    # so that a cond, a loop, a checkpoint or a custom rule inside is split too:
    # the known part runs now as one jit call, the linear part is staged as another.
    nonzeros = tuple(t is not None for t in tangents)
    known, linear, out_nonzeros, _ = linearize_jaxpr(jaxpr, nonzeros, False)
    n_out = len(jaxpr.out_avals)
    outs_and_res = jit_p.bind(*primals, jaxpr=known, name=name)  # now, on the primal trace
    outs, res = outs_and_res[:n_out], outs_and_res[n_out:]
    t_outs = trace.stage(jit_p, [*res, *(t for t in tangents if t is not None)],
                         {"jaxpr": linear, "name": name}) if any(out_nonzeros) else []
    it = iter(t_outs)
    return outs, [next(it) if nz else None for nz in out_nonzeros]


jvp_rules[jit_p] = Linearization(call_jvp(jit_p), _jit_linearize)
transpose_rules[jit_p] = call_transpose(jit_p)
batch_rules[jit_p] = call_batch(jit_p)
