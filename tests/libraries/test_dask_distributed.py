"""fgrad on Dask arrays computed by a distributed cluster of two worker
processes: the gradient of a least-squares loss whose matrix is a chunked
Dask array is itself a lazy Dask array, built without computing anything,
chunked like the operand it comes from, and `.compute()` on the cluster
gives NumPy's A.T @ (A @ w - b). Also jit of a gradient step and vmap over
a batch of weights."""

import logging

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

ROWS, COLS, ROW_CHUNK = 4000, 50, 1000
RTOL = 1e-10


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=logging.CRITICAL,
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def problem():
    """A, b, w in NumPy, and A in row chunks of ROW_CHUNK on Dask."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((ROWS, COLS))
    b = rng.standard_normal(ROWS)
    w = rng.standard_normal(COLS)
    return A, b, w, da.from_array(A, chunks=(ROW_CHUNK, COLS))


def loss(w, A, b):
    return 0.5 * fnp.sum((A @ w - b) ** 2)


def _never_compute(dsk, keys, **kwargs):
    raise AssertionError("fgrad computed a Dask array while building the gradient")


def lazily(fn, *args):
    """fn(*args) with every Dask computation forbidden: fgrad must only build graphs."""
    with dask.config.set(scheduler=_never_compute):
        return fn(*args)


def on_cluster(client, x):
    """The value of the Dask array `x`, computed by the cluster's workers."""
    assert isinstance(x, da.Array)
    return client.compute(x).result()


def test_grad_wrt_weights_of_a_dask_matrix(client, problem):
    A, b, w, A_dask = problem
    g = lazily(fgrad.grad(loss, argnums=0), w, A_dask, b)
    assert isinstance(g, da.Array) and g.shape == (COLS,)
    np.testing.assert_allclose(on_cluster(client, g), A.T @ (A @ w - b), rtol=RTOL)


def test_value_and_grad_of_a_dask_matrix(client, problem):
    A, b, w, A_dask = problem
    value, g = lazily(fgrad.value_and_grad(loss), w, A_dask, b)
    assert isinstance(value, da.Array) and value.shape == ()
    np.testing.assert_allclose(on_cluster(client, value), 0.5 * np.sum((A @ w - b) ** 2), rtol=RTOL)
    np.testing.assert_allclose(on_cluster(client, g), A.T @ (A @ w - b), rtol=RTOL)


def test_grad_wrt_the_dask_matrix_keeps_its_row_chunks(client, problem):
    A, b, w, A_dask = problem
    g = lazily(fgrad.grad(loss, argnums=1), w, A_dask, b)
    assert isinstance(g, da.Array) and g.chunks == A_dask.chunks
    np.testing.assert_allclose(on_cluster(client, g), np.outer(A @ w - b, w), rtol=RTOL)


def test_grad_wrt_dask_weights(client, problem):
    A, b, w, A_dask = problem
    w_dask = da.from_array(w, chunks=COLS // 2)
    for matrix in (A, A_dask):
        g = lazily(fgrad.grad(loss), w_dask, matrix, b)
        assert isinstance(g, da.Array) and g.shape == (COLS,)
        np.testing.assert_allclose(on_cluster(client, g), A.T @ (A @ w - b), rtol=RTOL)


def test_jit_of_a_gradient_step(client, problem):
    A, b, w, A_dask = problem
    rate = 0.1 / ROWS

    @fgrad.jit
    def step(w, A, b):
        return w - rate * fgrad.grad(loss)(w, A, b)

    for _ in range(2):  # the first call traces, the second runs the cached jaxpr
        new_w = lazily(step, w, A_dask, b)
        assert isinstance(new_w, da.Array)
        np.testing.assert_allclose(on_cluster(client, new_w), w - rate * (A.T @ (A @ w - b)), rtol=RTOL)


def test_vmap_of_the_gradient_over_a_batch_of_weights(client, problem):
    A, b, w, A_dask = problem
    W = np.stack([w, 2 * w, -w])
    batched = fgrad.vmap(fgrad.grad(loss), in_axes=(0, None, None))
    g = lazily(batched, W, A_dask, b)
    assert isinstance(g, da.Array) and g.shape == W.shape
    np.testing.assert_allclose(on_cluster(client, g), (A @ W.T - b[:, None]).T @ A, rtol=RTOL)


def test_jit_of_grad_of_a_loss_closing_over_a_dask_matrix(client, problem):
    # The fitting script's way: the data closed over, the weights a NumPy argument.
    A, b, w, A_dask = problem
    b_dask = A_dask @ np.ones(COLS)

    def ls(w):
        return fnp.sum((A_dask @ w - b_dask) ** 2)

    expected = 2 * A.T @ (A @ w - A @ np.ones(COLS))
    for transform in (fgrad.grad, lambda f: fgrad.jit(fgrad.grad(f))):
        g = lazily(transform(ls), w)
        assert isinstance(g, da.Array) and g.shape == (COLS,)
        np.testing.assert_allclose(on_cluster(client, g), expected, rtol=RTOL)
