"""What the higher-order primitives share: the fixpoint of a loop's carries
(which carries get a tangent, a batch axis or become linear), reordering a
jaxpr's inputs and outputs, the step of a transposed loop, stacking values
along a new axis, and reading a value that is known now."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.errors import ConcretizationTypeError
from ..core.libraries import current_library, is_library_array
from ..core.trace import Tracer
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Var
from ..primitives import elementwise as ew
from ..primitives import shapes

__all__ = ["split_counts", "avals_of", "carry_fixpoint", "linear_carries", "depends_on", "permuted",
           "summing_body", "with_unused_inputs", "assign", "indented", "stacked", "stack_now", "branch_index",
           "concrete"]


def split_counts(xs: Sequence[Any], counts: Sequence[int]) -> list[list[Any]]:
    """`xs` cut into consecutive parts of `counts`, and the rest."""
    parts, i = [], 0
    for n in counts:
        parts.append(list(xs[i:i + n]))
        i += n
    parts.append(list(xs[i:]))
    return parts


def avals_of(leaves: Sequence[Any]) -> list[ShapedArray]:
    return [get_aval(x).strip_weak_type() for x in leaves]


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
        # np.array of the rows rather than np.stack, which costs two to four times
        # as much (0.6 µs a row of 32 float64): a long loop's outputs are many rows.
        return np.array(pieces, aval.dtype) if pieces else np.empty((0, *aval.shape), aval.dtype)
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
