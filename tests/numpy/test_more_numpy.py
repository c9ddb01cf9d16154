"""Issue 12, more of NumPy's functions: interpolation, convolution, statistics, polynomial fits,
piecewise definitions, exponents, and the index builders that need concrete values or static
arguments. Values against NumPy (traced and eager), derivatives to order 2, vmap against a loop,
jit against eager, and every error fgrad adds."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.numpy.test_numpy_api import check_vmap_and_jit
from tests.numpy_checks import check_like_numpy, staged
from tests.strategies import seeds, values

R = np.random.default_rng(1212)
V4 = np.array([0.31, 0.47, 0.83, 0.12])
M35 = R.normal(size=(3, 5))
T234 = R.normal(size=(2, 3, 4))


# --- interp ---

XP = np.array([0.0, 0.4, 1.1, 1.5])
FP = np.array([1.0, -0.5, 2.0, 0.3])


@pytest.mark.parametrize("x", [np.array([-0.5, 0.1, 0.7, 1.3, 2.0]), np.float64(0.9), R.uniform(-0.2, 1.7, (2, 3))])
@pytest.mark.parametrize("kwargs", [{}, {"left": -3.0, "right": 4.0}, {"period": 1.2}])
def test_interp(x, kwargs):
    f = lambda x, xp, fp: fnp.interp(x, xp, fp, **kwargs)
    check_like_numpy(f, x, XP, FP)
    check_vmap_and_jit(lambda x: f(x, XP, FP), x)


def test_interp_at_knots_ends_one_point_complex_and_errors():
    x = np.concatenate([XP, [-1.0, 9.0]])
    check_like_numpy(lambda x, fp: fnp.interp(x, XP, fp), x, FP, order=0)
    check_like_numpy(lambda x: fnp.interp(x, XP[:1], FP[:1]), x, order=0)
    check_like_numpy(lambda x: fnp.interp(x, XP, FP + 1j * FP[::-1]), np.array([0.2, 1.2]), order=0)
    check_like_numpy(lambda x: fnp.interp(x, [0, 1, 2], [0, 10, 0]), np.arange(3), order=0)
    check_vmap_and_jit(lambda xp, fp: fnp.interp(np.array([0.3, 0.9]), xp, fp), XP, FP)
    with pytest.raises(ValueError, match="fp and xp are not of the same length"):
        fgrad.jit(lambda x: fnp.interp(x, XP, FP[:3]))(0.5)
    with pytest.raises(ValueError, match="array of sample points is empty"):
        fgrad.jit(lambda x: fnp.interp(x, np.zeros(0), np.zeros(0)))(0.5)
    with pytest.raises(ValueError, match="object too deep for desired array"):
        fgrad.jit(lambda x: fnp.interp(x, np.zeros((2, 2)), np.zeros((2, 2))))(0.5)
    with pytest.raises(ValueError, match="period must be a non-zero value"):
        fgrad.jit(lambda x: fnp.interp(x, XP, FP, period=0))(0.5)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.interp needs `period` as a concrete"):
        fgrad.jit(lambda x, p: fnp.interp(x, XP, FP, period=p))(0.5, 1.0)


# --- convolve, correlate ---

@pytest.mark.parametrize("n, m", [(5, 3), (3, 5), (4, 4), (1, 1), (6, 1), (1, 4), (0, 2)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate(n, m, mode):
    a, v = (R.normal(size=n) if n else np.float64(0.7)), R.normal(size=m)
    if not n:  # NumPy's correlate refuses a 0-d sequence, its convolve takes it as of length 1
        with pytest.raises(ValueError, match="object of too small depth for desired array"):
            fgrad.jit(lambda a: fnp.correlate(a, v, mode))(a)
    for fn in (fnp.convolve, fnp.correlate) if n else (fnp.convolve,):
        f = lambda a, v, fn=fn: fn(a, v, mode)
        check_like_numpy(f, a, v)
        check_vmap_and_jit(f, a, v)
    c = v + 1j * R.normal(size=m)
    for fn in (fnp.convolve, fnp.correlate) if n else (fnp.convolve,):
        check_like_numpy(lambda a, v, fn=fn: fn(a, v, mode), a, c, order=0)
    check_like_numpy(lambda a: fnp.convolve(a, np.arange(m), mode), np.arange(n + 1), order=0)


def test_convolve_errors():
    with pytest.raises(ValueError, match="v cannot be empty"):
        fgrad.jit(lambda a: fnp.convolve(a, np.zeros(0)))(V4)
    with pytest.raises(ValueError, match="a cannot be empty"):
        fgrad.jit(lambda a: fnp.correlate(np.zeros(0), a))(V4)
    with pytest.raises(ValueError, match="object too deep for desired array"):
        fgrad.jit(lambda a: fnp.convolve(a, V4))(M35)
    with pytest.raises(ValueError, match="mode must be one of 'valid', 'same', or 'full' \\(got 'middle'\\)"):
        fgrad.jit(lambda a: fnp.convolve(a, V4, "middle"))(V4)
    np.testing.assert_allclose(fgrad.jit(lambda a: fnp.correlate(a, V4[:2], "f"))(V4),
                               np.correlate(V4, V4[:2], "full"))


# --- cov, corrcoef ---

@pytest.mark.parametrize("args, kwargs", [
    ((M35,), {}), ((V4,), {}), ((M35, R.normal(size=(2, 5))), {}), ((V4, R.normal(size=(4, 2))), {"rowvar": False}), ((M35.T,), {"rowvar": False}),
    ((V4, V4[::-1]), {"bias": True}), ((M35,), {"ddof": 2}), ((M35[:2],), {"rowvar": False}),
    ((M35.astype(np.float32),), {}), ((M35,), {"dtype": np.float32}),
])
def test_cov_and_corrcoef(args, kwargs):
    f = lambda *a: fnp.cov(*a, **kwargs)
    exact = all(np.asarray(a).dtype == np.float64 for a in args) and "dtype" not in kwargs
    check_like_numpy(f, *args, order=2 if exact else 0)
    check_vmap_and_jit(f, *args)
    kw = {k: v for k, v in kwargs.items() if k in ("rowvar", "dtype")}
    if args[0].size > 1 and args[0].ndim == 2 and args[0].shape[int(not kw.get("rowvar", True))] > 1:
        g = lambda *a: fnp.corrcoef(*a, **kw)
        if exact:
            check_like_numpy(g, *args)
        check_vmap_and_jit(g, *args)


def test_cov_of_complex_integers_and_errors():
    check_like_numpy(lambda m: fnp.cov(m), M35 + 1j * M35[::-1], order=0)
    check_like_numpy(lambda m: fnp.corrcoef(m), M35 + 1j * M35[::-1], order=0)
    check_like_numpy(lambda m: fnp.corrcoef(m), V4, order=0)
    check_like_numpy(lambda m: fnp.cov(m), np.arange(6).reshape(2, 3), order=0)
    with pytest.raises(ValueError, match="m has more than 2 dimensions"):
        fgrad.jit(fnp.cov)(T234)
    with pytest.raises(ValueError, match="ddof must be integer"):
        fgrad.jit(lambda m: fnp.cov(m, ddof=1.5))(M35)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        fgrad.jit(lambda m: fnp.cov(m, ddof=5))(M35)


FW5 = np.array([1, 3, 0, 2, 1])
AW5 = np.array([0.4, 1.3, 2.0, 0.7, 1.1])


@pytest.mark.parametrize("weights", [{"fweights": FW5}, {"aweights": AW5}, {"fweights": FW5, "aweights": AW5}])
@pytest.mark.parametrize("args, kwargs", [
    ((M35,), {}), ((M35,), {"bias": True}), ((M35,), {"ddof": 0}), ((M35,), {"ddof": 2}), ((M35,), {"ddof": 1, "bias": True}),
    ((M35.T,), {"rowvar": False}), ((M35[0],), {}), ((M35[0], M35[1]), {"bias": True}),
    ((M35[:2].T, R.normal(size=(5, 1))), {"rowvar": False}), ((M35.astype(np.float32),), {}),
])
def test_cov_with_weights_like_numpy(weights, args, kwargs):
    # Issue 25: fweights and aweights under a transform. Values are NumPy's, derivatives in m
    # (and y) to order 2, vmap against a loop, jit against eager.
    f = lambda *a: fnp.cov(*a, **kwargs, **weights)
    check_like_numpy(f, *args, order=2 if args[0].dtype == np.float64 else 0)
    check_vmap_and_jit(f, *args)


@pytest.mark.parametrize("kwargs", [{}, {"bias": True}, {"ddof": 3}, {"fweights": FW5}, {"fweights": FW5, "ddof": 0}])
def test_cov_derivatives_in_aweights(kwargs):
    f = lambda m, a: fnp.cov(m, aweights=a, **kwargs)
    check_like_numpy(f, M35, AW5)
    check_vmap_and_jit(f, M35, AW5)
    check_grads(lambda a: fnp.cov(M35[0], aweights=a, **kwargs), (AW5,), order=2)  # a 0-d result


def test_cov_weights_of_complex_data_and_integer_weights():
    c = M35 + 1j * M35[::-1]
    check_like_numpy(lambda m: fnp.cov(m, fweights=FW5, aweights=AW5), c, order=0)
    check_like_numpy(lambda m: fnp.cov(m, fweights=FW5.tolist(), aweights=[1, 2, 1, 1, 3]), M35)
    check_like_numpy(lambda m: fnp.cov(m, aweights=AW5), np.arange(15).reshape(3, 5), order=0)


COV_WEIGHT_ERRORS = [
    ({"fweights": [1, 2.5, 1, 1, 1]}, TypeError, "fweights must be integer: they count repeated observations"),
    ({"fweights": np.ones((1, 5))}, RuntimeError, r"cannot handle multidimensional fweights: got shape \(1, 5\)"),
    ({"aweights": np.ones((5, 1))}, RuntimeError, "cannot handle multidimensional aweights"),
    ({"fweights": [1, 2, 3]}, RuntimeError, r"incompatible numbers of samples and fweights: 5 observations, "
                                            r"fweights of shape \(3,\)"),
    ({"aweights": np.ones(4)}, RuntimeError, "incompatible numbers of samples and aweights"),
    ({"aweights": 2.0}, IndexError, r"aweights of shape \(\)"),
    ({"fweights": [1, -2, 1, 1, 1]}, ValueError, r"fweights cannot be negative, got \[ 1. -2."),
    ({"aweights": [1.0, 1.0, -0.5, 1.0, 1.0]}, ValueError, "aweights cannot be negative"),
    ({"aweights": np.zeros(5)}, ZeroDivisionError, "Weights sum to zero, can't be normalized"),
    ({"fweights": [1j, 1, 1, 1, 1]}, TypeError, "fweights must be real, got a complex128 array"),
]


@pytest.mark.parametrize("kwargs, error, message", COV_WEIGHT_ERRORS)
def test_cov_weight_errors_like_numpy(kwargs, error, message):
    # NumPy's exception types; its messages begin fgrad's (but for the complex weights, where
    # NumPy's is float()'s), which say more. Under grad the weights' values are known and checked.
    with pytest.raises(error):
        np.cov(M35, **kwargs)
    for f in [fgrad.jit(lambda m: fnp.cov(m, **kwargs)), fgrad.grad(lambda m: fnp.sum(fnp.cov(m, **kwargs)))]:
        with pytest.raises(error, match=message):
            f(M35)
    if "aweights" in kwargs and np.ndim(kwargs["aweights"]) == 1 and np.size(kwargs["aweights"]) == 5:
        with pytest.raises(error, match=message):
            fgrad.grad(lambda a: fnp.sum(fnp.cov(M35, aweights=a)))(np.asarray(kwargs["aweights"], float))


def test_cov_weights_whose_values_are_unknown_give_nan_for_numpys_errors():
    f = fgrad.jit(lambda m, fw, aw: fnp.cov(m, fweights=fw, aweights=aw))
    np.testing.assert_allclose(f(M35, FW5, AW5), np.cov(M35, fweights=FW5, aweights=AW5), rtol=1e-14)
    for fw, aw in [([1, 1.5, 1, 1, 1], AW5), ([1, -1, 1, 1, 1], AW5), (FW5, [1, 1, -1, 1, 1]), (FW5, np.zeros(5))]:
        with np.errstate(divide="ignore", invalid="ignore"):
            assert np.isnan(f(M35, np.array(fw, float), np.array(aw, float))).all()
    with pytest.raises(RuntimeError, match="incompatible numbers of samples and fweights"):
        f(M35, np.ones(4), AW5)  # shapes are known under jit
    with np.errstate(divide="ignore", invalid="ignore"):
        batch = fgrad.vmap(lambda aw: fnp.cov(M35, aweights=aw))(np.stack([AW5, -AW5]))
    np.testing.assert_allclose(batch[0], np.cov(M35, aweights=AW5), rtol=1e-14)
    assert np.isnan(batch[1]).all()


def test_cov_with_weights_and_no_degrees_of_freedom_left():
    # NumPy: fact = sum(w) - ddof <= 0 warns and divides by 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
            expected = np.cov(M35, fweights=[1, 0, 0, 0, 0])
        with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
            got = staged(lambda m: fnp.cov(m, fweights=[1, 0, 0, 0, 0]), M35)
        np.testing.assert_array_equal(got, expected)
        jitted = fgrad.jit(lambda m, fw: fnp.cov(m, fweights=fw))(M35, np.array([1.0, 0, 0, 0, 0]))
    np.testing.assert_array_equal(jitted, expected)


# --- quantile, percentile, nanmedian ---

@pytest.mark.parametrize("a, q, kwargs", [
    (M35, 0.3, {}), (M35, [0.1, 0.5, 1.0, 0.0], {"axis": 1}), (M35, 0.7, {"axis": 0, "keepdims": True}),
    (T234, [[0.2], [0.8]], {"axis": (0, 2)}), (np.float64(1.5), 0.4, {}), (V4.astype(np.float32), 0.5, {}),
    (np.arange(7), [0.2, 0.9], {"method": "lower"}), (M35, 0.33, {"method": "midpoint", "axis": -1}),
    (M35, 0.6, {"method": "nearest"}), (M35, 0.6, {"method": "higher", "keepdims": True}),
    (np.arange(7), 0.35, {}),
])
def test_quantile_and_percentile(a, q, kwargs):
    order = 2 if np.asarray(a).dtype == np.float64 else 0
    f = lambda a: fnp.quantile(a, q, **kwargs)
    check_like_numpy(f, a, order=order)
    g = lambda a: fnp.percentile(a, np.multiply(q, 100), **kwargs)
    check_like_numpy(g, a, order=order)
    if np.ndim(a):
        check_vmap_and_jit(f, a)
        check_vmap_and_jit(g, a)


def test_quantile_of_nan_and_errors():
    x = np.array([0.3, np.nan, 0.1])
    check_like_numpy(lambda a: fnp.quantile(a, [0.0, 0.5]), x, order=0)
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        fgrad.jit(lambda a: fnp.quantile(a, 1.5))(V4)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        fgrad.jit(lambda a: fnp.percentile(a, -1))(V4)
    with pytest.raises(NotImplementedError, match="fgrad.numpy.quantile supports the methods linear, lower"):
        fgrad.jit(lambda a: fnp.quantile(a, 0.5, method="weibull"))(V4)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.percentile needs `q` as a concrete"):
        fgrad.jit(fnp.percentile)(V4, 50.0)
    with pytest.raises(TypeError, match="fgrad.numpy.quantile got out="):
        fgrad.jit(lambda a: fnp.quantile(a, 0.5, out=np.zeros(())))(V4)


@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": (0, 1)}])
def test_nanmedian(kwargs):
    x = M35.copy()
    x[0, 1] = x[1, :] = x[2, 3] = np.nan
    f = lambda a: fnp.nanmedian(a, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "All-NaN slice encountered"
        check_like_numpy(f, x, order=0)
        check_like_numpy(f, M35)
        check_vmap_and_jit(f, M35)
        check_like_numpy(f, np.arange(15).reshape(3, 5), order=0)
    check_like_numpy(lambda a: fnp.nanmedian(a), np.float64(0.4))


# --- piecewise, ldexp, real_if_close ---

def test_piecewise():
    x = np.array([-1.5, -0.2, 0.3, 0.8, 2.1])
    cases = [
        lambda x: fnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v ** 2, 7.0]),
        lambda x: fnp.piecewise(x, x < 0, [lambda v, k: v * 3, lambda v, k: v + k], 0.5),
        lambda x: fnp.piecewise(x, [x < 0], [lambda v: fnp.sin(v)]),
        lambda x: fnp.piecewise(x, [x < 0, x < 1], [lambda v: 2 * v, lambda v: fnp.exp(v)]),
    ]
    for f in cases:
        check_like_numpy(f, x)
        check_like_numpy(f, np.float64(-0.7))
        check_vmap_and_jit(f, x)
    check_like_numpy(lambda x: fnp.piecewise(x, [x < 2], [lambda v: v * 3, 1.5]), np.arange(4), order=0)
    with pytest.raises(ValueError, match=r"with 2 condition\(s\), either 2 or 3 functions are expected"):
        fgrad.jit(lambda x: fnp.piecewise(x, [x < 0, x > 1], [1.0]))(x)


@pytest.mark.parametrize("x1, x2", [(V4, np.arange(4)), (np.float64(1.5), 3), (M35, np.int32(-2)),
                                    (V4.astype(np.float32), np.arange(4)), (np.arange(3), 2)])
def test_ldexp(x1, x2):
    check_like_numpy(lambda x: fnp.ldexp(x, x2), x1, order=2 if np.asarray(x1).dtype == np.float64 else 0)
    check_like_numpy(lambda x, e: fnp.ldexp(x, e), x1, np.asarray(x2), order=0)
    if np.ndim(x1):
        check_vmap_and_jit(lambda x: fnp.ldexp(x, x2), x1)
    with pytest.raises(TypeError, match="ldexp"):
        fgrad.jit(lambda x: fnp.ldexp(x, 0.5))(x1)


def test_ldexp_far_exponents():
    x1, x2 = np.array([1e-300, 3.0, 1e300, 0.0]), np.array([1100, -1070, -2000, 1000])
    check_like_numpy(lambda x, e: fnp.ldexp(x, e), x1, x2, order=0)


def test_real_if_close():
    for x in (V4, V4 + 1e-17j, V4 + 1e-3j, np.complex64(1 + 1e-9j), np.float64(2.0)):
        for tol in (100, 1e9):
            got = fgrad.jvp(lambda x: fnp.real_if_close(x, tol), (x,), (x,))
            expected = np.real_if_close(x, tol)
            for g in got:
                assert np.asarray(g).dtype == expected.dtype
            np.testing.assert_array_equal(got[0], expected)
    assert fgrad.grad(lambda x: fnp.real_if_close(x * (1 + 1e-17j)) ** 2)(3.0) == 6.0
    check_vmap_and_jit(fnp.real_if_close, V4)
    with pytest.raises(fgrad.ConcretizationTypeError,
                       match=r"fgrad.numpy.real_if_close decides its result's dtype from the values of a "
                             r"complex array, so it needs concrete values, but it got a traced c128\[4\] value"):
        fgrad.jit(fnp.real_if_close)(V4 + 1j)


# --- polyfit ---

@pytest.mark.parametrize("deg, kwargs", [(0, {}), (1, {}), (3, {}), (3, {"w": np.linspace(1, 2, 7)}),
                                         (2, {"rcond": 1e-12})])
def test_polyfit(deg, kwargs):
    x = np.linspace(-1.0, 1.3, 7)
    for y in (np.sin(3 * x), np.stack([np.sin(x), np.cos(2 * x)], 1)):
        f = lambda x, y: fnp.polyfit(x, y, deg, **kwargs)
        got, expected = staged(f, x, y), np.polyfit(x, y, deg, **kwargs)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
        check_grads(f, (x, y), order=2)
        g = lambda y: fnp.polyfit(x, y, deg, **kwargs)  # lstsq rounds differently under jit and vmap
        np.testing.assert_allclose(fgrad.jit(g)(y), g(y), rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(fgrad.vmap(g)(np.stack([y, 2 * y])), np.stack([g(y), g(2 * y)]),
                                   rtol=1e-10, atol=1e-13)


def test_polyfit_errors():
    x = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="expected deg >= 0"):
        fgrad.jit(lambda y: fnp.polyfit(x, y, -1))(x)
    with pytest.raises(TypeError, match="expected 1D vector for x"):
        fgrad.jit(lambda y: fnp.polyfit(M35, y, 1))(x)
    with pytest.raises(TypeError, match="expected non-empty vector for x"):
        fgrad.jit(lambda y: fnp.polyfit(np.zeros(0), y, 1))(np.zeros(0))
    with pytest.raises(TypeError, match="expected 1D or 2D array for y"):
        fgrad.jit(lambda y: fnp.polyfit(x, y, 1))(np.float64(1.0))
    with pytest.raises(TypeError, match="expected x and y to have same length"):
        fgrad.jit(lambda y: fnp.polyfit(x, y, 1))(V4)
    with pytest.raises(TypeError, match="expected a 1-d array for weights"):
        fgrad.jit(lambda y: fnp.polyfit(x, y, 1, w=np.ones((5, 1))))(x)
    with pytest.raises(TypeError, match="expected w and y to have the same length"):
        fgrad.jit(lambda y: fnp.polyfit(x, y, 1, w=np.ones(4)))(x)
    with pytest.raises(NotImplementedError, match="fgrad.numpy.polyfit supports neither full=True nor cov"):
        fgrad.jit(lambda y: fnp.polyfit(x, y, 1, full=True))(x)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.polyfit needs `deg` as a concrete"):
        fgrad.jit(lambda y, d: fnp.polyfit(x, y, d))(x, 1)


# --- results of concrete values: nonzero, argwhere, flatnonzero, bincount, histogram ---

@pytest.mark.parametrize("x", [np.array([0.0, 1.5, 0.0, -2.0]), np.array([[0, 1], [2, 0]]),
                               np.zeros((2, 0)), np.array([[True, False]]), np.float64(3.0)])
def test_nonzero_argwhere_flatnonzero_under_grad(x):
    fns = [fnp.argwhere, fnp.flatnonzero] + ([fnp.nonzero] if np.ndim(x) else [])
    for fn in fns:
        expected = getattr(np, fn.__name__)(x)
        got = []
        fgrad.jvp(lambda y, fn=fn: got.append(fn(y)) or y, (np.asarray(x, float),), (np.ones(np.shape(x)),))
        for g, e in zip(*(v if isinstance(v, tuple) else (v,) for v in (got[0], expected))):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)
    x = np.array([0.0, 1.5, 0.0, -2.0])
    assert fgrad.grad(lambda y: fnp.sum(y[fnp.nonzero(y)] ** 2))(x).tolist() == [0.0, 3.0, 0.0, -4.0]
    assert fgrad.grad(lambda y: fnp.sum(y[fnp.flatnonzero(y)] ** 2))(x).tolist() == [0.0, 3.0, 0.0, -4.0]


def test_nonzero_of_0d_and_concrete_errors():
    with pytest.raises(ValueError, match="Calling nonzero on 0d arrays is not allowed"):
        fgrad.grad(lambda x: x * len(fnp.nonzero(x)))(1.0)
    for fn in (fnp.nonzero, fnp.argwhere, fnp.flatnonzero):
        for transform in (fgrad.jit, fgrad.make_jaxpr, fgrad.vmap):
            with pytest.raises(fgrad.ConcretizationTypeError,
                               match=rf"fgrad.numpy.{fn.__name__} needs concrete values: the number of indices "
                                     r"it returns depends on the values of its input, but it got a traced "
                                     r"f64\[.*\] value under `(jit|make_jaxpr|vmap)"):
                transform(lambda x, fn=fn: fn(x))(M35)
    for fn in (fnp.bincount, fnp.histogram):
        with pytest.raises(fgrad.ConcretizationTypeError,
                           match=rf"fgrad.numpy.{fn.__name__} needs concrete values: the values of its input fix "
                                 r"the shape of its result, but it got a traced i64\[3\] value under `jit"):
            fgrad.jit(lambda x, fn=fn: fn(x))(np.array([0, 1, 1]))


def test_bincount():
    x = np.array([0, 3, 3, 1, 5])
    for w, minlength in [(None, 0), (None, 8), (V4[[0, 1, 2, 3, 0]], 0), (np.arange(5), 7)]:
        got = staged(lambda w: fnp.bincount(x, w, minlength), w) if w is not None else fgrad.jit(
            lambda y: (y, fnp.bincount(x, None, minlength)))(1.0)[1]
        expected = np.bincount(x, w, minlength)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    w = V4[[0, 1, 2, 3, 0]]
    check_grads(lambda w: fnp.bincount(x, w, 7) ** 2, (w,), order=2)
    check_vmap_and_jit(lambda w: fnp.bincount(x, w), w)
    assert fgrad.grad(lambda w: fnp.sum(fnp.bincount(x, w)) * 0 + fnp.bincount(x, w)[3])(w).tolist() == [0, 1, 1, 0, 0]
    with pytest.raises(ValueError, match="The weights and list don't have the same length"):
        fgrad.jit(lambda w: fnp.bincount(x, w))(V4)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.bincount needs `minlength` as a concrete"):
        fgrad.jit(lambda w, n: fnp.bincount(x, w, n))(w, 3)


def test_histogram_under_grad():
    x = np.array([0.1, 0.4, 0.45, 0.9, 0.3])
    for kwargs in ({}, {"bins": 3, "range": (0.0, 1.0)}, {"bins": [0.0, 0.5, 1.0], "density": True},
                   {"bins": 2, "weights": V4[[0, 1, 2, 3, 0]]}):
        got = []
        assert fgrad.grad(lambda y: got.append(fnp.histogram(y, **kwargs)) or fnp.sum(y))(x).tolist() == [1.0] * 5
        for g, e in zip(got[0], np.histogram(x, **kwargs)):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)


# --- index builders: triu_indices, tril_indices, diag_indices, indices, ix_ ---

def test_index_builders_are_numpys_constants_under_jit():
    A = R.normal(size=(4, 4))
    for idx, expected in [(lambda: fnp.triu_indices(4, 1), np.triu_indices(4, 1)),
                          (lambda: fnp.tril_indices(4, -1, 3), np.tril_indices(4, -1, 3)),
                          (lambda: fnp.diag_indices(4), np.diag_indices(4))]:
        np.testing.assert_array_equal(fgrad.jit(lambda a, idx=idx: a[idx()])(A), A[expected])
        check_grads(lambda a, idx=idx: a[idx()] ** 2, (A,), order=2)
        for g, e in zip(fgrad.jit(lambda a, idx=idx: (a, *idx()))(A)[1:], expected):
            np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(fnp.diag_indices(2, 3), np.diag_indices(2, 3))
    got = fgrad.jit(lambda a: a[tuple(fnp.indices((2, 3)))])(A)
    np.testing.assert_array_equal(got, A[tuple(np.indices((2, 3)))])
    for g, e in zip(fgrad.jit(lambda a: (a, *fnp.indices((2, 3), sparse=True)))(A)[1:],
                    np.indices((2, 3), sparse=True)):
        np.testing.assert_array_equal(g, e)
    assert fgrad.make_jaxpr(lambda a: a + fnp.indices((2,), dtype=np.float32)[0])(1.0)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.triu_indices needs `k` as a concrete"):
        fgrad.jit(lambda k: fnp.triu_indices(3, k))(1)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.tril_indices needs `n` as a concrete"):
        fgrad.jit(lambda n: fnp.tril_indices(n))(3)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.diag_indices needs `n` as a concrete"):
        fgrad.jit(lambda n: fnp.diag_indices(n))(3)
    with pytest.raises(fgrad.ConcretizationTypeError,
                       match="fgrad.numpy.indices needs `dimensions` as a concrete"):
        fgrad.jit(lambda n: fnp.indices((n, 2)))(3)


def test_ix_():
    A = R.normal(size=(4, 5))
    rows, cols = np.array([0, 2, 3]), np.array([4, 1])
    check_like_numpy(lambda r, c: fnp.ix_(r, c), rows, cols, order=0)
    check_like_numpy(lambda r: fnp.ix_(r, [], np.arange(2)), rows, order=0)
    np.testing.assert_array_equal(fgrad.jit(lambda a, r, c: a[fnp.ix_(r, c)])(A, rows, cols), A[np.ix_(rows, cols)])
    check_vmap_and_jit(lambda r, c: fnp.ix_(r, c), rows, cols)
    check_grads(lambda a: a[fnp.ix_(rows, cols)] ** 2, (A,), order=2)
    mask = np.array([True, False, True, True, False])
    got = fgrad.grad(lambda a: fnp.sum(a[fnp.ix_(rows, a[0] * 0 + mask > 0.5)]))(A)
    np.testing.assert_array_equal(got, np.isin(np.arange(4), rows)[:, None] * mask)
    with pytest.raises(ValueError, match="Cross index must be 1 dimensional"):
        fgrad.jit(lambda r: fnp.ix_(r))(A)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.ix_ needs concrete values"):
        fgrad.jit(lambda m: fnp.ix_(m))(mask)


# --- index objects: r_, c_, mgrid, ogrid ---

@pytest.mark.parametrize("build", [
    lambda a, b: fnp.r_[a, b], lambda a, b: fnp.r_[a, 0.5, b, 0:3], lambda a, b: fnp.r_[a, 1:2:3j, b, -1],
    lambda a, b: fnp.c_[a, b], lambda a, b: fnp.c_[a, b, 0:4], lambda a, b: fnp.r_["0,2", a, b],
    lambda a, b: fnp.r_["-1,2,0", a, b], lambda a, b: fnp.r_["1,2", a, b], lambda a, b: fnp.r_[a[0], b],
])
def test_r_and_c_concatenate_traced_values(build):
    a, b = V4, 2 * V4[::-1]
    check_like_numpy(build, a, b)
    check_vmap_and_jit(build, a, b)
    assert staged(build, a.astype(np.float32), b.astype(np.float32)).dtype == build(
        a.astype(np.float32), b.astype(np.float32)).dtype


def test_r_c_mgrid_ogrid_of_constants_and_errors():
    np.testing.assert_array_equal(fnp.r_[1:4, 7], np.r_[1:4, 7])
    np.testing.assert_array_equal(fgrad.jit(lambda x: fnp.r_[0:3] * x)(2.0), np.r_[0:3] * 2.0)
    np.testing.assert_array_equal(fgrad.jit(lambda x: fnp.mgrid[0:2, 0:3] * x)(2.0), np.mgrid[0:2, 0:3] * 2.0)
    for g, e in zip(fgrad.jit(lambda x: [o * x for o in fnp.ogrid[0:2, 0:1:3j]])(2.0), np.ogrid[0:2, 0:1:3j]):
        np.testing.assert_array_equal(g, 2.0 * e)
    assert fgrad.grad(lambda n: fnp.sum(fnp.mgrid[0:n]) * n)(3.0) == 3.0
    assert repr(fnp.r_) == "fgrad.numpy.r_" and repr(fnp.mgrid) == "fgrad.numpy.mgrid"
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.mgrid needs `the slices' numbers` as a"):
        fgrad.jit(lambda n: fnp.mgrid[0:n])(3)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.r_ needs `the slices' numbers` as a"):
        fgrad.jit(lambda x, n: fnp.r_[x, 0:n])(V4, 3)
    with pytest.raises(ValueError, match="special directives must be the first entry"):
        fgrad.jit(lambda x: fnp.r_[x, "0"])(V4)
    with pytest.raises(ValueError, match="unknown special directive 'a,b'"):
        fgrad.jit(lambda x: fnp.r_["a,b", x])(V4)
    with pytest.raises(ValueError, match="unknown special directive"):
        fgrad.jit(lambda x: fnp.r_["x", x])(V4)
    with pytest.raises(NotImplementedError, match="fgrad.numpy.r_ does not make matrices"):
        fgrad.jit(lambda x: fnp.r_["r", x])(V4)


# --- frexp ---

EDGES = np.array([12.0, -0.3, 0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 2.2e-308, 1.0, 0.5, 2.0 ** -1022,
                  1.7e308, -2.0 ** 53, np.nextafter(1, 0), np.nextafter(2, 0), np.nextafter(0.5, 1)])


@pytest.mark.parametrize("x", [EDGES, EDGES[np.isfinite(EDGES) & (np.abs(EDGES) < 3e38)].astype(np.float32),
                               R.normal(size=500) * 10.0 ** R.integers(-300, 300, 500), np.float64(-6.5),
                               np.arange(4), M35])
def test_frexp(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or underflow on the way
        check_like_numpy(fnp.frexp, x, order=0)
    if np.ndim(x) and np.asarray(x).dtype == np.float64 and np.all(np.isfinite(x)):
        check_vmap_and_jit(fnp.frexp, x)


def test_frexp_derivative_and_errors():
    x = np.array([0.3, -1.7, 12.5, 1e-3])  # away from powers of two, where the mantissa jumps
    check_grads(lambda x: fnp.frexp(x)[0] * fnp.frexp(2 * x)[0], (x,), order=2)
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.frexp(x)[0])(12.5), 1 / 16)
    with pytest.raises(TypeError, match="frexp"):
        fgrad.jit(fnp.frexp)(V4 + 1j)


# --- gradient ---

def _coordinates(n, seed):
    """Unevenly spaced increasing sample points: NumPy's uneven formulas."""
    return np.cumsum(np.random.default_rng(seed).uniform(0.5, 1.5, n))


@st.composite
def gradient_cases(draw):
    """f, the axes (as given: None, an int or a tuple, negative ones too), edge_order, and per axis a
    spacing form: the traced spacings are returned apart, as arguments to differentiate."""
    edge_order = draw(st.sampled_from([1, 2]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=edge_order + 1, max_side=4))
    seed = draw(seeds)
    f = values(shape, "real", seed)
    nd = len(shape)
    form = draw(st.sampled_from(["none", "int", "tuple"]))
    if form == "none":
        axis, axes = None, list(range(nd))
    elif form == "int":
        axis = draw(st.integers(-nd, nd - 1))
        axes = [axis % nd]
    else:
        axes = draw(st.permutations(range(nd)).flatmap(lambda p: st.integers(1, nd).map(lambda k: p[:k])))
        axis = tuple(a - nd if draw(st.booleans()) else a for a in axes)
    kind = draw(st.sampled_from(["nothing", "one scalar", "per axis"]))
    spacings = []  # per axis: ("traced", value) or ("constant", value)
    if kind == "one scalar":
        spacings = [draw(st.sampled_from([("traced", np.float64(0.7)), ("constant", 2.0), ("constant", 3)]))]
    elif kind == "per axis":
        for i, ax in enumerate(axes):
            spacings.append(draw(st.sampled_from([
                ("traced", np.float64(0.4 + i)), ("constant", 1.5 + i), ("traced", _coordinates(shape[ax], seed + i)),
                ("constant", _coordinates(shape[ax], seed + i)), ("constant", np.linspace(0, 1, shape[ax])),
                ("constant", np.arange(shape[ax]) * 2)])))
    return f, axis, edge_order, spacings


@given(case=gradient_cases())
def test_gradient_like_numpy(case):
    f, axis, edge_order, spacings = case
    traced = [v for how, v in spacings if how == "traced"]

    def g(f, *traced_spacings):
        it = iter(traced_spacings)
        varargs = [next(it) if how == "traced" else v for how, v in spacings]
        return fnp.gradient(f, *varargs, axis=axis, edge_order=edge_order)

    check_like_numpy(g, f, *traced, order=2 if f.size <= 16 else 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.uint8, np.complex128])
@pytest.mark.parametrize("spacing", [(), (0.3,), (3,), (np.float64(0.3),), (np.float32(0.3),),
                                     (np.array([0, 1, 3, 6, 7]),), (np.array([0.0, 0.5, 1.5, 2.0, 4.0], np.float32),)])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_dtypes_are_numpys(dtype, spacing, edge_order):
    f = (np.arange(5) ** 2 * (1 + 1j if dtype == np.complex128 else 1)).astype(dtype)
    check_like_numpy(lambda f: fnp.gradient(f, *spacing, edge_order=edge_order), f, order=0)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_derivatives_in_f_and_the_coordinates(edge_order):
    f, x, y = R.normal(size=(4, 3)), _coordinates(4, 1), _coordinates(3, 2)
    check_grads(lambda f, x, y: fnp.gradient(f, x, y, edge_order=edge_order), (f, x, y), order=2)
    check_grads(lambda f, x: fnp.gradient(f, x, axis=0, edge_order=edge_order), (f, x), order=2)
    check_grads(lambda f, h: fnp.gradient(f, h, edge_order=edge_order), (f, np.float64(0.7)), order=2)
    check_grads(lambda x: fnp.gradient(fnp.sin(x), x, edge_order=edge_order), (x,), order=2)
    check_vmap_and_jit(lambda f, x, y: fnp.gradient(f, x, y, edge_order=edge_order), f, x, y)
    check_vmap_and_jit(lambda f, h: fnp.gradient(f, h, axis=-1, edge_order=edge_order), f, np.float64(0.7))
    check_vmap_and_jit(lambda f: fnp.gradient(f, y, axis=1, edge_order=edge_order), f)
    np.testing.assert_allclose(fgrad.jacfwd(lambda f: np.gradient(f, x, edge_order=edge_order))(f[:, 0]),
                               np.gradient(np.eye(4), x, axis=0, edge_order=edge_order))  # NumPy's own name


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_in_evenly_spaced_traced_coordinates(edge_order):
    # Traced coordinates always take the uneven formulas (NumPy's values up to rounding), so their
    # derivative holds where they are evenly spaced too: finite differences leave the even spacing.
    f, x = R.normal(size=(3, 5)), np.linspace(0.0, 2.0, 5)
    g = lambda f, x: fnp.gradient(f, x, axis=1, edge_order=edge_order)
    np.testing.assert_allclose(staged(g, f, x), np.gradient(f, x, axis=1, edge_order=edge_order),
                               rtol=1e-12, atol=1e-12)
    check_grads(g, (f, x), order=2)
    np.testing.assert_allclose(fgrad.jit(g)(f, x), g(f, x), rtol=1e-12, atol=1e-12)
    two = np.array([0.0, 0.5])  # two points: one difference, the same in either formula
    check_like_numpy(lambda f, x: fnp.gradient(f, x), f[0, :2], two)


def test_gradient_of_0d_empty_and_two_point_arrays():
    assert fgrad.jit(fnp.gradient)(np.float64(2.0)) == () == np.gradient(np.float64(2.0))
    assert fgrad.jit(lambda f: fnp.gradient(f, 2.0))(np.float64(2.0)) == ()
    check_like_numpy(lambda f: fnp.gradient(f, axis=0), np.ones((3, 0)), order=0)
    check_like_numpy(lambda f: fnp.gradient(f, 0.5), V4[:2])
    check_like_numpy(lambda f: fnp.gradient(f, edge_order=0), V4)  # NumPy takes any edge_order < 3 but 1 as 2


def test_gradient_errors():
    cases = [
        (TypeError, "invalid number of arguments", lambda f: fnp.gradient(f, 1.0, 2.0, 3.0)),
        (TypeError, "invalid number of arguments", lambda f: fnp.gradient(f, np.arange(3.0))),
        (ValueError, "distances must be either scalars or 1d", lambda f: fnp.gradient(f, np.ones((3, 5)), 1.0)),
        (ValueError, "when 1d, distances must match the length", lambda f: fnp.gradient(f, np.arange(4.0), 1.0)),
        (ValueError, "'edge_order' greater than 2 not supported", lambda f: fnp.gradient(f, edge_order=3)),
        (ValueError, r"at least \(edge_order \+ 1\) elements are required",
         lambda f: fnp.gradient(f[:1], axis=0)),
        (ValueError, r"at least \(edge_order \+ 1\) elements are required",
         lambda f: fnp.gradient(f[:2], axis=0, edge_order=2)),
        (IndexError, "index 2 is out of bounds for axis 0 with size 2", lambda f: fnp.gradient(f[:2], edge_order=0)),
        (IndexError, "index 0 is out of bounds for axis 0 with size 0", lambda f: fnp.gradient(f[0, :1], [0.0])),
        (np.exceptions.AxisError, "axis 2 is out of bounds", lambda f: fnp.gradient(f, axis=2)),
        (ValueError, "repeated axis", lambda f: fnp.gradient(f, axis=(0, -2))),
        (TypeError, "numpy boolean subtract", lambda f: fnp.gradient(f > 0)),
    ]
    for error, message, g in cases:
        with pytest.raises(error, match=message):
            g(M35)
        with pytest.raises(error, match=message):
            fgrad.jit(g)(M35)
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        fgrad.jit(lambda x: fnp.gradient(V4[:1], x))(np.zeros(1))  # one traced coordinate
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.gradient needs `edge_order` as a concrete"):
        fgrad.jit(lambda f, e: fnp.gradient(f, edge_order=e))(V4, 1)
