"""Special-function primitives (erf, erfc, erf_inv, lgamma, digamma, polygamma,
logistic, logit, xlogy, xlog1py, entr): values against the standard library
and known constants, to about 1e-15; identities (recurrences, reflections,
inverses); derivatives against finite differences to second order in both
modes; SciPy's dtypes and values at the poles."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.special as fsp
from fgrad.test_util import check_grads
from tests.numpy_checks import staged_with_aval
from tests.strategies import broadcast_pairs, seeds, shapes, values

PRIMITIVES = {
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma", "logistic", "logit", "xlogy", "xlog1py",
    "entr",
}

BATCH_CASES = {
    "erf": (fsp.erf, [(2, 3)], "real"),
    "erfc": (fsp.erfc, [(3,)], "real"),
    "erf_inv": (fsp.erfinv, [(3,)], "unit"),
    "lgamma": (fsp.gammaln, [(2, 3)], "nonzero"),
    "digamma": (fsp.digamma, [(3,)], "positive"),
    "polygamma": (lambda x: fsp.polygamma(2, x), [(2, 2)], "positive"),
    "polygamma_orders": (lambda x: fsp.polygamma(np.array([0, 1, 3]), x), [(3,)], "positive"),
    "logistic": (fsp.expit, [(3,)], "real"),
    "logit": (lambda p: fsp.logit(0.5 + 0.5 * p), [(2, 3)], "unit"),
    "xlogy": (fsp.xlogy, [(2, 3), (3,)], "positive"),
    "xlog1py": (fsp.xlog1py, [(3,), ()], "positive"),
    "entr": (fsp.entr, [(3,)], "positive"),
}

EULER_GAMMA = 0.57721566490153286061
ZETA = {2: math.pi**2 / 6, 3: 1.2020569031595942854, 4: math.pi**4 / 90, 5: 1.0369277551433699263,
        6: math.pi**6 / 945}


def negative_values(shape, seed):
    """Values in (-0.8, -0.2) and (-1.8, -1.2): negative, away from the poles."""
    u = values(shape, "positive", seed) / 2.5
    return -u - np.where(np.random.default_rng(seed + 1).uniform(size=shape) < 0.5, 0.0, 1.0)


def assert_close(actual, expected, rtol, atol=0.0):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), expected, rtol=rtol, atol=atol)


# --- erf, erfc ----------------------------------------------------------------------


ERF_POINTS = np.concatenate([
    np.linspace(-6, 6, 2001), np.geomspace(1e-300, 1, 200), -np.geomspace(1e-12, 3, 100),
])
ERFC_POINTS = np.concatenate([np.linspace(-6, 26.5, 3001), np.geomspace(1e-30, 26, 200)])


def test_erf_matches_the_standard_library_everywhere():
    assert_close(fsp.erf(ERF_POINTS), [math.erf(x) for x in ERF_POINTS], rtol=1e-15)


def test_erfc_matches_the_standard_library_also_where_it_is_tiny():
    expected = np.array([math.erfc(x) for x in ERFC_POINTS])
    assert_close(fsp.erfc(ERFC_POINTS), expected, rtol=2e-15)
    assert expected.min() < 1e-300  # the far tail, where 1 - erf(x) would be 0


def test_erf_and_erfc_of_scalars_and_at_the_ends():
    for x in (0.0, 0.3, -2.5, 7.0, 1e-200):
        assert fsp.erf(x) == pytest.approx(math.erf(x), rel=1e-15)
        assert fsp.erfc(x) == pytest.approx(math.erfc(x), rel=1e-15)
    ends = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 30.0, -30.0] * 50)  # the kernel, not math
    np.testing.assert_array_equal(fsp.erf(ends)[:7], [1, -1, np.nan, 0, -0.0, 1, -1])
    np.testing.assert_array_equal(fsp.erfc(ends)[:7], [0, 2, np.nan, 1, 1, 0, 2])
    assert np.signbit(fsp.erf(ends)[4])


@pytest.mark.parametrize("f, ref", [(fsp.erf, math.erf), (fsp.erfc, math.erfc)], ids=["erf", "erfc"])
@given(shape=shapes, seed=seeds)
def test_erf_erfc_values_and_derivatives(f, ref, shape, seed):
    x = values(shape, "real", seed) * 1.5
    assert_close(f(x), np.vectorize(ref)(x), rtol=2e-15)
    assert_close(staged_with_aval(f, x)[0], np.vectorize(ref)(x), rtol=2e-15)
    check_grads(f, (x,), order=2)


def test_erf_derivative_is_the_gaussian():
    x = np.linspace(-3, 3, 7)
    assert_close(fgrad.vmap(fgrad.grad(fsp.erf))(x), 2 / np.sqrt(np.pi) * np.exp(-x * x), rtol=1e-15)
    assert_close(fgrad.vmap(fgrad.grad(fsp.erfc))(x), -2 / np.sqrt(np.pi) * np.exp(-x * x), rtol=1e-15)


# --- erf_inv ----------------------------------------------------------------------------


def test_erfinv_inverts_erf():
    y = np.concatenate([np.linspace(-0.999, 0.999, 1001), np.geomspace(1e-300, 0.5, 100)])
    assert_close(fsp.erf(fsp.erfinv(y)), y, rtol=2e-15, atol=1e-300)
    x = np.linspace(-1.5, 1.5, 1001)  # beyond, erf(x) rounds too close to 1 to recover x
    assert_close(fsp.erfinv(fsp.erf(x)), x, rtol=2e-15, atol=1e-300)
    d = 1 - (1 - np.geomspace(1.2e-16, 1e-2, 200))  # near 1 (exactly representable distances)
    assert_close(fsp.erfc(fsp.erfinv(1 - d)), d, rtol=1e-13)  # erfc(x) amplifies x's rounding by 2x**2


def test_erfinv_special_values():
    y = np.array([0.0, 1.0, -1.0, 1.5, -2.0, np.nan])
    np.testing.assert_array_equal(fsp.erfinv(y), [0, np.inf, -np.inf, np.nan, np.nan, np.nan])
    assert fsp.erfinv(0.5204998778130465) == pytest.approx(0.5, rel=1e-15)


@given(shape=shapes, seed=seeds)
def test_erfinv_derivatives(shape, seed):
    y = values(shape, "unit", seed)
    check_grads(fsp.erfinv, (y,), order=2)
    assert_close(staged_with_aval(fsp.erfinv, y)[0], fsp.erfinv(y), rtol=1e-15)


# --- gammaln -------------------------------------------------------------------------


def test_gammaln_matches_the_standard_library_away_from_its_zeros():
    # math.lgamma itself loses relative precision near 1 and 2 (down to 1e-7):
    # compare there to an absolute error, elsewhere to a relative one.
    x = np.concatenate([np.linspace(0.01, 40, 2001), np.geomspace(1e-300, 1e300, 300)])
    expected = np.array([math.lgamma(v) for v in x])
    near_zero = (np.abs(x - 1) < 0.1) | (np.abs(x - 2) < 0.1)
    assert_close(fsp.gammaln(x[~near_zero]), expected[~near_zero], rtol=1e-14)
    assert_close(fsp.gammaln(x[near_zero]), expected[near_zero], rtol=0, atol=1.5e-15)


def test_gammaln_keeps_its_relative_precision_at_its_zeros():
    # lgamma(1 + e) = -gamma e + zeta(2)/2 e**2 - ..., lgamma(2 + e) = (1 - gamma) e + (zeta(2) - 1)/2 e**2
    for e in (1e-5, -1e-7, 3e-10, -1e-14):
        assert fsp.gammaln(1 + e) == pytest.approx(-EULER_GAMMA * e + ZETA[2] / 2 * e**2, rel=1e-13)
        assert fsp.gammaln(2 + e) == pytest.approx((1 - EULER_GAMMA) * e + (ZETA[2] - 1) / 2 * e**2, rel=1e-13)
    assert fsp.gammaln(1.0) == 0.0 and fsp.gammaln(2.0) == 0.0


def test_gammaln_of_integers_halves_and_negatives():
    n = np.arange(1, 60)
    assert_close(fsp.gammaln(n), [math.log(math.factorial(k - 1)) for k in n], rtol=1e-15, atol=1e-300)
    assert fsp.gammaln(0.5) == pytest.approx(0.5 * math.log(math.pi), rel=1e-15)
    assert fsp.gammaln(-0.5) == pytest.approx(math.log(2 * math.sqrt(math.pi)), rel=1e-15)
    assert fsp.gammaln(-1.5) == pytest.approx(math.log(4 / 3 * math.sqrt(math.pi)), rel=1e-15)
    x = -np.linspace(0.01, 29.5, 999)  # negative non-integers
    expected = [math.lgamma(v) for v in x]
    assert_close(fsp.gammaln(x), expected, rtol=1e-13, atol=1e-14)


def test_gammaln_poles_and_ends():
    x = np.array([0.0, -0.0, -1.0, -7.0, -1e20, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(fsp.gammaln(x), [np.inf] * 7 + [np.nan])
    assert fsp.gammaln(-3.0) == np.inf  # a scalar too
    assert fsp.gammaln(1e306) == np.inf  # overflows like SciPy's


@given(shape=shapes, seed=seeds, negative=st.booleans())
def test_gammaln_derivatives(shape, seed, negative):
    x = negative_values(shape, seed) if negative else values(shape, "positive", seed) * 3
    assert_close(staged_with_aval(fsp.gammaln, x)[0], np.vectorize(math.lgamma)(x), rtol=1e-13, atol=1e-15)
    check_grads(fsp.gammaln, (x,), order=2)


# --- digamma and polygamma ------------------------------------------------------------


def test_digamma_known_values():
    known = {
        1.0: -EULER_GAMMA,
        0.5: -EULER_GAMMA - 2 * math.log(2),
        0.25: -EULER_GAMMA - math.pi / 2 - 3 * math.log(2),
        1 / 3: -EULER_GAMMA - math.pi / (2 * math.sqrt(3)) - 1.5 * math.log(3),
        2.0: 1 - EULER_GAMMA,
        10.5: -EULER_GAMMA - 2 * math.log(2) + sum(2 / (2 * k - 1) for k in range(1, 11)),
        -0.5: -EULER_GAMMA - 2 * math.log(2) + 2,  # psi(x + 1) = psi(x) + 1/x at x = -1/2
    }
    for x, expected in known.items():
        assert fsp.digamma(x) == pytest.approx(expected, rel=2e-15), x
        assert fsp.digamma(np.array([x] * 3)) == pytest.approx(expected, rel=2e-15), x


def test_digamma_keeps_its_relative_precision_at_its_positive_root():
    root_hi, root_lo = 1.4616321449683622, 9.549995429965697e-17  # the root x0 = hi + lo
    slope, curvature = 0.96767224544762117, -0.88552633796718421  # psi'(x0), psi''(x0)
    for x in (root_hi, root_hi + 1e-12, root_hi - 3e-9, root_hi + 1e-7):  # h**3 terms < 1e-14 relative
        h = (x - root_hi) - root_lo  # x - x0, to about 1e-32
        assert fsp.digamma(x) == pytest.approx(slope * h + curvature / 2 * h**2, rel=1e-13, abs=0), x


@given(shape=shapes, seed=seeds)
def test_digamma_recurrence_and_reflection(shape, seed):
    x = values(shape, "positive", seed) * 3
    assert_close(fsp.digamma(x + 1), fsp.digamma(x) + 1 / x, rtol=2e-15, atol=2e-15)
    y = negative_values(shape, seed)  # reflection: psi(1 - y) - psi(y) = pi cot(pi y)
    assert_close(fsp.digamma(1 - y) - fsp.digamma(y), np.pi / np.tan(np.pi * y), rtol=1e-13, atol=1e-14)


@given(shape=shapes, seed=seeds, negative=st.booleans())
def test_digamma_is_the_derivative_of_gammaln(shape, seed, negative):
    x = negative_values(shape, seed) if negative else values(shape, "positive", seed) * 3
    h = 1e-5
    finite_difference = (fsp.gammaln(x + h) - fsp.gammaln(x - h)) / (2 * h)
    assert_close(fsp.digamma(x), finite_difference, rtol=1e-8, atol=1e-8)
    assert_close(staged_with_aval(fsp.digamma, x)[0], fsp.digamma(x), rtol=1e-15)
    check_grads(fsp.digamma, (x,), order=2)


def test_digamma_poles():
    x = np.array([0.0, -0.0, -1.0, -5.0, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(fsp.digamma(x), [-np.inf, np.inf, np.nan, np.nan, np.inf, np.nan, np.nan])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_polygamma_at_one_is_a_zeta_value(n):
    expected = (-1) ** (n + 1) * math.factorial(n) * ZETA[n + 1]
    assert fsp.polygamma(n, 1.0) == pytest.approx(expected, rel=1e-15)
    assert fsp.polygamma(n, np.ones(3)) == pytest.approx(expected, rel=1e-15)


def test_polygamma_known_values():
    assert fsp.polygamma(1, 0.5) == pytest.approx(math.pi**2 / 2, rel=1e-15)
    catalan = 0.91596559417721901505
    assert fsp.polygamma(1, 0.25) == pytest.approx(math.pi**2 + 8 * catalan, rel=1e-15)
    assert fsp.polygamma(2, 0.5) == pytest.approx(-14 * ZETA[3], rel=1e-15)
    assert fsp.polygamma(0, 1.0) == fsp.digamma(1.0)
    # polygamma(1, x) ~ 1/x + 1/(2x**2) for large x, and ~ 1/x**2 near 0
    assert fsp.polygamma(1, 1e10) == pytest.approx(1e-10 + 0.5e-20, rel=1e-15)
    assert fsp.polygamma(1, 1e-10) == pytest.approx(1e20 + ZETA[2], rel=1e-15)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
@given(shape=shapes, seed=seeds)
def test_polygamma_recurrence_and_reflection(n, shape, seed):
    x = values(shape, "positive", seed) * 3
    step = (-1) ** n * math.factorial(n) / x ** (n + 1)
    assert_close(fsp.polygamma(n, x), fsp.polygamma(n, x + 1) - step, rtol=1e-14)  # no cancellation
    if n == 1:  # psi'(1 - y) + psi'(y) = pi**2 / sin(pi y)**2
        y = negative_values(shape, seed)
        assert_close(fsp.polygamma(1, 1 - y) + fsp.polygamma(1, y), (np.pi / np.sin(np.pi * y)) ** 2, rtol=1e-14)


@pytest.mark.parametrize("n", [1, 2, 3])
@given(shape=shapes, seed=seeds, negative=st.booleans())
def test_polygamma_is_the_derivative_of_the_previous_order(n, shape, seed, negative):
    x = negative_values(shape, seed) if negative else values(shape, "positive", seed) * 3
    h = 1e-5
    finite_difference = (fsp.polygamma(n - 1, x + h) - fsp.polygamma(n - 1, x - h)) / (2 * h)
    assert_close(fsp.polygamma(n, x), finite_difference, rtol=1e-7, atol=1e-7)
    assert_close(staged_with_aval(lambda x: fsp.polygamma(n, x), x)[0], fsp.polygamma(n, x), rtol=1e-15)
    # Near the poles the third derivative is large: finite differences need a looser tolerance.
    check_grads(lambda x: fsp.polygamma(n, x), (x,), order=2, rtol=1e-4, atol=1e-4)


def test_polygamma_poles():
    x = np.array([0.0, -1.0, -3.0, np.nan, np.inf])
    np.testing.assert_array_equal(fsp.polygamma(1, x), [np.inf, np.inf, np.inf, np.nan, 0.0])
    np.testing.assert_array_equal(fsp.polygamma(2, x), [-np.inf, -np.inf, -np.inf, np.nan, -0.0])


# polygamma(n, x) at negative half-integers, where cot(pi x) = 0: external references, computed once
# with mpmath 1.3.0 (mp.dps = 40, float(mp.polygamma(n, mp.mpf(x)))), not fgrad's output.
POLYGAMMA_AT_HALF_INTEGERS = {
    2: {-0.5: -0.82879664423432, -1.5: -0.2362040516417274, -3.5: -0.061556821321027695,
        -10.5: -0.008247469050652217},
    4: {-0.5: -3.4742498266672253, -1.5: -0.3137559995067314, -3.5: -0.022300753478290834,
        -10.5: -0.0004070138390569766},
    10: {-0.5: -42108.85876897549, -1.5: -156.229596593233, -3.5: -0.2681931239535166,
         -10.5: -1.3479713180436911e-05},
}


@pytest.mark.parametrize("n", sorted(POLYGAMMA_AT_HALF_INTEGERS))
def test_polygamma_at_negative_half_integers_matches_mpmath(n):
    # For even n the reflection's cot polynomial has no constant term: tan(pi x) must be inf
    # there, not 1.6e16, or its reciprocal (amplified by pi**(n+1) P_n'(0)) outweighs the result.
    x, expected = zip(*POLYGAMMA_AT_HALF_INTEGERS[n].items())
    assert_close(fsp.polygamma(n, np.array(x)), expected, rtol=1e-13)
    for v, e in zip(x, expected):
        assert fsp.polygamma(n, v) == pytest.approx(e, rel=1e-13)
    np.testing.assert_allclose(fsp.digamma(np.array([-0.5, -1.5])), fsp.digamma(np.array([1.5, 2.5])), rtol=1e-15)


def test_polygamma_orders_broadcast_and_carry_no_derivative():
    x = np.array([0.5, 1.5, 3.0])
    orders = np.array([[0], [1], [2]])
    expected = [[fsp.polygamma(n, v) for v in x] for n in (0, 1, 2)]
    np.testing.assert_array_equal(fsp.polygamma(orders, x), expected)
    np.testing.assert_array_equal(fsp.polygamma(np.array([1, 1]), 2.0), [fsp.polygamma(1, 2.0)] * 2)
    np.testing.assert_array_equal(fsp.polygamma(2.0, x), fsp.polygamma(2, x))  # an integral float
    grads = fgrad.grad(lambda x: fnp.sum(fsp.polygamma(np.array([0, 1, 2]), x)))(x)
    np.testing.assert_allclose(grads, [fsp.polygamma(n + 1, v) for n, v in zip((0, 1, 2), x)])
    assert "polygamma[n=2]" in str(fgrad.make_jaxpr(lambda x: fsp.polygamma(2, x))(1.0))


def test_polygamma_order_errors():
    with pytest.raises(ValueError, match="non-negative"):
        fsp.polygamma(-1, 1.0)
    with pytest.raises(TypeError, match="integer"):
        fsp.polygamma(1.5, 1.0)
    with pytest.raises(TypeError, match="concrete integer"):
        fgrad.grad(lambda n: fsp.polygamma(n, 1.0))(1.0)


# --- logistic and logit ------------------------------------------------------------------


def test_expit_is_stable_for_large_inputs():
    x = np.array([-1000.0, -745.0, -40.0, 0.0, 40.0, 1000.0])
    with np.errstate(all="raise"):  # no overflow on the way
        out = fsp.expit(x)
    np.testing.assert_allclose(out, [0.0, np.exp(-745.0), 1 / (1 + np.exp(40.0)), 0.5, 1.0, 1.0], rtol=1e-15)
    grads = fgrad.vmap(fgrad.grad(fsp.expit))(x)
    assert np.all(np.isfinite(grads)) and grads[0] == 0.0 and grads[-1] == 0.0
    assert fgrad.grad(fgrad.grad(fsp.expit))(1000.0) == 0.0


@given(shape=shapes, seed=seeds)
def test_expit_and_logit_values_and_derivatives(shape, seed):
    x = values(shape, "real", seed) * 3
    assert_close(fsp.expit(x), 1 / (1 + np.exp(-x)), rtol=1e-15)
    p = 0.5 + 0.5 * values(shape, "unit", seed)
    assert_close(fsp.logit(p), np.log(p / (1 - p)), rtol=1e-13, atol=1e-15)
    # The round trip is as exact as expit's rounding allows: p near 1 carries an
    # absolute error up to eps/2, which logit's slope 1/(p (1 - p)) ~ 1 + e^|x| amplifies.
    round_trip_error = np.abs(np.asarray(fsp.logit(fsp.expit(x))) - x)
    assert np.all(round_trip_error <= 1e-15 + 1e-14 * np.abs(x) + 2.3e-16 * np.exp(np.abs(x)))
    assert_close(staged_with_aval(fsp.expit, x)[0], fsp.expit(x), rtol=1e-15)
    check_grads(fsp.expit, (x,), order=2)
    check_grads(fsp.logit, (p,), order=2)


def test_logit_special_values_and_precision_near_one_half():
    np.testing.assert_array_equal(fsp.logit(np.array([0.0, 1.0, -0.1, 1.1, 0.5])), [-np.inf, np.inf, np.nan, np.nan, 0])
    assert fsp.logit(0.5 + 1e-12) == pytest.approx(4e-12, rel=1e-10)  # log((0.5 + e)/(0.5 - e)) = 4e + ...


# --- xlogy, xlog1py, entr -----------------------------------------------------------------


@pytest.mark.parametrize("f, log", [(fsp.xlogy, np.log), (fsp.xlog1py, np.log1p)], ids=["xlogy", "xlog1py"])
@given(shapes=broadcast_pairs(), seed=seeds)
def test_xlogy_xlog1py_values_and_derivatives(f, log, shapes, seed):
    x, y = values(shapes[0], "real", seed), values(shapes[1], "positive", seed + 1)
    assert_close(f(x, y), x * log(y), rtol=1e-15)
    assert_close(staged_with_aval(f, x, y)[0], x * log(y), rtol=1e-15)
    check_grads(f, (x, y), order=2)


@pytest.mark.parametrize("f, pole", [(fsp.xlogy, 0.0), (fsp.xlog1py, -1.0)], ids=["xlogy", "xlog1py"])
def test_xlogy_xlog1py_are_zero_with_zero_derivative_where_x_is_zero(f, pole):
    assert f(0.0, pole) == 0.0 and f(0.0, 2.0) == 0.0 and np.isnan(f(0.0, np.nan))
    np.testing.assert_array_equal(f(np.array([0.0, 1.0]), np.array([pole, pole])), [0.0, -np.inf])
    # In y, where x == 0: 0 even at the pole (fgrad's choice; JAX's x / y gives nan there).
    assert fgrad.grad(lambda y: f(0.0, y))(pole) == 0.0
    assert fgrad.grad(fgrad.grad(lambda y: f(0.0, y)))(pole + 1.0) == 0.0
    _, t = fgrad.jvp(lambda y: f(np.array([0.0, 2.0]), y), (np.array([pole, pole + 1.0]),), (np.ones(2),))
    np.testing.assert_allclose(t, [0.0, 2.0])


def test_entr():
    x = np.array([0.0, 0.5, 1.0, -1.0, np.nan, np.inf])
    np.testing.assert_array_equal(fsp.entr(x), [0.0, 0.5 * np.log(2), -0.0, -np.inf, np.nan, -np.inf])
    assert fgrad.grad(fsp.entr)(1.0) == -1.0  # -(log x + 1)
    # For x < 0 entr is the constant -inf: derivative 0 (as JAX's), not nan, at every order.
    np.testing.assert_array_equal(fgrad.vmap(fgrad.grad(fsp.entr))(np.array([-2.0, -0.5, 0.5])),
                                  [0.0, 0.0, -(np.log(0.5) + 1)])
    assert fgrad.grad(fgrad.grad(fsp.entr))(-1.0) == 0.0
    _, t = fgrad.jvp(fsp.entr, (np.array([-1.0, 2.0]),), (np.ones(2),))
    np.testing.assert_allclose(t, [0.0, -(np.log(2.0) + 1)])


@given(shape=shapes, seed=seeds)
def test_entr_derivatives(shape, seed):
    x = values(shape, "positive", seed)
    assert_close(staged_with_aval(fsp.entr, x)[0], -x * np.log(x), rtol=1e-15)
    check_grads(fsp.entr, (x,), order=2)


# --- dtypes, like SciPy's ---------------------------------------------------------------


try:  # only to compare dtypes with, where installed; the table below stands in for it otherwise
    import scipy.special as scipy_special
except ImportError:
    scipy_special = None

# Each function built from a module: fgrad.scipy.special, or scipy.special itself.
ELEMENTWISE = [
    ("erf", lambda m: m.erf, 0.5), ("erfc", lambda m: m.erfc, 0.5), ("erfinv", lambda m: m.erfinv, 0.5),
    ("ndtr", lambda m: m.ndtr, 0.5), ("gammaln", lambda m: m.gammaln, 1.5), ("digamma", lambda m: m.digamma, 1.5),
    ("polygamma", lambda m: lambda x: m.polygamma(1, x), 1.5), ("expit", lambda m: m.expit, 0.5),
    ("logit", lambda m: m.logit, 0.25), ("entr", lambda m: m.entr, 0.5),
    ("xlogy", lambda m: lambda x: m.xlogy(x, x), 0.5), ("xlog1py", lambda m: lambda x: m.xlog1py(x, x), 0.5),
]

# The result dtypes SciPy 1.17.1 gives, as observed with it (scipy.special.<name>(np.ones(2, dtype)).dtype,
# binary functions with both arguments of that dtype): float32 only from float32, except erfinv and entr,
# which promote with float32 as NumPy does; polygamma always float64.
INPUT_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]
_FLOAT32_ONLY = "f8 f8 f8 f8 f8 f8 f8 f4 f8"
_PROMOTED = "f4 f4 f4 f4 f8 f8 f4 f4 f8"
SCIPY_1_17_DTYPES = {
    "erf": _FLOAT32_ONLY, "erfc": _FLOAT32_ONLY, "ndtr": _FLOAT32_ONLY, "gammaln": _FLOAT32_ONLY,
    "digamma": _FLOAT32_ONLY, "expit": _FLOAT32_ONLY, "logit": _FLOAT32_ONLY, "xlogy": _FLOAT32_ONLY,
    "xlog1py": _FLOAT32_ONLY, "erfinv": _PROMOTED, "entr": _PROMOTED, "polygamma": "f8 f8 f8 f8 f8 f8 f8 f8 f8",
}


def scipy_dtype(name, make, arg):
    """SciPy's result dtype: from SciPy itself where installed, else from the table."""
    if scipy_special is not None:
        with np.errstate(all="ignore"):
            return np.asarray(make(scipy_special)(arg)).dtype
    return np.dtype(dict(zip(INPUT_DTYPES, SCIPY_1_17_DTYPES[name].split()))[arg.dtype.name])


@pytest.mark.parametrize("name, make, x", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_result_dtypes_follow_scipy(name, make, x):
    f = make(fsp)
    for dtype in INPUT_DTYPES:
        arg = np.array([x, x]).astype(dtype) if dtype.startswith("float") else np.ones(2, dtype)
        expected = scipy_dtype(name, make, arg)
        out = f(arg)
        assert out.dtype == expected, (dtype, out.dtype, expected)
        assert staged_with_aval(f, arg)[0].dtype == expected
        reference = f(arg.astype(np.float64))
        np.testing.assert_allclose(out, reference, rtol=1e-6 if expected == np.float32 else 1e-15)
    scalar_type = scipy_dtype(name, make, np.ones(1, np.float32)).type
    assert isinstance(f(x), np.float64) and isinstance(f(np.float32(x)), scalar_type)  # NumPy scalars
    check_grads(f, (np.array([x, x], np.float32),), order=1)


def test_python_scalars_widen_binary_functions_like_scipy():
    # SciPy's xlogy and xlog1py take a Python scalar as float64, unlike NumPy's ufuncs
    # (SciPy 1.17.1: xlogy(float32 array, 2.0) is float64).
    y = np.array([0.5, 2.0], np.float32)
    cases = [(fsp.xlogy, (2.0, y), np.float64), (fsp.xlog1py, (y, 3), np.float64),
             (fsp.xlogy, (y, np.float32(2)), np.float32), (fsp.xlogy, (y, y.astype(np.float16)), np.float64),
             (fsp.xlogy, (2, 3), np.float64)]
    for f, args, expected in cases:
        assert f(*args).dtype == expected
        assert staged_with_aval(lambda a, f=f, args=args: f(*args) * a, np.float32(1))[1].dtype == expected
        if scipy_special is not None:
            assert getattr(scipy_special, f.__name__)(*args).dtype == expected


# erf, erfc and ndtr take complex inputs, as SciPy's do (tests/scipy/test_special_scipy.py).
REAL_ONLY = [e for e in ELEMENTWISE if e[0] not in ("erf", "erfc", "ndtr")]


@pytest.mark.parametrize("name, make, x", REAL_ONLY, ids=[e[0] for e in REAL_ONLY])
def test_complex_inputs_are_refused(name, make, x):
    f = make(fsp)
    with pytest.raises(TypeError, match="not supported for inputs of dtype complex128"):
        f(np.array([x + 1j]))
    with pytest.raises(TypeError, match="complex128"):
        fgrad.make_jaxpr(f)(np.array([x + 1j]))


def test_no_transform_gives_numpy_values_and_lists_work():
    assert type(fsp.erf([0.1, 0.2])) is np.ndarray
    assert type(fsp.gammaln(3)) is np.float64
    np.testing.assert_array_equal(fsp.digamma([[1.0, 2.0]]), fsp.digamma(np.array([[1.0, 2.0]])))
