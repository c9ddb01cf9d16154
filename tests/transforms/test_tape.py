"""Eager reverse mode's tape: the same numbers as the linear jaxpr, without one."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.core.errors import ConcretizationTypeError
from fgrad.transforms import tape
from fgrad.transforms.reverse import LinearFunction
from fgrad.transforms.tape import Pullback, vjp_flat


@fgrad.custom_vjp
def clipped(x):
    return fnp.clip(x, -1.0, 1.0)


clipped.defvjp(lambda x: (clipped(x), x), lambda x, ct: (ct * fnp.where(fnp.abs(x) < 1.0, 1.0, 0.5),))


def _scalar_chain(x, y):
    for _ in range(5):
        x = fnp.log(fnp.exp(x) * y + 1.0)
    return x


def _broadcasting(x, y):  # products of several avals: emitted one by one
    return fnp.sum(fnp.tanh(x[:, None] * y + 2.0) ** 2) / 3.0


def _indexing(x, y):  # many static indexings of one array: their cotangents added once
    return sum(x[i] * x[-1 - i] for i in range(3)) + fnp.sum(y[1:] * x[0])


def _control_flow(x, y):
    b = x * 2.0
    while fnp.linalg.norm(b) < 10.0:
        b = b * 2.0
    b = lax.cond(fnp.sum(b) > 0, lambda b: b * y, lambda b: -b, b)
    return fnp.sum(lax.fori_loop(0, 3, lambda i, c: fnp.sin(c) + y, b))


def _custom_and_checkpoint(x, y):
    h = fgrad.checkpoint(lambda x: fnp.exp(fnp.sin(x)) * y)(x)
    return fnp.sum(clipped(h * 0.7) * x)


def _float32(x, y):  # weak Python scalars beside float32 tangents, casts
    x32 = x.astype(np.float32)
    return fnp.sum((x32 * 2.5 + 1) ** 2).astype(np.float64) + fnp.sum(y * x)


def _matmul(x, y):
    w = fnp.outer(x, y)
    return fnp.sum(fnp.tanh(w @ y + x) * 0.5)


PROGRAMS = [_scalar_chain, _broadcasting, _indexing, _control_flow, _custom_and_checkpoint, _float32, _matmul]


def _args(program, shape, seed):
    rng = np.random.default_rng(seed)
    if program is _scalar_chain:
        return rng.uniform(0.1, 1.0, ()), rng.uniform(0.5, 1.5, ())
    return rng.standard_normal(shape), rng.standard_normal(shape)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
@settings(max_examples=20)
@given(shape=st.sampled_from([(3,), (4,), (6,)]), seed=st.integers(0, 2**16))
def test_the_tape_gives_the_linear_jaxprs_gradient_bit_for_bit(program, shape, seed):
    args = _args(program, shape, seed)
    g = fgrad.grad(program, argnums=(0, 1))
    by_tape = g(*args)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tape, "records_on_tape", lambda trace: False)
        by_jaxpr = g(*args)
    for a, b in zip(by_tape, by_jaxpr):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize("program", [_scalar_chain, _broadcasting, _indexing, _matmul], ids=lambda p: p.__name__)
def test_second_order_on_the_tape_equals_forward_over_reverse(program):
    args = _args(program, (3,), 1)
    x = args[0]

    def f(x):
        return program(x, args[1])

    hvp_rev = fgrad.grad(lambda x: fnp.sum(fgrad.grad(f)(x) * fnp.ones_like(x)))(x)  # tape over tape
    hvp_fwd = fgrad.jvp(fgrad.grad(f), (x,), (np.ones_like(x),))[1]  # a jaxpr under jvp
    np.testing.assert_allclose(hvp_rev, hvp_fwd, rtol=1e-10, atol=1e-12)


def test_vjp_functions_of_the_tape_can_be_called_many_times_and_under_vmap():
    x = np.array([0.3, -0.2, 1.1])
    y, vjp_fn = fgrad.vjp(lambda x: fnp.tanh(x) * x[::-1], x)
    cts = np.eye(3)
    rows = [vjp_fn(ct)[0] for ct in cts]
    np.testing.assert_array_equal(fgrad.vmap(vjp_fn)(cts)[0], np.stack(rows))
    np.testing.assert_array_equal(vjp_fn(cts[0])[0], rows[0])  # nothing consumed
    np.testing.assert_allclose(np.stack(rows), fgrad.jacfwd(lambda x: fnp.tanh(x) * x[::-1])(x), rtol=1e-12)


def test_the_tape_serves_concrete_values_and_the_jaxpr_everything_that_stages():
    x = np.array([0.5, 1.5])
    f = lambda x: [fnp.sum(fnp.sin(x))]  # noqa: E731
    assert type(vjp_flat(f, [x], "test")[1]) is Pullback
    kinds = []

    def record(x):
        kinds.append(type(vjp_flat(f, [x], "test")[1]))
        return x

    fgrad.make_jaxpr(record)(x)
    fgrad.vmap(record)(np.ones((2, 2)))
    fgrad.jvp(record, (x,), (x,))
    assert kinds == [LinearFunction] * 3
    # The same gradients either way.
    np.testing.assert_array_equal(fgrad.jit(fgrad.grad(lambda x: f(x)[0]))(x), fgrad.grad(lambda x: f(x)[0])(x))


def test_a_rule_branching_on_a_tangent_raises_a_concretization_error():
    @fgrad.custom_jvp
    def g(x):
        return fnp.sin(x)

    @g.defjvp
    def g_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if t > 0:  # a tangent being recorded has no value
            return g(x), t
        return g(x), -t

    with pytest.raises(ConcretizationTypeError, match="tangent"):
        fgrad.grad(g)(0.3)
    assert fgrad.jvp(g, (0.3,), (1.0,))[1] == 1.0  # forward mode has the tangent's value


def test_a_tangent_that_escapes_raises_once_used():
    kept = []

    def f(x):
        y = fnp.sin(x)
        kept.append(y)
        return y

    fgrad.grad(f)(0.5)
    with pytest.raises(fgrad.UnexpectedTracerError, match="escaped"):
        fnp.cos(kept[0])


def test_threads_record_tapes_of_their_own():
    xs = [np.linspace(-1.0, 1.0, 5) * (i + 1) for i in range(4)]
    f = lambda x: fnp.sum(fnp.tanh(x) ** 2 * x[0])  # noqa: E731
    want = [fgrad.grad(f)(x) for x in xs]
    got = [None] * 4

    def work(i):
        for _ in range(20):
            got[i] = fgrad.grad(f)(xs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_residuals_are_freed_without_the_garbage_collector():
    # No reference cycle holds a tape: its residuals go as soon as the gradient
    # returns, or the vjp function is dropped.
    import gc
    import weakref

    residuals = []

    def f(x):
        h = fnp.exp(x)
        residuals.append(weakref.ref(h.primal))  # exp's factor is its output: a residual
        return fnp.sum(h * x[1])

    x = np.linspace(0.0, 1.0, 4)
    gc.disable()
    try:
        fgrad.grad(f)(x)
        assert residuals[-1]() is None
        _, vjp_fn = fgrad.vjp(lambda x: [f(x)], x)
        vjp_fn([1.0])
        assert residuals[-1]() is not None  # kept for the next call
        del vjp_fn
        assert residuals[-1]() is None
    finally:
        gc.enable()
