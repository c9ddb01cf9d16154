"""Reverse mode of scan as a loop: gradients equal the same loop written in Python
(eagerly, under jit, vmap and to second order), the jaxpr does not grow with the
number of steps, and `checkpoints=k` gives the same gradients (more of it in
test_scan_checkpoints.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads


def rnn_parts(steps, width, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((width, width)) / np.sqrt(width), rng.standard_normal((2, width)),
            rng.standard_normal((steps, 2)))


def scan_loss(W, U, xs, **kwargs):
    def cell(h, x):
        h = fnp.tanh(h @ W + x @ U)
        return h, fnp.sum(h * h)

    h, ys = lax.scan(cell, fnp.zeros(W.shape[0]), xs, **kwargs)
    return fnp.sum(h) + fnp.sum(ys * fnp.cos(fnp.arange(ys.shape[0])))


def loop_loss(W, U, xs, reverse=False):
    h, ys = fnp.zeros(W.shape[0]), []
    for x in (xs[::-1] if reverse else xs):
        h = fnp.tanh(h @ W + x @ U)
        ys.append(fnp.sum(h * h))
    ys = fnp.stack(ys[::-1] if reverse else ys)
    return fnp.sum(h) + fnp.sum(ys * fnp.cos(fnp.arange(ys.shape[0])))


@given(steps=st.integers(1, 12), width=st.integers(1, 4), reverse=st.booleans(),
       checkpoints=st.sampled_from([None, 1, 2, 3, 5]))
@settings(max_examples=25, deadline=None)
def test_gradient_equals_the_python_loops(steps, width, reverse, checkpoints):
    W, U, xs = rnn_parts(steps, width)
    want = fgrad.grad(loop_loss, argnums=(0, 1))(W, U, xs, reverse)
    grads = fgrad.grad(lambda W, U: scan_loss(W, U, xs, reverse=reverse, checkpoints=checkpoints), argnums=(0, 1))
    for got in (grads(W, U), fgrad.jit(grads)(W, U)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("checkpoints", [None, 3])
def test_second_order_forward_over_reverse_and_reverse_over_reverse(checkpoints):
    W, U, xs = rnn_parts(7, 3)
    check_grads(lambda W: scan_loss(W, U, xs, checkpoints=checkpoints), (W,), order=2, modes=("rev",))
    h = fgrad.hessian(lambda W: scan_loss(W, U, xs, checkpoints=checkpoints))(W)
    want = fgrad.hessian(lambda W: loop_loss(W, U, xs))(W)
    np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-11)


def test_vmap_of_the_gradient_equals_a_python_loop_over_examples():
    W, U, xs = rnn_parts(6, 3)
    batch = np.stack([xs, 2 * xs, -xs])
    got = fgrad.vmap(fgrad.grad(lambda W, xs: scan_loss(W, U, xs)), in_axes=(None, 0))(W, batch)
    for b in range(3):
        np.testing.assert_allclose(got[b], fgrad.grad(lambda W: loop_loss(W, U, batch[b]))(W), rtol=1e-10)


def test_the_gradients_jaxpr_is_the_same_size_at_any_length():
    sizes = []
    for steps in (10, 1000):
        W, U, xs = rnn_parts(steps, 4)
        sizes.append(len(fgrad.make_jaxpr(fgrad.grad(lambda W: scan_loss(W, U, xs)))(W).jaxpr.eqns))
    assert sizes[0] == sizes[1] < 200


def test_a_loop_constants_residuals_are_computed_once_not_stacked():
    W, U, xs = rnn_parts(50, 4)
    jaxpr = fgrad.make_jaxpr(fgrad.grad(lambda W: scan_loss(W, U, xs)))(W)
    forward = next(e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan")
    stacked = [v.aval.shape for v in forward.outvars[2:]]  # after the carry and the ys: the residuals
    assert all(shape[0] == 50 and shape[1:] in ((4,), ()) for shape in stacked), stacked  # no (50, 4, 4): W


def test_grad_of_jit_keeps_the_jit_boundary_with_control_flow_inside():
    from fgrad.lax import cond

    W, U, xs = rnn_parts(5, 3)
    f = fgrad.jit(lambda W, x: cond(fnp.sum(x) > 0, fnp.sin, fnp.cos, scan_loss(W, U, xs)) * x)
    for x in (1.0, -1.0):
        names = [e.primitive.name for e in fgrad.make_jaxpr(fgrad.grad(f))(W, x).jaxpr.eqns]
        assert names == ["jit", "jit"], names  # the known part now, the transposed linear part
        plain = lambda W: (fnp.sin if x > 0 else fnp.cos)(loop_loss(W, U, xs)) * x  # noqa: E731
        np.testing.assert_allclose(fgrad.grad(f)(W, x), fgrad.grad(plain)(W), rtol=1e-12)


def test_a_body_with_an_effect_runs_it_once_per_step_in_reverse_mode(capsys):
    W, U, xs = rnn_parts(4, 2)

    def loss(W):
        def cell(h, x):
            fgrad.debug.print("step")
            return fnp.tanh(h @ W + x @ U), None

        return fnp.sum(lax.scan(cell, fnp.zeros(2), xs)[0])

    g = fgrad.grad(loss)(W)
    assert capsys.readouterr().out.split() == ["step"] * 4

    def loop(W):
        h = fnp.zeros(2)
        for x in xs:
            h = fnp.tanh(h @ W + x @ U)
        return fnp.sum(h)

    np.testing.assert_allclose(g, fgrad.grad(loop)(W), rtol=1e-14)


def test_jit_moves_the_work_that_needs_no_carry_out_of_the_loop():
    W, U, xs = rnn_parts(30, 4)

    def run(W, U, xs, reverse):
        return lax.scan(lambda h, x: (fnp.tanh(h @ W + x @ U), fnp.sin(x) * 2.0), fnp.zeros(4), xs,
                        reverse=reverse)

    for reverse in (False, True):
        jitted = fgrad.jit(lambda W, U, xs: run(W, U, xs, reverse))
        optimized = jitted.lower(W, U, xs).jaxpr.jaxpr
        outside = [(e.primitive.name, e.outvars[0].aval.shape) for e in optimized.eqns]
        assert ("matmul", (30, 4)) in outside and ("sin", (30, 2)) in outside, outside  # every step's at once
        for got, want in zip(jitted(W, U, xs), run(W, U, xs, reverse), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
        g = fgrad.jit(fgrad.grad(lambda U: fnp.sum(run(W, U, xs, reverse)[0])))
        np.testing.assert_allclose(g(U), fgrad.grad(lambda U: fnp.sum(run(W, U, xs, reverse)[0]))(U), rtol=1e-12)


def test_jit_moves_the_work_only_the_ys_need_after_the_loop():
    # A tanh RNN's reverse mode keeps 1 - h**2 for each step: computed after the
    # loop on the stacked h, two NumPy calls less per step.
    W, U, xs = rnn_parts(30, 4)

    def run(h0, W, U, xs, reverse):
        return lax.scan(lambda h, x: (fnp.tanh(h @ W + x @ U), fnp.cos(h) * 2.0 - fnp.sum(h)), h0, xs,
                        reverse=reverse)

    h0 = np.linspace(-0.5, 0.5, 4)
    for reverse in (False, True):
        jitted = fgrad.jit(lambda h0, W, U, xs: run(h0, W, U, xs, reverse))
        optimized = jitted.lower(h0, W, U, xs).jaxpr.jaxpr
        outside = [(e.primitive.name, e.outvars[0].aval.shape) for e in optimized.eqns]
        assert ("cos", (30, 4)) in outside, outside  # every step's at once, after the loop
        (scan,) = [e for e in optimized.eqns if e.primitive.name == "scan"]
        assert "cos" not in [e.primitive.name for e in scan.params["jaxpr"].jaxpr.eqns]
        for got, want in zip(jitted(h0, W, U, xs), run(h0, W, U, xs, reverse), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
        loss = lambda W: fnp.sum(run(h0, W, U, xs, reverse)[0] ** 2)  # noqa: E731
        grad_jaxpr = fgrad.jit(fgrad.grad(loss)).lower(W).jaxpr.jaxpr
        bodies = [[b.primitive.name for b in e.params["jaxpr"].jaxpr.eqns]
                  for e in grad_jaxpr.eqns if e.primitive.name == "scan"]
        forward = [names for names in bodies if "tanh" in names]
        assert forward and all("square" not in names for names in forward), bodies
        assert "square" in [e.primitive.name for e in grad_jaxpr.eqns]  # tanh's 1 - h**2, for all steps at once
        np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss))(W), fgrad.grad(loss)(W), rtol=1e-12)


def test_work_whose_results_would_take_much_more_memory_than_the_xs_stays_in_the_loop():
    xs = np.linspace(0.0, 1.0, 20 * 30).reshape(20, 30)
    f = fgrad.jit(lambda xs: lax.scan(lambda c, x: (c + fnp.sum(fnp.outer(x, x) * c), None), 1.0, xs)[0])
    from fgrad.compiler import optimize_jaxpr

    optimized = optimize_jaxpr(fgrad.make_jaxpr(f)(xs))
    shapes = [v.aval.shape for e in optimized.jaxpr.eqns for v in e.outvars]
    assert (20, 30, 30) not in shapes and "scan" in [e.primitive.name for e in optimized.jaxpr.eqns]  # stays
    want = 1.0
    for x in xs:
        want = want + np.sum(np.outer(x, x) * want)
    np.testing.assert_allclose(f(xs), want, rtol=1e-12)


@pytest.mark.parametrize("length", [0, 1, 5])
@pytest.mark.parametrize("reverse", [False, True])
def test_jits_ys_of_every_kind_equal_a_python_loop(length, reverse):
    # jit writes each y into its row of the stacked result: computed there, copied there, or (the
    # carry as the step found it) the rows of the carry's new value shifted by one step.
    W = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    xs = np.linspace(0.0, 2.0, 3 * length).reshape(length, 3)

    def step(carry, x):
        h, k = carry
        new = fnp.tanh(h @ W + x)
        s = fnp.sum(new)
        return (new, k + 1), (new, h, x, W[0], new, s, s * 2.0, k * 2, fnp.reshape(new, (3, 1)))

    def loop(h, k):
        rows = []
        for x in (xs[::-1] if reverse else xs):
            new = np.tanh(h @ W + x)
            rows.append((new, h, x, W[0], new, new.sum(), new.sum() * 2.0, k * 2, new.reshape(3, 1)))
            h, k = new, k + 1
        if reverse:
            rows.reverse()
        kinds = [(3,), (3,), (3,), (3,), (3,), (), (), (), (3, 1)]
        dtypes = [np.float64] * 7 + [np.int64, np.float64]
        stacked = [np.array([r[i] for r in rows], dt).reshape(length, *kind)
                   for i, (kind, dt) in enumerate(zip(kinds, dtypes))]
        return (h, k), tuple(stacked)

    h0 = np.array([0.5, -0.25, 1.0])
    run = fgrad.jit(lambda h0: lax.scan(step, (h0, np.int64(3)), xs, reverse=reverse))
    (h, k), ys = run(h0)
    (want_h, want_k), want_ys = loop(h0, 3)
    np.testing.assert_allclose(h, want_h, rtol=1e-15)
    assert int(k) == want_k
    for got, want in zip(ys, want_ys, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-15)
    if length:  # the carry returned is the caller's own, not a view of the ys
        h += 1.0
        np.testing.assert_allclose(ys[0][0 if reverse else -1], want_h, rtol=1e-15)
