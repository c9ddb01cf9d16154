"""`custom_linear_solve` and `custom_root` (JAX's `lax`): solutions whose
derivatives come from the equation they solve, not from the solver's steps
(the implicit function theorem). The user's functions are staged once on
abstract values, as in JAX, and bound as one primitive each
(`fgrad/higher_order/solves.py`, with their rules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..api.pytree import PyTreeDef, tree_flatten, tree_unflatten
from ..core.avals import ShapedArray
from ..higher_order.solves import (
    custom_root_p,
    linear_solve_p,
    linearized,
    transposed_matvec,
    transposed_tangent_solve,
)
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import closure_convert, trace_to_jaxpr
from ._common import ABSTRACT_ADVICE, avals_of, leaves_of

__all__ = ["custom_linear_solve", "custom_root"]


def _stage(fn: Callable[..., list[Any]], avals: Sequence[ShapedArray], name: str
           ) -> tuple[ClosedJaxpr, list[Any]]:
    """`fn` (flat lists in and out) staged at `avals`, closure-converted."""
    closed = trace_to_jaxpr(fn, avals, f"staging of {name}", fun_name=name, advice=ABSTRACT_ADVICE)
    return closure_convert(closed)


def _check_like(what: str, expected: str, tree: PyTreeDef, avals: Sequence[ShapedArray],
                got: Any) -> list[Any]:
    """The leaves of `got`, a value that must have the structure, shapes and
    dtypes of `expected` (`tree`, `avals`): a TypeError or ValueError naming
    the first difference otherwise."""
    leaves, got_tree = tree_flatten(got)
    if got_tree != tree:
        raise TypeError(f"{what} must return a value of the structure of {expected}, {tree}, but it "
                        f"returned one of structure {got_tree}")
    for k, (x, a) in enumerate(zip(leaves_of(leaves)[0], avals)):
        b = avals_of([x])[0]
        if b.shape != a.shape:
            raise ValueError(f"{what} returned shape {b.shape} for leaf {k}, but that leaf of {expected} has "
                             f"shape {a.shape}; they must be the same")
        if b.dtype != a.dtype:
            raise TypeError(f"{what} returned dtype {b.dtype} for leaf {k}, but that leaf of {expected} has "
                            f"dtype {a.dtype}; they must be the same")
    return leaves


# --- custom_linear_solve ------------------------------------------------------



def custom_linear_solve(matvec: Callable[[Any], Any], b: Any,
                        solve: Callable[[Callable[[Any], Any], Any], Any],
                        transpose_solve: Callable[[Callable[[Any], Any], Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """`solve(matvec, b)`, differentiated as the solution x of the linear system
    `matvec(x) == b` (JAX's `lax.custom_linear_solve`), not through `solve`'s steps.

    `matvec` is linear; `b` any pytree of arrays; `solve(matvec, b)` returns x
    (and, with `has_aux`, `(x, aux)`, aux without derivative). Forward mode
    needs nothing more; reverse mode needs `transpose_solve(vecmat, b)`, which
    solves the transposed system (`vecmat` is matvec's transpose, found by
    fgrad), or `symmetric=True`, when `solve` serves for both. Derivatives are
    taken in b and in what `matvec` closes over; what the solvers close over
    is only used to find x.

    >>> import fgrad, numpy as np
    >>> A = np.array([[2.0, 0.0], [0.0, 4.0]])
    >>> def x_of(b):
    ...     solve = lambda matvec, b: np.linalg.solve(A, b)
    ...     return custom_linear_solve(lambda x: A @ x, b, solve, symmetric=True)
    >>> fgrad.jacrev(x_of)(np.ones(2))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = leaves_of(b)
    avals = avals_of(b_leaves)
    n = len(b_leaves)
    aux_trees: list[PyTreeDef] = []

    def flat(fn: Callable[[Any], Any], what: str, aux: bool) -> Callable[..., list[Any]]:
        """`fn` of a vector of b's type, on flat lists, its result checked to be one of b's type."""

        def flat_fn(*xs: Any) -> list[Any]:
            out = fn(tree_unflatten(tree, list(xs)))
            if not aux:
                return _check_like(f"custom_linear_solve: {what}", "b", tree, avals, out)
            x, extra = _pair(out, f"custom_linear_solve: {what}", "(x, aux)")
            extra_leaves, extra_tree = leaves_of(extra)
            aux_trees.append(extra_tree)
            return [*_check_like(f"custom_linear_solve: {what}", "b", tree, avals, x), *extra_leaves]

        return flat_fn

    mv, mc = _stage(flat(matvec, "matvec", False), avals, "matvec")
    sv, sc = _stage(flat(lambda x: solve(matvec, x), "solve", has_aux), avals, "solve")
    vm: ClosedJaxpr | None = None
    vc: list[Any] = []
    ts: ClosedJaxpr | None = None
    tc: list[Any] = []
    if transpose_solve is not None:
        if symmetric:
            vm, vc = mv, mc
        else:
            vm, vc = transposed_matvec(mv, len(mc)), mc
        vecmat_closed, vecmat_consts = vm, vc

        def vecmat(y: Any) -> Any:
            leaves = leaves_of(y)[0]
            return tree_unflatten(tree, eval_jaxpr(vecmat_closed.jaxpr, vecmat_closed.consts, *vecmat_consts,
                                                   *leaves))

        ts, tc = _stage(flat(lambda x: transpose_solve(vecmat, x), "transpose_solve", has_aux), avals,
                        "transpose_solve")
    outs = linear_solve_p.bind(*mc, *vc, *sc, *tc, *b_leaves, matvec=mv, vecmat=vm, solve=sv,
                               transpose_solve=ts, const_counts=(len(mc), len(vc), len(sc), len(tc)),
                               name="custom_linear_solve")
    x = tree_unflatten(tree, outs[:n])
    return (x, tree_unflatten(aux_trees[0], outs[n:])) if has_aux else x



def _pair(out: Any, what: str, names: str) -> tuple[Any, Any]:
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{what} has has_aux=True, so it must return a pair {names}, but it returned "
                        f"{type(out).__name__}")
    return out[0], out[1]




# --- custom_root --------------------------------------------------------------------


def custom_root(f: Callable[[Any], Any], initial_guess: Any,
                solve: Callable[[Callable[[Any], Any], Any], Any],
                tangent_solve: Callable[[Callable[[Any], Any], Any], Any], has_aux: bool = False) -> Any:
    """`solve(f, initial_guess)`, differentiated as the root x of `f(x) == 0`
    (JAX's `lax.custom_root`): by the implicit function theorem, not through
    `solve`'s steps, so `solve` may be any solver (a `while_loop`, Newton's
    method) and need not be differentiable.

    `f` maps a pytree of arrays to one of the same structure; `solve(f, x0)`
    returns the root (and, with `has_aux`, `(root, aux)`, aux without
    derivative); `tangent_solve(g, y)` solves the linear system `g(x) == y`
    for g, f's linearization at the root (`lambda g, y: y / g(1.0)` for a
    scalar; `fgrad.numpy.linalg.solve(fgrad.jacobian(g)(y), y)` for a small
    vector). Derivatives are taken in what `f` closes over, in forward and
    reverse mode and to any order; the initial guess and what the solvers
    close over only find the root.

    >>> import fgrad, fgrad.numpy as fnp
    >>> from fgrad import lax
    >>> def sqrt(a):
    ...     newton = lambda f, x: lax.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), x)
    ...     return custom_root(lambda x: x**2 - a, 1.0, newton, lambda g, y: y / g(1.0))
    >>> float(sqrt(2.0)), float(fgrad.grad(sqrt)(2.0)), float(fgrad.jacfwd(fgrad.grad(sqrt))(4.0))
    (1.414213562373095, 0.3535533905932738, -0.03125)
    """
    guess, tree = leaves_of(initial_guess)
    avals = avals_of(guess)
    n = len(guess)

    def as_tree(xs: Sequence[Any]) -> Any:
        return tree_unflatten(tree, list(xs))

    def flat_f(*xs: Any) -> list[Any]:
        return _check_like("custom_root: f", "initial_guess", tree, avals, f(as_tree(xs)))

    aux_trees: list[PyTreeDef] = []

    def flat_solve(*xs: Any) -> list[Any]:
        out = solve(f, as_tree(xs))
        if not has_aux:
            return _check_like("custom_root: solve", "initial_guess", tree, avals, out)
        root, aux = _pair(out, "custom_root: solve", "(root, aux)")
        aux_leaves, aux_tree = leaves_of(aux)
        aux_trees.append(aux_tree)
        return [*_check_like("custom_root: solve", "initial_guess", tree, avals, root), *aux_leaves]

    fj, fc = _stage(flat_f, avals, "f")
    sj, sc = _stage(flat_solve, avals, "solve")
    matvec = linearized(fj, len(fc))
    used: list[bool] = []

    def tangent_system(linear: Callable[[], ClosedJaxpr], what: str) -> Callable[..., list[Any]]:
        """(x, y) -> tangent_solve(g, y), g the linear map `linear()` takes at x."""

        def flat_tangent_solve(*xs: Any) -> list[Any]:
            x = list(xs[:n])

            def g(v: Any) -> Any:
                used.append(True)
                m = linear()
                v_leaves = _check_like(f"custom_root: the vector given to {what}'s linear map",
                                       "initial_guess", tree, avals, v)
                return as_tree(eval_jaxpr(m.jaxpr, m.consts, *fc, *x, *v_leaves))

            return _check_like(f"custom_root: {what}", "initial_guess", tree, avals,
                               tangent_solve(g, as_tree(xs[n:])))

        return flat_tangent_solve

    tj, tc = _stage(tangent_system(lambda: matvec, "tangent_solve"), [*avals, *avals], "tangent_solve")
    ttj: ClosedJaxpr | None = None
    ttc: list[Any] = []
    if used and transposed_tangent_solve(tj, len(tc)) is None:
        # An iterative tangent_solve: the transposed system by the same solver, on J's transpose.
        try:
            transposed = transposed_matvec(matvec, len(fc) + n)
        except NotImplementedError:  # f's derivative cannot be transposed: no reverse mode
            pass
        else:
            ttj, ttc = _stage(tangent_system(lambda: transposed, "tangent_solve (transposed)"),
                              [*avals, *avals], "tangent_solve")
    outs = custom_root_p.bind(*fc, *sc, *tc, *ttc, *guess, f=fj, solve=sj, tangent_solve=tj,
                              transpose_tangent_solve=ttj, const_counts=(len(fc), len(sc), len(tc), len(ttc)))
    root = as_tree(outs[:n])
    return (root, tree_unflatten(aux_trees[0], outs[n:])) if has_aux else root
