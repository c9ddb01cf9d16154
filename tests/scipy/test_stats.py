"""fgrad.scipy.stats against scipy.stats: values of every function over grids
that reach outside the support, with invalid parameters and broadcast
parameters; SciPy's ways of passing the parameters and its errors; derivatives
in the point and in the parameters to second order in both modes; vmap against
a loop and jit against eager."""

import doctest

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import digamma

import fgrad
import fgrad.scipy.stats as fs
from fgrad.test_util import check_grads
from tests.strategies import broadcast_pairs, seeds, values

# name -> its shape parameters (drawn by shape_values, discrete_values)
CONTINUOUS = {
    "norm": (), "expon": (), "laplace": (), "logistic": (), "cauchy": (), "uniform": (),
    "t": ("df",), "gamma": ("a",), "beta": ("a", "b"),
}
DISCRETE = {"poisson": ("mu",), "binom": ("n", "p"), "bernoulli": ("p",)}
CONTINUOUS_METHODS = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
DISCRETE_METHODS = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]

# Where SciPy itself loses digits that fgrad keeps: expon.logcdf is log(1 - e**-x) in
# SciPy (cancellation for large x), fgrad's log1p(-e**-x).
RTOL = {("expon", "logcdf"): 1e-8}


def shape_values(name, shape, seed):
    """Valid shape parameters of `name`: df in (0.5, 8) with some inf, a, b in (0.3, 4)."""
    u = np.random.default_rng(seed).uniform(size=shape)
    if name == "df":
        return np.where(u < 0.15, np.inf, 0.5 + 7.5 * u)
    return 0.3 + 3.7 * u


def discrete_values(name, shape, seed):
    u = np.random.default_rng(seed).uniform(size=shape)
    return {"mu": 0.2 + 6 * u, "n": np.floor(1 + 8 * u), "p": 0.05 + 0.9 * u}[name]


def assert_like_scipy(got, expected, rtol=1e-12, atol=1e-300):
    assert np.shape(got) == np.shape(expected)
    assert isinstance(got, np.ndarray) == isinstance(expected, np.ndarray)  # 0-d: a NumPy scalar
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def call(dist, method, *args, **kwds):
    """scipy.stats' value, but for one quirk of SciPy's: the logcdf of a discrete
    distribution with invalid parameters is 0 (not nan, as its cdf) at and above the
    support's upper end."""
    with np.errstate(all="ignore"):
        out = getattr(getattr(ss, dist), method)(*args, **kwds)
        if dist in DISCRETE and method == "logcdf":
            out = np.where(np.isnan(getattr(ss, dist).cdf(*args, **kwds)), np.nan, out)[()]
    return out


def tolerances(dist, method):
    """rtol, atol: a log near 0, of a probability near 1, is known to about eps absolutely."""
    return RTOL.get((dist, method), 1e-12), 1e-15 if method in ("logcdf", "logsf") else 1e-300


# --- values -----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", CONTINUOUS_METHODS)
@pytest.mark.parametrize("dist", sorted(CONTINUOUS))
@given(shapes=broadcast_pairs(3 + 3), seed=seeds)
def test_continuous_values_like_scipy(dist, method, shapes, seed):
    names = CONTINUOUS[dist]
    x_shape, loc_shape, scale_shape, *param_shapes = shapes
    x = values(x_shape, "real", seed) * 3
    loc = values(loc_shape, "unit", seed + 1)
    scale = values(scale_shape, "positive", seed + 2)
    params = [shape_values(n, s, seed + 3 + i) for i, (n, s) in enumerate(zip(names, param_shapes))]
    got = getattr(getattr(fs, dist), method)(x, *params, loc=loc, scale=scale)
    assert_like_scipy(got, call(dist, method, x, *params, loc=loc, scale=scale), *tolerances(dist, method))


SPECIAL_X = np.array([-np.inf, -2.0, -1e-300, 0.0, 0.3, 0.5, 1.0, 1.7, 30.0, np.inf, np.nan])
SPECIAL_PARAMS = {  # valid, boundary and invalid (nan) parameters
    "t": [(0.5,), (3.0,), (1e3,), (np.inf,), (0.0,), (-1.0,), (np.nan,)],
    "gamma": [(0.5,), (1.0,), (2.5,), (0.0,), (-1.0,), (np.nan,)],
    "beta": [(0.5, 0.5), (1.0, 1.0), (2.0, 0.7), (1.0, 3.0), (0.0, 1.0), (1.0, -1.0), (np.nan, 2.0)],
}


@pytest.mark.parametrize("method", CONTINUOUS_METHODS)
@pytest.mark.parametrize("dist", sorted(CONTINUOUS))
def test_continuous_special_points_like_scipy(dist, method):
    f = getattr(getattr(fs, dist), method)
    for params in SPECIAL_PARAMS.get(dist, [()]):
        for loc, scale in [(0.0, 1.0), (0.3, 1.5), (0.0, 0.0), (0.0, -1.0), (np.nan, 1.0), (0.0, np.nan)]:
            got = f(SPECIAL_X, *params, loc, scale)
            expected = call(dist, method, SPECIAL_X, *params, loc, scale)
            assert_like_scipy(got, expected, *tolerances(dist, method))
            for x, e in zip(SPECIAL_X, expected):  # 0-d: a NumPy scalar, as SciPy's
                assert_like_scipy(f(x, *params, loc=loc, scale=scale), e, *tolerances(dist, method))


@pytest.mark.parametrize("method", DISCRETE_METHODS)
@pytest.mark.parametrize("dist", sorted(DISCRETE))
@given(shapes=broadcast_pairs(2 + 2), seed=seeds, data=st.data())
def test_discrete_values_like_scipy(dist, method, shapes, seed, data):
    names = DISCRETE[dist]
    k_shape, loc_shape, *param_shapes = shapes
    k = np.floor(values(k_shape, "real", seed) * 5)
    if data.draw(st.booleans()):
        k = k + np.where(values(k_shape, "unit", seed) > 0.4, 0.5, 0.0)  # some non-integers
    loc = np.floor(values(loc_shape, "real", seed + 1))
    params = [discrete_values(n, s, seed + 2 + i) for i, (n, s) in enumerate(zip(names, param_shapes))]
    got = getattr(getattr(fs, dist), method)(k, *params, loc=loc)
    assert_like_scipy(got, call(dist, method, k, *params, loc=loc), 1e-11, tolerances(dist, method)[1])


SPECIAL_K = np.array([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.5, 5.0, 6.0, np.inf, np.nan])
DISCRETE_PARAMS = {
    "poisson": [(0.0,), (1e-3,), (2.5,), (-1.0,), (np.nan,)],
    "binom": [(5, 0.3), (5, 0.0), (5, 1.0), (0, 0.4), (5.5, 0.3), (-1, 0.3), (5, 1.2), (5, np.nan)],
    "bernoulli": [(0.3,), (0.0,), (1.0,), (-0.1,), (1.5,), (np.nan,)],
}


@pytest.mark.parametrize("method", DISCRETE_METHODS)
@pytest.mark.parametrize("dist", sorted(DISCRETE))
def test_discrete_special_points_like_scipy(dist, method):
    f = getattr(getattr(fs, dist), method)
    for params in DISCRETE_PARAMS[dist]:
        for loc in [0.0, 1.0, -0.5, np.nan]:
            expected = call(dist, method, SPECIAL_K, *params, loc)
            assert_like_scipy(f(SPECIAL_K, *params, loc), expected, *tolerances(dist, method))
            assert_like_scipy(f(SPECIAL_K[4], *params, loc=loc), expected[4], *tolerances(dist, method))


def test_values_in_the_far_tails():
    x = np.array([-40.0, -10.0, 10.0, 40.0])
    assert_like_scipy(fs.logistic.logcdf(x), ss.logistic.logcdf(x))
    assert_like_scipy(fs.logistic.logsf(x), ss.logistic.logsf(x))
    assert_like_scipy(fs.laplace.logcdf(x), ss.laplace.logcdf(x))
    assert_like_scipy(fs.cauchy.logpdf(np.array([1e10, 1e200])), ss.cauchy.logpdf(np.array([1e10, 1e200])))
    assert_like_scipy(fs.expon.logsf(x), ss.expon.logsf(x))
    np.testing.assert_allclose(fs.expon.logcdf(40.0), -np.exp(-40.0), rtol=1e-15)  # SciPy: 0.0
    # t's normalisation for large df: log(Gamma((df+1)/2) / Gamma(df/2)) without cancellation.
    df = np.array([50.0, 150.0, 1e3, 1e8])
    assert_like_scipy(fs.t.logpdf(1.5, df), ss.t.logpdf(1.5, df), 1e-12)
    assert fs.laplace.logpdf(800.0) == np.log(0.5) - 800  # SciPy's log(pdf) underflows to -inf here


def test_results_are_float64_even_from_float32_and_ints():
    out = fs.norm.logpdf(np.float32(1.0), np.float32(0.0))
    assert isinstance(out, np.float64)
    assert fs.poisson.pmf(np.array([1, 2]), 3).dtype == np.float64


# --- parameters: SciPy's call forms and errors --------------------------------------------


def test_parameters_by_position_or_keyword():
    x = np.array([0.5, 1.5])
    expected = ss.gamma.logpdf(x, 2.0, 0.1, 1.5)
    for got in [fs.gamma.logpdf(x, 2.0, 0.1, 1.5), fs.gamma.logpdf(x, a=2.0, loc=0.1, scale=1.5),
                fs.gamma.logpdf(x, 2.0, scale=1.5, loc=0.1)]:
        assert_like_scipy(got, expected)
    assert_like_scipy(fs.binom.pmf(2, 5, 0.3, 1), ss.binom.pmf(2, 5, 0.3, 1))
    assert_like_scipy(fs.norm.cdf(1.0, 1.0, 2.0), 0.5)


def test_parameter_errors_name_the_parameters():
    with pytest.raises(TypeError, match=r"gamma.logpdf is missing the shape parameter\(s\) a"):
        fs.gamma.logpdf(1.0)
    with pytest.raises(TypeError, match=r"norm.cdf takes at most 2 parameters after the point \(loc, scale\)"):
        fs.norm.cdf(1.0, 0.0, 1.0, 2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'scale'; its parameters are n, p, loc"):
        fs.binom.logpmf(1, 2, 0.5, scale=1.0)
    with pytest.raises(TypeError, match="multiple values for argument 'loc'"):
        fs.t.pdf(1.0, 2.0, 0.0, loc=1.0)


def test_distribution_docstring_examples():
    for name in [n for n in fs.__all__ if n != "gaussian_kde"]:  # (a class: tests/scipy/test_stats_kde.py)
        dist = getattr(fs, name)
        assert ">>>" in dist.__doc__, name
        assert repr(dist) == f"<fgrad.scipy.stats.{name}>"
        test = doctest.DocTestParser().get_doctest(dist.__doc__, dict(vars(fs)), name, None, 0)
        runner = doctest.DocTestRunner()
        runner.run(test)
        assert runner.tries and not runner.failures, name


# --- derivatives ---------------------------------------------------------------------------


# Points inside the support, away from kinks (laplace at loc, uniform at its ends):
# x, loc of shape (3,) and (), scale and the shape parameters broadcast along (2, 1).
GRAD_X = {"uniform": np.array([0.2, 0.5, 0.9]), "beta": np.array([0.2, 0.5, 0.9]),
          "gamma": np.array([0.4, 1.0, 2.5]), "expon": np.array([0.4, 1.0, 2.5])}
GRAD_PARAMS = {"t": [np.array([[2.5], [np.inf]])], "gamma": [np.array([[0.7], [2.2]])],
               "beta": [np.array([[0.8], [2.5]]), np.array([[1.7], [0.6]])]}


@pytest.mark.parametrize("method", CONTINUOUS_METHODS)
@pytest.mark.parametrize("dist", sorted(CONTINUOUS))
def test_continuous_derivatives_in_the_point_and_loc_scale(dist, method):
    f = getattr(getattr(fs, dist), method)
    x = GRAD_X.get(dist, np.array([-1.3, 0.6, 2.1]))
    params = GRAD_PARAMS.get(dist, [])
    loc, scale = 0.05, np.array([[0.9], [1.2]])
    if dist in ("uniform", "beta", "gamma", "expon"):
        loc = 0.01
    check_grads(lambda x, loc, scale: f(x, *params, loc, scale), (x, loc, scale), order=2)


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
@pytest.mark.parametrize("dist", ["t", "gamma", "beta"])
def test_density_derivatives_in_the_shape_parameters(dist, method):
    f = getattr(getattr(fs, dist), method)
    x = GRAD_X.get(dist, np.array([-1.3, 0.6, 2.1]))
    params = [np.where(np.isinf(p), 3.0, p) for p in GRAD_PARAMS[dist]]  # a finite df: inf has no derivative
    check_grads(lambda *params: f(x, *params, scale=1.1), tuple(params), order=2)
    if dist == "t":
        check_grads(lambda df: f(x, df), (np.array([60.0, 150.0, 1e3]),), order=2)


@pytest.mark.parametrize("method", ["cdf", "logcdf", "sf", "logsf"])
@pytest.mark.parametrize("dist", ["t", "gamma", "beta"])
def test_tail_derivatives_in_the_shape_parameters_are_right_or_raise(dist, method):
    # gammainc and betainc have first derivatives in their shape parameters (gammainc_grad_a,
    # betainc_grad_ab): the tails are right to order 1 in each, and a second derivative
    # raises, naming the function: an error, never a number.
    f = getattr(getattr(fs, dist), method)
    x = GRAD_X.get(dist, np.array([-1.3, 0.6, 2.1]))
    params = [np.where(np.isinf(p), 3.0, p) for p in GRAD_PARAMS[dist]]
    check_grads(lambda *params: f(x, *params), tuple(params), order=1)
    match = "gammainc" if dist == "gamma" else "betainc"
    for i in range(len(params)):
        def g(p, i=i):
            return f(x, *params[:i], p, *params[i + 1:])

        with pytest.raises(NotImplementedError, match=rf"{match}: the second derivative"):
            check_grads(g, (params[i],), order=2)


def test_derivatives_at_the_edge_of_the_support_are_those_of_the_formula():
    # Outside the support the value is a constant: derivative 0, not nan.
    assert fgrad.grad(lambda x: fs.gamma.logpdf(x, 2.0))(-1.0) == 0.0
    assert fgrad.grad(lambda a: fs.gamma.logpdf(-1.0, a))(2.0) == 0.0
    assert fgrad.grad(lambda x: fs.beta.pdf(x, 0.5, 0.5))(1.5) == 0.0
    assert fgrad.grad(lambda s: fs.norm.logpdf(1.0, scale=s))(-1.0) == 0.0  # nan value, no nan derivative
    assert fgrad.grad(lambda x: fs.expon.cdf(x))(-1.0) == 0.0
    # At the edge itself, that of the formula: d/dx log(x e**-x) = 1/x - 1 is inf at 0.
    assert fgrad.grad(lambda x: fs.gamma.logpdf(x, 2.0))(0.0) == np.inf
    assert fgrad.grad(lambda x: fs.gamma.logpdf(x, 1.0))(0.0) == -1.0
    # A parameter broadcast over points, one outside the support: that one adds 0 to the gradient.
    g = fgrad.grad(lambda a: fgrad.numpy.sum(fs.gamma.logpdf(np.array([-1.0, 0.5, 2.0]), a)))(1.5)
    np.testing.assert_allclose(g, np.log(0.5) + np.log(2.0) - 2 * digamma(1.5), rtol=1e-14)


@pytest.mark.parametrize("method", ["logpmf", "pmf"])
@pytest.mark.parametrize("dist", sorted(DISCRETE))
def test_discrete_derivatives_in_the_parameters(dist, method):
    f = getattr(getattr(fs, dist), method)
    k = np.array([0.0, 1.0, 3.0]) if dist != "bernoulli" else np.array([0.0, 1.0, 1.0])
    if dist == "poisson":
        check_grads(lambda mu: f(k, mu), (np.array([[0.7], [3.2]]),), order=2)
    elif dist == "binom":
        check_grads(lambda p: f(k, np.array([[4], [6]]), p), (np.array([[0.2], [0.7]]),), order=2)
    else:
        check_grads(lambda p: f(k, p), (np.array([[0.2], [0.7]]),), order=2)


@pytest.mark.parametrize("method", ["cdf", "logcdf", "sf", "logsf"])
def test_bernoulli_tail_derivatives(method):
    f = getattr(fs.bernoulli, method)
    check_grads(lambda p: f(np.array([0.0, 0.5]), p), (np.array([[0.2], [0.7]]),), order=2)
    assert fgrad.grad(lambda p: f(2.0, p))(0.4) == 0.0  # above the support: constant


def test_discrete_derivative_in_k_is_the_formulas():
    # d/dk of k log mu - gammaln(k + 1) - mu at an integer k: log mu - digamma(k + 1).
    g = fgrad.grad(lambda k: fs.poisson.logpmf(k, 2.0))(3.0)
    np.testing.assert_allclose(g, np.log(2.0) - digamma(4.0), rtol=1e-14)
    assert fgrad.grad(lambda k: fs.poisson.logpmf(k, 2.0))(2.5) == 0.0  # off the integers: -inf, constant


# --- ppf and isf -------------------------------------------------------------------------------

# Issue 25: the quantile functions where JAX has them (ppf: norm, expon, logistic, cauchy,
# uniform, bernoulli; isf: norm, logistic, cauchy and, as SciPy, expon and uniform).
INVERTIBLE = ["norm", "expon", "logistic", "cauchy", "uniform"]


def test_quantiles_exactly_where_jax_has_them():
    for name in INVERTIBLE:
        assert callable(getattr(fs, name).ppf) and callable(getattr(fs, name).isf)
    assert callable(fs.bernoulli.ppf)
    for name in ["t", "gamma", "beta", "laplace", "poisson", "binom"]:
        assert not hasattr(getattr(fs, name), "ppf"), name  # an AttributeError, as JAX's


def quantile_tolerances(dist):
    # SciPy's cauchy ppf (Boost's -1 / tan(pi p)) loses relative digits near q = 1/2, where the
    # value is small: known absolutely to ~1e-16 there (fgrad's is exact, see below).
    return (1e-12, 1e-15) if dist == "cauchy" else (1e-12, 1e-300)


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("dist", INVERTIBLE)
@given(shapes=broadcast_pairs(3), seed=seeds)
def test_quantile_values_like_scipy(dist, method, shapes, seed):
    q_shape, loc_shape, scale_shape = shapes
    q = np.random.default_rng(seed).uniform(size=q_shape)
    loc = values(loc_shape, "unit", seed + 1)
    scale = values(scale_shape, "positive", seed + 2)
    got = getattr(getattr(fs, dist), method)(q, loc, scale)
    assert_like_scipy(got, call(dist, method, q, loc=loc, scale=scale), *quantile_tolerances(dist))


SPECIAL_Q = np.array([-0.1, 0.0, 1e-300, 1e-20, 0.3, 0.5, 0.75, 1.0 - 1e-16, 1.0, 1.1, np.inf, np.nan])


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("dist", INVERTIBLE)
def test_quantile_special_points_like_scipy(dist, method):
    # The ends of the support at q = 0 and 1, nan outside [0, 1] and for invalid loc and scale.
    f = getattr(getattr(fs, dist), method)
    for loc, scale in [(0.0, 1.0), (0.3, 1.5), (0.0, 0.0), (0.0, -1.0), (np.nan, 1.0), (0.0, np.nan), (1.0, np.inf)]:
        expected = call(dist, method, SPECIAL_Q, loc, scale)
        assert_like_scipy(f(SPECIAL_Q, loc, scale), expected, *quantile_tolerances(dist))
        for q, e in zip(SPECIAL_Q, expected):
            assert_like_scipy(f(q, loc=loc, scale=scale), e, *quantile_tolerances(dist))


def test_quantiles_invert_the_distribution_functions():
    q = np.array([1e-12, 0.01, 0.3, 0.5, 0.77, 0.999])
    for name in INVERTIBLE:
        dist = getattr(fs, name)
        np.testing.assert_allclose(dist.cdf(dist.ppf(q, scale=1.5), scale=1.5), q, rtol=1e-13)
        np.testing.assert_allclose(dist.sf(dist.isf(q, scale=1.5), scale=1.5), q, rtol=1e-13, atol=1e-16)  # uniform: 1 - (1 - q)
    # cauchy: tan(pi (q - 1/2)) is exact in the middle, where q - 1/2 is.
    middle = np.array([0.25, 0.4999, 0.5, 0.5 + 1e-9, 0.6, 0.75])
    np.testing.assert_allclose(fs.cauchy.ppf(middle), np.tan(np.pi * (middle - 0.5)), rtol=1e-15)
    assert fs.cauchy.ppf(0.5) == 0.0 and fs.cauchy.isf(0.5) == 0.0
    np.testing.assert_allclose(fs.cauchy.ppf(1e-300), -1 / (np.pi * 1e-300), rtol=1e-15)  # the far tail


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("dist", INVERTIBLE)
def test_quantile_derivatives_in_q_loc_scale(dist, method):
    f = getattr(getattr(fs, dist), method)
    q = np.array([0.02, 0.3, 0.5, 0.8, 0.97])
    check_grads(f, (q, np.array([[0.1], [-0.4]]), np.array([[0.9], [1.7]])), order=2)
    check_grads(f, (np.float64(0.3),), order=2)


def test_norm_ppf_derivatives_closed_form():
    # d/dq (loc + scale ndtri(q)) = scale sqrt(2 pi) exp(ndtri(q)**2 / 2) = scale / pdf(ppf(q)).
    q = np.array([1e-10, 0.025, 0.5, 0.9])
    z = ss.norm.ppf(q)
    for grad_fn in [fgrad.vmap(fgrad.grad(fs.norm.ppf), in_axes=(0, None, None)),
                    fgrad.jit(fgrad.vmap(fgrad.grad(fs.norm.ppf), in_axes=(0, None, None)))]:
        np.testing.assert_allclose(grad_fn(q, 0.3, 2.0), 2.0 * np.sqrt(2 * np.pi) * np.exp(z**2 / 2), rtol=1e-13)
    np.testing.assert_allclose(fgrad.grad(fs.norm.ppf, argnums=2)(q[1], 0.3, 2.0), z[1], rtol=1e-14)
    assert fgrad.grad(fs.norm.ppf, argnums=1)(q[1], 0.3, 2.0) == 1.0
    np.testing.assert_allclose(fgrad.grad(fs.norm.isf)(q[1]), -np.sqrt(2 * np.pi) * np.exp(z[1] ** 2 / 2),
                               rtol=1e-13)


def test_quantile_derivatives_at_the_ends_are_constants_not_nan():
    # At q = 0 and 1 the value is an end of the support: constant in q; an infinite end is
    # constant in loc and scale too, a finite one moves with them.
    assert fgrad.grad(fs.norm.ppf)(0.0) == 0.0 and fgrad.grad(fs.norm.ppf, argnums=2)(1.0, 0.0, 2.0) == 0.0
    assert fgrad.grad(fs.expon.ppf, argnums=(0, 1, 2))(0.0, 0.5, 2.0) == (0.0, 1.0, 0.0)
    assert fgrad.grad(fs.uniform.isf, argnums=(0, 1, 2))(0.0, 0.5, 2.0) == (0.0, 1.0, 1.0)
    # An invalid scale beside q = 0: nan values, but no nan in the gradient.
    g = fgrad.grad(lambda s: fgrad.numpy.sum(fs.norm.ppf(np.array([0.0, 0.3]), 0.0, s)))(-1.0)
    assert g == 0.0


SPECIAL_BERNOULLI_Q = np.array([-0.1, 0.0, 1e-300, 0.2, 0.5, 0.69, 0.71, 0.95, 1.0, 1.1, np.nan])


def test_bernoulli_ppf_like_scipy():
    # SciPy's convention: ppf(0) = -1 (one below the support), where JAX's gives 0.
    for p in [0.3, 0.0, 1.0, 0.95, -0.1, 1.5, np.nan]:
        for loc in [0.0, 2.0, -0.5, np.nan]:
            expected = ss.bernoulli.ppf(SPECIAL_BERNOULLI_Q, p, loc)
            assert_like_scipy(fs.bernoulli.ppf(SPECIAL_BERNOULLI_Q, p, loc), expected)
            assert_like_scipy(fs.bernoulli.ppf(SPECIAL_BERNOULLI_Q[4], p, loc=loc), expected[4])
    q, p = np.random.default_rng(5).uniform(size=(2, 3, 40))
    q = np.where(np.abs(q - (1 - p)) < 1e-9, 0.5, q)  # (within ulps of 1 - p, Boost's rounding decides)
    assert_like_scipy(fs.bernoulli.ppf(q, p), ss.bernoulli.ppf(q, p))
    assert fgrad.grad(fs.bernoulli.ppf, argnums=(0, 1, 2))(0.4, 0.3, 1.0) == (0.0, 0.0, 1.0)
    got = fgrad.vmap(fs.bernoulli.ppf)(q[0], p[0])
    assert_like_scipy(got, ss.bernoulli.ppf(q[0], p[0]))


# --- multivariate_normal -------------------------------------------------------------------


def spd(dim, seed):
    a = np.random.default_rng(seed).normal(size=(dim, dim))
    return a @ a.T + 0.5 * np.eye(dim)


@pytest.mark.parametrize("allow_singular", [False, True])
@given(seed=seeds, dim=st.integers(1, 4), data=st.data())
def test_multivariate_normal_values_like_scipy(allow_singular, seed, dim, data):
    rng = np.random.default_rng(seed)
    x_shape = data.draw(st.sampled_from([(dim,), (1, dim), (3, dim), (2, 1, dim), (2, 3, dim)]))
    x = rng.normal(size=x_shape)
    mean = data.draw(st.sampled_from([None, rng.normal(size=dim)]))
    # (Without a mean, a scalar or vector cov means dimension 1.)
    covs = [spd(dim, seed)] + ([1.7, rng.uniform(0.5, 2, size=dim)] if mean is not None or dim == 1 else [])
    cov = data.draw(st.sampled_from(covs))
    for method in ["logpdf", "pdf"]:
        got = getattr(fs.multivariate_normal, method)(x, mean, cov, allow_singular)
        expected = getattr(ss.multivariate_normal, method)(x, mean, cov, allow_singular)
        assert_like_scipy(got, expected, 1e-11)


def test_multivariate_normal_shapes_like_scipy():
    cases = [(0.5, None, 1), ([0.5, 1.0], None, 1), ([0.5, 1.0], [0.0, 0.0], [1.0, 2.0]),
             ([[0.5, 1.0]], [0.1, 0.2], [[2.0, 0.3], [0.3, 1.0]]), ([[0.5], [1.0]], 0.2, 2.0)]
    for x, mean, cov in cases:
        assert_like_scipy(fs.multivariate_normal.logpdf(x, mean, cov), ss.multivariate_normal.logpdf(x, mean, cov))


def test_multivariate_normal_singular_like_scipy():
    cov = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    x = np.array([[1.0, 1.0, 0.5], [1.0, 2.0, 0.0], [-0.3, -0.3, 1.0]])  # the second is off the support
    expected = ss.multivariate_normal.logpdf(x, [0.0, 0.0, 0.0], cov, allow_singular=True)
    assert_like_scipy(fs.multivariate_normal.logpdf(x, [0.0, 0.0, 0.0], cov, allow_singular=True), expected)
    assert expected[1] == -np.inf
    with pytest.raises(np.linalg.LinAlgError, match="the input matrix must be symmetric positive definite"):
        fs.multivariate_normal.logpdf(x, cov=cov)
    with pytest.raises(ValueError, match="must be symmetric positive semidefinite"):
        fs.multivariate_normal.logpdf([0.0, 0.0], cov=[[1.0, 2.0], [2.0, 1.0]], allow_singular=True)
    # The gradient in x on the support: -pinv(cov) (x - mean). (A finite difference in a random
    # direction would leave the support.)
    g = fgrad.grad(lambda x: fs.multivariate_normal.logpdf(x, None, cov, allow_singular=True))(x[0])
    np.testing.assert_allclose(g, -np.linalg.pinv(cov) @ x[0], rtol=1e-12)
    assert fgrad.grad(lambda x: fs.multivariate_normal.logpdf(x, None, cov, allow_singular=True))(x[1]).tolist() == [0, 0, 0]
    # Under jit the value of cov is not known: the eigendecomposition route, SciPy's values.
    jitted = fgrad.jit(lambda x, cov: fs.multivariate_normal.logpdf(x, None, cov, allow_singular=True))
    assert_like_scipy(jitted(x, cov), expected)
    # A nonsingular cov known under grad takes the Cholesky route: a derivative even at repeated eigenvalues.
    d = np.array([0.3, 0.2])
    g = fgrad.grad(lambda c: fs.multivariate_normal.logpdf(d, None, c, allow_singular=True))(np.eye(2))
    np.testing.assert_allclose(g, [[0.5 * (0.09 - 1), 0.03], [0.03, 0.5 * (0.04 - 1)]], rtol=1e-14)


def test_multivariate_normal_parameter_errors_like_scipy():
    with pytest.raises(ValueError, match="Array 'mean' must be a vector of length 4"):
        fs.multivariate_normal.logpdf(np.zeros(2), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"Array 'cov' must be square if it is two dimensional, but cov.shape = \(2, 3\)"):
        fs.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"Dimension mismatch: array 'cov' is of shape \(3, 3\), but 'mean' is a "
                                         "vector of length 2"):
        fs.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="must be at most two-dimensional, but cov.ndim = 3"):
        fs.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.ones((2, 2, 2)))


@pytest.mark.parametrize("allow_singular", [False, True])
def test_multivariate_normal_derivatives(allow_singular):
    rng = np.random.default_rng(0)
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])  # distinct eigenvalues
    x, mean = rng.normal(size=(4, 3)), rng.normal(size=3)
    for method in ["logpdf", "pdf"]:
        f = getattr(fs.multivariate_normal, method)
        check_grads(lambda x, mean, cov: f(x, mean, cov, allow_singular), (x, mean, cov), order=2)
    # The gradient in cov of the log density: the symmetric (S^-1 d d^T S^-1 - S^-1) / 2.
    g = fgrad.grad(lambda cov: fs.multivariate_normal.logpdf(x[0], mean, cov, allow_singular))(cov)
    np.testing.assert_allclose(g, mvn_cov_gradient(x[0] - mean, cov), rtol=1e-10)


def mvn_cov_gradient(d, cov):
    """d/d cov of log N(x; mean, cov) with d = x - mean, cov taken as a symmetric matrix."""
    inv = np.linalg.inv(cov)
    return 0.5 * (inv @ np.outer(d, d) @ inv - inv)


@pytest.mark.parametrize("allow_singular", [False, True])
def test_multivariate_normal_gradient_in_cov_is_symmetric(allow_singular):
    # Issue 25: the gradient was read from the lower triangle alone (cholesky's, eigh's), so a gradient
    # step made cov unsymmetric. It is the symmetric closed form, as JAX's.
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
    rng = np.random.default_rng(3)
    xs, mean = rng.normal(size=(4, 3)), rng.normal(size=3)

    def logpdf(x, cov):
        return fs.multivariate_normal.logpdf(x, mean, cov, allow_singular)

    expected = mvn_cov_gradient(xs[0] - mean, cov)
    grad = fgrad.grad(logpdf, argnums=1)
    for g in [grad(xs[0], cov), fgrad.jit(grad)(xs[0], cov)]:
        np.testing.assert_array_equal(g, g.T)
        np.testing.assert_allclose(g, expected, rtol=1e-10)
    # Batched x: the sum over the points; pdf: the density times the log density's gradient.
    g = fgrad.grad(lambda cov: fgrad.numpy.sum(logpdf(xs, cov)))(cov)
    np.testing.assert_allclose(g, sum(mvn_cov_gradient(x - mean, cov) for x in xs), rtol=1e-10)
    g = fgrad.grad(lambda cov: fs.multivariate_normal.pdf(xs[0], mean, cov, allow_singular))(cov)
    np.testing.assert_allclose(g, ss.multivariate_normal.pdf(xs[0], mean, cov) * expected, rtol=1e-10)
    # vmap over the points, and over covariances.
    per_point = [mvn_cov_gradient(x - mean, cov) for x in xs]
    np.testing.assert_allclose(fgrad.vmap(grad, in_axes=(0, None))(xs, cov), per_point, rtol=1e-10)
    covs = np.stack([spd(3, i) for i in range(3)])
    per_cov = [mvn_cov_gradient(xs[0] - mean, c) for c in covs]
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(grad, in_axes=(None, 0)))(xs[0], covs), per_cov, rtol=1e-10)
    # Central differences along symmetric directions E: <g, E>.
    g = grad(xs[0], cov)
    for _ in range(3):
        e = rng.normal(size=(3, 3))
        e = e + e.T
        h = 1e-6
        fd = (logpdf(xs[0], cov + h * e) - logpdf(xs[0], cov - h * e)) / (2 * h)
        np.testing.assert_allclose(np.sum(g * e), fd, rtol=1e-7)


def test_multivariate_normal_reads_cov_as_its_symmetric_part():
    # A cov that is not symmetric is read as (cov + cov^T) / 2, as JAX reads it (SciPy reads the lower
    # triangle), so that the derivative is the symmetric one.
    cov = np.array([[2.0, 0.1], [0.5, 1.0]])
    x = np.array([0.3, -0.2])
    symmetric = 0.5 * (cov + cov.T)
    np.testing.assert_allclose(fs.multivariate_normal.logpdf(x, None, cov),
                               ss.multivariate_normal.logpdf(x, None, symmetric), rtol=1e-14)


def test_multivariate_normal_vmap_and_jit():
    rng = np.random.default_rng(1)
    covs = np.stack([spd(3, i) for i in range(4)])
    xs, means = rng.normal(size=(4, 5, 3)), rng.normal(size=(4, 3))
    got = fgrad.vmap(fs.multivariate_normal.logpdf)(xs, means, covs)
    expected = [ss.multivariate_normal.logpdf(x, m, c) for x, m, c in zip(xs, means, covs)]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    jitted = fgrad.jit(fs.multivariate_normal.logpdf)
    np.testing.assert_allclose(jitted(xs[0], means[0], covs[0]), expected[0], rtol=1e-12)
    got = fgrad.vmap(lambda c: fs.multivariate_normal.logpdf(xs[0], None, c, allow_singular=True))(covs)
    expected = [ss.multivariate_normal.logpdf(xs[0], None, c) for c in covs]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# --- dirichlet -----------------------------------------------------------------------------


@given(seed=seeds, k=st.integers(2, 4), n=st.sampled_from([None, 1, 3]), drop_last=st.booleans())
def test_dirichlet_values_like_scipy(seed, k, n, drop_last):
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.3, 4, size=k)
    x = rng.dirichlet(alpha, size=n).T if n else rng.dirichlet(alpha)
    x = np.clip(x, 1e-12, None)
    x = x / np.sum(x, axis=0)
    if drop_last:
        x = x[:-1]
    for method in ["logpdf", "pdf"]:
        assert_like_scipy(getattr(fs.dirichlet, method)(x, alpha), getattr(ss.dirichlet, method)(x, alpha), 1e-11)


def test_dirichlet_errors_like_scipy():
    alpha = np.array([1.0, 2.0, 0.5])
    cases = [
        ([0.2, 0.8], [1.0, -1.0, 2.0], "All parameters must be greater than 0"),
        ([0.2, 0.8], [[1.0, 2.0]], "Parameter vector 'a' must be one dimensional"),
        ([0.2, 0.3, 0.4, 0.1], alpha, "Vector 'x' must have either the same number of entries as, or one entry fewer"),
        ([-0.2, 0.7, 0.5], alpha, "Each entry in 'x' must be greater than or equal to zero"),
        ([1.2, -0.1, -0.1], np.ones(3), "Each entry in 'x' must be greater than or equal to zero"),
        ([0.5, 0.5, 0.0], alpha, "Each entry in 'x' must be greater than zero if its alpha is less than one"),
        ([0.2, 0.3, 0.4], alpha, "The input vector 'x' must lie within the normal simplex"),
    ]
    for x, a, message in cases:
        with pytest.raises(ValueError, match=message):
            ss.dirichlet.logpdf(x, a)
        with pytest.raises(ValueError, match=message):
            fs.dirichlet.logpdf(x, a)


def test_dirichlet_derivatives_vmap_and_jit():
    alpha = np.array([0.7, 2.0, 3.5])
    x = np.array([[0.2, 0.5], [0.3, 0.1]])  # two points, the last components left out
    for method in ["logpdf", "pdf"]:
        check_grads(lambda x, alpha: getattr(fs.dirichlet, method)(x, alpha), (x, alpha), order=2)
    alphas = np.array([[0.7, 2.0, 3.5], [1.5, 1.0, 0.4]])
    got = fgrad.vmap(fs.dirichlet.logpdf, in_axes=(None, 0))(x, alphas)
    np.testing.assert_allclose(got, [ss.dirichlet.logpdf(x, a) for a in alphas], rtol=1e-12)
    np.testing.assert_allclose(fgrad.jit(fs.dirichlet.logpdf)(x, alpha), ss.dirichlet.logpdf(x, alpha), rtol=1e-12)


# --- vmap and jit -----------------------------------------------------------------------------


def test_vmap_equals_a_loop_with_invalid_entries():
    xs = np.array([[-1.0, 0.5, 2.0], [0.0, 1.0, 3.0]])
    a = np.array([1.5, -1.0])  # the second is invalid: nan throughout
    scales = np.array([[1.0], [2.0]])
    got = fgrad.vmap(lambda x, a, s: fs.gamma.logpdf(x, a, scale=s))(xs, a, scales)
    expected = np.stack([ss.gamma.logpdf(x, ai, scale=s) for x, ai, s in zip(xs, a, scales)])
    assert_like_scipy(got, expected)
    got = fgrad.vmap(fs.binom.logpmf, in_axes=(0, None, 0))(xs, 3, np.array([0.2, 0.9]))
    assert_like_scipy(got, np.stack([ss.binom.logpmf(k, 3, p) for k, p in zip(xs, [0.2, 0.9])]))


@pytest.mark.parametrize("dist, method, params", [
    ("norm", "logpdf", ()), ("gamma", "logpdf", (np.array([0.5, -1.0, 2.0]),)),
    ("t", "pdf", (np.array([1.0, np.inf, 4.0]),)), ("laplace", "cdf", ()), ("cauchy", "logsf", ()),
    ("uniform", "logpdf", ()), ("norm", "ppf", ()), ("cauchy", "isf", ()), ("expon", "ppf", ()),
])
def test_jit_equals_eager(dist, method, params):
    f = getattr(getattr(fs, dist), method)
    x = np.array([-0.5, 0.3, 2.0]) if method not in ("ppf", "isf") else np.array([0.0, 0.3, 0.9])
    jitted = fgrad.jit(lambda x, scale, *p: f(x, *p, scale=scale))
    for scale in [1.5, -1.0]:
        assert_like_scipy(jitted(x, scale, *params), call(dist, method, x, *params, scale=scale))


def test_jit_of_the_discrete_ones():
    k = np.array([-1.0, 0.0, 1.5, 2.0, 7.0])
    got = fgrad.jit(fs.poisson.logpmf)(k, 2.0)
    assert_like_scipy(got, ss.poisson.logpmf(k, 2.0))
    got = fgrad.jit(fs.bernoulli.cdf)(k, 0.3)
    assert_like_scipy(got, ss.bernoulli.cdf(k, 0.3))


BATCH_CASES = {  # vmap == loop (tests/transforms/test_batching.py): label -> (f, example shapes, domain)
    "stats.norm.logpdf": (lambda x, loc, scale: fs.norm.logpdf(x, loc, scale), [(3,), (), ()], "positive"),
    "stats.gamma.logpdf": (lambda x, a: fs.gamma.logpdf(x, a), [(3,), (3,)], "positive"),
    "stats.t.logpdf": (lambda x, df: fs.t.logpdf(x, df), [(2,), ()], "positive"),
    "stats.beta.logpdf": (lambda x, a, b: fs.beta.logpdf(x / 2.5, a, b), [(2,), (), (2,)], "positive"),
    "stats.logistic.logcdf": (lambda x: fs.logistic.logcdf(x), [(3,)], "real"),
    "stats.norm.ppf": (lambda q, loc, scale: fs.norm.ppf(q / 2.5, loc, scale), [(3,), (), ()], "positive"),
    "stats.cauchy.isf": (lambda q: fs.cauchy.isf(q / 2.5), [(2,)], "positive"),
    "stats.poisson.logpmf": (lambda mu: fs.poisson.logpmf(np.array([0.0, 2.0]), mu), [()], "positive"),
    "stats.multivariate_normal.logpdf": (
        lambda x, m: fs.multivariate_normal.logpdf(x, m, np.array([[2.0, 0.5], [0.5, 1.0]])),
        [(3, 2), (2,)], "real"),
    "stats.dirichlet.logpdf": (
        lambda alpha: fs.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), alpha), [(3,)], "positive"),
}


def test_dirichlet_under_jit_and_vmap_gives_minus_inf_and_nan_where_scipy_raises():
    x = np.array([[0.2, -0.1, 0.3], [0.8, 1.1, 0.3]])  # the second point has a negative entry, the third sums to 0.6
    got = fgrad.jit(fs.dirichlet.logpdf)(x, np.array([2.0, 3.0]))
    assert got[0] == pytest.approx(ss.dirichlet.logpdf(x[:, 0], [2.0, 3.0]), rel=1e-14)
    assert got[1] == got[2] == -np.inf
    got = fgrad.vmap(fs.dirichlet.logpdf, in_axes=(None, 0))(x[:, 0], np.array([[2.0, 3.0], [-1.0, 3.0]]))
    assert got[0] == pytest.approx(ss.dirichlet.logpdf(x[:, 0], [2.0, 3.0]), rel=1e-14) and np.isnan(got[1])


def test_derivatives_at_the_centre_of_symmetric_distributions():
    # Written without |x| where the function is smooth, so that the derivatives at 0 are right.
    def d(f, order):
        for _ in range(order):
            f = fgrad.grad(f)
        return f(0.0)

    assert d(fs.logistic.logpdf, 2) == pytest.approx(-0.5, rel=1e-14)  # -2 pdf(0)
    assert d(fs.logistic.logcdf, 1) == pytest.approx(0.5, rel=1e-14)
    assert d(fs.logistic.logsf, 2) == pytest.approx(-0.25, rel=1e-14)
    assert d(fs.cauchy.logpdf, 2) == pytest.approx(-2.0, rel=1e-14)
    assert d(fs.laplace.cdf, 1) == pytest.approx(0.5, rel=1e-14)
    assert d(fs.laplace.logcdf, 1) == pytest.approx(1.0, rel=1e-14)
    for df in [0.7, 3.0]:
        assert d(lambda x: fs.t.cdf(x, df), 1) == pytest.approx(ss.t.pdf(0.0, df), rel=1e-13)
        assert d(lambda x: fs.t.cdf(x, df), 2) == 0.0
        assert d(lambda x: fs.t.sf(x, df), 1) == pytest.approx(-ss.t.pdf(0.0, df), rel=1e-13)
    for f in [fs.norm.logcdf, fs.logistic.cdf, fs.cauchy.cdf, lambda x: fs.t.cdf(x, 2.5)]:
        check_grads(f, (np.array([0.0, 0.0]),), order=2)
