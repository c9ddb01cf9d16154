"""Forward mode: jvp on pytrees, zero tangents, nesting with reverse mode."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads


def test_jvp_is_the_directional_derivative():
    x, t = np.array([0.1, 0.7]), np.array([1.0, -2.0])
    y, y_dot = fgrad.jvp(lambda x: fnp.sin(x) * x, (x,), (t,))
    np.testing.assert_allclose(y, np.sin(x) * x)
    np.testing.assert_allclose(y_dot, (np.cos(x) * x + np.sin(x)) * t)


def test_jvp_on_pytrees_with_an_integer_leaf():
    def f(params, x):
        return {"out": params["w"] * x + params["b"], "n": params["n"] * 2}

    params = {"w": 2.0, "b": 1.0, "n": np.int64(3)}
    tangents = {"w": 1.0, "b": 0.0, "n": np.int64(0)}
    out, t = fgrad.jvp(f, (params, 3.0), (tangents, 0.5))
    assert out == {"out": 7.0, "n": 6}
    assert t["out"] == 3.0 + 2.0 * 0.5 and t["n"] == 0


def test_outputs_that_do_not_depend_on_the_input_get_zero_tangents():
    y, t = fgrad.jvp(lambda x: (x * 0 + 1.0, np.ones(2)), (1.0,), (1.0,))
    assert t[0] == 0.0
    np.testing.assert_array_equal(t[1], np.zeros(2))


def test_jvp_has_aux():
    y, t, aux = fgrad.jvp(lambda x: (x**2, {"x": x}), (3.0,), (1.0,), has_aux=True)
    assert (y, t, aux) == (9.0, 6.0, {"x": 3.0})
    assert type(aux["x"]) is np.float64  # aux leaves fgrad as values, not tracers


def test_jvp_of_grad_and_grad_of_jvp_agree_with_the_second_derivative():
    f = lambda x: fnp.sin(x) * x**2  # noqa: E731
    second = lambda x: -np.sin(x) * x**2 + 4 * x * np.cos(x) + 2 * np.sin(x)  # noqa: E731
    x = 0.7
    assert fgrad.jvp(fgrad.grad(f), (x,), (1.0,))[1] == pytest.approx(second(x))
    assert fgrad.grad(lambda x: fgrad.jvp(f, (x,), (1.0,))[1])(x) == pytest.approx(second(x))
    assert fgrad.grad(fgrad.grad(f))(x) == pytest.approx(second(x))


def test_third_order_mixed_nesting():
    f = lambda x: fnp.exp(2 * x)  # noqa: E731
    d3 = fgrad.jvp(lambda x: fgrad.grad(lambda y: fgrad.jvp(f, (y,), (1.0,))[1])(x), (0.3,), (1.0,))[1]
    assert d3 == pytest.approx(8 * np.exp(0.6))


def test_jvp_argument_errors():
    with pytest.raises(TypeError, match="tuples or lists"):
        fgrad.jvp(fnp.sin, 1.0, 1.0)
    with pytest.raises(TypeError, match="structure"):
        fgrad.jvp(lambda a, b: a * b, (1.0, 2.0), (1.0,))
    with pytest.raises(ValueError, match=r"the tangent has shape \(3,\), but the corresponding primal input has shape \(2,\)"):
        fgrad.jvp(fnp.sin, (np.zeros(2),), (np.zeros(3),))
    with pytest.raises(TypeError, match="dtype float32.*dtype float64"):
        fgrad.jvp(fnp.sin, (np.zeros(2),), (np.zeros(2, np.float32),))


def test_forward_and_reverse_agree_on_a_composite():
    def f(x, y):
        h = fnp.tanh(x @ y + 1.0)
        return fnp.sum(h * h, axis=0) / fnp.max(fnp.abs(y) + 1.0)

    rng = np.random.default_rng(0)
    check_grads(f, (rng.normal(size=(3, 4)), rng.normal(size=(4, 2))), order=2)
