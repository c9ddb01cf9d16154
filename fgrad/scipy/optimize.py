"""fgrad.scipy.optimize: SciPy's solvers (`root`, `fixed_point`, `minimize`,
`least_squares`) with SciPy's signatures and results, and solutions
differentiable in `args` by the implicit function theorem.

SciPy finds the solution, on concrete values; fgrad gives it the Jacobian,
gradient and Hessian-vector products of the user's function (written with
`fgrad.numpy`), and differentiates the solution from the equation it solves,
not from SciPy's steps, through `fgrad.lax.custom_root`:

* `root`: fun(x, *args) = 0; `fixed_point`: x - func(x, *args) = 0;
  `minimize`: grad fun(x, *args) = 0; `least_squares`: J(x)^T r(x) = 0.
* The tangent system (J dx = -dF/dargs dargs) is solved densely up to
  `DENSE_LIMIT` unknowns, else by conjugate gradients (`minimize`,
  `least_squares`, whose Jacobian is symmetric) or GMRES (`root`,
  `fixed_point`): fgrad.scipy.sparse.linalg's, which warn when they do not
  converge.
* SciPy runs inside one primitive, `scipy_solve`, whose implementation calls
  SciPy with callbacks running the user's staged functions: so the solvers
  work under `jit` (the call is one equation) and `vmap` (one SciPy call per
  example). It is never differentiated itself: what it closes over only
  finds the solution.
* A solver that did not converge (`success` False) gives a solution whose
  derivative is the derivative of nothing: the tangent passes through
  `scipy_solution_tangent`, which warns (RuntimeWarning) when it is computed.
  Bounds, constraints and robust losses change the optimality condition: a
  derivative there raises NotImplementedError.
* `adjoint="unrolled"` (fixed_point only) differentiates the iterations
  themselves, run by fgrad (`fgrad.lax.while_loop`), for comparison and for
  non-smooth maps; the other solvers' steps are SciPy's and not
  differentiable, and refuse it.

As the functions given to `fgrad.lax`, the user's functions are traced once
on abstract values (no Python `if` on x or args).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..api.transformations import grad, jvp, value_and_grad
from ..api.vectorize import jacfwd
from ..core.avals import ShapedArray, get_aval
from ..core.libraries import numpy_only
from ..core.optional import require
from ..core.rules import batch_rules, jvp_rules
from ..core.trace import Primitive, Tracer
from ..higher_order._common import concrete, split_counts
from ..ir.codegen import runner
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import closure_convert, trace_to_jaxpr
from ..lax import custom_root, while_loop
from ..primitives import batching
from ._solutions import Convergence, solution_p
from .sparse.linalg import derivative_solver

__all__ = ["root", "fixed_point", "minimize", "least_squares", "DENSE_LIMIT"]

DENSE_LIMIT = 200  # up to this many unknowns the tangent system is solved densely
_MESSAGE_BYTES = 256  # SciPy's message, carried through the primitive as bytes
_ADVICE = ("the functions given to fgrad.scipy.optimize are traced once on abstract values, as those given "
           "to fgrad.lax: use fgrad.numpy.where or fgrad.lax.cond instead of a Python `if` on x or args")


def _scipy_optimize() -> Any:
    return require("scipy.optimize", "scipy", "fgrad.scipy.optimize")


# --- the SciPy call: one primitive -----------------------------------------------------------


class _Solver:
    """A parameter of `scipy_solve_p`: `run(calls, x0) -> (x, OptimizeResult)`,
    printed by name in jaxprs (compared by identity)."""

    __slots__ = ("run", "name")

    def __init__(self, run: Callable[[list[Callable[..., list[Any]]], np.ndarray], tuple[Any, Any]],
                 name: str) -> None:
        self.run = run
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _caller(closed: ClosedJaxpr, consts: list[Any]) -> Callable[..., list[Any]]:
    run = runner(closed)
    return lambda *xs: run(*consts, *xs)


def _encode(message: Any) -> np.ndarray:
    data = str(message).encode()[:_MESSAGE_BYTES].ljust(_MESSAGE_BYTES, b"\0")
    return np.frombuffer(data, np.uint8).copy()


def _scipy_solve_impl(*operands: Any, solver: _Solver, functions: tuple[ClosedJaxpr, ...],
                      const_counts: tuple[int, ...], info: tuple[str, ...], why_not: str) -> list[Any]:
    parts = split_counts(operands, const_counts)
    calls = [_caller(fn, consts) for fn, consts in zip(functions, parts)]
    x0 = np.asarray(parts[-1][0])
    x, result = solver.run(calls, x0)
    return [np.asarray(x, x0.dtype).reshape(x0.shape), np.bool_(result.get("success", True)),
            *(np.int64(result.get(k, -1)) for k in info), _encode(result.get("message", ""))]


def _scipy_solve_aval(*avals: ShapedArray, solver: _Solver, functions: tuple[ClosedJaxpr, ...],
                      const_counts: tuple[int, ...], info: tuple[str, ...], why_not: str
                      ) -> list[ShapedArray]:
    x0 = split_counts(avals, const_counts)[-1][0]
    return [x0, ShapedArray((), np.dtype(bool)), *(ShapedArray((), np.dtype(np.int64)) for _ in info),
            ShapedArray((_MESSAGE_BYTES,), np.dtype(np.uint8))]


scipy_solve_p = Primitive(
    "scipy_solve", numpy_only("scipy_solve", _scipy_solve_impl), _scipy_solve_aval, multiple_results=True
)


def _scipy_solve_jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[list[Any], list[Any]]:
    # Reached only where the solution is not found through custom_root (bounds, constraints,
    # robust losses): its derivative would be a guess, so it is refused.
    if any(t is not None for t in tangents):
        raise NotImplementedError(params["why_not"])
    outs = scipy_solve_p.bind(*primals, **params)
    return outs, [None] * len(outs)


def _scipy_solve_batch(args: list[Any], dims: list[Any], **params: Any) -> tuple[list[Any], list[Any]]:
    # One SciPy call per example: SciPy's solvers take one problem at a time.
    size = batching.batch_size(args, dims)
    moved = [x if d is None else batching.move_axis(x, d, 0) for x, d in zip(args, dims)]
    rows = [scipy_solve_p.bind(*(x if d is None else x[i] for x, d in zip(moved, dims)), **params)
            for i in range(size)]
    return [fnp.stack([row[k] for row in rows]) for k in range(len(rows[0]))], [0] * len(rows[0])


jvp_rules[scipy_solve_p] = _scipy_solve_jvp
batch_rules[scipy_solve_p] = _scipy_solve_batch


# --- a solution that may not be one (fgrad/scipy/_solutions.py) --------------------------------


def _convergence(name: str) -> Convergence:
    return Convergence(f"fgrad.scipy.optimize.{name}", (
        "the solver did not converge (success is False), so its x is not a solution and the implicit "
        "function theorem gives the derivative of nothing: tighten the tolerance or raise the iteration "
        "limit (options=...), or check result.success before differentiating"))


# --- staging the user's functions -----------------------------------------------------------


def _aval(x: Any) -> ShapedArray:
    return get_aval(x).strip_weak_type()


def _staged(fn: Callable[..., Any], avals: Sequence[ShapedArray], name: str, fun_name: str
            ) -> tuple[ClosedJaxpr, list[Any]]:
    """`fn` (arrays in, an array or a tuple of them out) staged at `avals`, closure-converted."""

    def flat(*xs: Any) -> list[Any]:
        out = fn(*xs)
        return [fnp.asarray(y) for y in (out if isinstance(out, tuple) else (out,))]

    closed = trace_to_jaxpr(flat, list(avals), f"staging of {name}", fun_name=fun_name, advice=_ADVICE)
    return closure_convert(closed)


def _call_scipy(name: str, run: Callable[..., tuple[Any, Any]], functions: Sequence[tuple[Callable[..., Any],
                Sequence[ShapedArray]]], x0: Any, info: tuple[str, ...], fun_name: str,
                why_not: str = "") -> list[Any]:
    """SciPy's solve as one `scipy_solve` equation: x, success, the `info` fields, the message."""
    staged = [_staged(fn, avals, name, fun_name) for fn, avals in functions]
    consts = [c for _, cs in staged for c in cs]
    return scipy_solve_p.bind(*consts, x0, solver=_Solver(run, f"scipy.optimize.{name}"),
                              functions=tuple(j for j, _ in staged),
                              const_counts=tuple(len(cs) for _, cs in staged), info=info,
                              why_not=why_not or f"fgrad.scipy.optimize.{name} cannot be differentiated here")


def _known(x: Any) -> Any:
    return None if isinstance(x, Tracer) and concrete(x) is None else concrete(x)


def _result(scipy_result: type, fields: dict[str, Any], info: tuple[str, ...], outs: list[Any]) -> Any:
    """SciPy's OptimizeResult: `fields`, success, the `info` fields (Python numbers when they
    are known now, SciPy's -1 for one its method does not report dropped) and the message."""
    result = scipy_result(fields)
    success, *numbers, message = outs[1:]
    known = _known(success)
    result["success"] = bool(known) if known is not None else success
    for key, value in zip(info, numbers):
        v = _known(value)
        if v is None:
            result[key] = value
        elif int(v) != -1:
            result[key] = int(v)
    m = _known(message)
    if m is None:
        result["message"] = "(SciPy's message is known only where the call is not staged: outside jit)"
    else:
        result["message"] = bytes(np.asarray(m, np.uint8)).rstrip(b"\0").decode(errors="replace")
    return result


# --- the linear algebra of the tangent system --------------------------------------------------


def _dense_solve(g: Callable[[Any], Any], y: Any) -> Any:
    """g(x) = y for a linear g, by its matrix (found by forward mode), any shape of x."""
    shape = np.shape(y) if not isinstance(y, Tracer) else get_aval(y).shape
    matrix = jacfwd(lambda v: fnp.ravel(g(fnp.reshape(v, shape))))(fnp.ravel(y))
    return fnp.reshape(fnp.linalg.solve(matrix, fnp.ravel(y)), shape)


def _tangent_solve(size: int, symmetric: bool) -> Callable[[Callable[[Any], Any], Any], Any]:
    if size <= DENSE_LIMIT:
        return _dense_solve
    return derivative_solver(symmetric)


def _implicit(name: str, condition: Callable[[Any], Any], x0: Any, scipy_call: Callable[[Any], list[Any]],
              symmetric: bool) -> tuple[Any, list[Any]]:
    """The root of `condition` that `scipy_call` finds from x0, differentiated by the implicit
    function theorem (custom_root), its tangent checked for convergence; and the other outputs."""

    def solve(_: Any, guess: Any) -> tuple[Any, list[Any]]:
        outs = scipy_call(guess)
        return outs[0], outs[1:]

    size = int(np.prod(_aval(x0).shape))
    x, aux = custom_root(condition, x0, solve, _tangent_solve(size, symmetric), has_aux=True)
    return solution_p.bind(x, aux[0], check=_convergence(name)), [x, *aux]


# --- checks --------------------------------------------------------------------------------


def _float_vector(x0: Any, name: str, flat: bool) -> Any:
    if not isinstance(x0, Tracer):
        x0 = np.asarray(x0)
        if x0.dtype.kind not in "biuf":
            raise TypeError(f"fgrad.scipy.optimize.{name}: x0 must be an array of real numbers, but it has "
                            f"dtype {x0.dtype}")
    x = fnp.asarray(x0, np.float64 if flat or _aval(x0).dtype.kind != "f" else _aval(x0).dtype)
    return fnp.ravel(x) if flat else x


def _check_adjoint(name: str, adjoint: str, allowed: tuple[str, ...]) -> None:
    if adjoint not in allowed:
        extra = ("" if "unrolled" in allowed else "; 'unrolled' is not available here, since SciPy's steps "
                 "are not differentiable (fixed_point has it)")
        raise ValueError(f"fgrad.scipy.optimize.{name}: adjoint must be one of {allowed}, not "
                         f"{adjoint!r}{extra}")


def _check_shape(name: str, what: str, got: Sequence[ShapedArray], expected: tuple[int, ...]) -> None:
    shape = got[0].shape
    if shape != expected:
        raise ValueError(f"fgrad.scipy.optimize.{name}: {what} returned an array of shape {shape}, but it "
                         f"must have shape {expected} (the shape of x)")


def _out_avals(fn: Callable[..., Any], avals: Sequence[ShapedArray], name: str, fun_name: str
               ) -> list[ShapedArray]:
    return _staged(fn, avals, name, fun_name)[0].out_avals


def _args_tuple(args: Any) -> tuple[Any, ...]:
    return args if isinstance(args, tuple) else (args,)


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", "fun")


# --- root ------------------------------------------------------------------------------------

_ROOT_JAC_METHODS = frozenset({"hybr", "lm"})


def root(fun: Callable[..., Any], x0: Any, args: Any = (), method: str = "hybr", jac: Any = None,
         tol: float | None = None, callback: Callable[..., Any] | None = None,
         options: dict[str, Any] | None = None, adjoint: str = "implicit") -> Any:
    """scipy.optimize.root: x with fun(x, *args) = 0, found by SciPy, differentiable
    in `args` by the implicit function theorem.

    `fun` is written with fgrad.numpy and maps a 1-d x (x0 flattened, as SciPy
    does) to an array of its shape; fgrad gives SciPy its Jacobian (for
    "hybr" and "lm"; or `jac(x, *args)` if given). Returns SciPy's
    OptimizeResult (x, success, status, message, fun, nfev, ...); `result.x`
    and `result.fun` are differentiable in `args`.

    >>> import fgrad, fgrad.numpy as fnp
    >>> r = root(lambda x, a: x**3 - a, 1.0, args=(8.0,))
    >>> r.x, r.success
    (array([2.]), True)
    >>> float(fgrad.grad(lambda a: root(lambda x, a: x**3 - a, 1.0, args=(a,)).x[0])(8.0))  # 1/(3 a^(2/3))
    0.08333333333333333
    """
    _check_adjoint("root", adjoint, ("implicit",))
    so = _scipy_optimize()
    args = _args_tuple(args)
    x0 = _float_vector(x0, "root", flat=True)
    x_aval = _aval(x0)
    meth = method.lower() if isinstance(method, str) else method
    if jac is not None and not callable(jac):
        raise TypeError(f"fgrad.scipy.optimize.root: jac must be None (fgrad computes the Jacobian) or a "
                        f"function jac(x, *args), not {jac!r}")
    name = _name(fun)

    def value(x: Any) -> Any:
        return fun(x, *args)

    _check_shape("root", "fun", _out_avals(value, [x_aval], "root", name), x_aval.shape)
    uses_jac = meth in _ROOT_JAC_METHODS

    def value_and_jac(x: Any) -> Any:
        if not uses_jac:
            return value(x)
        return value(x), (jac(x, *args) if jac is not None else jacfwd(value)(x))

    def run(calls: list[Callable[..., list[Any]]], x: np.ndarray) -> tuple[Any, Any]:
        call = calls[0]
        f = (lambda v: tuple(call(v))) if uses_jac else (lambda v: call(v)[0])
        res = so.root(f, x, method=method, jac=uses_jac, tol=tol, callback=callback, options=options)
        return res.x, res

    info = ("status", "nfev", "njev", "nit")
    outs = _implicit("root", value, x0,
                     lambda guess: _call_scipy("root", run, [(value_and_jac, [x_aval])], guess, info, name),
                     symmetric=False)
    x, raw = outs
    return _result(so.OptimizeResult, {"x": x, "fun": value(x)}, info, raw)


# --- fixed_point -------------------------------------------------------------------------------


def _fixed_point_iterations(func: Callable[..., Any], x0: Any, args: tuple[Any, ...], xtol: float,
                            maxiter: int, use_accel: bool) -> tuple[Any, Any]:
    """SciPy's iteration (with Steffensen's del2 acceleration), on fgrad.lax.while_loop:
    the point and whether it converged."""

    def step(c: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        p0, i, _ = c
        p1 = func(p0, *args)
        if use_accel:
            p2 = func(p1, *args)
            d = p2 - 2.0 * p1 + p0
            nonzero = d != 0
            p = fnp.where(nonzero, p0 - (p1 - p0) ** 2 / fnp.where(nonzero, d, 1.0), p2)
        else:
            p = p1
        relerr = fnp.where(p0 != 0, (p - p0) / fnp.where(p0 != 0, p0, 1.0), p)
        return p, i + 1, fnp.all(fnp.abs(relerr) < xtol)

    def go_on(c: tuple[Any, Any, Any]) -> Any:
        return (~c[2]) & (c[1] < maxiter)

    p, _, done = while_loop(go_on, step, (x0, 0, fnp.asarray(False)))
    return p, done


def fixed_point(func: Callable[..., Any], x0: Any, args: Any = (), xtol: float = 1e-8, maxiter: int = 500,
                method: str = "del2", adjoint: str = "implicit") -> Any:
    """scipy.optimize.fixed_point: x with func(x, *args) = x, differentiable in `args`.

    `method` is "del2" (Steffensen's acceleration) or "iteration", as SciPy's;
    x keeps x0's shape. With `adjoint="implicit"` (the default) SciPy iterates
    and the derivative comes from x - func(x, *args) = 0 (memory independent
    of the number of iterations); with `adjoint="unrolled"` fgrad runs SciPy's
    iteration itself on fgrad.lax.while_loop and differentiates its steps. A
    point that did not converge raises RuntimeError, as SciPy's does (under
    jit, where the unrolled iteration cannot raise, its derivative warns).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(1.0,))
    array(0.73908513)
    >>> g = fgrad.grad(lambda a: fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(a,)))(1.0)
    >>> bool(abs(g + 0.297474) < 1e-6)  # -x sin(x) / (1 + sin(x)) at x = cos(x)
    True
    """
    _check_adjoint("fixed_point", adjoint, ("implicit", "unrolled"))
    if method not in ("del2", "iteration"):
        raise ValueError("fgrad.scipy.optimize.fixed_point: method must be 'del2' or 'iteration', not "
                         f"{method!r}")
    args = _args_tuple(args)
    x0 = _float_vector(x0, "fixed_point", flat=False)
    x_aval = _aval(x0)
    name = _name(func)

    def value(x: Any) -> Any:
        return fnp.asarray(func(x, *args)).astype(x_aval.dtype)

    _check_shape("fixed_point", "func", _out_avals(value, [x_aval], "fixed_point", name), x_aval.shape)
    if adjoint == "unrolled":
        x, done = _fixed_point_iterations(lambda x: value(x), x0, (), xtol, maxiter, method == "del2")
        known = _known(done)
        if known is not None and not known:
            raise RuntimeError(f"Failed to converge after {maxiter} iterations, value is {_known(x)}")
        return solution_p.bind(x, done, check=_convergence("fixed_point"))
    so = _scipy_optimize()

    def run(calls: list[Callable[..., list[Any]]], x: np.ndarray) -> tuple[Any, Any]:
        call = calls[0]
        p = so.fixed_point(lambda v: call(np.asarray(v, x.dtype).reshape(x.shape))[0], x, xtol=xtol,
                           maxiter=maxiter, method=method)
        return p, {"success": True}

    return _implicit("fixed_point", lambda x: x - value(x), x0,
                     lambda guess: _call_scipy("fixed_point", run, [(value, [x_aval])], guess, (), name),
                     symmetric=False)[0]


# --- minimize ----------------------------------------------------------------------------------

_GRADIENT_METHODS = frozenset({"cg", "bfgs", "newton-cg", "l-bfgs-b", "tnc", "slsqp", "dogleg", "trust-ncg",
                               "trust-krylov", "trust-exact", "trust-constr"})
_HESSP_METHODS = frozenset({"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"})
_HESS_METHODS = frozenset({"dogleg", "trust-exact"})


def minimize(fun: Callable[..., Any], x0: Any, args: Any = (), method: str | None = None, jac: Any = None,
             hess: Any = None, hessp: Any = None, bounds: Any = None, constraints: Any = (),
             tol: float | None = None, callback: Callable[..., Any] | None = None,
             options: dict[str, Any] | None = None, adjoint: str = "implicit") -> Any:
    """scipy.optimize.minimize: the minimiser x of fun(x, *args), found by SciPy,
    differentiable in `args` by the implicit function theorem on grad fun = 0.

    `fun` is written with fgrad.numpy and maps a 1-d x to a scalar; fgrad gives
    SciPy its gradient, and its Hessian-vector products (Newton-CG, trust-ncg,
    trust-krylov, trust-constr) or Hessian (dogleg, trust-exact), unless
    `jac`, `hess`, `hessp` (functions of (x, *args)) are given. Returns
    SciPy's OptimizeResult; `result.x`, `result.fun` and `result.jac` are
    differentiable in `args`. With `bounds` or `constraints` the solution is
    SciPy's, but its derivative raises NotImplementedError.

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x, c: fnp.sum((x - c) ** 2)
    >>> minimize(f, fnp.zeros(2), args=(fnp.array([1.0, 2.0]),), method="BFGS").x
    array([1., 2.])
    >>> fgrad.jacobian(lambda c: minimize(f, fnp.zeros(2), args=(c,), method="BFGS").x)(fnp.ones(2)) + 0.0
    array([[1., 0.],
           [0., 1.]])
    """
    _check_adjoint("minimize", adjoint, ("implicit",))
    so = _scipy_optimize()
    args = _args_tuple(args)
    x0 = _float_vector(x0, "minimize", flat=True)
    x_aval = _aval(x0)
    meth = method.lower() if isinstance(method, str) else None
    for what, given in (("jac", jac), ("hess", hess), ("hessp", hessp)):
        if given is not None and not callable(given):
            raise TypeError(f"fgrad.scipy.optimize.minimize: {what} must be None (fgrad computes it) or a "
                            f"function {what}(x, *args), not {given!r}")
    name = _name(fun)

    def value(x: Any) -> Any:
        return fun(x, *args)

    shape = _out_avals(value, [x_aval], "minimize", name)[0].shape
    if shape != ():
        raise ValueError(f"fgrad.scipy.optimize.minimize: fun must return a scalar, but it returned an array "
                         f"of shape {shape}")
    gradient = grad(value)

    def value_and_gradient(x: Any) -> Any:
        if jac is not None:
            return value(x), jac(x, *args)
        return value_and_grad(value)(x)

    def hessian_vector(x: Any, p: Any) -> Any:
        return hessp(x, p, *args) if hessp is not None else jvp(gradient, (x,), (p,))[1]

    def hessian(x: Any) -> Any:
        return hess(x, *args) if hess is not None else jacfwd(gradient)(x)

    uses_gradient = meth is None or meth in _GRADIENT_METHODS
    functions: list[tuple[Callable[..., Any], list[ShapedArray]]] = [
        (value_and_gradient if uses_gradient else value, [x_aval])]
    if meth in _HESSP_METHODS:
        functions.append((hessian_vector, [x_aval, x_aval]))
    elif meth in _HESS_METHODS:
        functions.append((hessian, [x_aval]))

    def run(calls: list[Callable[..., list[Any]]], x: np.ndarray) -> tuple[Any, Any]:
        first = calls[0]
        extra: dict[str, Any] = {}
        if meth in _HESSP_METHODS:
            extra["hessp"] = lambda v, p: calls[1](v, np.asarray(p, np.float64))[0]
        elif meth in _HESS_METHODS:
            extra["hess"] = lambda v: calls[1](v)[0]
        f: Callable[[Any], Any] = ((lambda v: _pair(first(v))) if uses_gradient
                                   else (lambda v: float(first(v)[0])))
        res = so.minimize(f, x, method=method, jac=uses_gradient, bounds=bounds, constraints=constraints,
                          tol=tol, callback=callback, options=options, **extra)
        return res.x, res

    info = ("status", "nit", "nfev", "njev", "nhev")
    constrained = bounds is not None or (constraints is not None and len(constraints) > 0)
    if constrained:
        why = ("fgrad.scipy.optimize.minimize: the derivative of a solution with bounds or constraints is "
               "not implemented (the optimality condition grad fun = 0 does not hold on a bound or a "
               "constraint); differentiate an unconstrained problem (a penalty, a change of variables), "
               "or pass args through fgrad.stop_gradient")
        raw = _call_scipy("minimize", run, functions, x0, info, name, why)
        x = raw[0]
    else:
        x, raw = _implicit("minimize", gradient, x0,
                           lambda guess: _call_scipy("minimize", run, functions, guess, info, name),
                           symmetric=True)
    return _result(so.OptimizeResult, {"x": x, "fun": value(x), "jac": gradient(x)}, info, raw)


def _pair(outs: list[Any]) -> tuple[float, Any]:
    return float(outs[0]), outs[1]


# --- least_squares -----------------------------------------------------------------------------


def least_squares(fun: Callable[..., Any], x0: Any, jac: Any = "2-point", bounds: Any = (-np.inf, np.inf),
                  method: str = "trf", ftol: float | None = 1e-8, xtol: float | None = 1e-8,
                  gtol: float | None = 1e-8, x_scale: Any = 1.0, loss: str = "linear", f_scale: float = 1.0,
                  diff_step: Any = None, tr_solver: str | None = None,
                  tr_options: dict[str, Any] | None = None, jac_sparsity: Any = None,
                  max_nfev: int | None = None, verbose: int = 0, args: Any = (),
                  kwargs: dict[str, Any] | None = None, adjoint: str = "implicit") -> Any:
    """scipy.optimize.least_squares: the x minimising 0.5 sum(fun(x, *args)**2),
    found by SciPy, differentiable in `args` (and `kwargs`) by the implicit
    function theorem on J(x)^T fun(x) = 0.

    fgrad gives SciPy the Jacobian of the residuals (a `jac` that is a
    string, SciPy's finite-difference schemes, is replaced by it; a function
    jac(x, *args, **kwargs) is used as given). Returns SciPy's
    OptimizeResult (x, cost, fun, jac, grad, optimality, status, ...); x,
    cost, fun, jac and grad are differentiable. With bounds or a loss other
    than "linear" the derivative raises NotImplementedError.

    >>> import fgrad, fgrad.numpy as fnp
    >>> t = fnp.array([0.0, 1.0, 2.0])
    >>> r = least_squares(lambda x, y: x[0] + x[1] * t - y, fnp.zeros(2), args=(fnp.array([1.0, 3.0, 5.0]),))
    >>> fnp.round(r.x, 8)
    array([1., 2.])
    """
    _check_adjoint("least_squares", adjoint, ("implicit",))
    so = _scipy_optimize()
    args = _args_tuple(args)
    kw = {} if kwargs is None else dict(kwargs)
    x0 = _float_vector(x0, "least_squares", flat=True)
    x_aval = _aval(x0)
    name = _name(fun)

    def residuals(x: Any) -> Any:
        return fnp.atleast_1d(fun(x, *args, **kw))

    r_shape = _out_avals(residuals, [x_aval], "least_squares", name)[0].shape
    if len(r_shape) != 1:
        raise ValueError("fgrad.scipy.optimize.least_squares: fun must return a 1-d array of residuals, but "
                         f"it returned one of shape {r_shape}")

    def jacobian(x: Any) -> Any:
        return jac(x, *args, **kw) if callable(jac) else jacfwd(residuals)(x)

    def cost_gradient(x: Any) -> Any:
        return grad(lambda v: 0.5 * fnp.sum(residuals(v) ** 2))(x)

    def run(calls: list[Callable[..., list[Any]]], x: np.ndarray) -> tuple[Any, Any]:
        res = so.least_squares(lambda v: calls[0](v)[0], x, jac=lambda v: calls[1](v)[0], bounds=bounds,
                               method=method, ftol=ftol, xtol=xtol, gtol=gtol, x_scale=x_scale, loss=loss,
                               f_scale=f_scale, diff_step=diff_step, tr_solver=tr_solver,
                               tr_options={} if tr_options is None else tr_options, jac_sparsity=jac_sparsity,
                               max_nfev=max_nfev, verbose=verbose)
        return res.x, res

    functions = [(residuals, [x_aval]), (jacobian, [x_aval])]
    info = ("status", "nfev", "njev")
    lower, upper = (np.asarray(b, np.float64) for b in bounds) if not isinstance(bounds, so.Bounds) else (
        np.asarray(bounds.lb, np.float64), np.asarray(bounds.ub, np.float64))
    if np.any(np.isfinite(lower)) or np.any(np.isfinite(upper)) or loss != "linear":
        why = ("fgrad.scipy.optimize.least_squares: the derivative of a solution with bounds or a robust "
               f"loss (loss={loss!r}) is not implemented (its optimality condition is not J^T r = 0); use "
               "loss='linear' without bounds to differentiate, or pass args through fgrad.stop_gradient")
        raw = _call_scipy("least_squares", run, functions, x0, info, name, why)
        x = raw[0]
    else:
        x, raw = _implicit("least_squares", cost_gradient, x0,
                           lambda guess: _call_scipy("least_squares", run, functions, guess, info, name),
                           symmetric=True)
    r = residuals(x)
    g = cost_gradient(x)
    fields = {"x": x, "cost": 0.5 * fnp.sum(r ** 2), "fun": r, "jac": jacobian(x), "grad": g,
              "optimality": fnp.max(fnp.abs(g)), "active_mask": np.zeros(x_aval.shape, np.int64)}
    return _result(so.OptimizeResult, fields, info, raw)
