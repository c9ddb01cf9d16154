"""fgrad.scipy.sparse.linalg: cg, gmres and bicgstab against numpy.linalg.solve and SciPy's
solvers (x, info, the iterates the callback sees); derivatives in b and in the parameters A
closes over against the closed form dx = A^-1 (db - dA x) and finite differences, in both modes
and to second order, eagerly, under jit and under vmap; SciPy's operators; the warnings of
unconverged solves; the errors."""

import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.scipy.sparse import linalg as fsl
from fgrad.test_util import check_grads

ssl = pytest.importorskip("scipy.sparse.linalg")
sparse = pytest.importorskip("scipy.sparse")

# Rule tests of the primitive of SciPy's operators: test_scipy_operators_... (jvp, transpose,
# jit) and BATCH_CASES below (vmap).
PRIMITIVES = {"scipy_linear_operator"}


def spd(n, seed):
    q = np.random.default_rng(seed).normal(size=(n, n))
    return q @ q.T / n + np.eye(n)


def general(n, seed):
    return spd(n, seed) + 0.3 * np.random.default_rng(seed + 1).normal(size=(n, n))


SOLVERS = {  # name -> (fgrad's, SciPy's, a matrix it solves)
    "cg": (fsl.cg, "cg", spd),
    "gmres": (fsl.gmres, "gmres", general),
    "bicgstab": (fsl.bicgstab, "bicgstab", general),
}
EACH = pytest.mark.parametrize("name", sorted(SOLVERS))


class Strict:
    """A context in which any warning (an unconverged solve) fails the test."""

    def __enter__(self):
        self.context = warnings.catch_warnings()
        self.context.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self.context.__exit__(*exc)


# --- values ---------------------------------------------------------------------------------------


@EACH
@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 7), seed=st.integers(0, 2**16), start=st.booleans())
def test_values_info_and_iterates_are_scipys(name, n, seed, start):
    ours, theirs, matrix = SOLVERS[name]
    A, b = matrix(n, seed), np.random.default_rng(seed + 2).normal(size=n)
    x0 = np.random.default_rng(seed + 3).normal(size=n) if start else None
    kw = {"callback_type": "x"} if name == "gmres" else {}
    seen, seen_by_scipy = [], []
    x, info = ours(A, b, x0, rtol=1e-8, callback=lambda xk: seen.append(np.copy(xk)), **kw)
    expected, expected_info = getattr(ssl, theirs)(A, b, x0, rtol=1e-8,
                                                   callback=lambda xk: seen_by_scipy.append(np.copy(xk)), **kw)
    assert info == expected_info and type(info) is int
    np.testing.assert_allclose(x, expected, rtol=1e-9, atol=1e-12)
    assert len(seen) == len(seen_by_scipy)
    np.testing.assert_allclose(seen, seen_by_scipy, rtol=1e-8, atol=1e-12)
    if info == 0:
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-6, atol=1e-7 * np.abs(x).max())


@EACH
def test_an_unconverged_solve_stops_where_scipys_does(name):
    ours, theirs, matrix = SOLVERS[name]
    A, b = matrix(30, 0), np.ones(30)
    extra = {"restart": 3} if name == "gmres" else {}
    for maxiter in (1, 2):
        x, info = ours(A, b, rtol=1e-12, maxiter=maxiter, **extra)
        expected, expected_info = getattr(ssl, theirs)(A, b, rtol=1e-12, maxiter=maxiter, **extra)
        assert info == expected_info == maxiter
        np.testing.assert_allclose(x, expected, rtol=1e-9)


@EACH
def test_a_zero_right_hand_side_and_a_1x1_system(name):
    ours = SOLVERS[name][0]
    x, info = ours(spd(3, 0), np.zeros(3), x0=np.ones(3))  # SciPy's: x = b = 0, whatever x0
    assert info == 0 and np.all(x == 0)
    x, info = ours(np.array([[2.0]]), np.array([3.0]))
    np.testing.assert_allclose(x, [1.5]) and info == 0
    x, info = ours(lambda x: 4.0 * x, 2.0)  # a 0-d b: x has its shape
    assert np.shape(x) == () and info == 0 and abs(x - 0.5) < 1e-12
    with Strict():
        assert abs(fgrad.grad(lambda a: ours(lambda x: a * x, 2.0)[0])(4.0) + 2.0 / 16) < 1e-12
        np.testing.assert_allclose(fgrad.grad(lambda A: ours(A, np.array([3.0]))[0][0])(np.array([[2.0]])),
                                   [[-3.0 / 4]])


def test_a_function_of_arrays_of_any_shape_and_float32():
    A = general(3, 1)
    B = np.arange(6.0).reshape(2, 3)
    x, info = fsl.gmres(lambda X: X @ A + 2.0 * X, B, rtol=1e-12)
    assert info == 0 and x.shape == (2, 3)
    np.testing.assert_allclose(x, np.linalg.solve((A + 2 * np.eye(3)).T, B.T).T, rtol=1e-10)
    x, _ = fsl.cg(spd(3, 0).astype(np.float32), np.ones(3, np.float32))
    assert x.dtype == np.float32
    x, _ = fsl.cg(spd(3, 0), np.ones((3, 1)))  # SciPy's (n, 1): x of shape (n,)
    assert x.shape == (3,)


def test_a_preconditioner_changes_the_iterations_not_the_solution():
    A, b = spd(12, 4), np.ones(12)
    for M in (np.diag(1 / np.diag(A)), lambda r: r / np.diag(A), ssl.aslinearoperator(np.diag(1 / np.diag(A)))):
        for name in SOLVERS:
            ours, theirs, _ = SOLVERS[name]
            x, info = ours(A, b, rtol=1e-10, M=M)
            expected, _ = getattr(ssl, theirs)(A, b, rtol=1e-10, M=np.diag(1 / np.diag(A)))
            assert info == 0
            np.testing.assert_allclose(x, expected, rtol=1e-8)


# --- derivatives ------------------------------------------------------------------------------------


@EACH
def test_derivatives_in_b_are_the_inverse(name):
    ours, _, matrix = SOLVERS[name]
    A, b = matrix(3, 7), np.array([-1.0, 0.5, 2.0])
    solve = lambda b: ours(A, b, rtol=1e-13)[0]  # noqa: E731
    with Strict():
        np.testing.assert_allclose(fgrad.jacfwd(solve)(b), np.linalg.inv(A), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fgrad.jacrev(solve)(b), np.linalg.inv(A), rtol=1e-9, atol=1e-12)


@EACH
def test_derivatives_in_what_the_matvec_closes_over(name):
    ours, _, matrix = SOLVERS[name]
    L, b = matrix(3, 3), np.array([1.0, -2.0, 0.5])

    def x_of(a):  # (a L) x = b: x = L^-1 b / a, dx/da = -x / a, d2x/da2 = 2 x / a^2
        return ours(lambda x: (a * L) @ x, b, rtol=1e-13)[0]

    x, a = np.linalg.solve(L, b), 0.7
    with Strict():
        np.testing.assert_allclose(fgrad.jacfwd(x_of)(a), -x / a**2, rtol=1e-9)
        np.testing.assert_allclose(fgrad.jacrev(x_of)(a), -x / a**2, rtol=1e-9)
        np.testing.assert_allclose(fgrad.hessian(lambda a: fnp.sum(x_of(a)))(a), 2 * np.sum(x) / a**3, rtol=1e-8)
        # finite differences: to second order for cg; gmres' and bicgstab's second derivatives, which
        # take their staging many times over, against the closed form above only
        check_grads(lambda a: fnp.sum(x_of(a)), (1.3,), order=2 if name == "cg" else 1)


@EACH
def test_derivatives_in_the_matrix(name):
    ours, _, matrix = SOLVERS[name]
    A, b, w = matrix(3, 11), np.array([0.5, 1.0, -1.0]), np.array([1.0, 2.0, 3.0])

    def loss(A, b):
        return w @ ours(A, b, rtol=1e-13)[0]

    # dx = A^-1 (db - dA x): d(w.x)/dA = -lam x^T, d(w.x)/db = lam, with A^T lam = w
    x, lam = np.linalg.solve(A, b), np.linalg.solve(A.T, w)
    with Strict():
        dA, db = fgrad.grad(loss, argnums=(0, 1))(A, b)
        np.testing.assert_allclose(dA, -np.outer(lam, x), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(db, lam, rtol=1e-9)
        direction = np.random.default_rng(0).normal(size=(3, 3))
        _, tangent = fgrad.jvp(lambda A: ours(A, b, rtol=1e-13)[0], (A,), (direction,))
        np.testing.assert_allclose(tangent, -np.linalg.solve(A, direction @ x), rtol=1e-9)
        check_grads(loss, (A, b), order=1)


@EACH
def test_jit_and_vmap(name):
    ours, _, matrix = SOLVERS[name]
    L, B = matrix(3, 5), np.random.default_rng(1).normal(size=(3, 3))
    scales = np.array([0.5, 1.0, 3.0])

    def x_of(b, a):
        return ours(lambda x: a * (L @ x), b, rtol=1e-12)

    with Strict():
        x, info = fgrad.jit(x_of)(B[0], 2.0)
        np.testing.assert_allclose(x, x_of(B[0], 2.0)[0], rtol=1e-12)
        assert int(info) == 0
        xs, infos = fgrad.vmap(x_of)(B, scales)
        np.testing.assert_allclose(xs, [x_of(b, a)[0] for b, a in zip(B, scales)], rtol=1e-10)
        assert list(infos) == [0, 0, 0]
        grads = fgrad.jit(fgrad.vmap(fgrad.grad(lambda b, a: fnp.sum(x_of(b, a)[0]), argnums=(0, 1))))(B, scales)
        for k, (b, a) in enumerate(zip(B, scales)):
            lam = np.linalg.solve(a * L.T, np.ones(3))
            np.testing.assert_allclose(grads[0][k], lam, rtol=1e-9)
            np.testing.assert_allclose(grads[1][k], -lam @ L @ np.linalg.solve(a * L, b), rtol=1e-9)


def test_the_derivative_of_a_solve_to_an_absolute_tolerance_is_right_at_any_scale():
    # atol bounds the residual of x; a derivative's solve scales it by its right-hand side,
    # so that a tiny tangent is not taken for a converged zero
    A, b, v = spd(6, 2), np.ones(6), np.linspace(1.0, 2.0, 6)
    with Strict():
        for scale in (1e-9, 1.0, 1e9):
            _, t = fgrad.jvp(lambda b: fsl.cg(A, b, rtol=0.0, atol=1e-10)[0], (b,), (scale * v,))
            np.testing.assert_allclose(t, scale * np.linalg.solve(A, v), rtol=1e-8)


# --- SciPy's operators ------------------------------------------------------------------------------


def _tridiagonal(n, lower=-1.0, upper=-1.0):
    return sparse.diags([lower, 2.5, upper], [-1, 0, 1], shape=(n, n), format="csr")


@EACH
def test_scipy_operators_as_A(name):
    ours, theirs, _ = SOLVERS[name]
    T = _tridiagonal(5, -1.0, -1.0 if name == "cg" else -0.6)
    b = np.linspace(0.0, 1.0, 5)
    inverse = np.linalg.inv(T.toarray())
    for A, jacobian in ((T, fgrad.jacrev), (ssl.aslinearoperator(T), lambda f: fgrad.jit(fgrad.jacfwd(f)))):
        x, info = ours(A, b, rtol=1e-10)
        expected, _ = getattr(ssl, theirs)(T, b, rtol=1e-10)
        assert info == 0
        np.testing.assert_allclose(x, expected, rtol=1e-10)
        with Strict():
            np.testing.assert_allclose(jacobian(lambda b: ours(A, b, rtol=1e-13)[0])(b), inverse, rtol=1e-9,
                                       atol=1e-12)


def test_scipy_operators_rules():
    T = _tridiagonal(5, -1.0, -0.4)
    op = fsl._Operator(ssl.aslinearoperator(T))
    apply = lambda x: fsl.scipy_operator_p.bind(x, operator=op)  # noqa: E731
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(apply(x), T @ x)
    np.testing.assert_allclose(fgrad.jit(apply)(x), T @ x)
    check_grads(lambda x: fnp.sin(apply(x)), (x,), order=2)  # jvp, transpose, their derivatives
    np.testing.assert_allclose(fgrad.jacrev(apply)(x), T.toarray())
    assert op.T.T is op and repr(op) == "MatrixLinearOperator(5, 5)"


def test_a_linear_operator_without_a_transpose():
    T = _tridiagonal(6, -1.0, -0.5)
    A = ssl.LinearOperator(T.shape, matvec=lambda v: T @ v, dtype=float)
    b = np.ones(6)
    inverse = np.linalg.inv(T.toarray())
    np.testing.assert_allclose(fgrad.jacfwd(lambda b: fsl.gmres(A, b, rtol=1e-13)[0])(b), inverse, rtol=1e-9)
    with pytest.raises(NotImplementedError, match="reverse-mode derivative of gmres or bicgstab solves with A.T"
                                                  ".*give the LinearOperator rmatvec"):
        fgrad.jacrev(lambda b: fsl.gmres(A, b, rtol=1e-13)[0])(b)
    # cg takes A, symmetric, as its own transpose
    S = ssl.LinearOperator(T.shape, matvec=lambda v: _tridiagonal(6) @ v, dtype=float)
    np.testing.assert_allclose(fgrad.jacrev(lambda b: fsl.cg(S, b, rtol=1e-13)[0])(b),
                               np.linalg.inv(_tridiagonal(6).toarray()), rtol=1e-9)


def test_a_matvec_whose_code_has_no_transpose_solves_and_has_forward_derivatives():
    def A(x):  # 1.1^3 x, by a loop that carries a counter: its code cannot be transposed
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.1, c[1] + 1), (x, 0))[0]

    b = np.array([1.0, 2.0])
    np.testing.assert_allclose(fsl.gmres(A, b, rtol=1e-12)[0], b / 1.331, rtol=1e-10)
    np.testing.assert_allclose(fgrad.jacfwd(lambda b: fsl.bicgstab(A, b, rtol=1e-12)[0])(b), np.eye(2) / 1.331,
                               rtol=1e-10)
    with pytest.raises(TypeError, match="reverse-mode differentiation"):
        fgrad.jacrev(lambda b: fsl.gmres(A, b, rtol=1e-12)[0])(b)
    np.testing.assert_allclose(fgrad.jacrev(lambda b: fsl.cg(A, b, rtol=1e-12)[0])(b), np.eye(2) / 1.331,
                               rtol=1e-10)


# vmap == a Python loop over examples (tests/transforms/test_batching.py): label -> (f, shapes, domain)
_OPERATOR = fsl._Operator(ssl.aslinearoperator(_tridiagonal(4, -1.0, -0.3)))
BATCH_CASES = {
    "scipy_linear_operator": (lambda x: fsl.scipy_operator_p.bind(x, operator=_OPERATOR), [(4,)], "real"),
}


# --- convergence --------------------------------------------------------------------------------------


@EACH
def test_a_derivative_of_an_unconverged_solve_warns(name):
    ours, _, matrix = SOLVERS[name]
    A, b = matrix(8, 0), np.ones(8)
    extra = {"restart": 2} if name == "gmres" else {}
    solve = lambda b: ours(A, b, rtol=1e-12, maxiter=1, **extra)[0]  # noqa: E731
    with Strict():
        assert ours(A, b, rtol=1e-12, maxiter=1, **extra)[1] == 1  # the value alone: info says it, as SciPy's
    for derivative in (fgrad.grad(lambda b: fnp.sum(solve(b))), lambda b: fgrad.jvp(solve, (b,), (b,))[1],
                       fgrad.jit(fgrad.grad(lambda b: fnp.sum(solve(b))))):
        with pytest.warns(RuntimeWarning) as record:  # and its derivative's own solve, neither converged
            derivative(b)
        assert any(f"linalg.{name}: the solve did not converge" in str(w.message) for w in record)


def test_a_derivative_whose_own_solve_does_not_converge_warns():
    # x0 is the solution, so x converges at once; the derivative's solve starts from 0
    A, b = spd(20, 1), np.ones(20)
    x0 = np.linalg.solve(A, b)
    with Strict():
        assert fsl.cg(A, b, x0=x0, maxiter=1)[1] == 0
    for transform in (fgrad.jacrev, fgrad.jacfwd):
        with pytest.warns(RuntimeWarning, match="the linear solve of a derivative .* did not converge"):
            transform(lambda b: fsl.cg(A, b, x0=x0, rtol=1e-12, maxiter=1)[0])(b)


def test_the_callback_sees_the_solve_of_x_only():
    A, b = spd(6, 0), np.ones(6)
    theirs, seen = [], []
    ssl.cg(A, b, rtol=1e-10, callback=lambda xk: theirs.append(1))
    fgrad.jacrev(lambda b: fsl.cg(A, b, rtol=1e-10, callback=lambda xk: seen.append(xk.shape))[0])(b)
    assert seen == [(6,)] * len(theirs)
    seen.clear()  # under vmap, each example's iterates
    fgrad.vmap(lambda b: fsl.cg(A, b, rtol=1e-10, callback=lambda xk: seen.append(xk.shape))[0])(np.stack([b, b]))
    assert seen == [(6,)] * (2 * len(theirs))
    norms = []
    fsl.gmres(general(6, 0), b, rtol=1e-10, callback=norms.append, callback_type="pr_norm")
    theirs = []
    ssl.gmres(general(6, 0), b, rtol=1e-10, callback=theirs.append, callback_type="pr_norm")
    np.testing.assert_allclose(norms, theirs, rtol=1e-6, atol=1e-12)


# --- the iterative tangent solves of fgrad.scipy.optimize ---------------------------------------------


def test_the_derivative_solver_warns_at_once():
    A = spd(5, 3)
    for symmetric in (True, False):
        solve = fsl.derivative_solver(symmetric, rtol=1e-12)
        with Strict():
            np.testing.assert_allclose(solve(lambda v: A @ v, np.ones(5)), np.linalg.solve(A, np.ones(5)),
                                       rtol=1e-10)
        with pytest.warns(RuntimeWarning, match="linear solve of a derivative"):
            fsl.derivative_solver(symmetric, rtol=0.0)(lambda v: A @ v, np.ones(5))


# --- errors ------------------------------------------------------------------------------------------


def test_errors():
    A, b = np.eye(3), np.ones(3)
    name = "fgrad.scipy.sparse.linalg.cg"
    with pytest.raises(ValueError, match=rf"{name}: the shapes of A \(3, 3\) and b \(4,\) are incompatible: b "
                                         r"must have shape \(3,\) or \(3, 1\)"):
        fsl.cg(A, np.ones(4))
    with pytest.raises(ValueError, match=r"A must be a square matrix, but it has shape \(3, 4\)"):
        fsl.cg(np.ones((3, 4)), b)
    with pytest.raises(ValueError, match=r"A must be a square matrix, but it has shape \(3,\)"):
        fsl.gmres(np.ones(3), b)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tol'"):
        fsl.cg(A, b, tol=1e-3)
    with pytest.raises(ValueError, match=r"A\(x\) returned an array of shape \(2,\) for an x of shape \(3,\)"):
        fsl.bicgstab(lambda x: x[:2], b)
    with pytest.raises(TypeError, match="A must be a matrix .* a function x -> A @ x, or a SciPy sparse matrix "
                                        "or LinearOperator, not str"):
        fsl.cg("A", b)
    with pytest.raises(ValueError, match="rtol must be a non-negative number, not -1.0"):
        fsl.cg(A, b, rtol=-1.0)
    with pytest.raises(TypeError, match="atol must be a real number, not None"):
        fsl.cg(A, b, atol=None)
    with pytest.raises(ValueError, match="maxiter must be at least 1, not 0"):
        fsl.cg(A, b, maxiter=0)
    with pytest.raises(ValueError, match=r"x0 has shape \(2,\), but it must have b's, \(3,\)"):
        fsl.cg(A, b, x0=np.ones(2))
    with pytest.raises(ValueError, match=r"the shapes of M \(2, 2\) and b \(3,\) are incompatible: M must be a "
                                         r"\(3, 3\) matrix"):
        fsl.cg(A, b, M=np.eye(2))
    with pytest.raises(TypeError, match="A is complex .* real systems only"):
        fsl.cg(A + 0j, b)
    with pytest.raises(TypeError, match="b must be an array of real numbers, but it has dtype <U1"):
        fsl.cg(A, np.array(["a", "b", "c"]))
    with pytest.raises(ValueError, match="callback_type must be 'x' or 'pr_norm', not 'bad'"):
        fsl.gmres(A, b, callback_type="bad")
    with pytest.raises(ValueError, match="give callback_type='x' .* or 'pr_norm'"):
        fsl.gmres(A, b, callback=print)
    with pytest.raises(ValueError, match="restart must be at least 1, not 0"):
        fsl.gmres(A, b, restart=0)


def test_scipy_is_imported_only_for_scipys_objects(monkeypatch):
    assert fgrad.scipy.sparse.linalg is fsl  # fgrad.scipy.sparse, imported on first use
    for module in [m for m in sys.modules if m.split(".")[0] == "scipy"]:
        monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    jacobian = fgrad.jacrev(lambda b: fsl.gmres(A, b)[0] + fsl.cg(lambda x: A @ x, b)[0])(np.ones(2))
    np.testing.assert_allclose(jacobian, 2 * np.linalg.inv(A), rtol=1e-4)
    with pytest.raises(ImportError, match="with a SciPy MatrixLinearOperator needs scipy"):
        fsl.cg(_OPERATOR.op, np.ones(4))
