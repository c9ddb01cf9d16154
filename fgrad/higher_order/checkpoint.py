"""The `checkpoint` primitive, and `checkpoint_tangent`, the tangent map of
a checkpoint run eagerly.

`checkpoint_p` evaluates its jaxpr. Reverse mode records one `checkpoint`
equation holding the tangent part of its jvp, whose transpose recomputes the
residuals (partial evaluation) before transposing, so that no residual of
the function is kept between the passes. Its forward, transpose and batch
rules are those of every call-like primitive (`call.py`).

Where nothing is staged (`checkpoint_call`, `eager.py`), reverse mode runs
the function now and records one `checkpoint_tangent` equation holding it and
the inputs, whose transpose runs it again, differentiated; vmap calls the
vmapped function below, forward mode a checkpoint of the jvp. Where no
transform traces the arguments, the function is staged, so that what it
closes over is recomputed too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.avals import ShapedArray
from ..core.libraries import on_every_namespace
from ..core.rules import Linearization, batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive, Trace
from ..ir.cache import cached_per_jaxpr
from ..ir.check import check_operands
from ..ir.evaluate import eval_closed_now, eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import trace_to_jaxpr
from ..primitives.batching import batch_size
from ..primitives.derivatives import zeros, zeros_like_value
from ..transforms.batching import BatchTrace, BatchTracer, batch_flat
from ..transforms.forward import JVPTrace, JVPTracer, jvp_flat
from ..transforms.reverse import LinearizeTrace, linearize_flat, linearize_jaxpr
from ._common import (
    avals_of,
)
from .call import call_batch, call_jvp, call_transpose, split_tangents
from .custom import Eager, Flat, stage_flat
from .eager import STAGED, run_below, transform_of, unbatched, vmapped

__all__ = ["checkpoint_call", "checkpoint_p", "checkpoint_tangent_p"]


def checkpoint_call(name: str, fun: Flat, leaves: Sequence[Any], closures: bool = False) -> list[Any]:
    """A checkpointed call of `fun` (flat lists in and out). Where no transform
    differentiates its arguments, `closures` says whether one may
    differentiate what it closes over: then it is staged, so that those
    residuals too are recomputed; else it is ordinary code."""
    owner = transform_of(leaves)
    if owner is None and not closures:
        return fun(*leaves)
    if owner is not None and owner is not STAGED:
        out = _checkpoint_eagerly(owner, name, fun, list(leaves))
        if out is not None:
            return out
    jaxpr, consts = stage_flat(fun, avals_of(leaves), name)
    return checkpoint_p.bind(*consts, *leaves, jaxpr=jaxpr, name=name)


def _checkpoint_eagerly(owner: Trace, name: str, fun: Flat, leaves: list[Any]) -> list[Any] | None:
    """The call run on the values at hand. Reverse mode runs `fun` on the
    primals now, itself checkpointed for the transforms below, and records one
    `checkpoint_tangent` equation holding just the primals, whose transpose
    runs `fun` again, differentiated, in the backward pass. Forward mode and
    vmap call the checkpoint of the function's jvp or vmap below. None where
    the code closes over a value of a transform it runs below (then it is
    staged)."""
    where = f"the function of checkpoint {name}"
    if isinstance(owner, BatchTrace):  # results that do not vary stay unbatched (as jacfwd's primals must)
        vals, in_dims = unbatched(owner, leaves)
        out_dims: list[int | None] = []
        batched = vmapped(fun, owner.axis_size, name, in_dims, out_dims, force=lambda: 0)
        out = run_below(owner, owner.parent, lambda: checkpoint_call(name, batched, vals), where)  # type: ignore[arg-type]
        if out is None:
            return None
        return [o if d is None else BatchTracer(owner, o, d) for o, d in zip(out, out_dims)]
    assert isinstance(owner, JVPTrace)
    primals, tangents = split_tangents(owner, leaves)
    nonzeros = tuple(t is not None for t in tangents)
    if not isinstance(owner, LinearizeTrace):  # forward mode: the checkpoint of the jvp
        jvp_fun = _jvp_of(fun, nonzeros, name)
        both = run_below(owner, owner.parent, lambda: checkpoint_call(  # type: ignore[arg-type]
            name, jvp_fun, [*primals, *(t for t in tangents if t is not None)]), where)
        if both is None:
            return None
        n = len(both) // 2
        return [JVPTracer(owner, p, t) for p, t in zip(both[:n], both[n:])]
    outs = run_below(owner, owner.parent, lambda: checkpoint_call(name, fun, primals), where)  # type: ignore[arg-type]
    if outs is None:
        return None
    t_outs = owner.stage(checkpoint_tangent_p, [*primals, *(t for t in tangents if t is not None)], {
        "fun": Eager(fun, where), "nonzeros": nonzeros, "name": name, "out_avals": tuple(avals_of(outs)),
    })
    return [JVPTracer(owner, o, t) for o, t in zip(outs, t_outs)]


def _jvp_of(fun: Flat, nonzeros: Sequence[bool], name: str) -> Flat:
    """(primals, the tangents marked in `nonzeros`) -> (outputs, their tangents, zeros where none)."""
    n = len(nonzeros)

    def jvp_fun(*xs: Any) -> list[Any]:
        it = iter(xs[n:])
        tangents = [next(it) if nz else None for nz in nonzeros]
        outs, t_outs, _ = jvp_flat(fun, xs[:n], tangents, f"jvp of checkpoint {name}")
        return [*outs, *(zeros_like_value(o) if t is None else t for o, t in zip(outs, t_outs))]

    return jvp_fun


# --- checkpoint_tangent: the tangent map of an eager checkpoint ---------------------
#
# Its operands are the primals, then the tangents of those marked in `nonzeros`;
# its parameter `fun` the Python function. Applied forward (linearize's tangent
# map) it is fun's jvp; transposed, the checkpoint of fun's vjp, recomputing
# fun's residuals; other transforms treat the jvp as ordinary code.


def _tangent_map(fun: Flat, nonzeros: tuple[bool, ...], name: str) -> Flat:
    jvp_fun = _jvp_of(fun, nonzeros, name)

    def tangents_of(*xs: Any) -> list[Any]:
        both = jvp_fun(*xs)
        return both[len(both) // 2:]

    return tangents_of


def _checkpoint_tangent_impl(*args: Any, fun: Eager, nonzeros: tuple[bool, ...], name: str,
                             out_avals: tuple[ShapedArray, ...]) -> list[Any]:
    # Run with the caller's trace current: what `fun` closes over belongs to transforms around the call.
    return _tangent_map(fun, nonzeros, name)(*args)


checkpoint_tangent_p = Primitive("checkpoint_tangent", on_every_namespace(_checkpoint_tangent_impl),
                                 lambda *avals, out_avals, **_: list(out_avals), multiple_results=True)


def _checkpoint_tangent_jvp(primals: list[Any], tangents: list[Any], *, fun: Eager,
                            nonzeros: tuple[bool, ...], name: str,
                            out_avals: tuple[ShapedArray, ...]) -> tuple[list[Any], list[Any]]:
    outs, t_outs, _ = jvp_flat(_tangent_map(fun, nonzeros, name), primals, tangents,
                               f"jvp of checkpoint {name}")
    return outs, t_outs


def _checkpoint_tangent_transpose(cts: list[Any], *args: Any, fun: Eager, nonzeros: tuple[bool, ...],
                                  name: str, out_avals: tuple[ShapedArray, ...]) -> list[Any]:
    n = len(nonzeros)
    primals = args[:n]
    filled = [zeros(a) if ct is None else ct for ct, a in zip(cts, out_avals)]
    where = [i for i, nz in enumerate(nonzeros) if nz]

    def pullback(*xs: Any) -> list[Any]:  # (primals, output cotangents) -> cotangents of the nonzero ones
        p, c = list(xs[:n]), xs[n:]

        def of_nonzero(*ys: Any) -> list[Any]:
            full = list(p)
            for i, y in zip(where, ys):
                full[i] = y
            return fun(*full)

        _, linear, _ = linearize_flat(of_nonzero, [p[i] for i in where],
                                      f"the backward pass of checkpoint {name}")
        cts_in = linear.transpose(c)
        return [zeros_like_value(p[i]) if ct is None else ct for i, ct in zip(where, cts_in)]

    it = iter(checkpoint_call(name, pullback, [*primals, *filled]))
    return [None] * n + [next(it) for _ in where]


def _checkpoint_tangent_batch(args: list[Any], dims: list[Any], *, fun: Eager, nonzeros: tuple[bool, ...],
                              name: str, out_avals: tuple[ShapedArray, ...]) -> tuple[list[Any], list[Any]]:
    out = batch_flat(_tangent_map(fun, nonzeros, name), args, dims, lambda: [0] * len(out_avals),
                     batch_size(args, dims), f"vmap of checkpoint {name}")
    return out, [0] * len(out)


jvp_rules[checkpoint_tangent_p] = _checkpoint_tangent_jvp
transpose_rules[checkpoint_tangent_p] = _checkpoint_tangent_transpose
batch_rules[checkpoint_tangent_p] = _checkpoint_tangent_batch


def _checkpoint_impl(*args: Any, jaxpr: ClosedJaxpr, **_: Any) -> list[Any]:
    return eval_closed_now(jaxpr, args)


def _checkpoint_aval(*avals: ShapedArray, jaxpr: ClosedJaxpr, name: str) -> list[ShapedArray]:
    check_operands(f"checkpoint of {name}", list(avals), jaxpr)
    return jaxpr.out_avals


checkpoint_p = Primitive(
    "checkpoint", on_every_namespace(_checkpoint_impl), _checkpoint_aval, multiple_results=True
)


def _checkpoint_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                          jaxpr: ClosedJaxpr, name: str) -> tuple[list[Any], list[Any]]:
    outs = checkpoint_p.bind(*primals, jaxpr=jaxpr, name=name)  # the primal part, now
    # The tangent part, staged as one checkpoint equation holding only the
    # inputs: its transpose recomputes what it needs from them.
    tangent_part, out_nonzeros = _recomputing_tangents(jaxpr, tuple(t is not None for t in tangents))
    t_outs = trace.stage(checkpoint_p, [*primals, *(t for t in tangents if t is not None)],
                         {"jaxpr": tangent_part, "name": name})
    it = iter(t_outs)
    return outs, [next(it) if nz else None for nz in out_nonzeros]


@cached_per_jaxpr
def _recomputing_tangents(jaxpr: ClosedJaxpr, nonzeros: tuple[bool, ...]
                          ) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """(primals, tangents) -> output tangents: the body's primal part computing
    the residuals, then its linear part, from the body's linearization (so that
    loops, conds and custom rules inside it split into a part that runs forward
    and a linear part that transposes). Cached."""
    known, linear, out_nonzeros, _ = linearize_jaxpr(jaxpr, nonzeros, False)
    n_in, n_out = len(jaxpr.in_avals), len(jaxpr.out_avals)

    def tangents_of(*args: Any) -> list[Any]:
        res = eval_jaxpr(known.jaxpr, known.consts, *args[:n_in])[n_out:]
        return eval_jaxpr(linear.jaxpr, linear.consts, *res, *args[n_in:])

    tangent_avals = [a.strip_weak_type() for a, nz in zip(jaxpr.in_avals, nonzeros) if nz]
    staged = trace_to_jaxpr(tangents_of, [*jaxpr.in_avals, *tangent_avals], "checkpoint", fresh=True)
    return staged, out_nonzeros


jvp_rules[checkpoint_p] = Linearization(call_jvp(checkpoint_p), _checkpoint_linearize)
transpose_rules[checkpoint_p] = call_transpose(checkpoint_p)
batch_rules[checkpoint_p] = call_batch(checkpoint_p)
