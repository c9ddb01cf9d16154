"""The public transformations: argnums, has_aux, pytrees, and their errors."""

from collections import namedtuple

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def test_argnums_int_tuple_and_negative():
    f = lambda x, y, z: x * y**2 + z  # noqa: E731
    assert fgrad.grad(f)(1.0, 2.0, 3.0) == 4.0
    assert fgrad.grad(f, argnums=1)(1.0, 2.0, 3.0) == 4.0
    assert fgrad.grad(f, argnums=(0, 2))(1.0, 2.0, 3.0) == (4.0, 1.0)
    assert fgrad.grad(f, argnums=-1)(1.0, 2.0, 3.0) == 1.0
    assert fgrad.grad(f, argnums=(1,))(1.0, 2.0, 3.0) == (4.0,)


def test_argnums_errors():
    def f(x, y):
        return x * y

    with pytest.raises(ValueError, match="argnums=2 refers to positional argument 2, but f was called with"):
        fgrad.grad(f, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple"):
        fgrad.grad(lambda x: x, argnums="x")(1.0)
    for wrong in (1.0, None, True, ()):
        with pytest.raises(TypeError, match=f"argnums must be an int or a non-empty tuple of ints, got {wrong!r}"):
            fgrad.grad(f, argnums=wrong)(1.0, 2.0)
    with pytest.raises(ValueError, match="same argument twice"):
        fgrad.grad(lambda x: x, argnums=(0, 0))(1.0)


def test_keyword_arguments_pass_through():
    assert fgrad.grad(lambda x, scale=1.0: x * scale)(2.0, scale=3.0) == 3.0


def test_value_and_grad_and_has_aux():
    f = lambda x: (x**2, {"twice": 2 * x})  # noqa: E731
    (value, aux), g = fgrad.value_and_grad(f, has_aux=True)(3.0)
    assert (value, aux, g) == (9.0, {"twice": 6.0}, 6.0)
    g, aux = fgrad.grad(f, has_aux=True)(3.0)
    assert (g, aux) == (6.0, {"twice": 6.0})
    with pytest.raises(TypeError, match=r"has_aux=True requires <lambda> to return a pair \(output, aux\), "
                                        r"but it returned an array f64\[\]"):
        fgrad.grad(lambda x: x, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="but it returned a tuple of length 3"):
        fgrad.grad(lambda x: (x, x, x), has_aux=True)(1.0)


Params = namedtuple("Params", ["w", "b"])


def test_gradients_have_the_structure_of_the_arguments():
    def loss(params, x):
        return fnp.sum((x @ params["layers"][0].w + params["layers"][0].b) ** 2) + params["c"]

    params = {"layers": [Params(np.ones((2, 3)), np.zeros(3))], "c": 1.0}
    g = fgrad.grad(loss)(params, np.array([1.0, 2.0]))
    assert set(g) == {"layers", "c"} and isinstance(g["layers"][0], Params)
    np.testing.assert_allclose(g["layers"][0].w, [[6.0] * 3, [12.0] * 3])
    np.testing.assert_allclose(g["layers"][0].b, [6.0] * 3)
    assert g["c"] == 1.0


def test_grad_of_a_non_scalar_output_names_the_shape_and_the_alternatives():
    with pytest.raises(TypeError, match=r"return a scalar \(shape \(\)\).*shape \(3,\).*fgrad.vjp"):
        fgrad.grad(fnp.sin)(np.ones(3))
    with pytest.raises(TypeError, match=r"single scalar.*PyTreeDef\(\(\*, \*\)\)"):
        fgrad.grad(lambda x: (x, x))(1.0)
    with pytest.raises(TypeError, match="real floating-point scalar.*bool"):
        fgrad.grad(lambda x: x > 0)(1.0)


@pytest.mark.parametrize("arg, dtype, extra", [
    (2, "int64", "a Python int"), (np.arange(3), "int64", ""), (True, "bool", ""), (np.ones(2, bool), "bool", "")
])
def test_grad_of_an_integer_or_bool_input_suggests_a_float(arg, dtype, extra):
    expected = f"grad requires float or complex inputs, but the argument `x` of f has dtype {dtype}"
    with pytest.raises(TypeError, match=expected) as e:
        def f(x):
            return fnp.sum(x * 1.0)

        fgrad.grad(f)(arg)
    assert "2.0 instead of 2" in str(e.value) and extra in str(e.value)


def test_the_integer_leaf_is_named_by_its_path():
    with pytest.raises(TypeError, match=r"argument `params\['n'\]`"):
        fgrad.grad(lambda params: params["w"] * params["n"])({"w": 1.0, "n": 2})


def test_vjp_checks_the_cotangent():
    y, vjp_fn = fgrad.vjp(fnp.sin, np.zeros(3))
    _, vjp_two = fgrad.vjp(lambda x: (x, x), np.zeros(3))
    with pytest.raises(ValueError, match=r"the cotangent at leaf 1 of PyTreeDef\(\(\*, \*\)\) has shape \(1,\)"):
        vjp_two((np.ones(3), np.ones(1)))
    shapes = r"the cotangent has shape \(2,\), but the corresponding primal output has shape \(3,\)"
    with pytest.raises(ValueError, match=shapes):
        vjp_fn(np.ones(2))
    dtypes = "the cotangent has dtype float32, but the corresponding primal output has dtype float64"
    with pytest.raises(ValueError, match=dtypes):
        vjp_fn(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="structure"):
        vjp_fn((np.ones(3),))
    np.testing.assert_array_equal(vjp_fn(np.ones(3))[0], np.ones(3))


def test_vjp_accepts_a_python_scalar_cotangent_for_a_scalar_output():
    _, vjp_fn = fgrad.vjp(lambda x: fnp.sum(x), np.ones(2, np.float32))
    g = vjp_fn(1.0)[0]
    assert g.dtype == np.float32 and g.tolist() == [1.0, 1.0]


def test_vjp_has_aux():
    y, vjp_fn, aux = fgrad.vjp(lambda x: (x * 2.0, x + 1.0), 3.0, has_aux=True)
    assert (y, aux, vjp_fn(1.0)) == (6.0, 4.0, (2.0,))


def test_results_are_numpy_types():
    g = fgrad.grad(lambda x: x * 2.0)(1.0)
    assert type(g) is np.float64
    assert type(fgrad.grad(fnp.sum)(np.ones(2))) is np.ndarray
    assert type(fgrad.value_and_grad(lambda x: x * 2.0)(1.0)[0]) is np.float64


def test_stop_gradient_on_pytrees_and_outside_transforms():
    out = fgrad.stop_gradient({"a": 1.0, "b": [np.ones(2)]})
    assert out["a"] == 1.0 and type(out["b"][0]) is np.ndarray
    g = fgrad.grad(lambda p: fnp.sum(fgrad.stop_gradient(p)["a"] * p["a"]))({"a": np.ones(2) * 3})
    np.testing.assert_array_equal(g["a"], [3.0, 3.0])


def test_functions_keep_their_names():
    def loss(x):
        return x

    assert fgrad.grad(loss).__name__ == "loss"
    assert fgrad.make_jaxpr(loss).__name__ == "loss"
