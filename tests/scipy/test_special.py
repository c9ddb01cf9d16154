"""fgrad.scipy.special's composites (logsumexp, softmax, log_softmax, ndtr) and
its NumPy-level behaviour: values against a direct NumPy computation, stable
for inputs like 1000 and -1000 (finite values and derivatives), axis, keepdims
and weights as in SciPy, derivatives to second order in both modes. The
elementwise primitives are tested in tests/primitives/test_special.py."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.special as fsp
from fgrad.test_util import check_grads
from tests.strategies import seeds, shapes, values


def axes_for(ndim):
    """None, one axis (negative ones included), or a tuple of distinct axes (maybe empty)."""
    if ndim == 0:
        return st.sampled_from([None, ()])
    return st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1),
        st.lists(st.integers(-ndim, ndim - 1), max_size=ndim).map(lambda a: tuple(dict.fromkeys(i % ndim for i in a))),
    )


def direct_logsumexp(a, axis, b=None, keepdims=False):
    """The definition, computed in extended precision (no stability tricks needed for moderate a)."""
    a = np.asarray(a, np.longdouble)
    terms = np.exp(a) if b is None else b * np.exp(a)
    return np.log(np.sum(terms, axis=axis, keepdims=keepdims)).astype(np.float64)


# --- logsumexp -----------------------------------------------------------------------


@given(shape=shapes, seed=seeds, data=st.data(), keepdims=st.booleans(), weighted=st.booleans())
def test_logsumexp_values_and_derivatives(shape, seed, data, keepdims, weighted):
    a = values(shape, "real", seed) * 3
    axis = data.draw(axes_for(a.ndim))
    b = values(shape[data.draw(st.integers(0, len(shape))):], "positive", seed + 1) if weighted else None
    out = fsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)
    np.testing.assert_allclose(out, direct_logsumexp(a, axis, b, keepdims), rtol=1e-14, atol=1e-15)
    assert np.shape(out) == np.shape(np.sum(a if b is None else a * b, axis=axis, keepdims=keepdims))
    if weighted:
        check_grads(lambda a, b: fsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims), (a, b), order=2)
    else:
        check_grads(lambda a: fsp.logsumexp(a, axis=axis, keepdims=keepdims), (a,), order=2)


@given(shape=shapes, seed=seeds, data=st.data())
def test_logsumexp_gradient_is_the_softmax(shape, seed, data):
    a = values(shape, "real", seed) * 3
    axis = data.draw(axes_for(a.ndim))
    g = fgrad.grad(lambda a: fnp.sum(fsp.logsumexp(a, axis=axis)))(a)
    np.testing.assert_allclose(g, fsp.softmax(a, axis=axis), rtol=1e-14)


def test_logsumexp_is_stable_for_large_inputs():
    a = np.array([[1000.0, 1000.0, -1000.0], [-1000.0, -1000.0, -1001.0]])
    with np.errstate(over="raise"):
        out = fsp.logsumexp(a, axis=1)
    np.testing.assert_allclose(out, [1000 + np.log(2), -1000 + np.log(2 + np.exp(-1.0))], rtol=1e-15)
    g = fgrad.grad(lambda a: fnp.sum(fsp.logsumexp(a, axis=1)))(a)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, [[0.5, 0.5, 0], [1 / (2 + np.exp(-1)), 1 / (2 + np.exp(-1)), np.exp(-1) / (2 + np.exp(-1))]], atol=1e-15)
    h = fgrad.hessian(lambda a: fsp.logsumexp(a))(np.array([1000.0, 1000.0]))
    np.testing.assert_allclose(h, [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-15)
    assert fsp.logsumexp(np.array([1e308, 1e308])) == 1e308 + np.log(2)


def test_logsumexp_where_leaves_entries_out():
    # JAX's `where` (SciPy has none): the selected entries only; -inf with none selected.
    a = np.array([[0.5, 9.0, -1.0], [2.0, 3.0, 4.0]])
    mask = np.array([[True, False, True], [False, False, False]])
    np.testing.assert_allclose(fsp.logsumexp(a, axis=1, where=mask), [np.logaddexp(0.5, -1.0), -np.inf],
                               rtol=1e-15)
    np.testing.assert_allclose(fsp.logsumexp(a, where=mask[0]), np.log(np.exp([0.5, -1.0, 2.0, 4.0]).sum()),
                               rtol=1e-15)  # a mask that broadcasts: columns 0 and 2 of both rows
    np.testing.assert_allclose(fsp.logsumexp(a, axis=1, b=2.0, where=mask)[0], np.logaddexp(0.5, -1.0) + np.log(2),
                               rtol=1e-15)
    g = fgrad.grad(lambda a: fsp.logsumexp(a, axis=1, where=mask)[0])(a)
    np.testing.assert_allclose(g, [[*fsp.softmax([0.5, -1.0])[:1], 0.0, fsp.softmax([0.5, -1.0])[1]], [0, 0, 0]],
                               rtol=1e-15)
    np.testing.assert_allclose(fgrad.jit(lambda a: fsp.logsumexp(a, axis=1, where=mask))(a),
                               fsp.logsumexp(a, axis=1, where=mask), rtol=1e-15)
    check_grads(lambda a: fsp.logsumexp(a, axis=1, where=mask[:1]), (a,), order=2)


def test_logsumexp_special_values_like_scipy():
    assert fsp.logsumexp([-np.inf, -np.inf]) == -np.inf
    assert fsp.logsumexp([np.inf, 1.0]) == np.inf
    assert np.isnan(fsp.logsumexp([np.nan, 1.0]))
    np.testing.assert_array_equal(fsp.logsumexp(np.zeros((0, 3)), axis=0), [-np.inf] * 3)
    assert fsp.logsumexp(np.zeros((2, 0))) == -np.inf
    assert fsp.logsumexp(2.0) == 2.0  # 0-d


def test_logsumexp_weights_zero_leave_entries_out_and_signs():
    # An entry with weight 0 is left out, even if it is inf or nan (as in SciPy).
    assert fsp.logsumexp([1.0, np.inf, np.nan], b=[1.0, 0.0, 0.0]) == 1.0
    g = fgrad.grad(lambda a: fsp.logsumexp(a, b=np.array([1.0, 0.0])))(np.array([1.0, 5000.0]))
    np.testing.assert_array_equal(g, [1.0, 0.0])
    # Negative weights: nan unless the sign is returned.
    with np.errstate(invalid="ignore"):
        assert np.isnan(fsp.logsumexp([1.0, 2.0], b=[1.0, -1.0]))
    out, sign = fsp.logsumexp([1.0, 2.0], b=[1.0, -1.0], return_sign=True)
    assert out == pytest.approx(np.log(np.e**2 - np.e), rel=1e-15) and sign == -1.0
    out, sign = fsp.logsumexp(np.array([[1.0, 2.0], [3.0, 0.0]]), axis=0, b=[[2.0, -1.0], [1.0, 1.0]],
                              keepdims=True, return_sign=True)
    np.testing.assert_allclose(out, [[np.log(2 * np.e + np.e**3), np.log(np.e**2 - 1)]], rtol=1e-15)
    np.testing.assert_array_equal(sign, [[1.0, -1.0]])
    # The derivative of log|sum| through the sign:
    check_grads(lambda a: fsp.logsumexp(a, b=np.array([1.0, -1.0]), return_sign=True)[0], (np.array([1.0, 2.0]),),
                order=2)


def test_logsumexp_axis_errors_match_numpy():
    with pytest.raises(np.exceptions.AxisError):
        fsp.logsumexp(np.ones((2, 2)), axis=2)
    with pytest.raises(np.exceptions.AxisError):
        fgrad.grad(lambda a: fsp.logsumexp(a, axis=-3))(np.ones((2, 2)))


# --- softmax, log_softmax -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@given(shape=shapes, seed=seeds, data=st.data())
def test_softmax_values_and_derivatives(name, shape, seed, data):
    x = values(shape, "real", seed) * 3
    axis = data.draw(axes_for(x.ndim))
    e = np.exp(x)
    direct = e / np.sum(e, axis=axis, keepdims=True)
    f = getattr(fsp, name)
    out = f(x, axis=axis)
    np.testing.assert_allclose(out, direct if name == "softmax" else np.log(direct), rtol=1e-14, atol=1e-15)
    assert np.shape(out) == x.shape
    check_grads(lambda x: f(x, axis=axis), (x,), order=2)


def test_softmax_and_log_softmax_are_stable_for_large_inputs():
    x = np.array([1000.0, 1000.0, -1000.0])
    with np.errstate(over="raise"):
        np.testing.assert_array_equal(fsp.softmax(x), [0.5, 0.5, 0.0])
        np.testing.assert_allclose(fsp.log_softmax(x), [-np.log(2), -np.log(2), -2000 - np.log(2)], rtol=1e-15)
    jac = fgrad.jacrev(fsp.softmax)(x)
    np.testing.assert_allclose(jac, [[0.25, -0.25, 0], [-0.25, 0.25, 0], [0, 0, 0]], atol=1e-15)
    jac = fgrad.jacfwd(fsp.log_softmax)(x)
    np.testing.assert_allclose(jac, [[0.5, -0.5, 0], [-0.5, 0.5, 0], [-0.5, -0.5, 1]], atol=1e-15)
    assert np.all(np.isfinite(fgrad.hessian(lambda x: fsp.log_softmax(x)[0])(x)))


def test_softmax_sums_to_one_along_the_axis():
    x = values((2, 3, 4), "real", 0) * 10
    np.testing.assert_allclose(np.sum(fsp.softmax(x, axis=(0, -1)), axis=(0, 2)), np.ones(3), rtol=1e-15)
    np.testing.assert_allclose(fsp.softmax(x), np.exp(fsp.log_softmax(x)), rtol=1e-14)
    assert fsp.log_softmax(np.array([-np.inf, 0.0]))[1] == 0.0  # a -inf entry has weight 0


# --- ndtr and the elementwise functions at NumPy level -----------------------------------------


@given(shape=shapes, seed=seeds)
def test_ndtr(shape, seed):
    x = values(shape, "real", seed) * 4
    # the same rounding of -x/sqrt(2) as ndtr's, which erfc amplifies by up to 2x**2
    expected = np.vectorize(lambda v: 0.5 * math.erfc(v * (-1 / math.sqrt(2))))(x)
    np.testing.assert_allclose(fsp.ndtr(x), expected, rtol=2e-15)
    check_grads(fsp.ndtr, (x,), order=2)


def test_ndtr_far_tail():
    assert fsp.ndtr(-30.0) == pytest.approx(4.906713927148187e-198, rel=1e-13)  # not 1 - ndtr(30) = 0
    assert fsp.ndtr(np.array([-np.inf, 0.0, np.inf])).tolist() == [0.0, 0.5, 1.0]


def test_results_are_numpy_values_with_no_transform_and_traced_under_one():
    x = np.array([0.5, 1.5])
    for f in (fsp.erf, fsp.erfc, fsp.erfinv, fsp.ndtr, fsp.gammaln, fsp.digamma, fsp.psi, fsp.expit, fsp.logit,
              fsp.entr, fsp.softmax, fsp.log_softmax):
        arg = x / 2 if f in (fsp.erfinv, fsp.logit) else x
        assert type(f(arg)) is np.ndarray, f.__name__
        jaxpr = fgrad.make_jaxpr(f)(arg)
        np.testing.assert_allclose(fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, arg)[0], f(arg), rtol=1e-15)
    assert type(fsp.logsumexp(x)) is np.float64 and type(fsp.xlogy(1.0, 2.0)) is np.float64
    assert type(fsp.polygamma(1, 2.0)) is np.float64
    text = str(fgrad.make_jaxpr(fsp.logsumexp)(x))
    assert "stop_gradient" in text and "reduce_max" in text


def test_functions_compose_with_vmap():
    a = values((4, 3), "real", 1) * 5
    np.testing.assert_allclose(fgrad.vmap(fsp.logsumexp)(a), fsp.logsumexp(a, axis=1), rtol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fsp.softmax, in_axes=1, out_axes=1)(a), fsp.softmax(a, axis=0), rtol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.gammaln))(a[0] + 3), fsp.digamma(a[0] + 3), rtol=1e-15)


def test_a_log_likelihood_and_its_gradient():
    # The negative log likelihood of a Poisson rate: gammaln and xlogy in their usual roles.
    counts = np.array([0.0, 2.0, 5.0, 1.0])

    def nll(log_rate):
        rate = fnp.exp(log_rate)
        return fnp.sum(rate - fsp.xlogy(counts, rate) + fsp.gammaln(counts + 1))

    g = fgrad.grad(nll)(np.log(np.full(4, 2.0)))
    np.testing.assert_allclose(g, 2.0 - counts, rtol=1e-15)
    assert fgrad.grad(nll)(np.full(4, -np.inf))[0] == 0.0  # rate 0 with count 0: no nan


def test_scipy_agrees_where_installed():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.linspace(-3, 3, 13)
    for name in ("erf", "erfc", "gammaln", "digamma", "expit", "ndtr"):
        np.testing.assert_allclose(getattr(fsp, name)(x), getattr(scipy_special, name)(x), rtol=1e-13, err_msg=name)
    np.testing.assert_allclose(fsp.erfinv(x / 4), scipy_special.erfinv(x / 4), rtol=1e-14)
    np.testing.assert_allclose(fsp.polygamma(2, x + 3.5), scipy_special.polygamma(2, x + 3.5), rtol=1e-13)
    a = values((3, 4), "real", 0) * 10
    for axis in (None, 0, -1, (0, 1)):
        np.testing.assert_allclose(fsp.logsumexp(a, axis=axis), scipy_special.logsumexp(a, axis=axis), rtol=1e-14)
        np.testing.assert_allclose(fsp.softmax(a, axis=axis), scipy_special.softmax(a, axis=axis), rtol=1e-14)
        np.testing.assert_allclose(fsp.log_softmax(a, axis=axis), scipy_special.log_softmax(a, axis=axis), rtol=1e-14)
