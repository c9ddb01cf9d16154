"""fgrad.lax's dynamic slices (fgrad/lax/slicing.py) against NumPy slicing at the
start JAX's rule gives (negative counts from the end, then clamped so the block
fits), with starts known (static slices) and traced (jit, vmap: gather and
scatter), and their derivatives against finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads

small = settings(max_examples=25, deadline=None)


def clamped(starts, sizes, shape):
    return [min(max(s + n if s < 0 else s, 0), n - m) for s, m, n in zip(starts, sizes, shape)]


def block(starts, sizes, shape):
    return tuple(slice(c, c + m) for c, m in zip(clamped(starts, sizes, shape), sizes))


def ref_slice(x, starts, sizes):
    return x[block(starts, sizes, x.shape)]


def ref_update(x, u, starts):
    out = x.copy()
    out[block(starts, u.shape, x.shape)] = u
    return out


rng = np.random.default_rng(0)
X = rng.normal(size=(4, 5, 3))

CASES = [  # (starts, sizes) into X, of shape (4, 5, 3)
    ((1, 2, 0), (2, 2, 3)),
    ((0, 0, 0), (4, 5, 3)),
    ((3, 4, 2), (2, 3, 2)),      # past the end: clamped back
    ((-1, -2, 0), (1, 2, 1)),    # negative: from the end
    ((-9, 7, 1), (2, 1, 2)),     # far out on both sides
    ((2, 1, 1), (0, 2, 1)),      # an empty block
]


@pytest.mark.parametrize("starts, sizes", CASES)
def test_dynamic_slice_values_known_and_traced_starts(starts, sizes):
    expected = ref_slice(X, starts, sizes)
    np.testing.assert_array_equal(lax.dynamic_slice(X, starts, sizes), expected)
    traced = fgrad.jit(lambda x, s: lax.dynamic_slice(x, s, sizes))
    np.testing.assert_array_equal(traced(X, [np.int64(s) for s in starts]), expected)
    # a 1-d array of starts, traced or not
    np.testing.assert_array_equal(lax.dynamic_slice(X, np.array(starts), sizes), expected)
    np.testing.assert_array_equal(traced(X, np.array(starts)), expected)


@pytest.mark.parametrize("starts, sizes", CASES)
def test_dynamic_update_slice_values_known_and_traced_starts(starts, sizes):
    u = rng.normal(size=sizes)
    expected = ref_update(X, u, starts)
    x = X.copy()
    np.testing.assert_array_equal(lax.dynamic_update_slice(x, u, starts), expected)
    np.testing.assert_array_equal(x, X)  # not written to
    traced = fgrad.jit(lambda x, u, s: lax.dynamic_update_slice(x, u, s))
    np.testing.assert_array_equal(traced(X, u, list(starts)), expected)


def test_jax_docstring_examples():
    # The examples of JAX's own docstrings, whose results it prints.
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(lax.dynamic_slice(x, (1, 1), (2, 3)), [[5, 6, 7], [9, 10, 11]])
    np.testing.assert_array_equal(lax.dynamic_slice(x, (1, 1), (2, 4)), [[4, 5, 6, 7], [8, 9, 10, 11]])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(np.arange(5), 4, 3), [2, 3, 4])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, 1, 2, axis=1), [[1, 2], [5, 6], [9, 10]])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(np.arange(5), 1), [1])
    assert lax.dynamic_index_in_dim(np.arange(5), 1, keepdims=False) == 1
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, 1, axis=1, keepdims=False), [1, 5, 9])
    z, y = np.zeros(6), np.ones(3)
    np.testing.assert_array_equal(lax.dynamic_update_slice(z, y, (2,)), [0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(lax.dynamic_update_slice(z, y, (5,)), [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(lax.dynamic_update_slice_in_dim(z, y, 3, axis=0), [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(z, 1.0 + z[:1], 10, axis=0),
                                  [0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(z, np.float64(1.0), 2, axis=0),
                                  [0, 0, 1, 0, 0, 0])
    four = np.zeros((4, 4))
    np.testing.assert_array_equal(lax.dynamic_update_slice_in_dim(four, np.ones((2, 3)), 1, axis=0),
                                  [[0, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(four, np.ones((1, 3)), 1, 0),
                                  [[0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]])


@small
@given(st.data())
def test_random_blocks_eager_and_jit(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    starts = tuple(data.draw(st.integers(-2 * n, 2 * n)) for n in shape)
    x = np.arange(float(np.prod(shape))).reshape(shape)
    expected = ref_slice(x, starts, sizes)
    np.testing.assert_array_equal(lax.dynamic_slice(x, starts, sizes), expected)
    np.testing.assert_array_equal(fgrad.jit(lambda x, s: lax.dynamic_slice(x, s, sizes))(x, list(starts)),
                                  expected)
    u = -1.0 - np.arange(float(np.prod(sizes))).reshape(sizes)
    expected = ref_update(x, u, starts)
    np.testing.assert_array_equal(lax.dynamic_update_slice(x, u, starts), expected)
    np.testing.assert_array_equal(fgrad.jit(lax.dynamic_update_slice)(x, u, list(starts)), expected)


def test_one_axis_forms_agree_with_numpy_on_a_negative_axis():
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(X, -4, 2, axis=-2), X[:, 1:3])
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, -2))(X, -4),
                                  X[:, 1:3])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(X, 7, axis=1, keepdims=False), X[:, 4])
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: lax.dynamic_index_in_dim(x, i, 1))(X, -1),
                                  X[:, 4:])
    u = np.ones((4, 2, 3))
    expected = X.copy()
    expected[:, 3:5] = 1.0
    np.testing.assert_array_equal(lax.dynamic_update_slice_in_dim(X, u, 9, axis=1), expected)
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: lax.dynamic_update_slice_in_dim(x, u, i, 1))(X, 9),
                                  expected)
    row = np.full((4, 3), 7.0)
    expected = X.copy()
    expected[:, 0] = 7.0
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(X, row, -5, axis=1), expected)
    np.testing.assert_array_equal(
        fgrad.jit(lambda x, i: lax.dynamic_update_index_in_dim(x, row, i, 1))(X, np.int32(-5)), expected)


def test_allow_negative_indices_false():
    # A traced negative start is then clamped to 0, a known one raises, as in JAX.
    x = np.arange(6.0)
    f = fgrad.jit(lambda x, i: lax.dynamic_slice(x, (i,), (2,), allow_negative_indices=False))
    np.testing.assert_array_equal(f(x, -1), [0.0, 1.0])
    np.testing.assert_array_equal(f(x, 3), [3.0, 4.0])
    with pytest.raises(ValueError, match="index -1 is out of bounds .* allow_negative_indices=False"):
        lax.dynamic_slice(x, (-1,), (2,), allow_negative_indices=False)
    # per axis; the one-axis forms apply it to their axis only
    m = np.arange(12.0).reshape(3, 4)
    g = fgrad.jit(lambda m, i, j: lax.dynamic_slice(m, (i, j), (1, 2), allow_negative_indices=[True, False]))
    np.testing.assert_array_equal(g(m, -1, -1), m[2:, :2])


def test_vmap_over_starts_and_operands_against_a_loop():
    starts = np.array([-7, -1, 0, 2, 3, 9])
    got = fgrad.vmap(lambda i: lax.dynamic_slice(X, (i, 1, 0), (2, 3, 2)))(starts)
    np.testing.assert_array_equal(got, np.stack([ref_slice(X, (i, 1, 0), (2, 3, 2)) for i in starts]))
    xs = rng.normal(size=(6, 4, 5, 3))
    got = fgrad.vmap(lambda x, i: lax.dynamic_slice(x, (1, i, 0), (2, 3, 2)))(xs, starts)
    np.testing.assert_array_equal(got, np.stack([ref_slice(x, (1, i, 0), (2, 3, 2)) for x, i in zip(xs, starts)]))
    got = fgrad.vmap(lambda x: lax.dynamic_slice(x, (1, 4, 0), (2, 3, 2)))(xs)
    np.testing.assert_array_equal(got, xs[:, 1:3, 2:5, 0:2])
    us = rng.normal(size=(6, 2, 3, 2))
    u = us[0]
    for f, args, expected in [
        (lambda i: lax.dynamic_update_slice(X, u, (i, 0, 1)), (starts,),
         [ref_update(X, u, (i, 0, 1)) for i in starts]),
        (lambda u, i: lax.dynamic_update_slice(X, u, (1, i, 1)), (us, starts),
         [ref_update(X, u, (1, i, 1)) for u, i in zip(us, starts)]),
        (lambda x, u: lax.dynamic_update_slice(x, u, (1, 2, 1)), (xs, us),
         [ref_update(x, u, (1, 2, 1)) for x, u in zip(xs, us)]),
        (lambda x: lax.dynamic_update_slice(x, u, (1, 2, 1)), (xs,), [ref_update(x, u, (1, 2, 1)) for x in xs]),
    ]:
        np.testing.assert_array_equal(fgrad.vmap(f)(*args), np.stack(expected))
        np.testing.assert_array_equal(fgrad.jit(fgrad.vmap(f))(*args), np.stack(expected))


def test_traced_starts_are_one_gather_and_known_ones_a_slice():
    traced = str(fgrad.make_jaxpr(lambda x, i: lax.dynamic_slice(x, (i, 0, 0), (2, 5, 3)))(X, 1))
    assert "gather" in traced and "scatter" not in traced
    known = str(fgrad.make_jaxpr(lambda x: lax.dynamic_slice(x, (1, -1, 0), (2, 2, 3)))(X))
    assert "gather" not in known and "getitem" in known
    update = str(fgrad.make_jaxpr(lambda x, i: lax.dynamic_update_slice(x, x[:1], (i, 0, 0)))(X, 1))
    assert "scatter_set" in update


# --- derivatives ------------------------------------------------------------------------


def _cubed(f):
    """f's result cubed and summed: a function with a second derivative."""
    return lambda *args: fnp.sum(f(*args) ** 3)


@pytest.mark.parametrize("starts, sizes", CASES[:5])
def test_dynamic_slice_derivatives_known_and_traced(starts, sizes):
    check_grads(lambda x: lax.dynamic_slice(x, starts, sizes), (X,), order=2)
    traced = fgrad.jit(lambda x, s: lax.dynamic_slice(x, s, sizes))
    check_grads(lambda x: traced(x, list(starts)), (X,), order=2)
    check_grads(_cubed(lambda x: traced(x, list(starts))), (X,), order=2)


@pytest.mark.parametrize("starts, sizes", CASES[:5])
def test_dynamic_update_slice_derivatives_known_and_traced(starts, sizes):
    u = rng.normal(size=sizes)
    check_grads(lambda x, u: lax.dynamic_update_slice(x, u, starts), (X, u), order=2)
    traced = fgrad.jit(lambda x, u, s: lax.dynamic_update_slice(x, u, s))
    check_grads(_cubed(lambda x, u: traced(x, u, list(starts))), (X, u), order=2)


def test_gradients_closed_form():
    # d/dx sum(slice ** 2) is 2x inside the clamped block, 0 elsewhere; through
    # the update, x's gradient is 0 inside it and the update's is 2u.
    expected = np.zeros_like(X)
    expected[1:3, 2:5, 1:3] = 2 * X[1:3, 2:5, 1:3]
    loss = lambda x, i: fnp.sum(lax.dynamic_slice(x, (i, 4, 1), (2, 3, 2)) ** 2)  # noqa: E731
    np.testing.assert_allclose(fgrad.grad(loss)(X, 1), expected)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss))(X, 1), expected)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0))(X, np.array([1, 1])),
                               np.stack([expected] * 2))
    u = rng.normal(size=(2, 3, 2))
    loss = lambda x, u, i: fnp.sum(lax.dynamic_update_slice(x, u, (i, 9, 1)) ** 2)  # noqa: E731
    gx = 2 * X
    gx[1:3, 2:5, 1:3] = 0.0
    for grad in (fgrad.grad(loss, argnums=(0, 1)), fgrad.jit(fgrad.grad(loss, argnums=(0, 1)))):
        got_x, got_u = grad(X, u, 1)
        np.testing.assert_allclose(got_x, gx)
        np.testing.assert_allclose(got_u, 2 * u)


def test_jvp_and_vmap_of_grad_with_batched_starts():
    starts = np.array([0, 2, 3])
    f = lambda x, i: fnp.sum(fnp.sin(lax.dynamic_slice_in_dim(x, i, 2, axis=1)))  # noqa: E731
    got = fgrad.vmap(fgrad.grad(f), in_axes=(None, 0))(X, starts)
    expected = np.stack([fgrad.grad(f)(X, int(i)) for i in starts])
    np.testing.assert_allclose(got, expected)
    t = rng.normal(size=X.shape)
    _, tangent = fgrad.jit(lambda x, t, i: fgrad.jvp(lambda x: f(x, i), (x,), (t,)))(X, t, 3)
    np.testing.assert_allclose(tangent, np.sum(np.cos(X[:, 3:5]) * t[:, 3:5]))


def test_inside_a_fori_loop_with_the_loop_index():
    # The pattern that needs a traced start: writing row i of a buffer in a loop.
    def squares(x):
        def body(i, buf):
            row = lax.dynamic_index_in_dim(x, i, keepdims=False)
            return lax.dynamic_update_index_in_dim(buf, row ** 2, i, 0)
        return lax.fori_loop(0, x.shape[0], body, fnp.zeros_like(x))

    np.testing.assert_allclose(squares(X), X ** 2)
    np.testing.assert_allclose(fgrad.jit(squares)(X), X ** 2)
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(squares(x)))(X), 2 * X)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(lambda x: fnp.sum(fgrad.jit(squares)(x))))(X), 2 * X)


# --- errors ------------------------------------------------------------------------------


def test_errors_name_what_was_given():
    with pytest.raises(ValueError, match=r"2 start indices for an operand of shape \(4, 5, 3\)"):
        lax.dynamic_slice(X, (0, 0), (1, 1, 1))
    with pytest.raises(TypeError, match=r"slice_sizes \(5, 1, 1\) must be between 0 and"):
        lax.dynamic_slice(X, (0, 0, 0), (5, 1, 1))
    with pytest.raises(TypeError, match="one size per axis"):
        lax.dynamic_slice(X, (0, 0, 0), (1, 1))
    with pytest.raises(TypeError, match="must be an integer scalar, got float64"):
        lax.dynamic_slice(X, (0, 1.5, 0), (1, 1, 1))
    with pytest.raises(TypeError, match=r"must be an integer scalar, got a traced f64\[\]"):
        fgrad.jit(lambda s: lax.dynamic_slice(X, (0, s, 0), (1, 1, 1)))(1.0)
    with pytest.raises(ValueError, match=r"sequence of scalars or a 1-d array, got an array of shape \(1, 3\)"):
        lax.dynamic_slice(X, np.zeros((1, 3), int), (1, 1, 1))
    with pytest.raises(TypeError, match=r"update, of shape \(2,\), must have the operand's rank"):
        lax.dynamic_update_slice(X, np.ones(2), (0, 0, 0))
    with pytest.raises(TypeError, match=r"must have the operand's rank and fit in its shape"):
        lax.dynamic_update_slice(np.zeros(2), np.ones(3), (0,))
    with pytest.raises(TypeError, match="update's dtype float32 differs from the operand's float64"):
        lax.dynamic_update_slice(np.zeros(3), np.ones(2, np.float32), (0,))
