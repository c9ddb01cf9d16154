"""`scan` and `map`: the `scan` primitive, a loop of a known number of steps
over the leading axis of its inputs.

`scan_p` takes what the body closed over, the initial carry, then the arrays
`xs` scanned along their leading axis; the body maps (constants, carry, one
slice of each x) to (carry, one slice of each y), and the ys are stacked.
Parameters: the body's closed `jaxpr`, `length`, `reverse`, `num_consts` and
`num_carry`. Rules:

* evaluation is a Python loop over the body's generated code, and jit
  writes it as a Python `for` with the body inline;
* forward mode is `scan` of the body's jvp, the carry's tangents found to a
  fixpoint;
* reverse mode unrolls the loop onto the differentiation (its number of
  steps is known, under jit too): each step's residuals are kept, `length`
  times those of one step (use `checkpoint` on the body to keep only its
  inputs), and the backward pass transposes the steps in reverse;
* vmap batches the carry to a fixpoint, and moves the batch axis of the xs
  behind the scanned one; the ys come out batched along axis 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api.arguments import describe
from ..api.pytree import tree_flatten, tree_unflatten
from ..core.avals import ShapedArray
from ..core.libraries import current_library, generic_impls
from ..core.rules import Linearization, batch_rules, block_rules, jvp_rules
from ..core.trace import Primitive, ctx
from ..ir.check import check_operands
from ..ir.codegen import runner
from ..ir.jaxpr import ClosedJaxpr
from ..primitives import batching, indexing
from ..primitives import derivatives as d
from ..primitives.indexing import StaticIndex
from ..transforms.batching import batch_jaxpr
from ..transforms.call import run_on, split_tangents, with_tangents
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import LinearizeTrace
from ._common import assign, avals_of, check_same, indented, leaves_of, permuted, stack_now, stacked, stage
from .loops import Pair, Parts

__all__ = ["scan", "map", "scan_p"]


def _split(args: Sequence[Any], num_consts: int, num_carry: int) -> Parts:
    carry_end = num_consts + num_carry
    return list(args[:num_consts]), list(args[num_consts:carry_end]), list(args[carry_end:])


def _scan_impl(*args: Any, jaxpr: ClosedJaxpr, length: int, reverse: bool, num_consts: int,
               num_carry: int) -> list[Any]:
    consts, carry, xs = _split(args, num_consts, num_carry)
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
    consts, carry, xs = _split(avals, num_consts, num_carry)
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


scan_p = Primitive("scan", _scan_impl, _scan_aval, multiple_results=True)
generic_impls.add(scan_p)


def _scan_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr, length: int, reverse: bool,
              num_consts: int, num_carry: int) -> tuple[list[Any], list[Any]]:
    consts, init, xs = _split(primals, num_consts, num_carry)
    ct, initt, xst = _split(tangents, num_consts, num_carry)
    const_nz, carry_nz, xs_nz = ([t is not None for t in ts] for ts in (ct, initt, xst))
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:  # the carries with a tangent: a fixpoint
        instantiate = tuple(carry_nz) + (False,) * n_ys
        body_jvp, out_nz = jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz), instantiate)
        grown = [a or b for a, b in zip(carry_nz, out_nz[:num_carry])]
        if grown == carry_nz:
            break
        carry_nz = grown
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
    consts, carry, xs = _split(with_tangents(trace, primals, tangents), num_consts, num_carry)
    ys: list[list[Any]] = []
    prev, ctx.trace = ctx.trace, trace  # slicing and stacking are differentiated too
    try:
        for i in (range(length - 1, -1, -1) if reverse else range(length)):
            slices = [indexing.getitem(x, idx=StaticIndex((i,))) for x in xs]
            outs = run_on(trace, jaxpr, [*consts, *carry, *slices])
            carry, y = outs[:num_carry], outs[num_carry:]
            ys.append(y)
        if reverse:
            ys.reverse()
        y_avals = jaxpr.out_avals[num_carry:]
        stacked_ys = []
        for k, a in enumerate(y_avals):
            stacked_ys.append(stacked([y[k] for y in ys]) if length else stack_now([], a))
    finally:
        ctx.trace = prev
    return split_tangents(trace, [*carry, *stacked_ys])


jvp_rules[scan_p] = Linearization(_scan_jvp, _scan_linearize)


def _scan_batch(args: list[Any], dims: list[Any], *, jaxpr: ClosedJaxpr, length: int, reverse: bool,
                num_consts: int, num_carry: int) -> tuple[list[Any], list[Any]]:
    size = batching.batch_size(args, dims)
    consts, init, xs = _split(args, num_consts, num_carry)
    cd, initd, xsd = _split(dims, num_consts, num_carry)
    xs = [x if dim is None else batching.move_axis(x, dim, 1) for x, dim in zip(xs, xsd)]
    xs_dims = tuple(None if dim is None else 0 for dim in xsd)
    n_ys = len(jaxpr.out_avals) - num_carry
    carry_b = [dim is not None for dim in initd]
    while True:  # the carries that differ between examples: a fixpoint
        body, out_b = batch_jaxpr(jaxpr, size, tuple(cd) + tuple(0 if b else None for b in carry_b) + xs_dims,
                                  tuple(carry_b) + (False,) * n_ys)
        grown = [a or b for a, b in zip(carry_b, out_b[:num_carry])]
        if grown == carry_b:
            break
        carry_b = grown
    init = [batching.with_batch_axis(x, dim, size) if b else x for x, dim, b in zip(init, initd, carry_b)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, length=length, reverse=reverse, num_consts=num_consts,
                       num_carry=num_carry)
    return outs, [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[num_carry:]]


batch_rules[scan_p] = _scan_batch


def _scan_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: a Python `for` over the steps, the body written inline, the
    ys collected in lists and stacked."""
    p = eqn.params
    consts, init, xs = _split(args, p["num_consts"], p["num_carry"])
    n, nc = p["length"], p["num_carry"]
    outs = [writer.name(v) for v in eqn.outvars]
    carry, ys = outs[:nc], outs[nc:]
    step = writer.temp()
    body, results = writer.inline(p["jaxpr"], [*consts, *carry, *(f"{x}[{step}]" for x in xs)],
                                  "the body of scan")
    lists = [writer.temp() for _ in ys]
    order = f"range({n} - 1, -1, -1)" if p["reverse"] else f"range({n})"
    # The ys are collected before the carry is rebound: a y may be the carry itself.
    lines = [*assign(carry, init), *(f"{t} = []" for t in lists), f"for {step} in {order}:", *indented(body),
             *(f"    {t}.append({y})" for t, y in zip(lists, results[nc:])),
             *indented(assign(carry, results[:nc]))]
    if not body and not carry and not lists:
        lines.append("    pass")
    for t, y, v in zip(lists, ys, eqn.outvars[nc:]):
        if p["reverse"]:
            lines.append(f"{t}.reverse()")
        empty = writer.glob("k", np.zeros(v.aval.shape, v.aval.dtype))
        lines.append(f"{y} = np.stack({t}) if {t} else {empty}")
    return lines


block_rules[scan_p] = _scan_block


# --- the functions -----------------------------------------------------------


def scan(f: Callable[[Any, Any], Any], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1) -> tuple[Any, Any]:
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs` (pytrees
    allowed), returning the final carry and the stacked ys (JAX's `lax.scan`).
    `xs` may be None with `length` given; `reverse` runs from the last slice;
    `unroll` is accepted and has no effect. Differentiable in both modes
    everywhere, jit included (reverse mode keeps `length` steps of residuals).

    >>> import numpy as np
    >>> scan(lambda c, x: (c + x, c * x), 0.0, np.arange(1.0, 4.0))
    (np.float64(6.0), array([0., 2., 9.]))
    """
    carry_leaves, carry_tree = leaves_of(init)
    x_leaves, x_tree = leaves_of(xs)
    lengths = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in x_leaves}
    if -1 in lengths:
        raise ValueError("scan: every leaf of `xs` needs a leading axis to scan over, but one is a scalar")
    if len(lengths) > 1:
        raise ValueError(f"scan: the leaves of `xs` have different leading lengths {sorted(lengths)}")
    if length is not None and lengths and lengths != {int(length)}:
        raise ValueError(f"scan: length={length} disagrees with the leading length {lengths.pop()} of `xs`")
    if length is None and not lengths:
        raise ValueError("scan: give `length` when `xs` is None (or has no leaves)")
    n = int(length) if length is not None else lengths.pop()
    carry_avals = avals_of(carry_leaves)
    slice_avals = [ShapedArray(a.shape[1:], a.dtype) for a in avals_of(x_leaves)]
    trees: list[Any] = []

    def body(carry: Any, x: Any) -> Any:
        out = f(carry, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"scan: f must return a pair (carry, y), but it returned {describe(out)}; "
                            "return (new_carry, None) when there is nothing to stack")
        new_carry, y = out
        c_leaves, c_tree = tree_flatten(new_carry)
        y_leaves, y_tree = tree_flatten(y)
        trees.append((c_tree, y_tree, len(c_leaves)))
        return [*c_leaves, *y_leaves]

    staged = stage(body, [carry_tree, x_tree], [carry_avals, slice_avals], getattr(f, "__name__", "f"))
    c_tree, y_tree, n_carry = trees[0]
    check_same("scan: f must return a carry of the type it takes (the carry given, then f's)", carry_tree,
               carry_avals, c_tree, staged.out_avals[:n_carry], init)
    outs = scan_p.bind(*staged.consts, *carry_leaves, *x_leaves, jaxpr=staged.jaxpr, length=n,
                       reverse=bool(reverse), num_consts=len(staged.consts), num_carry=len(carry_leaves))
    return tree_unflatten(carry_tree, outs[:n_carry]), tree_unflatten(y_tree, outs[n_carry:])


def map(f: Callable[[Any], Any], xs: Any) -> Any:  # noqa: A001 (JAX's name)
    """`f` applied to each slice of `xs` along its leading axis, the results
    stacked (JAX's `lax.map`): a scan without a carry.

    >>> import numpy as np
    >>> map(lambda x: x * 2.0, np.arange(3.0))
    array([0., 2., 4.])
    """
    return scan(lambda _, x: ((), f(x)), (), xs)[1]
