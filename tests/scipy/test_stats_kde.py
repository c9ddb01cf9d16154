"""fgrad.scipy.stats.gaussian_kde against scipy.stats.gaussian_kde (issue 25): its
attributes, densities and integrals for 1-d and n-d data, with and without
weights, for every bandwidth rule; SciPy's errors; derivatives in the points,
the data, the weights and the bandwidth; jit, vmap and the estimate as a pytree;
resample's shapes, determinism and moments."""

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
import fgrad.random as fr
from fgrad.scipy.stats import gaussian_kde
from fgrad.test_util import check_grads
from fgrad.tree_util import tree_leaves, tree_map
from tests.strategies import seeds

ATTRIBUTES = ["dataset", "weights", "neff", "factor", "covariance", "inv_cov", "d", "n"]
BW_METHODS = {
    "default": None, "scott": "scott", "silverman": "silverman", "scalar": 0.4,
    "callable": lambda kde: kde.silverman_factor() / 2,
}


def data(d, n, seed, weighted):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(d, n)) if d > 1 else rng.normal(size=n)
    return x, (rng.uniform(0.2, 2.0, size=n) if weighted else None), rng


@settings(max_examples=25)  # (SciPy's gaussian_kde is the slow part)
@given(bw=st.sampled_from(sorted(BW_METHODS)), d=st.integers(1, 3), n=st.integers(4, 12), weighted=st.booleans(),
       seed=seeds)
def test_values_like_scipy(bw, d, n, weighted, seed):
    x, w, rng = data(d, n, seed, weighted)
    got, expected = gaussian_kde(x, BW_METHODS[bw], w), ss.gaussian_kde(x, BW_METHODS[bw], w)
    for name in ATTRIBUTES:
        np.testing.assert_allclose(getattr(got, name), getattr(expected, name), rtol=1e-12, err_msg=name)
    assert (got.d, got.n) == (d, n) and type(got.d) is int
    points = 1.5 * rng.normal(size=(d, 5))
    log_e = expected.logpdf(points)
    np.testing.assert_allclose(got.logpdf(points), log_e, rtol=1e-12)
    for method in ["evaluate", "__call__", "pdf"]:
        g, e = getattr(got, method)(points), getattr(expected, method)(points)
        assert g.shape == e.shape == (5,)
        # exp of a large negative exponent: its relative error is the exponent's absolute one.
        np.testing.assert_array_less(np.abs(g - e), 1e-12 * (1 + np.abs(log_e)) * e + 1e-300, err_msg=method)
    mean, cov = rng.normal(size=d), np.diag(rng.uniform(0.3, 1.0, size=d))
    np.testing.assert_allclose(got.integrate_gaussian(mean, cov), expected.integrate_gaussian(mean, cov), rtol=1e-12)
    other = rng.normal(size=(d, 7))
    np.testing.assert_allclose(got.integrate_kde(gaussian_kde(other)), expected.integrate_kde(ss.gaussian_kde(other)),
                               rtol=1e-12)
    if d == 1:
        for low, high in [(-0.3, 1.2), (-np.inf, 0.0), (-np.inf, np.inf)]:
            np.testing.assert_allclose(got.integrate_box_1d(low, high), expected.integrate_box_1d(low, high),
                                       rtol=1e-12)


def test_point_forms_and_the_far_tails_like_scipy():
    x2 = np.random.default_rng(0).normal(size=(2, 6))
    got, expected = gaussian_kde(x2), ss.gaussian_kde(x2)
    for points in [[0.3, -0.2], [[0.3, -0.2]], [[0.3], [-0.2]]]:  # one point: a vector, a row, a column
        np.testing.assert_allclose(got(points), expected(points), rtol=1e-12)
    x1 = np.array([0.0, 1.0, 1.5, 4.0])
    got, expected = gaussian_kde(x1), ss.gaussian_kde(x1)
    for points in [0.5, [0.5, 2.0], [[0.5, 2.0]]]:
        np.testing.assert_allclose(got(points), expected(points), rtol=1e-12)
    far = np.array([40.0, -300.0])  # the density underflows to 0; its log does not
    np.testing.assert_allclose(got.pdf(far), expected.pdf(far), rtol=1e-12)
    np.testing.assert_allclose(got.logpdf(far), expected.logpdf(far), rtol=1e-13)
    # A zero weight: a point that counts for nothing.
    np.testing.assert_allclose(gaussian_kde(x1, weights=[1, 0, 2, 1]).logpdf(far),
                               ss.gaussian_kde(x1, weights=[1, 0, 2, 1]).logpdf(far), rtol=1e-13)
    # Integer data are float64, as the results.
    kde = gaussian_kde(np.array([0, 1, 3, 4]))
    assert kde.dataset.dtype == np.float64 and kde(1).dtype == np.float64


def test_errors_like_scipy():
    x = np.array([0.0, 1.0, 3.0])
    cases = [
        (lambda k: k([[1.0], [2.0], [3.0]]), ValueError, "points have dimension 3, dataset has dimension 1"),
        (lambda k: k.integrate_gaussian([0.0, 1.0], 1.0), ValueError, "mean does not have dimension 1"),
        (lambda k: k.integrate_gaussian(0.0, np.eye(2)), ValueError, "covariance does not have dimension 1"),
        (lambda k: k.integrate_kde(gaussian_kde(np.ones((2, 3)) + np.eye(2, 3))), ValueError,
         "KDEs are not the same dimensionality"),
    ]
    for f, error, message in cases:
        with pytest.raises(error, match=message):
            f(ss.gaussian_kde(x))
        with pytest.raises(error, match=message):
            f(gaussian_kde(x))
    constructions = [
        ((np.array([1.0]),), ValueError, "`dataset` input should have multiple elements"),
        ((x, None, [[1.0, 1.0, 1.0]]), ValueError, "`weights` input should be one-dimensional"),
        ((x, None, [1.0, 2.0]), ValueError, "`weights` input should be of length n"),
        ((np.ones((3, 2)),), ValueError, "Number of dimensions is greater than number of samples"),
        ((x, "normal"), ValueError, "`bw_method` should be 'scott', 'silverman', a scalar or a callable"),
        ((x, [0.5]), ValueError, "`bw_method` should be 'scott', 'silverman', a scalar or a callable"),
        ((np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]]),), np.linalg.LinAlgError,
         "The data appears to lie in a lower-dimensional subspace"),
    ]
    for args, error, message in constructions:
        with pytest.raises(error, match=message):
            ss.gaussian_kde(*args)
        with pytest.raises(error, match=message):
            gaussian_kde(*args)
    kde = gaussian_kde(np.random.default_rng(0).normal(size=(2, 5)))
    with pytest.raises(ValueError, match="integrate_box_1d\\(\\) only handles 1D pdfs, this one has dimension 2"):
        kde.integrate_box_1d(0.0, 1.0)
    with pytest.raises(ValueError, match="the limits of integration in integrate_box_1d must be scalars"):
        gaussian_kde(x).integrate_box_1d([0.0], 1.0)
    # As in JAX: complex data, and what an immutable estimate cannot do.
    with pytest.raises(NotImplementedError, match="gaussian_kde does not support complex data"):
        gaussian_kde(x + 1j)
    with pytest.raises(NotImplementedError, match="dynamically changing the bandwidth method is not supported"):
        kde.set_bandwidth("silverman")
    with pytest.raises(NotImplementedError, match="use `integrate_box_1d`"):
        kde.integrate_box([0.0, 0.0], [1.0, 1.0])


# --- derivatives ---------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2])
def test_derivatives_in_points_data_and_weights(d):
    x, w, rng = data(d, 6, 3, True)
    points = rng.normal(size=(d, 3))
    for method in ["logpdf", "pdf"]:
        def f(points, x, w, method=method):
            return getattr(gaussian_kde(x, weights=w), method)(points)

        check_grads(f, (points, x, w), order=2)
    check_grads(lambda x, bw: gaussian_kde(x, bw_method=bw).logpdf(points), (x, 0.7), order=2)
    check_grads(lambda x: gaussian_kde(x, "silverman").integrate_gaussian(np.zeros(d), np.eye(d)), (x,), order=2)
    check_grads(lambda x, y: gaussian_kde(x).integrate_kde(gaussian_kde(y)), (x, rng.normal(size=(d, 4))), order=1)
    if d == 1:
        check_grads(lambda x, low: gaussian_kde(x).integrate_box_1d(low, 0.8), (x, -0.4), order=2)


def test_gradient_of_the_density_in_the_point_closed_form():
    # d/dx sum_i w_i N(x; x_i, s2) = -sum_i w_i N(x; x_i, s2) (x - x_i) / s2.
    x, w, _ = data(1, 5, 7, True)
    kde = ss.gaussian_kde(x, weights=w)
    s2 = kde.covariance[0, 0]
    point = 0.3
    expected = -np.sum(kde.weights * ss.norm.pdf(point, x, np.sqrt(s2)) * (point - x) / s2)
    got = fgrad.grad(lambda p: gaussian_kde(x, weights=w).pdf(p)[0])(point)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# --- transforms and pytrees ---------------------------------------------------------------------


def test_jit_vmap_and_the_estimate_as_a_pytree():
    x, w, rng = data(2, 8, 11, True)
    points = rng.normal(size=(2, 4))
    expected = ss.gaussian_kde(x, weights=w).logpdf(points)
    np.testing.assert_allclose(fgrad.jit(lambda p, x, w: gaussian_kde(x, weights=w).logpdf(p))(points, x, w),
                               expected, rtol=1e-12)
    kde = gaussian_kde(x, weights=w)
    leaves = tree_leaves(kde)
    assert len(leaves) == 6 and leaves[1] is kde.dataset  # neff, dataset, weights, covariance, inv_cov, factor
    doubled = tree_map(lambda a: a, kde)
    assert isinstance(doubled, gaussian_kde) and doubled.n == 8
    np.testing.assert_allclose(fgrad.jit(lambda k, p: k.logpdf(p))(kde, points), expected, rtol=1e-12)
    made = fgrad.jit(lambda x, w: gaussian_kde(x, "silverman", w))(x, w)  # returned from jit
    assert isinstance(made, gaussian_kde)
    np.testing.assert_allclose(made.covariance, ss.gaussian_kde(x, "silverman", w).covariance, rtol=1e-12)
    # grad in the estimate itself: a gaussian_kde of cotangents.
    g = fgrad.grad(lambda k: fnp.sum(k.logpdf(points)))(kde)
    assert isinstance(g, gaussian_kde) and g.dataset.shape == (2, 8)
    # vmap over points, and over data sets, against loops.
    got = fgrad.vmap(kde.logpdf, in_axes=1)(points)
    np.testing.assert_allclose(got[:, 0], expected, rtol=1e-12)
    datasets = rng.normal(size=(3, 2, 8))
    got = fgrad.vmap(lambda x: gaussian_kde(x).pdf(points))(datasets)
    np.testing.assert_allclose(got, [ss.gaussian_kde(x).pdf(points) for x in datasets], rtol=1e-12)
    got = fgrad.vmap(lambda w: gaussian_kde(x, weights=w).pdf(points))(np.stack([w, w[::-1]]))
    np.testing.assert_allclose(got, [ss.gaussian_kde(x, weights=v).pdf(points) for v in [w, w[::-1]]], rtol=1e-12)


# --- resample -------------------------------------------------------------------------------------


def test_resample_shapes_determinism_and_jit():
    x, w, _ = data(2, 6, 5, True)
    kde = gaussian_kde(x, weights=w)
    key = fr.key(0)
    assert kde.resample(key).shape == (2,)
    assert kde.resample(key, (3, 4)).shape == (2, 3, 4)
    assert gaussian_kde(x[0]).resample(key, (5,)).shape == (1, 5)
    np.testing.assert_array_equal(kde.resample(key, (5,)), kde.resample(key, (5,)))
    assert not np.array_equal(kde.resample(key, (5,)), kde.resample(fr.key(1), (5,)))
    np.testing.assert_allclose(fgrad.jit(lambda k, key: k.resample(key, (5,)))(kde, key), kde.resample(key, (5,)),
                               rtol=1e-14)
    # The samples of a fixed key are smooth in the data (a chosen point plus L z): finite differences.
    check_grads(lambda x: kde_resample(x, key), (x,), order=1)


def kde_resample(x, key):
    return gaussian_kde(x).resample(key, (4,))


def test_resample_moments():
    # A mixture of normals: mean the weighted mean of the data, covariance the weighted
    # (biased) covariance of the data plus the kernel's.
    x, w, _ = data(2, 5, 9, True)
    kde = ss.gaussian_kde(x, weights=w)
    samples = gaussian_kde(x, weights=w).resample(fr.key(3), (40_000,))
    mean = kde.weights @ x.T
    centred = x - mean[:, None]
    cov = (centred * kde.weights) @ centred.T + kde.covariance
    np.testing.assert_allclose(samples.mean(axis=1), mean, atol=4 * np.sqrt(np.max(np.diag(cov)) / 40_000))
    np.testing.assert_allclose(np.cov(samples), cov, rtol=0.05, atol=0.02)
