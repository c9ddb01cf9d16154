"""custom_jvp, custom_vjp and checkpoint under every transformation they
support, with values against closed forms, and their errors."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import checkpoint, custom_jvp, custom_vjp, remat
from fgrad.test_util import check_grads

x0 = np.array([0.3, -0.7, 1.2])


# --- custom_jvp ------------------------------------------------------------------


@custom_jvp
def softplus(x):
    return fnp.log(1.0 + fnp.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + fnp.exp(-x))  # the logistic function, stable


def test_custom_jvp_in_every_mode_and_order():
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(softplus(x)))(x0), sig(x0))
    np.testing.assert_allclose(fgrad.jvp(softplus, (x0,), (np.ones(3),))[1], sig(x0))
    np.testing.assert_allclose(fgrad.jacfwd(softplus)(x0), np.diag(sig(x0)))
    np.testing.assert_allclose(fgrad.jacrev(softplus)(x0), np.diag(sig(x0)))
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(softplus))(x0), sig(x0))
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(softplus))(0.3), sig(0.3) * (1 - sig(0.3)))
    check_grads(softplus, (x0,), order=2)


def test_custom_jvp_rule_is_used_not_the_function():
    @custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), 10.0 * tangents[0]))
    assert fgrad.grad(f)(0.5) == 10.0
    assert fgrad.jvp(f, (0.5,), (1.0,))[1] == 10.0


def test_custom_jvp_defjvps_nondiff_argnums_and_pytrees():
    @custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda tx, ans, x, y: tx * y, lambda ty, ans, x, y: x * ty)
    assert fgrad.grad(f, argnums=(0, 1))(2.0, 3.0) == (3.0, 2.0)

    def g(power, x):
        return fnp.sum(x["a"] ** power)

    g = custom_jvp(g, nondiff_argnums=(0,))
    g.defjvp(lambda power, primals, tangents: (g(power, primals[0]),
                                                fnp.sum(power * primals[0]["a"] ** (power - 1) * tangents[0]["a"])))
    grads = fgrad.grad(lambda x: g(3, x))({"a": np.array([1.0, 2.0])})
    np.testing.assert_allclose(grads["a"], [3.0, 12.0])


def test_custom_jvp_shows_as_one_equation_and_evaluates():
    text = str(fgrad.make_jaxpr(softplus)(1.0))
    assert "custom_jvp_call[name=softplus call_jaxpr={ lambda ; a:f64[]. let" in text and "name=softplus" in text
    closed = fgrad.make_jaxpr(softplus)(1.0)
    assert fgrad.eval_jaxpr(closed.jaxpr, closed.consts, 0.0)[0] == np.log(2.0)


def test_custom_jvp_errors():
    @custom_jvp
    def f(x):
        return x * 2

    with pytest.raises(AttributeError, match="no JVP defined.*defjvp"):
        fgrad.grad(f)(1.0)
    f.defjvp(lambda p, t: (f(p[0]), np.ones(2)))
    with pytest.raises(ValueError, match="shape \\(2,\\) for output 0, but the output has shape \\(\\)"):
        fgrad.grad(f)(1.0)
    g = custom_jvp(lambda n, x: x * n, nondiff_argnums=(0,))
    g.defjvp(lambda n, p, t: (g(n, p[0]), t[0] * n))
    with pytest.raises(TypeError, match="nondiff_argnums is for Python values"):
        fgrad.grad(lambda x: g(np.ones(1), x).sum())(np.ones(1))


# --- custom_vjp ------------------------------------------------------------------


@custom_vjp
def legendre_p3(x):
    return 0.5 * (5 * x**3 - 3 * x)


legendre_p3.defvjp(lambda x: (legendre_p3(x), x), lambda x, g: (g * 1.5 * (5 * x**2 - 1),))


def test_the_tutorials_custom_function_passes_check_grads():
    np.testing.assert_allclose(legendre_p3(x0), 0.5 * (5 * x0**3 - 3 * x0))
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(legendre_p3(x)))(x0), 1.5 * (5 * x0**2 - 1))
    check_grads(legendre_p3, (x0,), order=2, modes=("rev",))  # bwd is itself differentiated


def test_check_grads_catches_the_tutorials_wrong_backward():
    @custom_vjp
    def p3_wrong(x):
        return 0.5 * (5 * x**3 - 3 * x)

    p3_wrong.defvjp(lambda x: (p3_wrong(x), x), lambda x, g: (g * 1.5 * (5 * x**2 - 3),))
    with pytest.raises(AssertionError, match="VJP"):
        check_grads(p3_wrong, (x0,), order=1, modes=("rev",))


def test_custom_vjp_under_vmap_jacrev_and_nested_grad():
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(legendre_p3))(x0), 1.5 * (5 * x0**2 - 1))
    np.testing.assert_allclose(fgrad.jacrev(legendre_p3)(x0), np.diag(1.5 * (5 * x0**2 - 1)))
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(legendre_p3))(0.4), 15 * 0.4)
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(fgrad.vmap(legendre_p3)(x)))(x0), 1.5 * (5 * x0**2 - 1))


def test_custom_vjp_residuals_cotangent_pytrees_and_none():
    @custom_vjp
    def f(params, x):
        return params["w"] * fnp.sin(x)

    f.defvjp(lambda p, x: (f(p, x), (p["w"], fnp.cos(x), fnp.sin(x))),
             lambda res, g: ({"w": fnp.sum(g * res[2])}, None))
    gp, gx = fgrad.grad(lambda p, x: fnp.sum(f(p, x)), argnums=(0, 1))({"w": 2.0}, x0)
    assert gp["w"] == pytest.approx(np.sin(x0).sum())
    np.testing.assert_array_equal(gx, np.zeros(3))  # bwd said None: a zero cotangent


def test_custom_vjp_forward_mode_is_a_type_error():
    with pytest.raises(TypeError, match="forward-mode differentiation.*legendre_p3.*custom_vjp"):
        fgrad.jvp(legendre_p3, (1.0,), (1.0,))
    with pytest.raises(TypeError, match="forward-mode"):
        fgrad.hessian(lambda x: fnp.sum(legendre_p3(x)))(x0)


def test_custom_vjp_bwd_errors_name_both_sides():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: (g,))
    with pytest.raises(TypeError, match="one cotangent per differentiable argument \\(2\\), but returned a tuple of length 1"):
        fgrad.grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: (np.ones(3), g))
    with pytest.raises(ValueError, match="shape \\(3,\\) for output 0, but the output has shape \\(\\)"):
        fgrad.grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: ([g], g))
    with pytest.raises(TypeError, match="structure PyTreeDef\\(\\[\\*\\]\\) for an argument of structure PyTreeDef\\(\\*\\)"):
        fgrad.grad(f)(1.0, 2.0)


def test_custom_vjp_in_make_jaxpr_and_grad_jaxpr():
    closed = fgrad.make_jaxpr(legendre_p3)(1.0)
    assert [e.primitive.name for e in closed.eqns] == ["custom_vjp_call"]
    assert "integer_pow[y=3]" in str(fgrad.make_jaxpr(fgrad.grad(legendre_p3))(1.0))


# --- checkpoint ------------------------------------------------------------------


def mlp(params, x):
    for W in params:
        x = fnp.tanh(x @ W)
    return fnp.sum(x**2)


def test_checkpoint_gives_the_same_gradients():
    rng = np.random.default_rng(0)
    params = [rng.normal(size=(3, 3)) / 2 for _ in range(4)]
    x = rng.normal(size=(2, 3))
    layer = checkpoint(lambda h, W: fnp.tanh(h @ W))

    def mlp_checkpointed(params, x):
        for W in params:
            x = layer(x, W)
        return fnp.sum(x**2)

    for a, b in zip(fgrad.grad(mlp)(params, x), fgrad.grad(mlp_checkpointed)(params, x)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    check_grads(mlp_checkpointed, (params, x), order=2)
    np.testing.assert_allclose(fgrad.jacfwd(lambda x: mlp_checkpointed(params, x))(x),
                               fgrad.grad(lambda x: mlp(params, x))(x))


def test_checkpoint_recomputes_in_the_backward_pass():
    calls = []

    def block(x):
        calls.append(1)
        return fnp.sin(x) * 2.0

    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(remat(block)(x)))(x0), 2 * np.cos(x0))
    assert len(calls) == 2  # eagerly: in the forward pass, and again in the backward pass
    calls.clear()
    closed = fgrad.make_jaxpr(fgrad.grad(lambda x: fnp.sum(checkpoint(block)(x))))(x0)
    assert len(calls) == 1  # staged once; its jaxpr is what is recomputed
    forward, backward = [e for e in closed.eqns if e.primitive.name == "checkpoint"]
    # The backward equation takes the input, not cos(x), and computes cos(x) itself.
    assert [e.primitive.name for e in forward.params["jaxpr"].eqns] == ["sin", "mul"]
    assert "cos" in [e.primitive.name for e in backward.params["jaxpr"].eqns]
    assert all(v.aval.shape == (3,) for v in backward.invars)


def test_checkpoint_keeps_only_its_inputs():
    from fgrad.transforms.reverse import linearize_flat

    big = lambda x: fnp.exp(fnp.sin(x) * 3.0) * 2.0  # noqa: E731
    _, plain, _ = linearize_flat(lambda x: [big(x)], [x0], "test")
    _, saved, _ = linearize_flat(lambda x: [checkpoint(big)(x)], [x0], "test")
    assert len(plain.jaxpr.consts) >= 2 and len(saved.jaxpr.consts) == 1  # just x


def test_checkpoint_static_argnums_linearize_and_vmap():
    f = checkpoint(lambda x, n: fnp.sum(x**n), static_argnums=(1,))
    np.testing.assert_allclose(fgrad.grad(f)(x0, 3), 3 * x0**2)
    y, f_jvp = fgrad.linearize(lambda x: checkpoint(fnp.sin)(x), x0)
    np.testing.assert_allclose(f_jvp(np.ones(3)), np.cos(x0))
    np.testing.assert_allclose(fgrad.vmap(checkpoint(fnp.sin))(x0), np.sin(x0))
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(fgrad.vmap(checkpoint(fnp.sin))(x)))(x0), np.cos(x0))


def test_python_control_flow_in_custom_functions_runs_eagerly_and_is_abstract_when_staged():
    def block(x):
        return fnp.sin(x) if fnp.sum(x) > 0 else x

    for wrap in (checkpoint, lambda f: custom_vjp(f)):
        g = wrap(block)
        if isinstance(g, custom_vjp):
            g.defvjp(lambda x: (block(x), x), lambda x, ct: (ct * fnp.cos(x) if fnp.sum(x) > 0 else ct,))
        loss = lambda x: fnp.sum(g(x))  # noqa: E731
        np.testing.assert_allclose(fgrad.grad(loss)(x0), np.cos(x0))  # sum(x0) > 0
        np.testing.assert_allclose(fgrad.grad(loss)(-x0), np.ones(3))
        for staged in (fgrad.jit(fgrad.grad(loss)), fgrad.make_jaxpr(fgrad.grad(loss))):
            with pytest.raises(fgrad.ConcretizationTypeError, match="traced once on abstract values.*static_argnums"):
                staged(x0)
