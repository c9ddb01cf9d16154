"""fgrad.scipy.optimize: SciPy's solutions, differentiated in their args by the implicit
function theorem, against closed forms and finite differences, in grad, jvp and hessian,
eagerly, under jit and under vmap; the unrolled adjoint of fixed_point; memory that does
not grow with the iterations; the warning at a non-solution; and the errors."""

import contextlib
import tracemalloc
import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

pytest.importorskip("scipy")

from fgrad.scipy import optimize  # noqa: E402

# Rule tests of the primitives: the derivatives below go through scipy_solution and
# scipy_solution_tangent (jvp, transpose, batch), scipy_solve runs eagerly, under jit and vmap,
# and refuses a derivative (test_bounds_...).
PRIMITIVES = {"scipy_solve", "scipy_solution", "scipy_solution_tangent"}

EAGER_AND_JIT = pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit], ids=["eager", "jit"])


@contextlib.contextmanager
def strict():
    """A context in which any warning (a non-converged derivative) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --- the fixed point x = cos(a x) ---------------------------------------------------------------


def cos_fixed_point(a, **kw):
    return optimize.fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(a,), xtol=1e-14, **kw)


def closed_form(a):
    """x = cos(a x) by bisection, and (implicit differentiation, with s = sin(a x))
    x' = -x s / (1 + a s) and its derivative."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid - np.cos(a * mid) < 0 else (lo, mid)
    x = (lo + hi) / 2
    s = np.sin(a * x)
    d1 = -x * s / (1 + a * s)
    ds = x * (x + a * d1)
    d2 = -((d1 * s + x * ds) * (1 + a * s) - x * s * (s + a * ds)) / (1 + a * s) ** 2
    return x, d1, d2


def test_the_closed_form_matches_finite_differences():
    eps = 1e-5
    for a in (0.7, 1.1):
        np.testing.assert_allclose((closed_form(a + eps)[0] - closed_form(a - eps)[0]) / (2 * eps),
                                   closed_form(a)[1], rtol=1e-8)
        np.testing.assert_allclose((closed_form(a + eps)[1] - closed_form(a - eps)[1]) / (2 * eps),
                                   closed_form(a)[2], rtol=1e-7)


@EAGER_AND_JIT
@pytest.mark.parametrize("adjoint", ["implicit", "unrolled"])
def test_fixed_point_derivatives(wrap, adjoint):
    f = lambda a: cos_fixed_point(a, adjoint=adjoint)  # noqa: E731
    with strict():
        for a in (0.7, 1.1):
            x, d1, d2 = closed_form(a)
            np.testing.assert_allclose(wrap(f)(a), x, rtol=1e-13)
            np.testing.assert_allclose(wrap(fgrad.grad(f))(a), d1, rtol=1e-8)
            np.testing.assert_allclose(wrap(lambda a: fgrad.jvp(f, (a,), (1.0,)))(a), (x, d1), rtol=1e-8)
            np.testing.assert_allclose(wrap(fgrad.hessian(f))(a), d2, rtol=1e-8)
        grads = wrap(fgrad.vmap(fgrad.grad(f)))(np.array([0.7, 1.1]))
    np.testing.assert_allclose(grads, [closed_form(0.7)[1], closed_form(1.1)[1]], rtol=1e-8)


def test_fixed_point_of_a_vector_with_a_pytree_of_args():
    # SciPy's own example: x = sqrt(c1 / (x + c2)), elementwise; x^2 (x + c2) = c1.
    c1, c2 = np.array([10.0, 12.0]), np.array([3.0, 5.0])

    def x_of(c):
        return optimize.fixed_point(lambda x, c: fnp.sqrt(c["c1"] / (x + c["c2"])), [1.2, 1.3], args=(c,),
                                    xtol=1e-14)

    x = x_of({"c1": c1, "c2": c2})
    np.testing.assert_allclose(x ** 2 * (x + c2), c1, rtol=1e-13)
    g = fgrad.grad(lambda c: fnp.sum(x_of(c)))({"c1": c1, "c2": c2})
    # d/dc1 of x^3 + c2 x^2 = c1: (3x^2 + 2 c2 x) x' = 1; in c2: x' = -x^2 / (3x^2 + 2 c2 x)
    np.testing.assert_allclose(g["c1"], 1 / (3 * x ** 2 + 2 * c2 * x), rtol=1e-8)
    np.testing.assert_allclose(g["c2"], -x ** 2 / (3 * x ** 2 + 2 * c2 * x), rtol=1e-8)


def test_the_memory_of_grad_through_a_fixed_point_does_not_grow_with_the_iterations():
    # x <- x - q (x - cos(a x)): the fixed point of cos(a x), reached in a few dozen steps for
    # q = 0.9 and in over 10,000 for q = 0.001 (method "iteration": no acceleration).
    import scipy.optimize

    def steps(q):
        count = []

        def g(x):
            count.append(None)
            return x - q * (x - np.cos(0.7 * x))

        scipy.optimize.fixed_point(g, 0.5, xtol=1e-13, maxiter=40_000, method="iteration")
        return len(count)

    def peak(q):
        def solution(a):
            return optimize.fixed_point(lambda x, a: x - q * (x - fnp.cos(a * x)), 0.5, args=(a,), xtol=1e-13,
                                        maxiter=40_000, method="iteration")

        fgrad.grad(solution)(0.7)  # warm up
        tracemalloc.start()
        g = fgrad.grad(solution)(0.7)
        size = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        np.testing.assert_allclose(g, closed_form(0.7)[1], rtol=1e-8)
        return size

    assert steps(0.9) < 50 and steps(0.001) > 10_000
    few, many = peak(0.9), peak(0.001)
    assert many < 1.2 * few + 20_000, (few, many)


def test_the_unrolled_adjoint_raises_like_scipy_when_it_does_not_converge():
    with pytest.raises(RuntimeError, match="Failed to converge after 3 iterations"):
        optimize.fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(1.0,), maxiter=3, adjoint="unrolled")
    with pytest.raises(RuntimeError, match="Failed to converge after 3 iterations"):
        optimize.fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(1.0,), maxiter=3)


# --- the root of a 3-equation system -------------------------------------------------------------

MIX = np.array([[2.0, 0.5, -0.3], [0.4, 1.5, 0.2], [-0.1, 0.3, 1.8]])  # couples the equations


def residual(x, theta):
    # Triangular in disguise: x0^3 = t0, x1 e^x0 = t1, x2 + x1^2 = t2, mixed by MIX.
    r = fnp.stack([x[0] ** 3 - theta[0], x[1] * fnp.exp(x[0]) - theta[1], x[2] + x[1] ** 2 - theta[2]])
    return MIX @ r


def root_closed_form(theta):
    x0 = np.cbrt(theta[0])
    x1 = theta[1] * np.exp(-x0)
    return np.array([x0, x1, theta[2] - x1 ** 2])


WEIGHTS = np.array([1.0, -2.0, 0.5])


def root_loss_closed_form(theta):
    return np.sum(np.sin(root_closed_form(theta)) * WEIGHTS)


def fd_gradient(f, x, h=1e-3):
    """Fourth-order central differences."""
    out = []
    for e in np.eye(len(x)) * h:
        out.append((-f(x + 2 * e) + 8 * f(x + e) - 8 * f(x - e) + f(x - 2 * e)) / (12 * h))
    return np.array(out)


def fd_hessian(f, x, h=2e-3):
    return fd_gradient(lambda y: fd_gradient(f, y, h), x, h)


THETA = np.array([1.7, 0.8, 0.6])


@EAGER_AND_JIT
@pytest.mark.parametrize("method", ["hybr", "lm"])
def test_root_derivatives(wrap, method):
    tol = {"hybr": {"xtol": 1e-14}, "lm": {"xtol": 1e-15, "ftol": 1e-15}}[method]

    def x_of(theta):
        return optimize.root(residual, [1.0, 0.5, 0.5], args=(theta,), method=method, options=tol).x

    loss = lambda theta: fnp.sum(fnp.sin(x_of(theta)) * WEIGHTS)  # noqa: E731
    with strict():
        np.testing.assert_allclose(wrap(x_of)(THETA), root_closed_form(THETA), rtol=1e-13)
        np.testing.assert_allclose(wrap(fgrad.grad(loss))(THETA), fd_gradient(root_loss_closed_form, THETA),
                                   rtol=1e-8)
        jac = fd_gradient(root_closed_form, THETA).T
        np.testing.assert_allclose(wrap(fgrad.jacfwd(x_of))(THETA), jac, rtol=1e-8, atol=1e-12)
        v = np.array([0.3, -1.0, 0.7])
        np.testing.assert_allclose(wrap(lambda t: fgrad.jvp(x_of, (t,), (v,))[1])(THETA), jac @ v, rtol=1e-8)
        np.testing.assert_allclose(wrap(fgrad.hessian(loss))(THETA), fd_hessian(root_loss_closed_form, THETA),
                                   rtol=1e-8, atol=1e-10)


def test_root_result_is_scipys():
    result = optimize.root(residual, [1.0, 0.5, 0.5], args=(THETA,))
    assert result.success is True and result.status == 1 and result.nfev > 0
    assert "converged" in result.message
    np.testing.assert_allclose(result.fun, 0.0, atol=1e-10)


# --- the argmin of a ridge problem, in its penalty ---------------------------------------------------

RNG = np.random.default_rng(0)
A, B = RNG.normal(size=(8, 4)), RNG.normal(size=8)


def ridge(x, lam):
    return 0.5 * fnp.sum((A @ x - B) ** 2) + 0.5 * lam * fnp.sum(x ** 2)


def ridge_closed_form(lam):
    """x = (A^T A + lam I)^-1 A^T b; x' = -M^-1 x; x'' = -2 M^-1 x'."""
    m = A.T @ A + lam * np.eye(4)
    x = np.linalg.solve(m, A.T @ B)
    d1 = -np.linalg.solve(m, x)
    return x, d1, -2 * np.linalg.solve(m, d1)


METHODS = {"BFGS": {"tol": 1e-13}, "L-BFGS-B": {"options": {"gtol": 1e-13, "ftol": 0.0}},
           "Newton-CG": {"tol": 1e-13}, "trust-constr": {"options": {"gtol": 1e-13, "xtol": 1e-14}}}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_ridge_argmin_derivatives_in_the_penalty(method):
    def x_of(lam):
        return optimize.minimize(ridge, fnp.zeros(4), args=(lam,), method=method, **METHODS[method]).x

    x, d1, d2 = ridge_closed_form(0.3)
    rtol = 1e-8
    with strict():
        np.testing.assert_allclose(x_of(0.3), x, rtol=rtol)
        np.testing.assert_allclose(fgrad.jacfwd(x_of)(0.3), d1, rtol=rtol)
        np.testing.assert_allclose(fgrad.jacrev(x_of)(0.3), d1, rtol=rtol)
        np.testing.assert_allclose(fgrad.jvp(x_of, (0.3,), (1.0,))[1], d1, rtol=rtol)
        np.testing.assert_allclose(fgrad.hessian(x_of)(0.3), d2, rtol=rtol)
        np.testing.assert_allclose(fgrad.grad(lambda lam: fnp.sum(x_of(lam) * WEIGHTS[0]))(0.3),
                                   np.sum(d1), rtol=rtol)


@pytest.mark.parametrize("method", ["BFGS", "Newton-CG"])
def test_ridge_under_jit_and_vmap(method):
    def x_of(lam):
        return optimize.minimize(ridge, fnp.zeros(4), args=(lam,), method=method, **METHODS[method]).x

    lams = np.array([0.1, 0.3, 2.0])
    with strict():
        np.testing.assert_allclose(fgrad.jit(fgrad.jacrev(x_of))(0.3), ridge_closed_form(0.3)[1], rtol=1e-8)
        np.testing.assert_allclose(fgrad.jit(fgrad.hessian(x_of))(0.3), ridge_closed_form(0.3)[2], rtol=1e-8)
        np.testing.assert_allclose(fgrad.jit(lambda t: fgrad.jvp(x_of, (t,), (1.0,))[1])(0.3),
                                   ridge_closed_form(0.3)[1], rtol=1e-8)
        batched = fgrad.vmap(fgrad.jacfwd(x_of))(lams)
    np.testing.assert_allclose(batched, [ridge_closed_form(v)[1] for v in lams], rtol=1e-8)


def test_minimize_result_fields_are_scipys_and_differentiable():
    result = optimize.minimize(ridge, np.zeros(4), args=(0.3,), method="BFGS", tol=1e-13)
    assert result.success is True and result.status == 0 and result.nit > 0 and result.nfev > 0
    assert "successfully" in result.message
    x = ridge_closed_form(0.3)[0]
    np.testing.assert_allclose(result.fun, 0.5 * np.sum((A @ x - B) ** 2) + 0.15 * np.sum(x ** 2), rtol=1e-13)
    # d/dlam of the minimum value is the partial derivative, 0.5 |x|^2 (the envelope theorem)
    value = fgrad.grad(lambda lam: optimize.minimize(ridge, np.zeros(4), args=(lam,), method="BFGS",
                                                     tol=1e-13).fun)(0.3)
    np.testing.assert_allclose(value, 0.5 * np.sum(x ** 2), rtol=1e-10)


def test_the_iterative_tangent_solvers_match_the_dense_one(monkeypatch):
    monkeypatch.setattr(optimize, "DENSE_LIMIT", 0)  # CG for minimize, GMRES for root and fixed_point
    x_of = lambda lam: optimize.minimize(ridge, fnp.zeros(4), args=(lam,), method="Newton-CG", tol=1e-13).x  # noqa: E731
    with strict():
        np.testing.assert_allclose(fgrad.jacrev(x_of)(0.3), ridge_closed_form(0.3)[1], rtol=1e-8)
        np.testing.assert_allclose(fgrad.jacfwd(x_of)(0.3), ridge_closed_form(0.3)[1], rtol=1e-8)

        def r_of(theta):
            return optimize.root(residual, [1.0, 0.5, 0.5], args=(theta,), options={"xtol": 1e-14}).x

        jac = fd_gradient(root_closed_form, THETA).T
        np.testing.assert_allclose(fgrad.jacrev(r_of)(THETA), jac, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(fgrad.jacfwd(r_of)(THETA), jac, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(fgrad.grad(cos_fixed_point)(0.7), closed_form(0.7)[1], rtol=1e-8)


# --- least squares -----------------------------------------------------------------------------------


def test_least_squares_derivatives():
    t = np.linspace(0.0, 1.0, 6)

    def residuals(x, y):
        return x[0] + x[1] * t - y

    def x_of(y):
        return optimize.least_squares(residuals, np.zeros(2), args=(y,), ftol=1e-15, xtol=1e-15, gtol=1e-15).x

    y = np.sin(3 * t)
    design = np.stack([np.ones_like(t), t], axis=1)
    pinv = np.linalg.solve(design.T @ design, design.T)
    with strict():
        np.testing.assert_allclose(x_of(y), pinv @ y, rtol=1e-12)
        np.testing.assert_allclose(fgrad.jacrev(x_of)(y), pinv, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(fgrad.jit(fgrad.jacfwd(x_of))(y), pinv, rtol=1e-8, atol=1e-12)

    # Nonlinear: a * exp(-k t) fitted to data; the derivative in the data by finite differences
    # of a NumPy fit polished by Newton's method on the normal equations.
    def fit(data):
        return optimize.least_squares(lambda x, d: x[0] * fnp.exp(-x[1] * t) - d, np.array([1.0, 1.0]),
                                      args=(data,), ftol=1e-15, xtol=1e-15, gtol=1e-15).x

    def numpy_fit(data):
        x = np.array([2.0, 1.3])
        for _ in range(30):
            e = np.exp(-x[1] * t)
            r, jac = x[0] * e - data, np.stack([e, -x[0] * t * e], axis=1)
            second = np.array([[0.0, -np.sum(r * t * e)], [-np.sum(r * t * e), np.sum(r * x[0] * t ** 2 * e)]])
            x = x - np.linalg.solve(jac.T @ jac + second, jac.T @ r)
        return x

    data = 2.0 * np.exp(-1.3 * t) + 0.05 * np.cos(7 * t)
    np.testing.assert_allclose(fit(data), numpy_fit(data), rtol=1e-9)
    with strict():
        jac = fgrad.jacrev(fit)(data)
    np.testing.assert_allclose(jac, fd_gradient(numpy_fit, data).T, rtol=1e-8, atol=1e-10)
    result = optimize.least_squares(lambda x, d: x[0] * fnp.exp(-x[1] * t) - d, np.array([1.0, 1.0]), args=(data,))
    assert result.success and result.cost >= 0 and np.shape(result.jac) == (6, 2)


# --- non-convergence and errors ----------------------------------------------------------------------


def test_a_derivative_at_a_non_solution_warns():
    def x_of(lam):
        return optimize.minimize(ridge, fnp.zeros(4), args=(lam,), method="BFGS", options={"maxiter": 1}).x

    assert not optimize.minimize(ridge, fnp.zeros(4), args=(0.3,), method="BFGS", options={"maxiter": 1}).success
    with strict():
        x_of(0.3)  # the value alone: no warning, as SciPy's (success says it)
    for transform in (fgrad.jacrev, fgrad.jacfwd, lambda f: fgrad.jit(fgrad.jacrev(f))):
        with pytest.warns(RuntimeWarning, match="did not converge"):
            transform(x_of)(0.3)


def test_bounds_constraints_and_robust_losses_refuse_a_derivative():
    def bounded(lam):
        return optimize.minimize(ridge, fnp.zeros(4), args=(lam,), method="L-BFGS-B", bounds=[(0, 1)] * 4).x

    assert np.all(bounded(0.3) >= 0)  # the solution itself is SciPy's
    with pytest.raises(NotImplementedError, match="bounds or constraints"):
        fgrad.grad(lambda lam: fnp.sum(bounded(lam)))(0.3)
    with pytest.raises(NotImplementedError, match="robust loss"):
        fgrad.grad(lambda y: fnp.sum(optimize.least_squares(lambda x, y: x - y, np.zeros(2), args=(y,),
                                                            loss="soft_l1").x))(np.ones(2))


def test_errors():
    with pytest.raises(ValueError, match="must return a scalar.*shape \\(4,\\)"):
        optimize.minimize(lambda x: x, np.zeros(4))
    with pytest.raises(ValueError, match="'unrolled' is not available"):
        optimize.minimize(ridge, np.zeros(4), args=(0.3,), adjoint="unrolled")
    with pytest.raises(ValueError, match="adjoint must be one of"):
        optimize.fixed_point(lambda x: x, 0.5, adjoint="backward")
    with pytest.raises(ValueError, match="fun returned an array of shape \\(2,\\).*shape \\(3,\\)"):
        optimize.root(lambda x: x[:2], np.zeros(3))
    with pytest.raises(ValueError, match="method must be 'del2' or 'iteration'"):
        optimize.fixed_point(lambda x: x, 0.5, method="newton")
    with pytest.raises(TypeError, match="x0 must be an array of real numbers.*complex"):
        optimize.root(lambda x: x, np.zeros(2, complex))
    with pytest.raises(TypeError, match="jac must be None"):
        optimize.minimize(ridge, np.zeros(4), args=(0.3,), jac=True)


# vmap == a Python loop over examples (tests/transforms/test_batching.py): label -> (f, example shapes, domain)
BATCH_CASES = {
    "scipy_solve": (lambda a: cos_fixed_point(a), [()], "positive"),
    "scipy_solution": (lambda a: fgrad.grad(cos_fixed_point)(a), [()], "positive"),
    "scipy_solution_tangent": (lambda a: fgrad.jvp(cos_fixed_point, (a,), (a * 0.5,))[1], [()], "positive"),
}
