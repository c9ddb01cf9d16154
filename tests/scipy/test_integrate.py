"""fgrad.scipy.integrate: trapezoid and cumulative_trapezoid against SciPy;
odeint against closed forms (exponential decay, harmonic oscillator, logistic)
and SciPy's DOP853 at tight tolerances; its derivatives in y0, t, args and a
closed-over value against closed forms, central finite differences and the
derivative of a fixed-step RK4 solver written here; reverse mode by the adjoint
system (no tape of the forward steps); forward mode, jit and vmap; and its
error messages."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy.integrate import cumulative_trapezoid, odeint, trapezoid
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

scipy_integrate = pytest.importorskip("scipy.integrate")

BATCH_CASES = {
    "scipy.integrate.cumulative_trapezoid": (lambda y, x: cumulative_trapezoid(y, x, axis=0), [(4, 2), (4,)],
                                             "positive"),
}


# --- trapezoid, cumulative_trapezoid ----------------------------------------------------------


@settings(max_examples=15)
@given(shape=st.sampled_from([(2,), (5,), (3, 4), (2, 3, 4)]), seed=seeds, data=st.data(),
       with_x=st.sampled_from([None, "1d", "nd", "broadcast"]), initial=st.sampled_from([None, 0]))
def test_trapezoids_match_scipy(shape, seed, data, with_x, initial):
    y = values(shape, "real", seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = None
    if with_x == "1d":
        x = np.sort(values((shape[axis],), "real", seed + 1))
    elif with_x == "nd":
        x = np.sort(values(shape, "real", seed + 1), axis=axis)
    elif with_x == "broadcast":  # as many axes as y, of length 1 but along `axis`
        x = np.sort(values(tuple(n if k == axis % len(shape) else 1 for k, n in enumerate(shape)), "real",
                           seed + 1), axis=axis)
    for ours, theirs, kw in ((trapezoid, scipy_integrate.trapezoid, {}),
                             (cumulative_trapezoid, scipy_integrate.cumulative_trapezoid, {"initial": initial})):
        expected = theirs(y, x, dx=0.5, axis=axis, **kw)
        np.testing.assert_allclose(ours(y, x, dx=0.5, axis=axis, **kw), expected, rtol=1e-13, atol=1e-14)
        staged = fgrad.jit(lambda y: ours(y, x, dx=0.5, axis=axis, **kw))(y)
        np.testing.assert_allclose(staged, expected, rtol=1e-13, atol=1e-14)
        assert np.shape(staged) == np.shape(expected)
    check_grads(lambda y, x: cumulative_trapezoid(y, x, axis=axis, initial=initial), (y, x), order=2)
    check_grads(lambda y, x: trapezoid(y, x, axis=axis), (y, x), order=2)


def test_cumulative_trapezoid_vmap_and_errors():
    y, x = values((3, 5), "real", 0), np.linspace(0.0, 1.0, 5)
    got = fgrad.vmap(lambda y: cumulative_trapezoid(y, x, initial=0))(y)
    np.testing.assert_allclose(got, [scipy_integrate.cumulative_trapezoid(r, x, initial=0) for r in y])
    traced = fgrad.jit(lambda y, **kw: cumulative_trapezoid(y, **kw), static_argnames=("x", "initial"))
    with pytest.raises(ValueError, match="`initial` must be `None` or `0`"):
        fgrad.jit(lambda y: cumulative_trapezoid(y, initial=1.0))(y)
    with pytest.raises(ValueError, match="length of x along axis must be the same as y"):
        fgrad.jit(lambda y: cumulative_trapezoid(y, x[:3]))(y)
    with pytest.raises(ValueError, match="shape of x must be 1-D or the same as y"):
        fgrad.jit(lambda y: cumulative_trapezoid(y, np.ones((2, 3, 5))))(y)
    with pytest.raises(ValueError, match="At least one point"):
        traced(np.ones((2, 0)))
    for f in (trapezoid, cumulative_trapezoid, fgrad.jit(trapezoid), fgrad.jit(cumulative_trapezoid)):
        with pytest.raises(IndexError):  # a 0-d y has no axis to integrate along, as in SciPy
            f(np.float64(1.0))


# --- odeint: values ------------------------------------------------------------------------------


def decay(y, t, k):
    return -k * y


def oscillator(state, t, w):
    return {"x": state["v"], "v": -(w**2) * state["x"]}


def logistic(y, t, r, capacity):
    return r * y * (1.0 - y / capacity)


def driven_pendulum(y, t, m, g, a):
    return fnp.stack([y[1], -m * y[1] - g * fnp.sin(y[0]) + a * fnp.cos(2.0 * t)])


T = np.linspace(0.0, 2.0, 6)


def test_exponential_decay():
    y0 = np.array([1.0, -2.0, 0.5])
    ys = odeint(decay, y0, T, 1.3)
    assert ys.shape == (6, 3) and ys.dtype == np.float64
    np.testing.assert_allclose(ys, y0 * np.exp(-1.3 * T)[:, None], rtol=1e-7, atol=1e-12)
    np.testing.assert_array_equal(ys[0], y0)


def test_harmonic_oscillator_with_a_pytree_state():
    ys = odeint(oscillator, {"x": 1.0, "v": 0.5}, T, 3.0)
    assert set(ys) == {"x", "v"} and ys["x"].shape == (6,)
    np.testing.assert_allclose(ys["x"], np.cos(3 * T) + 0.5 / 3 * np.sin(3 * T), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ys["v"], -3 * np.sin(3 * T) + 0.5 * np.cos(3 * T), rtol=1e-6, atol=1e-7)


def test_logistic():
    t = np.linspace(0.0, 5.0, 11)
    exact = 2.0 / (1.0 + (2.0 / 0.1 - 1.0) * np.exp(-1.5 * t))
    np.testing.assert_allclose(odeint(logistic, 0.1, t, 1.5, 2.0), exact, rtol=1e-6)
    np.testing.assert_allclose(odeint(logistic, 0.1, t, 1.5, 2.0, rtol=1e-12, atol=1e-12), exact, rtol=1e-10)


def test_matches_scipy_dop853():
    y0, t, args = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 3.0, 7), (0.25, 9.8, 0.7)
    ref = scipy_integrate.solve_ivp(lambda s, y: np.asarray(driven_pendulum(y, s, *args)), (0.0, 3.0), y0,
                                    method="DOP853", t_eval=t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(odeint(driven_pendulum, y0, t, *args), ref.y.T, rtol=1e-6, atol=1e-7)
    tight = odeint(driven_pendulum, y0, t, *args, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(tight, ref.y.T, rtol=1e-9, atol=1e-9)


def test_hmax_mxstep_and_a_single_time():
    coarse = odeint(decay, 1.0, T, 1.0)
    np.testing.assert_allclose(odeint(decay, 1.0, T, 1.0, hmax=0.01), coarse, rtol=1e-7)
    with pytest.warns(RuntimeWarning, match=r"stopped before t=0.4 \(mxstep=2.0 steps taken"):
        odeint(decay, 1.0, T, 1.0, mxstep=2)
    np.testing.assert_array_equal(odeint(decay, np.array([2.0]), [0.5], 1.0), [[2.0]])
    assert fgrad.grad(lambda y0: odeint(decay, y0, [0.5], 1.0)[0])(2.0) == 1.0
    # Integer states and times are integrated as float64, as in JAX.
    np.testing.assert_allclose(odeint(decay, 1, np.arange(3), 1.0), np.exp(-np.arange(3.0)), rtol=1e-7)


def test_float32_stays_float32():
    t = np.linspace(0.0, 2.0, 5, dtype=np.float32)
    y0 = np.array([1.0, 2.0], np.float32)
    expected = y0 * np.exp(-2.0 * t)[:, None]
    loss = lambda y0: fnp.sum(odeint(decay, y0, t, 2.0, rtol=1e-5, atol=1e-6)[-1])  # noqa: E731
    for ys in (odeint(decay, y0, t, 2.0), fgrad.jit(lambda y0: odeint(decay, y0, t, 2.0))(y0)):
        assert ys.dtype == np.float32
        np.testing.assert_allclose(ys, expected, rtol=1e-5)
    for g in (fgrad.grad(loss)(y0), fgrad.jvp(lambda y0: odeint(decay, y0, t, 2.0), (y0,), (y0,))[1][-1] / y0):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, [np.exp(-4.0)] * 2, rtol=1e-4)


def test_python_control_flow_in_func_runs_eagerly():
    def clipped(y, t):
        return -y if float(y[0]) > 0.5 else -0.5 * y

    np.testing.assert_allclose(odeint(clipped, np.array([1.0]), [0.0, np.log(2.0)])[-1], [0.5], rtol=1e-6)


# --- odeint: derivatives ------------------------------------------------------------------------


def rk4(func, y0, ts, *args, steps=60):
    """A fixed-step RK4 solver on fgrad.numpy: differentiable through its steps."""
    y, ys = y0, [y0]
    for i in range(len(ts) - 1):
        h = (ts[i + 1] - ts[i]) / steps
        for k in range(steps):
            t = ts[i] + k * h
            k1 = func(y, t, *args)
            k2 = func(y + h / 2 * k1, t + h / 2, *args)
            k3 = func(y + h / 2 * k2, t + h / 2, *args)
            k4 = func(y + h * k3, t + h, *args)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return fnp.stack(ys)


def pendulum_loss(solver):
    weights = np.arange(1.0, 9.0).reshape(4, 2)
    return lambda y0, t, m, g, a: fnp.sum(weights * fnp.sin(solver(driven_pendulum, y0, t, m, g, a)))


PENDULUM = (np.array([np.pi - 0.3, 0.2]), np.array([0.0, 0.4, 1.1, 1.5]), 0.25, 9.8, 0.7)


def test_gradients_match_a_differentiated_fixed_step_solver():
    argnums = (0, 1, 2, 3, 4)
    adjoint = fgrad.grad(pendulum_loss(odeint), argnums)(*PENDULUM)
    fixed = fgrad.grad(pendulum_loss(rk4), argnums)(*PENDULUM)
    for a, b in zip(adjoint, fixed):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)


def test_gradients_match_central_differences():
    loss = pendulum_loss(lambda *a: odeint(*a, rtol=1e-11, atol=1e-11))
    grads = fgrad.grad(loss, (0, 1, 2, 3, 4))(*PENDULUM)
    eps = 1e-5
    for i, g in enumerate(grads):
        x = np.asarray(PENDULUM[i], np.float64)
        fd = np.zeros(x.shape)
        for j in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[j] = eps
            hi, lo = list(PENDULUM), list(PENDULUM)
            hi[i], lo[i] = x + e, x - e
            fd[j] = (loss(*hi) - loss(*lo)) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_gradients_match_closed_forms():
    y0, k = np.array([1.0, 2.0]), 1.3
    dy0, dt, dk = fgrad.grad(lambda y0, t, k: fnp.sum(odeint(decay, y0, t, k)), (0, 1, 2))(y0, T, k)
    e = np.exp(-k * T)
    np.testing.assert_allclose(dy0, [e.sum()] * 2, rtol=1e-7)
    np.testing.assert_allclose(dk, -np.sum(T * e) * y0.sum(), rtol=1e-6)
    # Moving t_i (i > 0) moves y(t_i) by its derivative; moving t0 shifts them all back.
    np.testing.assert_allclose(dt[1:], -k * e[1:] * y0.sum(), rtol=1e-6)
    np.testing.assert_allclose(dt[0], k * e[1:].sum() * y0.sum(), rtol=1e-6)
    # args may be pytrees, with integer leaves (which get no cotangent).
    params = {"k": 1.0, "c": np.array([0.0, 3.0])}
    g = fgrad.grad(lambda p, n: odeint(lambda y, t, p, n: -p["k"] * y * n / 2 + p["c"][0], 1.0, T, p, n)[-1])(
        params, 2)
    np.testing.assert_allclose(g["k"], -2.0 * np.exp(-2.0), rtol=1e-6)
    np.testing.assert_allclose(g["c"], [1.0 - np.exp(-2.0), 0.0], rtol=1e-7)


def test_pytree_state_derivatives():
    def loss(x0, v0, w):
        ys = odeint(oscillator, {"x": x0, "v": v0}, T, w)
        return ys["x"][-1] + 0.5 * ys["v"][-1]

    grads = fgrad.grad(loss, (0, 1, 2))(1.0, 0.5, 3.0)
    c, s = np.cos(6.0), np.sin(6.0)
    np.testing.assert_allclose(grads[:2], [c - 1.5 * s, s / 3 + 0.5 * c], rtol=1e-6)
    check_grads(loss, (1.0, 0.5, 3.0), order=1, atol=1e-5, rtol=1e-5)


def test_a_closed_over_value_gets_its_adjoint():
    def loss(k, scale):
        def f(y, t):  # closes over k (traced) and a constant array
            return -k * y * np.array([1.0, 2.0])

        return fnp.sum(odeint(f, np.array([1.0, 1.0]), T)[-1]) * scale

    dk, dscale = fgrad.grad(loss, (0, 1))(0.7, 2.0)
    np.testing.assert_allclose(dk, -2.0 * 2.0 * (np.exp(-1.4) + 2 * np.exp(-2.8)), rtol=1e-6)
    np.testing.assert_allclose(dscale, np.exp(-1.4) + np.exp(-2.8), rtol=1e-7)
    # Closed over under jit and together with args of its own.
    both = fgrad.jit(fgrad.grad(lambda k, a: fnp.sum(odeint(lambda y, t, a: -k * a * y, 1.0, T, a)), (0, 1)))
    np.testing.assert_allclose(both(0.5, 2.0), [-2.0 * np.sum(T * np.exp(-T)), -0.5 * np.sum(T * np.exp(-T))],
                               rtol=1e-6)


def test_reverse_mode_is_the_adjoint_method():
    """The backward pass solves the adjoint system: no tape of the forward
    pass's steps (as differentiating the solver's while loops would keep)."""
    text = str(fgrad.make_jaxpr(fgrad.grad(lambda k: odeint(decay, 1.0, T, k)[-1]))(1.0))
    assert "while" in text and "while_tape" not in text and "tape_scan" not in text


def test_forward_mode_matches_finite_differences():
    y0, t, m, g, a = PENDULUM
    f = lambda y0, t, m: odeint(driven_pendulum, y0, t, m, g, a, rtol=1e-10, atol=1e-10)  # noqa: E731
    check_grads(f, (y0, t, m), order=1, modes=("fwd",), atol=1e-6, rtol=1e-6)
    primal, tangent = fgrad.jvp(f, (y0, t, m), (np.array([1.0, 0.0]), np.zeros(4), 0.0))
    np.testing.assert_array_equal(primal, f(y0, t, m))  # the tangents change no step
    np.testing.assert_allclose(fgrad.jacfwd(lambda m: f(y0, t, m))(m), fgrad.jacrev(lambda m: f(y0, t, m))(m),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tangent, fgrad.jacrev(lambda y0: f(y0, t, m))(y0)[..., 0], rtol=1e-6, atol=1e-8)


def test_second_derivatives():
    f = lambda k: odeint(decay, 1.0, np.array([0.0, 2.0]), k)[-1]  # noqa: E731
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(f))(0.5), 4.0 * np.exp(-1.0), rtol=1e-6)
    np.testing.assert_allclose(fgrad.hessian(f)(0.5), 4.0 * np.exp(-1.0), rtol=1e-6)


# --- odeint: jit and vmap ------------------------------------------------------------------------


def test_jit_matches_eager():
    y0, t, m, g, a = PENDULUM
    eager = odeint(driven_pendulum, y0, t, m, g, a)
    staged = fgrad.jit(lambda y0, t, m: odeint(driven_pendulum, y0, t, m, g, a))
    np.testing.assert_allclose(staged(y0, t, m), eager, rtol=1e-13, atol=1e-14)
    loss = pendulum_loss(odeint)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss))(*PENDULUM), fgrad.grad(loss)(*PENDULUM), rtol=1e-12)
    np.testing.assert_allclose(fgrad.grad(fgrad.jit(loss))(*PENDULUM), fgrad.grad(loss)(*PENDULUM), rtol=1e-12)
    by_m = lambda m: odeint(driven_pendulum, y0, t, m, g, a)  # noqa: E731
    np.testing.assert_allclose(fgrad.jit(fgrad.jacfwd(by_m))(m), fgrad.jacfwd(by_m)(m), rtol=1e-12, atol=1e-14)


def test_vmap_matches_a_loop():
    y0s = np.array([[1.0, 0.0], [0.5, -0.5], [2.0, 1.0]])
    ks = np.array([0.5, 1.0, 3.0])  # different stiffness: each example takes its own steps

    def f(y0, k):
        return odeint(lambda y, t, k: fnp.stack([y[1], -k * y[0]]), y0, T, k)

    expected = np.stack([f(y0, k) for y0, k in zip(y0s, ks)])
    np.testing.assert_allclose(fgrad.vmap(f)(y0s, ks), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(f))(y0s, ks), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fgrad.vmap(f, (0, None))(y0s, 2.0), np.stack([f(y, 2.0) for y in y0s]),
                               rtol=1e-12, atol=1e-14)
    closure = lambda k: odeint(lambda y, t: -k * y, 1.0, T)[-1]  # noqa: E731
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(closure))(ks), -2.0 * np.exp(-2.0 * ks), rtol=1e-6)
    loss = lambda y0, k: fnp.sum(f(y0, k)[-1])  # noqa: E731
    grads = fgrad.vmap(fgrad.grad(loss, (0, 1)))(y0s, ks)
    for i in range(3):
        for got, want in zip(grads, fgrad.grad(loss, (0, 1))(y0s[i], ks[i])):
            np.testing.assert_allclose(got[i], want, rtol=1e-9, atol=1e-12)


# --- odeint: errors ------------------------------------------------------------------------------


def test_times_must_be_increasing_and_one_dimensional():
    with pytest.raises(ValueError, match=r"strictly increasing, but got \[0. 1. 1.\]"):
        odeint(decay, 1.0, [0.0, 1.0, 1.0], 1.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        fgrad.grad(lambda t: odeint(decay, 1.0, t, 1.0)[-1])(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"1-d array of at least one time, but it has shape \(2, 2\)"):
        odeint(decay, 1.0, np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match=r"shape \(0,\)"):
        odeint(decay, 1.0, [], 1.0)
    with pytest.raises(TypeError, match="t must hold real times"):
        odeint(decay, 1.0, np.array([0j, 1j]), 1.0)


def test_bad_initial_states():
    with pytest.raises(TypeError, match="leaf 0 of y0 is .*not an array of real numbers"):
        odeint(decay, "one", T, 1.0)
    with pytest.raises(TypeError, match="complex states are not supported"):
        odeint(decay, 1.0 + 1j, T, 1.0)
    with pytest.raises(ValueError, match="y0 has no arrays in it"):
        odeint(decay, {}, T, 1.0)


def test_func_must_return_the_structure_of_y0():
    with pytest.raises(TypeError, match="must return the time derivative of y with y0's structure"):
        odeint(lambda y, t: [-y], 1.0, T)
    with pytest.raises(ValueError, match=r"shape \(2,\) for leaf 0 of y, whose shape is \(\)"):
        fgrad.grad(lambda k: odeint(lambda y, t: -k * y * np.ones(2), 1.0, T)[-1])(1.0)


def test_misuse_under_transforms():
    with pytest.raises(ValueError, match="hmax must be positive, but it is 0"):
        odeint(decay, 1.0, T, 1.0, hmax=0.0)
    with pytest.raises(ValueError, match="mxstep must be at least 1, but it is 0"):
        odeint(decay, 1.0, T, 1.0, mxstep=0)
    with pytest.raises(ValueError, match="atol must be at least 0, but it is -1"):
        odeint(decay, 1.0, T, 1.0, atol=-1.0)
    with pytest.raises(TypeError, match="rtol must be a Python number"):
        fgrad.grad(lambda r: odeint(decay, 1.0, T, 1.0, rtol=r)[-1])(1e-8)
    with pytest.raises(fgrad.ConcretizationTypeError, match="without Python control flow"):
        fgrad.grad(lambda k: odeint(lambda y, t: -y if k > 0 else y, 1.0, T)[-1])(1.0)
    # Forward mode through a jit inside it meets the custom_vjp: use reverse mode.
    with pytest.raises(TypeError, match="forward-mode differentiation .* of odeint .* Use grad, vjp or jacrev"):
        fgrad.jvp(fgrad.jit(lambda k: odeint(decay, 1.0, T, k)), (1.0,), (1.0,))
