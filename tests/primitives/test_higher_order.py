"""Higher-order primitives (custom_jvp, custom_vjp, checkpoint, jit) and the effectful
debug primitives, closing over values of every transform.

Each function closes over `w`, a traced value of the transform around it, both
in its body and in its custom rule, or takes it as an argument. Its results and
derivatives must equal those of the same function written without the
primitive: under grad, jvp, vjp and vmap, evaluated eagerly (custom functions
running their Python code then, fgrad/higher_order/eager.py) or staged by make_jaxpr
and then evaluated, to first and second order.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ir.check import check_jaxpr

# Checked numerically here (tests/primitives/test_registry.py requires a listing).
PRIMITIVES = {
    "custom_jvp_call", "custom_vjp_call", "custom_vjp_bwd", "checkpoint", "checkpoint_tangent", "jit",
    "debug_print", "debug_callback", "tap_grad", "tap_cotangent",
}

x0 = np.array([0.3, -0.7, 1.2])


def inner(x, w):
    return fnp.sin(x * w) + x * w**2


def d_inner_dx(x, w):
    return fnp.cos(x * w) * w + w**2


def plain(w):
    return fnp.sum(inner(x0, w) * x0)


def with_checkpoint(w):
    return fnp.sum(fgrad.checkpoint(lambda x: inner(x, w))(x0) * x0)


def with_jit(w):
    return fnp.sum(fgrad.jit(lambda x: inner(x, w))(x0) * x0)


def with_jit_of_argument(w):
    return fnp.sum(fgrad.jit(inner)(x0, w) * x0)


def with_custom_jvp(w):
    @fgrad.custom_jvp
    def f(x):
        return inner(x, w)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), d_inner_dx(x, w) * t  # the rule closes over w too

    return fnp.sum(f(x0) * x0)


def with_custom_vjp(w):
    @fgrad.custom_vjp
    def f(x):
        return inner(x, w)

    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * d_inner_dx(x, w),))
    return fnp.sum(f(x0) * x0)


def with_custom_jvp_of_argument(w):
    # The differentiated value is an explicit argument: the rule gives its derivative.
    @fgrad.custom_jvp
    def f(x, v):
        return inner(x, v)

    f.defjvps(None, lambda tv, ans, x, v: fnp.cos(x * v) * x * tv + 2 * x * v * tv)
    return fnp.sum(f(x0, w) * x0)


def with_checkpoint_of_argument(w):
    # Eagerly a checkpoint_tangent equation, recomputed in the backward pass.
    return fnp.sum(fgrad.checkpoint(inner)(x0, w) * x0)


def with_custom_jvp_of_argument_closing_over_it(w):
    # The rule takes w and closes over it too: eagerly it would meet w below w's transform, so it is staged.
    @fgrad.custom_jvp
    def f(x, v):
        return inner(x, v)

    f.defjvps(None, lambda tv, ans, x, v: (fnp.cos(x * w) * x + 2 * x * w) * tv)
    return fnp.sum(f(x0, w) * x0)


FUNCTIONS = [with_checkpoint, with_custom_jvp, with_custom_vjp, with_custom_jvp_of_argument, with_jit,
             with_jit_of_argument, with_checkpoint_of_argument, with_custom_jvp_of_argument_closing_over_it]

TRANSFORMS = {
    "grad": lambda f: fgrad.grad(f),
    "jvp": lambda f: (lambda w: fgrad.jvp(f, (w,), (1.0,))[1]),
    "vjp": lambda f: (lambda w: fgrad.vjp(f, w)[1](1.0)[0]),
    "vmap": lambda f: (lambda w: fgrad.vmap(f)(w * np.array([1.0, 0.5, -2.0]))),
}
ORDERS = {
    "first": lambda t, f: t(f),
    "second": lambda t, f: t(fgrad.grad(f)),
}


def staged(g):
    """`g` traced by make_jaxpr, checked, then evaluated."""
    def run(w):
        closed = fgrad.make_jaxpr(g)(w)
        check_jaxpr(closed)
        return fgrad.eval_jaxpr(closed.jaxpr, closed.consts, w)[0]
    return run


@pytest.mark.parametrize("fun", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("mode", ["eager", "make_jaxpr"])
def test_closing_over_a_traced_value_matches_the_plain_function(fun, transform, order, mode):
    g = ORDERS[order](TRANSFORMS[transform], fun)
    expected = ORDERS[order](TRANSFORMS[transform], plain)(1.3)
    got = (staged(g) if mode == "make_jaxpr" else g)(1.3)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_the_reference_is_right():
    # plain's derivative against finite differences, so the matrix compares with a true value.
    eps = 1e-6
    fd = (plain(1.3 + eps) - plain(1.3 - eps)) / (2 * eps)
    np.testing.assert_allclose(fgrad.grad(plain)(1.3), fd, rtol=1e-7)


def test_custom_rules_are_used_for_explicit_arguments():
    # A deliberately different rule shows it is the rule, not the function, that is differentiated.
    @fgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), 10.0 * t[0]))
    for g in (fgrad.grad(f), staged(fgrad.grad(f))):
        assert g(0.5) == 10.0
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(f))(x0), 10.0)


def test_checkpoint_keeps_only_inputs_between_the_passes():
    def block(x):
        return fnp.tanh(fnp.sin(x) * 3.0)

    _, f_vjp = fgrad.vjp(fgrad.checkpoint(block), x0)
    _, g_vjp = fgrad.vjp(block, x0)
    np.testing.assert_allclose(f_vjp(np.ones(3))[0], g_vjp(np.ones(3))[0])
    # linearize replays the checkpointed tangent map too
    _, f_jvp = fgrad.linearize(fgrad.checkpoint(block), x0)
    _, g_jvp = fgrad.linearize(block, x0)
    np.testing.assert_allclose(f_jvp(np.ones(3)), g_jvp(np.ones(3)))
    np.testing.assert_allclose(fgrad.jacrev(fgrad.checkpoint(block))(x0), fgrad.jacrev(block)(x0))
    np.testing.assert_allclose(fgrad.hessian(lambda x: fnp.sum(fgrad.checkpoint(block)(x)))(x0),
                               fgrad.hessian(lambda x: fnp.sum(block(x)))(x0))


def test_debug_primitives_survive_every_transform_and_dce(capsys):
    from fgrad.ir.passes import dce_jaxpr

    seen = []

    def f(x):
        fgrad.debug.print("x = {}", x)
        y = fgrad.debug.tap_grad(x * 2.0, seen.append)
        return fnp.sum(fnp.sin(y))

    np.testing.assert_allclose(fgrad.grad(f)(x0), 2 * np.cos(2 * x0))
    np.testing.assert_allclose(seen[-1], np.cos(2 * x0))
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(f))(np.stack([x0, 2 * x0])),
                               2 * np.cos(2 * np.stack([x0, 2 * x0])))
    closed = fgrad.make_jaxpr(fgrad.grad(f))(x0)
    check_jaxpr(closed)
    kept = dce_jaxpr(closed.jaxpr, [False])  # no output used: only the effects remain
    assert {"debug_print", "debug_callback"} <= {e.primitive.name for e in kept.eqns}
    capsys.readouterr()
    fgrad.eval_jaxpr(closed.jaxpr, closed.consts, x0)
    assert "x = [ 0.3 -0.7  1.2]" in capsys.readouterr().out


def test_a_rule_closing_over_a_batched_value():
    def loss(w):
        @fgrad.custom_jvp
        def f(x):
            return fnp.sin(x) * w

        f.defjvp(lambda p, t: (f(p[0]), fnp.cos(p[0]) * w * t[0]))
        return fnp.sum(f(x0))

    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(loss))(np.array([1.0, 2.0])),
                               [np.sum(np.sin(x0))] * 2)


# --- vmap against a Python loop (tests/transforms/test_batching.py runs these) ----------


@fgrad.custom_jvp
def _softplus(x):
    return fnp.log1p(fnp.exp(x))


_softplus.defjvps(lambda t, ans, x: t / (1.0 + fnp.exp(-x)))


@fgrad.custom_vjp
def _cube(x):
    return x**3


_cube.defvjp(lambda x: (_cube(x), x), lambda x, g: (3 * x**2 * g,))


def _tapped(x):
    return fgrad.grad(lambda x: fnp.sum(fgrad.debug.tap_grad(x * 2.0, lambda g: None) ** 2))(x)


def _printed(x):
    fgrad.debug.print("{}", x)
    return x * 2.0


def _linearized_checkpoint(x):
    return fgrad.linearize(fgrad.checkpoint(lambda x: fnp.sin(x) * x), x)[1](fnp.cos(x))


# Eagerly vmap calls custom functions vmapped; inside jit it batches their primitives (the
# staged cases).
BATCH_CASES = {
    "checkpoint": (fgrad.jit(fgrad.checkpoint(lambda x, y: fnp.sin(x) * y)), [(3,), (3,)], "real"),
    "checkpoint_eager": (fgrad.checkpoint(lambda x, y: fnp.sin(x) * y), [(3,), (3,)], "real"),
    # the tangent map of an eager checkpoint, applied to batched values
    "checkpoint_tangent": (_linearized_checkpoint, [(3,)], "real"),
    "jit": (fgrad.jit(lambda x, y: fnp.sin(x) * y + fnp.sum(x)), [(3,), ()], "real"),
    "custom_jvp_call": (fgrad.jit(lambda x: _softplus(x) * 2.0), [(3,)], "real"),
    "custom_jvp_eager": (lambda x: _softplus(x) * 2.0, [(3,)], "real"),
    "custom_vjp_call": (fgrad.jit(lambda x, y: _cube(x) + y), [(3,), ()], "real"),
    "custom_vjp_eager": (lambda x, y: _cube(x) + y, [(3,), ()], "real"),
    # under vmap the backward pass transposes custom_vjp_bwd on batched cotangents
    "custom_vjp_bwd": (fgrad.jit(lambda x: fgrad.grad(lambda x: fnp.sum(_cube(x)))(x)), [(3,)], "real"),
    "custom_vjp_bwd_eager": (lambda x: fgrad.grad(lambda x: fnp.sum(_cube(x)))(x), [(3,)], "real"),
    "debug_print": (_printed, [(2,)], "real"),
    "tap_grad": (_tapped, [(3,)], "real"),
    "tap_cotangent": (_tapped, [(2, 2)], "real"),
    "debug_callback": (_tapped, [()], "real"),
}
