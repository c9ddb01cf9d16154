"""fgrad.scipy.sparse.linalg: SciPy's iterative solvers of A x = b (`cg`,
`gmres`, `bicgstab`) with SciPy's names, signatures and results `(x, info)`,
their solutions differentiable in b and in what A closes over.

A (and the preconditioner M) is a matrix (a NumPy array, or a traced one), a
function x -> A x written with fgrad.numpy, or one of SciPy's sparse matrices
or LinearOperators, a constant applied by the primitive
`scipy_linear_operator` (its transpose is the operator's `.T`).

* The iterations are SciPy's, written with fgrad.numpy on
  `fgrad.lax.while_loop`: they run under jit and vmap, and without SciPy,
  which is imported only to read SciPy's objects. Under jit they cost about
  what SciPy's Python loops cost (benchmarks/bench_sparse_linalg.py); an
  eager call stages its loops first, about a millisecond.
* The derivative comes from the linear system, not from the iterations
  (`fgrad.lax.custom_linear_solve`, as JAX's): A dx = db - dA x is solved by
  the same method, on A in forward mode and on A^T in reverse mode. A^T is
  found by transposing A's code (also for cg, so that a derivative is right
  even where A is not quite symmetric), or is the LinearOperator's `.T`; cg
  takes a SciPy operator, which may have no transpose, as its own. Where
  A's code cannot be transposed (a loop carrying a counter), gmres and
  bicgstab still solve, and differentiate in forward mode; reverse mode
  raises TypeError.
* Those solves of derivatives start from zero, not from x0; their tolerance
  is relative, max(rtol, atol / |b|) times the norm of their right-hand
  side, so that a derivative is as accurate at any scale; they do not call
  `callback`. They are told apart from the solve of x by a marker: b is
  extended by one number, with 1 as its block of A; it is 1 in the solve of
  x, and 0 in the right-hand sides of derivatives (tangents and cotangents
  of a constant). The callback gets the marker with its value, and calls
  the user's for the solve of x only (for each example, under vmap).
* `info` is SciPy's: 0 when converged, else the number of iterations (or
  bicgstab's negative breakdown codes). A derivative of a solution that did
  not converge warns (RuntimeWarning, through `scipy_solution_tangent`,
  fgrad/scipy/_solutions.py), and so does a derivative whose own solve did
  not converge: either is not the derivative of the solution.

Real dtypes only; complex systems raise TypeError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import numpy as fnp
from ...core.avals import get_aval
from ...core.libraries import numpy_only
from ...core.optional import require
from ...core.rules import LINEAR, batch_rules, jvp_rules, transpose_rules
from ...core.trace import Primitive, Tracer
from ...higher_order._common import concrete
from ...higher_order.effects import Named, debug_callback_p
from ...lax import cond, custom_linear_solve, while_loop
from ...primitives import batching
from .._solutions import Convergence, solution_p, tangent_check_p

__all__ = ["cg", "gmres", "bicgstab"]

Matvec = Callable[[Any], Any]
Report = Callable[..., Any]  # report(value, when=True): the callback, where the solve of x reaches value


# --- SciPy's operators: one primitive ------------------------------------------------------------


class _Operator:
    """A SciPy LinearOperator as a parameter of `scipy_linear_operator_p`:
    compared by identity, printed by its type and shape; `.T` is its
    transpose (one object, so that transposing twice gives this one back)."""

    __slots__ = ("op", "transposed", "_t")

    def __init__(self, op: Any, transposed: bool = False, t: _Operator | None = None) -> None:
        self.op = op
        self.transposed = transposed
        self._t = t

    @property
    def T(self) -> _Operator:  # noqa: N802 (SciPy's name)
        if self._t is None:
            self._t = _Operator(self.op.T, not self.transposed, self)
        return self._t

    def __repr__(self) -> str:
        return f"{type(self.op).__name__}{self.op.shape}"


def _operator_impl(x: Any, *, operator: _Operator) -> Any:
    x = np.asarray(x)
    try:  # vectors along the last axis; a batch of them is one matmat
        y = operator.op.matvec(x) if x.ndim == 1 else operator.op.matmat(x.reshape(-1, x.shape[-1]).T).T
    except (NotImplementedError, TypeError) as error:  # SciPy's matmat without rmatvec: TypeError
        if not operator.transposed:
            raise
        raise NotImplementedError(
            f"the transpose of {operator!r} is needed (a reverse-mode derivative of gmres or bicgstab solves "
            f"with A^T), but applying it failed ({type(error).__name__}: {error}): give the LinearOperator "
            "rmatvec (and rmatmat), or use forward mode (jvp, jacfwd)") from error
    return np.asarray(y).astype(x.dtype, copy=False).reshape(x.shape)


scipy_operator_p = Primitive(
    "scipy_linear_operator", numpy_only("scipy_linear_operator", _operator_impl), lambda x, *, operator: x
)
jvp_rules[scipy_operator_p] = LINEAR
transpose_rules[scipy_operator_p] = lambda ct, x, *, operator: [
    scipy_operator_p.bind(ct, operator=operator.T)]
batch_rules[scipy_operator_p] = lambda args, dims, *, operator: (
    scipy_operator_p.bind(batching.move_axis(args[0], dims[0], 0), operator=operator), 0)


# --- A, M, b and x0 --------------------------------------------------------------------------------


def _is_scipy(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "scipy"


def _real_dtype(dtype: np.dtype, name: str, what: str) -> np.dtype:
    if dtype.kind == "c":
        raise TypeError(f"{name}: {what} is complex ({dtype}), but fgrad's iterative solvers solve real "
                        "systems only; split a complex system into its real and imaginary parts")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name}: {what} must be an array of real numbers, but it has dtype {dtype}")
    return dtype


def _matrix(A: Any, name: str, what: str) -> tuple[Any, tuple[int, ...], np.dtype, bool]:
    """A (or M) as (the operator, its shape, its dtype, whether it is a function)."""
    if _is_scipy(A):
        ssl = require("scipy.sparse.linalg", "scipy", f"{name} with a SciPy {type(A).__name__}")
        op = ssl.aslinearoperator(A)
        return _Operator(op), tuple(op.shape), np.dtype(op.dtype), False
    if callable(A) and not isinstance(A, Tracer):
        return A, (), np.dtype(np.float64), True
    if not isinstance(A, (Tracer, np.ndarray, np.generic, list, tuple)):
        raise TypeError(f"{name}: {what} must be a matrix (an array), a function x -> {what} @ x, or a SciPy "
                        f"sparse matrix or LinearOperator, not {type(A).__name__}")
    A = fnp.asarray(A)
    shape = get_aval(A).shape
    return A, shape, _real_dtype(get_aval(A).dtype, name, what), False


def _square(shape: tuple[int, ...], name: str, what: str) -> int:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name}: {what} must be a square matrix, but it has shape {shape}")
    return shape[0]


def _flat_matvec(op: Any, is_function: bool, shape: tuple[int, ...], dtype: np.dtype, name: str,
                 what: str) -> Matvec:
    """v -> op @ v on flat vectors (a function of arrays of `shape`, reshaped)."""
    if isinstance(op, _Operator):
        return lambda v: scipy_operator_p.bind(v, operator=op)
    if not is_function:
        return lambda v: op @ v

    def matvec(v: Any) -> Any:
        out = fnp.asarray(op(fnp.reshape(v, shape)))
        aval = get_aval(out)
        if aval.shape != shape:
            raise ValueError(f"{name}: {what}(x) returned an array of shape {aval.shape} for an x of "
                             f"shape {shape}; {what} must map x to an array of x's shape (as a square "
                             "matrix does)")
        _real_dtype(aval.dtype, name, f"{what}(x)")
        return fnp.ravel(out).astype(dtype)

    return matvec


def _nonnegative(value: Any, name: str, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {what} must be a real number, not {value!r}")
    if not value >= 0:
        raise ValueError(f"{name}: {what} must be a non-negative number, not {value!r}")
    return float(value)


def _positive_int(value: Any, name: str, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {what} must be an integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{name}: {what} must be at least 1, not {value!r}")
    return int(value)


# --- the iterations (SciPy's), on flat vectors --------------------------------------------------------
#
# Each takes (A, M, b, x, r, bound, maxiter, report): the matvecs, the right-hand side, the first
# iterate and its residual b - A x, the bound the residual's norm must fall below (infinite for
# b = 0), and `report(x)` (the callback); it returns x and info.


def _norm(v: Any) -> Any:
    return fnp.sqrt(v @ v)


def _safe(d: Any) -> Any:
    """A denominator that is 1 where it is 0 (its result is then not used)."""
    return fnp.where(d == 0, 1, d)


def _cg_iterations(A: Matvec, M: Matvec, b: Any, x: Any, r: Any, bound: Any, maxiter: int,
                   report: Report, **_: Any) -> tuple[Any, Any]:
    def go_on(c: tuple[Any, ...]) -> Any:
        return (_norm(c[1]) >= bound) & (c[4] < maxiter)

    def step(c: tuple[Any, ...]) -> tuple[Any, ...]:
        x, r, p, rho_prev, k = c
        z = M(r)
        rho = r @ z
        p = z + (rho / rho_prev) * p  # p = z at first: p starts at 0
        q = A(p)
        alpha = rho / (p @ q)
        return report(x + alpha * p), r - alpha * q, p, rho, k + 1

    x, r, _, _, k = while_loop(go_on, step, (x, r, fnp.zeros_like(b), fnp.ones((), b.dtype), 0))
    return x, fnp.where(_norm(r) < bound, 0, k)


def _bicgstab_iterations(A: Matvec, M: Matvec, b: Any, x: Any, r: Any, bound: Any, maxiter: int,
                         report: Report, **_: Any) -> tuple[Any, Any]:
    rhotol = float(np.finfo(b.dtype).eps) ** 2  # SciPy's (from the Fortran code), for rho and omega
    rtilde = r

    def go_on(c: tuple[Any, ...]) -> Any:
        return (_norm(c[1]) >= bound) & (c[7] < maxiter) & (c[8] == 0)

    def step(c: tuple[Any, ...]) -> tuple[Any, ...]:
        x, r, p, v, rho_prev, alpha, omega, k, _ = c
        rho = rtilde @ r
        beta = (rho / _safe(rho_prev)) * (alpha / _safe(omega))
        p = r + beta * (p - omega * v)  # p = r at first: p and v start at 0
        phat = M(p)
        v = A(phat)
        rv = rtilde @ v
        alpha = rho / _safe(rv)
        s = r - alpha * v
        early = _norm(s) < bound
        shat = M(s)
        t = A(shat)
        omega = (t @ s) / _safe(t @ t)
        new_x = fnp.where(early, x + alpha * phat, x + alpha * phat + omega * shat)
        new_r = fnp.where(early, s, s - omega * t)
        omega_broke = (k > 0) & (fnp.abs(c[6]) < rhotol)
        code = fnp.where(fnp.abs(rho) < rhotol, -10, fnp.where(omega_broke | (rv == 0), -11, 0))
        ok = code == 0
        x = fnp.where(ok, new_x, x)
        x = report(x, ok & ~early)  # SciPy's callback: after a full step
        return x, fnp.where(ok, new_r, r), p, v, rho, alpha, omega, fnp.where(ok, k + 1, k), code

    one = fnp.ones((), b.dtype)
    zero = fnp.zeros_like(b)
    x, r, *_, k, code = while_loop(go_on, step, (x, r, zero, zero, one, one, one, 0, 0))
    return x, fnp.where(code != 0, code, fnp.where(_norm(r) < bound, 0, k))


def _gmres_iterations(A: Matvec, M: Matvec, b: Any, x: Any, r: Any, bound: Any, maxiter: int,
                      report: Report, restart: int, report_norm: Report) -> tuple[Any, Any]:
    """SciPy's restarted GMRES: left-preconditioned Arnoldi (Gram-Schmidt, twice where needed), Givens
    rotations giving the preconditioned residual at each inner step, SciPy's inner tolerance control;
    `maxiter` counts restart cycles. The rotations so far are one orthogonal matrix `q` of m + 1 rows
    (so the right-hand side of the small least-squares problem is beta q[:, 0]), and entry j of a
    short vector is read and written through the unit vector e_j, not by indexing: a traced index
    costs a gather or a scatter, many times a product of this size."""
    n = b.shape[0]
    m = min(restart, n)
    dtype = b.dtype
    eps = float(np.finfo(dtype).eps)
    some_b = _safe(_norm(b))
    positions = fnp.arange(m + 1)

    def cycle(c: tuple[Any, ...]) -> tuple[Any, ...]:
        x, r, _, ptol, factor, k, _ = c
        z = M(r)
        beta = _norm(z)
        basis = fnp.at(fnp.zeros((m + 1, n), dtype))[0].set(z / _safe(beta))
        start = (0, basis, fnp.zeros((m, m + 1), dtype), fnp.eye(m + 1, dtype=dtype), fnp.zeros((), dtype),
                 False, False)

        def inner_go_on(ic: tuple[Any, ...]) -> Any:
            return (ic[0] < m) & ~ic[6]

        def arnoldi(ic: tuple[Any, ...]) -> tuple[Any, ...]:
            j, basis, h, q, _, _, _ = ic
            e_j = (positions == j).astype(dtype)
            e_next = (positions == j + 1).astype(dtype)
            w = M(A(basis[j]))
            h0 = _norm(w)
            col = basis @ w  # 0 after row j, as the basis is
            w = w - col @ basis

            def orthogonalise_again(wc: tuple[Any, Any]) -> tuple[Any, Any]:
                w, col = wc
                again = basis @ w
                return w - again @ basis, col + again

            # Gram-Schmidt again where it lost digits ("twice is enough": where w shrank by sqrt(2))
            w, col = cond(_norm(w) < h0 / np.sqrt(2.0), orthogonalise_again, lambda wc: wc, (w, col))
            h1 = _norm(w)
            breakdown = h1 <= eps * h0
            basis = fnp.at(basis)[j + 1].set(fnp.where(breakdown, w, w / _safe(h1)))
            col = q @ (col + e_next * fnp.where(breakdown, 0, h1))  # the rotations so far
            f, g = col @ e_j, col @ e_next
            mag = fnp.sqrt(f * f + g * g)  # the rotation that zeroes g
            cs, sn = fnp.where(mag > 0, f / _safe(mag), 1), fnp.where(mag > 0, g / _safe(mag), 0)
            h = h + e_j[:m, None] * (col + e_j * (mag - f) - e_next * g)[None, :]
            row, next_row = e_j @ q, e_next @ q
            q = q + (e_j[:, None] * (cs * row + sn * next_row - row)[None, :]
                     + e_next[:, None] * (cs * next_row - sn * row - next_row)[None, :])
            presid = fnp.abs(beta * (cs * next_row[0] - sn * row[0]))  # |s[j + 1]|, s = beta q[:, 0]
            report_norm(presid / some_b)  # kept: the callback is an effect
            return j + 1, basis, h, q, presid, breakdown, (presid <= ptol) | breakdown

        j, basis, h, q, presid, breakdown, _ = while_loop(inner_go_on, arnoldi, start)
        s = beta * q[:, 0]
        # y from the j x j upper triangle U (U[i, k] = h[k, i]), the rest of U the identity; a zero on
        # its diagonal (an exact solution, A singular on the Krylov space) gives y 0 there, as SciPy's
        used = positions[:m] < j
        upper = h[:, :m].T
        singular = used & (fnp.diagonal(upper) == 0)
        upper = fnp.where(used[:, None] & used[None, :], upper, fnp.eye(m, dtype=dtype))
        upper = upper + fnp.diag(fnp.where(singular, 1, 0).astype(dtype))
        y = fnp.linalg.solve(upper, fnp.where(used & ~singular, s[:m], 0))
        x = report(x + y @ basis[:m])
        r = b - A(x)
        r_norm = _norm(r)
        factor = fnp.where(presid <= ptol, fnp.maximum(eps, 0.25 * factor), fnp.minimum(1.0, 1.5 * factor))
        ptol = presid * fnp.minimum(factor, bound / _safe(r_norm))
        return x, r, r_norm, ptol, factor, k + 1, (r_norm <= bound) | breakdown

    def go_on(c: tuple[Any, ...]) -> Any:
        return (c[5] < maxiter) & ~c[6]

    r_norm = _norm(r)
    ptol = _norm(M(b)) * fnp.minimum(1.0, bound / some_b)
    init = (x, r, r_norm, ptol, fnp.ones((), dtype), 0, r_norm < bound)
    x, _, r_norm, *_, k, _ = while_loop(go_on, cycle, init)
    return x, fnp.where(r_norm <= bound, 0, k)


# --- the solve ---------------------------------------------------------------------------------------


def _no_report(v: Any, when: Any = True) -> Any:
    return v


def _marked(callback: Callable[[Any], Any], shape: tuple[int, ...]) -> Callable[[Any], None]:
    """The user's callback on a value with the solve's marker after it (a batch of them under
    vmap, one row each): called for the solve of x only, with the value in `shape`."""
    def call(packed: Any) -> None:
        rows = np.asarray(packed)
        for row in rows.reshape(-1, rows.shape[-1]):
            if row[-1] != 0:
                callback(row[:-1].reshape(shape) if shape else float(row[0]))
    return call


def _unconverged(name: str) -> Convergence:
    return Convergence(name, (
        "the solve did not converge (info > 0), so its x is not the solution and the implicit function "
        "theorem gives the derivative of nothing: raise maxiter, loosen rtol or atol, give a "
        "preconditioner M, or check info before differentiating"))


def _derivative_unconverged(name: str) -> Convergence:
    return Convergence(name, (
        "the linear solve of a derivative (A dx = db - dA x, or its transpose, by the same method, rtol "
        "and maxiter) did not converge, so the derivative is not accurate: raise maxiter or give a "
        "preconditioner M"))


def _solve(name: str, iterations: Callable[..., tuple[Any, Any]], A: Any, b: Any, x0: Any, rtol: Any,
           atol: Any, maxiter: Any, M: Any, callback: Callable[[Any], Any] | None, symmetric: bool,
           of_derivative: bool = False, callback_type: str = "x", **options: Any) -> tuple[Any, Any]:
    """`iterations` on A x = b, differentiated through custom_linear_solve: (x, info). With
    `of_derivative` (fgrad's own tangent systems, whose solution is a derivative) x warns at once
    when the solve did not converge."""
    rtol = _nonnegative(rtol, name, "rtol")
    atol = _nonnegative(atol, name, "atol")
    A, a_shape, a_dtype, a_function = _matrix(A, name, "A")
    b = fnp.asarray(b)
    b_aval = get_aval(b)
    dtype = np.result_type(_real_dtype(b_aval.dtype, name, "b"), a_dtype if not a_function else b_aval.dtype)
    if a_function:
        shape = b_aval.shape
    else:
        n = _square(a_shape, name, "A")
        if b_aval.shape not in ((n,), (n, 1)):
            raise ValueError(f"{name}: the shapes of A {a_shape} and b {b_aval.shape} are incompatible: b "
                             f"must have shape ({n},) or ({n}, 1)")
        shape = (n,)
    size = int(np.prod(shape))
    if M is not None:
        M, m_shape, m_dtype, m_function = _matrix(M, name, "M")
        if not m_function:
            n_m = _square(m_shape, name, "M")
            if n_m != size:
                raise ValueError(f"{name}: the shapes of M {m_shape} and b {b_aval.shape} are incompatible: "
                                 f"M must be a ({size}, {size}) matrix")
            dtype = np.result_type(dtype, m_dtype)
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    maxiter = 10 * size if maxiter is None else _positive_int(maxiter, name, "maxiter")
    b = fnp.ravel(b).astype(dtype)
    if x0 is not None:
        x0 = fnp.asarray(x0)
        if get_aval(x0).size != size or get_aval(x0).shape not in (shape, b_aval.shape):
            raise ValueError(f"{name}: x0 has shape {get_aval(x0).shape}, but it must have b's, "
                             f"{b_aval.shape}")
        _real_dtype(get_aval(x0).dtype, name, "x0")
        x0 = fnp.ravel(x0).astype(dtype)
    a_matvec = _flat_matvec(A, a_function, shape, dtype, name, "A")
    m_matvec = (lambda v: v) if M is None else _flat_matvec(M, m_function, shape, dtype, name, "M")
    b_norm = _norm(b)  # the scale of atol in the solves of derivatives
    reporter = None if callback is None else Named(_marked(callback, shape if callback_type == "x" else ()))
    if reporter is not None:
        reporter.name = getattr(callback, "__name__", "callback")

    def run(op: Matvec, rhs_and_marker: tuple[Any, Any]) -> tuple[tuple[Any, Any], Any]:
        rhs, marker = rhs_and_marker
        primal = marker != 0
        rhs_norm = _norm(rhs)
        scale = fnp.where(primal, 1.0, fnp.where(b_norm > 0, rhs_norm / _safe(b_norm), 0.0))
        bound = fnp.where(rhs_norm > 0, fnp.maximum(atol * scale, rtol * rhs_norm), np.inf)
        if x0 is None:
            x, r = fnp.zeros_like(rhs), rhs
        else:
            x = x0 * marker
            r = rhs - op(x)

        def report(v: Any, when: Any = True) -> Any:  # SciPy's callback, on x or on the residual
            if reporter is not None:
                mark = fnp.reshape(fnp.where(when, marker, 0), (1,))
                debug_callback_p.bind(fnp.concatenate([fnp.ravel(v), mark]), callback=reporter)
            return v

        on_x, on_norm = (report, _no_report) if callback_type == "x" else (_no_report, report)
        x, info = iterations(op, m_matvec, rhs, x, r, bound, maxiter, on_x, report_norm=on_norm,
                             **options)
        x = fnp.where(rhs_norm > 0, x, 0)  # SciPy's x for b = 0, whatever x0
        info = fnp.where(rhs_norm > 0, info, 0)
        converged = info == 0
        if of_derivative:
            x = tangent_check_p.bind(x, converged, check=_derivative_unconverged(name))
        else:
            x = tangent_check_p.bind(x, converged | primal, check=_derivative_unconverged(name))
        return (x, marker), info

    def matvec(x_and_marker: tuple[Any, Any]) -> tuple[Any, Any]:
        x, marker = x_and_marker
        return a_matvec(x), marker

    def solve(op: Callable[[Any], Any], rhs_and_marker: tuple[Any, Any]) -> tuple[tuple[Any, Any], Any]:
        marker = rhs_and_marker[1]
        return run(lambda v: op((v, marker))[0], rhs_and_marker)

    marker = np.ones((), dtype)

    def linear_solve(transposing: bool) -> Any:
        if transposing:  # reverse mode solves with A's transpose, found by fgrad
            return custom_linear_solve(matvec, (b, marker), solve, transpose_solve=solve, has_aux=True)
        # cg: A, symmetric, is its own transpose; gmres, bicgstab: no reverse mode (custom_linear_solve
        # says so: a TypeError)
        return custom_linear_solve(matvec, (b, marker), solve, transpose_solve=solve if symmetric else None,
                                   symmetric=symmetric, has_aux=True)

    # cg too solves with A's transpose, so that its derivative is right where A is not quite
    # symmetric; but a SciPy operator may have none (no rmatvec), and cg takes it as its own.
    try:
        (x, _), info = linear_solve(transposing=not (symmetric and isinstance(A, _Operator)))
    except NotImplementedError:  # A's code has no transpose (a loop carrying a counter, say)
        (x, _), info = linear_solve(transposing=False)
    if not of_derivative:
        x = solution_p.bind(x, info == 0, check=_unconverged(name))
    known = None if isinstance(info, Tracer) and concrete(info) is None else concrete(info)
    return fnp.reshape(x, shape), (int(known) if known is not None else info)


# --- the solvers -------------------------------------------------------------------------------------


def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       M: Any = None, callback: Callable[[Any], Any] | None = None) -> tuple[Any, Any]:
    """scipy.sparse.linalg.cg: x with ``A @ x == b`` for a symmetric positive
    definite A, by (preconditioned) conjugate gradients; returns ``(x, info)``,
    info 0 when ``norm(b - A @ x) < max(rtol * norm(b), atol)``, else the
    number of iterations done (``maxiter``, by default ``10 * len(b)``).

    A and M are matrices, functions x -> A @ x written with fgrad.numpy (x
    then has b's shape, any shape), or SciPy sparse matrices or
    LinearOperators. x is differentiable in b and in what A closes over (a
    traced matrix, the parameters of the function), in both modes, to any
    order, under jit and vmap: A dx = db - dA x, solved by cg again.
    ``callback(xk)`` is called after each iteration (under vmap, for each
    example, as long as the batch iterates).

    >>> import fgrad
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> x, info = cg(A, np.array([1.0, 2.0]), rtol=1e-10)
    >>> x, info
    (array([0.09090909, 0.63636364]), 0)
    >>> fgrad.jacobian(lambda b: cg(A, b, rtol=1e-10)[0])(np.array([1.0, 2.0]))  # inv(A)
    array([[ 0.27272727, -0.09090909],
           [-0.09090909,  0.36363636]])
    """
    return _solve("fgrad.scipy.sparse.linalg.cg", _cg_iterations, A, b, x0, rtol, atol, maxiter, M, callback,
                  symmetric=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None,
             callback: Callable[[Any], Any] | None = None) -> tuple[Any, Any]:
    """scipy.sparse.linalg.bicgstab: x with ``A @ x == b`` for any square A, by
    the biconjugate gradient stabilised method; returns ``(x, info)``, info 0
    when converged, the number of iterations when not, -10 or -11 at a
    breakdown (SciPy's codes). A, M, the derivatives (reverse mode solves
    with A's transpose) and callback as in `cg`.

    >>> x, info = bicgstab(np.array([[3.0, 2.0], [1.0, -1.0]]), np.array([2.0, 4.0]), rtol=1e-10)
    >>> np.round(x, 10), info
    (array([ 2., -2.]), 0)
    """
    return _solve("fgrad.scipy.sparse.linalg.bicgstab", _bicgstab_iterations, A, b, x0, rtol, atol, maxiter,
                  M, callback, symmetric=False)


def gmres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
          restart: int | None = None, maxiter: int | None = None, M: Any = None,
          callback: Callable[[Any], Any] | None = None, callback_type: str | None = None) -> tuple[Any, Any]:
    """scipy.sparse.linalg.gmres: x with ``A @ x == b`` for any square A, by
    restarted GMRES (SciPy's: left preconditioning by M, restart cycles of
    ``min(restart, n)`` steps, 20 by default); returns ``(x, info)``, info 0
    when ``norm(b - A @ x) <= max(rtol * norm(b), atol)``, else the number of
    restart cycles done (``maxiter``, by default ``10 * len(b)``).

    A, M and the derivatives (reverse mode solves with A's transpose) as in
    `cg`. ``callback`` is called with the iterate after each cycle
    (``callback_type="x"``) or with the relative preconditioned residual
    after each inner step (``"pr_norm"``); SciPy's ``"legacy"``, which counts
    maxiter in inner steps, is not available.

    >>> x, info = gmres(np.array([[3.0, 2.0], [1.0, -1.0]]), np.array([2.0, 4.0]), rtol=1e-10)
    >>> np.round(x, 10), info
    (array([ 2., -2.]), 0)
    """
    name = "fgrad.scipy.sparse.linalg.gmres"
    if callback_type not in (None, "x", "pr_norm", "legacy"):
        raise ValueError(f"{name}: callback_type must be 'x' or 'pr_norm', not {callback_type!r}")
    if callback is not None and callback_type in (None, "legacy"):
        raise ValueError(f"{name}: give callback_type='x' (the iterate after each restart cycle) or "
                         "'pr_norm' (the preconditioned residual after each inner step) with a callback: "
                         "SciPy's default, 'legacy', counts maxiter in inner steps, which fgrad does not do")
    restart = 20 if restart is None else _positive_int(restart, name, "restart")
    return _solve(name, _gmres_iterations, A, b, x0, rtol, atol, maxiter, M, callback, symmetric=False,
                  restart=restart, callback_type=callback_type or "x")


# --- for fgrad's own tangent systems ------------------------------------------------------------------


def derivative_solver(symmetric: bool, rtol: float = 1e-14) -> Callable[[Matvec, Any], Any]:
    """`solve(g, y)`: x with g(x) = y for a linear g on arrays of y's shape, by cg
    (symmetric positive definite g) or gmres, for a system whose solution is a
    derivative (fgrad.scipy.optimize's tangent systems): it warns at once when
    the solve does not converge."""
    def solve(g: Matvec, y: Any) -> Any:
        if symmetric:
            return _solve("fgrad.scipy.sparse.linalg.cg", _cg_iterations, g, y, None, rtol, 0.0, None, None,
                          None, symmetric=True, of_derivative=True)[0]
        return _solve("fgrad.scipy.sparse.linalg.gmres", _gmres_iterations, g, y, None, rtol, 0.0, None, None,
                      None, symmetric=False, of_derivative=True, restart=50)[0]

    return solve

