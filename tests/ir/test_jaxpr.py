"""Jaxprs: JAX's text format, evaluation, DCE, constants and literals."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ir import dce_jaxpr, eval_jaxpr


def test_one_line_when_it_fits():
    assert str(fgrad.make_jaxpr(fnp.sin)(np.zeros(3))) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = sin a in (b,) }"
    )


def test_one_equation_per_line_otherwise():
    def f(x1, x2):
        return fnp.log(x1) + x1 * x2 - fnp.exp(x2)

    assert str(fgrad.make_jaxpr(f)(2.0, 5.0)) == "\n".join([
        "{ lambda ; a:f64[] b:f64[]. let",
        "    c:f64[] = log a",
        "    d:f64[] = mul a b",
        "    e:f64[] = add c d",
        "    f:f64[] = exp b",
        "    g:f64[] = sub e f",
        "  in (g,) }",
    ])


def test_params_literals_constants_and_several_outputs():
    w = np.ones((3, 2), np.float32)
    jaxpr = fgrad.make_jaxpr(lambda x: (fnp.sum(x @ w, axis=0) * 2.0, x))(np.ones((4, 3), np.float32))
    assert str(jaxpr) == "\n".join([
        "{ lambda a:f32[3,2]; b:f32[4,3]. let",
        "    c:f32[4,2] = matmul b a",
        "    d:f32[2] = reduce_sum[axes=(0,)] c",
        "    e:f32[2] = mul d 2.0",
        "  in (e, b) }",
    ])
    assert jaxpr.consts[0] is w
    assert [str(a) for a in jaxpr.in_avals] == ["f32[4,3]"]
    assert [str(a) for a in jaxpr.out_avals] == ["f32[2]", "f32[4,3]"]


def test_variable_names_continue_past_z():
    def f(x):
        for _ in range(30):
            x = fnp.sin(x)
        return x

    text = str(fgrad.make_jaxpr(f)(1.0))
    assert "ba:f64[] = sin z" in text and "be:f64[] = sin bd" in text


def test_index_params_print_in_numpy_syntax():
    text = str(fgrad.make_jaxpr(lambda x: x[1:, None, ::2, ...][0])(np.ones((3, 4))))
    assert "getitem[idx=[1:, None, ::2, ...]]" in text and "getitem[idx=[0]]" in text


def test_make_jaxpr_takes_pytrees_static_args_and_shapes():
    def f(params, x, n):
        return params["w"] * x ** n + params["b"]

    params = {"w": np.ones(2), "b": 1.0}
    jaxpr = fgrad.make_jaxpr(f, static_argnums=2)(params, fgrad.ShapeDtypeStruct((2,), np.float32), 3)
    assert [str(a) for a in jaxpr.in_avals] == ["f64[]", "f64[2]", "f32[2]"]  # b, w, x (sorted keys)
    assert "integer_pow[y=3]" in str(jaxpr)
    closed, shape = fgrad.make_jaxpr(lambda x: (x, x.sum()), return_shape=True)(np.ones(3))
    assert shape == (fgrad.ShapeDtypeStruct((3,), np.float64), fgrad.ShapeDtypeStruct((), np.float64))


def test_eval_jaxpr_reproduces_the_function():
    def f(x, y):
        return fnp.tanh(x @ y).sum(axis=1) / 3.0

    x, y = np.random.default_rng(0).normal(size=(2, 4, 3))
    y = y.T
    closed = fgrad.make_jaxpr(f)(x, y)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
    np.testing.assert_allclose(out, f(x, y))
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        eval_jaxpr(closed.jaxpr, closed.consts, x)


def test_eval_jaxpr_under_grad_differentiates_it():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * x)(1.0)
    g = fgrad.grad(lambda x: eval_jaxpr(closed.jaxpr, closed.consts, x)[0])(0.5)
    assert g == pytest.approx(np.cos(0.5) * 0.5 + np.sin(0.5))


def test_dce_drops_dead_equations_and_their_constants():
    c = np.arange(3.0)

    def f(x):
        dead = fnp.exp(x) * c  # noqa: F841
        return fnp.sin(x)

    closed = fgrad.make_jaxpr(f)(np.ones(3))
    assert [e.primitive.name for e in closed.eqns] == ["exp", "mul", "sin"]
    pruned = dce_jaxpr(closed.jaxpr)
    assert [e.primitive.name for e in pruned.eqns] == ["sin"] and pruned.constvars == []


def test_grad_jaxpr_shows_forward_then_backward():
    jaxpr = fgrad.make_jaxpr(fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2)))(np.ones(3))
    assert str(jaxpr) == "\n".join([
        "{ lambda ; a:f64[3]. let",
        "    b:f64[3] = sin a",  # forward, with the residuals its derivative needs
        "    c:f64[3] = cos a",
        "    d:f64[3] = integer_pow[y=2] b",
        "    e:f64[3] = mul 2.0 b",
        "    f:f64[] = reduce_sum[axes=(0,)] d",
        "    g:f64[1] = reshape[new_shape=(1,)] 1.0:f64[]",  # backward from the seed 1.0
        "    h:f64[3] = broadcast_to[shape=(3,)] g",
        "    i:f64[3] = mul h e",
        "    j:f64[3] = mul i c",
        "  in (j,) }",
    ])
