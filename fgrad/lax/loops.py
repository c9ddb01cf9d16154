"""`while_loop` and `fori_loop`: the `while` primitive.

`while_p` takes what the condition closed over, then what the body closed
over, then the initial carry; its parameters are the two closed jaxprs and the
numbers of constants of each. Rules:

* evaluation is a Python loop over the jaxprs' generated code, and jit
  writes it as a Python `while` with both jaxprs inline;
* forward mode is `while` of the body's jvp, its carry's tangents found to a
  fixpoint (a carry gets a tangent when its update depends on one that has);
* reverse mode keeps each iteration's residuals, as many as there were
  iterations, and the backward pass transposes the iterations in reverse
  (JAX cannot: XLA needs a static number of iterations). Where the
  condition's value is known as the loop runs (under grad, eagerly) the loop
  is unrolled onto the differentiation; under jit or vmap (from the first
  step where it is not known: vmap may batch a carry partway) the body's jvp is
  split by partial evaluation, and `while_tape` runs the known part keeping
  the residuals on a tape whose length is found at run time, which
  `while_tangents` and its transpose `while_cotangents` run the linear part
  over. Memory grows with the number of iterations times the residuals of
  one (use `checkpoint` on the body to keep only its inputs). Under jit, a
  second derivative through the tape raises;
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

from ..api.pytree import tree_unflatten
from ..core.avals import ShapedArray, get_aval
from ..core.libraries import generic_impls
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
from ..transforms.call import run_on, split_tangents, with_tangents
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import LinearizeTrace, linearize_jaxpr, transpose_jaxpr
from ._common import (
    assign,
    avals_of,
    carry_fixpoint,
    check_same,
    concrete,
    indented,
    leaves_of,
    permuted,
    stacked,
    stage,
    with_unused_inputs,
)

__all__ = ["while_loop", "fori_loop", "while_p"]

Parts = tuple[list[Any], list[Any], list[Any]]
Pair = tuple[list[Any], list[Any]]


def _split(args: Sequence[Any], cond_nconsts: int, body_nconsts: int) -> Parts:
    return (list(args[:cond_nconsts]), list(args[cond_nconsts:cond_nconsts + body_nconsts]),
            list(args[cond_nconsts + body_nconsts:]))


def _while_impl(*args: Any, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                body_nconsts: int) -> list[Any]:
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    test, step = runner(cond_jaxpr), runner(body_jaxpr)
    # The condition's value decides whether to go on: a Python bool, which on
    # a Dask array computes the graph up to this step (each step's test again
    # from the start). A loop is not lazy there; its carry stays a Dask array.
    while test(*cc, *carry)[0]:
        carry = step(*bc, *carry)
    return carry


def _while_aval(*avals: ShapedArray, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                body_nconsts: int) -> list[ShapedArray]:
    cc, bc, carry = _split(avals, cond_nconsts, body_nconsts)
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


while_p = Primitive("while", _while_impl, _while_aval, multiple_results=True)
generic_impls.add(while_p)


def _body_jvp(body_jaxpr: ClosedJaxpr, const_nz: list[bool], carry_nz: list[bool]
              ) -> tuple[ClosedJaxpr, list[bool]]:
    """The body's jvp, and the carries with a tangent (a fixpoint)."""
    carry_nz = carry_fixpoint(
        lambda nz: jvp_jaxpr(body_jaxpr, tuple(const_nz + nz), tuple(nz))[1], carry_nz)
    return jvp_jaxpr(body_jaxpr, tuple(const_nz + carry_nz), tuple(carry_nz))[0], carry_nz


def _while_jvp(primals: list[Any], tangents: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
               cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], list[Any]]:
    cc, bc, init = _split(primals, cond_nconsts, body_nconsts)
    _, bct, initt = _split(tangents, cond_nconsts, body_nconsts)
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


def _while_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                     cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                     body_nconsts: int) -> Pair:
    cc, bc, carry = _split(with_tangents(trace, primals, tangents), cond_nconsts, body_nconsts)
    num_consts = cond_nconsts + body_nconsts
    while True:
        holds = concrete(run_on(trace, cond_jaxpr, [*cc, *carry])[0])
        if holds is None:
            # Not known (any more): the condition can become unknown partway, under vmap, when a carry
            # that starts unbatched is batched by the body. The rest of the loop goes on a tape from
            # here, the steps done so far already differentiated.
            carry_primals, carry_tangents = split_tangents(trace, carry)
            return _linearize_on_a_tape(trace, [*primals[:num_consts], *carry_primals],
                                        [*tangents[:num_consts], *carry_tangents], cond_jaxpr, body_jaxpr,
                                        cond_nconsts, body_nconsts)
        if not holds:
            return split_tangents(trace, carry)
        carry = run_on(trace, body_jaxpr, [*bc, *carry])


# --- reverse mode where the condition is not known: a tape of residuals ----------
#
# Under jit (or vmap) the number of iterations is known only when the code
# runs. The body's jvp is split by partial evaluation into a known part
# (primal carry -> next primal carry and that step's residuals) and a linear
# part (residuals, tangents -> next tangents). `while_tape` runs the known part
# as a loop and keeps each step's residuals in a Python list, carried as a 0-d
# object array (so every pass over avals treats it as one value);
# `while_tangents` applies the linear part over the tape, and its transpose,
# `while_cotangents`, applies the transposed linear part over the tape in
# reverse, summing the constants' cotangents.

_TAPE = ShapedArray((), np.dtype(object))


def _steps(tape: Any) -> list[Any]:
    """The steps a tape holds. Zeros of the tape's aval, which a batched cond
    passes to the branch it did not take, stand for a loop of no steps. A
    scan's step of a stack of tapes (its residuals) is NumPy's element itself,
    the list."""
    steps = tape[()] if isinstance(tape, np.ndarray) else tape
    return list(steps or [])


def _tape_impl(*args: Any, cond_jaxpr: ClosedJaxpr, known_jaxpr: ClosedJaxpr, cond_nconsts: int,
               body_nconsts: int) -> list[Any]:
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    test, step = runner(cond_jaxpr), runner(known_jaxpr)
    n, steps = len(carry), []
    while test(*cc, *carry)[0]:
        outs = step(*bc, *carry)
        carry = outs[:n]
        steps.append(outs[n:])
    tape = np.empty((), object)
    tape[()] = steps
    return [*carry, tape]


def _tape_aval(*avals: ShapedArray, cond_jaxpr: ClosedJaxpr, known_jaxpr: ClosedJaxpr, cond_nconsts: int,
               body_nconsts: int) -> list[ShapedArray]:
    cc, bc, carry = _split(avals, cond_nconsts, body_nconsts)
    check_operands("while_tape (its condition)", cc + carry, cond_jaxpr)
    check_operands("while_tape (its body)", bc + carry, known_jaxpr)
    return [*carry, _TAPE]


while_tape_p = Primitive("while_tape", _tape_impl, _tape_aval, multiple_results=True)
generic_impls.add(while_tape_p)  # the tape is NumPy's object array on any library: a list of their arrays


def _tangents_impl(tape: Any, *args: Any, linear_jaxpr: ClosedJaxpr, num_consts: int) -> list[Any]:
    consts, carry = list(args[:num_consts]), list(args[num_consts:])
    step = runner(linear_jaxpr)
    for res in _steps(tape):
        carry = step(*res, *consts, *carry)
    return carry


def _tangents_aval(tape: ShapedArray, *avals: ShapedArray, linear_jaxpr: ClosedJaxpr,
                   num_consts: int) -> list[ShapedArray]:
    return list(avals[num_consts:])


while_tangents_p = Primitive("while_tangents", _tangents_impl, _tangents_aval, multiple_results=True)
generic_impls.add(while_tangents_p)


def _cotangents_impl(tape: Any, *cts: Any, transposed_jaxpr: ClosedJaxpr, num_consts: int) -> list[Any]:
    """The cotangents of the constants (summed over the steps), then of the
    initial carry, from those of the final carry."""
    step = runner(transposed_jaxpr)
    consts: list[Any] | None = None
    carry = list(cts)
    for res in reversed(_steps(tape)):
        outs = step(*res, *carry)
        step_consts, carry = outs[:num_consts], outs[num_consts:]
        consts = step_consts if consts is None else [a + b for a, b in zip(consts, step_consts)]
    if consts is None:  # no iteration: nothing reaches the constants
        consts = [d.zeros_now(a) for a in transposed_jaxpr.out_avals[:num_consts]]
    return [*consts, *carry]


def _cotangents_aval(tape: ShapedArray, *avals: ShapedArray, transposed_jaxpr: ClosedJaxpr,
                     num_consts: int) -> list[ShapedArray]:
    return transposed_jaxpr.out_avals


while_cotangents_p = Primitive("while_cotangents", _cotangents_impl, _cotangents_aval, multiple_results=True)
generic_impls.add(while_cotangents_p)


def _tangents_transpose(cts: list[Any], tape: Any, *args: Any, linear_jaxpr: ClosedJaxpr,
                        num_consts: int) -> list[Any]:
    # Every operand but the tape is a tangent; one that is not linear here is
    # a carry's tangent instantiated as zeros, and gets no cotangent.
    linear = [type(a) is UndefinedPrimal for a in args]
    num_res = len(linear_jaxpr.in_avals) - len(args)
    transposed = transpose_jaxpr(linear_jaxpr, (False,) * num_res + (True,) * len(args))
    filled = [d.zeros(a) if ct is None else ct for ct, a in zip(cts, linear_jaxpr.out_avals)]
    cts_in = while_cotangents_p.bind(tape, *filled, transposed_jaxpr=transposed, num_consts=num_consts)
    return [None, *(ct if lin else None for ct, lin in zip(cts_in, linear))]


transpose_rules[while_tangents_p] = _tangents_transpose


def _no_higher_order(primals: list[Any], tangents: list[Any], **params: Any) -> Any:
    raise NotImplementedError(
        "a second derivative through fgrad.lax.while_loop under jit (or vmap) is not supported: "
        "fgrad differentiates its tape of residuals once. Take the higher derivatives outside jit, "
        "where the loop is unrolled as it runs."
    )


_TAPE_PRIMITIVES = (while_tape_p, while_tangents_p, while_cotangents_p)
for _p in _TAPE_PRIMITIVES:
    jvp_rules[_p] = _no_higher_order


def _example(x: Any, dim: int, b: int) -> Any:
    """Example `b` of a batch along `dim`, as an array (an object array's
    element too stays a 0-d array: a tape)."""
    one = indexing.getitem(x, idx=StaticIndex((slice(None),) * dim + (slice(b, b + 1),)))
    shape = get_aval(one).shape
    return shapes.reshape(one, new_shape=shape[:dim] + shape[dim + 1:])


def _loop_batch(prim: Primitive) -> Callable[..., Any]:
    """vmap by running `prim` once per example (each its own number of
    iterations) and stacking the results, tapes included."""

    def rule(args: list[Any], dims: list[Any], **params: Any) -> tuple[list[Any], list[Any]]:
        size = batching.batch_size(args, dims)
        per_example = []
        for b in range(size):
            one = [x if dim is None else _example(x, dim, b) for x, dim in zip(args, dims)]
            per_example.append(prim.bind(*one, **params))
        outs = [stacked(list(outs)) for outs in zip(*per_example)]
        return outs, [0] * len(outs)

    return rule


for _p in _TAPE_PRIMITIVES:
    batch_rules[_p] = _loop_batch(_p)


def _linearize_on_a_tape(trace: LinearizeTrace, primals: list[Any], tangents: list[Any],
                         cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                         body_nconsts: int) -> Pair:
    cc, bc, init = _split(primals, cond_nconsts, body_nconsts)
    _, bct, initt = _split(tangents, cond_nconsts, body_nconsts)
    const_nz = [t is not None for t in bct]
    # Found by linearizing, not by _body_jvp: a custom_vjp in the body has no jvp.
    carry_nz = carry_fixpoint(lambda nz: linearize_jaxpr(body_jaxpr, tuple(const_nz + nz), False)[2],
                               [t is not None for t in initt])
    nc, nbt = len(init), sum(const_nz)
    if not sum(carry_nz):
        outs = while_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                            body_nconsts=body_nconsts)
        return outs, [None] * nc
    known, linear, out_nonzeros, _ = linearize_jaxpr(body_jaxpr, tuple(const_nz) + tuple(carry_nz),
                                                     tuple(carry_nz))
    assert list(out_nonzeros) == list(carry_nz), "the carry's tangents are a fixpoint"
    outs = while_tape_p.bind(*cc, *bc, *init, cond_jaxpr=cond_jaxpr, known_jaxpr=known,
                             cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    carry, tape = outs[:nc], outs[nc]
    init_t = [t if t is not None else d.zeros_like_value(x) for x, t, nz in zip(init, initt, carry_nz) if nz]
    t_outs = trace.stage(while_tangents_p, [tape, *(t for t in bct if t is not None), *init_t],
                         {"linear_jaxpr": linear, "num_consts": nbt})
    it = iter(t_outs)
    return carry, [next(it) if nz else None for nz in carry_nz]


jvp_rules[while_p] = Linearization(_while_jvp, _while_linearize)


def _while_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: a Python `while` with the condition and body written inline."""
    p = eqn.params
    cc, bc, init = _split(args, p["cond_nconsts"], p["body_nconsts"])
    carry = [writer.name(v) for v in eqn.outvars]
    test, (holds,) = writer.inline(p["cond_jaxpr"], [*cc, *carry], "the condition of while_loop")
    step, new = writer.inline(p["body_jaxpr"], [*bc, *carry], "the body of while_loop")
    return [*assign(carry, init), "while True:", *indented(test), f"    if not {holds}:", "        break",
            *indented(step), *indented(assign(carry, new))]


block_rules[while_p] = _while_block


def _while_batch(args: list[Any], dims: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                 cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], list[Any]]:
    size = batching.batch_size(args, dims)
    cc, bc, init = _split(args, cond_nconsts, body_nconsts)
    ccd, bcd, initd = _split(dims, cond_nconsts, body_nconsts)

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


# --- the functions -----------------------------------------------------------


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """`val = body_fun(val)` while `cond_fun(val)`, from `init_val` (JAX's
    `lax.while_loop`). The body must return a carry of the same structure,
    shapes and dtypes. Differentiable in both modes, under jit and vmap too
    (reverse mode keeps every iteration's residuals: memory grows with the
    number of iterations; see the module's docstring).

    >>> import fgrad
    >>> while_loop(lambda x: x < 10.0, lambda x: x * 2.0, 1.0)
    np.float64(16.0)
    >>> fgrad.grad(lambda x: while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x))(1.0)
    np.float64(16.0)
    """
    leaves, tree = leaves_of(init_val)
    avals = avals_of(leaves)
    test = stage(cond_fun, [tree], [avals], getattr(cond_fun, "__name__", "cond_fun"))
    (pred,) = test.out_avals if len(test.out_avals) == 1 else (None,)
    if pred is None or pred.shape != () or pred.dtype != np.dtype(bool):
        got = ", ".join(a.str_short() for a in test.out_avals)
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but it returns ({got})")
    body = stage(body_fun, [tree], [avals], getattr(body_fun, "__name__", "body_fun"))
    check_same("while_loop: body_fun must return a carry of the type it takes (the carry given, then the "
               "body's result)", tree, avals, body.out_tree, body.out_avals, init_val)
    outs = while_p.bind(*test.consts, *body.consts, *leaves, cond_jaxpr=test.jaxpr, body_jaxpr=body.jaxpr,
                        cond_nconsts=len(test.consts), body_nconsts=len(body.consts))
    return tree_unflatten(tree, outs)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any, *,
              checkpoints: int | None = None) -> Any:
    """`val = body_fun(i, val)` for i from `lower` to `upper` (JAX's
    `lax.fori_loop`). With bounds known when it is called it is a `scan`
    (`checkpoints=k` as scan's: reverse mode keeps k carries and recomputes the
    rest); with traced bounds, a `while_loop` (reverse mode works for both).

    >>> fori_loop(0, 4, lambda i, x: x + i, 0.0)
    np.float64(6.0)
    """
    lo, hi = concrete(lower), concrete(upper)
    for name, v in (("lower", lower), ("upper", upper)):
        aval = get_aval(leaves_of(v)[0][0]) if leaves_of(v)[0] else None
        if aval is None or aval.shape != () or aval.dtype.kind not in "iu":
            raise TypeError(f"fori_loop: `{name}` must be an integer scalar, not {v!r}")
    if lo is not None and hi is not None and not _traced(lower) and not _traced(upper):
        from .scan import scan

        start = int(lo)

        def step(carry: Any, _: Any) -> Any:
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, out), _ = scan(step, (np.asarray(start, get_aval(leaves_of(lower)[0][0]).dtype), init_val), None,
                           length=max(int(hi) - start, 0), checkpoints=checkpoints)
        return out
    if checkpoints is not None:
        raise ValueError("fori_loop: checkpoints needs bounds known when fori_loop is called (it makes the "
                         "loop a scan of a fixed number of steps); with traced bounds it is a while_loop")

    def goes_on(carry: Any) -> Any:
        return carry[0] < upper

    def step_once(carry: Any) -> Any:
        i, val = carry
        return i + 1, body_fun(i, val)

    return while_loop(goes_on, step_once, (lower, init_val))[1]


def _traced(x: Any) -> bool:
    from ..core.trace import Tracer

    return isinstance(x, Tracer)
