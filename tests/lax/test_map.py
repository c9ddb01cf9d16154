"""fgrad.lax.map with `batch_size` (fgrad/lax/scan.py): a scan of vmap(f) over
chunks and vmap(f) of the rest, equal to a Python loop over the slices, under
grad, jvp, vmap and jit."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads

rng = np.random.default_rng(0)


def f(x):
    """A pytree in, a pytree out, with a reduction inside each slice."""
    return {"norm": fnp.sqrt(fnp.sum(x["a"] ** 2)), "scaled": fnp.sin(x["a"]) * x["b"]}


def loop(x):
    outs = [f({"a": a, "b": b}) for a, b in zip(x["a"], x["b"])]
    return {"norm": np.array([o["norm"] for o in outs]), "scaled": np.stack([o["scaled"] for o in outs])}


def xs_of(n):
    return {"a": rng.normal(size=(n, 3)), "b": rng.normal(size=(n,))[:, None] * np.ones(3)}


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("batch_size", [None, 0, 1, 2, 3, 6, 10])
def test_equals_the_loop_eager_and_jit(n, batch_size):
    xs = xs_of(n)
    expected = loop(xs)
    for run in (lax.map, fgrad.jit(lax.map, static_argnums=0, static_argnames="batch_size")):
        got = run(f, xs, batch_size=batch_size)
        np.testing.assert_allclose(got["norm"], expected["norm"])
        np.testing.assert_allclose(got["scaled"], expected["scaled"])


def test_f_runs_on_batches_of_batch_size_then_on_the_rest():
    shapes = []

    def g(x):
        shapes.append(x.shape)  # under vmap: the shape of one slice
        return x * 2.0

    np.testing.assert_allclose(lax.map(g, np.arange(20.0).reshape(10, 2), batch_size=3),
                               2 * np.arange(20.0).reshape(10, 2))
    assert shapes == [(2,), (2,)]  # traced twice: the scan's body, then the remainder
    shapes.clear()
    lax.map(g, np.ones((4, 2)), batch_size=0)
    assert shapes == [(2,)]  # one vmap over all of them
    jaxpr = str(fgrad.make_jaxpr(lambda x: lax.map(g, x, batch_size=3))(np.ones((10, 2))))
    assert "f64[3,3,2] = scan" in jaxpr and "a:f64[3,2]. let" in jaxpr  # 3 steps of 3 slices
    assert "f64[1,2] = mul" in jaxpr  # the one left over


@pytest.mark.parametrize("batch_size", [2, 4])
def test_derivatives(batch_size):
    x = rng.normal(size=(5, 2))
    h = lambda x: lax.map(lambda r: fnp.sin(r) * fnp.sum(r ** 2), x, batch_size=batch_size)  # noqa: E731
    check_grads(h, (x,), order=2)
    check_grads(fgrad.jit(h), (x,), order=1)
    expected = np.cos(x) * np.sum(x ** 2, 1, keepdims=True) + 2 * x * np.sum(np.sin(x), 1, keepdims=True)
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(h(x)))(x), expected)


def test_vmap_of_a_batched_map_against_a_loop():
    x = rng.normal(size=(3, 5, 2))
    h = lambda x: lax.map(lambda r: fnp.prod(r) + r, x, batch_size=2)  # noqa: E731
    expected = np.stack([np.prod(v, 1, keepdims=True) + v for v in x])
    np.testing.assert_allclose(fgrad.vmap(h)(x), expected)
    np.testing.assert_allclose(fgrad.vmap(h, in_axes=1, out_axes=1)(np.swapaxes(x, 0, 1)),
                               np.swapaxes(expected, 0, 1))


def test_bad_batch_size():
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=f"batch_size must be a non-negative integer .* got {bad!r}"):
            lax.map(fnp.sin, np.ones(3), batch_size=bad)
