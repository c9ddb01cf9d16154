"""The composite elementwise functions of fgrad.numpy (clip, select, positive,
fix, divmod, isposinf/isneginf), NumPy's argument conventions and errors, and
plain NumPy calls and Python operators on traced values: values equal NumPy's,
derivatives checked against finite differences."""

import re

import numpy as np
import pytest
from hypothesis import assume, given

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.numpy_checks import staged, staged_with_aval
from tests.strategies import broadcast_pairs, seeds, values


@given(shapes=broadcast_pairs(3), seed=seeds)
def test_clip_with_array_bounds(shapes, seed):
    x, lo, hi = values(shapes[0], "real", seed), values(shapes[1], "real", seed + 1), values(shapes[2], "real", seed + 2)
    x_, lo_, hi_ = np.broadcast_arrays(x, lo, hi)
    assume(min(np.min(np.abs(x_ - lo_), initial=1), np.min(np.abs(x_ - hi_), initial=1),
               np.min(np.abs(lo_ - hi_), initial=1)) > 1e-3)  # away from ties
    np.testing.assert_array_equal(fnp.clip(x, lo, hi), np.clip(x, lo, hi))
    np.testing.assert_array_equal(staged(lambda a, b, c: fnp.clip(a, b, c), x, lo, hi), np.clip(x, lo, hi))
    check_grads(fnp.clip, (x, lo, hi), order=2)
    check_grads(lambda x, lo: fnp.clip(x, min=lo), (x, lo), order=2)
    check_grads(lambda x, hi: fnp.clip(x, None, hi), (x, hi), order=2)


def test_clip_derivative_inside_outside_and_on_the_bounds():
    x = np.array([-2.0, 0.0, 0.5, 1.0, 3.0])
    g = fgrad.grad(lambda a: fnp.sum(fnp.clip(a, 0.0, 1.0)))(x)
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0, 0.5, 0.0])  # ties shared, as jnp.clip
    g_lo, g_hi = fgrad.grad(lambda lo, hi: fnp.sum(fnp.clip(x, lo, hi)), argnums=(0, 1))(0.0, 1.0)
    assert (g_lo, g_hi) == (1.5, 1.5)
    assert fgrad.grad(lambda a: fnp.clip(a, 2.0, 1.0))(1.5) == 0.0  # a_min > a_max: all a_max


def test_clip_matches_numpy_on_bounds_and_dtypes():
    x = np.array([-2.0, 0.5, 3.0])
    for args, kwargs in [((0.0, 1.0), {}), ((None, 1.0), {}), ((0.0, None), {}), ((None, None), {}),
                         ((), {"min": 0.0}), ((), {"max": 1.0}), ((), {"min": 0.0, "max": 1.0}), ((), {})]:
        np.testing.assert_array_equal(staged(lambda a: fnp.clip(a, *args, **kwargs), x),
                                      np.clip(x, *args, **kwargs))
    i8 = np.array([-100, 0, 100], np.int8)
    for lo, hi in [(0, 300), (-1000, 50), (np.int8(-5), np.int8(5))]:
        out, aval = staged_with_aval(lambda a: fnp.clip(a, lo, hi), i8)
        np.testing.assert_array_equal(out, np.clip(i8, lo, hi))
        assert aval.dtype == np.clip(i8, lo, hi).dtype
    assert staged_with_aval(lambda a: fnp.clip(a, 0.0, 0.5), np.float32([1.0]))[1].dtype == np.float32
    for bad, error in [(((1.0,), {}), TypeError), (((0.0, 1.0), {"max": 2.0}), ValueError)]:
        (args, kwargs), exc = bad, error
        with pytest.raises(exc) as numpy_error:
            np.clip(x, *args, **kwargs)
        with pytest.raises(exc, match=re.escape(str(numpy_error.value))):
            fgrad.make_jaxpr(lambda a, args=args, kwargs=kwargs: fnp.clip(a, *args, **kwargs))(x)
    with pytest.raises(TypeError, match="out="):
        fgrad.grad(lambda a: fnp.clip(a, 0.0, 1.0, out=np.empty(())))(1.0)


@given(shapes=broadcast_pairs(4), seed=seeds)
def test_select_with_several_conditions(shapes, seed):
    rng = np.random.default_rng(seed)
    c1, c2 = rng.uniform(size=shapes[0]) < 0.4, rng.uniform(size=shapes[1]) < 0.5
    x, y = values(shapes[2], "real", seed), values(shapes[3], "real", seed + 1)

    def f(x, y, d):
        return fnp.select([c1, c2, x > 1.5], [x * x, fnp.sin(y), y], d)

    expected = np.select([c1, c2, x > 1.5], [x * x, np.sin(y), y], 0.25)
    np.testing.assert_allclose(f(x, y, 0.25), expected, rtol=1e-15)
    out, aval = staged_with_aval(lambda x, y: f(x, y, 0.25), x, y)
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    assert aval.shape == expected.shape and aval.dtype == expected.dtype
    check_grads(f, (x, y, 0.25), order=2)


def test_select_dtypes_first_match_and_errors():
    x = np.array([-2.0, -0.5, 0.5, 2.0])
    conds, choices = [x < 0, x < 1], [np.float32(1) * x.astype(np.float32), np.ones(4, np.float32)]
    for default in (0, 0.5, np.float64(2.0), np.array([1, 2, 3, 4])):
        expected = np.select(conds, choices, default)
        out, aval = staged_with_aval(lambda a, d=default: fnp.select([a < 0, a < 1], choices, d), x)
        np.testing.assert_array_equal(out, expected)
        assert aval.dtype == expected.dtype
    g = fgrad.grad(lambda a: fnp.sum(fnp.select([a < 0, a < 1], [a * 3.0, a * 2.0], a)))(x)
    np.testing.assert_array_equal(g, [3.0, 3.0, 2.0, 1.0])  # the first condition that holds wins
    bad = [(([x > 0], []), ValueError, "same length"), (([], []), ValueError, "empty condition list"),
           (([x], [x]), TypeError, "invalid entry 0 in condlist")]
    for (condlist, choicelist), exc, message in bad:
        with pytest.raises(exc, match=message):
            np.select(condlist, choicelist)
        with pytest.raises(exc, match=message):
            fgrad.grad(lambda a, cl=condlist, ch=choicelist: fnp.sum(fnp.select(cl, [c * a for c in ch])))(x)


def test_plain_numpy_calls_on_tracers_dispatch_to_fgrad():
    x, y = np.array([0.57, -1.43, 2.31]), np.array([1.0, 2.0, -0.5])  # away from the jumps
    g = fgrad.grad(lambda a: np.sum(np.arctan2(a, y)))(x)
    np.testing.assert_allclose(g, y / (x**2 + y**2))
    g = fgrad.grad(lambda b: np.sum(np.arctan2(x, b)))(y)
    np.testing.assert_allclose(g, -x / (x**2 + y**2))

    def f(a):
        out = np.clip(a, -1.0, 1.0) + np.round(a, 1) + np.sinc(a) + np.nan_to_num(np.log(a * a))
        out = out + np.select([a > 0], [np.expm1(a)], np.log1p(a * a)) + np.fix(a) + np.hypot(a, 1.0)
        out = out + np.float_power(a * a, 1.5) + np.logaddexp(a, 0.0) + np.remainder(a, 0.7)
        return np.sum(out + np.isposinf(a) + np.heaviside(a, 0.5) + np.acos(a / 3) + np.degrees(a))

    expected = fgrad.grad(f)(x)
    eps = 1e-6
    numeric = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(expected, numeric, rtol=1e-6)
    q, r = fgrad.jvp(lambda a: np.divmod(a, 0.7), (x,), (np.ones(3),))
    np.testing.assert_array_equal(q[0], np.floor_divide(x, 0.7))


def test_positive_and_the_errors_numpy_raises():
    x = np.array([1.0, -2.0])
    np.testing.assert_array_equal(fgrad.grad(lambda a: fnp.sum(fnp.positive(a) * a))(x), 2 * x)
    with pytest.raises(TypeError, match="ufunc 'positive' did not contain a loop"):
        fgrad.make_jaxpr(fnp.positive)(np.array([True]))
    with pytest.raises(TypeError, match="not supported for complex128 values"):
        fgrad.make_jaxpr(fnp.isposinf)(np.array([1j]))
    with pytest.raises(TypeError, match="out="):
        fgrad.grad(lambda a: fnp.round(a, out=np.empty(())))(1.0)
    # NumPy's own errors for unsupported dtypes, raised while tracing:
    with pytest.raises(TypeError, match="ufunc 'remainder' not supported for the input types"):
        fgrad.make_jaxpr(lambda a: fnp.remainder(a, 2.0))(np.array([1j]))
    with pytest.raises(TypeError, match="ufunc 'bitwise_and' not supported for the input types"):
        fgrad.grad(lambda a: fnp.sum(fnp.bitwise_and(a, a)))(np.ones(2))


def test_float_power_is_float64_and_power_aliases():
    x = np.float32([0.5, 2.0])
    out, aval = staged_with_aval(lambda a: fnp.float_power(a, np.float32(2)), x)
    assert aval.dtype == np.float64 and np.asarray(out).dtype == np.float64
    check_grads(lambda a, b: fnp.float_power(a, b), (np.array([0.5, 2.0]), np.array([-1.5, 3.0])), order=2)
    assert fnp.pow is fnp.power and fnp.mod is fnp.remainder and fnp.around is fnp.round
    assert fnp.radians is fnp.deg2rad and fnp.degrees is fnp.rad2deg and fnp.atan2 is fnp.arctan2


OPERATORS = {  # the tracers' Python operators (installed by fgrad/numpy/dispatch.py)
    "__floordiv__": lambda x, y: x // y, "__rfloordiv__": lambda x, y: 1.3 // y,
    "__mod__": lambda x, y: x % y, "__rmod__": lambda x, y: 1.3 % y,
    "__divmod__": lambda x, y: divmod(x, y)[1], "__rdivmod__": lambda x, y: divmod(1.3, y)[1],
    "__and__": lambda x, y: (x > 0) & (y > 0), "__rand__": lambda x, y: True & (y > 0),
    "__or__": lambda x, y: (x > 0) | (y > 0), "__ror__": lambda x, y: False | (y > 0),
    "__xor__": lambda x, y: (x > 0) ^ (y > 0), "__rxor__": lambda x, y: True ^ (y > 0),
    "__invert__": lambda x, y: ~(x > y), "__pos__": lambda x, y: +x,
}


@pytest.mark.parametrize("dunder", sorted(OPERATORS))
def test_python_operators_on_tracers(dunder):
    f = OPERATORS[dunder]
    x, y = np.array([2.5, -1.2, 0.4]), np.array([0.7, 0.7, -0.9])
    with np.errstate(all="ignore"):
        expected = f(x, y)
        got, aval = staged_with_aval(f, x, y)
    np.testing.assert_array_equal(got, expected)
    assert aval.dtype == np.asarray(expected).dtype
    check_grads(lambda x, y: f(x, y) * x * y, (x, y), order=1)
