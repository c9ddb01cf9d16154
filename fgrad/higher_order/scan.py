"""The `scan` primitive: a loop of a known number of steps over the leading
axis of its inputs (`fgrad.lax.scan`, `map` and `fori_loop` with static
bounds bind it).

`scan_p` takes what the body closed over, the initial carry, then the arrays
`xs` scanned along their leading axis; the body maps (constants, carry, one
slice of each x) to (carry, one slice of each y), and the ys are stacked.
Parameters: the body's closed `jaxpr`, `length`, `reverse`, `num_consts` and
`num_carry`. Rules:

* evaluation is a Python loop over the body's generated code, and jit
  writes it as a Python `for` with the body inline;
* forward mode is `scan` of the body's jvp, the carry's tangents found to a
  fixpoint;
* reverse mode stays a loop (JAX's recipe): the body is linearized once; a
  scan of its known part runs now and stacks each step's residuals (those
  of the constants alone computed once, an x not stacked again), the linear
  part is staged as a scan over them, and its transpose is a scan the other
  way, whose per-step products of two step values (a weight's cotangent)
  become one product of the stacks. `length` steps of residuals are kept
  (use `checkpoint` on the body to keep only its inputs);
* vmap batches the carry to a fixpoint, and moves the batch axis of the xs
  behind the scanned one; the ys come out batched along axis 1.

`scan(..., checkpoints=k)` is no rule of its own: `fgrad.lax.scan` binds
nested `checkpoint`s of shorter scans (`fgrad/lax/scan.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.libraries import current_library, on_every_namespace
from ..core.rules import (
    Linearization,
    UndefinedPrimal,
    batch_rules,
    block_rules,
    jit_rewrites,
    jvp_rules,
    transpose_rules,
)
from ..core.trace import Primitive
from ..ir.cache import cached_per_jaxpr
from ..ir.check import check_operands
from ..ir.codegen import runner
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from ..ir.passes import dce_closed_jaxpr, has_effects
from ..ir.staging import trace_to_jaxpr
from ..primitives import batching, linalg, shapes
from ..primitives import derivatives as d
from ..primitives import elementwise as ew
from ..transforms.batching import batch_jaxpr
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import LinearizeTrace, linearize_jaxpr, transpose_jaxpr
from ._common import (
    assign,
    carry_fixpoint,
    depends_on,
    indented,
    linear_carries,
    permuted,
    split_counts,
    stack_now,
    summing_body,
)
from .while_loop import Pair

__all__ = ["scan_p"]


def _scan_impl(*args: Any, jaxpr: ClosedJaxpr, length: int, reverse: bool, num_consts: int,
               num_carry: int) -> list[Any]:
    consts, carry, xs = split_counts(args, (num_consts, num_carry))
    step = runner(jaxpr)
    # The standard's indexing names every axis (x[i, ...]); NumPy's x[i] gives scalars, not 0-d arrays.
    row = (lambda x, i: x[i]) if current_library() is None else (lambda x, i: x[i, ...])
    ys: list[list[Any]] = []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = step(*consts, *carry, *(row(x, i) for x in xs))
        carry = outs[:num_carry]
        ys.append(outs[num_carry:])
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    return [*carry, *(stack_now([y[k] for y in ys], a) for k, a in enumerate(y_avals))]


def _scan_aval(*avals: ShapedArray, jaxpr: ClosedJaxpr, length: int, reverse: bool, num_consts: int,
               num_carry: int) -> list[ShapedArray]:
    consts, carry, xs = split_counts(avals, (num_consts, num_carry))
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise ValueError(f"scan: an x is {x.str_short()}, but the scan has length {length}")
    slices = [ShapedArray(x.shape[1:], x.dtype) for x in xs]
    check_operands("scan (its body)", [*consts, *carry, *slices], jaxpr)
    outs = jaxpr.out_avals
    if [(a.shape, a.dtype) for a in outs[:num_carry]] != [(a.shape, a.dtype) for a in carry]:
        got = ", ".join(a.str_short() for a in outs[:num_carry])
        raise TypeError(f"scan: the body returns a carry of ({got}) "
                        f"for one of ({', '.join(a.str_short() for a in carry)})")
    return [*carry, *(ShapedArray((length, *a.shape), a.dtype) for a in outs[num_carry:])]


scan_p = Primitive("scan", on_every_namespace(_scan_impl), _scan_aval, multiple_results=True)


def _scan_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr, length: int, reverse: bool,
              num_consts: int, num_carry: int) -> tuple[list[Any], list[Any]]:
    consts, init, xs = split_counts(primals, (num_consts, num_carry))
    ct, initt, xst = split_counts(tangents, (num_consts, num_carry))
    const_nz, carry_nz, xs_nz = ([t is not None for t in ts] for ts in (ct, initt, xst))
    n_ys = len(jaxpr.out_avals) - num_carry
    carry_nz = carry_fixpoint(  # the carries with a tangent
        lambda nz: jvp_jaxpr(jaxpr, tuple(const_nz + nz + xs_nz), tuple(nz) + (False,) * n_ys)[1][:num_carry],
        carry_nz)
    body_jvp, out_nz = jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz), tuple(carry_nz) + (False,) * n_ys)
    nk, nc, nx = num_consts, num_carry, len(xs)
    nkt, nct, nxt = sum(const_nz), sum(carry_nz), sum(xs_nz)
    nyt = sum(out_nz[nc:])
    # The jvp takes (consts, carry, xs, their tangents) and returns (carry, ys,
    # their tangents); the scan's body takes each group with its tangents.
    base = nk + nc + nx
    in_order = [*range(nk), *range(base, base + nkt), *range(nk, nk + nc),
                *range(base + nkt, base + nkt + nct), *range(nk + nc, base),
                *range(base + nkt + nct, base + nkt + nct + nxt)]
    out_order = [*range(nc), *range(nc + n_ys, nc + n_ys + nct), *range(nc, nc + n_ys),
                 *range(nc + n_ys + nct, nc + n_ys + nct + nyt)]
    body = permuted(body_jvp, in_order, out_order)
    init_t = [t if t is not None else d.zeros_like_value(x) for x, t, nz in zip(init, initt, carry_nz) if nz]
    outs = scan_p.bind(*consts, *(t for t in ct if t is not None), *init, *init_t, *xs,
                       *(t for t in xst if t is not None), jaxpr=body, length=length, reverse=reverse,
                       num_consts=nk + nkt, num_carry=nc + nct)
    carry, carry_t = outs[:nc], iter(outs[nc:nc + nct])
    ys, ys_t = outs[nc + nct:nc + nct + n_ys], iter(outs[nc + nct + n_ys:])
    return [*carry, *ys], [next(carry_t) if nz else None for nz in carry_nz] + \
        [next(ys_t) if nz else None for nz in out_nz[nc:]]


def _scan_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr,
                    length: int, reverse: bool, num_consts: int, num_carry: int) -> Pair:
    # JAX's recipe: the body linearized once (linearize_jaxpr); its known part runs
    # now as a scan that also stacks each step's residuals, and its linear part is
    # staged as another scan over those residuals, which transposes to a scan in
    # the other direction. Residuals that depend only on the constants (W in
    # h @ W) are computed once, not stacked.
    nk, nc = num_consts, num_carry
    consts, init, xs = split_counts(primals, (nk, nc))
    const_t, init_t, xs_t = split_counts(tangents, (nk, nc))
    split = _split_body(jaxpr, tuple(t is not None for t in tangents), nk, nc)
    if not any(split.out_nonzeros):  # no tangent reaches an output
        return scan_p.bind(*primals, jaxpr=jaxpr, length=length, reverse=reverse, num_consts=nk,
                           num_carry=nc), [None] * len(jaxpr.out_avals)
    invariant = eval_jaxpr(split.invariant.jaxpr, split.invariant.consts, *consts) if split.invariant else []
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=split.known, length=length, reverse=reverse,
                       num_consts=nk, num_carry=nc)
    n_ys = len(jaxpr.out_avals) - nc
    primals_out, stacked = outs[:nc + n_ys], outs[nc + n_ys:]
    stacked_res = [stacked[k] if kind == "y" else xs[k] for kind, k in split.res_sources]
    carry_t = [t if t is not None else d.zeros(a.strip_weak_type())
               for t, a, nz in zip(init_t, jaxpr.in_avals[nk:nk + nc], split.carry_nonzeros) if nz]
    linear_args = [*invariant, *(t for t in const_t if t is not None), *carry_t, *stacked_res,
                   *(t for t in xs_t if t is not None)]
    t_outs = trace.stage(scan_p, linear_args, {
        "jaxpr": split.linear, "length": length, "reverse": reverse,
        "num_consts": len(invariant) + sum(t is not None for t in const_t), "num_carry": len(carry_t)})
    it = iter(t_outs)
    return primals_out, [next(it) if nz else None for nz in split.out_nonzeros]


class _Split:
    """Reverse mode's parts of a scan's body (see `_split_body`)."""

    __slots__ = ("known", "invariant", "linear", "carry_nonzeros", "out_nonzeros", "res_sources")

    def __init__(self, known: ClosedJaxpr, invariant: ClosedJaxpr | None, linear: ClosedJaxpr,
                 carry_nonzeros: tuple[bool, ...], out_nonzeros: tuple[bool, ...],
                 res_sources: _Sources) -> None:
        self.known, self.invariant, self.linear = known, invariant, linear
        self.carry_nonzeros, self.out_nonzeros = carry_nonzeros, out_nonzeros
        self.res_sources = res_sources


@cached_per_jaxpr
def _split_body(jaxpr: ClosedJaxpr, nonzeros: tuple[bool, ...], num_consts: int, num_carry: int) -> _Split:
    """The body of a scan split for reverse mode, given which inputs have tangents
    (cached, so that every call runs the same generated code):

    * `known`: (consts, carry, x) -> (carry, y, the residuals that vary by step);
    * `invariant`: consts -> the residuals that depend on the constants alone,
      computed once (None if there are none);
    * `linear`: (invariant residuals, const tangents, carry tangents, varying
      residuals, x tangents) -> (carry tangents, y tangents), a scan body;

    with `carry_nonzeros`, the carries that get a tangent (a fixpoint: a carry
    has one when its update depends on one that has), and `out_nonzeros`, the
    outputs (carries, then ys) with a tangent."""
    nk, nc = num_consts, num_carry
    n_ys = len(jaxpr.out_avals) - nc
    const_nz, carry_nz, xs_nz = (list(part) for part in split_counts(nonzeros, (nk, nc)))
    carry_nz = carry_fixpoint(
        lambda c: linearize_jaxpr(jaxpr, tuple(const_nz + c + xs_nz), tuple(c) + (False,) * n_ys)[2][:nc],
        carry_nz)
    nz = tuple(const_nz + carry_nz + xs_nz)
    known, linear, out_nz, num_res = linearize_jaxpr(jaxpr, nz, tuple(carry_nz) + (False,) * n_ys)
    n_out = nc + n_ys
    fixed = [not v for v in depends_on(known.jaxpr, range(nk, len(known.in_avals)))[n_out:]]
    if any(has_effects(e) for e in known.jaxpr.eqns):  # an effect runs once per step, never once ahead
        fixed = [False] * len(fixed)
    invariant = None
    if any(fixed):
        only = dce_closed_jaxpr(known, [False] * n_out + fixed)
        consts_avals = known.in_avals[:nk]
        rest = known.in_avals[nk:]

        def invariant_part(*consts: Any) -> list[Any]:  # the rest of the inputs are unused after DCE
            return eval_jaxpr(only.jaxpr, only.consts, *consts, *(np.zeros(a.shape, a.dtype) for a in rest))

        invariant = trace_to_jaxpr(invariant_part, consts_avals, "linearize of scan", fresh=True)
        known = dce_closed_jaxpr(known, [True] * n_out + [not f for f in fixed])
    # A varying residual that is an x itself, or one stacked already, is not stacked again.
    kj = known.jaxpr
    kept, res_sources = _stacked_once(kj.outvars[n_out:], kj.invars[nk + nc:])
    known = ClosedJaxpr(Jaxpr(kj.constvars, kj.invars, [*kj.outvars[:n_out], *kept], kj.eqns), known.consts)
    # linear's inputs: residuals (in known's order), then the tangents of (consts, carry, xs)
    res_fixed = [i for i, f in enumerate(fixed) if f]
    res_varying = [i for i, f in enumerate(fixed) if not f]
    n_ct, n_carry_t = sum(const_nz), sum(carry_nz)
    t0 = num_res
    order = [*res_fixed, *range(t0, t0 + n_ct), *range(t0 + n_ct, t0 + n_ct + n_carry_t), *res_varying,
             *range(t0 + n_ct + n_carry_t, t0 + sum(nz))]
    return _Split(known, invariant, permuted(linear, order), tuple(carry_nz), tuple(out_nz), res_sources)


_Sources = tuple[tuple[str, int], ...]  # where each stacked value is found (see _stacked_once)


def _stacked_once(values: Sequence[Any], xs: Sequence[Var]) -> tuple[list[Any], _Sources]:
    """What a scan's body must return for the scan to stack `values` (one per step):
    each value once, none that is one of its `xs`. With where each value is then
    found: ("y", k), the k-th of those returned, or ("x", j), the j-th x."""
    kept: list[Any] = []
    sources = []
    for v in values:
        if isinstance(v, Var) and v in xs:
            sources.append(("x", xs.index(v)))
        elif any(v is w for w in kept):
            sources.append(("y", next(k for k, w in enumerate(kept) if v is w)))
        else:
            sources.append(("y", len(kept)))
            kept.append(v)
    return kept, tuple(sources)


def _scan_transpose(cts: list[Any], *args: Any, jaxpr: ClosedJaxpr, length: int, reverse: bool,
                    num_consts: int, num_carry: int) -> list[Any]:
    # A scan linear in its carry, in some constants and in some xs (the others,
    # residuals, known): a scan the other way, carrying the carry's cotangent and
    # the sums of the linear constants' cotangents, and stacking the linear xs'.
    nk, nc = num_consts, num_carry
    linear = [type(a) is UndefinedPrimal for a in args]
    consts, init, xs = split_counts(args, (nk, nc))
    # A known initial carry that the body makes linear is a tangent that starts at
    # zero (nothing else is linear): it is transposed as linear, its cotangent
    # dropped. One that stays known runs a computation of its own, which a
    # linear scan does not have: its scan was not split by linearization.
    carry_lin = linear_carries(jaxpr, linear, nk, nc)
    if not all(carry_lin):
        raise NotImplementedError(
            "the transpose of a scan whose carry is partly not linear (a scan of forward mode's jvp, "
            "transposed whole): differentiate it by linearizing it (grad, vjp) instead")
    dropped = [not lin for lin in linear[nk:nk + nc]]
    flags = (*linear[:nk], *[True] * nc, *linear[nk + nc:])
    const_lin, _, xs_lin = split_counts(flags, (nk, nc))
    avals = jaxpr.out_avals
    ct_carry = [d.zeros(a) if ct is None else ct for ct, a in zip(cts[:nc], avals[:nc])]
    ct_ys = [d.zeros(ShapedArray((length, *a.shape), a.dtype)) if ct is None else ct
             for ct, a in zip(cts[nc:], avals[nc:])]
    body, hoisted, piece_sources = _transposed_body(jaxpr, flags, nk, nc)
    lin_const_avals = [a.aval for a, lin in zip(consts, const_lin) if lin]
    acc = [d.zeros(a) for a, how in zip(lin_const_avals, hoisted) if how is None]
    known_consts = [c for c, lin in zip(consts, const_lin) if not lin]
    known_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
    outs = scan_p.bind(*known_consts, *acc, *ct_carry, *known_xs, *ct_ys, jaxpr=body, length=length,
                       reverse=not reverse, num_consts=len(known_consts), num_carry=len(acc) + nc)
    n_acc, n_lx = len(acc), sum(xs_lin)
    sums, ct_init = iter(outs[:n_acc]), outs[n_acc:n_acc + nc]
    ct_xs, stacked = iter(outs[n_acc + nc:n_acc + nc + n_lx]), outs[n_acc + nc + n_lx:]
    pieces = iter([stacked[k] if kind == "y" else known_xs[k] for kind, k in piece_sources])
    ct_consts = [next(sums) if how is None else _sum_of_products(how, next(pieces), next(pieces))
                 for how in hoisted]
    it = iter(ct_consts)
    return [*(next(it) if lin else None for lin in const_lin),
            *(None if drop else ct for ct, drop in zip(ct_init, dropped)),
            *(next(ct_xs) if lin else None for lin in xs_lin)]


def _sum_of_products(how: str, us: Any, vs: Any) -> Any:
    """The sum over the steps of the products a transposed body made at each: for
    "outer", u_t v_t^T of vectors, for "matmul", u_t^T v_t of matrices; one product
    of the stacked pieces, rather than one per step summed in the loop."""
    if how == "matmul":  # (T, m, k), (T, m, n): rows of all the steps at once
        t, m, k = get_aval(us).shape
        us = shapes.reshape(us, new_shape=(t * m, k))
        vs = shapes.reshape(vs, new_shape=(t * m, get_aval(vs).shape[-1]))
    return linalg.matmul(shapes.transpose(us, axes=(1, 0)), vs)


@cached_per_jaxpr
def _transposed_body(jaxpr: ClosedJaxpr, linear: tuple[bool, ...], num_consts: int,
                     num_carry: int) -> tuple[ClosedJaxpr, tuple[str | None, ...], _Sources]:
    """The body of a transposed scan: (known consts, sums of the linear consts'
    cotangents, the carry's cotangent, known xs, the ys' cotangents) -> (the sums
    updated, the cotangent of the carry before the step, the linear xs' cotangents,
    then the pieces of the hoisted products).

    A linear constant's cotangent that is, at each step, a product of two values
    of the step (a weight's in a recurrence: u_t v_t^T, or u_t^T v_t) is not summed
    in the loop: the body returns the two pieces, stacked by the scan, and one
    product of the stacks makes the sum (`_sum_of_products`). The second value
    returned says, for each linear constant, "outer", "matmul", or None (summed);
    the third where each piece is found (`_stacked_once`): a known x is not stacked again."""
    nk, nc = num_consts, num_carry
    const_lin, _, xs_lin = split_counts(linear, (nk, nc))
    transposed = transpose_jaxpr(jaxpr, linear)
    n_lc = sum(const_lin)
    hoisted, pieces = _hoistable_products(transposed.jaxpr, n_lc)
    tj = transposed.jaxpr
    n_kc = const_lin.count(False)
    kept, piece_sources = _stacked_once([v for pair in pieces for v in pair],
                                        tj.invars[n_kc:n_kc + xs_lin.count(False)])
    summed = [v for v, how in zip(tj.outvars[:n_lc], hoisted) if how is None]
    outvars = [*summed, *tj.outvars[n_lc:], *kept]
    transposed = dce_closed_jaxpr(ClosedJaxpr(Jaxpr(tj.constvars, tj.invars, outvars, tj.eqns),
                                              transposed.consts))
    const_avals, carry_avals, x_avals = split_counts(jaxpr.in_avals, (nk, nc))
    known_c = [a for a, lin in zip(const_avals, const_lin) if not lin]
    lin_c = [a for a, lin in zip(const_avals, const_lin) if lin]
    summed_c = [a for a, how in zip(lin_c, hoisted) if how is None]
    known_x = [a for a, lin in zip(x_avals, xs_lin) if not lin]
    y_avals = jaxpr.out_avals[nc:]
    counts = [len(known_c), len(summed_c), nc, len(known_x)]

    body = summing_body(transposed, counts)

    closed = trace_to_jaxpr(body, [*known_c, *summed_c, *carry_avals, *known_x, *y_avals],
                            "transpose of scan", fresh=True)
    return closed, hoisted, piece_sources


def _hoistable_products(jaxpr: Jaxpr, n_outputs: int) -> tuple[tuple[str | None, ...], list[tuple[Var, Var]]]:
    """Which of the first `n_outputs` outputs of `jaxpr` are a product of two of its
    values that a stack can make at once: mul(reshape(u, (k, 1)), v) of vectors
    ("outer"), or matmul(transpose(u), v) of matrices ("matmul"); and those pairs."""
    producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    uses: dict[Var, int] = {}
    for eqn in jaxpr.eqns:
        for a in eqn.invars:
            if isinstance(a, Var):
                uses[a] = uses.get(a, 0) + 1
    kinds: list[str | None] = []
    pairs: list[tuple[Var, Var]] = []
    for out in jaxpr.outvars[:n_outputs]:
        kind = _product_kind(out, producer, uses)
        kinds.append(kind)
        if kind is not None:
            first, second = producer[out].invars  # type: ignore[index]
            pairs.append((producer[first].invars[0], second))  # type: ignore[index, arg-type]
    return tuple(kinds), pairs


def _product_kind(out: Any, producer: dict[Var, JaxprEqn], uses: dict[Var, int]) -> str | None:
    """"outer" or "matmul" if `out` is such a product (see `_hoistable_products`), else None."""
    eqn = producer.get(out) if isinstance(out, Var) else None
    if eqn is None or len(eqn.invars) != 2 or not all(isinstance(a, Var) for a in eqn.invars):
        return None
    first, second = eqn.invars
    inner = producer.get(first)  # type: ignore[arg-type]
    if inner is None or not isinstance(inner.invars[0], Var) or uses.get(first) != 1:  # type: ignore[arg-type]
        return None
    u = inner.invars[0]
    if u.aval.dtype != out.aval.dtype or second.aval.dtype != out.aval.dtype:
        return None
    if (eqn.primitive is ew.mul_p and inner.primitive is shapes.reshape_p and u.aval.ndim == 1
            and second.aval.ndim == 1 and inner.params["new_shape"] == (u.aval.shape[0], 1)):
        return "outer"
    if (eqn.primitive is linalg.matmul_p and inner.primitive is shapes.transpose_p
            and inner.params["axes"] == (1, 0) and u.aval.ndim == 2 and second.aval.ndim == 2):
        return "matmul"
    return None


jvp_rules[scan_p] = Linearization(_scan_jvp, _scan_linearize)
transpose_rules[scan_p] = _scan_transpose


def _scan_batch(args: list[Any], dims: list[Any], *, jaxpr: ClosedJaxpr, length: int, reverse: bool,
                num_consts: int, num_carry: int) -> tuple[list[Any], list[Any]]:
    size = batching.batch_size(args, dims)
    consts, init, xs = split_counts(args, (num_consts, num_carry))
    cd, initd, xsd = split_counts(dims, (num_consts, num_carry))
    xs = [x if dim is None else batching.move_axis(x, dim, 1) for x, dim in zip(xs, xsd)]
    xs_dims = tuple(None if dim is None else 0 for dim in xsd)
    n_ys = len(jaxpr.out_avals) - num_carry

    def batched(carry_b: list[bool]) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
        return batch_jaxpr(jaxpr, size, tuple(cd) + tuple(0 if b else None for b in carry_b) + xs_dims,
                           tuple(carry_b) + (False,) * n_ys)

    # the carries that differ between examples
    carry_b = carry_fixpoint(lambda b: batched(b)[1][:num_carry], [dim is not None for dim in initd])
    body, out_b = batched(carry_b)
    init = [batching.with_batch_axis(x, dim, size) if b else x for x, dim, b in zip(init, initd, carry_b)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, length=length, reverse=reverse, num_consts=num_consts,
                       num_carry=num_carry)
    return outs, [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[num_carry:]]


batch_rules[scan_p] = _scan_batch


def _scan_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: a Python `for` over the steps, the body written inline, each
    y written into its row of a stacked array made before the loop: computed
    there (`out=`) where an equation with an out rule makes it, copied there
    otherwise. (np.stack of a list of rows would cost as much as the loop's own
    work: 0.6 µs a row of 32 float64.)"""
    p = eqn.params
    consts, init, xs = split_counts(args, (p["num_consts"], p["num_carry"]))
    n, nc = p["length"], p["num_carry"]
    outs = [writer.name(v) for v in eqn.outvars]
    carry, ys = outs[:nc], outs[nc:]
    step = writer.temp()
    rows = {nc + k: f"{y}[{step}]" if v.aval.ndim > 1 else f"{y}[{step}, ...]"
            for k, (y, v) in enumerate(zip(ys, eqn.outvars[nc:]))}
    body, results = writer.inline(p["jaxpr"], [*consts, *carry, *(f"{x}[{step}]" for x in xs)],
                                  "the body of scan", into=rows)
    computed = set(writer.written_into(p["jaxpr"], list(rows)).values())
    row_of = {results[k]: k for k in computed}
    # A y that is a carry as the step found it (a residual of reverse mode, an RNN's h_t), where
    # that carry's new value is a y computed into its row: the same rows shifted by one step,
    # copied once after the loop, not row by row.
    shifted = {k: (j, row_of[results[j]]) for k in rows if k not in computed
               for j in range(nc) if results[k] == carry[j] and results[j] in row_of}
    order = f"range({n} - 1, -1, -1)" if p["reverse"] else f"range({n})"
    # The ys are written before the carry is rebound: a y may be the carry itself.
    made = [f"{y} = np.empty({v.aval.shape}, {v.aval.dtype.name!r})"
            for y, v in zip(ys, eqn.outvars[nc:])]
    copies = [f"    {rows[k]} = {results[k]}" for k in rows if k not in computed and k not in shifted]
    lines = [*assign(carry, init), *made, f"for {step} in {order}:", *indented(body), *copies,
             *indented(assign(carry, results[:nc]))]
    if not body and not carry and not copies:
        lines.append("    pass")
    for k, (j, m) in shifted.items():
        if n:
            y, new = outs[k], outs[m]
            first, rest, previous = (n - 1, ":-1", "1:") if p["reverse"] else (0, "1:", ":-1")
            lines += [f"{y}[{first}] = {init[j]}", f"{y}[{rest}] = {new}[{previous}]"]
    # A carry that is also a y is a view of the y's last row: the caller gets its own copy, as from
    # the eager loop (writing into one of the two results must not change the other).
    lines.extend(f"{c} = {c}.copy()" for c, r in zip(carry, results[:nc]) if r in row_of)
    return lines


block_rules[scan_p] = _scan_block


def _hoisted(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    """jit's rewrite of a scan: the work of its body that does not depend on the
    carry (an RNN's x_t @ U, a constant's transpose) leaves the loop, done once for
    every step by the body's batched form (vmap over the xs), its per-step
    results scanned as xs and the others given as constants. None where there is
    nothing to move, or the moved values would take more than a few times the
    memory of the xs. The result is one jit equation, which jit's passes inline."""
    from .jit import jit_p

    p = eqn.params
    body, n, nk, nc = p["jaxpr"], p["length"], p["num_consts"], p["num_carry"]
    j = body.jaxpr
    if n == 0 or len(j.invars) == nk + nc:
        return None
    dependent = set(j.invars[nk:nk + nc])
    free, rest = [], []
    for e in j.eqns:
        if has_effects(e) or any(isinstance(a, Var) and a in dependent for a in e.invars):
            dependent.update(e.outvars)
            rest.append(e)
        else:
            free.append(e)
    defined = {v for e in free for v in e.outvars}
    needed = [a for e in rest for a in e.invars] + list(j.outvars)
    boundary = list(dict.fromkeys(a for a in needed if isinstance(a, Var) and a in defined))
    if not boundary:
        return None
    outer_ins = [*j.invars[:nk], *j.invars[nk + nc:]]
    free_body = ClosedJaxpr(Jaxpr(j.constvars, outer_ins, list[Any](boundary), free), body.consts)
    n_x = len(j.invars) - nk - nc
    try:
        batched, per_step = batch_jaxpr(free_body, n, (None,) * nk + (0,) * n_x, False)
    except NotImplementedError:  # a primitive without a batching rule: leave the loop as it is
        return None
    x_size = sum(v.aval.size for v in j.invars[nk + nc:]) * n
    if sum(v.aval.size for v, b in zip(boundary, per_step) if b) * n > 4 * max(x_size, 1):
        return None
    once = [v for v, b in zip(boundary, per_step) if not b]
    each = [v for v, b in zip(boundary, per_step) if b]
    new_body = ClosedJaxpr(Jaxpr(j.constvars, [*j.invars[:nk], *once, *j.invars[nk:nk + nc],
                                               *j.invars[nk + nc:], *each], j.outvars, rest), body.consts)

    def moved_out(*args: Any) -> list[Any]:
        consts, init, xs = split_counts(args, (nk, nc))
        made = iter(eval_jaxpr(batched.jaxpr, batched.consts, *consts, *xs))
        values = [next(made) for _ in boundary]
        first = [v for v, b in zip(values, per_step) if not b]
        stacked = [v for v, b in zip(values, per_step) if b]
        return scan_p.bind(*consts, *first, *init, *xs, *stacked, jaxpr=new_body, length=n,
                           reverse=p["reverse"], num_consts=nk + len(first), num_carry=nc)

    replacement = trace_to_jaxpr(moved_out, [a.aval for a in eqn.invars], "jit of scan", fresh=True)
    return [JaxprEqn(jit_p, eqn.invars, eqn.outvars, {"jaxpr": replacement, "name": "scan"}, eqn.source)]


def _sunk(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    """jit's rewrite of a scan: the work of its body that only its ys need (a
    tanh's 1 - h² kept for reverse mode) leaves the loop, done once after it for
    every step by the work's batched form, on the values it reads stacked by
    the loop instead (h, once per step, rather than 1 - h², and two NumPy calls
    less per step). None where that would not save calls, or would stack much
    more than the ys it replaces."""
    from .jit import jit_p

    p = eqn.params
    body, n, nk, nc = p["jaxpr"], p["length"], p["num_consts"], p["num_carry"]
    j = body.jaxpr
    if n == 0:
        return None
    needed = {v for v in j.outvars[:nc] if isinstance(v, Var)}
    kept: list[JaxprEqn] = []
    sunk: list[JaxprEqn] = []
    for e in reversed(j.eqns):
        if has_effects(e) or any(v in needed for v in e.outvars):
            needed.update(a for a in e.invars if isinstance(a, Var))
            kept.append(e)
        else:
            sunk.append(e)
    kept.reverse()
    sunk.reverse()
    made_by_sunk = {v for e in sunk for v in e.outvars}
    ys = j.outvars[nc:]
    if not sunk or not any(isinstance(y, Var) and y in made_by_sunk for y in ys):
        return None
    consts, xs = j.invars[:nk], j.invars[nk + nc:]
    reads = [a for e in sunk for a in e.invars] + [y for y in ys if y in made_by_sunk]
    boundary = list(dict.fromkeys(a for a in reads if isinstance(a, Var) and a not in made_by_sunk
                                  and a not in consts))
    stacked_here = [v for v in boundary if v not in xs]  # what the loop must stack now
    if len(sunk) <= len(stacked_here):
        return None
    replaced = [y for y in ys if isinstance(y, Var) and y in made_by_sunk]
    if sum(v.aval.size for v in stacked_here) > 2 * sum(y.aval.size for y in replaced) + 1:
        return None
    sunk_body = ClosedJaxpr(Jaxpr(j.constvars, [*consts, *boundary], list[Any](replaced), sunk), body.consts)
    try:
        batched, _ = batch_jaxpr(sunk_body, n, (None,) * nk + (0,) * len(boundary), True)
    except NotImplementedError:  # a primitive without a batching rule: leave the loop as it is
        return None
    kept_ys = [y for y in ys if not (isinstance(y, Var) and y in made_by_sunk)]
    new_body = dce_closed_jaxpr(ClosedJaxpr(
        Jaxpr(j.constvars, j.invars, [*j.outvars[:nc], *kept_ys, *stacked_here], kept), body.consts))
    if len(new_body.jaxpr.invars) != len(j.invars):  # DCE keeps every input; be sure
        return None

    def moved_out(*args: Any) -> list[Any]:
        consts_now, _, xs_now = split_counts(args, (nk, nc))
        outs = scan_p.bind(*args, jaxpr=new_body, length=n, reverse=p["reverse"], num_consts=nk, num_carry=nc)
        n_kept = len(kept_ys)
        stacks = dict(zip(stacked_here, outs[nc + n_kept:]))
        stacks.update(zip(xs, xs_now))
        made = dict(zip(replaced, eval_jaxpr(batched.jaxpr, batched.consts, *consts_now,
                                             *(stacks[v] for v in boundary))))
        kept_outs = iter(outs[nc:nc + n_kept])
        return [*outs[:nc], *(made[y] if isinstance(y, Var) and y in made else next(kept_outs) for y in ys)]

    replacement = trace_to_jaxpr(moved_out, [a.aval for a in eqn.invars], "jit of scan", fresh=True)
    return [JaxprEqn(jit_p, eqn.invars, eqn.outvars, {"jaxpr": replacement, "name": "scan"}, eqn.source)]


def _scan_rewritten(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    """The carry-free work moved ahead of the loop (`_hoisted`), then the ys-only
    work after it (`_sunk`)."""
    hoisted = _hoisted(eqn)
    if hoisted is None:
        return _sunk(eqn)
    (call,) = hoisted
    inner = call.params["jaxpr"]
    eqns = [new for e in inner.jaxpr.eqns
            for new in ((_sunk(e) or [e]) if e.primitive is scan_p and not has_effects(e) else [e])]
    ij = inner.jaxpr
    inner = ClosedJaxpr(Jaxpr(ij.constvars, ij.invars, ij.outvars, eqns), inner.consts)
    return [JaxprEqn(call.primitive, call.invars, call.outvars, {**call.params, "jaxpr": inner}, call.source)]


jit_rewrites[scan_p] = _scan_rewritten
