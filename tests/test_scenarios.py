"""The tutorial scenarios, end to end, with the values the tutorials print."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def test_a_function_of_two_variables():
    def f(x1, x2):
        return fnp.log(x1) + x1 * x2 - fnp.exp(x2)

    assert f(2.0, 5.0) == pytest.approx(-137.72001, abs=1e-5)
    d1, d2 = fgrad.grad(f, argnums=(0, 1))(2.0, 5.0)
    assert d1 == pytest.approx(5.5)
    assert d2 == pytest.approx(-146.41316, abs=1e-5)
    assert d2 == pytest.approx(2.0 - np.exp(5.0))
    # the jaxprs of f and of its gradient
    assert str(fgrad.make_jaxpr(f)(2.0, 5.0)).splitlines()[1:6] == [
        "    c:f64[] = log a",
        "    d:f64[] = mul a b",
        "    e:f64[] = add c d",
        "    f:f64[] = exp b",
        "    g:f64[] = sub e f",
    ]
    grad_jaxpr = fgrad.make_jaxpr(fgrad.grad(f, argnums=(0, 1)))(2.0, 5.0)
    primitives = [e.primitive.name for e in grad_jaxpr.eqns]
    assert primitives[:6] == ["log", "div", "mul", "add", "exp", "sub"]  # forward
    assert primitives.count("mul") > 1 and len(grad_jaxpr.jaxpr.outvars) == 2  # backward


def poly(x):
    return x**2 - 2 * x + 1


def test_b_derivative_at_a_point_and_elementwise():
    assert fgrad.grad(poly)(0.0) == -2.0
    x = np.array([[0.0, 0.0], [1.0, 2.0]])
    y, f_vjp = fgrad.vjp(poly, x)
    (dx,) = f_vjp(np.ones_like(y))
    np.testing.assert_array_equal(dx, [[-2.0, -2.0], [0.0, 2.0]])


@pytest.mark.parametrize("x", [-3.0, 0.0, 0.5, 7.0])
def test_c_second_and_third_derivatives(x):
    assert fgrad.grad(fgrad.grad(poly))(x) == 2.0
    assert fgrad.grad(fgrad.grad(fgrad.grad(poly)))(x) == 0.0


def test_d_jacobian_from_vjp_rows_and_sum_over_outputs():
    def Y(x):
        return fnp.stack([x[0] * x[1], x[0] + x[1]])

    x = np.array([1.0, 2.0])
    _, Y_vjp = fgrad.vjp(Y, x)
    jacobian = np.stack([Y_vjp(row)[0] for row in np.eye(2)])
    np.testing.assert_array_equal(jacobian, [[2.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(Y(x)))(x), [3.0, 2.0])


def test_e_gradient_descent_twenty_epochs():
    x = 0.0
    for _ in range(20):
        x = x - 0.1 * fgrad.grad(poly)(x)
    assert x == pytest.approx(0.98847, abs=1e-5)
    assert x == pytest.approx(1 - 0.8**20)


def test_f_gradients_of_vector_functions():
    x = np.arange(4.0)
    np.testing.assert_array_equal(fgrad.grad(lambda x: 2 * x @ x)(x), 4 * x)
    np.testing.assert_array_equal(fgrad.grad(lambda x: 2 * fnp.dot(x, x))(x), 4 * x)
    np.testing.assert_array_equal(fgrad.grad(fnp.sum)(x), np.ones(4))
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(x * x))(x), 2 * x)


def test_g_detach_with_stop_gradient():
    x = np.arange(4.0)
    z_grad = fgrad.grad(lambda x: fnp.sum(fgrad.stop_gradient(x * x) * x))(x)
    np.testing.assert_array_equal(z_grad, x * x)
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(x * x))(x), 2 * x)


def control_flow(a):
    b = a * 2
    while fnp.linalg.norm(b) < 1000:
        b = b * 2
    c = b if fnp.sum(b) > 0 else 100 * b
    return c


@pytest.mark.parametrize("a", [0.3, 1e-3, 2.5, -0.7, -40.0])
def test_h_control_flow_scalar(a):
    assert fgrad.grad(control_flow)(a) == pytest.approx(control_flow(a) / a)


@pytest.mark.parametrize("a", [[0.2, -0.4, 0.1], [-1.0, 0.5, -2.0]])
def test_h_control_flow_vector_through_vjp(a):
    a = np.array(a)
    c, f_vjp = fgrad.vjp(control_flow, a)
    np.testing.assert_allclose(f_vjp(np.ones_like(c))[0], c / a)


def test_i_vjp_fn_twice_and_no_accumulation():
    x = np.array([1.0, 2.0, 3.0])
    f = lambda x: fnp.sum(x**3)  # noqa: E731
    _, f_vjp = fgrad.vjp(f, x)
    first, second = f_vjp(1.0)[0], f_vjp(1.0)[0]
    np.testing.assert_array_equal(first, 3 * x**2)
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(fgrad.grad(f)(x), fgrad.grad(f)(x))
    np.testing.assert_array_equal(fgrad.grad(f)(x), 3 * x**2)


def test_j_sine_derivative_without_writing_cos():
    x = np.linspace(-2 * np.pi, 2 * np.pi, 101)
    y, sin_vjp = fgrad.vjp(fnp.sin, x)
    np.testing.assert_allclose(sin_vjp(np.ones_like(x))[0], np.cos(x), atol=1e-15)
    np.testing.assert_allclose(y, np.sin(x))
