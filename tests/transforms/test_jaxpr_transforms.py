"""The jaxpr-to-jaxpr transforms higher-order primitives are built on:
`jvp_jaxpr`, `batch_jaxpr`, `partial_eval_jaxpr` and `transpose_jaxpr`.

Each is applied to jaxprs of multi-input, multi-output functions, its result
type-checked and evaluated, and compared with closed forms in NumPy, a loop
over examples, or another transform; over shapes drawn with hypothesis (0-d
and broadcasting included) where the function allows it.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.ir.check import check_jaxpr
from fgrad.ir.evaluate import eval_jaxpr
from fgrad.ir.jaxpr import Var
from fgrad.ir.passes import dce_closed_jaxpr
from fgrad.transforms.batching import batch_jaxpr
from fgrad.transforms.forward import jvp_jaxpr
from fgrad.transforms.partial_eval import partial_eval_jaxpr
from fgrad.transforms.reverse import transpose_jaxpr
from tests.strategies import broadcast_pairs, seeds, values


def _run(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _close(got, want):
    assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _zeros_or(t, shape):
    return np.zeros(shape) if t is None else t


# The function most tests use: output 0 depends on both inputs, 1 on x only,
# 2 on y only; x and y broadcast together.
def f(x, y):
    return fnp.sin(x) * y, fnp.exp(x), y * y + 1.0


def f_np(x, y):
    return np.sin(x) * y, np.exp(x), y * y + 1.0


def f_tangents(x, y, tx, ty):
    """The closed form of f's jvp; None tangents are zero."""
    tx, ty = _zeros_or(tx, np.shape(x)), _zeros_or(ty, np.shape(y))
    return np.cos(x) * tx * y + np.sin(x) * ty, np.exp(x) * tx, 2 * y * ty


DEPENDS = ((True, True), (True, False), (False, True))  # DEPENDS[k][i]: output k on input i

bools = st.booleans()


def _flags(n):
    return st.one_of(bools, st.tuples(*[bools] * n))


def _as_tuple(flags, n):
    return (flags,) * n if isinstance(flags, bool) else flags


def _f_jaxpr(x_shape, y_shape):
    return fgrad.make_jaxpr(f)(np.ones(x_shape), np.ones(y_shape))


# --- jvp_jaxpr ----------------------------------------------------------------------


@given(broadcast_pairs(), st.tuples(bools, bools), _flags(3), seeds)
def test_jvp_jaxpr_evaluated_equals_the_closed_form_and_jvp(shapes, nonzeros, instantiate, seed):
    (sx, sy) = shapes
    closed = _f_jaxpr(sx, sy)
    jaxpr, out_nonzeros = jvp_jaxpr(closed, nonzeros, instantiate)
    check_jaxpr(jaxpr)
    inst = _as_tuple(instantiate, 3)
    expected_nz = tuple(any(n and d for n, d in zip(nonzeros, dep)) or i for dep, i in zip(DEPENDS, inst))
    assert out_nonzeros == expected_nz

    x, y = values(sx, "real", seed), values(sy, "real", seed + 1)
    tx, ty = values(sx, "real", seed + 2), values(sy, "real", seed + 3)
    tangents = [t for t, nz in zip((tx, ty), nonzeros) if nz]
    outs = _run(jaxpr, x, y, *tangents)
    assert len(outs) == 3 + sum(expected_nz)
    for got, want in zip(outs[:3], f_np(x, y)):
        _close(got, want)

    tx_or_none, ty_or_none = (tx if nonzeros[0] else None), (ty if nonzeros[1] else None)
    closed_form = f_tangents(x, y, tx_or_none, ty_or_none)
    _, via_jvp = fgrad.jvp(f, (x, y), (_zeros_or(tx_or_none, sx), _zeros_or(ty_or_none, sy)))
    got_tangents = iter(outs[3:])
    for k, nz in enumerate(expected_nz):
        if not nz:
            continue
        t = next(got_tangents)
        _close(t, closed_form[k])
        _close(t, via_jvp[k])
        if not any(n and d for n, d in zip(nonzeros, DEPENDS[k])):  # instantiated: zeros
            assert not np.any(t)


def test_jvp_jaxpr_leaves_out_zero_tangents_it_is_not_asked_to_instantiate():
    closed = _f_jaxpr((3,), (3,))
    jaxpr, out_nonzeros = jvp_jaxpr(closed, (True, False), False)
    check_jaxpr(jaxpr)
    assert out_nonzeros == (True, True, False)
    assert len(jaxpr.in_avals) == 3 and len(jaxpr.out_avals) == 5
    x, y, tx = np.array([0.1, 0.5, 1.0]), np.array([2.0, -1.0, 0.5]), np.array([1.0, 2.0, 3.0])
    *_, t0, t1 = _run(jaxpr, x, y, tx)
    _close(t0, np.cos(x) * tx * y)
    _close(t1, np.exp(x) * tx)


def test_jvp_jaxpr_instantiates_zeros_of_the_output_aval():
    closed = fgrad.make_jaxpr(lambda x, y: (x * 2.0, fnp.sum(y, axis=0)))(
        np.ones(3, np.float32), np.ones((2, 4)))
    jaxpr, out_nonzeros = jvp_jaxpr(closed, (True, False), (False, True))
    check_jaxpr(jaxpr)
    assert out_nonzeros == (True, True)
    *_, t0, t1 = _run(jaxpr, np.ones(3, np.float32), np.ones((2, 4)), np.ones(3, np.float32))
    assert t0.dtype == np.float32 and np.all(t0 == 2.0)
    assert t1.shape == (4,) and t1.dtype == np.float64 and not np.any(t1)


def test_jvp_jaxpr_of_outputs_that_are_an_input_and_a_literal():
    closed = fgrad.make_jaxpr(lambda x: (x, 2.0))(np.ones(2))
    jaxpr, out_nonzeros = jvp_jaxpr(closed, (True,), True)
    check_jaxpr(jaxpr)
    assert out_nonzeros == (True, True)
    x, tx = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    px, two, t_x, t_two = _run(jaxpr, x, tx)
    _close(px, x)
    _close(t_x, tx)
    assert two == 2.0 and np.shape(t_two) == () and t_two == 0.0
    _, not_inst = jvp_jaxpr(closed, (True,), False)
    assert not_inst == (True, False)


def test_jvp_jaxpr_of_a_jaxpr_with_constants_and_a_checkpoint():
    w = np.array([0.5, -1.0, 2.0])
    closed = fgrad.make_jaxpr(lambda x: fgrad.checkpoint(lambda y: fnp.sin(y * w))(x) * w)(np.ones(3))
    jaxpr, out_nonzeros = jvp_jaxpr(closed, (True,), False)
    check_jaxpr(jaxpr)
    assert out_nonzeros == (True,)
    x, tx = np.array([0.3, 0.1, -0.2]), np.array([1.0, -1.0, 0.5])
    p, t = _run(jaxpr, x, tx)
    _close(p, np.sin(x * w) * w)
    _close(t, np.cos(x * w) * w * tx * w)


def test_jvp_jaxpr_twice_gives_the_second_derivative():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * x)(1.0)
    first, _ = jvp_jaxpr(closed, (True,), False)  # (x, t) -> (f, f' t)
    second, nz = jvp_jaxpr(first, (True, False), False)  # tangent of x only
    check_jaxpr(second)
    assert nz == (True, True)
    x = 0.7
    _, _, _, d2 = _run(second, x, 1.0, 1.0)
    _close(d2, 2 * np.cos(x) - x * np.sin(x))


def test_jvp_jaxpr_is_cached():
    closed = _f_jaxpr((2,), ())
    assert jvp_jaxpr(closed, (True, True), False) is jvp_jaxpr(closed, (True, True), False)
    assert jvp_jaxpr(closed, (True, True), False)[0] is not jvp_jaxpr(closed, (True, False), False)[0]


# --- batch_jaxpr --------------------------------------------------------------------


@st.composite
def _batching(draw):
    sx, sy = draw(broadcast_pairs())
    size = draw(st.integers(1, 3))
    dims = tuple(draw(st.one_of(st.none(), st.integers(0, len(s)))) for s in (sx, sy))
    return sx, sy, size, dims


def _stacked(shape, dim, size, seed):
    """`size` examples stacked along `dim` (one shared example if None), and the examples."""
    examples = [values(shape, "real", seed + 31 * i) for i in range(size)]
    if dim is None:
        return examples[0], [examples[0]] * size
    return np.moveaxis(np.stack(examples), 0, dim), examples


@given(_batching(), _flags(3), seeds)
def test_batch_jaxpr_evaluated_equals_a_loop_over_examples(batching, out_instantiate, seed):
    sx, sy, size, dims = batching
    closed = _f_jaxpr(sx, sy)
    jaxpr, out_batched = batch_jaxpr(closed, size, dims, out_instantiate)
    check_jaxpr(jaxpr)
    inst = _as_tuple(out_instantiate, 3)
    expected = tuple(any(d is not None and dep for d, dep in zip(dims, deps)) or i
                     for deps, i in zip(DEPENDS, inst))
    assert out_batched == expected

    x, xs = _stacked(sx, dims[0], size, seed)
    y, ys = _stacked(sy, dims[1], size, seed + 1)
    outs = _run(jaxpr, x, y)
    loop = [f_np(xi, yi) for xi, yi in zip(xs, ys)]
    for k, (got, batched) in enumerate(zip(outs, out_batched)):
        if batched:  # the examples along axis 0
            _close(got, np.stack([ex[k] for ex in loop]))
        else:  # the same for every example, without a batch axis
            _close(got, loop[0][k])


def test_batch_jaxpr_with_in_dims_none_0_and_1():
    closed = fgrad.make_jaxpr(lambda a, b, c: (a @ b + c, fnp.sum(b, axis=1)))(
        np.ones((2, 3)), np.ones((3, 4)), np.ones(4))
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(2, 3)), rng.normal(size=(3, 5, 4)), rng.normal(size=(5, 4))
    jaxpr, out_batched = batch_jaxpr(closed, 5, (None, 1, 0), False)
    check_jaxpr(jaxpr)
    assert out_batched == (True, True)
    out0, out1 = _run(jaxpr, a, b, c)
    _close(out0, np.stack([a @ b[:, i] + c[i] for i in range(5)]))
    _close(out1, np.stack([b[:, i].sum(axis=1) for i in range(5)]))


def test_batch_jaxpr_keeps_unbatched_outputs_unbatched_unless_asked():
    closed = _f_jaxpr((3,), (3,))
    x, y = np.array([0.1, 0.2, 0.3]), np.arange(6.0).reshape(2, 3)
    lean, out_batched = batch_jaxpr(closed, 2, (None, 0), False)
    assert out_batched == (True, False, True)
    _, exp_x, _ = _run(lean, x, y)
    _close(exp_x, np.exp(x))  # no batch axis
    full, out_batched = batch_jaxpr(closed, 2, (None, 0), True)
    assert out_batched == (True, True, True)
    _, exp_x, _ = _run(full, x, y)
    _close(exp_x, np.stack([np.exp(x)] * 2))  # repeated along axis 0
    check_jaxpr(lean)
    check_jaxpr(full)


def _carry_body(c1, c2, c3, x):
    """A loop body whose carries become batched one by one: c3 through x, c2
    through c3, c1 through c2."""
    return c1 + fnp.sin(c2), c2 * 0.5 + c3, c3 * x


def _carry_body_np(c1, c2, c3, x):
    return c1 + np.sin(c2), c2 * 0.5 + c3, c3 * x


def test_batch_jaxpr_reaches_a_fixpoint_for_loop_carries():
    closed = fgrad.make_jaxpr(_carry_body)(1.0, 1.0, 1.0, 1.0)
    size = 4
    carry_batched = (False, False, False)
    rounds = []
    while True:
        in_dims = tuple(0 if b else None for b in carry_batched) + (0,)  # only x is batched at first
        jaxpr, out_batched = batch_jaxpr(closed, size, in_dims, carry_batched)
        rounds.append(out_batched)
        if out_batched == carry_batched:
            break
        # a carry batched on the way out must be batched on the way in
        carry_batched = tuple(a or b for a, b in zip(carry_batched, out_batched))
    assert rounds == [(False, False, True), (False, True, True), (True, True, True), (True, True, True)]
    check_jaxpr(jaxpr)
    # the fixpoint's carries have the same avals in and out, so the body can loop
    assert jaxpr.out_avals == jaxpr.in_avals[:3]

    c0, xs = (0.2, -0.3, 0.5), np.array([0.5, 1.0, 1.5, -2.0])
    carry = [np.full(size, c) for c in c0]
    for _ in range(3):
        carry = _run(jaxpr, *carry, xs)
    for i in range(size):
        expected = c0
        for _ in range(3):
            expected = _carry_body_np(*expected, xs[i])
        for got, want in zip(carry, expected):
            _close(got[i], want)


def test_batch_jaxpr_is_cached_per_in_dims_and_out_instantiate():
    closed = _f_jaxpr((2,), (2,))
    assert batch_jaxpr(closed, 3, (0, None), False) is batch_jaxpr(closed, 3, (0, None), False)
    assert batch_jaxpr(closed, 3, (0, None), False) is not batch_jaxpr(closed, 3, (0, None), True)
    assert batch_jaxpr(closed, 3, (0, None), False) is not batch_jaxpr(closed, 3, (1, None), False)


# --- partial_eval_jaxpr -------------------------------------------------------------


def _depending_on(jaxpr, unknowns):
    """The variables of `jaxpr` that depend on its inputs marked unknown."""
    dep = {v for v, u in zip(jaxpr.invars, unknowns) if u}
    for eqn in jaxpr.eqns:
        if any(isinstance(a, Var) and a in dep for a in eqn.invars):
            dep.update(eqn.outvars)
    return dep


def _split_and_join(closed, unknowns, instantiate, args):
    """Run the known part on the known inputs, then the unknown part on the
    residuals and the unknown inputs; returns all outputs in order."""
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, unknowns, instantiate)
    check_jaxpr(known)
    check_jaxpr(unknown)
    known_in = [a for a, u in zip(args, unknowns) if not u]
    unknown_in = [a for a, u in zip(args, unknowns) if u]
    known_out = _run(known, *known_in)
    n_known = out_unknowns.count(False)
    assert len(known_out) == n_known + num_res
    unknown_out = _run(unknown, *known_out[n_known:], *unknown_in)
    assert len(unknown_out) == out_unknowns.count(True)
    ko, uo = iter(known_out[:n_known]), iter(unknown_out)
    return [next(uo) if u else next(ko) for u in out_unknowns], (known, unknown, out_unknowns, num_res)


@given(broadcast_pairs(), st.tuples(bools, bools), _flags(3), seeds)
def test_partial_eval_known_then_unknown_equals_the_original(shapes, unknowns, instantiate, seed):
    sx, sy = shapes
    closed = _f_jaxpr(sx, sy)
    x, y = values(sx, "real", seed), values(sy, "real", seed + 1)
    outs, (known, unknown, out_unknowns, _) = _split_and_join(closed, unknowns, instantiate, [x, y])
    for got, want in zip(outs, f_np(x, y)):
        _close(got, want)
    inst = _as_tuple(instantiate, 3)
    assert out_unknowns == tuple(any(u and d for u, d in zip(unknowns, dep)) or i
                                 for dep, i in zip(DEPENDS, inst))
    # no known equation reads anything an unknown input reaches
    tainted = _depending_on(closed.jaxpr, unknowns)
    for eqn in known.eqns:
        assert not any(isinstance(a, Var) and a in tainted for a in eqn.invars), eqn
    # every equation lands in exactly one part
    assert sorted(map(id, known.eqns + unknown.eqns)) == sorted(map(id, closed.eqns))


def _h(x, t):
    s = fnp.sin(x)
    return s * t, fnp.cos(x), fnp.exp(x) + t * s


def _h_np(x, t):
    s = np.sin(x)
    return s * t, np.cos(x), np.exp(x) + t * s


def test_partial_eval_residuals_are_the_known_values_the_unknown_part_reads():
    closed = fgrad.make_jaxpr(_h)(np.ones(3), np.ones(3))
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (False, True), False)
    assert out_unknowns == (True, False, True)
    # sin x (read by two unknown equations, passed once) and exp x
    assert num_res == 2
    assert [e.primitive.name for e in known.eqns] == ["sin", "cos", "exp"]
    assert [e.primitive.name for e in unknown.eqns] == ["mul", "mul", "add"]
    assert len(known.out_avals) == 1 + num_res and len(unknown.in_avals) == num_res + 1
    x, t = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    outs, _ = _split_and_join(closed, (False, True), False, [x, t])
    for got, want in zip(outs, _h_np(x, t)):
        _close(got, want)


def test_partial_eval_instantiate_makes_a_known_output_a_residual_of_the_unknown_part():
    closed = fgrad.make_jaxpr(_h)(np.ones(3), np.ones(3))
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (False, True), (False, True, False))
    assert out_unknowns == (True, True, True)
    assert num_res == 3 and len(known.out_avals) == num_res  # residuals only
    x, t = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    outs, _ = _split_and_join(closed, (False, True), (False, True, False), [x, t])
    for got, want in zip(outs, _h_np(x, t)):
        _close(got, want)


def test_partial_eval_instantiate_of_an_output_that_is_a_known_input():
    closed = fgrad.make_jaxpr(lambda x, t: (x, x * t))(np.ones(2), np.ones(2))
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (False, True), True)
    assert out_unknowns == (True, True)
    assert num_res == 1 and known.eqns == []  # x itself is the one residual
    x, t = np.array([2.0, 3.0]), np.array([-1.0, 4.0])
    outs, _ = _split_and_join(closed, (False, True), True, [x, t])
    _close(outs[0], x)
    _close(outs[1], x * t)


def test_partial_eval_with_everything_known_or_everything_unknown():
    w = np.array([1.5, -0.5])
    closed = fgrad.make_jaxpr(lambda x: (fnp.sin(x) * w, x + 1.0))(np.ones(2))
    x = np.array([0.4, 0.9])
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (False,), False)
    assert out_unknowns == (False, False) and num_res == 0 and unknown.eqns == []
    outs, _ = _split_and_join(closed, (False,), False, [x])
    _close(outs[0], np.sin(x) * w)
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (True,), False)
    assert out_unknowns == (True, True) and known.eqns == []
    assert num_res == 1 and known.consts == [w]  # the constant is handed over as a residual
    assert known.in_avals == []
    outs, _ = _split_and_join(closed, (True,), False, [x])
    _close(outs[0], np.sin(x) * w)
    _close(outs[1], x + 1.0)


def test_partial_eval_does_not_split_a_checkpoint():
    body = fgrad.checkpoint(lambda a, b: (fnp.sin(a) * b, fnp.cos(a)))
    closed = fgrad.make_jaxpr(lambda x, t: body(x, t))(1.0, 1.0)
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, (False, True), False)
    assert known.eqns == [] and [e.primitive.name for e in unknown.eqns] == ["checkpoint"]
    assert out_unknowns == (True, True) and num_res == 1
    outs, _ = _split_and_join(closed, (False, True), False, [0.3, 2.0])
    _close(outs[0], np.sin(0.3) * 2.0)
    _close(outs[1], np.cos(0.3))


def test_partial_eval_runs_a_known_effect_in_the_known_part(capsys):
    def g(x, t):
        fgrad.debug.print("x = {}", x)
        return x * t

    closed = fgrad.make_jaxpr(g)(1.0, 1.0)
    known, unknown, _, _ = partial_eval_jaxpr(closed, (False, True), False)
    res = _run(known, 2.0)
    assert capsys.readouterr().out == "x = 2.0\n"
    assert _run(unknown, *res, 3.0) == [6.0]
    assert capsys.readouterr().out == ""


# --- transpose_jaxpr ----------------------------------------------------------------


def _dot(a, b):
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _unbroadcast(x, shape):
    """Sum `x` down to `shape` (the adjoint of broadcasting)."""
    x = np.sum(x, axis=tuple(range(np.ndim(x) - len(shape))))
    return np.sum(x, axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True).reshape(shape)


@given(st.integers(1, 4), seeds)
def test_transpose_of_a_matrix_map(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    closed = fgrad.make_jaxpr(lambda t: A @ t + 2 * t)(np.ones(n))
    transposed = transpose_jaxpr(closed, (True,))
    check_jaxpr(transposed)
    t, ct = rng.normal(size=n), rng.normal(size=n)
    (ft,) = _run(closed, t)
    (ct_t,) = _run(transposed, ct)
    _close(ct_t, A.T @ ct + 2 * ct)
    np.testing.assert_allclose(_dot(ct, ft), _dot(ct_t, t), rtol=1e-10, atol=1e-12)
    _, vjp_fn = fgrad.vjp(lambda t: A @ t + 2 * t, t)
    _close(ct_t, vjp_fn(ct)[0])


@given(broadcast_pairs(), seeds)
def test_transpose_with_a_non_linear_input_and_broadcasting(shapes, seed):
    sx, st_ = shapes

    def g(x, t):
        return fnp.sin(x) * t + fnp.sum(t) * fnp.cos(x)

    closed = fgrad.make_jaxpr(g)(np.ones(sx), np.ones(st_))
    transposed = transpose_jaxpr(closed, (False, True))
    check_jaxpr(transposed)
    x, t = values(sx, "real", seed), values(st_, "real", seed + 1)
    out_shape = np.broadcast_shapes(sx, st_)
    ct = values(out_shape, "real", seed + 2)
    (ct_t,) = _run(transposed, x, ct)
    assert np.shape(ct_t) == st_
    _close(ct_t, _unbroadcast(np.sin(x) * ct, st_) + np.sum(ct * np.cos(x)))
    (gt,) = _run(closed, x, t)
    np.testing.assert_allclose(_dot(ct, gt), _dot(ct_t, t), rtol=1e-10, atol=1e-12)
    _, vjp_fn = fgrad.vjp(lambda t: g(x, t), t)
    _close(ct_t, vjp_fn(ct)[0])


@given(broadcast_pairs(), seeds)
def test_transpose_of_the_tangent_part_of_a_jvp_jaxpr(shapes, seed):
    sx, sy = shapes
    closed = _f_jaxpr(sx, sy)
    jvp, out_nonzeros = jvp_jaxpr(closed, (True, True), False)
    assert out_nonzeros == (True, True, True)
    tangent_part = dce_closed_jaxpr(jvp, [False] * 3 + [True] * 3)  # (x, y, tx, ty) -> tangents
    check_jaxpr(tangent_part)
    transposed = transpose_jaxpr(tangent_part, (False, False, True, True))
    check_jaxpr(transposed)
    x, y = values(sx, "real", seed), values(sy, "real", seed + 1)
    tx, ty = values(sx, "real", seed + 2), values(sy, "real", seed + 3)
    cts = [values(np.shape(o), "real", seed + 4 + k) for k, o in enumerate(f_np(x, y))]
    ct_x, ct_y = _run(transposed, x, y, *cts)
    assert np.shape(ct_x) == sx and np.shape(ct_y) == sy
    # <ct, J t> = <J^T ct, t>
    jt = _run(tangent_part, x, y, tx, ty)
    lhs = sum(_dot(c, j) for c, j in zip(cts, jt))
    np.testing.assert_allclose(lhs, _dot(ct_x, tx) + _dot(ct_y, ty), rtol=1e-9, atol=1e-12)
    _, vjp_fn = fgrad.vjp(f, x, y)
    want_x, want_y = vjp_fn(tuple(cts))
    _close(ct_x, want_x)
    _close(ct_y, want_y)
    # and the closed form
    _close(ct_x, _unbroadcast(np.cos(x) * y * cts[0], sx) + np.exp(x) * cts[1])
    _close(ct_y, _unbroadcast(np.sin(x) * cts[0], sy) + 2 * y * cts[2])


def test_transpose_with_residual_like_inputs():
    rng = np.random.default_rng(3)
    B = rng.normal(size=(4, 4))

    def g(x, t):
        return fnp.sin(x) * t + fnp.cos(x) * (B @ t)

    closed = fgrad.make_jaxpr(g)(np.ones(4), np.ones(4))
    transposed = transpose_jaxpr(closed, (False, True))
    check_jaxpr(transposed)
    assert len(transposed.in_avals) == 2 and len(transposed.out_avals) == 1
    x, ct, t = rng.normal(size=(3, 4))
    (ct_t,) = _run(transposed, x, ct)
    _close(ct_t, np.sin(x) * ct + B.T @ (np.cos(x) * ct))
    (gt,) = _run(closed, x, t)
    np.testing.assert_allclose(_dot(ct, gt), _dot(ct_t, t), rtol=1e-10)


def test_transpose_gives_zeros_to_a_linear_input_no_cotangent_reaches():
    closed = fgrad.make_jaxpr(lambda x, t1, t2: (x * t1,))(np.ones(2), np.ones(2), np.ones((3,), np.float32))
    transposed = transpose_jaxpr(closed, (False, True, True))
    check_jaxpr(transposed)
    x, ct = np.array([2.0, -1.0]), np.array([0.5, 3.0])
    ct1, ct2 = _run(transposed, x, ct)
    _close(ct1, x * ct)
    assert np.shape(ct2) == (3,) and np.asarray(ct2).dtype == np.float32 and not np.any(ct2)


def test_transpose_ignores_the_cotangent_of_an_output_the_linear_inputs_do_not_reach():
    closed = fgrad.make_jaxpr(lambda x, t: (x * t, fnp.sin(x)))(np.ones(3), np.ones(3))
    transposed = transpose_jaxpr(closed, (False, True))
    check_jaxpr(transposed)
    assert len(transposed.in_avals) == 3  # x, then one cotangent per output
    x, ct = np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    (a,) = _run(transposed, x, ct, np.zeros(3))
    (b,) = _run(transposed, x, ct, np.full(3, 100.0))
    _close(a, x * ct)
    _close(b, x * ct)
    # and what only that output needs is not computed at all
    assert "sin" not in [e.primitive.name for e in transposed.eqns]


def test_batch_jaxpr_takes_negative_in_dims_as_vmap_does():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(np.ones((2, 3)))
    xs = np.arange(24.0).reshape(2, 3, 4) / 10  # examples along the last axis
    batched, (out_batched,) = batch_jaxpr(closed, 4, (-1,), True)
    check_jaxpr(batched)
    assert out_batched
    (got,) = eval_jaxpr(batched.jaxpr, batched.consts, xs)
    _close(got, np.stack([np.sin(xs[..., i]) * 2.0 for i in range(4)]))


def test_transpose_of_a_transpose_is_the_original_map():
    A = np.arange(6.0).reshape(2, 3)
    closed = fgrad.make_jaxpr(lambda t: A @ t)(np.ones(3))
    once = transpose_jaxpr(closed, (True,))
    twice = transpose_jaxpr(once, (True,))
    check_jaxpr(twice)
    t = np.array([1.0, -2.0, 0.5])
    _close(_run(twice, t)[0], A @ t)
    _close(_run(once, np.array([1.0, 2.0]))[0], A.T @ np.array([1.0, 2.0]))


def test_transpose_of_a_non_linear_use_of_a_linear_input_raises():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x))(1.0)
    with pytest.raises(NotImplementedError, match="`sin` has no transpose"):
        transpose_jaxpr(closed, (True,))
