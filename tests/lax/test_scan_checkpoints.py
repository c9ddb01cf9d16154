"""`scan(..., checkpoints=k)` and `fori_loop(..., checkpoints=k)`: reverse mode on the
binomial schedule gives the gradients of the same loop written in Python (eagerly
and under jit, both directions, pytrees, to second order, under vmap and jvp), keeps
O(k) carries instead of O(length) steps' residuals, and its jaxpr does not grow with
the number of steps."""

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.ir.jaxpr import ClosedJaxpr, sub_jaxprs
from fgrad.lax.scan import _repetitions, _schedule, _stretch
from fgrad.test_util import check_grads


def parts(steps, width=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((width, width)) / np.sqrt(width), rng.standard_normal((2, width)),
            rng.standard_normal((steps, 2)))


def cell(W, U):
    def step(c, x):
        h = fnp.tanh(c["h"] @ W + x @ U) * c["s"]
        return {"h": h, "s": c["s"] * 0.9 + 0.1 * fnp.sum(h)}, (fnp.sum(h * h), h[:2])

    return step


def readout(c, ys1, ys2):
    return fnp.sum(c["h"]) + c["s"] + fnp.sum(ys1 * fnp.cos(fnp.arange(ys1.shape[0]))) + fnp.sum(ys2 ** 3)


def scan_loss(W, U, xs, reverse=False, checkpoints=None):
    init = {"h": fnp.zeros(W.shape[0]), "s": fnp.ones(())}
    c, (ys1, ys2) = lax.scan(cell(W, U), init, xs, reverse=reverse, checkpoints=checkpoints)
    return readout(c, ys1, ys2)


def loop_loss(W, U, xs, reverse=False):
    c, ys1, ys2 = {"h": fnp.zeros(W.shape[0]), "s": fnp.ones(())}, [], []
    for x in (xs[::-1] if reverse else xs):
        c, (y1, y2) = cell(W, U)(c, x)
        ys1.append(y1)
        ys2.append(y2)
    if reverse:
        ys1, ys2 = ys1[::-1], ys2[::-1]
    ys1 = fnp.stack(ys1) if ys1 else fnp.zeros(0)
    ys2 = fnp.stack(ys2) if ys2 else fnp.zeros((0, 2))
    return readout(c, ys1, ys2)


@given(steps=st.integers(0, 40), k=st.integers(1, 8), reverse=st.booleans())
@settings(max_examples=30, deadline=None)
def test_gradients_equal_the_python_loops(steps, k, reverse):
    W, U, xs = parts(steps)
    want = fgrad.grad(loop_loss, argnums=(0, 1, 2))(W, U, xs, reverse)
    grads = fgrad.grad(lambda W, U, xs: scan_loss(W, U, xs, reverse, k), argnums=(0, 1, 2))
    for got in (grads(W, U, xs), fgrad.jit(grads)(W, U, xs)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_fori_loop_gradients_equal_the_python_loops(k):
    W, U, xs = parts(23)

    def loss(W, checkpoints):
        step = lambda i, h: fnp.tanh(h @ W + fnp.take(xs, i, axis=0) @ U)  # noqa: E731
        return fnp.sum(lax.fori_loop(3, 23, step, fnp.zeros(3), checkpoints=checkpoints) ** 2)

    def loop(W):
        h = fnp.zeros(3)
        for i in range(3, 23):
            h = fnp.tanh(h @ W + xs[i] @ U)
        return fnp.sum(h ** 2)

    want = fgrad.grad(loop)(W)
    np.testing.assert_allclose(fgrad.grad(loss)(W, k), want, rtol=1e-11)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss), static_argnums=1)(W, k), want, rtol=1e-11)


@pytest.mark.parametrize("k", [2, 3])
def test_second_order_equals_the_python_loops(k):
    W, U, xs = parts(17)  # k = 2 nests 3 levels of checkpoints here
    loss = lambda W: scan_loss(W, U, xs, checkpoints=k)  # noqa: E731
    want = fgrad.hessian(lambda W: loop_loss(W, U, xs))(W)
    np.testing.assert_allclose(fgrad.hessian(loss)(W), want, rtol=1e-9, atol=1e-11)  # forward over reverse
    rev_rev = fgrad.jacrev(fgrad.grad(loss))(W)
    np.testing.assert_allclose(rev_rev, want, rtol=1e-9, atol=1e-11)
    check_grads(loss, (W,), order=2, modes=("rev",))


def test_forward_mode_and_vmap_still_work():
    W, U, xs = parts(19)
    tangent = np.ones_like(W)
    got = fgrad.jvp(lambda W: scan_loss(W, U, xs, checkpoints=3), (W,), (tangent,))
    want = fgrad.jvp(lambda W: loop_loss(W, U, xs), (W,), (tangent,))
    np.testing.assert_allclose(got, want, rtol=1e-11)
    batch = np.stack([xs, 2 * xs, -xs])
    grads = fgrad.vmap(fgrad.grad(lambda W, xs: scan_loss(W, U, xs, checkpoints=3)), in_axes=(None, 0))(W, batch)
    for b in range(3):
        np.testing.assert_allclose(grads[b], fgrad.grad(lambda W: loop_loss(W, U, batch[b]))(W), rtol=1e-10)


def test_the_schedule_keeps_k_plus_one_carries_and_k_steps_residuals():
    def kept(steps, k, stretch):
        """The most carries the schedule keeps at once, and its longest stretch."""
        held, most, longest = 0, 1, 0
        for kind, m, snaps, count in _schedule(steps, k, stretch):
            if kind == "stretch":
                most, longest = max(most, held + 1), max(longest, m)
                continue
            inner, inner_longest = kept(m, snaps, stretch) if snaps else (1, m)  # a scan's row: no copy
            most = max(most, held + (inner if count == 1 else count + inner - 1))
            longest = max(longest, inner_longest)
            held += count
        return most, longest

    for k in range(1, 9):
        for steps in range(k + 1, 600, 7):
            if _repetitions(steps, k, k) <= 50:
                stretch = _stretch(steps, k)
                most, longest = kept(steps, k, stretch)
                assert most <= k + 1 and longest <= stretch <= k, (steps, k, most, longest)
                assert _repetitions(steps, k, stretch) == _repetitions(steps, k, k)  # as few recomputations
    # the least r with k * C(k + r, k) >= steps (Griewank and Walther's bound, on stretches of k steps)
    assert [_repetitions(2048, k, k) for k in (2, 8, 16, 45)] == [44, 4, 2, 1]
    assert 8 * math.comb(8 + 4, 8) >= 2048 > 8 * math.comb(8 + 3, 8)
    assert _stretch(2048, 8) == 5 and _stretch(512, 45) == 12  # ceil(steps / C(k + r, k))


def test_the_carries_kept_do_not_grow_with_the_length():
    size = 2 ** 14
    init = np.linspace(0.0, 1.0, size)

    def peak(steps, k):
        loss = lambda w: fnp.sum(lax.scan(lambda c, _: (fnp.sin(c * w), None), init, None, length=steps,  # noqa: E731
                                          checkpoints=k)[0])
        fgrad.grad(loss)(0.9)
        tracemalloc.start()
        fgrad.grad(loss)(0.9)
        result = tracemalloc.get_traced_memory()[1] / init.nbytes
        tracemalloc.stop()
        return result

    unchecked = peak(300, None)
    per_step = unchecked / 300  # the residuals of a step, in carries
    for k in (4, 8):
        for steps in (100, 300):
            # k + 1 carries, the residuals of a stretch of at most k steps, and a few
            # carries (cotangents) per level of nesting, of which there are r
            bound = k + 1 + per_step * _stretch(steps, k) + 2 * _repetitions(steps, k, k) + 8
            assert peak(steps, k) <= min(bound, 0.1 * unchecked), (steps, k, per_step, peak(steps, k))


def sizes(closed):
    """(equations at the top, distinct jaxprs, equations in all of them) of a jaxpr."""
    seen = {}

    def walk(j):
        j = j.jaxpr if isinstance(j, ClosedJaxpr) else j
        if id(j) not in seen:
            seen[id(j)] = len(j.eqns)
            for e in j.eqns:
                for _, sub in sub_jaxprs(e):
                    walk(sub)

    walk(closed)
    return len(closed.jaxpr.eqns), len(seen), sum(seen.values())


def test_the_jaxpr_does_not_grow_with_the_steps():
    W = np.full((4, 4), 0.1)

    def grad_jaxpr(steps, k):
        xs = np.ones((steps, 4))
        loss = lambda W: fnp.sum(lax.scan(lambda h, x: (fnp.tanh(h @ W + x), None), fnp.zeros(4), xs,  # noqa: E731
                                          checkpoints=k)[0] ** 2)
        return sizes(fgrad.make_jaxpr(fgrad.grad(loss))(W))

    # One jaxpr per distinct segment of the schedule, about k * r of them, each of at
    # most k + 1 parts (at the top, the schedule's parts and their transposes)
    at = {steps: grad_jaxpr(steps, 8) for steps in (10, 1000, 2048, 100_000)}
    assert all(top <= 4 * (8 + 1) + 12 for top, _, _ in at.values()), at
    assert at[2048][1] <= 60 and at[100_000][2] <= 2000, at  # a jaxpr of each step would be 10^5 equations
    # with k (k + 1) >= steps: one scan over the checkpoints and the rest, at any length
    assert grad_jaxpr(1000, 45) == grad_jaxpr(2048, 45) and grad_jaxpr(2048, 45)[0] <= 20


def test_checkpoints_keep_a_quarter_of_the_memory_or_less():
    rng = np.random.default_rng(1)
    steps, width = 2048, 256
    W = rng.standard_normal((width, width)) / np.sqrt(width)
    xs = rng.standard_normal((steps, width)) * 0.1

    def loss(W, checkpoints):
        h, _ = lax.scan(lambda h, x: (fnp.tanh(h @ W + x), None), fnp.zeros(width), xs, checkpoints=checkpoints)
        return fnp.sum(h ** 2)

    peaks, grads = [], []
    for k in (None, 8):
        tracemalloc.start()
        grads.append(fgrad.grad(loss)(W, k))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-15)
    assert peaks[1] <= 0.25 * peaks[0], peaks


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_checkpoints_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match=r"scan: checkpoints must be a positive integer .* got"):
        lax.scan(lambda c, x: (c + x, None), 0.0, np.ones(4), checkpoints=bad)


def test_too_few_checkpoints_for_the_steps_say_how_many_are_enough():
    with pytest.raises(ValueError, match=r"scan: checkpoints=1 over 100 steps would recompute steps up to 99 "
                                         r"times.*give checkpoints=2 or more \(9 times\)"):
        fgrad.grad(lambda w: lax.scan(lambda c, _: (c * w, None), 1.0, None, length=100, checkpoints=1)[0])(0.5)


def test_checkpointed_scan_without_xs_and_with_pytrees():
    def f(c, _):
        return {"a": c["a"] * 1.1, "b": c["b"] + c["a"]}, (c["a"], c["b"])

    init = {"a": 1.0, "b": 0.5}
    want = lax.scan(f, init, None, length=7)
    got = lax.scan(f, init, None, length=7, checkpoints=3)
    for w, g in zip(fgrad.tree_util.tree_leaves(want), fgrad.tree_util.tree_leaves(got), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    d = lambda k: fgrad.grad(lambda a: lax.scan(f, {"a": a, "b": 0.5}, None, length=7, checkpoints=k)[0]["b"])(1.0)  # noqa: E731
    assert d(3) == pytest.approx(sum(1.1 ** i for i in range(7)), rel=1e-14)


def test_fori_loop_checkpoints_need_known_bounds():
    with pytest.raises(ValueError, match="fori_loop: checkpoints needs bounds known when fori_loop is called"):
        fgrad.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x * 2.0, 1.0, checkpoints=2))(3)
