"""The functions of fgrad.scipy.special whose values come from SciPy
(fgrad.primitives.scipy_special): values and dtypes equal to scipy.special's
on grids with their special points (poles, 0, +-inf, nan, negative
non-integers), derivatives to second order in both modes on shapes with 0-d and
broadcasting, the closed forms of the derivatives against independent
references (the densities of scipy.stats, mpmath), jit against eager, and the
errors: derivatives fgrad has no rule for, complex inputs, multigammaln's
arguments, and an ImportError naming the extra when SciPy is missing."""

import importlib
import math

import mpmath
import numpy as np
import pytest
import scipy.special as ss
import scipy.stats as st_
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.core.optional as optional
import fgrad.numpy as fnp
import fgrad.scipy.special as fsp
from fgrad.primitives import scipy_special as ssp
from fgrad.test_util import check_grads
from tests.numpy_checks import staged_with_aval
from tests.strategies import broadcast_pairs, seeds, shapes, values

PRIMITIVES = {
    "gamma", "rgamma", "gammasgn", "beta", "betaln", "betainc", "gammainc", "gammaincc", "gammainc_grad_a",
    "betainc_grad_ab", "erfcinv", "ndtri",
    "log_ndtr", "i0", "i0e", "i1", "i1e", "j0", "j1", "y0", "y1", "bessel_over_power", "zeta", "riemann_zeta",
    "rel_entr", "kl_div", "erf_complex", "erfc_complex",
}

BATCH_CASES = {
    "gamma": (fsp.gamma, [(2, 3)], "nonzero"),
    "rgamma": (fsp.rgamma, [(3,)], "real"),
    "gammasgn": (fsp.gammasgn, [(3,)], "real"),
    "beta": (fsp.beta, [(2, 3), (3,)], "positive"),
    "betaln": (fsp.betaln, [(3,), ()], "positive"),
    "betainc": (lambda a, b, x: fsp.betainc(a, b, x / 2.5), [(3,), (), (2, 3)], "positive"),
    "gammainc": (fsp.gammainc, [(2, 3), (3,)], "positive"),
    "gammaincc": (fsp.gammaincc, [(3,), (2, 3)], "positive"),
    "gammainc_grad_a": (lambda a, x: ssp.gammainc_grad_a(a, 4 * x), [(2, 3), (3,)], "positive"),
    "betainc_grad_ab": (lambda a, b, x: ssp.betainc_grad_ab(a, b, x / 2.5, wrt="b"), [(2, 3), (), (3,)], "positive"),
    "erfcinv": (lambda y: fsp.erfcinv(1 + y), [(3,)], "unit"),
    "ndtri": (lambda y: fsp.ndtri(0.5 + 0.5 * y), [(2, 3)], "unit"),
    "log_ndtr": (fsp.log_ndtr, [(3,)], "real"),
    "i0": (fsp.i0, [(3,)], "real"),
    "i0e": (fsp.i0e, [(2, 3)], "real"),
    "i1": (fsp.i1, [(3,)], "real"),
    "i1e": (fsp.i1e, [(3,)], "real"),
    "j0": (fsp.j0, [(3,)], "real"),
    "j1": (fsp.j1, [(2, 3)], "real"),
    "y0": (fsp.y0, [(3,)], "positive"),
    "y1": (fsp.y1, [(3,)], "positive"),
    "bessel_over_power": (lambda x: ssp.bessel_over_power(x, kind="ie", n=2), [(3,)], "real"),
    "zeta": (lambda x, q: fsp.zeta(x + 1.5, q), [(3,), (2, 3)], "positive"),
    "riemann_zeta": (fsp.zeta, [(3,)], "real"),
    "rel_entr": (fsp.rel_entr, [(2, 3), (3,)], "positive"),
    "kl_div": (fsp.kl_div, [(3,), ()], "positive"),
    "erf_complex": (lambda x: fsp.erf(x * (1 + 0.5j)), [(3,)], "real"),
    "erfc_complex": (lambda x: fsp.erfc(x * (0.5 - 1j)), [(2, 3)], "real"),
}


def away_from_poles(shape, seed):
    """Values in (0.5, 2), (-0.8, -0.2) and (-1.8, -1.2)."""
    u = np.random.default_rng(seed + 1).uniform(size=shape)
    negative = -values(shape, "positive", seed) / 2.5 - np.where(u < 0.75, 0.0, 1.0)
    return np.where(u < 0.5, values(shape, "positive", seed), negative)


def domain(name, scale=1.0, offset=0.0):
    return lambda shape, seed: values(shape, name, seed) * scale + offset


POSITIVE, REAL = domain("positive"), domain("real", 2.0)
COMPLEX = lambda shape, seed: values(shape, "real", seed) + 1j * values(shape, "real", seed + 5)  # noqa: E731

# name, fgrad's function, SciPy's, one sampler per argument, the arguments differentiated
FUNCTIONS = [
    ("gamma", fsp.gamma, ss.gamma, [away_from_poles], (0,)),
    ("rgamma", fsp.rgamma, ss.rgamma, [REAL], (0,)),
    ("gammasgn", fsp.gammasgn, ss.gammasgn, [away_from_poles], (0,)),
    ("beta", fsp.beta, ss.beta, [POSITIVE, POSITIVE], (0, 1)),
    ("betaln", fsp.betaln, ss.betaln, [POSITIVE, POSITIVE], (0, 1)),
    ("betainc", fsp.betainc, ss.betainc, [POSITIVE, POSITIVE, domain("positive", 0.4, 0.05)], (2,)),
    ("gammainc", fsp.gammainc, ss.gammainc, [POSITIVE, POSITIVE], (1,)),
    ("gammaincc", fsp.gammaincc, ss.gammaincc, [POSITIVE, POSITIVE], (1,)),
    ("erfcinv", fsp.erfcinv, ss.erfcinv, [domain("unit", 1.0, 1.0)], (0,)),
    ("ndtri", fsp.ndtri, ss.ndtri, [domain("unit", 0.5, 0.5)], (0,)),
    ("log_ndtr", fsp.log_ndtr, ss.log_ndtr, [domain("real", 4.0)], (0,)),
    ("i0", fsp.i0, ss.i0, [REAL], (0,)),
    ("i0e", fsp.i0e, ss.i0e, [REAL], (0,)),
    ("i1", fsp.i1, ss.i1, [REAL], (0,)),
    ("i1e", fsp.i1e, ss.i1e, [REAL], (0,)),
    ("j0", fsp.j0, ss.j0, [domain("real", 5.0)], (0,)),
    ("j1", fsp.j1, ss.j1, [domain("real", 5.0)], (0,)),
    ("y0", fsp.y0, ss.y0, [domain("positive", 3.0)], (0,)),
    ("y1", fsp.y1, ss.y1, [domain("positive", 3.0)], (0,)),
    ("zeta", fsp.zeta, ss.zeta, [domain("positive", 1.0, 1.2), POSITIVE], (1,)),
    ("riemann_zeta", fsp.zeta, ss.zeta, [REAL], ()),
    ("rel_entr", fsp.rel_entr, ss.rel_entr, [POSITIVE, POSITIVE], (0, 1)),
    ("kl_div", fsp.kl_div, ss.kl_div, [POSITIVE, POSITIVE], (0, 1)),
    ("erf_complex", fsp.erf, ss.erf, [COMPLEX], (0,)),
    ("erfc_complex", fsp.erfc, ss.erfc, [COMPLEX], (0,)),
]
IDS = [f[0] for f in FUNCTIONS]
UNARY = [f for f in FUNCTIONS if len(f[3]) == 1 and not f[0].endswith("complex")]
BINARY = [f for f in FUNCTIONS if len(f[3]) == 2]


def only(f, args, argnums):
    """f as a function of the arguments `argnums`, the others fixed to `args`."""

    def g(*diff):
        full = list(args)
        for i, x in zip(argnums, diff):
            full[i] = x
        return f(*full)

    return g, tuple(args[i] for i in argnums)


# --- values: SciPy's, at its special points too ----------------------------------------------

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.0, -0.5, -2.5, -170.5, 1e-300,
                    -1e-300, 0.5, 2.0, 171.5, 180.0, 700.0, 800.0, -800.0])
GRID = np.concatenate([SPECIAL, np.linspace(-12, 12, 481)])


@pytest.mark.parametrize("name, f, ref", [f[:3] for f in UNARY], ids=[f[0] for f in UNARY])
def test_unary_values_on_a_grid_with_the_special_points(name, f, ref):
    x = np.concatenate([GRID, np.linspace(0, 2, 101)]) if name in ("erfcinv", "ndtri") else GRID
    np.testing.assert_array_equal(f(x), ref(x))
    np.testing.assert_array_equal(fgrad.jit(f)(x), ref(x))
    for v in SPECIAL:
        out = f(v)
        assert type(out) is np.float64 and (out == ref(v) or np.isnan(out) and np.isnan(ref(v)))


@pytest.mark.parametrize("name, f, ref", [f[:3] for f in BINARY], ids=[f[0] for f in BINARY])
def test_binary_values_on_a_grid_with_the_special_points(name, f, ref):
    points = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -1.5], np.linspace(-3, 5, 33)])
    a, b = points[:, None], points[None, :]
    np.testing.assert_array_equal(f(a, b), ref(a, b))
    np.testing.assert_array_equal(staged_with_aval(f, a, b)[0], ref(a, b))


def test_betainc_values_on_a_grid():
    a = np.array([0.0, 0.1, 0.5, 1.0, 2.5, 30.0, np.inf, np.nan])
    x = np.array([0.0, 1e-300, 0.25, 0.5, 0.9, 1.0, 1.5, -0.5, np.nan])
    grid = (a[:, None, None], a[None, :, None], x)
    np.testing.assert_array_equal(fsp.betainc(*grid), ss.betainc(*grid))
    np.testing.assert_array_equal(staged_with_aval(fsp.betainc, *grid)[0], ss.betainc(*grid))


def test_riemann_and_hurwitz_zeta():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.5, np.inf, np.nan])
    np.testing.assert_array_equal(fsp.zeta(x), ss.zeta(x))
    np.testing.assert_array_equal(fsp.zeta(x[:, None], x), ss.zeta(x[:, None], x))
    assert fsp.zeta(2.0) == pytest.approx(math.pi**2 / 6, rel=1e-15)


def test_complex_erf_and_erfc():
    z = (np.linspace(-4, 4, 41)[:, None] + 1j * np.linspace(-4, 4, 41)).ravel()
    np.testing.assert_array_equal(fsp.erf(z), ss.erf(z))
    np.testing.assert_array_equal(fsp.erfc(z), ss.erfc(z))
    np.testing.assert_array_equal(fgrad.jit(fsp.erf)(z), ss.erf(z))
    assert fsp.erf(np.complex64(1 + 1j)).dtype == np.complex64
    assert complex(fsp.erf(0.5 + 0.5j)) == pytest.approx(complex(mpmath.erf(0.5 + 0.5j)), rel=1e-15)
    assert fsp.erf(0.5) == math.erf(0.5)  # real input: fgrad's own, without SciPy
    np.testing.assert_allclose(fsp.ndtr(z), ss.ndtr(z), rtol=1e-12)  # erfc(-z/sqrt(2))/2, rounded differently
    assert fsp.ndtr(z.astype(np.complex64)).dtype == ss.ndtr(z.astype(np.complex64)).dtype


def test_multigammaln_values():
    a = np.array([1.5, 2.0, 3.7, 20.0])
    for d in (1, 2, 3, 5):
        ok = a > (d - 1) / 2
        np.testing.assert_allclose(fsp.multigammaln(a[ok], d), ss.multigammaln(a[ok], d), rtol=1e-14)
    assert fsp.multigammaln(3.0, 2) == pytest.approx(ss.multigammaln(3.0, 2), rel=1e-15)
    assert fsp.multigammaln(np.float32(3.0), 2).dtype == ss.multigammaln(np.float32(3.0), 2).dtype


# --- dtypes: SciPy's --------------------------------------------------------------------------

DTYPES = [np.float32, np.float16, np.float64, np.int8, np.int64, np.bool_]


@pytest.mark.parametrize("name, f, ref", [f[:3] for f in UNARY], ids=[f[0] for f in UNARY])
def test_unary_dtypes_are_scipys(name, f, ref):
    for dtype in DTYPES:
        x = np.ones(3, dtype)
        assert f(x).dtype == ref(x).dtype, dtype
        assert staged_with_aval(f, x)[1].dtype == ref(x).dtype, dtype
    for x in (True, 1, 0.5, np.float32(0.5)):
        assert np.asarray(f(x)).dtype == np.asarray(ref(x)).dtype, x
    x32 = values((4,), "positive", 0, np.float32) / 2.5
    np.testing.assert_allclose(f(x32), ref(x32.astype(np.float64)), rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("name, f, ref", [f[:3] for f in BINARY], ids=[f[0] for f in BINARY])
def test_binary_dtypes_are_scipys(name, f, ref):
    x32, x16 = np.ones(3, np.float32) * 1.5, np.ones(3, np.float16) * 1.5
    for args in [(x32, x32), (x32, 2.5), (2.5, x32), (x32, np.int8(2)), (x16, x16), (x32, x16), (2, 3)]:
        expected = np.asarray(ref(*args)).dtype
        assert np.asarray(f(*args)).dtype == expected, args
        assert np.asarray(fgrad.jit(f)(*args)).dtype == expected, args
        if not any(isinstance(x, (int, float)) for x in args):  # make_jaxpr takes Python scalars as strong
            assert staged_with_aval(f, *args)[1].dtype == expected, args


def test_betainc_dtypes_are_scipys():
    x32 = np.full(3, 0.5, np.float32)
    for args in [(x32, x32, x32), (x32, x32, 0.5), (2.0, 3.0, x32), (x32, np.ones(3), x32)]:
        assert fsp.betainc(*args).dtype == ss.betainc(*args).dtype
        assert fgrad.jit(fsp.betainc)(*args).dtype == ss.betainc(*args).dtype


# --- derivatives --------------------------------------------------------------------------------


@pytest.mark.parametrize("name, f, ref, samplers, argnums", FUNCTIONS, ids=IDS)
@settings(max_examples=15)
@given(data=st.data(), seed=seeds)
def test_derivatives_to_second_order_on_broadcast_shapes(name, f, ref, samplers, argnums, data, seed):
    arg_shapes = data.draw(broadcast_pairs(len(samplers))) if len(samplers) > 1 else (data.draw(shapes),)
    args = [sample(shape, seed + 11 * i) for i, (sample, shape) in enumerate(zip(samplers, arg_shapes))]
    out = f(*args)
    np.testing.assert_array_equal(out, ref(*args))
    assert np.shape(out) == np.broadcast_shapes(*arg_shapes)
    if argnums:
        g, diff = only(f, args, argnums)
        check_grads(g, diff, order=2)


@pytest.mark.parametrize("name, f, ref, samplers, argnums", FUNCTIONS, ids=IDS)
def test_jit_equals_eager_and_vmap_a_loop(name, f, ref, samplers, argnums):
    args = [sample((2, 3), 7 * i) for i, sample in enumerate(samplers)]
    eager = f(*args)
    np.testing.assert_array_equal(fgrad.jit(f)(*args), eager)
    assert fgrad.jit(f)(*args).dtype == eager.dtype
    if argnums:
        g, diff = only(f, args, argnums)
        def total(*d):
            return fnp.sum(fnp.real(g(*d)))

        df = fgrad.jit(fgrad.vmap(fgrad.grad(total)))(*diff)
        loop = np.stack([fgrad.grad(total)(*(x[i] for x in diff)) for i in range(2)])
        np.testing.assert_allclose(df, loop, rtol=1e-13)


def test_derivatives_in_float32():
    x = values((3,), "positive", 3, np.float32)
    g = fgrad.grad(lambda x: fnp.sum(fsp.gamma(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, ss.gamma(x.astype(float)) * ss.digamma(x.astype(float)), rtol=1e-5)
    check_grads(lambda x: fsp.gammainc(np.float32(2.0), x), (x,), order=1, atol=1e-2, rtol=1e-2, eps=1e-3)


def test_the_closed_forms_against_the_densities():
    x = np.linspace(0.05, 0.95, 7)
    a, b = 2.5, 0.7
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.betainc, argnums=2), (None, None, 0))(a, b, x),
                               st_.beta.pdf(x, a, b), rtol=1e-13)
    y = np.linspace(0.0, 6.0, 7)
    for s in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.gammainc, argnums=1), (None, 0))(s, y),
                                   st_.gamma.pdf(y, s), rtol=1e-13)
        np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.gammaincc, argnums=1), (None, 0))(s, y),
                                   -st_.gamma.pdf(y, s), rtol=1e-13)
    p = np.linspace(0.01, 0.99, 9)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.ndtri))(p), 1 / st_.norm.pdf(ss.ndtri(p)), rtol=1e-13)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.erfcinv))(2 * p),
                               -math.sqrt(math.pi) / 2 * np.exp(ss.erfcinv(2 * p) ** 2), rtol=1e-13)
    g = fgrad.grad(fsp.gamma)(4.5)
    assert g == pytest.approx(float(mpmath.diff(mpmath.gamma, 4.5)), rel=1e-14)


def test_log_ndtr_derivative_is_accurate_far_in_the_tail():
    # where pdf and ndtr underflow, and where their logs cancel (below -20: Mills' ratio)
    for x in (-1e10, -1e3, -40.0, -20.5, -19.5, -5.0, 0.0, 5.0, 40.0):
        with mpmath.workdps(60):
            expected = float(mpmath.npdf(x) / mpmath.ncdf(x))
        assert fgrad.grad(fsp.log_ndtr)(x) == pytest.approx(expected, rel=1e-13, abs=1e-300)
    check_grads(fsp.log_ndtr, (np.array([-30.0, -8.0, 8.0]),), order=2)


def test_rgamma_derivatives_at_its_zeros():
    n = np.arange(6.0)
    grad = fgrad.vmap(fgrad.grad(fsp.rgamma))(-n)
    np.testing.assert_allclose(grad, (-1) ** n * ss.factorial(n), rtol=1e-14)
    for x in (0.0, -1.0, -3.0):
        second = float(mpmath.diff(mpmath.rgamma, x, 2))
        assert fgrad.grad(fgrad.grad(fsp.rgamma))(x) == pytest.approx(second, rel=1e-12, abs=1e-12)
        third = float(mpmath.diff(mpmath.rgamma, x, 3))
        assert fgrad.grad(fgrad.grad(fgrad.grad(fsp.rgamma)))(x) == pytest.approx(third, rel=1e-10, abs=1e-10)
    check_grads(fsp.rgamma, (-n,), order=2)


@pytest.mark.parametrize("f, mp", [(fsp.i1, mpmath.besseli), (fsp.j1, mpmath.besselj)], ids=["i1", "j1"])
def test_bessel_derivatives_at_zero_to_every_order(f, mp):
    d = f
    for order in range(1, 6):
        d = fgrad.grad(d)
        assert d(0.0) == pytest.approx(float(mpmath.diff(lambda t: mp(1, t), 0, order)), abs=1e-14)
    check_grads(f, (np.array([0.0, 1e-6, -1e-3]),), order=2)
    assert fgrad.grad(fsp.i1e)(0.0) == 0.5


def test_bessel_derivative_identities():
    x = np.linspace(0.2, 8, 9)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.i0))(x), ss.i1(x), rtol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.j0))(x), -ss.j1(x), rtol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.y0))(x), -ss.y1(x), rtol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.j1))(x), ss.jvp(1, x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.y1))(x), ss.yvp(1, x), rtol=1e-12)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.i1))(x), ss.ivp(1, x), rtol=1e-12)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.i1e))(x), ss.ivp(1, x) * np.exp(-x) - ss.i1e(x), rtol=1e-12)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fsp.i0e))(-x), -ss.i1e(x) + ss.i0e(x), rtol=1e-12)


@pytest.mark.parametrize("kind", ["j", "i", "ie"])
@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_bessel_over_power(kind, n):
    x = np.concatenate([[1e-300, -1e-8, 1e-5, -9.9e-5, 1e-4, 1.1e-4], np.linspace(-6, 6, 24)])
    bessel = {"j": mpmath.besselj, "i": mpmath.besseli, "ie": mpmath.besseli}[kind]
    with mpmath.workdps(40):
        expected = [float(bessel(n, v) / mpmath.mpf(v) ** n * mpmath.exp(-abs(v) * (kind == "ie"))) for v in x]
    np.testing.assert_allclose(ssp.bessel_over_power(x, kind=kind, n=n), expected, rtol=2e-14)
    limit = 1 / (2**n * math.factorial(n))
    assert ssp.bessel_over_power(0.0, kind=kind, n=n) == limit == ssp.bessel_over_power(-0.0, kind=kind, n=n)
    points = np.array([0.3, -1.7, 4.0]) if kind == "ie" else np.array([0.0, 0.3, -1.7, 4.0])  # ie: |x| at 0
    check_grads(lambda x: ssp.bessel_over_power(x, kind=kind, n=n), (points,), order=2)


def test_complex_erf_derivative_is_holomorphic():
    z = np.array([0.3 + 0.4j, -1.0 + 0.2j, 2j])
    _, t = fgrad.jvp(fsp.erf, (z,), (np.ones_like(z),))
    np.testing.assert_allclose(t, 2 / math.sqrt(math.pi) * np.exp(-z * z), rtol=1e-15)
    _, t = fgrad.jvp(fsp.erfc, (z,), (np.ones_like(z),))
    np.testing.assert_allclose(t, -2 / math.sqrt(math.pi) * np.exp(-z * z), rtol=1e-15)


def test_relative_entropy_derivatives_at_the_boundary_follow_jax():
    x, y = np.array([0.0, 0.0, 1.0, 2.0]), np.array([1.0, 0.0, 0.0, 3.0])
    gx, gy = fgrad.vmap(fgrad.grad(fsp.rel_entr, argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(gx, [0, 0, 0, np.log(2 / 3) + 1], rtol=1e-15)
    np.testing.assert_allclose(gy, [0, 0, 0, -2 / 3], rtol=1e-15)
    gx, gy = fgrad.vmap(fgrad.grad(fsp.kl_div, argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(gx, [0, 0, 0, np.log(2 / 3)], rtol=1e-15)
    np.testing.assert_allclose(gy, [1, 1, 0, 1 - 2 / 3], rtol=1e-15)


# --- gammainc in a: gammainc_grad_a, fgrad's own ------------------------------------------------

GRAD_A_POINTS = [(a, x) for a in (1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 60.0, 400.0)
                 for x in (1e-300, 1e-6, 0.1, 1.0, a - 0.5, a + 0.5, a + 1.0, a + 1.5, 2 * a, 8.0, 5 * a, 120.0)
                 if x > 0]


def test_gammainc_derivative_in_a_against_mpmath():
    a, x = np.array(GRAD_A_POINTS).T
    got = fgrad.vmap(fgrad.grad(fsp.gammainc))(a, x)
    def reference(a, x):  # of P or of -Q, whichever is small: the other rounds to 1
        if x < a:
            return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a))
        return float(-mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf, regularized=True), a))

    with mpmath.workdps(50):
        expected = np.array([reference(u, v) for u, v in zip(a, x)])
    # relative: about the rounding of the exponent a log x - x - lgamma(a) (as in the values)
    bound = 1e-15 * (1 + np.abs(a * np.log(x)) + x + np.abs(ss.gammaln(a)))
    assert np.all(np.abs(got - expected) <= bound * np.abs(expected)), np.abs(got - expected) / np.abs(expected)
    got_c = fgrad.vmap(fgrad.grad(fsp.gammaincc))(a, x)
    assert np.all(np.abs(got_c + expected) <= bound * np.abs(expected))


def test_gammainc_grad_a_special_values():
    a = np.array([2.0, 2.0, 2.0, 0.0, -1.0, np.inf, np.nan, 2.0])
    x = np.array([0.0, np.inf, -1.0, 1.0, 1.0, 1.0, 1.0, np.nan])
    np.testing.assert_array_equal(ssp.gammainc_grad_a(a, x), [0, 0, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan])
    assert ssp.gammainc_grad_a(np.float32(2), np.float32(1)).dtype == np.float32
    assert ssp.gammainc_grad_a(np.float32(2), 1.0).dtype == ss.gammainc(np.float32(2), 1.0).dtype


@settings(max_examples=15)
@given(data=st.data(), seed=seeds)
def test_gammainc_derivatives_in_a_and_x(data, seed):
    a_shape, x_shape = data.draw(broadcast_pairs(2))
    a, x = values(a_shape, "positive", seed) * 2, values(x_shape, "positive", seed + 1) * 3
    for f in (fsp.gammainc, fsp.gammaincc):
        check_grads(lambda a: f(a, x), (a,), order=1)  # once in a
        check_grads(lambda x: f(a, x), (x,), order=3)  # every order in x
        check_grads(f, (a, x), order=1)
        # the mixed derivative, both ways, and the derivative in a once more in x
        check_grads(lambda x: fgrad.vmap(fgrad.grad(f), (None, 0))(np.float64(1.7), x.ravel()), (x,), order=2)
    h_ax = fgrad.jacfwd(lambda a: fgrad.grad(fsp.gammainc, argnums=1)(a, 1.3))(2.0)
    h_xa = fgrad.grad(lambda x: fgrad.grad(fsp.gammainc)(2.0, x))(1.3)
    assert h_ax == pytest.approx(h_xa, rel=1e-14)


def test_gammainc_second_derivative_in_a_raises():
    match = r"gammainc: the second derivative with respect to `a` is not implemented"
    for f in (fsp.gammainc, fsp.gammaincc):
        with pytest.raises(NotImplementedError, match=match):
            fgrad.grad(fgrad.grad(f))(2.0, 1.0)
        with pytest.raises(NotImplementedError, match=match):
            fgrad.hessian(f)(2.0, 1.0)
        with pytest.raises(NotImplementedError, match=match):
            fgrad.jacfwd(fgrad.jit(fgrad.grad(f)))(2.0, 1.0)


# --- betainc in a and b: betainc_grad_ab, fgrad's own -------------------------------------------

def betainc_grid_points():
    """a, b over [0.1, 200], x over (0, 1), with x at, just below and around (a+1)/(a+b+2), where
    betainc_grad_ab turns from expanding I_x(a, b) to expanding I_1-x(b, a), and where it turns
    from the power series to the continued fraction (b x = 2, a (1-x) = 2)."""
    shapes = (0.1, 0.5, 1.0, 2.5, 10.0, 60.0, 200.0)
    points = []
    for a in shapes:
        for b in shapes:
            turn = (a + 1) / (a + b + 2)
            for x in (1e-10, 1e-3, 0.1, 0.5, 0.9, 0.999, 0.9 * turn, turn, turn * (1 - 1e-9), min(1.1 * turn, 0.9999),
                      2 / b, 1 - 2 / a):
                if 0 < x < 1:
                    points.append((a, b, x))
    return np.array(points).T


def betainc_derivative_reference(a, b, x):
    """d/da and d/db of I_x(a, b) by mpmath (at the working precision), of I_1-x(b, a) where
    I_x(a, b) is near 1 (mpmath's value of it has then no digits of the derivative left)."""
    a, b, x = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(x)
    def lower(a, b, x, wrt_a):
        if wrt_a:
            return mpmath.diff(lambda s: mpmath.betainc(s, b, 0, x, regularized=True), a)
        return mpmath.diff(lambda s: mpmath.betainc(a, s, 0, x, regularized=True), b)

    if x < (a + 1) / (a + b + 2):
        return float(lower(a, b, x, True)), float(lower(a, b, x, False))
    return float(-lower(b, a, 1 - x, False)), float(-lower(b, a, 1 - x, True))


def test_betainc_derivatives_in_a_and_b_against_mpmath():
    a, b, x = betainc_grid_points()
    got_a, got_b = fgrad.vmap(fgrad.grad(fsp.betainc, argnums=(0, 1)))(a, b, x)
    with mpmath.workdps(40):
        expected_a, expected_b = np.array([betainc_derivative_reference(*p) for p in zip(a, b, x)]).T
    # relative: below 5e-14 on this grid (as fgrad.primitives.scipy_special documents it)
    np.testing.assert_allclose(got_a, expected_a, rtol=5e-14, atol=0)
    np.testing.assert_allclose(got_b, expected_b, rtol=5e-14, atol=0)
    assert np.all(got_a <= 0) and np.all(got_b >= 0)  # I_x(a, b) falls in a and rises in b
    np.testing.assert_array_equal(ssp.betainc_grad_ab(a, b, x, wrt="a"), got_a)


@pytest.mark.parametrize("a, b, x", [(1e-3, 5.0, 0.3), (1e-8, 1e-8, 0.5), (0.3, 1e3, 0.0013), (1e3, 1e3, 0.4995),
                                     (50.0, 1e4, 0.00507), (1e4, 50.0, 0.994)])
def test_betainc_derivatives_in_a_and_b_far_out(a, b, x):
    # below 3e-13 for a, b in [1e-3, 1e4] (documented)
    got = fgrad.grad(fsp.betainc, argnums=(0, 1))(a, b, x)
    with mpmath.workdps(40):
        expected = betainc_derivative_reference(a, b, x)
    np.testing.assert_allclose(got, expected, rtol=3e-13, atol=0)


def test_betainc_derivatives_in_a_and_b_by_symmetry():
    # I_x(a, b) = 1 - I_1-x(b, a) (at points where 1 - x is exact); at x = 1/2, a = b, d/da = -d/db;
    # a = 1: I = 1 - (1-x)**b
    x = np.array([2.0**-20, 0.25, 0.5, 0.75, 1 - 2.0**-10])
    for a, b in [(1e-8, 3.0), (0.3, 7.0), (40.0, 2.0), (1e3, 1e3), (1e5, 0.5)]:
        da, db = fgrad.vmap(fgrad.grad(fsp.betainc, argnums=(0, 1)), (None, None, 0))(a, b, x)
        da_, db_ = fgrad.vmap(fgrad.grad(lambda a, b, y: -fsp.betainc(b, a, y), argnums=(0, 1)),
                              (None, None, 0))(a, b, 1 - x)
        np.testing.assert_allclose(da, da_, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(db, db_, rtol=1e-12, atol=1e-300)
    for s in (1e-6, 0.5, 30.0, 1e4):
        da, db = fgrad.grad(fsp.betainc, argnums=(0, 1))(s, s, 0.5)
        assert da == pytest.approx(-db, rel=1e-13)
    y = np.array([0.1, 0.5, 0.9])
    db = fgrad.vmap(fgrad.grad(fsp.betainc, argnums=1), (None, None, 0))(1.0, 2.5, y)
    np.testing.assert_allclose(db, -(1 - y) ** 2.5 * np.log1p(-y), rtol=1e-14)


def test_betainc_grad_ab_special_values():
    # 0 at x == 0 and x == 1 (betainc is 0 or 1 for every a, b); nan where betainc is nan
    # and at the edges a = 0, b = 0 or inf, where it has no derivative
    a = np.array([2.0, 2.0, 0.5, 0.0, -1.0, np.inf, np.nan, 2.0, 2.0, 2.0, 2.0, 2.0])
    b = np.array([3.0, 3.0, 0.5, 3.0, 3.0, 3.0, 3.0, 0.0, np.inf, np.nan, 3.0, 3.0])
    x = np.array([0.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, -0.5, 1.5])
    expected = [0, 0, 0] + [np.nan] * 9
    for wrt in ("a", "b"):
        np.testing.assert_array_equal(ssp.betainc_grad_ab(a, b, x, wrt=wrt), expected)
        np.testing.assert_array_equal(ssp.betainc_grad_ab(2.0, 3.0, np.nan, wrt=wrt), np.nan)
        np.testing.assert_array_equal(fgrad.jit(ssp.betainc_grad_ab, static_argnames="wrt")(a, b, x, wrt=wrt),
                                      expected)
    np.testing.assert_array_equal(fgrad.vmap(fgrad.grad(fsp.betainc))(a, b, x), expected)
    # where I underflows, in logs (not 0 * inf): I = 3e-295, d/da = I (log x + ...)
    with mpmath.workdps(30):
        expected = float(mpmath.diff(lambda s: mpmath.betainc(s, 3, 0, mpmath.mpf(1e-295), regularized=True), 1))
    assert ssp.betainc_grad_ab(1.0, 3.0, 1e-295, wrt="a") == pytest.approx(expected, rel=1e-13)
    x32 = np.full(3, 0.5, np.float32)
    for args in [(x32, x32, x32), (x32, x32, 0.5), (2.0, 3.0, x32), (x32, np.ones(3), x32)]:
        assert ssp.betainc_grad_ab(*args, wrt="a").dtype == ss.betainc(*args).dtype
    with pytest.raises(ValueError, match="wrt='a' or wrt='b', got wrt='x'"):
        ssp.betainc_grad_ab(2.0, 3.0, 0.5, wrt="x")


@settings(max_examples=15)
@given(data=st.data(), seed=seeds)
def test_betainc_derivatives_in_a_b_and_x(data, seed):
    a_shape, b_shape, x_shape = data.draw(broadcast_pairs(3))
    a, b = values(a_shape, "positive", seed) * 2, values(b_shape, "positive", seed + 1) * 3
    x = values(x_shape, "positive", seed + 2) / 2.2
    check_grads(lambda a, b: fsp.betainc(a, b, x), (a, b), order=1)  # once in a and b
    check_grads(lambda x: fsp.betainc(a, b, x), (x,), order=3)  # every order in x
    check_grads(fsp.betainc, (a, b, x), order=1)
    # the derivatives in a and b once more in x (mixed, order 2 in all)
    for argnum in (0, 1):
        def da(x, argnum=argnum):
            return fgrad.vmap(fgrad.grad(fsp.betainc, argnums=argnum), (None, None, 0))(1.7, 0.8, x.ravel())

        check_grads(da, (x,), order=2)


def test_betainc_mixed_derivatives_agree_both_ways_and_with_the_density():
    # d/dx d/da I = d/da of the density x**(a-1) (1-x)**(b-1) / B(a, b), by mpmath
    for (a, b, x) in [(2.0, 1.5, 0.3), (0.4, 7.0, 0.05), (30.0, 3.0, 0.95)]:
        for argnum in (0, 1):
            xa = fgrad.grad(lambda x: fgrad.grad(fsp.betainc, argnums=argnum)(a, b, x))(x)
            ax = fgrad.grad(lambda s: fgrad.grad(fsp.betainc, argnums=2)(*((s, b) if argnum == 0 else (a, s)), x))(
                (a, b)[argnum])
            with mpmath.workdps(30):
                def density(a, b):
                    return x ** (a - 1) * (1 - mpmath.mpf(x)) ** (b - 1) / mpmath.beta(a, b)

                shape = mpmath.mpf((a, b)[argnum])
                expected = float(mpmath.diff(lambda s: density(s, b) if argnum == 0 else density(a, s), shape))
            assert xa == pytest.approx(expected, rel=1e-13)
            assert ax == pytest.approx(expected, rel=1e-13)
    h = fgrad.hessian(fsp.betainc, argnums=2)(2.0, 1.5, 0.3)
    assert h == pytest.approx(float(mpmath.diff(lambda t: mpmath.betainc(2, 1.5, 0, t, regularized=True), 0.3, 2)),
                              rel=1e-13)


def test_betainc_second_derivative_in_a_or_b_raises():
    f = fsp.betainc
    for argnum, name in ((0, "a"), (1, "b")):
        match = rf"fgrad\.scipy\.special\.betainc: the second derivative with respect to `{name}` is not"
        with pytest.raises(NotImplementedError, match=match):
            fgrad.grad(fgrad.grad(f, argnums=argnum), argnums=argnum)(2.0, 3.0, 0.4)
        with pytest.raises(NotImplementedError, match=match):
            fgrad.jacfwd(fgrad.jit(fgrad.grad(f, argnums=argnum)), argnums=argnum)(2.0, 3.0, 0.4)
        with pytest.raises(NotImplementedError, match=match):
            check_grads(lambda s: f(*((s, 3.0) if argnum == 0 else (2.0, s)), 0.4), (2.5,), order=2)
    with pytest.raises(NotImplementedError, match=r"second derivative with respect to `a` and `b` is not"):
        fgrad.grad(fgrad.grad(f, argnums=0), argnums=1)(2.0, 3.0, 0.4)
    with pytest.raises(NotImplementedError, match=r"betainc: the second derivative"):
        fgrad.hessian(f, argnums=(0, 1))(2.0, 3.0, 0.4)
    assert np.isfinite(fgrad.grad(fgrad.grad(f, argnums=0), argnums=2)(2.0, 3.0, 0.4))  # the mixed one in x is fine


def test_betainc_derivatives_in_a_and_b_jit_equals_eager_and_vmap_a_loop():
    a, b = values((2, 3), "positive", 3) * 4, values((3,), "positive", 4) * 20
    x = values((2, 1), "positive", 5) / 2.1
    def total(a, b):
        return fnp.sum(fsp.betainc(a, b, x))

    eager = fgrad.grad(total, argnums=(0, 1))(a, b)
    jitted = fgrad.jit(fgrad.grad(total, argnums=(0, 1)))(a, b)
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(j, e)
    batched = fgrad.vmap(fgrad.grad(fsp.betainc, argnums=(0, 1)), (0, None, 0))(a[:, 0], 2.5, x[:, 0])
    loop = [fgrad.grad(fsp.betainc, argnums=(0, 1))(a[i, 0], 2.5, x[i, 0]) for i in range(2)]
    for k in range(2):
        np.testing.assert_allclose(batched[k], np.stack([d[k] for d in loop]), rtol=1e-15)
    jvp = fgrad.jit(lambda a, b: fgrad.jvp(lambda a: fsp.betainc(a, b, x), (a,), (fnp.ones_like(a),))[1])(a, b)
    per_element = fgrad.vmap(fgrad.vmap(fgrad.grad(fsp.betainc)))(a, *np.broadcast_arrays(b, x, a)[:2])
    np.testing.assert_allclose(jvp, per_element, rtol=1e-15)


@given(shape=shapes, seed=seeds)
@settings(max_examples=15)
def test_multigammaln_derivatives(shape, seed):
    a = values(shape, "positive", seed) + 2
    check_grads(lambda a: fsp.multigammaln(a, 4), (a,), order=2)
    np.testing.assert_allclose(fsp.multigammaln(a, 4), ss.multigammaln(a, 4), rtol=1e-14)


# --- errors -------------------------------------------------------------------------------------

NO_RULE = [
    ("zeta", "x", lambda x: fsp.zeta(x, 2.0)),
    ("zeta", "x", lambda x: fsp.zeta(x)),
]


@pytest.mark.parametrize("function, argument, f", NO_RULE, ids=[f"{n}-{a}" for n, a, _ in NO_RULE])
def test_a_derivative_without_a_rule_raises(function, argument, f):
    match = rf"fgrad\.scipy\.special\.{function}: the derivative with respect to `{argument}` is not implemented"
    for transform in (fgrad.grad, fgrad.jacfwd, lambda f: fgrad.jit(fgrad.grad(f)), lambda f: fgrad.grad(fgrad.jit(f))):
        with pytest.raises(NotImplementedError, match=match):
            transform(f)(2.5)
    with pytest.raises(NotImplementedError, match=match):
        fgrad.jvp(f, (2.5,), (1.0,))
    with pytest.raises(NotImplementedError, match=match):
        fgrad.vmap(fgrad.grad(f))(np.array([2.5, 3.0]))
    f(2.5)  # the value itself is fine


def test_the_other_arguments_stay_differentiable():
    assert fgrad.grad(fgrad.jit(fsp.betainc), argnums=2)(2.0, 1.0, 0.5) == pytest.approx(1.0, rel=1e-15)
    da, dx = fgrad.grad(lambda a, x: fsp.zeta(fgrad.stop_gradient(a), x), argnums=(0, 1))(2.0, 1.0)
    assert da == 0 and dx == pytest.approx(-2 * ss.zeta(3.0), rel=1e-15)


@pytest.mark.parametrize("f", [fsp.gamma, fsp.i0, fsp.log_ndtr, fsp.ndtri, lambda z: fsp.beta(z, 1.0)])
def test_complex_inputs_are_refused(f):
    with pytest.raises(TypeError, match="is not supported for inputs of dtype complex128"):
        f(np.array([1 + 1j]))
    with pytest.raises(TypeError, match="is not supported for inputs of dtype complex128"):
        fgrad.jit(f)(np.array([1 + 1j]))


def test_multigammaln_errors():
    with pytest.raises(ValueError, match=r"the condition a > \(d-1\)/2 = 1.0 is not met"):
        fsp.multigammaln(np.array([3.0, 0.9]), 3)
    with pytest.raises(ValueError, match=r"the condition a > \(d-1\)/2"):
        fgrad.grad(lambda a: fsp.multigammaln(a, 3))(0.5)
    for d in (0, 2.5, [1, 2], "3"):
        with pytest.raises(ValueError, match="the dimension d must be a positive integer"):
            fsp.multigammaln(3.0, d)
    with pytest.raises(TypeError, match="the dimension d must be a concrete integer"):
        fgrad.jit(fsp.multigammaln)(3.0, 2)
    with pytest.raises(TypeError, match="multigammaln takes real numbers"):
        fsp.multigammaln(3.0 + 1j, 2)


SCIPY_BACKED = [
    lambda: fsp.gamma(1.5), lambda: fsp.rgamma(1.5), lambda: fsp.gammasgn(1.5), lambda: fsp.beta(1.0, 2.0),
    lambda: fsp.betaln(1.0, 2.0), lambda: fsp.betainc(1.0, 2.0, 0.5), lambda: fsp.gammainc(1.0, 2.0),
    lambda: fsp.gammaincc(1.0, 2.0), lambda: fsp.erfcinv(0.5), lambda: fsp.ndtri(0.5), lambda: fsp.log_ndtr(0.5),
    lambda: fsp.i0(1.0), lambda: fsp.i0e(1.0), lambda: fsp.i1(1.0), lambda: fsp.i1e(1.0), lambda: fsp.j0(1.0),
    lambda: fsp.j1(1.0), lambda: fsp.y0(1.0), lambda: fsp.y1(1.0), lambda: fsp.zeta(2.0),
    lambda: fsp.zeta(2.0, 1.0), lambda: fsp.rel_entr(1.0, 2.0), lambda: fsp.kl_div(1.0, 2.0),
    lambda: fsp.erf(1j), lambda: fsp.erfc(1j), lambda: fgrad.jit(fsp.gamma)(np.ones(7)),
    lambda: fgrad.grad(fsp.j1)(0.0),
]


def test_without_scipy_these_raise_an_import_error_naming_the_extra(monkeypatch):
    real_import = importlib.import_module

    def no_scipy(name, *args):
        if name.split(".")[0] == "scipy":
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args)

    monkeypatch.setattr(optional.importlib, "import_module", no_scipy)
    for call in SCIPY_BACKED:
        with pytest.raises(ImportError, match=r"needs scipy, which is not installed: .*pip install fgrad\[scipy\]"):
            call()
    with pytest.raises(ImportError, match=r"fgrad\.scipy\.special\.gamma needs scipy"):
        fsp.gamma(2.0)
    # the older functions are fgrad's own
    assert fsp.erf(0.5) == math.erf(0.5)
    assert fsp.gammaln(5.0) == pytest.approx(math.log(24), rel=1e-15)
    assert fgrad.grad(fsp.digamma)(1.0) == pytest.approx(math.pi**2 / 6, rel=1e-14)
    assert fsp.logsumexp(np.zeros(2)) == pytest.approx(math.log(2), rel=1e-15)
    assert fsp.multigammaln(3.0, 2) == pytest.approx(1.5501949939575645, rel=1e-14)
