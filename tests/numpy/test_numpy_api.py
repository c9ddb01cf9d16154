"""fgrad.numpy behaves as NumPy: types, dtype promotion, broadcasting, methods,
operators, creation functions and plain-NumPy calls on traced values."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def test_results_leave_as_numpy_types():
    assert type(fnp.exp(np.ones(2))) is np.ndarray
    assert type(fnp.exp(1.0)) is np.float64
    assert type(fnp.sum(np.ones(3))) is np.float64
    assert type(fnp.array([1.0, 2.0])) is np.ndarray


@pytest.mark.parametrize("x, y", [(np.ones(2, np.float32), 2.0), (np.ones(2, np.float32), 2),
                                  (np.arange(2), 1.5), (np.arange(2), np.arange(2)),
                                  (np.ones(2, np.float32), np.ones(2, np.float64)), (True, 1)])
def test_dtype_promotion_matches_numpy_under_tracing(x, y):
    for f, ref in [(fnp.add, np.add), (fnp.multiply, np.multiply), (fnp.divide, np.divide),
                   (fnp.power, np.power), (fnp.maximum, np.maximum)]:
        expected = ref(x, y)
        assert np.asarray(f(x, y)).dtype == expected.dtype
        traced = fgrad.make_jaxpr(lambda a, f=f: f(a, y))(x).out_avals[0]
        assert traced.dtype == expected.dtype and traced.shape == np.shape(expected)


def test_python_scalars_and_lists_are_accepted_where_numpy_accepts_them():
    assert fnp.add([1.0, 2.0], 1) .tolist() == [2.0, 3.0]
    g = fgrad.grad(lambda x: fnp.sum(fnp.multiply(x, [1.0, 2.0]) + [[1.0], [2.0]]))(np.ones(2))
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_operators_and_methods_on_tracers():
    def f(x):
        y = (-x + 1.0) * 2 / (x**2 + 1) - 3.0 ** fnp.abs(x) @ np.ones(2)
        checks = [x.T.shape == (2,), x.reshape(1, 2).shape == (1, 2), x.reshape((2, 1)).shape == (2, 1),
                  x.ravel().shape == (2,), x.astype(np.float32).dtype == np.float32,
                  (x < 0).dtype == bool, x.dot(np.ones(2)).shape == (), x.transpose().shape == (2,)]
        assert all(checks)
        return y.sum() + x.mean() + x.max() + x.min() + abs(x).sum() + (1 - x).sum() + (2 * x).sum()

    x = np.array([0.5, -1.5])
    expected = fgrad.grad(lambda x: f(x))(x)
    eps = 1e-6
    numeric = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(expected, numeric, rtol=1e-5)


def test_comparisons_under_grad_are_concrete_and_constants_come_from_stop_gradient():
    def f(x):
        if x > 0:  # Python control flow on the value
            c = fgrad.stop_gradient(x)  # float(x) itself would drop the derivative: it raises
            return x * float(c) + c.item()
        return -x

    assert fgrad.grad(f)(2.0) == 2.0  # float(c) and c.item() are constants: d/dx (2x + 2) = 2
    assert fgrad.grad(f)(-2.0) == -1.0


def test_plain_numpy_calls_on_tracers_use_fgrads_functions():
    x = np.array([0.3, 0.6])
    g = fgrad.grad(lambda x: np.sum(np.sin(x) ** 2 * np.exp(x)))(x)
    g_fnp = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2 * fnp.exp(x)))(x)
    np.testing.assert_allclose(g, g_fnp)
    assert fgrad.grad(lambda x: np.float64(2.0) * x)(1.0) == 2.0
    assert np.shape(fgrad.make_jaxpr(lambda x: np.reshape(x, (2, 1)))(x).out_avals[0].shape) == (2,)


def test_unsupported_numpy_functions_say_which_and_what_to_do():
    with pytest.raises(TypeError, match="numpy.fft.fft was called on a traced value.*fgrad.numpy"):
        fgrad.grad(lambda x: np.fft.fft(x).real.sum())(np.ones(2))
    with pytest.raises(TypeError, match="ufunc numpy.spacing was called on a traced value"):
        fgrad.grad(lambda x: np.spacing(x))(1.0)
    with pytest.raises(TypeError, match="numpy.add.reduce"):
        fgrad.grad(lambda x: np.add.reduce(x))(np.ones(2))


def test_asarray_of_a_tracer_refuses_to_drop_the_derivative():
    with pytest.raises(fgrad.TracerArrayConversionError, match="would silently drop its derivative"):
        fgrad.grad(lambda x: np.asarray(x).sum())(np.ones(2))


def test_array_creation():
    np.testing.assert_array_equal(fnp.zeros((2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(fnp.ones(3, np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(fnp.full((2,), 7.0), np.full((2,), 7.0))
    np.testing.assert_array_equal(fnp.arange(5), np.arange(5))
    np.testing.assert_array_equal(fnp.linspace(0, 1, 5), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(fnp.eye(3), np.eye(3))

    def f(x):
        z = fnp.zeros_like(x) + fnp.ones_like(x) + fnp.full((2, 2), x[0]) + fnp.full_like(x, 2.0)
        return fnp.sum(z * fnp.asarray(x) * fnp.array(x, dtype=np.float64))

    g = fgrad.grad(f)(np.array([1.0, 2.0]))
    eps = 1e-6
    x = np.array([1.0, 2.0])
    numeric = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g, numeric, rtol=1e-6)


def test_where_with_one_argument_and_misuse():
    assert fnp.where(np.array([True, False, True]))[0].tolist() == [0, 2]
    with pytest.raises(ValueError, match="both or neither"):
        fnp.where(True, 1.0)


def test_random_is_numpys():
    assert fnp.random.default_rng(0).normal() == np.random.default_rng(0).normal()
