"""What the public control-flow functions share: staging a user's function of
pytrees into a closure-converted jaxpr, and checking that its results keep
their types. The primitives' own shared helpers are in
`fgrad/higher_order/_common.py`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..api.arguments import to_input
from ..api.pytree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ..core.avals import ShapedArray
from ..higher_order._common import avals_of
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import closure_convert, trace_to_jaxpr

__all__ = ["Staged", "stage", "leaves_of", "avals_of", "check_same", "ABSTRACT_ADVICE"]

ABSTRACT_ADVICE = (
    "the functions given to fgrad.lax (branches, loop bodies, conditions) are traced once on abstract "
    "values, as in JAX: use fgrad.lax.cond or fgrad.numpy.where inside them instead of a Python `if`."
)


class Staged:
    """A user's function staged: its closure-converted jaxpr (what it closed over
    first, then its arguments' leaves), those values, and its output's tree."""

    __slots__ = ("jaxpr", "consts", "out_tree")

    def __init__(self, jaxpr: ClosedJaxpr, consts: list[Any], out_tree: PyTreeDef) -> None:
        self.jaxpr = jaxpr
        self.consts = consts
        self.out_tree = out_tree

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals


def leaves_of(tree: Any) -> tuple[list[Any], PyTreeDef]:
    """A pytree's leaves as values fgrad traces (Python numbers become NumPy scalars)."""
    leaves, treedef = tree_flatten(tree)
    return [to_input(x) for x in leaves], treedef


def stage(fun: Callable[..., Any], in_trees: Sequence[PyTreeDef], in_avals: Sequence[Sequence[ShapedArray]],
          name: str) -> Staged:
    """`fun(*args)` staged at abstract arguments: argument k a pytree of
    structure `in_trees[k]` whose leaves have `in_avals[k]`."""
    counts = [len(a) for a in in_avals]
    out: list[PyTreeDef] = []

    def flat_fun(*leaves: Any) -> list[Any]:
        args, start = [], 0
        for tree, n in zip(in_trees, counts):
            args.append(tree_unflatten(tree, list(leaves[start:start + n])))
            start += n
        out_leaves, out_tree = tree_flatten(fun(*args))
        out.append(out_tree)
        return [to_input(x) for x in out_leaves]

    flat_avals = [a for avals in in_avals for a in avals]
    closed = trace_to_jaxpr(flat_fun, flat_avals, f"staging of {name}", fun_name=name, advice=ABSTRACT_ADVICE)
    jaxpr, consts = closure_convert(closed)
    return Staged(jaxpr, consts, out[0])


def check_same(what: str, expected_tree: PyTreeDef, expected: Sequence[ShapedArray], got_tree: PyTreeDef,
               got: Sequence[ShapedArray], example: Any = None) -> None:
    """A TypeError naming the first leaf whose structure, shape or dtype differs
    between two results (`what` says which two, as "the true branch returned X
    but the false branch Y")."""
    if expected_tree != got_tree:
        raise TypeError(f"{what}: the structures differ: {expected_tree} and {got_tree}")
    paths = [keystr(p) for p, _ in tree_flatten_with_path(example)[0]] if example is not None else []
    for k, (a, b) in enumerate(zip(expected, got)):
        if a.shape != b.shape or a.dtype != b.dtype:
            leaf = f"leaf {paths[k]}" if k < len(paths) and paths[k] else f"leaf {k}"
            raise TypeError(f"{what}: {leaf} is {a.str_short()} in one and {b.str_short()} in the other")
