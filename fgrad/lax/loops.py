"""`while_loop` and `fori_loop`: the `while` primitive.

`while_p` takes what the condition closed over, then what the body closed
over, then the initial carry; its parameters are the two closed jaxprs and the
numbers of constants of each. Rules:

* evaluation is a Python loop over the jaxprs' generated code;
* forward mode is `while` of the body's jvp, its carry's tangents found to a
  fixpoint (a carry gets a tangent when its update depends on one that has);
* reverse mode, where the condition's value is known as the loop runs (under
  grad, eagerly), unrolls the loop onto the differentiation: the forward pass
  keeps each iteration's residuals, as many as there were iterations, and the
  backward pass transposes the iterations in reverse. Memory grows with the
  number of iterations times the residuals of one (use `checkpoint` on the
  body to keep only its inputs). Under jit the condition is not known while
  tracing, and reverse mode raises;
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
from ..core.rules import Linearization, batch_rules, jvp_rules
from ..core.trace import Primitive
from ..ir.check import check_operands
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import trace_to_jaxpr
from ..primitives import batching, reductions, shapes
from ..primitives import derivatives as d
from ..primitives import elementwise as ew
from ..transforms.batching import batch_jaxpr
from ..transforms.call import run_on, split_tangents, with_tangents
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import LinearizeTrace
from ._common import avals_of, check_same, concrete, leaves_of, permuted, runner, stage, with_unused_inputs

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


def _while_jvp(primals: list[Any], tangents: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
               cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], list[Any]]:
    cc, bc, init = _split(primals, cond_nconsts, body_nconsts)
    _, bct, initt = _split(tangents, cond_nconsts, body_nconsts)
    const_nz = [t is not None for t in bct]
    carry_nz = [t is not None for t in initt]
    while True:  # the carries with a tangent: a fixpoint
        body_jvp, out_nz = jvp_jaxpr(body_jaxpr, tuple(const_nz + carry_nz), tuple(carry_nz))
        grown = [a or b for a, b in zip(carry_nz, out_nz)]
        if grown == carry_nz:
            break
        carry_nz = grown
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
    while True:
        holds = concrete(run_on(trace, cond_jaxpr, [*cc, *carry])[0])
        if holds is None:
            raise NotImplementedError(
                "reverse-mode differentiation of fgrad.lax.while_loop (or fori_loop with traced bounds) "
                "needs the loop's condition as it runs, which is not known under jit, make_jaxpr or "
                "vmap. Take the gradient where it is known: fgrad.grad outside jit (grad of a jitted "
                "function works), per-example gradients by a Python loop over the examples rather "
                "than vmap, or give fori_loop bounds known when it is called, which makes it a scan."
            )
        if not holds:
            return split_tangents(trace, carry)
        carry = run_on(trace, body_jaxpr, [*bc, *carry])


jvp_rules[while_p] = Linearization(_while_jvp, _while_linearize)


def _while_batch(args: list[Any], dims: list[Any], *, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                 cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], list[Any]]:
    size = batching.batch_size(args, dims)
    cc, bc, init = _split(args, cond_nconsts, body_nconsts)
    ccd, bcd, initd = _split(dims, cond_nconsts, body_nconsts)
    carry_b = [dim is not None for dim in initd]
    while True:  # the carries that differ between examples: a fixpoint
        carry_dims = tuple(0 if b else None for b in carry_b)
        test, (pred_b,) = batch_jaxpr(cond_jaxpr, size, tuple(ccd) + carry_dims, False)
        body, out_b = batch_jaxpr(body_jaxpr, size, tuple(bcd) + carry_dims, tuple(carry_b))
        grown = [a or b for a, b in zip(carry_b, out_b)]
        if pred_b:  # each example stops on its own: every carry differs
            grown = [True] * len(grown)
        if grown == carry_b:
            break
        carry_b = grown
    init = [batching.with_batch_axis(x, dim, size) if b else x for x, dim, b in zip(init, initd, carry_b)]
    out_dims = [0 if b else None for b in carry_b]
    if not pred_b:
        outs = while_p.bind(*cc, *bc, *init, cond_jaxpr=test, body_jaxpr=body, cond_nconsts=cond_nconsts,
                            body_nconsts=body_nconsts)
        return outs, out_dims
    # Loop while any example goes on; an example whose condition fails keeps its carry.
    nc, nb = len(cc), len(bc)

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

    carry_avals = [get_aval(x) for x in init]
    new_test = trace_to_jaxpr(any_goes_on, [get_aval(x) for x in cc] + carry_avals, "vmap of while_loop",
                              fresh=True)
    new_body = trace_to_jaxpr(step_where_it_goes_on, [get_aval(x) for x in [*cc, *bc]] + carry_avals,
                              "vmap of while_loop", fresh=True)
    outs = while_p.bind(*cc, *cc, *bc, *init, cond_jaxpr=new_test, body_jaxpr=new_body, cond_nconsts=nc,
                        body_nconsts=nc + nb)
    return outs, out_dims


batch_rules[while_p] = _while_batch


# --- the functions -----------------------------------------------------------


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """`val = body_fun(val)` while `cond_fun(val)`, from `init_val` (JAX's
    `lax.while_loop`). The body must return a carry of the same structure,
    shapes and dtypes. Differentiable in forward mode everywhere, and in
    reverse mode under grad outside jit (see the module's docstring: memory
    grows with the number of iterations).

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


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """`val = body_fun(i, val)` for i from `lower` to `upper` (JAX's
    `lax.fori_loop`). With bounds known when it is called it is a `scan` (any
    transform, reverse mode under jit included); with traced bounds, a
    `while_loop`.

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
                           length=max(int(hi) - start, 0))
        return out

    def goes_on(carry: Any) -> Any:
        return carry[0] < upper

    def step_once(carry: Any) -> Any:
        i, val = carry
        return i + 1, body_fun(i, val)

    return while_loop(goes_on, step_once, (lower, init_val))[1]


def _traced(x: Any) -> bool:
    from ..core.trace import Tracer

    return isinstance(x, Tracer)
