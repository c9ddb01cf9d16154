"""vmap's API (in_axes/out_axes prefixes, sizes, errors) and the Jacobians and
Hessians built on it, against finite differences and against each other."""

from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import ConcretizationTypeError, hessian, jacfwd, jacobian, jacrev, vmap
from tests.strategies import values

rng = np.random.default_rng(0)


def numerical_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, float)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


def test_in_axes_as_pytree_prefixes_and_none():
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    xs = rng.normal(size=(5, 3))
    out = vmap(lambda p, x: x @ p["w"] + p["b"], in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(out, xs @ params["w"] + params["b"])
    per_leaf = vmap(lambda p: p["w"].sum() * p["b"], in_axes=({"w": 1, "b": None},))
    np.testing.assert_allclose(per_leaf({"w": rng.normal(size=(2, 4)), "b": 2.0}).shape, (4,))


def test_out_axes_prefix_none_and_negative():
    xs = rng.normal(size=(4, 3))
    a, b = vmap(lambda x: (x * 2, fnp.sum(x)), out_axes=(-1, 0))(xs)
    np.testing.assert_allclose(a, (xs * 2).T)
    np.testing.assert_allclose(b, xs.sum(axis=1))
    shared = vmap(lambda x, c: (x + c, c * 2), in_axes=(0, None), out_axes=(0, None))(xs, 1.5)
    assert shared[1] == 3.0
    repeated = vmap(lambda x: 7.0, axis_size=None)(xs)  # a constant output is repeated per example
    np.testing.assert_array_equal(repeated, np.full(4, 7.0))


def test_keyword_arguments_are_mapped_over_axis_0():
    xs, ys = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    np.testing.assert_allclose(vmap(lambda x, y=None: x * y)(xs, y=ys), xs * ys)


def test_axis_size_for_no_mapped_arguments():
    np.testing.assert_array_equal(vmap(lambda c: c + 1.0, in_axes=None, axis_size=3)(1.0), [2.0, 2.0, 2.0])


def test_size_mismatch_lists_each_argument():
    def f(x, y):
        return x + y

    with pytest.raises(ValueError) as e:
        vmap(f, in_axes=(0, 1))(np.ones((2, 3)), np.ones((4, 3)))
    assert str(e.value) == (
        "vmap got inconsistent sizes for the axes to be mapped:\n"
        "  * argument `x` (f64[2,3]): axis 0 has size 2\n"
        "  * argument `y` (f64[4,3]): axis 1 has size 3"
    )


@pytest.mark.parametrize("call, error, message", [
    (lambda: vmap(fnp.sin, in_axes=[0])(np.ones(2)), TypeError, "got a list"),
    (lambda: vmap(fnp.add, in_axes=(0,))(np.ones(2), np.ones(2)), ValueError, "has 1 entry but add was called with 2"),
    (lambda: vmap(fnp.sin, in_axes=2)(np.ones(2)), ValueError, "along axis 2, but it has only 1 dimension"),
    (lambda: vmap(fnp.sin, in_axes=None)(np.ones(2)), ValueError, "axis_size="),
    (lambda: vmap(fnp.sin, in_axes="0")(np.ones(2)), TypeError, "ints or None"),
    (lambda: vmap(fnp.sin, out_axes=None)(np.ones(2)), ValueError, "out_axes=None for an output that varies"),
    (lambda: vmap(fnp.sin, axis_size=3)(np.ones(2)), ValueError, "axis_size=3"),
])
def test_vmap_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_python_branch_on_a_batched_value_explains_itself_and_unbatched_still_works():
    def f(x, c):
        y = x * 2 if c > 0 else x  # c is shared: a plain value under vmap
        return y if y.sum() > 0 else -y  # y varies per example

    with pytest.raises(ConcretizationTypeError, match="one value per example.*fgrad.numpy.where"):
        vmap(f, in_axes=(0, None))(np.ones((2, 3)), 1.0)
    np.testing.assert_array_equal(vmap(lambda x, c: x * 2 if c > 0 else x, in_axes=(0, None))(np.ones((2, 2)), 1.0), 2 * np.ones((2, 2)))


def test_nested_vmap_and_compositions_with_differentiation():
    x = rng.normal(size=(2, 3, 4))
    outer = vmap(vmap(lambda v: fnp.sum(fnp.sin(v))))(x)
    np.testing.assert_allclose(outer, np.sin(x).sum(-1))
    f = lambda v: fnp.sum(fnp.tanh(v) ** 2)  # noqa: E731
    xs = rng.normal(size=(5, 3))
    per_example = vmap(fgrad.grad(f))(xs)
    np.testing.assert_allclose(per_example, np.stack([fgrad.grad(f)(r) for r in xs]))
    np.testing.assert_allclose(fgrad.grad(lambda xs: fnp.sum(vmap(f)(xs)))(xs), per_example)
    tangents = rng.normal(size=(5, 3))
    jvps = vmap(lambda x, t: fgrad.jvp(f, (x,), (t,))[1])(xs, tangents)
    np.testing.assert_allclose(jvps, (per_example * tangents).sum(1))
    cts = vmap(lambda x: fgrad.vjp(fnp.sin, x)[1](np.ones(3))[0])(xs)
    np.testing.assert_allclose(cts, np.cos(xs))


def f_vec(x):
    A = np.arange(12.0).reshape(4, 3) / 10
    return fnp.tanh(A @ x) * fnp.sum(x)


@pytest.mark.parametrize("jac", [jacfwd, jacrev, jacobian])
@given(seed=st.integers(0, 2**20), shape=st.sampled_from([(3,), (1, 3), (3, 1)]))
def test_jacobians_match_finite_differences(jac, seed, shape):
    x = values(shape, "real", seed)
    f = lambda x: f_vec(fnp.reshape(x, (3,)))  # noqa: E731
    np.testing.assert_allclose(jac(f)(x), numerical_jacobian(f, x), atol=1e-7)


def test_jacobian_shapes_scalars_and_matrices():
    assert jacrev(fnp.sin)(0.5) == np.cos(0.5)
    X = rng.normal(size=(2, 3))
    J = jacfwd(lambda X: X @ X.T)(X)
    assert J.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(J, jacrev(lambda X: X @ X.T)(X))
    np.testing.assert_allclose(J, numerical_jacobian(lambda X: X @ X.T, X), atol=1e-8)


Pair = namedtuple("Pair", ["a", "b"])


def test_pytree_jacobians_are_output_trees_of_input_trees():
    def f(p, s):
        return {"u": p.a * s, "v": fnp.sum(p.b) * p.a[0]}

    p, s = Pair(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])), 2.0
    for jac in (jacfwd, jacrev):
        J = jac(f, argnums=(0, 1))(p, s)
        assert set(J) == {"u", "v"}
        (Jp, Js) = J["u"]
        assert isinstance(Jp, Pair) and Jp.a.shape == (2, 2) and Jp.b.shape == (2, 3) and Js.shape == (2,)
        np.testing.assert_allclose(Jp.a, 2.0 * np.eye(2))
        np.testing.assert_allclose(Js, [1.0, 2.0])
        np.testing.assert_allclose(J["v"][0].b, np.full(3, 1.0))
        np.testing.assert_allclose(J["v"][0].a, [12.0, 0.0])


def test_has_aux():
    J, aux = jacfwd(lambda x: (x * 2, {"x": x}), has_aux=True)(np.ones(2))
    np.testing.assert_array_equal(J, 2 * np.eye(2))
    assert np.array_equal(aux["x"], np.ones(2))
    J2, aux2 = jacrev(lambda x: (x * 2, x.sum()), has_aux=True)(np.ones(2))
    np.testing.assert_array_equal(J2, 2 * np.eye(2))
    assert aux2 == 2.0


@given(seed=st.integers(0, 2**20))
def test_hessian_matches_the_closed_form_and_both_orders(seed):
    A = values((4, 4), "real", seed)
    x = values((4,), "real", seed + 1)
    f = lambda x: fnp.sum(fnp.tanh(A @ x) ** 2)  # noqa: E731
    t = np.tanh(A @ x)
    closed = A.T @ np.diag(2 * (1 - t**2) * (1 - 3 * t**2)) @ A
    np.testing.assert_allclose(hessian(f)(x), closed, atol=1e-10)
    np.testing.assert_allclose(jacrev(jacfwd(f))(x), closed, atol=1e-10)
    np.testing.assert_allclose(jacrev(jacrev(f))(x), closed, atol=1e-10)


def test_hessian_vector_product_without_the_hessian():
    A = rng.normal(size=(3, 3))
    f = lambda x: fnp.sum(fnp.sin(A @ x))  # noqa: E731
    x, v = rng.normal(size=3), rng.normal(size=3)
    hvp = fgrad.jvp(fgrad.grad(f), (x,), (v,))[1]
    np.testing.assert_allclose(hvp, hessian(f)(x) @ v)


def test_jacobian_errors():
    with pytest.raises(TypeError, match="jacfwd requires float inputs"):
        jacfwd(fnp.sin)(np.arange(3))
    with pytest.raises(TypeError, match="jacrev requires float outputs"):
        jacrev(lambda x: x > 0)(np.ones(2))
