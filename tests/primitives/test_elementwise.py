"""Elementwise primitives: values equal NumPy's, and every derivative rule
checked against finite differences in forward and reverse mode to second
order, on 0-d, n-d and broadcast shapes."""

import numpy as np
import pytest
from hypothesis import assume, given

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.strategies import broadcast_pairs, seeds, shapes, values

# The primitives whose rules this module checks (tests/primitives/test_registry.py).
PRIMITIVES = {
    "neg", "sin", "cos", "exp", "log", "tanh", "sqrt", "square", "abs", "sign", "stop_gradient",
    "add", "sub", "mul", "div", "pow", "max", "min", "eq", "ne", "lt", "le", "gt", "ge", "where",
    "integer_pow", "convert_element_type",
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
}


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
]

BINARY = [
    ("add", fnp.add, np.add, "real", "real"),
    ("subtract", fnp.subtract, np.subtract, "real", "real"),
    ("multiply", fnp.multiply, np.multiply, "real", "real"),
    ("divide", fnp.divide, np.divide, "real", "nonzero"),
    ("power", fnp.power, np.power, "positive", "real"),
    ("maximum", fnp.maximum, np.maximum, "real", "real"),
    ("minimum", fnp.minimum, np.minimum, "real", "real"),
]

COMPARISONS = [
    ("equal", fnp.equal, np.equal), ("not_equal", fnp.not_equal, np.not_equal),
    ("less", fnp.less, np.less), ("less_equal", fnp.less_equal, np.less_equal),
    ("greater", fnp.greater, np.greater), ("greater_equal", fnp.greater_equal, np.greater_equal),
]


@pytest.mark.parametrize("name, f, ref, domain", UNARY, ids=[u[0] for u in UNARY])
@given(shape=shapes, seed=seeds)
def test_unary(name, f, ref, domain, shape, seed):
    x = values(shape, domain, seed)
    out = f(x)
    np.testing.assert_allclose(out, ref(x), rtol=1e-14)
    assert np.asarray(out).dtype == np.asarray(ref(x)).dtype
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("name, f, ref, dx, dy", BINARY, ids=[b[0] for b in BINARY])
@given(shapes=broadcast_pairs(), seed=seeds)
def test_binary_with_broadcasting(name, f, ref, dx, dy, shapes, seed):
    x, y = values(shapes[0], dx, seed), values(shapes[1], dy, seed + 1)
    if name in ("maximum", "minimum"):  # away from ties, where the derivative jumps
        assume(np.min(np.abs(np.subtract(x, y))) > 1e-3)
    np.testing.assert_allclose(f(x, y), ref(x, y), rtol=1e-14)
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
