"""The rule tables, one per transform, keyed by primitive, and the contracts
their rules follow. Primitive modules fill them next to each definition;
transform modules read them. A new transform adds a table here.

Symbolic zeros: a tangent or cotangent of `None` means "exactly zero"; rules
never receive a zero array they would have to build first.

* ``jvp_rules[p](primals, tangents, **params) -> (primal_out, tangent_out)``
  Tangents are values or None; `tangent_out` may be None. The rule runs with
  the transform's parent (or the tangent-staging trace) current, so it is
  written with ordinary operations and is itself differentiable.
  A rule may instead be data, which the interpreters apply themselves (and
  reverse mode records straight into its linear jaxpr):
  - `JVPFactors`: an elementwise primitive's derivative in each argument;
  - `LINEAR`: the primitive is linear, its jvp is itself on the tangents;
  - `BILINEAR`: a product, linear in each argument: the tangent is the sum
    over differentiated arguments of the primitive with that one replaced by
    its tangent.
* ``transpose_rules[p](ct, *args, **params) -> list of cotangents, one per arg``
  For linear primitives only. Linear inputs arrive as `UndefinedPrimal(aval)`,
  the others as values; `ct` is never None (a zero cotangent skips the
  equation); an entry of the result is None for a non-linear input or a zero.
  For a primitive with several results, `ct` is a list whose entries may be None.
* ``batch_rules[p](args, dims, **params) -> (out, out_dim)``
  `dims[i]` is the batch axis of `args[i]` (None: not batched); the rule runs
  on the parent trace and returns the result's batch axis.

* ``emit_rules[p](args, avals, **params) -> str | None``: how jit's code
  generator writes `p` as a Python expression over the names `args` of its
  operands (whose avals are `avals`), or None to call the implementation.
  Optional: without one, the generated code calls `p.impl`.
* ``out_rules[p] = ufunc``: `p` always returns a fresh array (never a view
  of an operand), and `ufunc(*operands, out=buffer)` computes its result
  into `buffer` (NumPy's ufuncs, matmul included). jit's code does so when
  a buffer of the result's shape and dtype is free: an operand that dies
  there, or a value that died earlier, whose memory only the code can see.
* ``blockwise``: primitives whose implementation computes each element of
  its result from the same elements of its (broadcast) operands alone, with
  the same bits whatever the size of the arrays, into a new array (never a
  view): NumPy's ufuncs, `where`, casts. jit's fused code (ir/fusion.py)
  runs them on blocks of large arrays, those with an out rule into the
  block's own buffer.
* ``reduce_rules[p] = ufunc``: `p` (with parameter `axes`) is `ufunc.reduce`
  over those axes for float and complex operands, so that jit's fused code
  (ir/fusion.py) may reduce a large elementwise result block by block and
  combine the blocks' partial results with the same ufunc.
* ``block_rules[p](writer, eqn, args) -> list[str] | None``: `p` (a
  control-flow primitive) as Python statements (`if`, `while`, `for`) that
  assign its results to `writer.name(v)` for each output `v`, its sub-jaxprs
  written inline with `writer.inline(closed, args, what)` (`what` names the
  sub-jaxpr in the source's header: "the body of scan"); `args` are the
  operands' expressions. Lines are relative to the equation's indentation.
* ``packing[p] = "reshape" | "concatenate"``: what `p` is to jit's code
  generator when it writes 0-d float64 values joined into a vector as one
  `np.array([...])` (ir/codegen.py): "reshape" for the primitive giving a
  value a shape (`new_shape`), "concatenate" for the one joining arrays.
* ``float_rules[p](args, avals, **params) -> str | None``: `p` as an expression
  over Python scalars `args` for 0-d operands (whose avals are `avals`) and a
  0-d result: a float stands for a float64, an int for an int64, a bool for a
  bool. It must give NumPy's result, or raise ArithmeticError or ValueError
  where it cannot (division by zero, a domain error, an overflow: an int
  result outside int64 goes through `checked_int64`), never another value:
  jit's code then computes on NumPy's scalars instead. None where the rule
  does not cover these dtypes.

* ``unroll_rules[p](elements, avals, emit, **params) -> list[list[Atom]] | None``:
  jit's rewrite of `p` on small arrays whose elements are known
  (ir/unroll.py): `elements[i]` lists operand i's elements as 0-d atoms in C
  order (a 0-d operand is its own element), `avals` are the operands'; the
  rule returns the elements of each result, computed exactly as `p` computes
  them, with `emit(prim, *atoms, **params)`, which records a 0-d equation and
  returns its result; or None to keep `p` as it is.

Effects: a primitive in `effectful` does something besides computing its
results (prints, calls back into Python). Passes never drop it for an unused
result, and never merge two of its equations.

A primitive whose reverse mode is not the transpose of its jvp (custom_vjp,
checkpoint) registers a `Linearization` as its jvp rule: forward mode calls
its `jvp`; reverse mode calls its `linearize(trace, primals, tangents,
**params) -> (primal_out, tangent_out)`, which runs with the primal trace
current and records linear equations with `trace.stage(prim, args, params)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .avals import ShapedArray
from .trace import LARGE_ARRAY_BYTES, Primitive

__all__ = [
    "jvp_rules", "transpose_rules", "batch_rules",
    "emit_rules", "out_rules", "blockwise", "reduce_rules", "float_rules", "block_rules", "unroll_rules",
    "jit_rewrites", "effectful", "commutative", "packing",
    "LARGE_ARRAY_BYTES", "checked_int64",
    "Linearization", "UndefinedPrimal", "JVPFactors", "JVPStructure", "LINEAR", "BILINEAR",
]

jvp_rules: dict[Primitive, Callable[..., Any] | JVPFactors | JVPStructure | Linearization] = {}
transpose_rules: dict[Primitive, Callable[..., Any]] = {}
batch_rules: dict[Primitive, Callable[..., Any]] = {}
emit_rules: dict[Primitive, Callable[..., str | None]] = {}
out_rules: dict[Primitive, np.ufunc] = {}
blockwise: set[Primitive] = set()
reduce_rules: dict[Primitive, np.ufunc] = {}
float_rules: dict[Primitive, Callable[..., str | None]] = {}
block_rules: dict[Primitive, Callable[..., list[str] | None]] = {}
unroll_rules: dict[Primitive, Callable[..., Any]] = {}
# jit's rewrite of one equation of a primitive (a loop's work moved out of it): the
# equations to put in its place, or None to keep it (applied by compiler.pipeline.optimize_jaxpr).
jit_rewrites: dict[Primitive, Callable[[Any], list[Any] | None]] = {}
effectful: set[Primitive] = set()
# Primitives of two operands that may be swapped: CSE takes `add a b` and `add b a` for one.
commutative: set[Primitive] = set()
packing: dict[Primitive, str] = {}


def checked_int64(n: int) -> int:
    """`n`, a Python int that float rules computed, if int64 holds it; else
    OverflowError (NumPy's int64 would wrap around)."""
    if -9223372036854775808 <= n <= 9223372036854775807:
        return n
    raise OverflowError(f"{n} does not fit in int64")


class UndefinedPrimal:
    """Stands for a linear input in a transpose rule: only its aval is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


class JVPFactors:
    """The jvp rule of an elementwise primitive as a table of derivatives.

    `factors[i]` is d(output)/d(argument i): a function `(ans, *primals,
    **params) -> factor` of the primal output and inputs, a number (a constant
    derivative: 1 for add, -1 for neg), or None (no derivative in that
    argument). The output tangent is `sum_i tangent_i * factor_i`, broadcast to
    the output. Factors touch primal values only, so they are computed once, on
    the primal trace, and reverse mode keeps them as its residuals.
    """

    __slots__ = ("factors", "none")

    def __init__(self, factors: tuple[Callable[..., Any] | int | float | None, ...]) -> None:
        self.factors = factors
        self.none = all(f is None for f in factors)  # no derivative at all (comparisons, rounding)

    def __repr__(self) -> str:
        return f"JVPFactors({self.factors})"


class JVPStructure:
    """A jvp rule that follows from the primitive's structure (see LINEAR, BILINEAR)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


LINEAR = JVPStructure("LINEAR")
BILINEAR = JVPStructure("BILINEAR")


class Linearization:
    """A jvp rule with its own reverse mode (see the module docstring)."""

    __slots__ = ("jvp", "linearize")

    def __init__(self, jvp: Callable[..., Any], linearize: Callable[..., Any]) -> None:
        self.jvp = jvp
        self.linearize = linearize

    def __call__(self, primals: list[Any], tangents: list[Any], **params: Any) -> Any:
        return self.jvp(primals, tangents, **params)
