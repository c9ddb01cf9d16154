"""fgrad.lax.associative_scan (fgrad/lax/associative.py) against sequential loops:
cumulative sums and products, and non-commutative operations (matrix products,
compositions of affine maps), over odd and even lengths, length 1, reverse,
an axis other than 0 and pytrees; under grad, jvp, vmap and jit."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads

rng = np.random.default_rng(0)
LENGTHS = [1, 2, 3, 4, 5, 8, 13]


def sequential(fn, xs, reverse=False):
    """[x0, fn(x0, x1), fn(fn(x0, x1), x2), ...] along axis 0, one step at a time
    (reverse: from the end, the accumulation first, as JAX's)."""
    order = range(len(xs))[::-1] if reverse else range(len(xs))
    out, acc = {}, None
    for k in order:
        acc = xs[k] if acc is None else fn(acc, xs[k])
        out[k] = acc
    return np.stack([out[k] for k in range(len(xs))])


def affine(a, b):
    """The composition `b after a` of affine maps x -> m x + c, as pairs (m, c)."""
    (m1, c1), (m2, c2) = a, b
    return m2 * m1, m2 * c1 + c2


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("reverse", [False, True])
def test_sums_products_and_matrix_products(n, reverse):
    x = rng.normal(size=(n, 3))
    np.testing.assert_allclose(lax.associative_scan(fnp.add, x, reverse=reverse),
                               np.cumsum(x[::-1], 0)[::-1] if reverse else np.cumsum(x, 0))
    np.testing.assert_allclose(lax.associative_scan(fnp.multiply, x, reverse=reverse),
                               np.cumprod(x[::-1], 0)[::-1] if reverse else np.cumprod(x, 0))
    mats = rng.normal(size=(n, 2, 2))
    expected = sequential(np.matmul, mats, reverse)
    np.testing.assert_allclose(lax.associative_scan(fnp.matmul, mats, reverse=reverse), expected)
    np.testing.assert_allclose(fgrad.jit(lambda m: lax.associative_scan(fnp.matmul, m, reverse=reverse))(mats),
                               expected)


@pytest.mark.parametrize("n", [1, 6, 7])
def test_pytrees_and_another_axis(n):
    ms, cs = rng.normal(size=(4, n)), rng.normal(size=(4, n))  # scanned along axis 1
    got_m, got_c = lax.associative_scan(affine, (ms, cs), axis=1)
    pairs = sequential(lambda a, b: np.array(affine(a, b)), np.stack([ms.T, cs.T], axis=1))
    np.testing.assert_allclose(got_m, pairs[:, 0].T)
    np.testing.assert_allclose(got_c, pairs[:, 1].T)
    got = lax.associative_scan(lambda a, b: {"s": a["s"] + b["s"]}, {"s": ms}, reverse=True, axis=-1)
    np.testing.assert_allclose(got["s"], np.cumsum(ms[:, ::-1], 1)[:, ::-1])


def test_log_depth():
    # The function runs on whole halves, about 2 log2(n) times, not n times.
    calls = []

    def add(a, b):
        calls.append(a.shape)
        return a + b

    lax.associative_scan(add, np.ones(1024))
    assert len(calls) <= 2 * 10
    jaxpr = fgrad.make_jaxpr(lambda x: lax.associative_scan(fnp.add, x))(np.ones(1024))
    assert str(jaxpr).count(" add ") <= 2 * 10


@pytest.mark.parametrize("n", [1, 4, 7])
def test_derivatives(n):
    x = rng.normal(size=(n, 2))
    check_grads(lambda x: lax.associative_scan(fnp.multiply, x), (x,), order=2)
    mats = rng.normal(size=(n, 2, 2))
    check_grads(lambda m: lax.associative_scan(fnp.matmul, m, reverse=True), (mats,), order=2)
    check_grads(fgrad.jit(lambda m: lax.associative_scan(fnp.matmul, m)), (mats,), order=1)
    ms, cs = rng.normal(size=(2, n, 3))
    check_grads(lambda ms, cs: lax.associative_scan(affine, (ms, cs), axis=0)[1], (ms, cs), order=2)


def test_grad_against_the_sequential_closed_form():
    # d/dx_j sum_k prod_{i<=k} x_i = sum_{k>=j} prod_{i<=k, i!=j} x_i
    x = rng.uniform(0.5, 1.5, size=7)
    got = fgrad.grad(lambda x: fnp.sum(lax.associative_scan(fnp.multiply, x)))(x)
    expected = [sum(np.prod(np.delete(x[:k + 1], j)) for k in range(j, 7)) for j in range(7)]
    np.testing.assert_allclose(got, expected)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(lambda x: fnp.sum(lax.associative_scan(fnp.multiply, x))))(x),
                               expected)


def test_vmap_against_a_loop():
    mats = rng.normal(size=(3, 5, 2, 2))  # three scans of five matrices
    scan = lambda m: lax.associative_scan(fnp.matmul, m)  # noqa: E731
    expected = np.stack([sequential(np.matmul, m) for m in mats])
    np.testing.assert_allclose(fgrad.vmap(scan)(mats), expected)
    np.testing.assert_allclose(fgrad.vmap(scan, in_axes=1, out_axes=1)(np.swapaxes(mats, 0, 1)),
                               np.swapaxes(expected, 0, 1))
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(scan))(mats), expected)


def test_errors():
    with pytest.raises(TypeError, match="fn must be a function of two pytrees, got ndarray"):
        lax.associative_scan(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="same length along axis 0"):
        lax.associative_scan(lambda a, b: a, (np.ones(3), np.ones(4)))
    with pytest.raises(ValueError, match="got a scalar"):
        lax.associative_scan(fnp.add, 1.0)
    with pytest.raises(ValueError, match="no arrays"):
        lax.associative_scan(fnp.add, ())
    with pytest.raises(TypeError, match="fn must return a pytree like its arguments"):
        lax.associative_scan(lambda a, b: fnp.sum(a + b), np.ones(4))
