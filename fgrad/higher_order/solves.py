"""The `custom_linear_solve` and `custom_root` primitives (bound by the
functions of those names in `fgrad.lax`): solutions whose
derivatives come from the equation they solve, not from the solver's steps
(the implicit function theorem), so that a solver with a `while_loop` of
unknown length, or one that is not differentiable at all, is differentiated
exactly, to any order, in both modes, under jit and vmap.

* `custom_linear_solve` is the primitive of that name. It takes the
  constants of its four functions (matvec, vecmat, solve, transpose_solve;
  each a closed jaxpr taking its constants, then a vector of b's type), then
  b; evaluation runs `solve`. Its jvp is the solve again: A x = b gives
  A dx = db - dA x, dA x the jvp of matvec in its constants (what the
  solvers close over carries no derivative: they only find x). The solve is
  linear in b, and its transpose is the transposed solve, matvec and vecmat,
  solve and transpose_solve swapped; vecmat is the transpose of matvec (the
  same for a symmetric one), found when first needed. vmap batches the four.
* `custom_root` is the primitive of that name. It takes the constants of f,
  of solve, of the tangent solve and of its transpose, then the initial
  guess; evaluation runs `solve`. Its jvp at the root x of f(theta, x) = 0 is
  dx = -J^-1 (df/dtheta dtheta), J = df/dx: a `custom_linear_solve` with J's
  action as matvec and the user's `tangent_solve` as solve, so reverse mode
  and every higher order follow from that primitive's rules. The transposed
  tangent system is solved by transposing `tangent_solve`'s own code where it
  can be (a division, `fgrad.numpy.linalg.solve`), else by `tangent_solve`
  on J's transpose (an iterative solver, which uses the map it is given).

The functions are staged once on abstract values, as in JAX (the functions
given to fgrad.lax are); jit writes the solve inline.
"""

from __future__ import annotations

from typing import Any

from ..core.avals import ShapedArray
from ..core.libraries import on_every_namespace
from ..core.rules import UndefinedPrimal, batch_rules, block_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from ..ir.cache import cached_per_jaxpr
from ..ir.check import check_operands
from ..ir.codegen import runner
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.passes import dce_closed_jaxpr
from ..primitives import batching
from ..primitives import derivatives as d
from ..primitives import elementwise as ew
from ..transforms.batching import batch_jaxpr
from ..transforms.forward import jvp_jaxpr
from ..transforms.reverse import transpose_jaxpr
from ._common import assign, avals_of, split_counts

__all__ = ["linear_solve_p", "custom_root_p", "Counts", "linearized", "transposed_matvec",
           "transposed_tangent_solve"]

Counts = tuple[int, int, int, int]


# --- custom_linear_solve ------------------------------------------------------


def _linear_solve_impl(*args: Any, matvec: ClosedJaxpr, vecmat: ClosedJaxpr | None, solve: ClosedJaxpr,
                       transpose_solve: ClosedJaxpr | None, const_counts: Counts, name: str) -> list[Any]:
    _, _, sc, _, b = split_counts(args, const_counts)
    return runner(solve)(*sc, *b)


def _linear_solve_aval(*avals: ShapedArray, matvec: ClosedJaxpr, vecmat: ClosedJaxpr | None,
                       solve: ClosedJaxpr, transpose_solve: ClosedJaxpr | None,
                       const_counts: Counts, name: str) -> list[ShapedArray]:
    mc, vc, sc, tc, b = split_counts(avals, const_counts)
    check_operands("custom_linear_solve (its matvec)", mc + b, matvec)
    check_operands("custom_linear_solve (its solve)", sc + b, solve)
    if vecmat is not None:
        check_operands("custom_linear_solve (its vecmat)", vc + b, vecmat)
    if transpose_solve is not None:
        check_operands("custom_linear_solve (its transpose_solve)", tc + b, transpose_solve)
    return solve.out_avals


linear_solve_p = Primitive("custom_linear_solve", on_every_namespace(_linear_solve_impl), _linear_solve_aval,
                           multiple_results=True)


def _tangent_of_matvec(matvec: ClosedJaxpr, consts: list[Any], const_tangents: list[Any],
                       x: list[Any]) -> list[Any]:
    """dA x: the jvp of `matvec` (consts, x) in its constants, x fixed (None where zero)."""
    nonzeros = tuple(t is not None for t in const_tangents) + (False,) * len(x)
    jvp, out_nonzeros = jvp_jaxpr(matvec, nonzeros, False)
    outs = eval_jaxpr(jvp.jaxpr, jvp.consts, *consts, *x, *(t for t in const_tangents if t is not None))
    it = iter(outs[len(x):])
    return [next(it) if nz else None for nz in out_nonzeros]


def _linear_solve_jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[list[Any], list[Any]]:
    # A x = b, so A dx = db - dA x: the same solve, on that right-hand side.
    outs = linear_solve_p.bind(*primals, **params)
    mc, vc, sc, tc, b = split_counts(primals, params["const_counts"])
    mt, _, _, _, bt = split_counts(tangents, params["const_counts"])
    n = len(b)
    rhs = list(bt)
    if any(t is not None for t in mt):
        for i, da_x in enumerate(_tangent_of_matvec(params["matvec"], mc, mt, outs[:n])):
            if da_x is not None:
                rhs[i] = ew.neg(da_x) if rhs[i] is None else ew.sub(rhs[i], da_x)
    if all(r is None for r in rhs):
        return outs, [None] * len(outs)
    filled = [d.zeros_like_value(x) if r is None else r for x, r in zip(b, rhs)]
    dx = linear_solve_p.bind(*mc, *vc, *sc, *tc, *filled, **params)
    return outs, [*dx[:n], *[None] * (len(outs) - n)]  # aux values have no derivative


@cached_per_jaxpr
def transposed_matvec(matvec: ClosedJaxpr, num_consts: int) -> ClosedJaxpr:
    """vecmat: (consts, y) -> A^T y, the transpose of matvec in its vector (cached)."""
    n = len(matvec.in_avals) - num_consts
    return transpose_jaxpr(matvec, (False,) * num_consts + (True,) * n)


def _linear_solve_transpose(cts: list[Any], *args: Any, matvec: ClosedJaxpr, vecmat: ClosedJaxpr | None,
                            solve: ClosedJaxpr, transpose_solve: ClosedJaxpr | None,
                            const_counts: Counts, name: str) -> list[Any]:
    if transpose_solve is None:
        raise TypeError(_NO_TRANSPOSE[name])
    mc, vc, sc, tc, b = split_counts(args, const_counts)
    if any(type(x) is UndefinedPrimal for x in [*mc, *vc, *sc, *tc]):
        raise TypeError("custom_linear_solve is linear in b only, not in what its functions close over: "
                        "it cannot be transposed in those")
    if vecmat is None:  # found now: the transpose of matvec, on matvec's constants
        vecmat, vc = transposed_matvec(matvec, len(mc)), mc
    filled = [d.zeros(x.aval if type(x) is UndefinedPrimal else avals_of([x])[0]) if ct is None else ct
              for ct, x in zip(cts, b)]
    cts_b = linear_solve_p.bind(*vc, *mc, *tc, *sc, *filled, matvec=vecmat, vecmat=matvec,
                                solve=transpose_solve, transpose_solve=solve,
                                const_counts=(len(vc), len(mc), len(tc), len(sc)), name=name)
    return [None] * sum(const_counts) + [c if type(x) is UndefinedPrimal else None for x, c in zip(b, cts_b)]


def _linear_solve_batch(args: list[Any], dims: list[Any], *, matvec: ClosedJaxpr, vecmat: ClosedJaxpr | None,
                        solve: ClosedJaxpr, transpose_solve: ClosedJaxpr | None,
                        const_counts: Counts, name: str) -> tuple[list[Any], list[Any]]:
    # Constants keep their batching; b, x and everything of their type is batched along axis 0.
    size = batching.batch_size(args, dims)
    n_consts = sum(const_counts)
    moved = [x if dim is None else batching.move_axis(x, dim, 0) for x, dim in zip(args[:n_consts], dims)]
    moved += [batching.with_batch_axis(x, dim, size) for x, dim in zip(args[n_consts:], dims[n_consts:])]
    cd = [None if dim is None else 0 for dim in dims[:n_consts]]
    md, vd, sd, td, _ = split_counts(cd, const_counts)
    n_b = len(args) - n_consts

    def batched(closed: ClosedJaxpr | None, const_dims: list[Any]) -> ClosedJaxpr | None:
        return None if closed is None else batch_jaxpr(closed, size, (*const_dims, *[0] * n_b), True)[0]

    out = linear_solve_p.bind(*moved, matvec=batched(matvec, md), vecmat=batched(vecmat, vd),
                              solve=batched(solve, sd), transpose_solve=batched(transpose_solve, td),
                              const_counts=const_counts, name=name)
    return out, [0] * len(out)


def _linear_solve_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: the solve written inline."""
    p = eqn.params
    _, _, sc, _, b = split_counts(args, p["const_counts"])
    body, results = writer.inline(p["solve"], [*sc, *b], "the solve of custom_linear_solve")
    return [*body, *assign([writer.name(v) for v in eqn.outvars], results)]


_NO_TRANSPOSE = {
    "custom_linear_solve": (
        "reverse-mode differentiation (grad, vjp, jacrev) of custom_linear_solve needs its transpose: give "
        "transpose_solve, a function solving the transposed system, transpose_solve(vecmat, b), or "
        "symmetric=True if matvec is symmetric (then solve serves for both)"),
    "custom_root": (
        "reverse-mode differentiation (grad, vjp, jacrev) of custom_root needs the transpose of its "
        "tangent system, and its tangent_solve gives none: its code cannot be transposed (a loop whose "
        "length depends on its right-hand side?), and it does not use the linear map g it is given, on "
        "whose transpose fgrad would run it. Solve with g (lambda g, y: "
        "fgrad.numpy.linalg.solve(fgrad.jacobian(g)(y), y), or an iterative solver calling g), or "
        "differentiate in forward mode (jvp, jacfwd)"),
}

jvp_rules[linear_solve_p] = _linear_solve_jvp
transpose_rules[linear_solve_p] = _linear_solve_transpose
batch_rules[linear_solve_p] = _linear_solve_batch
block_rules[linear_solve_p] = _linear_solve_block



# --- custom_root --------------------------------------------------------------------


def _custom_root_impl(*args: Any, f: ClosedJaxpr, solve: ClosedJaxpr, tangent_solve: ClosedJaxpr,
                      transpose_tangent_solve: ClosedJaxpr | None, const_counts: Counts) -> list[Any]:
    _, sc, _, _, guess = split_counts(args, const_counts)
    return runner(solve)(*sc, *guess)


def _custom_root_aval(*avals: ShapedArray, f: ClosedJaxpr, solve: ClosedJaxpr, tangent_solve: ClosedJaxpr,
                      transpose_tangent_solve: ClosedJaxpr | None, const_counts: Counts) -> list[ShapedArray]:
    fc, sc, tc, ttc, guess = split_counts(avals, const_counts)
    check_operands("custom_root (its f)", fc + guess, f)
    check_operands("custom_root (its solve)", sc + guess, solve)
    check_operands("custom_root (its tangent_solve)", tc + guess + guess, tangent_solve)
    if transpose_tangent_solve is not None:
        check_operands("custom_root (its transposed tangent_solve)", ttc + guess + guess,
                       transpose_tangent_solve)
    return solve.out_avals


custom_root_p = Primitive(
    "custom_root", on_every_namespace(_custom_root_impl), _custom_root_aval, multiple_results=True
)


@cached_per_jaxpr
def linearized(f: ClosedJaxpr, num_consts: int) -> ClosedJaxpr:
    """(consts, x, v) -> df/dx(x) v: f's jvp in x, its tangent only (cached)."""
    n = len(f.in_avals) - num_consts
    jvp, _ = jvp_jaxpr(f, (False,) * num_consts + (True,) * n, True)
    return dce_closed_jaxpr(jvp, [False] * n + [True] * n)


@cached_per_jaxpr
def transposed_tangent_solve(tangent_solve: ClosedJaxpr, num_consts: int) -> ClosedJaxpr | None:
    """(consts, x, y) -> the transpose of y -> tangent_solve(consts, x, y), if
    that code can be transposed (cached); None if not."""
    n = (len(tangent_solve.in_avals) - num_consts) // 2
    try:
        return transpose_jaxpr(tangent_solve, (False,) * (num_consts + n) + (True,) * n)
    except (NotImplementedError, TypeError):  # a loop whose length depends on y; a solve without a transpose
        return None


def _custom_root_jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[list[Any], list[Any]]:
    # f(theta, x(theta)) = 0, so J dx = -df/dtheta dtheta, J = df/dx at the root.
    outs = custom_root_p.bind(*primals, **params)
    counts = params["const_counts"]
    fc, sc, tc, ttc, guess = split_counts(primals, counts)
    ft = split_counts(tangents, counts)[0]
    n = len(guess)
    if all(t is None for t in ft):  # the guess and what the solvers close over carry no derivative
        return outs, [None] * len(outs)
    x = outs[:n]
    f = params["f"]
    jvp, _ = jvp_jaxpr(f, tuple(t is not None for t in ft) + (False,) * n, True)
    rhs = eval_jaxpr(jvp.jaxpr, jvp.consts, *fc, *x, *(t for t in ft if t is not None))[n:]
    tangent_solve = params["tangent_solve"]
    transposed = transposed_tangent_solve(tangent_solve, len(tc))
    if transposed is not None:  # the transpose of tangent_solve's own code: exact whenever it exists
        transpose_solve, ttc = transposed, tc
    else:
        transpose_solve = params["transpose_tangent_solve"]
    dx = linear_solve_p.bind(*fc, *x, *tc, *x, *ttc, *x, *rhs, matvec=linearized(f, len(fc)), vecmat=None,
                             solve=tangent_solve, transpose_solve=transpose_solve,
                             const_counts=(len(fc) + n, 0, len(tc) + n, len(ttc) + n), name="custom_root")
    return outs, [*(ew.neg(t) for t in dx), *[None] * (len(outs) - n)]


def _custom_root_batch(args: list[Any], dims: list[Any], *, f: ClosedJaxpr, solve: ClosedJaxpr,
                       tangent_solve: ClosedJaxpr, transpose_tangent_solve: ClosedJaxpr | None,
                       const_counts: Counts) -> tuple[list[Any], list[Any]]:
    size = batching.batch_size(args, dims)
    n_consts = sum(const_counts)
    moved = [x if dim is None else batching.move_axis(x, dim, 0) for x, dim in zip(args[:n_consts], dims)]
    moved += [batching.with_batch_axis(x, dim, size) for x, dim in zip(args[n_consts:], dims[n_consts:])]
    fd, sd, td, ttd, _ = split_counts([None if dim is None else 0 for dim in dims[:n_consts]], const_counts)
    n = len(args) - n_consts

    def batched(closed: ClosedJaxpr | None, const_dims: list[Any], vectors: int) -> ClosedJaxpr | None:
        if closed is None:
            return None
        return batch_jaxpr(closed, size, (*const_dims, *[0] * (n * vectors)), True)[0]

    out = custom_root_p.bind(*moved, f=batched(f, fd, 1), solve=batched(solve, sd, 1),
                             tangent_solve=batched(tangent_solve, td, 2),
                             transpose_tangent_solve=batched(transpose_tangent_solve, ttd, 2),
                             const_counts=const_counts)
    return out, [0] * len(out)


def _custom_root_block(writer: Any, eqn: Any, args: list[str]) -> list[str]:
    """jit's code: the solve written inline."""
    p = eqn.params
    _, sc, _, _, guess = split_counts(args, p["const_counts"])
    body, results = writer.inline(p["solve"], [*sc, *guess], "the solve of custom_root")
    return [*body, *assign([writer.name(v) for v in eqn.outvars], results)]


jvp_rules[custom_root_p] = _custom_root_jvp
batch_rules[custom_root_p] = _custom_root_batch
block_rules[custom_root_p] = _custom_root_block
