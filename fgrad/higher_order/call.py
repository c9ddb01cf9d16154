"""Rules shared by call-like higher-order primitives: `checkpoint` and `jit`.

Such a primitive has a `ClosedJaxpr` parameter `jaxpr` and takes its inputs as
operands (closure-converted), with any other parameters passed along
unchanged. Its rules are the jaxpr-to-jaxpr transforms, re-binding the same
primitive on the transformed jaxpr, so it stays one equation at every level
(make_jaxpr of grad of jit shows jit equations). Where the primitives differ,
in reverse mode, each module writes its own linearize rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.rules import UndefinedPrimal
from ..core.trace import Primitive, Trace, ctx
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..primitives.batching import batch_size
from ..primitives.derivatives import zeros
from ..transforms.batching import batch_jaxpr
from ..transforms.forward import JVPTracer, jvp_jaxpr
from ..transforms.reverse import transpose_jaxpr

__all__ = ["unpack_tangents", "call_jvp", "call_transpose", "call_batch", "run_on", "with_tangents",
           "split_tangents"]


def unpack_tangents(
    outs: list[Any], n_out: int, out_nonzeros: tuple[bool, ...]
) -> tuple[list[Any], list[Any]]:
    """The primal outputs, and the tangents with None where `out_nonzeros` says there are none."""
    it = iter(outs[n_out:])
    return outs[:n_out], [next(it) if nz else None for nz in out_nonzeros]


def call_jvp(prim: Primitive) -> Callable[..., Any]:
    """Forward mode: `prim` on the jvp of its jaxpr, the nonzero tangents after the primals."""

    def jvp(primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr, **params: Any) -> Any:
        jvp_closed, out_nonzeros = jvp_jaxpr(jaxpr, tuple(t is not None for t in tangents), False)
        outs = prim.bind(*primals, *(t for t in tangents if t is not None), jaxpr=jvp_closed, **params)
        return unpack_tangents(outs, len(jaxpr.out_avals), out_nonzeros)

    return jvp


def call_transpose(prim: Primitive) -> Callable[..., Any]:
    """Reverse mode of a `prim` equation in a linear jaxpr: `prim` on the
    transpose of its jaxpr, whose known part (what needs only the non-linear
    operands) it evaluates first."""

    def transpose(cts: list[Any], *args: Any, jaxpr: ClosedJaxpr, **params: Any) -> list[Any]:
        linear = tuple(type(a) is UndefinedPrimal for a in args)
        filled = [zeros(a) if ct is None else ct for ct, a in zip(cts, jaxpr.out_avals)]
        cts_in = iter(prim.bind(*(a for a, lin in zip(args, linear) if not lin), *filled,
                                jaxpr=transpose_jaxpr(jaxpr, linear), **params))
        return [next(cts_in) if lin else None for lin in linear]

    return transpose


def call_batch(prim: Primitive) -> Callable[..., Any]:
    """vmap: `prim` on the batched jaxpr; outputs that do not vary stay unbatched."""

    def batch(args: list[Any], dims: list[Any], *, jaxpr: ClosedJaxpr, **params: Any) -> Any:
        batched, out_batched = batch_jaxpr(jaxpr, batch_size(args, dims), tuple(dims), False)
        out = prim.bind(*args, jaxpr=batched, **params)
        return out, [0 if b else None for b in out_batched]

    return batch


def run_on(trace: Trace, closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluate `closed` with `trace` current: each of its equations goes to that
    trace, as if the function it was staged from ran there (inlined, or a loop
    unrolled), each with its own rule."""
    prev = ctx.trace
    ctx.trace = trace
    try:
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    finally:
        ctx.trace = prev


def with_tangents(trace: Trace, primals: Sequence[Any], tangents: Sequence[Any]) -> list[Any]:
    """The values of a differentiation on `trace`: tracers where there is a tangent."""
    return [p if t is None else JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]  # type: ignore[arg-type]


def split_tangents(trace: Trace, outs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Primals and tangents (None where there is none) of values computed on `trace`."""
    primals, tangents = [], []
    for x in outs:
        if type(x) is JVPTracer and x._trace is trace:
            primals.append(x.primal)
            tangents.append(x.tangent)
        else:
            primals.append(x)
            tangents.append(None)
    return primals, tangents
