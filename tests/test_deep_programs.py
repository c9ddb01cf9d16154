"""Deep programs (issue 14): eager grad of a chain of 100,000 primitives and of a
recursion 5,000 calls deep, without RecursionError, with memory proportional to
the residuals; every pass over their jaxprs (DCE, evaluation, printing, jit's
passes) is iterative."""

import contextlib
import sys
import tracemalloc

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def chain(x, steps):
    for _ in range(steps):
        x = fnp.sin(x) * 0.5 + 0.25  # three primitives a step
    return x


def chain_derivative(x, steps):
    d = 1.0
    for _ in range(steps):
        d *= 0.5 * np.cos(x)
        x = np.sin(x) * 0.5 + 0.25
    return d


@contextlib.contextmanager
def recursion_limit(limit):
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def test_grad_of_a_chain_of_100000_primitives():
    steps = 34_000  # 102,000 primitives
    assert fgrad.grad(chain)(0.3, steps) == pytest.approx(chain_derivative(0.3, steps), rel=1e-12)


@pytest.mark.parametrize("transform", ["make_jaxpr", "jit", "vmap"])
def test_other_transforms_of_a_long_chain(transform):
    steps = 10_000
    g = fgrad.grad(chain)
    want = chain_derivative(0.3, steps)
    if transform == "make_jaxpr":
        closed = fgrad.make_jaxpr(g, static_argnums=1)(0.3, steps)
        assert len(closed.eqns) > 3 * steps
        assert len(str(closed)) > 0  # the printer too
        (got,) = fgrad.eval_jaxpr(closed.jaxpr, closed.consts, 0.3)
    elif transform == "jit":
        got = fgrad.jit(g, static_argnums=1)(0.3, steps)
    else:
        got = fgrad.vmap(g, in_axes=(0, None))(np.array([0.3, 0.3]), steps)[1]
    assert got == pytest.approx(want, rel=1e-12)


def test_grad_of_a_recursion_5000_calls_deep():
    def rec(x, n):
        return x if n == 0 else rec(fnp.sin(x) * 0.5 + 0.25, n - 1)

    # Python itself needs the limit above the depth; fgrad's frames come and go
    # within each level, so a small margin suffices.
    with recursion_limit(5000 + 200):
        got = fgrad.grad(rec)(0.3, 5000)
    assert got == pytest.approx(chain_derivative(0.3, 5000), rel=1e-12)


def test_memory_of_grad_grows_with_the_residuals_only():
    x = np.full(1000, 0.3)  # 8 kB a value: each step keeps a few residuals
    f = lambda x, steps: fnp.sum(chain(x, steps))  # noqa: E731

    def peak(steps):
        fgrad.grad(f)(x, steps)  # warm up
        tracemalloc.start()
        fgrad.grad(f)(x, steps)
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    small, large = peak(200), peak(400)
    per_step = (large - small) / 200
    assert 8_000 <= per_step <= 6 * 8_000, per_step  # residuals of a step: cos(x) and the like
    assert large < 2.6 * small
