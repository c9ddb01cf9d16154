"""Reverse mode: linearize and transpose, the linear jaxpr, residuals."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.transforms.reverse import linearize_flat


def test_linearize_evaluates_once_and_applies_the_linear_map_many_times():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(x) * 3.0

    x = np.array([0.2, 0.4])
    y, f_jvp = fgrad.linearize(f, x)
    for t in (np.ones(2), np.array([2.0, -1.0])):
        np.testing.assert_allclose(f_jvp(t), 3 * np.cos(x) * t)
    assert len(calls) == 1
    np.testing.assert_allclose(y, 3 * np.sin(x))


def test_the_linear_jaxpr_holds_tangent_equations_and_residuals_only():
    x = np.array([0.2, 0.4])
    _, linear, _ = linearize_flat(lambda x: [fnp.sum(fnp.exp(x) * 2.0)], [x], "test")
    text = str(linear.jaxpr)
    assert "exp" not in text  # the primal work was done, not recorded
    assert [e.primitive.name for e in linear.jaxpr.eqns] == ["mul", "mul", "reduce_sum"]
    np.testing.assert_allclose(linear.jaxpr.consts[0], np.exp(x))  # the residual


def test_residuals_are_read_only_views():
    x = np.array([0.2, 0.4])
    _, linear, _ = linearize_flat(lambda x: [fnp.exp(x)], [x], "test")
    (residual,) = linear.jaxpr.consts
    assert not residual.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        residual[0] = 1.0


def test_closed_over_arrays_stay_writeable_for_their_owner():
    w = np.array([1.0, 2.0])
    _, vjp_fn = fgrad.vjp(lambda x: fnp.sum(x * w), np.ones(2))
    w[0] = 5.0  # the user's array is not frozen
    assert vjp_fn(1.0)[0].tolist() == [5.0, 2.0]  # (and, like NumPy views, it is shared)


def test_gradients_are_writeable_arrays_owned_by_the_caller():
    g = fgrad.grad(fnp.sum)(np.ones(3))  # the cotangent of sum is a broadcast internally
    assert g.flags.writeable
    g[0] = 2.0


def test_vjp_with_several_inputs_and_outputs():
    def f(x, y):
        return {"a": x * y, "b": fnp.sum(x)}

    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out, vjp_fn = fgrad.vjp(f, x, y)
    gx, gy = vjp_fn({"a": np.array([1.0, 10.0]), "b": 2.0})
    np.testing.assert_array_equal(gx, [3.0 + 2.0, 40.0 + 2.0])
    np.testing.assert_array_equal(gy, [1.0, 20.0])


def test_an_input_the_output_ignores_gets_zeros():
    g = fgrad.grad(lambda x, y: fnp.sum(x**2), argnums=(0, 1))(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(g[1], np.zeros(3))


def test_integer_arguments_outside_argnums_are_constants():
    f = lambda x, n: fnp.sum(x**2 * n)  # noqa: E731
    np.testing.assert_array_equal(fgrad.grad(f)(np.ones(2), np.arange(1, 3)), [2.0, 4.0])


def test_float32_stays_float32():
    x = np.ones(3, np.float32)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * 2.0))(x)
    assert g.dtype == np.float32
    assert fgrad.grad(lambda x: fnp.sum(x * np.ones(3)))(x).dtype == np.float32  # f64 product, f32 gradient


def test_grad_of_grad_of_a_vector_function():
    x = np.array([0.3, -0.2])
    hvp = fgrad.grad(lambda x: fnp.sum(fgrad.grad(lambda y: fnp.sum(fnp.sin(y) ** 3))(x)))(x)
    expected = 6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3
    np.testing.assert_allclose(hvp, expected)
