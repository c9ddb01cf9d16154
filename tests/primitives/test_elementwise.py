"""Elementwise primitives: values equal NumPy's, and every derivative rule
checked against finite differences in forward and reverse mode to second
order, on 0-d, n-d and broadcast shapes."""

import numpy as np
import pytest
from hypothesis import assume, given

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.numpy_checks import staged, staged_with_aval
from tests.strategies import broadcast_pairs, seeds, shapes, values

# The primitives whose rules this module checks (tests/primitives/test_registry.py).
PRIMITIVES = {
    "neg", "sin", "cos", "exp", "log", "tanh", "sqrt", "square", "abs", "sign", "stop_gradient",
    "add", "sub", "mul", "div", "pow", "max", "min", "eq", "ne", "lt", "le", "gt", "ge", "where",
    "integer_pow", "convert_element_type",
    "fabs", "reciprocal", "cbrt", "exp2", "expm1", "log2", "log10", "log1p", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "sinc", "floor",
    "ceil", "rint", "trunc", "round", "nan_to_num", "isfinite", "isnan", "isinf", "signbit",
    "logical_not", "invert", "fmax", "fmin", "float_power", "floor_divide", "remainder", "fmod",
    "copysign", "hypot", "arctan2", "logaddexp", "logaddexp2", "heaviside", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "ldexp",
}

BATCH_CASES = {  # vmap == loop (tests/transforms/test_batching.py): label -> (f, example shapes, domain)
    "neg": (fnp.negative, [(3,)], "real"), "sin": (fnp.sin, [(2, 3)], "real"),
    "cos": (fnp.cos, [()], "real"), "exp": (fnp.exp, [(3,)], "real"),
    "log": (fnp.log, [(2, 2)], "positive"), "tanh": (fnp.tanh, [(3,)], "real"),
    "sqrt": (fnp.sqrt, [(3,)], "positive"), "square": (fnp.square, [(3,)], "real"),
    "abs": (fnp.abs, [(3,)], "nonzero"), "sign": (fnp.sign, [(3,)], "nonzero"),
    "stop_gradient": (fgrad.stop_gradient, [(3,)], "real"),
    "integer_pow": (lambda x: x**3, [(2, 3)], "real"),
    "convert_element_type": (lambda x: fnp.astype(x, np.float32), [(3,)], "real"),
    "add": (fnp.add, [(2, 3), (3,)], "real"), "sub": (fnp.subtract, [(3,), (2, 3)], "real"),
    "mul": (fnp.multiply, [(2, 1), (1, 3)], "real"), "div": (fnp.divide, [(3,), ()], "nonzero"),
    "pow": (fnp.power, [(3,), (3,)], "positive"), "max": (fnp.maximum, [(3,), (2, 3)], "real"),
    "min": (fnp.minimum, [(2, 3), ()], "real"),
    "eq": (fnp.equal, [(3,), (3,)], "real"), "ne": (fnp.not_equal, [(3,), ()], "real"),
    "lt": (fnp.less, [(3,), (3,)], "real"), "le": (fnp.less_equal, [(2, 3), (3,)], "real"),
    "gt": (fnp.greater, [(3,), (3,)], "real"), "ge": (fnp.greater_equal, [(3,), (3,)], "real"),
    "where": (lambda x, y, z: fnp.where(x > 0, y, z), [(3,), (2, 3), ()], "real"),
    "scalar_ops": (lambda x, y: x * y + x, [(), ()], "real"),
    "fabs": (fnp.fabs, [(3,)], "nonzero"), "reciprocal": (fnp.reciprocal, [(2, 3)], "nonzero"),
    "cbrt": (fnp.cbrt, [(3,)], "real"), "exp2": (fnp.exp2, [(3,)], "real"),
    "expm1": (fnp.expm1, [()], "real"), "log2": (fnp.log2, [(3,)], "positive"),
    "log10": (fnp.log10, [(2, 2)], "positive"), "log1p": (fnp.log1p, [(3,)], "unit"),
    "tan": (fnp.tan, [(3,)], "unit"), "arcsin": (fnp.arcsin, [(3,)], "unit"),
    "arccos": (fnp.arccos, [(2, 3)], "unit"), "arctan": (fnp.arctan, [(3,)], "real"),
    "sinh": (fnp.sinh, [(3,)], "real"), "cosh": (fnp.cosh, [()], "real"),
    "arcsinh": (fnp.arcsinh, [(3,)], "real"), "arccosh": (lambda x: fnp.arccosh(x + 1.0), [(3,)], "positive"),
    "arctanh": (fnp.arctanh, [(3,)], "unit"), "deg2rad": (fnp.deg2rad, [(3,)], "real"),
    "rad2deg": (fnp.rad2deg, [(3,)], "real"), "sinc": (fnp.sinc, [(2, 3)], "real"),
    "floor": (fnp.floor, [(3,)], "real"), "ceil": (fnp.ceil, [(3,)], "real"),
    "rint": (fnp.rint, [(3,)], "real"), "trunc": (fnp.trunc, [(3,)], "real"),
    "round": (lambda x: fnp.round(x, 1), [(2, 3)], "real"),
    "nan_to_num": (lambda x: fnp.nan_to_num(fnp.log(x)), [(3,)], "real"),
    "isfinite": (lambda x: fnp.isfinite(fnp.log(x)), [(3,)], "real"),
    "isnan": (lambda x: fnp.isnan(fnp.log(x)), [(3,)], "real"),
    "isinf": (lambda x: fnp.isinf(1.0 / fnp.floor(x)), [(3,)], "real"),
    "signbit": (fnp.signbit, [(3,)], "real"),
    "isposinf": (lambda x: fnp.isposinf(1.0 / fnp.floor(x)), [(3,)], "real"),
    "logical_not": (lambda x: fnp.logical_not(x > 0), [(3,)], "real"),
    "invert": (lambda x: fnp.invert(x > 0), [(3,)], "real"),
    "fmax": (fnp.fmax, [(3,), (2, 3)], "real"), "fmin": (fnp.fmin, [(2, 3), ()], "real"),
    "float_power": (fnp.float_power, [(3,), (3,)], "positive"),
    "floor_divide": (fnp.floor_divide, [(2, 3), (3,)], "nonzero"),
    "remainder": (fnp.remainder, [(3,), ()], "nonzero"), "fmod": (fnp.fmod, [(3,), (2, 3)], "nonzero"),
    "copysign": (fnp.copysign, [(3,), (3,)], "real"), "hypot": (fnp.hypot, [(2, 1), (1, 3)], "real"),
    "ldexp": (lambda x, y: fnp.ldexp(x, fnp.floor(y * 3).astype(int)), [(3,), (2, 3)], "real"),
    "arctan2": (fnp.arctan2, [(3,), (2, 3)], "nonzero"),
    "logaddexp": (fnp.logaddexp, [(3,), (3,)], "real"), "logaddexp2": (fnp.logaddexp2, [(), (3,)], "real"),
    "heaviside": (lambda x, h: fnp.heaviside(fnp.floor(x), h), [(3,), (3,)], "real"),
    "logical_and": (lambda x, y: fnp.logical_and(x, y > 0), [(3,), (2, 3)], "real"),
    "logical_or": (lambda x, y: fnp.logical_or(x > 0, y > 0), [(3,), (3,)], "real"),
    "logical_xor": (lambda x, y: fnp.logical_xor(x > 0, y), [(3,), ()], "real"),
    "bitwise_and": (lambda x, y: fnp.bitwise_and(x > 0, y > 0), [(3,), (3,)], "real"),
    "bitwise_or": (lambda x, y: fnp.bitwise_or(x > 0, y > 0), [(2, 3), (3,)], "real"),
    "bitwise_xor": (lambda x, y: fnp.bitwise_xor(x > 0, y > 0), [(3,), (3,)], "real"),
    "clip": (lambda x, lo: fnp.clip(x, lo, 1.0), [(3,), (3,)], "real"),
    "select": (lambda x, y: fnp.select([x > 1, y < 0], [x, y * y], 0.5), [(3,), (2, 3)], "real"),
}

DOMAINS = {"above_one": lambda shape, seed: values(shape, "positive", seed) + 1.0}  # (1.5, 3)


def draw(shape, domain, seed):
    """`values`, with the domains only this module needs."""
    return DOMAINS[domain](shape, seed) if domain in DOMAINS else values(shape, domain, seed)


UNARY = [
    ("negative", fnp.negative, np.negative, "real"),
    ("sin", fnp.sin, np.sin, "real"),
    ("cos", fnp.cos, np.cos, "real"),
    ("exp", fnp.exp, np.exp, "real"),
    ("log", fnp.log, np.log, "positive"),
    ("tanh", fnp.tanh, np.tanh, "real"),
    ("sqrt", fnp.sqrt, np.sqrt, "positive"),
    ("square", fnp.square, np.square, "real"),
    ("abs", fnp.abs, np.abs, "nonzero"),
    ("sign", fnp.sign, np.sign, "nonzero"),
    ("power_int_2", lambda x: fnp.power(x, 2), lambda x: np.power(x, 2), "real"),
    ("power_int_3", lambda x: x**3, lambda x: x**3, "real"),
    ("power_int_1", lambda x: x**1, lambda x: x**1, "real"),
    ("power_int_0", lambda x: x**0, lambda x: x**0, "real"),
    ("power_int_neg", lambda x: x**-2, lambda x: x**-2.0, "nonzero"),
    ("positive", fnp.positive, np.positive, "real"),
    ("fabs", fnp.fabs, np.fabs, "nonzero"),
    ("reciprocal", fnp.reciprocal, np.reciprocal, "nonzero"),
    ("cbrt", fnp.cbrt, np.cbrt, "nonzero"),
    ("exp2", fnp.exp2, np.exp2, "real"),
    ("expm1", fnp.expm1, np.expm1, "real"),
    ("log2", fnp.log2, np.log2, "positive"),
    ("log10", fnp.log10, np.log10, "positive"),
    ("log1p", fnp.log1p, np.log1p, "unit"),
    ("tan", fnp.tan, np.tan, "unit"),
    ("arcsin", fnp.arcsin, np.arcsin, "unit"),
    ("arccos", fnp.arccos, np.arccos, "unit"),
    ("arctan", fnp.arctan, np.arctan, "real"),
    ("sinh", fnp.sinh, np.sinh, "real"),
    ("cosh", fnp.cosh, np.cosh, "real"),
    ("arcsinh", fnp.arcsinh, np.arcsinh, "real"),
    ("arccosh", fnp.arccosh, np.arccosh, "above_one"),
    ("arctanh", fnp.arctanh, np.arctanh, "unit"),
    ("deg2rad", fnp.deg2rad, np.deg2rad, "real"),
    ("radians", fnp.radians, np.radians, "real"),
    ("rad2deg", fnp.rad2deg, np.rad2deg, "real"),
    ("degrees", fnp.degrees, np.degrees, "real"),
    ("sinc", fnp.sinc, np.sinc, "real"),
    ("nan_to_num", fnp.nan_to_num, np.nan_to_num, "real"),
    ("acos", fnp.acos, np.acos, "unit"),
    ("asinh", fnp.asinh, np.asinh, "real"),
]

BINARY = [
    ("add", fnp.add, np.add, "real", "real"),
    ("subtract", fnp.subtract, np.subtract, "real", "real"),
    ("multiply", fnp.multiply, np.multiply, "real", "real"),
    ("divide", fnp.divide, np.divide, "real", "nonzero"),
    ("power", fnp.power, np.power, "positive", "real"),
    ("maximum", fnp.maximum, np.maximum, "real", "real"),
    ("minimum", fnp.minimum, np.minimum, "real", "real"),
    ("true_divide", fnp.true_divide, np.true_divide, "real", "nonzero"),
    ("pow", fnp.pow, np.pow, "positive", "real"),
    ("float_power", fnp.float_power, np.float_power, "positive", "real"),
    ("fmax", fnp.fmax, np.fmax, "real", "real"),
    ("fmin", fnp.fmin, np.fmin, "real", "real"),
    ("remainder", fnp.remainder, np.remainder, "real", "nonzero"),
    ("mod", fnp.mod, np.mod, "real", "nonzero"),
    ("fmod", fnp.fmod, np.fmod, "real", "nonzero"),
    ("copysign", fnp.copysign, np.copysign, "nonzero", "nonzero"),
    ("hypot", fnp.hypot, np.hypot, "nonzero", "real"),
    ("arctan2", fnp.arctan2, np.arctan2, "nonzero", "nonzero"),
    ("atan2", fnp.atan2, np.atan2, "real", "nonzero"),
    ("logaddexp", fnp.logaddexp, np.logaddexp, "real", "real"),
    ("logaddexp2", fnp.logaddexp2, np.logaddexp2, "real", "real"),
    ("heaviside", fnp.heaviside, np.heaviside, "nonzero", "real"),
]

TIES = {"maximum", "minimum", "fmax", "fmin"}  # the derivative jumps where x == y
QUOTIENTS = {"remainder", "mod", "fmod"}  # ... and where x / y is an integer

COMPARISONS = [
    ("equal", fnp.equal, np.equal), ("not_equal", fnp.not_equal, np.not_equal),
    ("less", fnp.less, np.less), ("less_equal", fnp.less_equal, np.less_equal),
    ("greater", fnp.greater, np.greater), ("greater_equal", fnp.greater_equal, np.greater_equal),
]


@pytest.mark.parametrize("name, f, ref, domain", UNARY, ids=[u[0] for u in UNARY])
@given(shape=shapes, seed=seeds)
def test_unary(name, f, ref, domain, shape, seed):
    x = draw(shape, domain, seed)
    out = f(x)
    np.testing.assert_allclose(out, ref(x), rtol=1e-14)
    assert np.asarray(out).dtype == np.asarray(ref(x)).dtype
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("name, f, ref, dx, dy", BINARY, ids=[b[0] for b in BINARY])
@given(shapes=broadcast_pairs(), seed=seeds)
def test_binary_with_broadcasting(name, f, ref, dx, dy, shapes, seed):
    x, y = values(shapes[0], dx, seed), values(shapes[1], dy, seed + 1)
    if name in TIES:
        assume(np.min(np.abs(np.subtract(x, y))) > 1e-3)
    if name in QUOTIENTS:
        q = np.divide(x, y)
        assume(np.min(np.abs(q - np.round(q))) > 1e-2)
    out = f(x, y)
    np.testing.assert_allclose(out, ref(x, y), rtol=1e-14)
    assert np.asarray(out).dtype == np.asarray(ref(x, y)).dtype
    check_grads(f, (x, y), order=2)


@pytest.mark.parametrize("name, f, ref", COMPARISONS, ids=[c[0] for c in COMPARISONS])
@given(shapes=broadcast_pairs(), seed=seeds)
def test_comparisons_are_boolean_and_carry_no_derivative(name, f, ref, shapes, seed):
    x, y = values(shapes[0], "real", seed), values(shapes[1], "real", seed + 1)
    y = np.where(np.random.default_rng(seed).uniform(size=y.shape) < 0.3, 0.5, y)
    out = f(x, y)
    np.testing.assert_array_equal(out, ref(x, y))
    assert np.asarray(out).dtype == np.bool_
    # Under differentiation the boolean result is a plain value:
    (_, t_out) = fgrad.jvp(lambda a: f(a, y), (x,), (np.ones_like(x),))
    assert not np.any(t_out)


@given(shapes=broadcast_pairs(3), seed=seeds)
def test_where_selects_and_differentiates_the_selected_branch(shapes, seed):
    c = np.random.default_rng(seed).uniform(size=shapes[0]) < 0.5
    x, y = values(shapes[1], "real", seed), values(shapes[2], "real", seed + 1)
    np.testing.assert_array_equal(fnp.where(c, x, y), np.where(c, x, y))
    check_grads(lambda x, y: fnp.where(c, x * x, fnp.sin(y)), (x, y), order=2)


def test_where_ignores_an_infinite_tangent_in_the_unselected_branch():
    x = np.array([0.0, 1.0])
    _, t = fgrad.jvp(lambda x: fnp.where(x > 0, fnp.log(x), 0.0), (x,), (np.ones(2),))
    np.testing.assert_array_equal(t, [0.0, 1.0])


@given(shape=shapes, seed=seeds)
def test_stop_gradient_is_identity_with_zero_derivative(shape, seed):
    x = values(shape, "real", seed)
    np.testing.assert_array_equal(fgrad.stop_gradient(x), x)
    _, t = fgrad.jvp(fgrad.stop_gradient, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t, np.zeros_like(x))
    np.testing.assert_array_equal(
        fgrad.grad(lambda x: fnp.sum(fgrad.stop_gradient(x) * x))(x), x
    )


@pytest.mark.parametrize("src, dst", [(np.float32, np.float64), (np.float64, np.float32)])
@given(shape=shapes, seed=seeds)
def test_astype_between_floats_keeps_the_derivative(src, dst, shape, seed):
    x = values(shape, "real", seed, dtype=src)
    out = fnp.astype(x, dst)
    assert np.asarray(out).dtype == dst
    # values pass through float32 either way: use float32's step and tolerance
    check_grads(lambda x: fnp.astype(x, dst) * 2.0, (x,), order=2, eps=3e-3, atol=2e-2, rtol=2e-2)
    g = fgrad.grad(lambda x: fnp.sum(fnp.astype(x, dst)))(x)
    assert g.dtype == src  # the cotangent returns in the input's dtype


def test_astype_to_integer_has_no_derivative():
    x = np.array([1.5, -2.5])
    assert fgrad.grad(lambda x: fnp.sum(fnp.astype(x, np.int64) * x))(x).tolist() == [1.0, -2.0]


def test_power_derivative_at_zero_base_and_zero_exponent():
    # d/dx x**y at x = 0, y = 0 is 0 (not nan); d/dy at x = 0 (y > 0) is 0.
    dx, dy = fgrad.grad(lambda x, y: fnp.power(x, y), argnums=(0, 1))(0.0, 0.0)
    assert (dx, dy) == (0.0, 0.0)
    assert fgrad.grad(lambda y: fnp.power(0.0, y))(2.0) == 0.0


def test_maximum_and_abs_at_ties_follow_jax():
    g = fgrad.grad(lambda x, y: fnp.maximum(x, y), argnums=(0, 1))(1.0, 1.0)
    assert g == (0.5, 0.5)
    assert fgrad.grad(fnp.abs)(0.0) == 0.0
    assert fgrad.grad(lambda x: fnp.max(x))(np.array([2.0, 2.0, 1.0])).tolist() == [0.5, 0.5, 0.0]


# --- functions without a derivative: rounding, integer division -----------------

PIECEWISE_CONSTANT = [
    ("floor", fnp.floor, np.floor), ("ceil", fnp.ceil, np.ceil), ("rint", fnp.rint, np.rint),
    ("trunc", fnp.trunc, np.trunc), ("fix", fnp.fix, np.fix), ("round", fnp.round, np.round),
    ("around_2", lambda x: fnp.around(x, 2), lambda x: np.around(x, 2)),
    ("round_neg_1", lambda x: fnp.round(x, decimals=-1), lambda x: np.round(x, decimals=-1)),
    ("floor_divide", lambda x: fnp.floor_divide(x, 0.7), lambda x: np.floor_divide(x, 0.7)),
]


@pytest.mark.parametrize("name, f, ref", PIECEWISE_CONSTANT, ids=[p[0] for p in PIECEWISE_CONSTANT])
@given(shape=shapes, seed=seeds)
def test_piecewise_constant_functions_have_zero_derivative(name, f, ref, shape, seed):
    x = values(shape, "real", seed) * 50
    out = f(x)
    np.testing.assert_array_equal(out, ref(x))
    assert np.asarray(out).dtype == np.asarray(ref(x)).dtype
    traced, aval = staged_with_aval(f, x)
    np.testing.assert_array_equal(traced, ref(x))
    assert aval.dtype == np.asarray(ref(x)).dtype and aval.shape == np.shape(ref(x))
    (_, t) = fgrad.jvp(f, (x,), (np.ones_like(x),))
    assert not np.any(t)
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(f(x) * x))(x), ref(x))


@pytest.mark.parametrize("x", [np.arange(-7, 8), np.arange(-3, 4, dtype=np.int8), np.float32([-2.5, 0.5, 1.5])])
def test_rounding_keeps_numpy_dtypes(x):
    for f, ref in [(fnp.floor, np.floor), (fnp.ceil, np.ceil), (fnp.trunc, np.trunc), (fnp.rint, np.rint),
                   (fnp.fix, np.fix), (lambda a: fnp.round(a, -1), lambda a: np.round(a, -1)),
                   (lambda a: fnp.floor_divide(a, 2), lambda a: np.floor_divide(a, 2)),
                   (lambda a: fnp.remainder(a, 3), lambda a: np.remainder(a, 3))]:
        traced, aval = staged_with_aval(f, x)
        np.testing.assert_array_equal(traced, ref(x))
        assert aval.dtype == ref(x).dtype == np.asarray(traced).dtype


def test_round_with_decimals():
    x = np.array([1.2345, -2.5, 0.5, 1.5, 1234.5678])
    for decimals in (0, 1, 2, -1, -2):
        np.testing.assert_array_equal(fnp.round(x, decimals), np.round(x, decimals))
        np.testing.assert_array_equal(staged(lambda a, d=decimals: fnp.round(a, d), x), np.round(x, decimals))
    assert "round[decimals=2]" in str(fgrad.make_jaxpr(lambda a: fnp.around(a, decimals=2))(x))
    assert fnp.round(np.float32(2.567), 2).dtype == np.float32
    assert fgrad.grad(lambda a: fnp.sum(fnp.round(a, 1)))(x).tolist() == [0.0] * 5
    with pytest.raises(TypeError):
        fgrad.grad(lambda a: fnp.sum(fnp.round(a, 1.5)))(x)


# --- boolean-valued functions -----------------------------------------------------

SPECIAL_VALUES = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])

PREDICATES = [
    ("isfinite", fnp.isfinite, np.isfinite), ("isnan", fnp.isnan, np.isnan),
    ("isinf", fnp.isinf, np.isinf), ("isposinf", fnp.isposinf, np.isposinf),
    ("isneginf", fnp.isneginf, np.isneginf), ("signbit", fnp.signbit, np.signbit),
    ("logical_not", fnp.logical_not, np.logical_not),
]

LOGICAL = [
    ("logical_and", fnp.logical_and, np.logical_and), ("logical_or", fnp.logical_or, np.logical_or),
    ("logical_xor", fnp.logical_xor, np.logical_xor),
]

BITWISE = [
    ("bitwise_and", fnp.bitwise_and, np.bitwise_and), ("bitwise_or", fnp.bitwise_or, np.bitwise_or),
    ("bitwise_xor", fnp.bitwise_xor, np.bitwise_xor),
]


@pytest.mark.parametrize("name, f, ref", PREDICATES, ids=[p[0] for p in PREDICATES])
@given(shape=shapes, seed=seeds)
def test_predicates_are_boolean_and_carry_no_derivative(name, f, ref, shape, seed):
    rng = np.random.default_rng(seed)
    x = np.where(rng.uniform(size=shape) < 0.5, rng.choice(SPECIAL_VALUES, size=shape), values(shape, "real", seed))
    out = f(x)
    np.testing.assert_array_equal(out, ref(x))
    assert np.asarray(out).dtype == np.bool_
    traced, aval = staged_with_aval(f, x)
    np.testing.assert_array_equal(traced, ref(x))
    assert aval.dtype == np.bool_ and aval.shape == np.shape(x)
    (_, t) = fgrad.jvp(lambda a: f(a) * a, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t, np.asarray(ref(x), float))


@pytest.mark.parametrize("name, f, ref", LOGICAL + BITWISE, ids=[p[0] for p in LOGICAL + BITWISE])
@given(shapes=broadcast_pairs(), seed=seeds)
def test_logical_and_bitwise_functions(name, f, ref, shapes, seed):
    x, y = values(shapes[0], "real", seed), values(shapes[1], "real", seed + 1)
    cases = [(x > 0, y > 0), (x > 0, True)]
    if name.startswith("logical"):
        cases.append((np.where(x > 0, x, 0.0), y))  # NumPy's truthiness of numbers
    else:
        cases.append((np.floor(x * 10).astype(np.int64), np.int64(6)))
    for a, b in cases:
        out, aval = staged_with_aval(f, a, b)
        np.testing.assert_array_equal(out, ref(a, b))
        assert aval.dtype == np.asarray(ref(a, b)).dtype
    (_, t) = fgrad.jvp(lambda a: f(a > 0, y > 0) * a, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t, np.broadcast_to(ref(x > 0, y > 0), np.shape(t)))


def test_invert_on_booleans_and_integers_and_the_error_on_floats():
    mask, ints = np.array([True, False]), np.array([0, 5, -3])
    for f in (fnp.invert, fnp.bitwise_not, fnp.bitwise_invert):
        np.testing.assert_array_equal(staged(f, mask), ~mask)
        np.testing.assert_array_equal(staged(f, ints), ~ints)
    with pytest.raises(TypeError, match="ufunc 'invert' not supported"):
        fgrad.make_jaxpr(fnp.invert)(np.ones(2))


# --- dtypes under a transform -----------------------------------------------------

DTYPE_FUNCTIONS = {
    "reciprocal": fnp.reciprocal, "cbrt": fnp.cbrt, "fabs": fnp.fabs, "exp2": fnp.exp2, "log1p": fnp.log1p,
    "arctanh": fnp.arctanh, "deg2rad": fnp.deg2rad, "sinc": fnp.sinc, "nan_to_num": fnp.nan_to_num,
    "float_power": lambda x: fnp.float_power(x, 2), "hypot": lambda x: fnp.hypot(x, 0.5),
    "remainder": lambda x: fnp.remainder(x, 0.7), "fmod": lambda x: fnp.fmod(x, 2),
    "copysign": lambda x: fnp.copysign(x, -1), "logaddexp": lambda x: fnp.logaddexp(x, np.float32(0.5)),
    "heaviside": lambda x: fnp.heaviside(x, 0.5), "arctan2": lambda x: fnp.arctan2(x, 2.0),
    "clip": lambda x: fnp.clip(x, 0, 2), "fmax": lambda x: fnp.fmax(x, 1.0),
}


@pytest.mark.parametrize("name", sorted(DTYPE_FUNCTIONS))
@pytest.mark.parametrize("x", [np.float32([0.5, 1.0]), np.arange(3), np.float64(0.25), np.int8([1, 2])],
                         ids=["f32", "i64", "f64_scalar", "i8"])
def test_dtypes_and_values_under_a_transform_match_numpy(name, x):
    f = DTYPE_FUNCTIONS[name]
    with np.errstate(all="ignore"):
        expected = np.asarray(f(x))
        traced, aval = staged_with_aval(f, x)
    assert aval.dtype == expected.dtype, f"{name}: staged {aval.dtype}, NumPy gives {expected.dtype}"
    assert aval.shape == expected.shape
    np.testing.assert_allclose(traced, expected, rtol=1e-6 if expected.dtype == np.float32 else 1e-14)


# --- special points and special cases ------------------------------------------------


def test_derivatives_at_special_points_follow_jax():
    grad = fgrad.grad
    assert grad(fnp.sqrt)(0.0) == np.inf
    assert grad(fnp.sign)(0.0) == 0.0 and grad(fnp.sign)(-2.0) == 0.0
    assert grad(fnp.abs)(0.0) == 0.0 and grad(fnp.fabs)(0.0) == 0.0
    assert grad(fnp.cbrt)(0.0) == np.inf
    assert grad(lambda x, y: fnp.minimum(x, y), argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert grad(lambda x, y: fnp.fmax(x, y), argnums=(0, 1))(1.0, 1.0) == (0.0, 1.0)  # see below
    assert grad(lambda x, y: fnp.fmin(x, y), argnums=(0, 1))(np.nan, 1.0) == (0.0, 1.0)
    # copysign: like abs at x = 0, and no derivative in the sign source
    assert grad(lambda x, y: fnp.copysign(x, y), argnums=(0, 1))(0.0, -1.0) == (0.0, 0.0)
    assert grad(lambda x: fnp.copysign(x, -1.0))(2.0) == -1.0
    # hypot at the origin: 0 (not nan)
    assert grad(lambda x, y: fnp.hypot(x, y), argnums=(0, 1))(0.0, 0.0) == (0.0, 0.0)
    # heaviside: the value at 0 comes from h0
    assert grad(lambda x, h: fnp.heaviside(x, h), argnums=(0, 1))(0.0, 0.3) == (0.0, 1.0)
    assert grad(lambda h: fnp.heaviside(1.0, h))(0.3) == 0.0
    # float_power at a zero base, as power
    assert grad(lambda x, y: fnp.float_power(x, y), argnums=(0, 1))(0.0, 0.0) == (0.0, 0.0)


# JAX's jnp.fmax(x, y) = where((x > y) | isnan(y), x, y), and jnp.fmin with x < y: the derivative
# is the selected argument's, the second at a tie (unlike maximum's, shared). Rows: x, y, fmax, fmin.
FMAX_FMIN_SELECTED = [
    (1.0, 1.0, (0.0, 1.0), (0.0, 1.0)), (2.0, 1.0, (1.0, 0.0), (0.0, 1.0)), (1.0, 2.0, (0.0, 1.0), (1.0, 0.0)),
    (np.nan, 1.0, (0.0, 1.0), (0.0, 1.0)), (1.0, np.nan, (1.0, 0.0), (1.0, 0.0)),
    (np.nan, np.nan, (1.0, 0.0), (1.0, 0.0)), (-0.0, 0.0, (0.0, 1.0), (0.0, 1.0)),
]


@pytest.mark.parametrize("x, y, d_fmax, d_fmin", FMAX_FMIN_SELECTED)
def test_fmax_and_fmin_derivatives_follow_jax(x, y, d_fmax, d_fmin):
    for f, expected in [(fnp.fmax, d_fmax), (fnp.fmin, d_fmin)]:
        assert fgrad.grad(f, argnums=(0, 1))(x, y) == expected
        t = fgrad.jvp(f, (np.array([x]), np.array([y])), (np.array([3.0]), np.array([5.0])))[1]
        np.testing.assert_array_equal(t, [3.0 * expected[0] + 5.0 * expected[1]])
    assert fgrad.grad(lambda x, y: fnp.maximum(x, y), argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)


TIE_FUNCTIONS = {
    "maximum": fnp.maximum, "minimum": fnp.minimum, "fmax": fnp.fmax, "fmin": fnp.fmin,
    "logaddexp": fnp.logaddexp, "logaddexp2": fnp.logaddexp2, "clip": lambda x, y: fnp.clip(x, y, 1.5),
}


@pytest.mark.parametrize("name", sorted(TIE_FUNCTIONS))
def test_float32_derivatives_stay_float32(name):
    # The selection factors are built in the result's dtype: no float64 equation.
    x, y = np.float32([0.5, 2.0, 1.0, -np.inf]), np.float32([1.0, 1.0, 1.0, -np.inf])
    f = TIE_FUNCTIONS[name]
    grads = fgrad.grad(lambda a, b: fnp.sum(f(a, b)), argnums=(0, 1))
    with np.errstate(all="ignore"):
        text = str(fgrad.make_jaxpr(grads)(x, y))
        assert "f64" not in text, text
        assert all(g.dtype == np.float32 for g in grads(x, y))


def test_remainder_and_fmod_derivatives_in_the_divisor():
    x, y = np.array([5.5, -5.5, 5.5, -5.5]), np.array([2.0, 2.0, -2.0, -2.0])
    g = fgrad.grad(lambda y: fnp.sum(fnp.remainder(x, y)))(y)
    np.testing.assert_array_equal(g, -np.floor(x / y))
    g = fgrad.grad(lambda y: fnp.sum(fnp.fmod(x, y)))(y)
    np.testing.assert_array_equal(g, -np.trunc(x / y))
    q, r = fnp.divmod(x, y)
    np.testing.assert_array_equal(q, np.floor_divide(x, y))
    np.testing.assert_array_equal(r, np.remainder(x, y))
    gq, gr = fgrad.jacfwd(lambda x: fnp.divmod(x, 2.0))(1.5)
    assert (gq, gr) == (0.0, 1.0)


@given(shape=shapes, seed=seeds)
def test_sinc_is_smooth_through_zero(shape, seed):
    x = values(shape, "unit", seed) * 0.2  # |x| < 0.16: across the series/closed-form switch at 0.1
    np.testing.assert_allclose(fnp.sinc(x), np.sinc(x), rtol=1e-14)
    check_grads(fnp.sinc, (x,), order=2)


def test_sinc_derivatives_at_zero():
    assert fgrad.grad(fnp.sinc)(0.0) == 0.0
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(fnp.sinc))(0.0), -np.pi**2 / 3, rtol=1e-14)
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(fgrad.grad(fgrad.grad(fnp.sinc))))(0.0), np.pi**4 / 5,
                               rtol=1e-12)
    check_grads(fnp.sinc, (0.0,), order=2)
    check_grads(fnp.sinc, (np.array([0.0, 0.1, -0.1, 1.0, 2.5]),), order=2)
    # on both sides of the switch the derivative agrees with the closed form
    for x in (0.0999, 0.1001, 0.5):
        closed = (np.cos(np.pi * x) - np.sinc(x)) / x
        np.testing.assert_allclose(fgrad.grad(fnp.sinc)(x), closed, rtol=1e-10)


@pytest.mark.parametrize("f, base", [(fnp.logaddexp, np.e), (fnp.logaddexp2, 2.0)])
def test_logaddexp_is_stable_for_large_and_infinite_inputs(f, base):
    grad = fgrad.grad(f, argnums=(0, 1))
    assert grad(1000.0, 1000.0) == pytest.approx((0.5, 0.5))
    assert grad(1000.0, -1000.0) == (1.0, 0.0)
    assert grad(-1000.0, -1000.0) == pytest.approx((0.5, 0.5))
    assert grad(800.0, 799.0) == pytest.approx((base / (base + 1), 1 / (base + 1)))
    assert grad(-np.inf, 0.0) == (0.0, 1.0)
    assert grad(-np.inf, -np.inf) == (0.5, 0.5)
    assert grad(np.inf, 1.0) == (1.0, 0.0)
    check_grads(f, (np.array([700.0, -700.0, 3.0]), np.array([700.5, -701.0, -2.0])), order=2)
    x = np.array([1e4, -1e4])
    np.testing.assert_allclose(fgrad.jacfwd(lambda x: f(x, x))(x), np.eye(2))


def test_nan_to_num_with_infinities_and_nans():
    x = np.array([1.5, np.inf, -np.inf, np.nan, -2.0])
    np.testing.assert_array_equal(staged(fnp.nan_to_num, x), np.nan_to_num(x))
    kwargs = dict(nan=-1.0, posinf=1e3, neginf=-1e3)
    np.testing.assert_array_equal(staged(lambda a: fnp.nan_to_num(a, **kwargs), x), np.nan_to_num(x, **kwargs))
    x32 = x.astype(np.float32)
    out, aval = staged_with_aval(fnp.nan_to_num, x32)
    assert aval.dtype == np.float32
    np.testing.assert_array_equal(out, np.nan_to_num(x32))
    np.testing.assert_array_equal(fgrad.grad(lambda a: fnp.sum(fnp.nan_to_num(a) * 2.0))(x), [2, 0, 0, 0, 2])
    (_, t) = fgrad.jvp(fnp.nan_to_num, (x,), (np.full(5, 3.0),))
    np.testing.assert_array_equal(t, [3, 0, 0, 0, 3])
    ints = np.arange(3)
    assert staged(fnp.nan_to_num, ints).dtype == ints.dtype
    # an inf or nan tangent where the input is replaced does not leak into the result
    (_, t) = fgrad.jvp(fnp.nan_to_num, (x,), (np.array([1.0, np.inf, np.nan, np.inf, 1.0]),))
    np.testing.assert_array_equal(t, [1, 0, 0, 0, 1])
    with pytest.raises(TypeError, match="takes a number as posinf="):
        fgrad.make_jaxpr(lambda a: fnp.nan_to_num(a, posinf=np.ones(5)))(x)


def test_nan_to_num_of_complex_numbers_replaces_each_part_on_its_own():
    z = np.array([complex(np.inf, 1), complex(2, np.nan), complex(-np.inf, -np.inf), 1 - 2j])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(staged(fnp.nan_to_num, z), np.nan_to_num(z))
    t = np.array([1 + 1j, 2 + 3j, 4 + 5j, 6 + 7j])
    # the tangent's part is kept where that part of z is finite
    expected = np.array([1j, 2, 0, 6 + 7j])
    np.testing.assert_array_equal(fgrad.jvp(fnp.nan_to_num, (z,), (t,))[1], expected)
    np.testing.assert_array_equal(fgrad.vjp(fnp.nan_to_num, z)[1](t)[0], expected)  # a mask is its own transpose
    np.testing.assert_array_equal(fgrad.vmap(lambda z, t: fgrad.jvp(fnp.nan_to_num, (z,), (t,))[1])(z, t), expected)
    finite = np.array([0.5 - 1j, 2 + 0.3j])
    check_grads(fnp.nan_to_num, (finite,), order=2)
    check_grads(fnp.nan_to_num, (finite.astype(np.complex64),), order=1)


@given(shape=shapes, seed=seeds)
def test_ldexp_is_numpy_s_to_the_extremes_and_its_derivative_is_two_to_the_exponent(shape, seed):
    x = values(shape, "real", seed)
    e = np.floor(values(shape, "real", seed + 1) * 4).astype(int)
    check_grads(lambda x: fnp.ldexp(x, e), (x,), order=2)
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(fnp.ldexp(x, e)))(x), np.ldexp(np.ones(shape), e))
    extremes = np.array([0.0, 1e-300, -3.5, np.inf])
    powers = np.array([5000, 1100, -1080, 3])
    want = np.ldexp(extremes, powers)
    np.testing.assert_array_equal(fgrad.jit(fnp.ldexp)(extremes, powers), want)
    np.testing.assert_array_equal(staged(fnp.ldexp, extremes, powers), want)
    assert fgrad.jit(fnp.ldexp)(np.float32(1.5), 3).dtype == np.float32
