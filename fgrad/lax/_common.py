"""What the control-flow primitives share: staging a user's function of pytrees
into a closure-converted jaxpr, checking that its results keep their types,
reordering a jaxpr's inputs and outputs, and running a jaxpr on the current
trace (reverse mode unrolls a while_loop whose steps are known, and a scan
holding one), and the fixpoint of a loop's carries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api.arguments import to_input
from ..api.pytree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ..core.avals import ShapedArray, get_aval
from ..core.errors import ConcretizationTypeError
from ..core.libraries import current_library, is_library_array
from ..core.trace import Tracer
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Var
from ..ir.staging import closure_convert, trace_to_jaxpr
from ..primitives import elementwise as ew
from ..primitives import shapes

__all__ = ["Staged", "stage", "leaves_of", "check_same", "carry_fixpoint", "linear_carries", "depends_on",
           "permuted", "summing_body", "with_unused_inputs", "assign", "indented", "stacked", "stack_now",
           "branch_index", "concrete", "ABSTRACT_ADVICE"]

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


def avals_of(leaves: Sequence[Any]) -> list[ShapedArray]:
    return [get_aval(x).strip_weak_type() for x in leaves]


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


def carry_fixpoint(carry_flags: Callable[[list[bool]], Sequence[bool]],
                   flags: Sequence[bool]) -> list[bool]:
    """The carries of a loop that have a property (a tangent, a batch axis, being
    linear), from those whose initial value has it: a carry has it when its
    update has it, given the carries that have it (`carry_flags`, the body's
    flags for its carry outputs), so grow the set until the body agrees.

    >>> carry_fixpoint(lambda f: [f[1], f[0]], [True, False])  # a body that swaps its two carries
    [True, True]
    """
    flags = list(flags)
    while True:
        grown = [a or bool(b) for a, b in zip(flags, carry_flags(flags))]
        if grown == flags:
            return flags
        flags = grown


def depends_on(jaxpr: Any, inputs: Any) -> list[bool]:
    """For each output of `jaxpr`: whether it depends on one of the inputs at positions `inputs`."""
    reached = {jaxpr.invars[i] for i in inputs}
    for eqn in jaxpr.eqns:
        if any(a in reached for a in eqn.invars if isinstance(a, Var)):
            reached.update(eqn.outvars)
    return [isinstance(v, Var) and v in reached for v in jaxpr.outvars]


def linear_carries(jaxpr: ClosedJaxpr, linear: Sequence[bool], num_consts: int,
                    num_carry: int) -> list[bool]:
    """The carries a loop's body (inputs: consts, carry, per-step inputs) makes
    linear: those given linear, and (a fixpoint) those whose update depends on a
    linear input."""
    consts, carry, xs = (linear[:num_consts], linear[num_consts:num_consts + num_carry],
                         linear[num_consts + num_carry:])

    def reached(c: list[bool]) -> list[bool]:
        flags = [*consts, *c, *xs]
        return depends_on(jaxpr.jaxpr, [i for i, f in enumerate(flags) if f])[:num_carry]

    return carry_fixpoint(reached, carry)


def summing_body(transposed: ClosedJaxpr, counts: Sequence[int]) -> Callable[..., list[Any]]:
    """The step of a transposed loop: `transposed` (known consts, known step
    inputs, the carry's cotangent, the step outputs' cotangents) -> (linear
    consts' cotangents, ...), called on (known consts, sums so far of the linear
    consts' cotangents, the carry's cotangent, known step inputs, the outputs'
    cotangents), `counts` the sizes of the first four, with the sums updated."""

    def body(*args: Any) -> list[Any]:
        a, b, c, e = (sum(counts[:k]) for k in range(1, 5))
        kc, sums, ct_carry, kx, ct_y = args[:a], args[a:b], args[b:c], args[c:e], args[e:]
        outs = eval_jaxpr(transposed.jaxpr, transposed.consts, *kc, *kx, *ct_carry, *ct_y)
        n_s = len(sums)
        return [*(ew.add(s, t) for s, t in zip(sums, outs[:n_s])), *outs[n_s:]]

    return body


def permuted(closed: ClosedJaxpr, in_order: Sequence[int],
             out_order: Sequence[int] | None = None) -> ClosedJaxpr:
    """`closed` with its inputs (and outputs) reordered: new input k is old input `in_order[k]`."""
    j = closed.jaxpr
    outvars = j.outvars if out_order is None else [j.outvars[k] for k in out_order]
    return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[k] for k in in_order], outvars, j.eqns), closed.consts)


def with_unused_inputs(closed: ClosedJaxpr, before: Sequence[ShapedArray],
                       after: Sequence[ShapedArray] = ()) -> ClosedJaxpr:
    """`closed` taking extra inputs of `before` ahead of its own (and `after` behind), unused."""
    j = closed.jaxpr
    invars = [Var(a) for a in before] + list(j.invars) + [Var(a) for a in after]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), closed.consts)


def stacked(pieces: Sequence[Any]) -> Any:
    """The values `pieces` (one shape) stacked along a new leading axis, as
    primitives (so on whatever trace is current)."""
    rows = [shapes.reshape(p, new_shape=(1, *get_aval(p).shape)) for p in pieces]
    return shapes.concatenate(*rows, axis=0) if len(rows) > 1 else rows[0]


def stack_now(pieces: Sequence[Any], aval: ShapedArray) -> Any:
    """`pieces` (values of `aval`) stacked along a new leading axis now, in an
    impl: in the array library the computation runs on (core/libraries.py),
    NumPy's by default. A piece may be NumPy's where the others are the
    library's (a constant output of a loop's body): it goes into the library."""
    lib = current_library()
    if lib is None:
        return np.stack(pieces) if pieces else np.empty((0, *aval.shape), aval.dtype)
    if not pieces:
        return lib.xp.empty((0, *aval.shape), dtype=lib.dtype(aval.dtype))
    return lib.xp.stack([lib.asarray(p, aval.dtype) for p in pieces])


def branch_index(index: Any, num_branches: int) -> int:
    """A cond's index, known now, clamped into range as a Python int. On
    another library's array this reads the value out (a Dask index is
    computed): the branch to run must be known to run it."""
    return min(max(int(index), 0), num_branches - 1)


def assign(names: Sequence[str], values: Sequence[str]) -> list[str]:
    """A statement binding `names` to `values` at once (none for no names)."""
    if not names:
        return []
    return [f"{', '.join(names)}, = {', '.join(values)},"]


def indented(lines: Sequence[str]) -> list[str]:
    return ["    " + line for line in lines]


def concrete(x: Any) -> Any:
    """The value of `x` if it is known now (a NumPy value, another library's
    array, or a tracer that carries one), else None. Another library's array
    stays one: converting it is the caller's choice (a Python bool or int)."""
    while isinstance(x, Tracer):
        try:
            x = x._concrete("value")
        except ConcretizationTypeError:  # an abstract value: no transform knows it
            return None
    return x if is_library_array(x) else np.asarray(x)
