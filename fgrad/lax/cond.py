"""`cond`, `switch` and `select` (JAX's `lax`): the branches are staged at the
operands, each taking what every branch closed over, and bound as one `cond`
primitive (`fgrad/higher_order/cond.py`, with its rules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api.pytree import tree_unflatten
from ..higher_order._common import permuted, with_unused_inputs
from ..higher_order.cond import cond_p
from ..ir.jaxpr import ClosedJaxpr
from ..primitives import elementwise as ew
from ._common import avals_of, check_same, leaves_of, stage

__all__ = ["cond", "switch", "select", "cond_p"]


def _branches(funs: Sequence[Callable[..., Any]], operands: tuple[Any, ...], what: str
              ) -> tuple[list[Any], list[Any], tuple[ClosedJaxpr, ...], Any]:
    """The branches staged at the operands, each taking what all of them closed
    over, then the operands; checked to return the same types."""
    leaves, tree = leaves_of(operands)
    avals = avals_of(leaves)
    staged = [stage(lambda ops, f=f: f(*ops), [tree], [avals], getattr(f, "__name__", what)) for f in funs]
    first = staged[0]
    for k, s in enumerate(staged[1:], 1):
        names = ("the false branch", "the true branch") if what == "cond" else ("branch 0", f"branch {k}")
        check_same(f"{what}: {names[0]} and {names[1]} return different types", first.out_tree,
                   first.out_avals, s.out_tree, s.out_avals)
    all_consts = [c for s in staged for c in s.consts]
    const_avals = [avals_of(s.consts) for s in staged]
    jaxprs = []
    for k, s in enumerate(staged):
        # Every branch takes every branch's constants, then the operands.
        before = [a for avals in const_avals[:k] for a in avals]
        after = [a for avals in const_avals[k + 1:] for a in avals]
        j = with_unused_inputs(s.jaxpr, before, after)
        n_before, n_own, n_ops = len(before), len(s.consts), len(leaves)
        own_and_before = list(range(n_before + n_own))
        after_ids = list(range(n_before + n_own + n_ops, n_before + n_own + n_ops + len(after)))
        op_ids = list(range(n_before + n_own, n_before + n_own + n_ops))
        jaxprs.append(permuted(j, own_and_before + after_ids + op_ids))
    return all_consts, leaves, tuple(jaxprs), first.out_tree


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """`branches[index](*operands)`, with `index` clamped into range (JAX's
    `lax.switch`). Eagerly only that branch runs; under a transform all are
    traced, and must return the same types.

    >>> import fgrad
    >>> switch(1, [lambda x: x + 1.0, lambda x: x * 10.0], 2.0)
    np.float64(20.0)
    """
    if not branches:
        raise ValueError("switch: `branches` is empty; give at least one function")
    i = leaves_of(index)[0]
    if len(i) != 1 or np.shape(i[0]) != () or avals_of(i)[0].dtype.kind not in "iu":
        raise TypeError(f"switch: the index must be an integer scalar, not {index!r}")
    consts, leaves, jaxprs, out_tree = _branches(list(branches), operands, "switch")
    outs = cond_p.bind(i[0], *consts, *leaves, branches=jaxprs)
    return tree_unflatten(out_tree, outs)


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any) -> Any:
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)` (JAX's
    `lax.cond`): one primitive, so that it works where `pred` is traced (jit,
    make_jaxpr, vmap of a predicate that differs between examples).

    >>> cond(True, lambda x: x + 1.0, lambda x: x - 1.0, 2.0)
    np.float64(3.0)
    """
    p = leaves_of(pred)[0]
    if len(p) != 1 or np.shape(p[0]) != () or avals_of(p)[0].dtype.kind not in "biu":
        raise TypeError(f"cond: the predicate must be a boolean scalar, not {pred!r}")
    truth = p[0] if avals_of(p)[0].dtype.kind == "b" else ew.ne(p[0], 0)
    index = ew.convert_element_type(truth, new_dtype=np.dtype(np.int32))
    consts, leaves, jaxprs, out_tree = _branches([false_fun, true_fun], operands, "cond")
    outs = cond_p.bind(index, *consts, *leaves, branches=jaxprs)
    return tree_unflatten(out_tree, outs)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """`on_true` where `pred` is true, else `on_false`, elementwise (JAX's
    `lax.select`; `pred` a boolean array of their shape).

    >>> select(np.array([True, False]), np.ones(2), np.zeros(2))
    array([1., 0.])
    """
    p = leaves_of(pred)[0][0]
    if avals_of([p])[0].dtype.kind != "b":
        raise TypeError(f"select: the predicate must be boolean, not {avals_of([p])[0].str_short()}")
    return ew.where(p, on_true, on_false)
