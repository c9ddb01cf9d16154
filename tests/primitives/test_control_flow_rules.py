"""The rules of the control-flow primitives cond, while and scan: derivatives
against finite differences in both modes, and vmap against a Python loop (the
registry's cases). tests/lax/ tests fgrad.lax itself, form by form."""

import numpy as np
import pytest
from hypothesis import given, settings

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

PRIMITIVES = {"cond", "while", "scan", "while_tape", "tape_scan", "custom_root", "custom_linear_solve"}


def _branchy(x, y):
    return lax.cond(fnp.sum(y) > 0, lambda a, b: fnp.sin(a) * fnp.sum(b), lambda a, b: a - fnp.cos(b[0]), x, y)


def _switchy(x, y):
    index = fnp.argmax(y).astype(int) % 3
    return lax.switch(index, [lambda a: a * 2.0, lambda a: fnp.exp(a), lambda a: -a], x)


def _halving(x):
    # Halve until every entry is below 0.1 in size: the loop's count depends on x.
    return lax.while_loop(lambda v: fnp.max(fnp.abs(v)) > 0.1, lambda v: v * 0.5 + 0.01 * fnp.sin(v), x)


def _rnn(h, xs):
    return lax.scan(lambda c, x: (fnp.tanh(c * 0.5 + x), c * x), h, xs)


def _halving_loss(x):
    return fnp.sum(_halving(x) ** 2)


def _root(theta):
    # The root of x + 0.3 tanh(theta) sin(x) = 2 sin(theta), elementwise (one root: the slope is at
    # least 0.7), by Newton's method.
    k = 0.3 * fnp.tanh(theta)

    def solve(f, x):
        return lax.fori_loop(0, 30, lambda i, x: x - f(x) / (1.0 + k * fnp.cos(x)), x)

    return lax.custom_root(lambda x: x + k * fnp.sin(x) - 2 * fnp.sin(theta), fnp.zeros_like(theta), solve,
                           lambda g, y: y / g(fnp.ones_like(y)))


def _linear_solve(a, b):
    # A diagonal, positive system whose matrix and right-hand side both vary.
    d = 2.0 + fnp.sin(a)
    return lax.custom_linear_solve(lambda x: d * x, b, lambda mv, b: b / d, symmetric=True)


def _linearized_halving(x):
    # Under jit, linearize keeps the tape and applies the tangents over it.
    return fgrad.jit(lambda x, t: fgrad.linearize(_halving, x)[1](t))(x, fnp.cos(x))


BATCH_CASES = {
    "while_tape": (lambda x: fgrad.jit(fgrad.grad(_halving_loss))(x), [(2,)], "real"),
    "tape_scan": (lambda x: fgrad.jit(lambda x: fgrad.vjp(_halving, x)[1](fnp.sin(x))[0])(x), [(2,)], "real"),
    "tape_scan_forward": (_linearized_halving, [(2,)], "real"),
    "cond": (_branchy, [(3,), (2,)], "real"),
    "switch": (_switchy, [(3,), (3,)], "real"),
    "while": (_halving, [(2,)], "real"),
    "scan": (lambda h, xs: _rnn(h, xs)[0], [(2,), (4, 2)], "real"),
    "custom_root": (_root, [(3,)], "real"),
    "custom_root_gradient": (fgrad.grad(lambda t: fnp.sum(_root(t) ** 2)), [(3,)], "real"),
    "custom_linear_solve": (_linear_solve, [(3,), (3,)], "real"),
    "custom_linear_solve_transposed": (lambda a, b: fnp.concatenate(fgrad.grad(
        lambda a, b: fnp.sum(_linear_solve(a, b) ** 2), argnums=(0, 1))(a, b)), [(3,), (3,)], "real"),
    "scan_ys_reverse": (lambda h, xs: lax.scan(lambda c, x: (c + x, fnp.sin(c) * x), h, xs, reverse=True)[1],
                        [(2,), (3, 2)], "real"),
}


@settings(deadline=None, max_examples=20)
@given(seed=seeds)
def test_cond_and_switch_derivatives(seed):
    x, y = values((3,), "real", seed), values((2,), "real", seed + 1)
    check_grads(lambda x: _branchy(x, y), (x,), order=2)
    check_grads(lambda y: _branchy(x, y), (y,), order=2)
    check_grads(lambda x: _switchy(x, values((3,), "real", seed + 2)), (x,), order=2)


@settings(deadline=None, max_examples=20)
@given(seed=seeds)
def test_while_derivatives(seed):
    x = values((2,), "real", seed)
    check_grads(_halving, (x,), order=2, eps=1e-6)


@settings(deadline=None, max_examples=20)
@given(seed=seeds)
def test_scan_derivatives(seed):
    h, xs = values((2,), "real", seed), values((4, 2), "real", seed + 1)
    check_grads(lambda h, xs: _rnn(h, xs), (h, xs), order=2)
    check_grads(lambda h, xs: lax.scan(lambda c, x: (c * x, fnp.sin(c)), h, xs, reverse=True), (h, xs), order=2)


@settings(deadline=None, max_examples=10)
@given(seed=seeds)
def test_custom_root_and_custom_linear_solve_derivatives(seed):
    theta = values((3,), "real", seed)
    check_grads(_root, (theta,), order=2, atol=1e-6, rtol=1e-6)
    a, b = values((3,), "real", seed + 1), values((3,), "real", seed + 2)
    check_grads(_linear_solve, (a, b), order=2)
    check_grads(fgrad.jit(_linear_solve), (a, b), order=1)


def test_reverse_mode_through_a_newton_iteration_is_the_analytic_derivative():
    def sqrt(a):
        return lax.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12, lambda x: (x + a / x) / 2, a)

    for a in (2.0, 9.0, 0.3):
        assert fgrad.grad(sqrt)(a) == pytest.approx(1 / (2 * np.sqrt(a)), rel=1e-10)


def test_reverse_mode_of_cond_under_jit_and_vmap():
    # cond splits each branch by partial evaluation where its index is not known.
    for y in (np.ones(2), -np.ones(2)):
        loss = lambda x, y: fnp.sum(_branchy(x, y) ** 2)  # noqa: E731
        x = values((3,), "real", 5)
        np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss))(x, y), fgrad.grad(loss)(x, y), rtol=1e-14)
    ys = np.array([[1.0, 1.0], [-1.0, -2.0], [0.5, -0.2]])
    per_example = fgrad.vmap(fgrad.grad(lambda y: fnp.sum(_branchy(np.arange(3.0), y))))(ys)
    looped = [fgrad.grad(lambda y: fnp.sum(_branchy(np.arange(3.0), y)))(y) for y in ys]
    np.testing.assert_allclose(per_example, looped, rtol=1e-14)
    x = np.array([0.3, 0.9, 0.1])
    switch_loss = fgrad.grad(lambda x, y: fnp.sum(_switchy(x, y) ** 2))
    ys = np.stack([np.roll(np.arange(3.0), k) for k in range(3)])  # each example its own branch
    looped = [switch_loss(x, y) for y in ys]
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(switch_loss, in_axes=(None, 0)))(x, ys), looped, rtol=1e-14)
    # scan knows its number of steps: reverse mode under jit unrolls it.
    h, xs = np.ones(2), values((4, 2), "real", 0)
    loss = lambda h, xs: fnp.sum(_rnn(h, xs)[0])  # noqa: E731
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss))(h, xs), fgrad.grad(loss)(h, xs), rtol=1e-14)


def test_checkpoint_in_a_scan_body_recomputes_each_step_in_the_backward_pass():
    step = fgrad.checkpoint(lambda c, x: (fnp.tanh(c * x), c))
    plain = lambda xs: fnp.sum(lax.scan(lambda c, x: (fnp.tanh(c * x), c), np.ones(3), xs)[0])  # noqa: E731
    kept = lambda xs: fnp.sum(lax.scan(step, np.ones(3), xs)[0])  # noqa: E731
    xs = values((5, 3), "real", 2)
    np.testing.assert_allclose(fgrad.grad(kept)(xs), fgrad.grad(plain)(xs), rtol=1e-14)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(kept))(xs), fgrad.grad(plain)(xs), rtol=1e-14)
    jaxpr = fgrad.make_jaxpr(fgrad.grad(kept))(xs)
    # The loop stays a loop: the step's forward in the scan that runs now, its recomputation in the
    # transposed scan, whatever the number of steps.
    assert _count(jaxpr.jaxpr, "checkpoint") == 2 and _count(jaxpr.jaxpr, "scan") == 2
    longer = fgrad.make_jaxpr(fgrad.grad(kept))(np.concatenate([xs] * 10))
    assert len(longer.jaxpr.eqns) == len(jaxpr.jaxpr.eqns)
    # What the forward scan stacks for the backward pass, after its carry and its ys: the
    # checkpoint's input c alone (x is read from xs), not tanh's derivative.
    forward = next(e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan")
    assert [v.aval.shape for v in forward.outvars[2:]] == [(5, 3)]


def _count(jaxpr, name):
    """How many equations of primitive `name` `jaxpr` holds, in its sub-jaxprs too."""
    from fgrad.ir.jaxpr import ClosedJaxpr, sub_jaxprs

    total = 0
    for eqn in jaxpr.eqns:
        total += eqn.primitive.name == name
        for _, sub in sub_jaxprs(eqn):
            total += _count(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub, name)
    return total


def _cond_in_cond(x):
    inner = lambda a: lax.cond(a > 1.0, fnp.sin, fnp.cos, a)  # noqa: E731
    return lax.cond(x > 0, inner, lambda a: a * 2.0, x)


def _cond_in_while(x):
    def body(c):
        i, y = c
        return i + 1, lax.cond(y > 1.0, lambda y: y * 0.5, lambda y: fnp.sin(y) * 1.5 + y, y)
    return lax.while_loop(lambda c: c[0] < 5, body, (0, x))[1]


def _scan_in_cond_in_scan(x):
    def body(c, _):
        grow = lambda y: lax.scan(lambda a, _: (a * 1.1 + fnp.sin(a), None), y, None, length=3)[0]  # noqa: E731
        return lax.cond(c > 1.0, fnp.sin, grow, c), None
    return lax.scan(body, x, None, length=4)[0]


def _while_in_cond_in_fori(x):
    grow = lambda y: lax.while_loop(lambda z: z < 2.0, lambda z: z * z + 1.0, y)  # noqa: E731
    return lax.fori_loop(0, 4, lambda i, y: lax.cond(y > 1.0, fnp.log1p, grow, y), x)


def _checkpoint_and_custom_rule_in_while(x):
    @fgrad.custom_vjp
    def cube(y):
        return y ** 3

    cube.defvjp(lambda y: (y ** 3, y), lambda y, ct: (3 * y ** 2 * ct,))
    body = lambda c: (c[0] + 1, fgrad.checkpoint(fnp.sin)(cube(c[1])) + c[1])  # noqa: E731
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


NESTED = {f.__name__.lstrip("_"): f for f in (
    _cond_in_cond, _cond_in_while, _scan_in_cond_in_scan, _while_in_cond_in_fori,
    _checkpoint_and_custom_rule_in_while)}


@pytest.mark.parametrize("f", NESTED.values(), ids=NESTED.keys())
def test_reverse_mode_of_nested_control_flow_under_jit_and_vmap_matches_finite_differences(f):
    xs = np.array([-0.4, 0.3, 0.7, 1.3, 2.5])
    eps = 1e-6
    want = np.array([(f(x + eps) - f(x - eps)) / (2 * eps) for x in xs])
    eager = np.array([fgrad.grad(f)(x) for x in xs])
    np.testing.assert_allclose(eager, want, rtol=1e-6, atol=1e-7)
    jitted = fgrad.jit(fgrad.grad(f))
    np.testing.assert_allclose([jitted(x) for x in xs], eager, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(f))(xs), eager, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(fgrad.grad(f)))(xs), eager, rtol=1e-13, atol=1e-15)


def _central_differences(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        out.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@settings(deadline=None, max_examples=20)
@given(seed=seeds)
def test_reverse_mode_through_while_under_jit_keeps_a_tape_and_matches_finite_differences(seed):
    x = values((2,), "real", seed)
    got = fgrad.jit(fgrad.grad(_halving_loss))(x)
    np.testing.assert_allclose(got, fgrad.grad(_halving_loss)(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got, _central_differences(_halving_loss, x), rtol=1e-6, atol=1e-8)
    _, want_t = fgrad.jvp(_halving, (x,), (np.cos(x),))
    np.testing.assert_allclose(_linearized_halving(x), want_t, rtol=1e-13, atol=1e-15)
    closed = fgrad.make_jaxpr(fgrad.grad(_halving_loss))(x)
    names = [e.primitive.name for e in closed.eqns]
    assert "while_tape" in names and "tape_scan" in names


def test_reverse_mode_through_while_under_vmap_and_second_order_under_jit():
    def sqrt(a):
        return lax.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12, lambda x: (x + a / x) / 2, a)

    a = np.array([2.0, 9.0, 0.3])
    for g in (fgrad.vmap(fgrad.grad(sqrt)), fgrad.jit(fgrad.vmap(fgrad.grad(sqrt))),
              fgrad.jit(fgrad.grad(lambda a: fnp.sum(fgrad.vmap(sqrt)(a))))):
        np.testing.assert_allclose(g(a), 1 / (2 * np.sqrt(a)), rtol=1e-10)
    for g2 in (fgrad.jit(fgrad.grad(fgrad.grad(sqrt))), fgrad.grad(fgrad.grad(sqrt))):  # tests/lax/test_while_reverse
        assert g2(2.0) == pytest.approx(-0.25 * 2.0 ** -1.5, rel=1e-8)


def test_branch_type_errors_name_the_branches_in_order():
    with pytest.raises(TypeError, match=r"the false branch and the true branch return different types: "
                                        r"the structures differ: PyTreeDef\(\(\*, \*\)\) and PyTreeDef\(\*\)"):
        lax.cond(True, lambda x: x, lambda x: (x, x), 1.0)
    with pytest.raises(TypeError, match=r"branch 0 and branch 1 return different types: leaf 0 is f64\[\] in "
                                        r"one and f64\[2\] in the other"):
        lax.switch(0, [lambda x: x, lambda x: fnp.stack([x, x])], 1.0)


def test_jit_writes_control_flow_as_python_statements_with_the_sub_jaxprs_inline():
    newton = lambda a: lax.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12,  # noqa: E731
                                      lambda x: (x + a / x) / 2, a)
    source = fgrad.jit(newton).lower(2.0).as_text()
    assert "while True:" in source and "break" in source
    assert fgrad.jit(newton)(2.0) == pytest.approx(np.sqrt(2.0), rel=1e-15)
    pick = lambda i, x: lax.switch(i, [fnp.sin, fnp.cos, fnp.exp], x)  # noqa: E731
    source = fgrad.jit(pick).lower(0, 0.5).as_text()
    assert "if " in source and "elif " in source and "else:" in source
    for i in (-3, 0, 1, 2, 7):  # clamped into range
        assert fgrad.jit(pick)(i, 0.5) == pick(i, 0.5)
    # A y that is the carry itself is written into its row before the carry moves on.
    doubling = lambda c: lax.scan(lambda c, _: (c * 2.0, c), c, None, length=4)  # noqa: E731
    source = fgrad.jit(doubling).lower(1.0).as_text()
    assert "for t" in source and "np.empty((4,), 'float64')" in source
    np.testing.assert_array_equal(fgrad.jit(doubling)(1.0)[1], [1.0, 2.0, 4.0, 8.0])
    nested = lambda xs: lax.scan(lambda c, x: (c + lax.cond(x > 0, fnp.sin, fnp.cos, x), c), 0.0, xs)  # noqa: E731
    xs = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(fgrad.jit(nested)(xs)[0], nested(xs)[0], rtol=1e-15)
    np.testing.assert_allclose(fgrad.jit(nested)(xs)[1], nested(xs)[1], rtol=1e-15)
