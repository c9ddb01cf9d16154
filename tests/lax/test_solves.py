"""fgrad.lax.custom_root and fgrad.lax.custom_linear_solve: solutions differentiated by the
implicit function theorem, in both modes and to any order, eagerly, under jit and under
vmap, against closed forms and finite differences; and their errors.
(tests/primitives/test_control_flow_rules.py checks their primitives' rules.)"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads

# --- the fixed point x = cos(a x) -------------------------------------------------------


def newton(f, x):
    """Newton's method, f' by forward mode, a fixed number of steps."""
    def step(i, x):
        fx, dfx = fgrad.jvp(f, (x,), (fnp.ones_like(x),))
        return x - fx / dfx

    return lax.fori_loop(0, 40, step, x)


def iterate(f, x):
    """The fixed-point iteration x <- x - f(x) (= cos(a x)), until it settles."""
    def go_on(c):
        x, k = c
        return (fnp.abs(f(x)) > 1e-15) & (k < 500)

    return lax.while_loop(go_on, lambda c: (c[0] - f(c[0]), c[1] + 1), (x, 0))[0]


SOLVERS = {"newton": newton, "iteration": iterate}


def scalar_solve(g, y):
    return y / g(1.0)


def fixed_point(a, solver="newton"):
    return lax.custom_root(lambda x: x - fnp.cos(a * x), 0.5, SOLVERS[solver], scalar_solve)


def closed_form(a):
    """x(a) with x = cos(a x), by bisection in NumPy, and its first two derivatives:
    with s = sin(a x), x' = -x s / (1 + a s) (implicit differentiation), and x'' from
    differentiating that again, using cos(a x) = x."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid - np.cos(a * mid) < 0 else (lo, mid)
    x = (lo + hi) / 2
    s = np.sin(a * x)
    d1 = -x * s / (1 + a * s)
    ds = x * (x + a * d1)  # d/da sin(a x) = cos(a x) (x + a x')
    num, den = x * s, 1 + a * s
    d2 = -((d1 * s + x * ds) * den - num * (s + a * ds)) / den**2
    return x, d1, d2


A = (0.7, 1.1)


def test_the_closed_form_is_right():
    for a in A:
        x, d1, d2 = closed_form(a)
        assert abs(x - np.cos(a * x)) < 1e-15
        eps = 1e-5
        np.testing.assert_allclose((closed_form(a + eps)[0] - closed_form(a - eps)[0]) / (2 * eps), d1, rtol=1e-8)
        np.testing.assert_allclose((closed_form(a + eps)[1] - closed_form(a - eps)[1]) / (2 * eps), d2, rtol=1e-7)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_the_fixed_points_derivatives_in_every_mode(solver, jit):
    wrap = fgrad.jit if jit else (lambda f: f)
    f = lambda a: fixed_point(a, solver)  # noqa: E731
    for a in A:
        x, d1, d2 = closed_form(a)
        np.testing.assert_allclose(wrap(f)(a), x, rtol=1e-14)
        np.testing.assert_allclose(wrap(fgrad.grad(f))(a), d1, rtol=1e-8)
        primal, tangent = wrap(lambda a: fgrad.jvp(f, (a,), (1.0,)))(a)
        np.testing.assert_allclose([primal, tangent], [x, d1], rtol=1e-8)
        np.testing.assert_allclose(wrap(fgrad.hessian(f))(a), d2, rtol=1e-8)
        np.testing.assert_allclose(wrap(fgrad.grad(fgrad.grad(f)))(a), d2, rtol=1e-8)
        np.testing.assert_allclose(wrap(fgrad.jacrev(fgrad.jacfwd(f)))(a), d2, rtol=1e-8)
    a = np.array(A)
    np.testing.assert_allclose(wrap(fgrad.vmap(fgrad.grad(f)))(a), [closed_form(v)[1] for v in A], rtol=1e-8)
    np.testing.assert_allclose(wrap(fgrad.vmap(fgrad.hessian(f)))(a), [closed_form(v)[2] for v in A], rtol=1e-8)


def test_hessian_through_custom_root_equals_finite_differences_of_the_gradient():
    # A 3-equation system whose root depends on theta; tangent_solve a dense solve.
    def root(theta):
        def f(x):
            return fnp.stack([x[0] + 0.3 * fnp.sin(x[1]) - theta[0],
                              x[1] + 0.2 * x[0] * x[2] - theta[1] ** 2,
                              2 * x[2] + 0.1 * fnp.cos(x[0] * x[1]) - theta[2] * theta[0]])

        def solve(f, x):
            return lax.fori_loop(0, 30, lambda i, x: x - fnp.linalg.solve(fgrad.jacfwd(f)(x), f(x)), x)

        def dense(g, y):
            return fnp.linalg.solve(fgrad.jacobian(g)(y), y)

        return lax.custom_root(f, fnp.zeros(3), solve, dense)

    loss = lambda theta: fnp.sum(fnp.sin(root(theta)) * np.array([1.0, -2.0, 0.5]))  # noqa: E731
    theta = np.array([0.5, -0.3, 0.8])
    eps = 1e-5
    gradient = fgrad.grad(loss)
    fd = np.stack([(gradient(theta + eps * e) - gradient(theta - eps * e)) / (2 * eps) for e in np.eye(3)])
    for hess in (fgrad.hessian(loss), fgrad.jit(fgrad.hessian(loss)), fgrad.jacrev(gradient), fgrad.jacfwd(gradient)):
        np.testing.assert_allclose(hess(theta), fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fgrad.hessian(loss)(theta), fgrad.hessian(loss)(theta).T, rtol=1e-12)


def test_reverse_mode_keeps_nothing_of_the_solvers_iterations():
    from fgrad.transforms.reverse import linearize_flat

    def root(a, steps):
        solve = lambda f, x: lax.fori_loop(0, steps, lambda i, x: x - f(x), x)  # noqa: E731
        return lax.custom_root(lambda x: x - fnp.cos(a * x), 0.5, solve, scalar_solve)

    kept = []
    for steps in (10, 10_000):
        _, linear, _ = linearize_flat(lambda a: [root(a, steps)], [np.float64(0.7)], "test")
        kept.append((len(linear.jaxpr.eqns), [np.shape(c) for c in linear.jaxpr.consts]))
    assert kept[0] == kept[1]  # the same linear map, whatever the number of iterations
    np.testing.assert_allclose(fgrad.grad(lambda a: root(a, 10_000))(0.7), closed_form(0.7)[1], rtol=1e-8)


def test_custom_root_with_an_iterative_tangent_solve_a_pytree_and_aux():
    # tangent_solve a while_loop (no transpose of its own): the transposed system is solved by it
    # on the transposed map. The guess is a dict; solve returns the number of steps as aux.
    def richardson(g, y):
        def go_on(c):
            x, k = c
            r = {key: y[key] - g(x)[key] for key in y}
            return (fnp.sum(r["u"] ** 2) + fnp.sum(r["v"] ** 2) > 1e-28) & (k < 2000)

        return lax.while_loop(go_on, lambda c: ({key: c[0][key] + 0.5 * (y[key] - g(c[0])[key]) for key in y},
                                                c[1] + 1), ({key: fnp.zeros_like(y[key]) for key in y}, 0))[0]

    def root(p):
        def f(x):
            return {"u": x["u"] + 0.2 * fnp.tanh(x["v"]) - p, "v": x["v"] - 0.3 * fnp.sin(x["u"]) * p}

        def solve(f, x):
            x = lax.fori_loop(0, 60, lambda i, x: {k: x[k] - 0.7 * f(x)[k] for k in x}, x)
            return x, fnp.array(60)

        return lax.custom_root(f, {"u": fnp.zeros(2), "v": fnp.zeros(2)}, solve, richardson, has_aux=True)

    p = np.array([0.4, -0.9])
    (x, steps) = root(p)
    assert steps == 60 and set(x) == {"u", "v"}
    f = lambda p: root(p)[0]["u"] * root(p)[0]["v"]  # noqa: E731
    check_grads(f, (p,), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_a_tangent_solve_that_neither_transposes_nor_uses_g_says_so_in_reverse_mode():
    def stubborn(g, y):  # ignores g; its loop cannot be transposed
        return lax.while_loop(lambda c: c[1] < 1, lambda c: (c[0] / 0.5, c[1] + 1), (y, 0))[0]

    f = lambda a: lax.custom_root(lambda x: 0.5 * x - a, 0.0, lambda f, x: 2 * a, stubborn)  # noqa: E731
    assert fgrad.jvp(f, (1.0,), (1.0,))[1] == 2.0  # forward mode solves with it directly
    with pytest.raises(TypeError, match="reverse-mode differentiation.*custom_root.*tangent_solve.*jvp, jacfwd"):
        fgrad.grad(f)(1.0)


def test_custom_root_differentiates_only_what_f_closes_over():
    # The guess and what the solver closes over only find the root.
    scale = 3.0
    f = lambda a, g: lax.custom_root(lambda x: x - a, g, lambda f, x: x - f(x) * scale / scale,  # noqa: E731
                                     scalar_solve)
    assert fgrad.grad(f, argnums=(0, 1))(2.0, 5.0) == (1.0, 0.0)


def test_custom_root_errors():
    with pytest.raises(TypeError, match="custom_root: f must return a value of the structure of initial_guess"):
        lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, scalar_solve)
    with pytest.raises(ValueError, match="custom_root: solve returned shape \\(2,\\) for leaf 0.*shape \\(\\)"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: fnp.ones(2), scalar_solve)
    with pytest.raises(TypeError, match="custom_root: solve has has_aux=True, so it must return a pair"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: x, scalar_solve, has_aux=True)
    with pytest.raises(TypeError, match="custom_root: tangent_solve must return a value of the structure"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: x, lambda g, y: [y])
    with pytest.raises(fgrad.ConcretizationTypeError, match="traced once on abstract values"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: x if x > 0 else -x, scalar_solve)


# --- custom_linear_solve ------------------------------------------------------------------

rng = np.random.default_rng(0)
M = rng.normal(size=(3, 3))
SPD = M @ M.T + 3 * np.eye(3)  # symmetric positive definite
NONSYM = SPD + 0.5 * (M - M.T)  # not symmetric; its symmetric part is positive definite
B = rng.normal(size=3)


def cg(matvec, b):
    """Conjugate gradients, until the residual is below 1e-13."""
    def go_on(c):
        return (c[3] > 1e-26) & (c[4] < 50)

    def step(c):
        x, r, p, rs, k = c
        ap = matvec(p)
        alpha = rs / fnp.dot(p, ap)
        x, r = x + alpha * p, r - alpha * ap
        rs_new = fnp.dot(r, r)
        return x, r, r + rs_new / rs * p, rs_new, k + 1

    r = b - matvec(fnp.zeros_like(b))
    return lax.while_loop(go_on, step, (fnp.zeros_like(b), r, r, fnp.dot(r, r), 0))[0]


def richardson(matvec, b):
    """x <- x + w (b - A x): for a matrix whose symmetric part is positive definite."""
    def go_on(c):
        r = b - matvec(c[0])
        return (fnp.dot(r, r) > 1e-28) & (c[1] < 5000)

    return lax.while_loop(go_on, lambda c: (c[0] + 0.05 * (b - matvec(c[0])), c[1] + 1), (fnp.zeros_like(b), 0))[0]


def symmetric(A, b):
    return lax.custom_linear_solve(lambda x: A @ x, b, cg, symmetric=True)


def nonsymmetric(A, b):
    return lax.custom_linear_solve(lambda x: A @ x, b, richardson, transpose_solve=richardson)


LINEAR = {"symmetric": (symmetric, SPD), "nonsymmetric": (nonsymmetric, NONSYM)}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_custom_linear_solve_in_b_and_in_the_matrix(name):
    solve, A = LINEAR[name]
    x, inv = np.linalg.solve(A, B), np.linalg.inv(A)
    np.testing.assert_allclose(solve(A, B), x, rtol=1e-11)
    np.testing.assert_allclose(fgrad.jacfwd(lambda b: solve(A, b))(B), inv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fgrad.jacrev(lambda b: solve(A, b))(B), inv, rtol=1e-10, atol=1e-12)
    w = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(fgrad.grad(lambda b: fnp.dot(w, solve(A, b)))(B), np.linalg.solve(A.T, w), rtol=1e-10)
    # d x = -A^-1 dA x: d(w.x)/dA = -outer(A^-T w, x)
    expected = -np.outer(np.linalg.solve(A.T, w), x)
    np.testing.assert_allclose(fgrad.grad(lambda A: fnp.dot(w, solve(A, B)))(A), expected, rtol=1e-9)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(lambda A: fnp.dot(w, solve(A, B))))(A), expected, rtol=1e-9)
    np.testing.assert_allclose(fgrad.jacfwd(lambda A: solve(A, B))(A), -np.einsum("ij,k->ijk", inv, x), rtol=1e-9,
                               atol=1e-12)
    bs = rng.normal(size=(4, 3))
    np.testing.assert_allclose(fgrad.vmap(lambda b: solve(A, b))(bs), np.linalg.solve(A, bs.T).T, rtol=1e-10)
    As = np.stack([A, A + np.eye(3)])
    np.testing.assert_allclose(fgrad.vmap(lambda A: fgrad.grad(lambda A: fnp.dot(w, solve(A, B)))(A))(As),
                               [-np.outer(np.linalg.solve(a.T, w), np.linalg.solve(a, B)) for a in As], rtol=1e-9)
    check_grads(solve, (A, B), order=2, atol=1e-6, rtol=1e-6)


def test_custom_linear_solve_uses_its_solvers_not_their_steps():
    calls = []

    def solve(matvec, b):  # a deliberately inexact solver: the derivative follows the equation, not it
        calls.append("solve")
        return b / np.diag(SPD)

    x = lax.custom_linear_solve(lambda x: SPD @ x, B, solve, symmetric=True)
    np.testing.assert_allclose(x, B / np.diag(SPD))
    t = fgrad.jvp(lambda b: lax.custom_linear_solve(lambda x: SPD @ x, b, solve, symmetric=True), (B,), (B,))[1]
    np.testing.assert_allclose(t, B / np.diag(SPD))  # the same solver, on the tangent


def test_custom_linear_solve_with_aux_and_pytrees():
    def solve(matvec, b):
        return {"p": b["p"] / 2.0, "q": b["q"] / 4.0}, fnp.array(1)

    def matvec(x):
        return {"p": 2.0 * x["p"], "q": 4.0 * x["q"]}

    b = {"p": np.ones(2), "q": np.array(3.0)}
    x, aux = lax.custom_linear_solve(matvec, b, solve, symmetric=True, has_aux=True)
    assert aux == 1
    np.testing.assert_allclose(x["q"], 0.75)
    g = fgrad.grad(lambda b: fnp.sum(lax.custom_linear_solve(matvec, b, solve, symmetric=True,
                                                             has_aux=True)[0]["p"]))(b)
    np.testing.assert_allclose(g["p"], [0.5, 0.5])
    assert g["q"] == 0.0


def test_custom_linear_solve_errors():
    mv = lambda x: SPD @ x  # noqa: E731
    with pytest.raises(TypeError, match="reverse-mode differentiation.*custom_linear_solve.*transpose_solve"):
        fgrad.grad(lambda b: fnp.sum(lax.custom_linear_solve(mv, b, cg)))(B)
    np.testing.assert_allclose(fgrad.jvp(lambda b: lax.custom_linear_solve(mv, b, cg), (B,), (B,))[1],
                               np.linalg.solve(SPD, B), rtol=1e-10)  # forward mode needs no transpose
    with pytest.raises(ValueError, match="custom_linear_solve: matvec returned shape \\(2,\\) for leaf 0"):
        lax.custom_linear_solve(lambda x: x[:2], B, cg)
    with pytest.raises(TypeError, match="custom_linear_solve: solve must return a value of the structure of b"):
        lax.custom_linear_solve(mv, B, lambda mv, b: (b, b))
    with pytest.raises(TypeError, match="custom_linear_solve: solve has has_aux=True"):
        lax.custom_linear_solve(mv, B, cg, has_aux=True)


def test_custom_root_and_linear_solve_are_one_equation_and_jit_writes_the_solve_inline():
    closed = fgrad.make_jaxpr(fixed_point)(0.7)
    assert [e.primitive.name for e in closed.eqns] == ["custom_root"]
    closed = fgrad.make_jaxpr(fgrad.grad(fixed_point))(0.7)
    assert "custom_linear_solve" in [e.primitive.name for e in closed.eqns]
    jitted = fgrad.jit(lambda b: symmetric(SPD, b))
    np.testing.assert_allclose(jitted(B), np.linalg.solve(SPD, B), rtol=1e-11)
    assert "while True:" in jitted.lower(B).as_text()  # cg's loop, written inline
