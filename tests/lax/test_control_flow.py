"""fgrad.lax control flow (cond, switch, select, while_loop, fori_loop, scan,
map, stop_gradient) under every transformation, each against a plain Python
if/loop reference written with fgrad.numpy and evaluated eagerly."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads
from fgrad.tree_util import tree_flatten
from tests.strategies import seeds, values

small = settings(max_examples=20, deadline=None)
shapes = st.sampled_from([(), (3,), (2, 3)])


def assert_tree_close(actual, expected, rtol=1e-10, atol=1e-12):
    a_leaves, a_tree = tree_flatten(actual)
    e_leaves, e_tree = tree_flatten(expected)
    assert a_tree == e_tree, f"structure {a_tree} differs from the expected {e_tree}"
    for a, e in zip(a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"shape {a.shape}, expected {e.shape}"
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def jvp_fn(f):
    """x, t -> jvp(f) at x along t, the function jit is applied to."""
    return lambda x, t: fgrad.jvp(f, (x,), (t,))


def sum_of(f):
    return lambda *args: fnp.sum(f(*args))


# --- references and the functions under test ---------------------------------------


def true_branch(x):
    return fnp.sin(x) * 2.0


def false_branch(x):
    return fnp.cos(x) + x * x


def cond_ref(p, x):
    return true_branch(x) if p else false_branch(x)


def cond_f(p, x):
    return lax.cond(p, true_branch, false_branch, x)


BRANCHES = [fnp.sin, lambda x: x * x * 0.5, lambda x: fnp.exp(-x) + x]


def switch_ref(i, x):
    return BRANCHES[min(max(int(i), 0), len(BRANCHES) - 1)](x)


def switch_f(i, x):
    return lax.switch(i, BRANCHES, x)


def newton_sqrt(a):
    # fnp.max: the predicate must be a scalar, so an array runs until every element converged
    return lax.while_loop(lambda x: fnp.max(fnp.abs(x * x - a)) > 1e-12, lambda x: (x + a / x) / 2, a)


def newton_sqrt_ref(a):
    x = a
    while np.any(np.abs(np.asarray(x * x - a)) > 1e-12):
        x = (x + a / x) / 2
    return x


def power_loop(x, n=5):
    """x ** n by a while loop with a tuple carry (counter, product)."""
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x), (0, fnp.ones_like(x)))


def power_loop_ref(x, n=5):
    i, acc = 0, fnp.ones_like(x)
    while i < n:
        i, acc = i + 1, acc * x
    return i, acc


def fori_body(i, x):
    return x * 0.9 + fnp.sin(x) * i * 0.1


def fori_ref(lower, upper, x):
    for i in range(int(lower), int(upper)):
        x = fori_body(i, x)
    return x


def scan_step(c, x):
    c = c * 0.5 + fnp.sin(x)
    return c, c * x


def scan_ref(f, init, xs, reverse=False, length=None):
    n = length if xs is None else len(xs)
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, [None] * n
    for i in order:
        carry, ys[i] = f(carry, None if xs is None else xs[i])
    return carry, fnp.stack(ys)


def scan_f(init, xs, reverse=False):
    return lax.scan(scan_step, init, xs, reverse=reverse)


def scan_loss(xs, reverse=False):
    carry, ys = lax.scan(scan_step, 0.3, xs, reverse=reverse)
    return carry + fnp.sum(ys * ys)


def scan_loss_ref(xs, reverse=False):
    carry, ys = scan_ref(scan_step, 0.3, xs, reverse=reverse)
    return carry + fnp.sum(ys * ys)


# --- cond ----------------------------------------------------------------------------


@pytest.mark.parametrize("pred", [True, False, 1, 0, np.bool_(True), np.bool_(False), np.int32(3)])
@given(shape=shapes, seed=seeds)
@small
def test_cond_values_eager_and_jit(pred, shape, seed):
    x = values(shape, "real", seed)
    expected = cond_ref(bool(pred), x)
    assert_tree_close(cond_f(pred, x), expected)
    assert_tree_close(fgrad.jit(cond_f)(pred, x), expected)


@given(shape=shapes, seed=seeds)
@small
def test_cond_with_a_predicate_computed_from_the_operand(shape, seed):
    x = values(shape, "real", seed)

    def f(x):
        return lax.cond(fnp.sum(x) > 0, true_branch, false_branch, x)

    expected = cond_ref(np.sum(x) > 0, x)
    assert_tree_close(f(x), expected)
    assert_tree_close(fgrad.jit(f)(x), expected)


def test_cond_eagerly_runs_only_the_chosen_branch(capsys):
    # Both branches may be traced (to check that their outputs agree), but only
    # the chosen one is evaluated: only its print runs, and the other one's NaN
    # is never computed.
    def t(x):
        fgrad.debug.print("true {}", x)
        return x + 1.0

    def f(x):
        fgrad.debug.print("false {}", x)
        return fnp.log(-x)

    with fgrad.debug_nans():
        assert lax.cond(True, t, f, 2.0) == 3.0
        assert capsys.readouterr().out == "true 2.0\n"
        assert lax.cond(np.bool_(True), t, f, 2.0) == 3.0
        assert capsys.readouterr().out == "true 2.0\n"
    assert lax.cond(0, t, f, -1.0) == 0.0
    assert capsys.readouterr().out == "false -1.0\n"
    with fgrad.debug_nans():
        assert lax.switch(1, [f, t, f], 2.0) == 3.0
    assert capsys.readouterr().out == "true 2.0\n"


@pytest.mark.parametrize("pred", [True, False])
def test_cond_pytree_operands_and_outputs_and_closures(pred):
    w = np.array([0.5, -1.5, 2.0])
    a = np.array([1.0, 2.0, 3.0])
    b = {"u": np.array([0.1, 0.2, 0.3]), "v": (np.float64(2.0),)}

    def t(a, b):
        return {"s": a * w + b["u"], "t": (b["v"][0] * fnp.sum(a),)}

    def f(a, b):
        return {"s": a - b["u"] * w, "t": (fnp.max(a) + b["v"][0],)}

    expected = t(a, b) if pred else f(a, b)
    assert_tree_close(lax.cond(pred, t, f, a, b), expected)
    assert_tree_close(fgrad.jit(lambda p, a, b: lax.cond(p, t, f, a, b))(pred, a, b), expected)


def test_cond_with_no_operands():
    w = np.array([1.0, 2.0])
    assert_tree_close(lax.cond(True, lambda: w * 2, lambda: w + 1), w * 2)
    assert_tree_close(fgrad.jit(lambda p: lax.cond(p, lambda: w * 2, lambda: w + 1))(False), w + 1)


@pytest.mark.parametrize("pred", [True, False])
@given(shape=shapes, seed=seeds)
@small
def test_cond_jvp_eager_and_jit(pred, shape, seed):
    x, t = values(shape, "real", seed), values(shape, "real", seed + 1)
    expected = fgrad.jvp(lambda x: cond_ref(pred, x), (x,), (t,))
    assert_tree_close(fgrad.jvp(lambda x: cond_f(pred, x), (x,), (t,)), expected)
    # the predicate computed from the traced input, so cond is staged under jit
    g = lambda x: lax.cond(fnp.sum(x) > -100.0 if pred else fnp.sum(x) > 100.0,  # noqa: E731
                           true_branch, false_branch, x)
    assert_tree_close(fgrad.jit(jvp_fn(g))(x, t), expected)
    assert_tree_close(fgrad.jit(lambda p, x, t: fgrad.jvp(lambda x: cond_f(p, x), (x,), (t,)))(pred, x, t),
                      expected)


@pytest.mark.parametrize("pred", [True, False])
@given(seed=seeds)
@small
def test_cond_grads(pred, seed):
    x = values((3,), "real", seed)
    check_grads(lambda x: cond_f(pred, x), (x,), order=2)
    g = fgrad.grad(sum_of(lambda x: cond_f(pred, x)))(x)
    assert_tree_close(g, fgrad.grad(sum_of(lambda x: cond_ref(pred, x)))(x))


@given(seed=seeds)
@small
def test_cond_grad_with_a_predicate_from_the_input(seed):
    x = values((), "nonzero", seed)
    f = lambda x: lax.cond(x > 0, true_branch, false_branch, x)  # noqa: E731
    check_grads(f, (x,), order=2)
    assert fgrad.grad(f)(x) == pytest.approx(fgrad.grad(lambda x: cond_ref(x > 0, x))(x), rel=1e-12)


@pytest.mark.parametrize("pred", [True, False])
def test_cond_grad_through_closed_over_arrays_and_vjp(pred):
    x = np.array([0.3, -0.4, 1.1])
    w = np.array([2.0, -1.0, 0.5])

    def f(w, x):
        return lax.cond(pred, lambda x: fnp.sin(x * w), lambda x: x * w * w, x)

    def ref(w, x):
        return fnp.sin(x * w) if pred else x * w * w

    got = fgrad.grad(sum_of(f), argnums=(0, 1))(w, x)
    assert_tree_close(got, fgrad.grad(sum_of(ref), argnums=(0, 1))(w, x))
    out, pullback = fgrad.vjp(f, w, x)
    out_ref, pullback_ref = fgrad.vjp(ref, w, x)
    u = np.array([1.0, 2.0, -3.0])
    assert_tree_close(out, out_ref)
    assert_tree_close(pullback(u), pullback_ref(u))
    check_grads(f, (w, x), order=2)


def right(compute, expected):
    """`compute()` equals `expected` (cond splits by partial evaluation and jit
    differentiates a jaxpr holding loops inline: both are supported)."""
    assert_tree_close(compute(), expected)


@pytest.mark.parametrize("x", [0.5, -0.5])
def test_cond_jit_of_grad_equals_eager_grad(x):
    f = lambda x: lax.cond(x > 0, fnp.sin, fnp.cos, x)  # noqa: E731
    right(lambda: fgrad.jit(fgrad.grad(f))(x), np.cos(x) if x > 0 else -np.sin(x))


@given(seed=seeds)
@small
def test_cond_vmap_batched_predicate_and_operand(seed):
    xs = values((5, 3), "real", seed)
    ps = values((5,), "real", seed + 1) > 0
    got = fgrad.vmap(cond_f)(ps, xs)
    expected = fnp.stack([cond_ref(p, x) for p, x in zip(ps, xs)])
    assert_tree_close(got, expected)
    assert_tree_close(fgrad.jit(fgrad.vmap(cond_f))(ps, xs), expected)
    # batched predicate computed from the operand
    h = lambda x: lax.cond(fnp.sum(x) > 0, true_branch, false_branch, x)  # noqa: E731
    assert_tree_close(fgrad.vmap(h)(xs), fnp.stack([cond_ref(np.sum(x) > 0, x) for x in xs]))


def test_cond_vmap_in_axes_variations():
    xs = values((3, 4), "real", 7)
    ps = np.array([True, False, True, False])
    # batched predicate, unbatched operand
    got = fgrad.vmap(cond_f, in_axes=(0, None))(ps, xs[:, 0])
    assert_tree_close(got, fnp.stack([cond_ref(p, xs[:, 0]) for p in ps]))
    # unbatched predicate, operand batched along axis 1
    for p in (True, False):
        got = fgrad.vmap(cond_f, in_axes=(None, 1))(p, xs)
        assert_tree_close(got, fnp.stack([cond_ref(p, xs[:, j]) for j in range(4)]))
    # both batched, operand along axis 1
    got = fgrad.vmap(cond_f, in_axes=(0, 1))(ps, xs)
    assert_tree_close(got, fnp.stack([cond_ref(p, xs[:, j]) for j, p in enumerate(ps)]))


def test_cond_vmap_batched_predicate_with_pytrees_and_grad():
    ps = np.array([True, False, False])
    xs = values((3, 2), "real", 3)
    w = np.array([1.5, -0.5])

    def f(p, x):
        return lax.cond(p, lambda x: {"a": x * w, "b": fnp.sum(x)},
                        lambda x: {"a": fnp.exp(x), "b": fnp.prod(x)}, x)

    def ref(p, x):
        return {"a": x * w, "b": fnp.sum(x)} if p else {"a": fnp.exp(x), "b": fnp.prod(x)}

    got = fgrad.vmap(f)(ps, xs)
    rows = [ref(p, x) for p, x in zip(ps, xs)]
    assert_tree_close(got, {"a": fnp.stack([r["a"] for r in rows]), "b": fnp.stack([r["b"] for r in rows])})

    def loss(xs):
        out = fgrad.vmap(f)(ps, xs)
        return fnp.sum(out["a"] ** 2) + fnp.sum(out["b"])

    def loss_ref(xs):
        return sum(fnp.sum(ref(p, x)["a"] ** 2) + ref(p, x)["b"] for p, x in zip(ps, xs))

    assert_tree_close(fgrad.grad(loss)(xs), fgrad.grad(loss_ref)(xs))


def test_cond_per_example_grad_vmap_of_grad_with_a_batched_predicate():
    # grad inside vmap: JAX computes these per-example gradients
    ps = np.array([True, False, False])
    xs = values((3, 2), "real", 3)
    f = lambda p, x: fnp.sum(cond_f(p, x))  # noqa: E731
    got = fgrad.vmap(fgrad.grad(f, argnums=1))(ps, xs)
    assert_tree_close(got, fnp.stack([fgrad.grad(sum_of(lambda x: cond_ref(p, x)))(x) for p, x in zip(ps, xs)]))


def test_cond_make_jaxpr_shows_cond():
    assert "cond" in str(fgrad.make_jaxpr(cond_f)(True, np.ones(3)))
    assert "cond" in str(fgrad.make_jaxpr(lambda x: lax.cond(x > 0, fnp.sin, fnp.cos, x))(1.0))


# --- cond errors ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["jit", "make_jaxpr"])
@pytest.mark.parametrize("other, pattern", [
    (lambda x: (x, x), r"(?i)struct|tree|tuple"),
    (lambda x: fnp.concatenate([x, x]), r"(?i)shape|\(6,\)|\[6\]"),
    (lambda x: fnp.ones(3, dtype=np.int64), r"(?i)int|i64"),
    (lambda x: x.astype(np.float32), r"(?i)float32|f32"),
])
def test_cond_branches_with_different_outputs_raise_type_error(mode, other, pattern):
    def f(p, x):
        return lax.cond(p, lambda x: x * 2.0, other, x)

    transform = fgrad.jit if mode == "jit" else fgrad.make_jaxpr
    with pytest.raises(TypeError, match=pattern):
        transform(f)(True, np.ones(3))


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("pred, pattern", [
    (np.array([True, False]), r"(?is)^(?=.*scalar)(?=.*(true|bool\[2\]|\(2,\)))"),
    (np.array([True]), r"(?is)^(?=.*scalar)(?=.*(true|bool\[1\]|\(1,\)))"),
    (1.5, r"(?is)^(?=.*bool)(?=.*(1\.5|f64|float))"),
    (np.float64(0.0), r"(?is)^(?=.*bool)(?=.*(0\.0|f64|float))"),
])
def test_cond_predicate_not_a_scalar_boolean_raises_type_error(mode, pred, pattern):
    f = lambda p, x: lax.cond(p, fnp.sin, fnp.cos, x)  # noqa: E731
    if mode == "jit":
        f = fgrad.jit(f)
    with pytest.raises(TypeError, match=pattern):
        f(pred, 1.0)


# --- switch --------------------------------------------------------------------------


@pytest.mark.parametrize("index", [-3, -1, 0, 1, 2, 3, 10, np.int32(1), np.int64(2), np.int64(7)])
@given(shape=shapes, seed=seeds)
@small
def test_switch_values_clamped_eager_and_jit(index, shape, seed):
    x = values(shape, "real", seed)
    expected = switch_ref(index, x)
    assert_tree_close(switch_f(index, x), expected)
    assert_tree_close(fgrad.jit(switch_f)(index, x), expected)


def test_switch_with_one_branch_and_with_pytrees_and_closures():
    x = np.array([0.5, 1.5])
    w = np.array([3.0, -2.0])
    assert_tree_close(lax.switch(4, [lambda x: x * 2.0], x), x * 2.0)
    assert_tree_close(fgrad.jit(lambda i, x: lax.switch(i, [lambda x: x * 2.0], x))(-2, x), x * 2.0)

    branches = [lambda a, b: (a + b["c"], a * w), lambda a, b: (a * b["c"], a - w),
                lambda a, b: (fnp.sin(a), b["c"] * w)]
    b = {"c": np.array([0.25, 0.75])}
    for i in range(-1, 4):
        expected = branches[min(max(i, 0), 2)](x, b)
        assert_tree_close(lax.switch(i, branches, x, b), expected)
        assert_tree_close(fgrad.jit(lambda i, x, b: lax.switch(i, branches, x, b))(i, x, b), expected)


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 5])
@given(seed=seeds)
@small
def test_switch_jvp_and_grads(index, seed):
    x, t = values((3,), "real", seed), values((3,), "real", seed + 1)
    expected = fgrad.jvp(lambda x: switch_ref(index, x), (x,), (t,))
    assert_tree_close(fgrad.jvp(lambda x: switch_f(index, x), (x,), (t,)), expected)
    jitted = fgrad.jit(lambda i, x, t: fgrad.jvp(lambda x: switch_f(i, x), (x,), (t,)))
    assert_tree_close(jitted(index, x, t), expected)
    check_grads(lambda x: switch_f(index, x), (x,), order=2)
    assert_tree_close(fgrad.grad(sum_of(lambda x: switch_f(index, x)))(x),
                      fgrad.grad(sum_of(lambda x: switch_ref(index, x)))(x))


def test_switch_grad_with_an_index_from_the_input_and_vjp():
    x = np.array([0.7, -0.2, 1.3])

    def f(x):
        i = (fnp.sum(x) > 1.0).astype(np.int32) + 1  # 2 here
        return lax.switch(i, BRANCHES, x)

    assert_tree_close(f(x), BRANCHES[2](x))
    out, pullback = fgrad.vjp(f, x)
    _, pullback_ref = fgrad.vjp(BRANCHES[2], x)
    u = np.array([1.0, -2.0, 0.5])
    assert_tree_close(pullback(u), pullback_ref(u))


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 3])
def test_switch_jit_of_grad_equals_eager_grad(index):
    x = np.array([0.5, -1.0, 1.5])
    right(lambda: fgrad.jit(fgrad.grad(lambda x, i: fnp.sum(switch_f(i, x))))(x, index),
                             fgrad.grad(sum_of(lambda x: switch_ref(index, x)))(x))


def test_switch_vmap_batched_index():
    xs = values((6, 2), "real", 11)
    idx = np.array([0, 1, 2, -1, 5, 1])
    expected = fnp.stack([switch_ref(i, x) for i, x in zip(idx, xs)])
    assert_tree_close(fgrad.vmap(switch_f)(idx, xs), expected)
    assert_tree_close(fgrad.jit(fgrad.vmap(switch_f))(idx, xs), expected)
    # batched index, unbatched operand; unbatched index, batched operand (axis 1)
    assert_tree_close(fgrad.vmap(switch_f, in_axes=(0, None))(idx, xs[0]),
                      fnp.stack([switch_ref(i, xs[0]) for i in idx]))
    assert_tree_close(fgrad.vmap(switch_f, in_axes=(None, 1))(2, xs),
                      fnp.stack([switch_ref(2, xs[:, j]) for j in range(2)]))
    # grad through the batched switch
    assert_tree_close(fgrad.grad(lambda xs: fnp.sum(fgrad.vmap(switch_f)(idx, xs)))(xs),
                      fnp.stack([fgrad.grad(sum_of(lambda x: switch_ref(i, x)))(x) for i, x in zip(idx, xs)]))


def test_switch_make_jaxpr_shows_cond():
    assert "cond" in str(fgrad.make_jaxpr(switch_f)(1, np.ones(3)))


@pytest.mark.parametrize("index, pattern", [
    (1.0, r"(?is)^(?=.*int)(?=.*(1\.0|f64|float))"),
    (np.float64(1.0), r"(?is)^(?=.*int)(?=.*(1\.0|f64|float))"),
    (np.array([0, 1]), r"(?is)^(?=.*scalar)(?=.*(\[0, 1\]|i64\[2\]|\(2,\)))"),
])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_switch_index_not_an_integer_scalar_raises_type_error(mode, index, pattern):
    f = fgrad.jit(switch_f) if mode == "jit" else switch_f
    with pytest.raises(TypeError, match=pattern):
        f(index, np.ones(3))


@pytest.mark.parametrize("mode", ["jit", "make_jaxpr"])
@pytest.mark.parametrize("other, pattern", [
    (lambda x: [x], r"(?i)struct|tree|list"),
    (lambda x: x[:2], r"(?i)shape|\(2,\)|\[2\]"),
    (lambda x: fnp.zeros(3, dtype=np.int32), r"(?i)int32|i32"),
])
def test_switch_branches_with_different_outputs_raise_type_error(mode, other, pattern):
    transform = fgrad.jit if mode == "jit" else fgrad.make_jaxpr
    f = lambda i, x: lax.switch(i, [lambda x: x + 1.0, fnp.sin, other], x)  # noqa: E731
    with pytest.raises(TypeError, match=pattern):
        transform(f)(0, np.ones(3))


# --- select --------------------------------------------------------------------------


@given(shape=shapes, seed=seeds)
@small
def test_select_values_derivatives_and_vmap(shape, seed):
    p = values(shape, "real", seed) > 0
    a, b = values(shape, "real", seed + 1), values(shape, "real", seed + 2)
    assert_tree_close(lax.select(p, a, b), np.where(p, a, b))
    assert_tree_close(fgrad.jit(lax.select)(p, a, b), np.where(p, a, b))
    f = lambda a, b: lax.select(p, fnp.sin(a), b * b)  # noqa: E731
    ref = lambda a, b: fnp.where(p, fnp.sin(a), b * b)  # noqa: E731
    assert_tree_close(fgrad.grad(sum_of(f), argnums=(0, 1))(a, b), fgrad.grad(sum_of(ref), argnums=(0, 1))(a, b))
    assert_tree_close(fgrad.jvp(f, (a, b), (b, a)), fgrad.jvp(ref, (a, b), (b, a)))
    check_grads(f, (a, b), order=2)
    ps, As, Bs = np.stack([p, ~p]), np.stack([a, b]), np.stack([b, a])
    assert_tree_close(fgrad.vmap(lax.select)(ps, As, Bs), np.where(ps, As, Bs))


# --- while_loop ----------------------------------------------------------------------


@given(shape=shapes, seed=seeds)
@small
def test_while_newton_sqrt_values_eager_and_jit(shape, seed):
    a = values(shape, "positive", seed)
    expected = newton_sqrt_ref(a)
    assert_tree_close(newton_sqrt(a), expected)
    assert_tree_close(fgrad.jit(newton_sqrt)(a), expected)
    np.testing.assert_allclose(newton_sqrt(a), np.sqrt(a), rtol=1e-12)


@given(seed=seeds)
@small
def test_while_newton_sqrt_derivatives_are_the_analytic_ones(seed):
    a = float(values((), "positive", seed))
    if abs(a - 1.0) < 1e-3:  # the loop would (almost) not run
        a += 0.1
    expected = 1 / (2 * np.sqrt(a))
    assert fgrad.grad(newton_sqrt)(a) == pytest.approx(expected, rel=1e-7)
    _, pullback = fgrad.vjp(newton_sqrt, a)
    assert pullback(1.0)[0] == pytest.approx(expected, rel=1e-7)
    assert fgrad.jvp(newton_sqrt, (a,), (1.0,))[1] == pytest.approx(expected, rel=1e-7)
    assert fgrad.jit(jvp_fn(newton_sqrt))(a, 1.0)[1] == pytest.approx(expected, rel=1e-7)
    check_grads(newton_sqrt, (a,), order=1)


def test_while_newton_sqrt_grad_of_an_array():
    a = np.array([0.5, 2.0, 3.0, 9.0])
    np.testing.assert_allclose(fgrad.grad(sum_of(newton_sqrt))(a), 1 / (2 * np.sqrt(a)), rtol=1e-7)


@given(shape=shapes, seed=seeds)
@small
def test_while_tuple_carry_values_derivatives(shape, seed):
    x, t = values(shape, "real", seed), values(shape, "real", seed + 1)
    expected = power_loop_ref(x)
    assert_tree_close(power_loop(x), expected)
    assert_tree_close(fgrad.jit(power_loop)(x), expected)
    f = lambda x: power_loop(x)[1]  # noqa: E731
    ref = lambda x: power_loop_ref(x)[1]  # noqa: E731
    assert_tree_close(fgrad.jvp(f, (x,), (t,)), fgrad.jvp(ref, (x,), (t,)))
    assert_tree_close(fgrad.jit(jvp_fn(f))(x, t), fgrad.jvp(ref, (x,), (t,)))
    assert_tree_close(fgrad.grad(sum_of(f))(x), 5 * x ** 4)
    check_grads(f, (x,), order=1)


def test_while_dict_carry_closure_and_traced_bound():
    w = np.array([0.5, -1.0, 2.0])

    def f(x, n):
        def body(c):
            return {"i": c["i"] + 1, "x": fnp.sin(c["x"]) * w + c["i"]}
        return lax.while_loop(lambda c: c["i"] < n, body, {"i": 0, "x": x})

    def ref(x, n):
        c = {"i": 0, "x": x}
        while c["i"] < n:
            c = {"i": c["i"] + 1, "x": fnp.sin(c["x"]) * w + c["i"]}
        return c

    x = np.array([0.1, 0.2, 0.3])
    for n in (0, 1, 4):
        assert_tree_close(f(x, n), ref(x, n))
        assert_tree_close(fgrad.jit(f)(x, n), ref(x, n))
        g = fgrad.grad(lambda x: fnp.sum(f(x, n)["x"]))(x)
        assert_tree_close(g, fgrad.grad(lambda x: fnp.sum(ref(x, n)["x"]))(x))
    check_grads(lambda x: f(x, 3)["x"], (x,), order=1)


def test_while_grad_with_respect_to_a_closed_over_array():
    def f(w):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w + 1.0), (0, np.ones(2)))[1]

    w = np.array([0.5, 1.5])
    # c = ((w + 1) w + 1) w + 1 = w^3 + w^2 + w + 1
    assert_tree_close(fgrad.jacobian(f)(w), np.diag(3 * w ** 2 + 2 * w + 1))
    assert_tree_close(fgrad.grad(sum_of(f))(w), 3 * w ** 2 + 2 * w + 1)
    check_grads(f, (w,), order=1)


def test_while_jit_of_grad_keeps_a_tape_and_is_the_analytic_derivative():
    for a in (2.0, 9.0):
        assert fgrad.jit(fgrad.grad(newton_sqrt))(a) == pytest.approx(1 / (2 * np.sqrt(a)), rel=1e-10)


def test_while_vmap_batched_carry():
    a = np.array([0.5, 2.0, 3.0, 10.0])
    expected = fnp.stack([newton_sqrt_ref(ai) for ai in a])
    assert_tree_close(fgrad.vmap(newton_sqrt)(a), expected)
    assert_tree_close(fgrad.jit(fgrad.vmap(newton_sqrt))(a), expected)
    x = values((3, 2), "real", 5)
    assert_tree_close(fgrad.vmap(power_loop)(x), (np.full(3, 5), x ** 5))
    got = fgrad.vmap(lambda x: power_loop(x)[1])(x)
    assert_tree_close(got, x ** 5)
    got = fgrad.vmap(lambda x: power_loop(x)[1], in_axes=1)(x)
    assert_tree_close(got, (x ** 5).T)


def test_while_vmap_batched_predicate_iterates_until_every_member_is_done():
    ns = np.array([0, 3, 1, 5, 2])

    def f(n, x):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x + 1.0), (0, x))

    def ref(n, x):
        i, acc = 0, x
        while i < n:
            i, acc = i + 1, acc * x + 1.0
        return i, acc

    xs = np.array([0.5, 1.5, -0.7, 1.1, 2.0])
    rows = [ref(n, x) for n, x in zip(ns, xs)]
    expected = (np.array([r[0] for r in rows]), fnp.stack([r[1] for r in rows]))
    assert_tree_close(fgrad.vmap(f)(ns, xs), expected)
    assert_tree_close(fgrad.jit(fgrad.vmap(f))(ns, xs), expected)
    # batched bound, unbatched x: every member still equals its own loop
    got = fgrad.vmap(f, in_axes=(0, None))(ns, 1.5)
    assert_tree_close(got, (ns, fnp.stack([ref(n, 1.5)[1] for n in ns])))
    # unbatched bound, batched x
    got = fgrad.vmap(f, in_axes=(None, 0))(3, xs)
    assert_tree_close(got, (np.full(5, 3), fnp.stack([ref(3, x)[1] for x in xs])))
    # newton with a batched tolerance-driven predicate: different iteration counts
    a = np.array([[0.5, 30.0], [1e-3, 4.0]])
    alone = np.array([[newton_sqrt_ref(v) for v in row] for row in a])
    assert_tree_close(fgrad.vmap(fgrad.vmap(newton_sqrt))(a), alone)
    assert_tree_close(fgrad.vmap(newton_sqrt, in_axes=1)(a), alone.T)
    np.testing.assert_allclose(alone, np.sqrt(a), rtol=1e-8)


def test_while_vmap_batched_predicate_jvp_and_grad():
    ns = np.array([0, 3, 1, 5])
    xs = np.array([0.5, 1.5, -0.7, 1.1])

    def f(n, x):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x), (0, fnp.ones_like(x)))[1]

    # f(n, x) = x ** n
    assert_tree_close(fgrad.jvp(lambda xs: fgrad.vmap(f)(ns, xs), (xs,), (np.ones(4),))[1],
                      ns * xs ** np.maximum(ns - 1, 0))
    assert_tree_close(fgrad.grad(lambda xs: fnp.sum(fgrad.vmap(f)(ns, xs)))(xs),
                      ns * xs ** np.maximum(ns - 1, 0))


def test_while_grad_inside_vmap_of_a_batched_predicate():
    # Inside vmap (grad under vmap, not vmap under grad) the condition is a
    # batched tracer: each example keeps its own tape of residuals.
    def f(n, x):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x), (0, fnp.ones_like(x)))[1]

    n, x = np.array([0, 3]), np.array([0.5, 1.5])
    got = fgrad.vmap(fgrad.grad(f, argnums=1))(n, x)
    assert_tree_close(got, n * x ** (n - 1.0))


def test_while_grad_inside_vmap_where_the_condition_becomes_batched_partway():
    # Issue 25: the carry starts unbatched, so the condition is known at the first step, and the body
    # batches it: the rest of the loop goes on a tape (an internal assertion stopped it before).
    def f(x0, x1):
        c = lax.while_loop(lambda c: fnp.logical_and(c[0] < 3, fnp.sum(c[1] * c[1]) < 1.0),
                           lambda c: (c[0] + 1, c[1] * 0.5 + x1), (0, x0))
        return fnp.sum(c[1])

    def plain(x0, x1):  # the same loop on NumPy, for finite differences
        i, y = 0, x0
        while i < 3 and np.sum(y * y) < 1.0:
            i, y = i + 1, y * 0.5 + x1
        return np.sum(y)

    x0, x1 = np.array([0.8]), np.array([[-1.3], [-0.6], [-1.5]])
    expected = (np.array([[0.25], [0.125], [0.5]]), np.array([[1.5], [1.75], [1.0]]))  # vmap(jacfwd)
    assert_tree_close(fgrad.vmap(fgrad.jacfwd(f, argnums=(0, 1)), in_axes=(None, 0))(x0, x1), expected)
    grad = fgrad.vmap(fgrad.grad(f, argnums=(0, 1)), in_axes=(None, 0))
    for got in (grad(x0, x1), fgrad.jit(grad)(x0, x1)):
        assert_tree_close(got, expected)
    h = 1e-6
    for b, x in enumerate(x1):
        fd = [(plain(x0 + h, x) - plain(x0 - h, x)) / (2 * h), (plain(x0, x + h) - plain(x0, x - h)) / (2 * h)]
        np.testing.assert_allclose([expected[0][b, 0], expected[1][b, 0]], fd, rtol=1e-8)

    # Batched from the third step on: two steps differentiated as they run, then the tape.
    def g(x0, x1):
        c = lax.while_loop(lambda c: fnp.logical_and(c[0] < 5, c[2] < 2.0),
                           lambda c: (c[0] + 1, x1 * c[1], c[1] + c[2] * c[2]), (0, x0, x0))
        return c[2]

    def plain_g(x0, x1):
        i, a, b = 0, x0, x0
        while i < 5 and b < 2.0:
            i, a, b = i + 1, x1 * a, a + b * b
        return b

    x0, x1 = 0.5, np.array([0.9, 1.3, 2.5])
    got = fgrad.vmap(fgrad.grad(g, argnums=(0, 1)), in_axes=(None, 0))(x0, x1)
    fd = np.array([[(plain_g(x0 + h, x) - plain_g(x0 - h, x)) / (2 * h),
                    (plain_g(x0, x + h) - plain_g(x0, x - h)) / (2 * h)] for x in x1])
    np.testing.assert_allclose(np.stack(got, axis=1), fd, rtol=1e-7)
    assert_tree_close(got, fgrad.vmap(fgrad.jacfwd(g, argnums=(0, 1)), in_axes=(None, 0))(x0, x1))


def test_while_make_jaxpr_shows_while():
    assert "while" in str(fgrad.make_jaxpr(newton_sqrt)(2.0))
    assert "while" in str(fgrad.make_jaxpr(power_loop)(np.ones(2)))


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("body, pattern", [
    (lambda c: (c[0] + 1,), r"(?i)struct|tree|tuple|carry"),
    (lambda c: [c[0] + 1, c[1]], r"(?i)struct|tree|list|carry"),
    (lambda c: (c[0] + 1, fnp.concatenate([c[1], c[1]])), r"(?i)shape|\(4,\)|\[4\]"),
    (lambda c: (c[0] + 0.5, c[1]), r"(?is)^(?=.*(i64|int))(?=.*(f64|float))"),
    (lambda c: (c[0] + 1, c[1].astype(np.float32)), r"(?i)float32|f32"),
])
def test_while_body_changing_the_carry_raises_type_error(mode, body, pattern):
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, body, (0, x))

    if mode == "jit":
        f = fgrad.jit(f)
    with pytest.raises(TypeError, match=pattern):
        f(np.ones(2))


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("cond_fun, pattern", [
    (lambda x: x > 0, r"(?is)^(?=.*scalar)(?=.*(bool\[2\]|\(2,\)))"),
    (lambda x: fnp.sum(x), r"(?is)^(?=.*bool)(?=.*(f64|float))"),
])
def test_while_cond_fun_not_a_scalar_boolean_raises_type_error(mode, cond_fun, pattern):
    def f(x):
        return lax.while_loop(cond_fun, lambda x: x - 1.0, x)

    if mode == "jit":
        f = fgrad.jit(f)
    with pytest.raises(TypeError, match=pattern):
        f(np.array([2.0, 3.0]))


# --- fori_loop -----------------------------------------------------------------------


@pytest.mark.parametrize("lower, upper", [(0, 5), (2, 6), (3, 3), (5, 2), (-2, 1)])
@given(shape=shapes, seed=seeds)
@small
def test_fori_loop_values_concrete_and_traced_bounds(lower, upper, shape, seed):
    x = values(shape, "real", seed)
    expected = fori_ref(lower, upper, x)
    f = lambda lo, hi, x: lax.fori_loop(lo, hi, fori_body, x)  # noqa: E731
    assert_tree_close(f(lower, upper, x), expected)
    assert_tree_close(f(np.int32(lower), np.int64(upper), x), expected)
    assert_tree_close(fgrad.jit(lambda x: f(lower, upper, x))(x), expected)  # concrete: a scan
    assert_tree_close(fgrad.jit(f)(lower, upper, x), expected)  # traced: a while_loop
    assert_tree_close(fgrad.jit(lambda hi, x: f(lower, hi, x))(upper, x), expected)


def test_fori_loop_pytree_carry_and_closure():
    w = np.array([1.0, -0.5])

    def body(i, c):
        a, (b, d) = c
        return a + i * w, (b * 0.5 + fnp.sum(a), {"k": d["k"] + 1})

    init = (np.zeros(2), (np.float64(1.0), {"k": 0}))
    expected = init
    for i in range(1, 4):
        expected = body(i, expected)
    assert_tree_close(lax.fori_loop(1, 4, body, init), expected)
    assert_tree_close(fgrad.jit(lambda c: lax.fori_loop(1, 4, body, c))(init), expected)
    assert_tree_close(fgrad.jit(lambda n, c: lax.fori_loop(1, n, body, c))(4, init), expected)


@given(seed=seeds)
@small
def test_fori_loop_jvp_and_grads(seed):
    x, t = values((3,), "real", seed), values((3,), "real", seed + 1)
    f = lambda x: lax.fori_loop(0, 4, fori_body, x)  # noqa: E731
    ref = lambda x: fori_ref(0, 4, x)  # noqa: E731
    expected = fgrad.jvp(ref, (x,), (t,))
    assert_tree_close(fgrad.jvp(f, (x,), (t,)), expected)
    assert_tree_close(fgrad.jit(jvp_fn(f))(x, t), expected)
    traced = lambda n, x, t: fgrad.jvp(lambda x: lax.fori_loop(0, n, fori_body, x), (x,), (t,))  # noqa: E731
    assert_tree_close(fgrad.jit(traced)(4, x, t), expected)
    check_grads(f, (x,), order=2)
    assert_tree_close(fgrad.grad(sum_of(f))(x), fgrad.grad(sum_of(ref))(x))


def test_fori_loop_reverse_mode_with_array_bounds_eagerly():
    x = np.array([0.3, -1.2, 0.8])
    ref = fgrad.grad(sum_of(lambda x: fori_ref(1, 5, x)))(x)
    for lo, hi in [(1, 5), (np.int32(1), np.int32(5)), (np.asarray(1), np.asarray(5))]:
        f = lambda x: lax.fori_loop(lo, hi, fori_body, x)  # noqa: E731
        assert_tree_close(fgrad.grad(sum_of(f))(x), ref)
        check_grads(f, (x,), order=2)


def test_fori_loop_reverse_mode_with_traced_bounds_eagerly():
    # under vmap the bound is a tracer, so the loop is a while_loop with a batched predicate
    ns = np.array([0, 2, 5])
    xs = np.array([0.3, -1.2, 0.8])
    f = lambda n, x: lax.fori_loop(0, n, fori_body, x)  # noqa: E731
    expected = fnp.stack([fori_ref(0, n, x) for n, x in zip(ns, xs)])
    assert_tree_close(fgrad.vmap(f)(ns, xs), expected)
    g = fgrad.grad(lambda xs: fnp.sum(fgrad.vmap(f)(ns, xs)))(xs)
    assert_tree_close(g, fnp.stack([fgrad.grad(lambda x: fori_ref(0, n, x))(x) for n, x in zip(ns, xs)]))
    check_grads(lambda xs: fgrad.vmap(f)(ns, xs), (xs,), order=1)


def test_fori_loop_jit_of_grad_with_concrete_bounds_works():
    x = np.array([0.3, -1.2, 0.8])
    f = sum_of(lambda x: lax.fori_loop(0, 4, fori_body, x))
    expected = fgrad.grad(sum_of(lambda x: fori_ref(0, 4, x)))(x)
    assert_tree_close(fgrad.jit(fgrad.grad(f))(x), expected)
    assert_tree_close(fgrad.jit(fgrad.value_and_grad(f))(x), (f(x), expected))


def test_fori_loop_jit_of_grad_with_traced_bounds_equals_eager_grad():
    f = lambda x, n: fnp.sum(lax.fori_loop(0, n, fori_body, x))  # noqa: E731
    x = values((3,), "real", 3)
    assert_tree_close(fgrad.jit(fgrad.grad(f))(x, 4), fgrad.grad(f)(x, 4))


def test_fori_loop_make_jaxpr_scan_for_concrete_bounds_while_for_traced():
    concrete = str(fgrad.make_jaxpr(lambda x: lax.fori_loop(0, 3, fori_body, x))(np.ones(2)))
    assert "scan" in concrete
    traced = str(fgrad.make_jaxpr(lambda n, x: lax.fori_loop(0, n, fori_body, x))(3, np.ones(2)))
    assert "while" in traced


@pytest.mark.parametrize("mode", ["eager", "jit", "traced"])
@pytest.mark.parametrize("body, pattern", [
    (lambda i, c: (c, c), r"(?i)struct|tree|tuple|carry"),
    (lambda i, c: c[:1], r"(?i)shape|\(1,\)|\[1\]"),
    (lambda i, c: c.astype(np.float32), r"(?i)float32|f32"),
    (lambda i, c: c * 1j, r"(?i)complex|c128"),
])
def test_fori_loop_body_changing_the_carry_raises_type_error(mode, body, pattern):
    x = np.ones(2)
    with pytest.raises(TypeError, match=pattern):
        if mode == "eager":
            lax.fori_loop(0, 3, body, x)
        elif mode == "jit":
            fgrad.jit(lambda x: lax.fori_loop(0, 3, body, x))(x)
        else:
            fgrad.jit(lambda n, x: lax.fori_loop(0, n, body, x))(3, x)


def test_fori_loop_int_carry_becoming_float_raises_type_error():
    with pytest.raises(TypeError, match=r"(?is)^(?=.*(i64|int))(?=.*(f64|float))"):
        fgrad.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c + 0.5, x))(np.zeros(2, dtype=np.int64))


# --- scan ----------------------------------------------------------------------------


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3])
@given(length=st.integers(1, 5), shape=st.sampled_from([(), (2,)]), seed=seeds)
@small
def test_scan_values_eager_and_jit(reverse, unroll, length, shape, seed):
    xs = values((length, *shape), "real", seed)
    init = values(shape, "real", seed + 1)
    expected = scan_ref(scan_step, init, xs, reverse=reverse)
    f = lambda init, xs: lax.scan(scan_step, init, xs, reverse=reverse, unroll=unroll)  # noqa: E731
    assert_tree_close(f(init, xs), expected)
    assert_tree_close(fgrad.jit(f)(init, xs), expected)


def test_scan_xs_none_with_length():
    carry, ys = lax.scan(lambda c, _: (c * 2.0, c), 1.0, None, length=4)
    assert carry == 16.0
    assert_tree_close(ys, np.array([1.0, 2.0, 4.0, 8.0]))
    carry, ys = fgrad.jit(lambda c: lax.scan(lambda c, x: (c * 2.0, c), c, None, length=4))(1.0)
    assert carry == 16.0
    assert_tree_close(ys, np.array([1.0, 2.0, 4.0, 8.0]))
    carry, ys = lax.scan(lambda c, x: (c * 2.0, c), 1.0, None, length=3, reverse=True)
    assert_tree_close((carry, ys), (8.0, np.array([4.0, 2.0, 1.0])))


def test_scan_pytree_carry_xs_and_ys_and_closures():
    w = np.array([0.5, -1.0])

    def step(c, x):
        a, d = c
        a = a * w + x["u"]
        d = {"s": d["s"] + fnp.sum(a * x["v"][0])}
        return (a, d), {"a": a, "pair": (d["s"], fnp.sin(x["u"]))}

    xs = {"u": values((4, 2), "real", 1), "v": (values((4, 2), "real", 2),)}
    init = (np.zeros(2), {"s": np.float64(0.0)})
    carry, ys_list = init, []
    for i in range(4):
        carry, y = step(carry, {"u": xs["u"][i], "v": (xs["v"][0][i],)})
        ys_list.append(y)
    expected_ys = {"a": fnp.stack([y["a"] for y in ys_list]),
                   "pair": (fnp.stack([y["pair"][0] for y in ys_list]),
                            fnp.stack([y["pair"][1] for y in ys_list]))}
    f = lambda init, xs: lax.scan(step, init, xs)  # noqa: E731
    for g in (f, fgrad.jit(f)):
        assert_tree_close(g(init, xs), (carry, expected_ys))


def test_scan_with_none_ys_and_tuple_xs():
    xs = (np.arange(4.0), np.arange(4.0) * 2)
    carry, ys = lax.scan(lambda c, x: (c + x[0] * x[1], None), 0.0, xs)
    assert carry == pytest.approx(2 * (0 + 1 + 4 + 9))
    assert ys is None
    carry, ys = fgrad.jit(lambda xs: lax.scan(lambda c, x: (c + x[0] * x[1], None), 0.0, xs))(xs)
    assert carry == pytest.approx(28.0)
    assert ys is None


@pytest.mark.parametrize("reverse", [False, True])
@given(seed=seeds)
@small
def test_scan_jvp_eager_and_jit(reverse, seed):
    xs, t = values((4, 2), "real", seed), values((4, 2), "real", seed + 1)
    f = lambda xs: scan_f(np.full(2, 0.3), xs, reverse=reverse)  # noqa: E731
    expected = fgrad.jvp(lambda xs: scan_ref(scan_step, np.full(2, 0.3), xs, reverse=reverse), (xs,), (t,))
    assert_tree_close(fgrad.jvp(f, (xs,), (t,)), expected)
    assert_tree_close(fgrad.jit(jvp_fn(f))(xs, t), expected)


@pytest.mark.parametrize("reverse", [False, True])
@given(seed=seeds)
@small
def test_scan_grads(reverse, seed):
    xs = values((4,), "real", seed)
    check_grads(lambda xs: scan_loss(xs, reverse), (xs,), order=2)
    check_grads(lambda init, xs: scan_f(init, xs, reverse), (0.7, xs), order=2)
    expected = fgrad.grad(lambda xs: scan_loss_ref(xs, reverse))(xs)
    assert_tree_close(fgrad.grad(lambda xs: scan_loss(xs, reverse))(xs), expected)
    out, pullback = fgrad.vjp(lambda init, xs: scan_f(init, xs, reverse), 0.7, xs)
    out_ref, pullback_ref = fgrad.vjp(lambda init, xs: scan_ref(scan_step, init, xs, reverse), 0.7, xs)
    ct = (np.float64(1.5), np.arange(4.0))
    assert_tree_close(out, out_ref)
    assert_tree_close(pullback(ct), pullback_ref(ct))


def test_scan_grad_with_respect_to_closed_over_array_and_init():
    xs = values((5, 3), "real", 4)

    def loss(w, h0, xs):
        carry, ys = lax.scan(lambda h, x: (fnp.tanh(h * w + x), fnp.sum(h * w)), h0, xs)
        return fnp.sum(carry) + fnp.sum(ys ** 2)

    def loss_ref(w, h0, xs):
        carry, ys = scan_ref(lambda h, x: (fnp.tanh(h * w + x), fnp.sum(h * w)), h0, xs)
        return fnp.sum(carry) + fnp.sum(ys ** 2)

    w, h0 = np.array([0.5, -0.3, 1.2]), np.array([0.1, 0.0, -0.2])
    got = fgrad.grad(loss, argnums=(0, 1, 2))(w, h0, xs)
    expected = fgrad.grad(loss_ref, argnums=(0, 1, 2))(w, h0, xs)
    assert_tree_close(got, expected)
    assert_tree_close(fgrad.jit(fgrad.grad(loss, argnums=(0, 1, 2)))(w, h0, xs), expected)
    check_grads(loss, (w, h0, xs), order=2)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_jit_of_grad_works(reverse):
    xs = values((6,), "real", 9)
    expected = fgrad.grad(lambda xs: scan_loss_ref(xs, reverse))(xs)
    assert_tree_close(fgrad.jit(fgrad.grad(lambda xs: scan_loss(xs, reverse)))(xs), expected)
    f = lambda init, xs: fnp.sum(lax.scan(scan_step, init, xs, reverse=reverse, unroll=2)[1])  # noqa: E731
    ref = lambda init, xs: fnp.sum(scan_ref(scan_step, init, xs, reverse)[1])  # noqa: E731
    assert_tree_close(fgrad.jit(fgrad.grad(f, argnums=(0, 1)))(0.2, xs), fgrad.grad(ref, argnums=(0, 1))(0.2, xs))


def test_scan_vmap_batched_xs_init_and_closure():
    xs = values((3, 5), "real", 21)  # batch 3, length 5
    inits = values((3,), "real", 22)
    f = lambda init, xs: scan_f(init, xs)  # noqa: E731

    def stacked(rows):
        return fnp.stack([r[0] for r in rows]), fnp.stack([r[1] for r in rows])

    # batched init and xs
    expected = stacked([scan_ref(scan_step, i, x) for i, x in zip(inits, xs)])
    assert_tree_close(fgrad.vmap(f)(inits, xs), expected)
    assert_tree_close(fgrad.jit(fgrad.vmap(f))(inits, xs), expected)
    # unbatched init, batched xs
    assert_tree_close(fgrad.vmap(f, in_axes=(None, 0))(0.3, xs),
                      stacked([scan_ref(scan_step, 0.3, x) for x in xs]))
    # batched init, unbatched xs
    assert_tree_close(fgrad.vmap(f, in_axes=(0, None))(inits, xs[0]),
                      stacked([scan_ref(scan_step, i, xs[0]) for i in inits]))
    # xs batched along axis 1: member j scans over xs.T[j]
    assert_tree_close(fgrad.vmap(f, in_axes=(None, 1))(0.3, xs.T),
                      stacked([scan_ref(scan_step, 0.3, x) for x in xs]))
    # batched closed-over value
    ws = np.array([0.5, -1.0, 2.0])
    g = lambda w: lax.scan(lambda c, x: (c * w + x, c * x), 0.1, xs[0])  # noqa: E731
    assert_tree_close(fgrad.vmap(g)(ws),
                      stacked([scan_ref(lambda c, x: (c * w + x, c * x), 0.1, xs[0]) for w in ws]))


def test_scan_vmap_out_axes_and_reverse():
    xs = values((2, 4), "real", 31)
    f = lambda xs: scan_f(0.3, xs, reverse=True)  # noqa: E731
    carry, ys = fgrad.vmap(f, out_axes=(0, 1))(xs)
    rows = [scan_ref(scan_step, 0.3, x, reverse=True) for x in xs]
    assert_tree_close((carry, ys), (fnp.stack([r[0] for r in rows]), fnp.stack([r[1] for r in rows], axis=1)))


def test_scan_make_jaxpr_shows_scan():
    assert "scan" in str(fgrad.make_jaxpr(lambda xs: scan_f(0.0, xs))(np.ones(3)))
    assert "scan" in str(fgrad.make_jaxpr(lambda xs: scan_f(0.0, xs, reverse=True))(np.ones(3)))


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("step, pattern", [
    (lambda c, x: ((c, c), x), r"(?i)struct|tree|tuple|carry"),
    (lambda c, x: (fnp.concatenate([c, c]), x), r"(?i)shape|\(4,\)|\[4\]"),
    (lambda c, x: (c.astype(np.float32), x), r"(?i)float32|f32"),
])
def test_scan_body_changing_the_carry_raises_type_error(mode, step, pattern):
    f = lambda init, xs: lax.scan(step, init, xs)  # noqa: E731
    if mode == "jit":
        f = fgrad.jit(f)
    with pytest.raises(TypeError, match=pattern):
        f(np.ones(2), np.ones((3, 2)))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_scan_xs_with_different_leading_lengths_raises_value_error(mode):
    f = lambda xs: lax.scan(lambda c, x: (c + x[0] + x[1], None), 0.0, xs)  # noqa: E731
    if mode == "jit":
        f = fgrad.jit(f)
    with pytest.raises(ValueError, match=r"(?is)^(?=.*length)(?=.*3)(?=.*4)"):
        f((np.ones(3), np.ones(4)))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_scan_length_disagreeing_with_xs_raises_value_error(mode):
    f = lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs, length=5)  # noqa: E731
    if mode == "jit":
        f = fgrad.jit(f)
    with pytest.raises(ValueError, match=r"(?is)^(?=.*length)(?=.*5)(?=.*3)"):
        f(np.ones(3))


def test_scan_without_xs_or_length_raises_value_error():
    with pytest.raises(ValueError, match=r"(?i)length"):
        lax.scan(lambda c, x: (c, c), 0.0, None)


# --- map -----------------------------------------------------------------------------


@given(shape=st.sampled_from([(3,), (4, 2)]), seed=seeds)
@small
def test_map_values_derivatives_and_vmap(shape, seed):
    xs, t = values(shape, "real", seed), values(shape, "real", seed + 1)
    w = np.float64(0.7)
    f = lambda x: fnp.sin(x) * w + x ** 2  # noqa: E731
    ref = lambda xs: fnp.stack([f(x) for x in xs])  # noqa: E731
    m = lambda xs: lax.map(f, xs)  # noqa: E731
    assert_tree_close(m(xs), ref(xs))
    assert_tree_close(fgrad.jit(m)(xs), ref(xs))
    assert_tree_close(fgrad.jvp(m, (xs,), (t,)), fgrad.jvp(ref, (xs,), (t,)))
    assert_tree_close(fgrad.jit(jvp_fn(m))(xs, t), fgrad.jvp(ref, (xs,), (t,)))
    assert_tree_close(fgrad.grad(sum_of(m))(xs), fgrad.grad(sum_of(ref))(xs))
    assert_tree_close(fgrad.jit(fgrad.grad(sum_of(m)))(xs), fgrad.grad(sum_of(ref))(xs))
    check_grads(m, (xs,), order=2)
    batch = np.stack([xs, xs * 2])
    assert_tree_close(fgrad.vmap(m)(batch), np.stack([ref(xs), ref(xs * 2)]))


def test_map_pytrees_and_make_jaxpr():
    xs = {"a": np.arange(3.0), "b": (np.ones((3, 2)),)}
    got = lax.map(lambda x: (x["a"] * x["b"][0], fnp.sum(x["b"][0])), xs)
    assert_tree_close(got, (np.arange(3.0)[:, None] * np.ones((3, 2)), np.full(3, 2.0)))
    assert "scan" in str(fgrad.make_jaxpr(lambda xs: lax.map(fnp.sin, xs))(np.ones(3)))


# --- stop_gradient -------------------------------------------------------------------


def test_stop_gradient():
    x = np.array([0.5, -1.0])
    assert_tree_close(lax.stop_gradient(x), x)
    assert_tree_close(fgrad.grad(lambda x: fnp.sum(x * lax.stop_gradient(x)))(x), x)
    assert_tree_close(fgrad.jvp(lambda x: lax.stop_gradient(x * 2.0), (x,), (x,)), (2 * x, np.zeros(2)))
    assert_tree_close(fgrad.jit(fgrad.grad(lambda x: fnp.sum(x * lax.stop_gradient(x))))(x), x)
    tree = {"a": x, "b": (x * 3.0,)}
    assert_tree_close(lax.stop_gradient(tree), tree)
    g = fgrad.grad(lambda x: fnp.sum(lax.stop_gradient({"a": x})["a"] * x))(x)
    assert_tree_close(g, x)
    assert_tree_close(fgrad.vmap(fgrad.grad(lambda x: x * lax.stop_gradient(x)))(x), x)


# --- nestings ------------------------------------------------------------------------


def test_scan_inside_scan():
    xs = values((3, 4), "real", 41)

    def inner(c, x):
        return c * 0.5 + x, c * x

    def outer(c, row):
        c2, ys = lax.scan(inner, c, row)
        return c2 + fnp.sum(ys), ys

    def outer_ref(c, row):
        c2, ys = scan_ref(inner, c, row)
        return c2 + fnp.sum(ys), ys

    f = lambda init, xs: lax.scan(outer, init, xs)  # noqa: E731
    ref = lambda init, xs: scan_ref(outer_ref, init, xs)  # noqa: E731
    assert_tree_close(f(0.2, xs), ref(0.2, xs))
    assert_tree_close(fgrad.jit(f)(0.2, xs), ref(0.2, xs))
    loss = lambda xs: fnp.sum(f(0.2, xs)[1] ** 2)  # noqa: E731
    loss_ref = lambda xs: fnp.sum(ref(0.2, xs)[1] ** 2)  # noqa: E731
    assert_tree_close(fgrad.grad(loss)(xs), fgrad.grad(loss_ref)(xs))
    assert_tree_close(fgrad.jit(fgrad.grad(loss))(xs), fgrad.grad(loss_ref)(xs))
    check_grads(lambda xs: f(0.2, xs), (xs,), order=2)
    assert_tree_close(fgrad.vmap(f, in_axes=(None, 0))(0.2, np.stack([xs, -xs])),
                      tuple(fnp.stack(r) for r in zip(ref(0.2, xs), ref(0.2, -xs))))
    assert str(fgrad.make_jaxpr(lambda xs: f(0.2, xs))(xs)).count("scan") >= 2


def test_cond_inside_while_loop():
    def body(c):
        i, x = c
        x = lax.cond(i % 2 == 0, lambda x: x * 2.0, lambda x: fnp.sin(x) + 1.0, x)
        return i + 1, x

    def f(x, n=5):
        return lax.while_loop(lambda c: c[0] < n, body, (0, x))

    def ref(x, n=5):
        i = 0
        while i < n:
            x = x * 2.0 if i % 2 == 0 else fnp.sin(x) + 1.0
            i += 1
        return i, x

    x = np.array([0.3, -0.8])
    assert_tree_close(f(x), ref(x))
    assert_tree_close(fgrad.jit(f)(x), ref(x))
    assert_tree_close(fgrad.jit(f, static_argnums=1)(x, 4), ref(x, 4))
    assert_tree_close(fgrad.vmap(f)(np.stack([x, -x])), tuple(fnp.stack(r) for r in zip(ref(x), ref(-x))))
    assert_tree_close(fgrad.grad(lambda x: fnp.sum(f(x)[1]))(x), fgrad.grad(lambda x: fnp.sum(ref(x)[1]))(x))
    assert_tree_close(fgrad.jvp(lambda x: f(x)[1], (x,), (np.ones(2),)),
                      fgrad.jvp(lambda x: ref(x)[1], (x,), (np.ones(2),)))
    assert "while" in str(fgrad.make_jaxpr(f)(x))


def test_while_inside_scan_and_cond_inside_scan():
    def step(c, a):
        r = newton_sqrt(a)
        c = lax.cond(r > 1.0, lambda c: c + r, lambda c: c - r, c)
        return c, r

    def step_ref(c, a):
        r = np.sqrt(a)
        return (c + r if r > 1.0 else c - r), r

    xs = np.array([0.5, 2.0, 3.0, 0.7])
    expected = scan_ref(step_ref, 0.0, xs)
    assert_tree_close(lax.scan(step, 0.0, xs), expected, rtol=1e-10)
    assert_tree_close(fgrad.jit(lambda xs: lax.scan(step, 0.0, xs))(xs), expected, rtol=1e-10)


def test_per_example_gradients_vmap_of_grad_of_scan_and_grad_of_vmap():
    X = values((4, 5), "real", 51)  # 4 sequences of length 5
    w = np.array(0.6)

    def loss(w, xs):
        carry, ys = lax.scan(lambda h, x: (fnp.tanh(w * h + x), h * w), 0.0, xs)
        return carry ** 2 + fnp.sum(ys)

    def loss_ref(w, xs):
        carry, ys = scan_ref(lambda h, x: (fnp.tanh(w * h + x), h * w), 0.0, xs)
        return carry ** 2 + fnp.sum(ys)

    per_example = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0))(w, X)
    expected = fnp.stack([fgrad.grad(loss_ref)(w, xs) for xs in X])
    assert_tree_close(per_example, expected)
    assert_tree_close(fgrad.jit(fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0)))(w, X), expected)
    total = fgrad.grad(lambda w: fnp.sum(fgrad.vmap(loss, in_axes=(None, 0))(w, X)))(w)
    assert total == pytest.approx(float(np.sum(expected)), rel=1e-10)
    # gradients with respect to the batched sequences
    got = fgrad.grad(lambda X: fnp.sum(fgrad.vmap(loss, in_axes=(None, 0))(w, X)))(X)
    assert_tree_close(got, fnp.stack([fgrad.grad(loss_ref, argnums=1)(w, xs) for xs in X]))


def test_hessian_through_scan():
    xs = values((3,), "real", 61)

    def f(p):
        carry, ys = lax.scan(lambda c, x: (fnp.sin(c * p[0] + x) * p[1], c * p[0]), 0.5, xs)
        return carry + fnp.sum(ys ** 2)

    def ref(p):
        carry, ys = scan_ref(lambda c, x: (fnp.sin(c * p[0] + x) * p[1], c * p[0]), 0.5, xs)
        return carry + fnp.sum(ys ** 2)

    p = np.array([0.8, -1.3])
    H = fgrad.hessian(f)(p)
    assert_tree_close(H, fgrad.hessian(ref)(p), rtol=1e-9, atol=1e-10)
    assert_tree_close(H, H.T, rtol=1e-9, atol=1e-10)
    assert_tree_close(fgrad.jit(fgrad.hessian(f))(p), fgrad.hessian(ref)(p), rtol=1e-9, atol=1e-10)


def test_fori_loop_inside_jit_and_jit_inside_fori_loop():
    def g(x):
        return lax.fori_loop(0, 3, lambda i, x: fnp.sin(x) + i, x) * 2.0

    f = fgrad.jit(g)

    def ref(x):
        for i in range(3):
            x = fnp.sin(x) + i
        return x * 2.0

    x = np.array([0.1, 0.9])
    assert_tree_close(f(x), ref(x))
    assert_tree_close(f(-x), ref(-x))  # cached
    assert_tree_close(fgrad.jit(fgrad.grad(sum_of(g)))(x), fgrad.grad(sum_of(ref))(x))
    assert_tree_close(fgrad.jit(fgrad.vmap(g))(np.stack([x, -x])), np.stack([ref(x), ref(-x)]))
    inner = fgrad.jit(lambda x: fnp.sin(x) * 0.5)
    assert_tree_close(lax.fori_loop(0, 4, lambda i, x: inner(x) + i, x),
                      fori_ref_with(lambda i, x: fnp.sin(x) * 0.5 + i, 0, 4, x))


def fori_ref_with(body, lower, upper, x):
    for i in range(lower, upper):
        x = body(i, x)
    return x


@pytest.mark.parametrize("reverse", [False, True])
def test_grad_and_vjp_of_jit_of_scan(reverse):
    xs = values((5,), "real", 71)
    expected = fgrad.grad(lambda xs: scan_loss_ref(xs, reverse))(xs)
    jitted = fgrad.jit(lambda xs: scan_loss(xs, reverse))
    assert_tree_close(jitted(xs), scan_loss_ref(xs, reverse))
    assert_tree_close(fgrad.jvp(jitted, (xs,), (np.ones(5),)),
                      fgrad.jvp(lambda xs: scan_loss_ref(xs, reverse), (xs,), (np.ones(5),)))
    assert_tree_close(fgrad.grad(jitted)(xs), expected)
    check_grads(jitted, (xs,), order=2)


@pytest.mark.parametrize("name", ["cond", "switch", "while_loop", "fori_loop"])
def test_grad_of_jit_of_cond_and_while_is_right(name):
    fs = {
        "cond": (lambda x: lax.cond(x > 0, fnp.sin, fnp.cos, x), np.cos),
        "switch": (lambda x: lax.switch((x > 0).astype(np.int32), [fnp.cos, fnp.sin], x), np.cos),
        "while_loop": (lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),
                                                (0, x))[1], lambda x: 4 * x ** 3),
        "fori_loop": (lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, x), lambda x: 4 * x ** 3),
    }
    f, df = fs[name]
    right(lambda: fgrad.grad(fgrad.jit(f))(0.5), df(0.5))


# --- further cases -------------------------------------------------------------------


def test_while_vmap_batched_predicate_with_an_unbatched_carry():
    # the carry starts unbatched; the batched bound makes it batched
    ns = np.array([0, 3, 1])
    assert_tree_close(fgrad.vmap(lambda n: lax.while_loop(lambda i: i < n, lambda i: i + 1, 0))(ns), ns)
    got = fgrad.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0)))(ns)
    assert_tree_close(got, (ns, 2.0 ** ns))


def test_higher_derivatives_through_while_loop_eagerly():
    a = 2.0
    assert fgrad.hessian(newton_sqrt)(a) == pytest.approx(-0.25 * a ** -1.5, rel=1e-7)
    assert fgrad.grad(fgrad.grad(newton_sqrt))(a) == pytest.approx(-0.25 * a ** -1.5, rel=1e-7)
    f = lambda x: power_loop(x, 3)[1]  # noqa: E731
    assert fgrad.grad(fgrad.grad(f))(0.7) == pytest.approx(6 * 0.7, rel=1e-12)
    check_grads(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * fnp.sin(x)), (0, x))[1],
                (0.7,), order=2)


def test_scan_of_length_zero():
    f = lambda xs: lax.scan(lambda c, x: (c + x, c * x), np.ones(2), xs)  # noqa: E731
    for g in (f, fgrad.jit(f)):
        assert_tree_close(g(np.zeros((0, 2))), (np.ones(2), np.zeros((0, 2))))


def test_jacobians_of_scan():
    xs = np.arange(1.0, 4.0)
    f = lambda xs: lax.scan(lambda c, x: (c * x, fnp.sin(c)), 1.0, xs)[1]  # noqa: E731
    ref = lambda xs: scan_ref(lambda c, x: (c * x, fnp.sin(c)), 1.0, xs)[1]  # noqa: E731
    expected = fgrad.jacfwd(ref)(xs)
    assert_tree_close(fgrad.jacfwd(f)(xs), expected)
    assert_tree_close(fgrad.jacrev(f)(xs), expected)
    assert_tree_close(fgrad.jit(fgrad.jacrev(f))(xs), expected)


def test_fori_loop_with_a_traced_lower_bound():
    f = lambda lo, x: lax.fori_loop(lo, 4, fori_body, x)  # noqa: E731
    x = np.array([0.2, -0.4])
    for lo in (-1, 0, 2, 5):
        assert_tree_close(fgrad.jit(f)(lo, x), fori_ref(lo, 4, x))
    assert "while" in str(fgrad.make_jaxpr(f)(1, x))


def test_switch_with_no_branches_raises_value_error():
    with pytest.raises(ValueError, match=r"(?i)branch"):
        lax.switch(0, [], 1.0)


def test_select_predicate_not_boolean_raises_type_error():
    with pytest.raises(TypeError, match=r"(?is)^(?=.*bool)(?=.*(f64|float))"):
        lax.select(np.ones(2), np.ones(2), np.zeros(2))
