"""The `cond` primitive: one of several jaxprs chosen by an integer index
(`fgrad.lax.cond`, `switch` and `select` bind it).

`cond_p` takes the index (clamped into range), then what every branch closed
over (each branch takes them all, using its own), then the operands; its
parameter `branches` is a tuple of closed jaxprs with the same inputs and
outputs. Rules:

* evaluation runs the chosen branch only;
* forward mode is `cond` of the branches' jvps (every branch gives a tangent
  for an output where any branch does);
* reverse mode, when the index is known (under grad, eagerly), differentiates
  the chosen branch as if it were inline; where it is not (jit, vmap), each
  branch's jvp is split by partial evaluation: the known parts run now as one
  cond (each returning every branch's residuals, zeros in the others'
  places), the linear parts are staged as another, whose transpose is the
  cond of the branches' transposes;
* jit writes it as a Python `if`/`elif`/`else`, each branch inline;
* vmap with the index the same for every example is `cond` of the batched
  branches; with a batched index every branch runs on the whole batch and
  each example takes its branch's results (a select).
"""

from __future__ import annotations

from collections.abc import Sequence
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
from ..primitives import batching, shapes
from ..primitives import derivatives as d
from ..primitives import elementwise as ew
from ..transforms.batching import batch_jaxpr
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import LinearizeTrace, linearize_jaxpr, transpose_jaxpr
from ._common import (
    assign,
    branch_index,
    concrete,
    indented,
    permuted,
    with_unused_inputs,
)
from .call import run_on, split_tangents, with_tangents

__all__ = ["cond_p"]


def _cond_impl(index: Any, *args: Any, branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    return runner(branches[branch_index(index, len(branches))])(*args)


def _cond_aval(index: ShapedArray, *avals: ShapedArray,
               branches: tuple[ClosedJaxpr, ...]) -> list[ShapedArray]:
    if index.shape != () or index.dtype.kind not in "iub":
        raise TypeError(f"cond: the index must be an integer or boolean scalar, not {index.str_short()}")
    for k, branch in enumerate(branches):
        check_operands(f"cond (branch {k})", list(avals), branch)
    outs = branches[0].out_avals
    for k, branch in enumerate(branches[1:], 1):
        if [(a.shape, a.dtype) for a in branch.out_avals] != [(a.shape, a.dtype) for a in outs]:
            got = ", ".join(a.str_short() for a in branch.out_avals)
            raise TypeError(f"cond: branch {k} returns ({got}) but branch 0 "
                            f"({', '.join(a.str_short() for a in outs)})")
    return outs


cond_p = Primitive("cond", on_every_namespace(_cond_impl), _cond_aval, multiple_results=True)


def _joined_jvps(branches: tuple[ClosedJaxpr, ...], nonzeros: tuple[bool, ...]
                 ) -> tuple[tuple[ClosedJaxpr, ...], tuple[bool, ...]]:
    """The branches' jvps, all with a tangent for each output where any has one."""
    union = tuple(any(found) for found in zip(*(jvp_jaxpr(b, nonzeros, False)[1] for b in branches)))
    return tuple(jvp_jaxpr(b, nonzeros, union)[0] for b in branches), union


def _cond_jvp(primals: list[Any], tangents: list[Any], *, branches: tuple[ClosedJaxpr, ...]) -> Any:
    index, *args = primals
    nonzeros = tuple(t is not None for t in tangents[1:])
    jvps, out_nonzeros = _joined_jvps(branches, nonzeros)
    outs = cond_p.bind(index, *args, *(t for t in tangents[1:] if t is not None), branches=jvps)
    n = len(branches[0].out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if nz else None for nz in out_nonzeros]


def _cond_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                    branches: tuple[ClosedJaxpr, ...]) -> tuple[list[Any], list[Any]]:
    index = concrete(primals[0])
    if index is not None:  # known now: the chosen branch, as if it were inline
        branch = branches[branch_index(index, len(branches))]
        outs = run_on(trace, branch, with_tangents(trace, primals[1:], tangents[1:]))
        return split_tangents(trace, outs)
    # Not known (jit, vmap): partial evaluation of each branch's jvp. The known
    # parts run now as one cond, each returning every branch's residuals (zeros
    # for the others'); the linear parts are staged as another cond, which
    # transposes branch by branch.
    nonzeros = tuple(t is not None for t in tangents[1:])
    known_branches, linear_branches, out_nonzeros = _split_branches(branches[0], branches[1:], nonzeros)
    n_out = len(branches[0].out_avals)
    outs_and_res = cond_p.bind(primals[0], *primals[1:], branches=tuple(known_branches))
    outs, res = outs_and_res[:n_out], outs_and_res[n_out:]
    t_outs = trace.stage(cond_p, [primals[0], *res, *(t for t in tangents[1:] if t is not None)],
                         {"branches": tuple(linear_branches)}) if sum(out_nonzeros) else []
    it = iter(t_outs)
    return outs, [next(it) if nz else None for nz in out_nonzeros]


@cached_per_jaxpr
def _split_branches(first: ClosedJaxpr, rest: tuple[ClosedJaxpr, ...], nonzeros: tuple[bool, ...]
                    ) -> tuple[tuple[ClosedJaxpr, ...], tuple[ClosedJaxpr, ...], tuple[bool, ...]]:
    """The known and linear branches of reverse mode (cached, so that each call
    runs the same jaxprs' generated code), and which outputs have tangents."""
    branches = (first, *rest)
    out_nonzeros = tuple(any(nz) for nz in zip(*(linearize_jaxpr(b, nonzeros, False)[2] for b in branches)))
    n_out = len(first.out_avals)
    parts = [linearize_jaxpr(b, nonzeros, out_nonzeros) for b in branches]
    assert all(nz == out_nonzeros for _, _, nz, _ in parts), "instantiated tangents are nonzero"
    res_avals = [known.out_avals[n_out:] for known, _, _, _ in parts]
    known_branches, linear_branches = [], []
    n_t = sum(nonzeros)
    for k, (known, unknown, _, num_res) in enumerate(parts):
        known_branches.append(_with_all_residuals(known, n_out, res_avals, k))
        before = [a for avals in res_avals[:k] for a in avals]
        after = [a for avals in res_avals[k + 1:] for a in avals]
        # (before, own residuals, tangents, after) -> (all residuals, tangents)
        j = with_unused_inputs(unknown, before, after)
        nb, no = len(before), num_res
        order = [*range(nb + no), *range(nb + no + n_t, nb + no + n_t + len(after)),
                 *range(nb + no, nb + no + n_t)]
        linear_branches.append(permuted(j, order))
    return tuple(known_branches), tuple(linear_branches), out_nonzeros


def _with_all_residuals(known: ClosedJaxpr, n_out: int, res_avals: list[list[ShapedArray]],
                        k: int) -> ClosedJaxpr:
    """Branch k's known part returning its outputs, then every branch's
    residuals: its own, and zeros in the others' places."""

    def fn(*args: Any) -> list[Any]:
        outs = eval_jaxpr(known.jaxpr, known.consts, *args)
        res: list[Any] = []
        for j, avals in enumerate(res_avals):
            res.extend(outs[n_out:] if j == k else [d.zeros(a) for a in avals])
        return [*outs[:n_out], *res]

    return trace_to_jaxpr(fn, known.in_avals, "linearize of cond", fresh=True)


def _cond_transpose(cts: list[Any], index: Any, *args: Any, branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    linear = tuple(type(a) is UndefinedPrimal for a in args)
    filled = [d.zeros(a) if ct is None else ct for ct, a in zip(cts, branches[0].out_avals)]
    transposed = tuple(transpose_jaxpr(b, linear) for b in branches)
    cts_in = iter(cond_p.bind(index, *(a for a, lin in zip(args, linear) if not lin), *filled,
                              branches=transposed))
    return [None, *(next(cts_in) if lin else None for lin in linear)]


jvp_rules[cond_p] = Linearization(_cond_jvp, _cond_linearize)
transpose_rules[cond_p] = _cond_transpose


def _cond_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: a Python `if`/`elif`/`else` over the (clamped) index, each
    branch written inline."""
    branches = eqn.params["branches"]
    index, ops = args[0], args[1:]
    outs = [writer.name(v) for v in eqn.outvars]
    lines: list[str] = []
    for k, branch in enumerate(branches):
        body, results = writer.inline(branch, ops, f"branch {k} of cond")
        body = [*body, *assign(outs, results)] or ["pass"]
        if len(branches) == 1:
            return body
        last = k == len(branches) - 1
        head = f"if {index} <= 0:" if k == 0 else ("else:" if last else f"elif {index} == {k}:")
        lines += [head, *indented(body)]
    return lines


block_rules[cond_p] = _cond_block


def _cond_batch(args: list[Any], dims: list[Any], *, branches: tuple[ClosedJaxpr, ...]) -> Any:
    index, *ops = args
    d_index, *d_ops = dims
    size = batching.batch_size(args, dims)
    if d_index is None:
        found = [batch_jaxpr(b, size, tuple(d_ops), False)[1] for b in branches]
        union = tuple(any(each) for each in zip(*found))
        batched = tuple(batch_jaxpr(b, size, tuple(d_ops), union)[0] for b in branches)
        return cond_p.bind(index, *ops, branches=batched), [0 if b else None for b in union]
    # Each example has its own branch: run them all on the batch, then pick.
    index = batching.move_axis(index, d_index, 0)
    if get_aval(index).dtype == bool:
        index = ew.convert_element_type(index, new_dtype=np.dtype(np.int32))
    dtype = get_aval(index).dtype
    index = ew.minimum(ew.maximum(index, np.zeros(size, dtype)), np.full(size, len(branches) - 1, dtype))
    results = [_on_batch(b, size, d_ops, ops) for b in branches]
    outs = []
    for k_out, first in enumerate(results[0]):
        out = first
        for k, result in enumerate(results[1:], 1):
            picked = result[k_out]
            rank = len(picked.shape)
            which = shapes.reshape(ew.eq(index, k), new_shape=(size,) + (1,) * (rank - 1))
            out = ew.where(which, picked, out)
        outs.append(out)
    return outs, [0] * len(outs)


def _on_batch(branch: ClosedJaxpr, size: int, dims: Sequence[Any], ops: Sequence[Any]) -> list[Any]:
    """A branch run on the whole batch, every output batched along axis 0."""
    batched, _ = batch_jaxpr(branch, size, tuple(dims), True)
    return eval_jaxpr(batched.jaxpr, batched.consts, *ops)


batch_rules[cond_p] = _cond_batch
