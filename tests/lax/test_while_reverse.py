"""Reverse mode of while_loop under jit and vmap, where the number of iterations
is known only when the code runs: the tape of residuals is a value of its own
(`while_tape`, consumed by `tape_scan`), so derivatives of any order through the
loop equal those of the same loop unrolled in Python, and finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax


def newton_sqrt(a):
    return lax.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12, lambda x: (x + a / x) / 2, a)


def damped(x, a):
    """A loop whose trip count depends on x, with a closed-over a and a pair carry."""

    def body(c):
        i, v, s = c
        return i + 1, v * 0.6 + 0.05 * fnp.sin(v * a), s + fnp.sum(v * v) * a[0]

    _, v, s = lax.while_loop(lambda c: fnp.logical_and(c[0] < 12, fnp.max(fnp.abs(c[1])) > 0.2), body,
                             (0, x, fnp.zeros(())))
    return fnp.sum(v * fnp.cos(a)) + s


def damped_unrolled(x, a):
    i, v, s = 0, x, fnp.zeros(())
    while i < 12 and fnp.max(fnp.abs(v)) > 0.2:
        i, v, s = i + 1, v * 0.6 + 0.05 * fnp.sin(v * a), s + fnp.sum(v * v) * a[0]
    return fnp.sum(v * fnp.cos(a)) + s


def _central_differences(f, x, eps=1e-5):
    out = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        out.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(out, axis=-1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("order", [2, 3])
def test_higher_derivatives_under_jit_equal_the_closed_form(order):
    g = newton_sqrt
    for _ in range(order):
        g = fgrad.grad(g)
    want = {2: -0.25 * 2.0 ** -1.5, 3: 0.375 * 2.0 ** -2.5}[order]
    assert fgrad.jit(g)(2.0) == pytest.approx(want, rel=1e-10)
    assert fgrad.jit(g)(2.0) == pytest.approx(g(2.0), rel=1e-12)  # eagerly the loop unrolls


@settings(deadline=None, max_examples=8)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 3))
def test_jit_hessians_through_while_equal_the_unrolled_loops(seed, n):
    rng = np.random.default_rng(seed)
    x, a = rng.uniform(-2, 2, n), rng.uniform(0.5, 1.5, n)
    want_xx = fgrad.hessian(damped_unrolled)(x, a)
    want_xa = fgrad.jacfwd(fgrad.grad(damped_unrolled), argnums=1)(x, a)
    for hess in (fgrad.hessian, lambda f: fgrad.jacrev(fgrad.jacrev(f)), lambda f: fgrad.jacrev(fgrad.jacfwd(f))):
        np.testing.assert_allclose(fgrad.jit(hess(damped))(x, a), want_xx, rtol=1e-10, atol=1e-12)
    got_xa = fgrad.jit(fgrad.jacrev(fgrad.grad(damped), argnums=1))(x, a)
    np.testing.assert_allclose(got_xa, want_xa, rtol=1e-10, atol=1e-12)
    # and against finite differences of the gradient, which no loop shares
    fd = _central_differences(lambda x: fgrad.grad(damped_unrolled)(x, a), x)
    np.testing.assert_allclose(want_xx, fd, rtol=1e-5, atol=1e-6)


def test_vmap_and_jit_of_second_derivatives_where_each_example_stops_at_its_own_step():
    a = np.array([2.0, 9.0, 0.3])
    want = -0.25 * a ** -1.5
    g2 = fgrad.grad(fgrad.grad(newton_sqrt))
    for f in (fgrad.vmap(g2), fgrad.jit(fgrad.vmap(g2)), fgrad.vmap(fgrad.jit(g2)),
              fgrad.jit(fgrad.grad(lambda a: fnp.sum(fgrad.vmap(fgrad.grad(newton_sqrt))(a))))):
        np.testing.assert_allclose(f(a), want, rtol=1e-9)


def test_forward_over_reverse_and_linearize_of_a_jitted_gradient():
    x, a = np.array([0.9, -1.4]), np.array([1.1, 0.7])
    grad = fgrad.jit(fgrad.grad(damped))
    t = np.array([0.3, -0.2])
    _, got = fgrad.jvp(lambda x: grad(x, a), (x,), (t,))
    np.testing.assert_allclose(got, fgrad.hessian(damped_unrolled)(x, a) @ t, rtol=1e-10)
    _, lin = fgrad.linearize(lambda x: grad(x, a), x)
    np.testing.assert_allclose(fgrad.jit(lin)(t), got, rtol=1e-12)


def test_a_loop_that_runs_no_step_has_zero_higher_derivatives_of_its_body():
    f = lambda x: lax.while_loop(lambda v: v > 10.0, lambda v: v * v, x) * 3.0  # noqa: E731
    assert fgrad.jit(fgrad.grad(fgrad.grad(f)))(1.5) == 0.0
    assert fgrad.jit(fgrad.grad(f))(1.5) == 3.0


def test_the_jaxpr_of_a_second_derivative_does_not_unroll_the_loop():
    closed = fgrad.make_jaxpr(fgrad.grad(fgrad.grad(newton_sqrt)))(2.0)
    names = [e.primitive.name for e in closed.eqns]
    assert names.count("while_tape") >= 1 and names.count("tape_scan") >= 2
    assert len(closed.eqns) < 60


def test_a_scan_whose_body_holds_a_while_loop_to_second_order_eagerly_and_under_jit():
    # The scan stacks each step's tape; its linear part runs the tape loops per step.
    def f(x, xs):
        def step(c, a):
            r = newton_sqrt(a)
            return c * r + fnp.sin(c), r

        c, ys = lax.scan(step, x, xs)
        return c + fnp.sum(ys ** 2)

    def unrolled(x, xs):
        c, ys = x, []
        for a in xs:
            c = c * fnp.sqrt(a) + fnp.sin(c)
            ys.append(fnp.sqrt(a))
        return c + fnp.sum(fnp.stack(ys) ** 2)

    x, xs = 0.3, np.array([2.0, 3.0, 0.5])
    for transform in (fgrad.grad, fgrad.hessian):
        for argnums in (0, 1):
            want = transform(unrolled, argnums=argnums)(x, xs)
            np.testing.assert_allclose(transform(f, argnums=argnums)(x, xs), want, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(fgrad.jit(transform(f, argnums=argnums))(x, xs), want, rtol=1e-10,
                                       atol=1e-12)
