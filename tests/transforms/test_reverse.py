"""Reverse mode: linearize and transpose, the linear jaxpr, residuals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from fgrad.transforms.reverse import linearize_flat


def test_linearize_evaluates_once_and_applies_the_linear_map_many_times():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(x) * 3.0

    x = np.array([0.2, 0.4])
    y, f_jvp = fgrad.linearize(f, x)
    for t in (np.ones(2), np.array([2.0, -1.0])):
        np.testing.assert_allclose(f_jvp(t), 3 * np.cos(x) * t)
    assert len(calls) == 1
    np.testing.assert_allclose(y, 3 * np.sin(x))


def test_the_linear_jaxpr_holds_tangent_equations_and_residuals_only():
    x = np.array([0.2, 0.4])
    _, linear, _ = linearize_flat(lambda x: [fnp.sum(fnp.exp(x) * 2.0)], [x], "test")
    text = str(linear.jaxpr)
    assert "exp" not in text  # the primal work was done, not recorded
    assert [e.primitive.name for e in linear.jaxpr.eqns] == ["mul", "mul", "reduce_sum"]
    np.testing.assert_allclose(linear.jaxpr.consts[0], np.exp(x))  # the residual


def test_residuals_are_read_only_views():
    x = np.array([0.2, 0.4])
    _, linear, _ = linearize_flat(lambda x: [fnp.exp(x)], [x], "test")
    (residual,) = linear.jaxpr.consts
    assert not residual.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        residual[0] = 1.0


def test_closed_over_arrays_stay_writeable_for_their_owner():
    w = np.array([1.0, 2.0])
    _, vjp_fn = fgrad.vjp(lambda x: fnp.sum(x * w), np.ones(2))
    w[0] = 5.0  # the user's array is not frozen
    assert vjp_fn(1.0)[0].tolist() == [5.0, 2.0]  # (and, like NumPy views, it is shared)


def test_gradients_are_writeable_arrays_owned_by_the_caller():
    g = fgrad.grad(fnp.sum)(np.ones(3))  # the cotangent of sum is a broadcast internally
    assert g.flags.writeable
    g[0] = 2.0


def test_vjp_with_several_inputs_and_outputs():
    def f(x, y):
        return {"a": x * y, "b": fnp.sum(x)}

    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out, vjp_fn = fgrad.vjp(f, x, y)
    gx, gy = vjp_fn({"a": np.array([1.0, 10.0]), "b": 2.0})
    np.testing.assert_array_equal(gx, [3.0 + 2.0, 40.0 + 2.0])
    np.testing.assert_array_equal(gy, [1.0, 20.0])


def test_an_input_the_output_ignores_gets_zeros():
    g = fgrad.grad(lambda x, y: fnp.sum(x**2), argnums=(0, 1))(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(g[1], np.zeros(3))


def test_integer_arguments_outside_argnums_are_constants():
    f = lambda x, n: fnp.sum(x**2 * n)  # noqa: E731
    np.testing.assert_array_equal(fgrad.grad(f)(np.ones(2), np.arange(1, 3)), [2.0, 4.0])


def test_float32_stays_float32():
    x = np.ones(3, np.float32)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * 2.0))(x)
    assert g.dtype == np.float32
    assert fgrad.grad(lambda x: fnp.sum(x * np.ones(3)))(x).dtype == np.float32  # f64 product, f32 gradient


def test_grad_of_grad_of_a_vector_function():
    x = np.array([0.3, -0.2])
    hvp = fgrad.grad(lambda x: fnp.sum(fgrad.grad(lambda y: fnp.sum(fnp.sin(y) ** 3))(x)))(x)
    expected = 6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3
    np.testing.assert_allclose(hvp, expected)


# --- cotangents the backward pass owns, written into (reverse._NEW_OR_PASSED) ----------------------

BIG = 1 << 16  # float64 elements: 512 KiB, above LARGE_ARRAY_BYTES


def _count_writes(monkeypatch):
    """The writes the backward pass makes into cotangents it owns: a primitive's
    name for a transpose computed in place, "add" for a sum."""
    import sys

    reverse = sys.modules["fgrad.transforms.reverse"]
    calls = []
    transpose_into, add_into = reverse._transpose_into, reverse._add_into

    def counted_transpose(prim, ct, args):
        out = transpose_into(prim, ct, args)
        if out is not None:
            calls.append(prim.name)
        return out

    def counted_add(out, prev, c):
        done = add_into(out, prev, c)
        if done:
            calls.append("add")
        return done

    monkeypatch.setattr(reverse, "_transpose_into", counted_transpose)
    monkeypatch.setattr(reverse, "_add_into", counted_add)
    return calls


def _read_only(x):
    x = np.array(x)
    x.flags.writeable = False
    return x


def test_large_cotangents_the_pass_made_are_written_into_and_the_gradient_is_unchanged(monkeypatch):
    calls = _count_writes(monkeypatch)
    x = np.linspace(-2.0, 2.0, BIG)
    before = x.copy()

    def f(x):
        return fnp.sum(fnp.sin(x) * fnp.exp(-(x ** 2)) / 3.0)  # neg, and mul by factors

    g = fgrad.grad(f)(x)
    s, e = np.sin(x), np.exp(-x * x)
    np.testing.assert_allclose(g, (np.cos(x) - 2 * x * s) * e / 3.0, rtol=1e-12, atol=1e-15)
    assert {"mul", "neg", "add"} <= set(calls)
    np.testing.assert_array_equal(x, before)


def test_the_sum_of_two_paths_and_a_matmul_cotangent_are_written_into(monkeypatch):
    calls = _count_writes(monkeypatch)
    rng = np.random.default_rng(5)
    x, W = rng.standard_normal((256, 128)), rng.standard_normal((128, 128)) / 12
    g = fgrad.grad(lambda x: fnp.sum(fnp.tanh(x @ W) @ W) + fnp.sum(x * x))(x)
    t = np.tanh(x @ W)
    np.testing.assert_allclose(g, ((1 - t * t) * W.sum(axis=1)) @ W.T + 2 * x, rtol=1e-12, atol=1e-14)
    assert set(calls) == {"mul", "add"}  # tanh's factor on matmul's cotangent; the paths to x summed


def test_small_cotangents_are_never_written_into(monkeypatch):
    calls = _count_writes(monkeypatch)
    fgrad.grad(lambda x: fnp.sum(-fnp.sin(x) * 2.0))(np.linspace(0.0, 1.0, 100))
    assert calls == []


def test_a_callers_cotangent_is_never_written_into_and_vjp_may_be_called_again():
    x = np.linspace(0.0, 1.0, BIG)
    y, vjp_fn = fgrad.vjp(lambda x: -fnp.sin(x) * 2.0 + x, x)
    ct = np.linspace(1.0, 2.0, BIG)
    kept = ct.copy()
    first = vjp_fn(ct)[0]
    np.testing.assert_array_equal(ct, kept)  # the caller's cotangent
    np.testing.assert_array_equal(vjp_fn(ct)[0], first)  # residuals intact for a second call
    np.testing.assert_array_equal(vjp_fn(_read_only(ct))[0], first)  # read-only: nothing tries to write
    np.testing.assert_allclose(first, (1.0 - 2.0 * np.cos(x)) * ct, rtol=1e-12)


def test_a_callers_cotangent_passed_on_by_a_sum_to_one_operand_is_not_written_into():
    # add's transpose hands ct itself to x's side and a sum of it to the scalar s:
    # x's side still holds the caller's array, which neg's transpose must not overwrite.
    x = np.linspace(0.0, 1.0, BIG)
    _, vjp_fn = fgrad.vjp(lambda x, s: -(x * 2.0) + s, x, 0.5)
    ct = np.linspace(1.0, 2.0, BIG)
    kept = ct.copy()
    gx, gs = vjp_fn(ct)
    np.testing.assert_array_equal(ct, kept)
    np.testing.assert_array_equal(gx, -2.0 * kept)
    np.testing.assert_allclose(gs, kept.sum(), rtol=1e-12)
    np.testing.assert_array_equal(vjp_fn(_read_only(ct))[0], gx)


def test_one_cotangent_array_given_for_two_outputs_is_read_not_written():
    x = np.linspace(0.1, 1.0, BIG)
    _, vjp_fn = fgrad.vjp(lambda x: (-(x * 2.0), x * 3.0, x), x)
    ct = np.linspace(1.0, 2.0, BIG)
    kept = ct.copy()
    (g,) = vjp_fn((ct, ct, ct))
    np.testing.assert_allclose(g, 2.0 * kept, rtol=1e-12)  # -2 + 3 + 1
    np.testing.assert_array_equal(ct, kept)


def test_the_identity_hands_back_the_callers_cotangent_untouched():
    x = np.linspace(0.1, 1.0, BIG)
    _, vjp_fn = fgrad.vjp(lambda x: x, x)
    ct = np.linspace(1.0, 2.0, BIG)
    kept = ct.copy()
    np.testing.assert_array_equal(vjp_fn(ct)[0], kept)
    np.testing.assert_array_equal(ct, kept)


G = np.linspace(-1.0, 1.0, BIG)  # a global array, closed over


def test_inputs_and_globals_returned_or_kept_alongside_the_gradient_are_not_written_into():
    x = np.linspace(0.1, 1.0, BIG)
    x_kept, g_kept = x.copy(), G.copy()

    def f(x):
        h = fnp.exp(x) * 2.0
        return fnp.sum(-(h * G)) + fnp.sum(-x), (x, G, h)  # h is both a residual and an aux output

    (value, (x_out, g_out, h)), g = fgrad.value_and_grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g, -2.0 * np.exp(x_kept) * g_kept - 1.0, rtol=1e-12)
    np.testing.assert_allclose(h, 2.0 * np.exp(x_kept), rtol=1e-12)
    for a, b in ((x, x_kept), (G, g_kept), (x_out, x_kept), (g_out, g_kept)):
        np.testing.assert_array_equal(a, b)


def test_a_cotangent_shared_by_two_inputs_is_not_written_into_for_either():
    x = np.linspace(0.1, 1.0, BIG)

    def f(x, y):
        z = x + y  # add's transpose hands the same cotangent to x and y
        return fnp.sum(z * 3.0)

    gx, gy = fgrad.grad(lambda x, y: f(-x, y / 2.0), argnums=(0, 1))(x, x.copy())
    np.testing.assert_allclose(gx, np.full(BIG, -3.0))
    np.testing.assert_allclose(gy, np.full(BIG, 1.5))
    gx, gy = fgrad.grad(lambda x, y: fnp.sum((x + y) * 3.0), argnums=(0, 1))(x, x)  # fanned out to both
    np.testing.assert_array_equal(gx, np.full(BIG, 3.0))
    np.testing.assert_array_equal(gy, np.full(BIG, 3.0))


def test_a_cotangent_is_cast_to_its_input_dtype_when_written_into():
    x = np.linspace(0.1, 1.0, BIG, dtype=np.float32)
    w = np.linspace(1.0, 2.0, BIG)  # float64: the product, and its cotangent, are float64

    g = fgrad.grad(lambda x: fnp.sum(-(x * w) * w))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, (-w * w).astype(np.float32), rtol=1e-6)


def test_what_a_custom_vjp_rule_returns_or_keeps_is_never_written_into():
    # The bwd keeps the cotangent it is given (which the pass made) and returns
    # its residual (a forward value) or a global: none may change afterwards.
    seen = []

    @fgrad.custom_vjp
    def passed(x):
        return x * 1.0

    passed.defvjp(lambda x: (passed(x), x), lambda res, g: (seen.append((g, np.array(g))) or res,))

    @fgrad.custom_vjp
    def to_global(x):
        return x * 1.0

    to_global.defvjp(lambda x: (to_global(x), None), lambda res, g: (G,))
    x = np.linspace(0.1, 1.0, BIG)
    w = np.linspace(1.0, 2.0, BIG)
    g_kept = G.copy()

    # passed(-x)'s cotangent is -x (its residual), then negated by neg's transpose.
    _, vjp_fn = fgrad.vjp(lambda x: fnp.sum(passed(-x) * w), x)
    first = vjp_fn(1.0)[0]
    np.testing.assert_array_equal(first, x)
    np.testing.assert_array_equal(vjp_fn(1.0)[0], first)  # the residual intact
    for g, copy in seen:
        np.testing.assert_array_equal(g, copy)
    g = fgrad.grad(lambda x: fnp.sum(-to_global(-x) * w) + fnp.sum(x * w))(x)
    np.testing.assert_array_equal(g, -g_kept + w)
    np.testing.assert_array_equal(G, g_kept)


def test_a_cotangent_tap_grad_shows_the_user_is_never_written_into_afterwards():
    seen = []
    x, w = np.linspace(0.1, 1.0, BIG), np.linspace(1.0, 2.0, BIG)

    def f(x):
        tapped = fgrad.debug.tap_grad(x * w, lambda ct: seen.append((ct, np.array(ct))))
        return fnp.sum(-tapped * w)  # tap_grad sees an owned cotangent, then x's mul transposes it

    g = fgrad.grad(f)(x)
    np.testing.assert_allclose(g, -w * w, rtol=1e-12)
    ((ct, copy),) = seen
    np.testing.assert_array_equal(ct, copy)
    np.testing.assert_array_equal(ct, -w)


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
def test_debug_nans_checks_the_backward_products_of_large_arrays_too():
    # sqrt's factor at 0 is inf: the cotangent 0 * inf is NaN in the backward pass only.
    with fgrad.debug.debug_nans(), pytest.raises(FloatingPointError, match="`mul` produced NaN"):
        fgrad.grad(lambda x: fnp.sum(fnp.sqrt(x) * 0.0))(np.zeros(BIG))


# --- the same under vmap: batches of cotangents (nothing written: the pass computes through vmap) ---

WIDE = 256  # a batch of 256 vectors of 256 float64: 512 KiB


def test_jacrev_of_a_large_jacobian_matches_the_closed_form_and_leaves_its_inputs():
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((WIDE, WIDE)) / 16, rng.standard_normal(WIDE)
    A_before, x_before = A.copy(), x.copy()
    jac = fgrad.jacrev(lambda x: fnp.tanh(A @ x) * x)

    first = jac(x)
    t = np.tanh(A @ x)
    np.testing.assert_allclose(first, (1 - t**2)[:, None] * A * x[:, None] + np.diag(t), atol=1e-14)
    np.testing.assert_array_equal(jac(x), first)
    np.testing.assert_array_equal(A, A_before)
    np.testing.assert_array_equal(x, x_before)


def test_a_batch_of_cotangents_the_caller_holds_is_not_written_into():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(WIDE)
    y, vjp_fn = fgrad.vjp(lambda x: -fnp.sin(x) * 2.0 + x, x)
    cts = rng.standard_normal((WIDE, WIDE))
    kept = cts.copy()
    batched = fgrad.vmap(vjp_fn)(cts)[0]
    np.testing.assert_array_equal(cts, kept)
    looped = np.stack([vjp_fn(ct)[0] for ct in cts])
    np.testing.assert_allclose(batched, looped, rtol=1e-13)
    np.testing.assert_array_equal(fgrad.vmap(vjp_fn)(cts)[0], batched)  # residuals intact


@pytest.mark.parametrize("in_axes", [0, 1])
def test_batched_cotangents_summed_back_to_a_smaller_rank(in_axes):
    # The linear input (3,) is broadcast against W (WIDE, 3) by the product:
    # its cotangent must be summed back, over the examples' axis but not the batch's.
    rng = np.random.default_rng(2)
    W = rng.standard_normal((WIDE, 3))
    x = rng.standard_normal(3)

    def f(x):
        return -(fnp.exp(x) * W) * W

    _, vjp_fn = fgrad.vjp(f, x)
    cts = rng.standard_normal((WIDE, WIDE, 3))
    batched = fgrad.vmap(vjp_fn, in_axes=in_axes)(cts)[0]
    examples = cts if in_axes == 0 else np.moveaxis(cts, 1, 0)
    looped = np.stack([-np.exp(x) * np.sum(ct * W * W, axis=0) for ct in examples])
    np.testing.assert_allclose(batched, looped, rtol=1e-12)


def test_vmap_of_grad_reads_its_batched_residuals_and_inputs_without_writing():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, WIDE * WIDE // 4))
    kept = xs.copy()

    def grad_of_one(x):
        return fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(-(x**2)) * 3.0 * G[: x.shape[0]]))(x)

    batched = fgrad.vmap(grad_of_one)(xs)
    np.testing.assert_array_equal(xs, kept)
    looped = np.stack([grad_of_one(x) for x in xs])
    np.testing.assert_allclose(batched, looped, rtol=1e-13, atol=1e-15)
    s, e = np.sin(xs), np.exp(-xs * xs)
    np.testing.assert_allclose(batched, 3.0 * (np.cos(xs) - 2 * xs * s) * e * G[: xs.shape[1]],
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("in_axes", [0, 1])
def test_cotangents_batched_by_two_nested_vmaps(in_axes):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(512)
    _, vjp_fn = fgrad.vjp(lambda x: -fnp.sin(x) * fnp.exp(x) * 2.0, x)
    cts = rng.standard_normal((8, 16, 512))  # 8 x 16 examples: 512 KiB in all
    kept = cts.copy()
    batched = fgrad.vmap(fgrad.vmap(vjp_fn), in_axes=in_axes)(cts)[0]
    looped = np.stack([np.stack([vjp_fn(ct)[0] for ct in row]) for row in cts])
    np.testing.assert_allclose(batched, looped if in_axes == 0 else np.moveaxis(looped, 1, 0), rtol=1e-13)
    np.testing.assert_array_equal(cts, kept)


# --- residuals released as the backward pass goes (backward_pass consume=True) -------------------


def _backward_sees_residual(x):
    """Whether exp(x)'s residual (its output) is still alive when the
    cotangent reaches x, the last step of grad's backward pass."""
    import weakref

    residual = []
    alive = []

    def f(x):
        x = fgrad.debug.tap_grad(x, lambda ct: alive.append(residual[0]() is not None))
        h = fnp.exp(x)
        residual.append(weakref.ref(h.primal))  # exp's factor is its output: the residual
        return fnp.sum(h * 2.0)

    fgrad.grad(f)(x)
    return alive[0]


def test_a_large_residual_is_dropped_once_the_backward_pass_has_used_it():
    assert not _backward_sees_residual(np.linspace(0.0, 1.0, BIG))


def test_small_residuals_are_kept_to_the_end_without_a_scan_for_their_last_use():
    assert _backward_sees_residual(np.linspace(0.0, 1.0, 8))


# --- many static indexings of one array: one cotangent --------------------------------------


@st.composite
def basic_indices(draw, shape):
    """A basic NumPy index into an array of `shape`: ints (negative too), slices
    (any step), None and at most one Ellipsis."""
    idx, axis, ellipsis = [], 0, False
    while axis < len(shape):
        kind = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "end"]))
        n = shape[axis]
        if kind == "int":
            idx.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 1, n + 1))
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, -1, -2])))
            idx.append(slice(draw(bound), draw(bound), step))
        elif kind == "none":
            idx.append(None)
            continue
        elif ellipsis:  # after an Ellipsis NumPy aligns the indices with the last axes: index them all
            continue
        elif kind == "ellipsis":
            idx.append(Ellipsis)
            ellipsis = True
            axis = max(axis, len(shape) - draw(st.integers(0, len(shape) - axis)))
            continue
        else:  # "end"
            break
        axis += 1
    return tuple(idx)


def _one_by_one(shape, uses):
    """Today's reverse mode, written out: each use's cotangent scattered into zeros of
    `shape`, the dense arrays added in the order the backward pass meets them (last use first)."""
    total = None
    for idx, ct in reversed(uses):
        dense = np.zeros(shape)
        dense[idx] = dense[idx] + ct
        total = dense if total is None else total + dense
    return total


@st.composite
def indexing_programs(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    indices = draw(st.lists(basic_indices(shape), min_size=1, max_size=8))
    indices += draw(st.lists(st.sampled_from(indices), max_size=3))  # repeated indices
    seed = draw(st.integers(0, 2**16))
    return shape, indices, seed


@settings(deadline=None, max_examples=40)
@given(indexing_programs())
def test_static_indexings_give_the_cotangent_one_by_one_scatters_give_bit_for_bit(program):
    shape, indices, seed = program
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(np.zeros(shape)[idx].shape) * 10.0 ** rng.integers(-8, 8) for idx in indices]

    def f(x):
        return sum(fnp.sum(x[idx] * w) for idx, w in zip(indices, weights))

    x = rng.standard_normal(shape)
    want = _one_by_one(shape, list(zip(indices, weights)))
    np.testing.assert_array_equal(fgrad.grad(f)(x), want)
    np.testing.assert_array_equal(fgrad.jit(fgrad.grad(f))(x), want)


def test_a_cotangent_from_another_use_is_added_in_its_turn():
    # Added out of turn, 1e16 + (1 + 1) would be 1e16 + 2; one by one, each + 1 rounds away.
    f = lambda x: x[0] * 1.0 + fnp.sum(x * np.array([1.0, 3.0])) + x[0] * 1e16 + fnp.sum(x[0:1]) * 2.0  # noqa: E731
    uses = [(0, 1.0), (slice(None), np.array([1.0, 3.0])), (0, 1e16), (slice(0, 1), 2.0)]
    want = _one_by_one((2,), uses)
    x = np.array([0.5, -1.5])
    np.testing.assert_array_equal(fgrad.grad(f)(x), want)
    np.testing.assert_array_equal(fgrad.jit(fgrad.grad(f))(x), want)


def test_nonlinear_uses_of_static_indices_match_finite_differences_jit_and_vmap():
    def f(x):
        parts = [*x[0]]  # every element of the first row
        return fnp.sin(parts[0]) * parts[2] + fnp.sum(fnp.exp(x[1:, ::2])) + x[-1, 1] ** 3 + x[0, 0] * x[2, 2]

    x = np.random.default_rng(1).uniform(-1, 1, (3, 4))
    check_grads(f, (x,), order=2, modes=("rev",))
    g = fgrad.grad(f)
    np.testing.assert_allclose(fgrad.jit(g)(x), g(x), rtol=1e-14)
    xs = np.stack([x, 2 * x, -x])
    np.testing.assert_allclose(fgrad.vmap(g)(xs), np.stack([g(v) for v in xs]), rtol=1e-14)
    np.testing.assert_allclose(fgrad.jit(fgrad.hessian(f))(x), fgrad.hessian(f)(x), rtol=1e-13)


def test_the_gradient_of_every_element_taken_apart_stages_no_array_per_element():
    # [*x]: 500 getitems; their cotangents make one concatenation, not 500 arrays of 500.
    def f(x):
        return sum(v * float(i + 1) for i, v in enumerate(x))

    n = 500
    jaxpr = fgrad.make_jaxpr(fgrad.grad(f))(np.ones(n))
    assert sum(any(v.aval.shape == (n,) for v in e.outvars) for e in jaxpr.eqns) == 1
    assert not any(e.primitive.name == "index_add" for e in jaxpr.eqns)
    np.testing.assert_array_equal(fgrad.grad(f)(np.ones(n)), np.arange(1.0, n + 1))
    np.testing.assert_array_equal(fgrad.jit(fgrad.grad(f))(np.ones(n)), np.arange(1.0, n + 1))
