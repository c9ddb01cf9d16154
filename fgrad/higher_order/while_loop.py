"""The `while` primitive, and the tape primitives of its reverse mode
(`fgrad.lax.while_loop`, and `fori_loop` with traced bounds, bind it).

`while_p` takes what the condition closed over, then what the body closed
over, then the initial carry; its parameters are the two closed jaxprs and the
numbers of constants of each. Rules:

* evaluation is a Python loop over the jaxprs' generated code, and jit
  writes it as a Python `while` with both jaxprs inline;
* forward mode is `while` of the body's jvp, its carry's tangents found to a
  fixpoint (a carry gets a tangent when its update depends on one that has);
* reverse mode keeps each iteration's residuals, as many as there were
  iterations, and the backward pass transposes the iterations in reverse
  (JAX cannot: XLA needs a static number of iterations): the body is
  linearized once, `while_tape` runs the known part as the loop, keeping the
  residuals on a tape whose length is found as it runs, and `tape_scan` runs
  the linear part over the tape (its transpose: a `tape_scan` the other way),
  eagerly and under jit and vmap alike. Both have every rule, so derivatives
  of any order work. Memory grows with the number of iterations times the
  residuals of one (use `checkpoint` on the body to keep only its inputs);
* vmap batches the carry to a fixpoint; with a batched condition the loop
  runs until every example is done, each example's carry updated only while
  its own condition holds.

`fori_loop` with bounds known when it is called is a `scan` (its number of
steps is fixed); with traced bounds, a `while_loop` over (i, value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.libraries import on_every_namespace
from ..core.rules import Linearization, UndefinedPrimal, batch_rules, block_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from ..ir.cache import cached_per_jaxpr
from ..ir.check import check_operands
from ..ir.codegen import runner
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import trace_to_jaxpr
from ..primitives import batching, indexing, reductions, shapes
from ..primitives import derivatives as d
from ..primitives import elementwise as ew
from ..primitives.indexing import StaticIndex
from ..transforms.batching import batch_jaxpr
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import LinearizeTrace, linearize_jaxpr, transpose_jaxpr
from ._common import (
    assign,
    carry_fixpoint,
    indented,
    linear_carries,
    permuted,
    split_counts,
    stacked,
    summing_body,
    with_unused_inputs,
)

__all__ = ["while_p", "while_tape_p", "tape_scan_p", "Tape", "Pair", "Parts"]

Parts = tuple[list[Any], list[Any], list[Any]]
Pair = tuple[list[Any], list[Any]]


def _while_impl(*args: Any, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                body_nconsts: int) -> list[Any]:
    cc, bc, carry = split_counts(args, (cond_nconsts, body_nconsts))
    test, step = runner(cond_jaxpr), runner(body_jaxpr)
    # The condition's value decides whether to go on: a Python bool, which on
    # a Dask array computes the graph up to this step (each step's test again
    # from the start). A loop is not lazy there; its carry stays a Dask array.
    while test(*cc, *carry)[0]:
        carry = step(*bc, *carry)
    return carry


def _while_aval(*avals: ShapedArray, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                body_nconsts: int) -> list[ShapedArray]:
    cc, bc, carry = split_counts(avals, (cond_nconsts, body_nconsts))
    check_operands("while (its condition)", cc + carry, cond_jaxpr)
    check_operands("while (its body)", bc + carry, body_jaxpr)
    (pred,) = cond_jaxpr.out_avals
    if pred.shape != () or pred.dtype != np.dtype(bool):
        raise TypeError(f"while_loop: the condition must return a boolean scalar, not {pred.str_short()}")
    outs = body_jaxpr.out_avals
    if [(a.shape, a.dtype) for a in outs] != [(a.shape, a.dtype) for a in carry]:
        got = ", ".join(a.str_short() for a in outs)
        raise TypeError(f"while_loop: the body returns ({got}) for a carry "
                        f"of ({', '.join(a.str_short() for a in carry)})")
    return list(carry)


while_p = Primitive("while", on_every_namespace(_while_impl), _while_aval, multiple_results=True)


def _body_jvp(body_jaxpr: ClosedJaxpr, const_nz: list[bool], carry_nz: list[bool]
              ) -> tuple[ClosedJaxpr, list[bool]]:
    """The body's jvp, and the carries with a tangent (a fixpoint)."""
    carry_nz = carry_fixpoint(
        lambda nz: jvp_jaxpr(body_jaxpr, tuple(const_nz + nz), tuple(nz))[1], carry_nz)
    return jvp_jaxpr(body_jaxpr, tuple(const_nz + carry_nz), tuple(carry_nz))[0], carry_nz


def _while_jvp(primals: list[Any], tangents: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
               cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], list[Any]]:
    cc, bc, init = split_counts(primals, (cond_nconsts, body_nconsts))
    _, bct, initt = split_counts(tangents, (cond_nconsts, body_nconsts))
    const_nz = [t is not None for t in bct]
    body_jvp, carry_nz = _body_jvp(body_jaxpr, const_nz, [t is not None for t in initt])
    nb, nc, nbt, nct = len(bc), len(init), sum(const_nz), sum(carry_nz)
    # The jvp takes (consts, carry, const tangents, carry tangents); the loop's
    # body takes its constants first: (consts, const tangents, carry, carry tangents).
    order = [*range(nb), *range(nb + nc, nb + nc + nbt), *range(nb, nb + nc),
             *range(nb + nc + nbt, nb + nc + nbt + nct)]
    body = permuted(body_jvp, order)
    tangent_avals = [a for a, nz in zip(body_jaxpr.out_avals, carry_nz) if nz]
    test = with_unused_inputs(cond_jaxpr, [], tangent_avals)
    init_t = [t if t is not None else d.zeros_like_value(x) for x, t, nz in zip(init, initt, carry_nz) if nz]
    outs = while_p.bind(*cc, *bc, *(t for t in bct if t is not None), *init, *init_t, cond_jaxpr=test,
                        body_jaxpr=body, cond_nconsts=cond_nconsts, body_nconsts=nb + nbt)
    it = iter(outs[nc:])
    return outs[:nc], [next(it) if nz else None for nz in carry_nz]


# --- reverse mode: tapes of residuals ----------------------------------------------
#
# The number of iterations is known only when the loop runs (under jit, only
# when the code runs). The body is linearized (linearize_jaxpr) into a known part (primal
# carry -> next primal carry and that step's residuals) and a linear part
# (residuals, tangents -> next tangents). `while_tape` runs the known part as
# the loop and keeps each step's residuals on a *tape*: one value whose
# abstract value is `TAPE` (a 0-d object array holding the list of steps, so
# every pass over avals treats it as one value) and whose length is found at
# run time. `tape_scan` is a scan over tapes: a loop over their steps (forward
# or backward) carrying a carry and making tapes of per-step outputs; the
# linear part runs as one, and it transposes to one the other way.
#
# Both have every rule, so derivatives of any order work: the jvp of a loop
# over a tape is the loop of its body's jvp over the tape and the tape's
# tangent (a tape of the residuals' tangents); its linearization is a loop of
# the known part that keeps a tape of its own, and a linear loop over both.
# A zero tape (a tape's symbolic zero, made by `zero_tape`) has zeros at every
# step; a loop's length is that of its first tape, always a real one (the
# residuals of a known part).

TAPE = ShapedArray((), np.dtype(object))


class Tape:
    """A tape's value: the steps of a loop, each a list of arrays (None for the
    zero tape). Tapes add step by step, and a zero (of the tape's aval, as
    reverse mode starts a cotangent) adds as nothing, so cotangents of tapes
    accumulate as any other's."""

    __slots__ = ("steps",)

    def __init__(self, steps: list[list[Any]] | None) -> None:
        self.steps = steps

    def __add__(self, other: Any) -> Tape:
        theirs = other.steps if isinstance(other, Tape) else None
        if theirs is None or self.steps is None:
            return self if theirs is None else other
        assert len(theirs) == len(self.steps), "tapes of one loop have its number of steps"
        return Tape([[a + b for a, b in zip(s, t)] for s, t in zip(self.steps, theirs)])

    __radd__ = __add__

    def __repr__(self) -> str:
        return "Tape(zeros)" if self.steps is None else f"Tape({len(self.steps)} steps)"


def _tape(steps: list[list[Any]] | None) -> Any:
    tape = np.empty((), object)
    tape[()] = Tape(steps)
    return tape


def zero_tape() -> Any:
    """The zero of a tape: zeros at every step, of any length."""
    return _tape(None)


def _steps(tape: Any) -> list[Any] | None:
    """The steps a tape holds, or None for a zero tape. A scan's step of a stack
    of tapes (its residuals) is NumPy's element itself, the Tape; zeros of
    the tape's aval (`d.zeros`: a batched cond's branch not taken, the start
    of a cotangent) are a zero tape too."""
    value = tape[()] if isinstance(tape, np.ndarray) else tape
    return value.steps if isinstance(value, Tape) else None


def _tapes(steps: Sequence[Sequence[Any]], sizes: Sequence[int]) -> list[Any]:
    """Steps of outputs as tapes: tape k holds `sizes[k]` of each step's outputs."""
    tapes, start = [], 0
    for size in sizes:
        tapes.append(_tape([list(step[start:start + size]) for step in steps]))
        start += size
    return tapes


def _tape_impl(*args: Any, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
               body_nconsts: int, tape_sizes: tuple[int, ...]) -> list[Any]:
    cc, bc, carry = split_counts(args, (cond_nconsts, body_nconsts))
    test, step = runner(cond_jaxpr), runner(body_jaxpr)
    n, steps = len(carry), []
    while test(*cc, *carry)[0]:
        outs = step(*bc, *carry)
        carry = outs[:n]
        steps.append(outs[n:])
    return [*carry, *_tapes(steps, tape_sizes)]


def _tape_aval(*avals: ShapedArray, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
               body_nconsts: int, tape_sizes: tuple[int, ...]) -> list[ShapedArray]:
    cc, bc, carry = split_counts(avals, (cond_nconsts, body_nconsts))
    check_operands("while_tape (its condition)", cc + carry, cond_jaxpr)
    check_operands("while_tape (its body)", bc + carry, body_jaxpr)
    assert len(body_jaxpr.out_avals) == len(carry) + sum(tape_sizes), "a body returns its carry, then a step"
    return [*carry, *[TAPE] * len(tape_sizes)]


while_tape_p = Primitive("while_tape", on_every_namespace(_tape_impl), _tape_aval, multiple_results=True)
# a tape is NumPy's object array on any library: a list of their arrays


def _tape_scan_impl(*args: Any, jaxpr: ClosedJaxpr, reverse: bool, num_consts: int, num_carry: int,
                    x_sizes: tuple[int, ...], y_sizes: tuple[int, ...]) -> list[Any]:
    consts, carry, tapes = split_counts(args, (num_consts, num_carry))
    first = _steps(tapes[0])
    n = len(first) if first is not None else 0  # a zero tape first: a branch not taken, its result unused
    step_avals, columns, start = jaxpr.in_avals[num_consts + num_carry:], [], 0
    for tape, size in zip(tapes, x_sizes):
        steps = _steps(tape)
        if steps is None:
            steps = [[d.zeros_now(a) for a in step_avals[start:start + size]]] * n
        columns.append(steps)
        start += size
    step = runner(jaxpr)
    ys: list[Any] = [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        outs = step(*consts, *carry, *(x for steps in columns for x in steps[i]))
        carry, ys[i] = outs[:num_carry], outs[num_carry:]
    return [*carry, *_tapes(ys, y_sizes)]


def _tape_scan_aval(*avals: ShapedArray, jaxpr: ClosedJaxpr, reverse: bool, num_consts: int, num_carry: int,
                    x_sizes: tuple[int, ...], y_sizes: tuple[int, ...]) -> list[ShapedArray]:
    consts, carry, tapes = split_counts(avals, (num_consts, num_carry))
    assert tapes and all(t == TAPE for t in tapes), "a tape_scan loops over tapes, the first gives its length"
    step_avals = jaxpr.in_avals[num_consts + num_carry:]
    assert len(step_avals) == sum(x_sizes) and len(jaxpr.out_avals) == num_carry + sum(y_sizes)
    check_operands("tape_scan (its body)", [*consts, *carry, *step_avals], jaxpr)
    return [*carry, *[TAPE] * len(y_sizes)]


tape_scan_p = Primitive(
    "tape_scan", on_every_namespace(_tape_scan_impl), _tape_scan_aval, multiple_results=True
)


def _instantiated(tangents: Sequence[Any], avals: Sequence[ShapedArray],
                  nonzeros: Sequence[bool]) -> list[Any]:
    """The tangents marked in `nonzeros`, zeros where a tangent is None."""
    return [d.zeros(a.strip_weak_type()) if t is None else t
            for t, a, nz in zip(tangents, avals, nonzeros) if nz]


def _per_step(tangents: Sequence[Any], sizes: Sequence[int]) -> list[bool]:
    """For each value of a step: whether its tape has a tangent."""
    return [t is not None for t, size in zip(tangents, sizes) for _ in range(size)]


def _tape_scan_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr, reverse: bool,
                   num_consts: int, num_carry: int, x_sizes: tuple[int, ...],
                   y_sizes: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    # The loop of the body's jvp over the tapes and their tangents, making the
    # tapes of the outputs and of their tangents (every step's, zeros included).
    nk, nc, n_ys = num_consts, num_carry, sum(y_sizes)
    consts, init, tapes = split_counts(primals, (nk, nc))
    const_t, init_t, tapes_t = split_counts(tangents, (nk, nc))
    const_nz, xs_nz = [t is not None for t in const_t], _per_step(tapes_t, x_sizes)
    carry_nz = carry_fixpoint(
        lambda nz: jvp_jaxpr(jaxpr, tuple(const_nz + nz + xs_nz), tuple(nz) + (False,) * n_ys)[1][:nc],
        [t is not None for t in init_t])
    if not any(carry_nz) and not any(const_nz) and not any(xs_nz):
        return tape_scan_p.bind(*primals, jaxpr=jaxpr, reverse=reverse, num_consts=nk, num_carry=nc,
                                x_sizes=x_sizes, y_sizes=y_sizes), [None] * (nc + len(y_sizes))
    body_jvp, _ = jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz), tuple(carry_nz) + (True,) * n_ys)
    nx, nkt, nct, nxt = sum(x_sizes), sum(const_nz), sum(carry_nz), sum(xs_nz)
    base = nk + nc + nx  # the jvp takes (consts, carry, xs, their tangents), returns (carry, ys, theirs)
    in_order = [*range(nk), *range(base, base + nkt), *range(nk, nk + nc),
                *range(base + nkt, base + nkt + nct), *range(nk + nc, base),
                *range(base + nkt + nct, base + nkt + nct + nxt)]
    out_order = [*range(nc), *range(nc + n_ys, nc + n_ys + nct), *range(nc, nc + n_ys),
                 *range(nc + n_ys + nct, nc + 2 * n_ys + nct)]
    outs = tape_scan_p.bind(
        *consts, *(t for t in const_t if t is not None), *init,
        *_instantiated(init_t, jaxpr.in_avals[nk:], carry_nz), *tapes, *(t for t in tapes_t if t is not None),
        jaxpr=permuted(body_jvp, in_order, out_order), reverse=reverse, num_consts=nk + nkt,
        num_carry=nc + nct, x_sizes=(*x_sizes, *(s for s, t in zip(x_sizes, tapes_t) if t is not None)),
        y_sizes=(*y_sizes, *y_sizes))
    carry_t, ny = iter(outs[nc:nc + nct]), len(y_sizes)
    return [*outs[:nc], *outs[nc + nct:nc + nct + ny]], \
        [*(next(carry_t) if nz else None for nz in carry_nz), *outs[nc + nct + ny:]]


def _tape_scan_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                         jaxpr: ClosedJaxpr, reverse: bool, num_consts: int, num_carry: int,
                         x_sizes: tuple[int, ...], y_sizes: tuple[int, ...]) -> Pair:
    # The known part runs now over the tapes, keeping a tape of its residuals
    # too; the linear part is staged as a loop over that tape and the tangents'.
    nk, nc, n_ys = num_consts, num_carry, sum(y_sizes)
    consts, init, tapes = split_counts(primals, (nk, nc))
    const_t, init_t, tapes_t = split_counts(tangents, (nk, nc))
    const_nz, xs_nz = [t is not None for t in const_t], _per_step(tapes_t, x_sizes)
    carry_nz = carry_fixpoint(
        lambda nz: linearize_jaxpr(jaxpr, tuple(const_nz + nz + xs_nz), tuple(nz) + (False,) * n_ys)[2][:nc],
        [t is not None for t in init_t])
    if not any(carry_nz) and not any(const_nz) and not any(xs_nz):
        return tape_scan_p.bind(*primals, jaxpr=jaxpr, reverse=reverse, num_consts=nk, num_carry=nc,
                                x_sizes=x_sizes, y_sizes=y_sizes), [None] * (nc + len(y_sizes))
    known, linear, _, num_res = linearize_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz),
                                                tuple(carry_nz) + (True,) * n_ys)
    outs = tape_scan_p.bind(*consts, *init, *tapes, jaxpr=known, reverse=reverse, num_consts=nk, num_carry=nc,
                            x_sizes=x_sizes, y_sizes=(*y_sizes, num_res))
    nkt, nct = sum(const_nz), sum(carry_nz)
    # linear takes (residuals, const tangents, carry tangents, x tangents): its loop (const
    # tangents, carry tangents, the residuals' tape then the tangents' tapes).
    r = num_res
    order = [*range(r, r + nkt), *range(r + nkt, r + nkt + nct), *range(r),
             *range(r + nkt + nct, len(linear.in_avals))]
    t_outs = trace.stage(tape_scan_p, [
        *(t for t in const_t if t is not None), *_instantiated(init_t, jaxpr.in_avals[nk:], carry_nz),
        outs[-1], *(t for t in tapes_t if t is not None)], {
        "jaxpr": permuted(linear, order), "reverse": reverse, "num_consts": nkt, "num_carry": nct,
        "x_sizes": (r, *(s for s, t in zip(x_sizes, tapes_t) if t is not None)), "y_sizes": y_sizes})
    carry_t = iter(t_outs[:nct])
    return outs[:-1], [*(next(carry_t) if nz else None for nz in carry_nz), *t_outs[nct:]]


def _tape_scan_transpose(cts: list[Any], *args: Any, jaxpr: ClosedJaxpr, reverse: bool, num_consts: int,
                         num_carry: int, x_sizes: tuple[int, ...], y_sizes: tuple[int, ...]) -> list[Any]:
    # Linear in its carry, some constants and some tapes (the others, residuals,
    # known): a loop the other way over the known tapes and the output tapes'
    # cotangents, carrying the carry's cotangent and the sums of the linear
    # constants', and making the tapes of the linear tapes' cotangents.
    nk, nc = num_consts, num_carry
    consts, init, tapes = split_counts(args, (nk, nc))
    const_lin = [type(a) is UndefinedPrimal for a in consts]
    tape_lin = [type(a) is UndefinedPrimal for a in tapes]
    if tape_lin[0]:
        raise NotImplementedError("the transpose of a loop over tapes linear in its first tape, which gives "
                                  "its length: fgrad's loops keep their residuals' tape first")
    xs_lin = [lin for lin, size in zip(tape_lin, x_sizes) for _ in range(size)]
    init_lin = [type(a) is UndefinedPrimal for a in init]
    carry_lin = linear_carries(jaxpr, [*const_lin, *init_lin, *xs_lin], nk, nc)
    if not all(carry_lin):
        raise NotImplementedError("the transpose of a loop over tapes whose carry is partly not linear: "
                                  "differentiate it by linearizing it (grad, vjp) instead")
    body = _transposed_tape_body(jaxpr, (*const_lin, *[True] * nc, *xs_lin), nk, nc, x_sizes)
    lin_const_avals = [a.aval for a, lin in zip(consts, const_lin) if lin]
    ct_carry = [d.zeros(a) if ct is None else ct for ct, a in zip(cts[:nc], jaxpr.out_avals[:nc])]
    ct_tapes = [zero_tape() if ct is None else ct for ct in cts[nc:]]
    outs = tape_scan_p.bind(
        *(c for c, lin in zip(consts, const_lin) if not lin), *(d.zeros(a) for a in lin_const_avals),
        *ct_carry, *(t for t, lin in zip(tapes, tape_lin) if not lin), *ct_tapes, jaxpr=body,
        reverse=not reverse, num_consts=const_lin.count(False), num_carry=len(lin_const_avals) + nc,
        x_sizes=(*(s for s, lin in zip(x_sizes, tape_lin) if not lin), *y_sizes),
        y_sizes=tuple(s for s, lin in zip(x_sizes, tape_lin) if lin))
    n_lc = len(lin_const_avals)
    sums, ct_init, ct_xs = iter(outs[:n_lc]), outs[n_lc:n_lc + nc], iter(outs[n_lc + nc:])
    return [*(next(sums) if lin else None for lin in const_lin),
            *(ct if lin else None for ct, lin in zip(ct_init, init_lin)),
            *(next(ct_xs) if lin else None for lin in tape_lin)]


@cached_per_jaxpr
def _transposed_tape_body(jaxpr: ClosedJaxpr, linear: tuple[bool, ...], num_consts: int, num_carry: int,
                          x_sizes: tuple[int, ...]) -> ClosedJaxpr:
    """The body of a transposed tape_scan: (known consts, sums of the linear
    consts' cotangents, the carry's cotangent, a step of the known tapes, a step
    of the ys' cotangents) -> (the sums updated, the cotangent of the carry
    before the step, the step of the linear tapes' cotangents)."""
    nk, nc = num_consts, num_carry
    transposed = transpose_jaxpr(jaxpr, linear)
    const_avals, carry_avals, x_avals = split_counts(jaxpr.in_avals, (nk, nc))
    known_c = [a for a, lin in zip(const_avals, linear[:nk]) if not lin]
    lin_c = [a for a, lin in zip(const_avals, linear[:nk]) if lin]
    known_x = [a for a, lin in zip(x_avals, linear[nk + nc:]) if not lin]
    counts = [len(known_c), len(lin_c), nc, len(known_x)]

    body = summing_body(transposed, counts)

    return trace_to_jaxpr(body, [*known_c, *lin_c, *carry_avals, *known_x, *jaxpr.out_avals[nc:]],
                          "transpose of a loop over tapes", fresh=True)


def _tape_jvp(primals: list[Any], tangents: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
              cond_nconsts: int, body_nconsts: int, tape_sizes: tuple[int, ...]) -> Pair:
    # The loop of the body's jvp, keeping the residuals' tangents on tapes of their own.
    cc, bc, init = split_counts(primals, (cond_nconsts, body_nconsts))
    _, bct, initt = split_counts(tangents, (cond_nconsts, body_nconsts))
    nb, nc, n_res, nt = len(bc), len(init), sum(tape_sizes), len(tape_sizes)
    const_nz = [t is not None for t in bct]
    carry_nz = carry_fixpoint(
        lambda nz: jvp_jaxpr(body_jaxpr, tuple(const_nz + nz), tuple(nz) + (False,) * n_res)[1][:nc],
        [t is not None for t in initt])
    if not any(carry_nz) and not any(const_nz):
        return while_tape_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                                 cond_nconsts=cond_nconsts, body_nconsts=body_nconsts,
                                 tape_sizes=tape_sizes), [None] * (nc + nt)
    body_jvp, _ = jvp_jaxpr(body_jaxpr, tuple(const_nz + carry_nz), tuple(carry_nz) + (True,) * n_res)
    nbt, nct = sum(const_nz), sum(carry_nz)
    in_order = [*range(nb), *range(nb + nc, nb + nc + nbt), *range(nb, nb + nc),
                *range(nb + nc + nbt, nb + nc + nbt + nct)]
    out_order = [*range(nc), *range(nc + n_res, nc + n_res + nct), *range(nc, nc + n_res),
                 *range(nc + n_res + nct, nc + 2 * n_res + nct)]
    tangent_avals = [a.strip_weak_type() for a, nz in zip(body_jaxpr.out_avals, carry_nz) if nz]
    outs = while_tape_p.bind(
        *cc, *bc, *(t for t in bct if t is not None), *init,
        *_instantiated(initt, body_jaxpr.out_avals, carry_nz),
        cond_jaxpr=with_unused_inputs(cond_jaxpr, [], tangent_avals),
        body_jaxpr=permuted(body_jvp, in_order, out_order), cond_nconsts=cond_nconsts, body_nconsts=nb + nbt,
        tape_sizes=(*tape_sizes, *tape_sizes))
    carry_t = iter(outs[nc:nc + nct])
    return [*outs[:nc], *outs[nc + nct:nc + nct + nt]], \
        [*(next(carry_t) if nz else None for nz in carry_nz), *outs[nc + nct + nt:]]


def _tape_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                    cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int, body_nconsts: int,
                    tape_sizes: tuple[int, ...]) -> Pair:
    """Reverse mode of a loop whose condition is not known now: the known part of
    the body runs as a `while_tape`, keeping a tape of its residuals (after the
    tapes the loop keeps already), and the linear part is staged as a
    `tape_scan` over that tape (making the tangents of those tapes)."""
    cc, bc, init = split_counts(primals, (cond_nconsts, body_nconsts))
    _, bct, initt = split_counts(tangents, (cond_nconsts, body_nconsts))
    nc, n_res, nt = len(init), sum(tape_sizes), len(tape_sizes)
    const_nz = [t is not None for t in bct]
    # Found by linearizing, not by a jvp: a custom_vjp in the body has no jvp.
    carry_nz = carry_fixpoint(
        lambda nz: linearize_jaxpr(body_jaxpr, tuple(const_nz + nz), tuple(nz) + (False,) * n_res)[2][:nc],
        [t is not None for t in initt])
    if not any(carry_nz) and not (any(const_nz) and n_res):
        if not tape_sizes:  # a while_loop with no tangent through it
            return while_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                                cond_nconsts=cond_nconsts, body_nconsts=body_nconsts), [None] * nc
        outs = while_tape_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                                 cond_nconsts=cond_nconsts, body_nconsts=body_nconsts, tape_sizes=tape_sizes)
        return outs, [None] * (nc + nt)
    known, linear, _, num_res = linearize_jaxpr(body_jaxpr, tuple(const_nz + carry_nz),
                                                tuple(carry_nz) + (True,) * n_res)
    outs = while_tape_p.bind(*cc, *bc, *init, cond_jaxpr=cond_jaxpr, body_jaxpr=known,
                             cond_nconsts=cond_nconsts, body_nconsts=body_nconsts,
                             tape_sizes=(*tape_sizes, num_res))
    nbt, nct = sum(const_nz), sum(carry_nz)
    r = num_res  # linear takes (residuals, const tangents, carry tangents)
    order = [*range(r, r + nbt), *range(r + nbt, r + nbt + nct), *range(r)]
    t_outs = trace.stage(tape_scan_p, [*(t for t in bct if t is not None),
                                       *_instantiated(initt, body_jaxpr.out_avals, carry_nz), outs[-1]], {
        "jaxpr": permuted(linear, order), "reverse": False, "num_consts": nbt, "num_carry": nct,
        "x_sizes": (r,), "y_sizes": tape_sizes})
    carry_t = iter(t_outs[:nct])
    return outs[:-1], [*(next(carry_t) if nz else None for nz in carry_nz), *t_outs[nct:]]


jvp_rules[while_tape_p] = Linearization(_tape_jvp, _tape_linearize)
jvp_rules[tape_scan_p] = Linearization(_tape_scan_jvp, _tape_scan_linearize)
transpose_rules[tape_scan_p] = _tape_scan_transpose


def _example(x: Any, dim: int, b: int) -> Any:
    """Example `b` of a batch along `dim`, as an array (an object array's
    element too stays a 0-d array: a tape)."""
    one = indexing.getitem(x, idx=StaticIndex((slice(None),) * dim + (slice(b, b + 1),)))
    shape = get_aval(one).shape
    return shapes.reshape(one, new_shape=shape[:dim] + shape[dim + 1:])


def _dims(flags: Sequence[bool]) -> tuple[int | None, ...]:
    return tuple(0 if f else None for f in flags)


def _steps_vary(jaxpr: ClosedJaxpr, flags: Sequence[bool], num_consts: int, num_carry: int,
                size: int) -> list[bool]:
    """Which outputs of a loop's body (carry, then a step's outputs) differ between
    examples, given which inputs (consts, carry, a step's inputs) do: by the
    body's batching rules (so a cond of a jvp keeps its primal unbatched), the
    carries to a fixpoint."""
    consts, xs = list(flags[:num_consts]), list(flags[num_consts + num_carry:])

    def batched(carry: list[bool]) -> tuple[bool, ...]:
        return batch_jaxpr(jaxpr, size, _dims([*consts, *carry, *xs]), False)[1]

    carry = carry_fixpoint(lambda c: batched(c)[:num_carry], flags[num_consts:num_consts + num_carry])
    return list(batched(carry))


def _tape_scan_varies(varies: list[bool], size: int, *, jaxpr: ClosedJaxpr, num_consts: int, num_carry: int,
                      x_sizes: tuple[int, ...], y_sizes: tuple[int, ...], **_: Any) -> list[bool]:
    consts, carry, tapes = split_counts(varies, (num_consts, num_carry))
    if tapes[0]:  # the examples' loops have lengths of their own
        return [True] * (num_carry + len(y_sizes))
    outs = _steps_vary(jaxpr, [*consts, *carry, *_per_step([True if v else None for v in tapes], x_sizes)],
                       num_consts, num_carry, size)
    return [*outs[:num_carry], *_tapes_vary(outs[num_carry:], y_sizes)]


def _tape_varies(varies: list[bool], size: int, *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                 cond_nconsts: int, body_nconsts: int, tape_sizes: tuple[int, ...]) -> list[bool]:
    cc, bc, carry = split_counts(varies, (cond_nconsts, body_nconsts))
    nc = len(carry)
    outs = _steps_vary(body_jaxpr, [*bc, *carry], len(bc), nc, size)
    if batch_jaxpr(cond_jaxpr, size, _dims([*cc, *outs[:nc]]), False)[1][0]:
        return [True] * (nc + len(tape_sizes))  # the examples stop at steps of their own
    return [*outs[:nc], *_tapes_vary(outs[nc:], tape_sizes)]


def _tapes_vary(step_varies: Sequence[bool], sizes: Sequence[int]) -> list[bool]:
    out, start = [], 0
    for size in sizes:
        out.append(any(step_varies[start:start + size]))
        start += size
    return out


def _loop_batch(prim: Primitive, varies: Callable[..., list[bool]]) -> Callable[..., Any]:
    """vmap by running `prim` once per example (each its own number of
    iterations) and stacking the results, tapes included; a result that does
    not depend on a batched input (`varies`) is the same for every example,
    and stays unbatched."""

    def rule(args: list[Any], dims: list[Any], **params: Any) -> tuple[list[Any], list[Any]]:
        size = batching.batch_size(args, dims)
        per_example = []
        for b in range(size):
            one = [x if dim is None else _example(x, dim, b) for x, dim in zip(args, dims)]
            per_example.append(prim.bind(*one, **params))
        batched = varies([dim is not None for dim in dims], size, **params)
        outs = [stacked(list(outs)) if v else outs[0] for outs, v in zip(zip(*per_example), batched)]
        return outs, [0 if v else None for v in batched]

    return rule


batch_rules[while_tape_p] = _loop_batch(while_tape_p, _tape_varies)
batch_rules[tape_scan_p] = _loop_batch(tape_scan_p, _tape_scan_varies)


def _while_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                     cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                     body_nconsts: int) -> Pair:
    # A while_loop is a loop keeping no tape of its own.
    return _tape_linearize(trace, primals, tangents, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                           cond_nconsts=cond_nconsts, body_nconsts=body_nconsts, tape_sizes=())


jvp_rules[while_p] = Linearization(_while_jvp, _while_linearize)


def _while_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: a Python `while` with the condition and body written inline."""
    p = eqn.params
    cc, bc, init = split_counts(args, (p["cond_nconsts"], p["body_nconsts"]))
    carry = [writer.name(v) for v in eqn.outvars]
    test, (holds,) = writer.inline(p["cond_jaxpr"], [*cc, *carry], "the condition of while_loop")
    step, new = writer.inline(p["body_jaxpr"], [*bc, *carry], "the body of while_loop")
    return [*assign(carry, init), "while True:", *indented(test), f"    if not {holds}:", "        break",
            *indented(step), *indented(assign(carry, new))]


block_rules[while_p] = _while_block


def _while_batch(args: list[Any], dims: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                 cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], list[Any]]:
    size = batching.batch_size(args, dims)
    cc, bc, init = split_counts(args, (cond_nconsts, body_nconsts))
    ccd, bcd, initd = split_counts(dims, (cond_nconsts, body_nconsts))

    def batched_carries(carry_b: list[bool]) -> Sequence[bool]:  # the carries that differ between examples
        carry_dims = tuple(0 if b else None for b in carry_b)
        (pred_b,) = batch_jaxpr(cond_jaxpr, size, tuple(ccd) + carry_dims, False)[1]
        if pred_b:  # each example stops on its own: every carry differs
            return [True] * len(carry_b)
        return batch_jaxpr(body_jaxpr, size, tuple(bcd) + carry_dims, tuple(carry_b))[1]

    carry_b = carry_fixpoint(batched_carries, [dim is not None for dim in initd])
    carry_dims = tuple(0 if b else None for b in carry_b)
    test, (pred_b,) = batch_jaxpr(cond_jaxpr, size, tuple(ccd) + carry_dims, False)
    body, _ = batch_jaxpr(body_jaxpr, size, tuple(bcd) + carry_dims, tuple(carry_b))
    init = [batching.with_batch_axis(x, dim, size) if b else x for x, dim, b in zip(init, initd, carry_b)]
    out_dims = [0 if b else None for b in carry_b]
    if not pred_b:
        outs = while_p.bind(*cc, *bc, *init, cond_jaxpr=test, body_jaxpr=body, cond_nconsts=cond_nconsts,
                            body_nconsts=body_nconsts)
        return outs, out_dims
    # Loop while any example goes on; an example whose condition fails keeps its carry.
    nc, nb = len(cc), len(bc)
    avals = tuple(get_aval(x) for x in [*cc, *bc, *init])
    new_test, new_body = _until_every_example_is_done(test, body, size, nc, nb, avals)
    outs = while_p.bind(*cc, *cc, *bc, *init, cond_jaxpr=new_test, body_jaxpr=new_body, cond_nconsts=nc,
                        body_nconsts=nc + nb)
    return outs, out_dims


@cached_per_jaxpr
def _until_every_example_is_done(test: ClosedJaxpr, body: ClosedJaxpr, size: int, nc: int, nb: int,
                                 avals: tuple[ShapedArray, ...]) -> tuple[ClosedJaxpr, ClosedJaxpr]:
    """The condition and body of a loop over a batch whose examples stop at
    different steps (cached, so that each call runs the same generated code):
    go on while any example does, and update only those that go on."""

    def any_goes_on(*args: Any) -> list[Any]:
        return [reductions.reduce_or(eval_jaxpr(test.jaxpr, test.consts, *args)[0], axes=(0,))]

    def step_where_it_goes_on(*args: Any) -> list[Any]:
        consts, carry = args[:nc + nb], args[nc + nb:]
        goes_on = eval_jaxpr(test.jaxpr, test.consts, *consts[:nc], *carry)[0]
        new = eval_jaxpr(body.jaxpr, body.consts, *consts[nc:], *carry)
        out = []
        for old, x in zip(carry, new):
            which = shapes.reshape(goes_on, new_shape=(size,) + (1,) * (len(get_aval(x).shape) - 1))
            out.append(ew.where(which, x, old))
        return out

    cc_avals, bc_avals, carry_avals = list(avals[:nc]), list(avals[nc:nc + nb]), list(avals[nc + nb:])
    new_test = trace_to_jaxpr(any_goes_on, cc_avals + carry_avals, "vmap of while_loop", fresh=True)
    new_body = trace_to_jaxpr(step_where_it_goes_on, cc_avals + bc_avals + carry_avals, "vmap of while_loop",
                              fresh=True)
    return new_test, new_body


batch_rules[while_p] = _while_batch
