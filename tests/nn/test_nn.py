"""fgrad.nn: activations against their closed forms (SciPy's expit, log_expit
and ndtr, NumPy), exact and warning-free at +-1000; derivatives to second
order in both modes on 0-d, vectors and batches, and JAX's at the kinks;
dtypes (float64 default, float32 kept); jit against eager and vmap against a
loop; softmax, log_softmax and logsumexp against SciPy, with -inf entries and
`where` masks (rows with nothing selected included); standardize, one_hot
(labels out of range and negative give zero rows) and glu; the errors."""

import math
import warnings

import numpy as np
import pytest
import scipy.special as ss

import fgrad
import fgrad.nn as nn
import fgrad.numpy as fnp
import fgrad.scipy.special as fsp
from fgrad.test_util import check_grads

# Self-normalising constants (Klambauer et al. 2017), as written in JAX.
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


# name -> (fgrad.nn function, its closed form in NumPy/SciPy)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, ss.expit),
    "log_sigmoid": (nn.log_sigmoid, ss.log_expit),
    "softplus": (nn.softplus, lambda x: np.logaddexp(x, 0)),
    "silu": (nn.silu, lambda x: x * ss.expit(x)),
    "swish": (nn.swish, lambda x: x * ss.expit(x)),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    "elu_alpha": (lambda x: nn.elu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(np.minimum(x, 0)))),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "leaky_relu_slope": (lambda x: nn.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    "celu": (lambda x: nn.celu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(np.minimum(x, 0) / 1.5))),
    "selu": (nn.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0)))),
    "gelu": (nn.gelu, lambda x: x * ss.expit(2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda x: x * ss.ndtr(x)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "mish": (nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0))),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hard_swish": (nn.hard_swish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "sparse_plus": (nn.sparse_plus, lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
    "sparse_sigmoid": (nn.sparse_sigmoid, lambda x: np.clip((x + 1) / 2, 0, 1)),
}

# Kinks of the functions above at -3, -1, 0, 1, 3 and 6; these points keep 0.15 away from them.
SMOOTH = np.array([-3.6, -2.4, -1.3, -0.6, -0.15, 0.2, 0.7, 1.4, 2.2, 4.5, 7.0])
GRID = np.concatenate([SMOOTH, [-1000.0, -40.0, -6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 40.0, 1000.0]])




@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_are_the_closed_forms(name):
    f, closed = ACTIVATIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # +-1000 neither overflows nor warns
        got = f(GRID)
    np.testing.assert_allclose(got, closed(GRID), rtol=1e-14, atol=1e-300)
    assert got.dtype == np.float64 and got.shape == GRID.shape
    x32 = GRID.astype(np.float32)
    got32 = f(x32)
    assert got32.dtype == np.float32
    digits = np.abs(x32) < 100 if name == "squareplus" else slice(None)  # x + sqrt(x**2 + 4) cancels below
    np.testing.assert_allclose(got32[digits], closed(x32.astype(np.float64))[digits], rtol=2e-6, atol=1e-30)
    scalar = f(0.7)
    assert isinstance(scalar, np.float64) and scalar == closed(np.float64(0.7))


def test_gelu_is_the_tanh_formula_where_it_does_not_cancel():
    x = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(nn.gelu(x), _gelu_tanh(x), rtol=1e-13, atol=1e-16)
    # Where 1 + tanh cancels, gelu keeps its digits: -2.3154422620725...e-15 at -7 (mpmath, 40 digits).
    np.testing.assert_allclose(nn.gelu(-7.0), -2.315442262072548963e-15, rtol=1e-13)


def test_integer_inputs_follow_numpy():
    ints = np.arange(-3, 8)
    for f in (nn.relu, nn.hard_tanh):  # integer results stay integers
        assert f(ints).dtype == ints.dtype
    np.testing.assert_array_equal(nn.relu(ints), np.maximum(ints, 0))
    for f in (nn.relu6, nn.sigmoid, nn.softplus, nn.gelu, nn.elu, nn.silu, nn.log_sigmoid):
        assert f(ints).dtype == np.float64
    np.testing.assert_allclose(nn.sigmoid(ints), ss.expit(ints), rtol=1e-15)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
def test_activation_derivatives_to_second_order(name, shape):
    f = ACTIVATIONS[name][0]
    x = SMOOTH[np.random.default_rng(len(shape)).integers(0, len(SMOOTH), shape)]
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["elu", "celu", "leaky_relu", "squareplus"])
def test_derivatives_in_the_parameters(name):
    x = np.array([-2.0, -0.5, 0.7])
    f = {"elu": nn.elu, "celu": nn.celu, "leaky_relu": nn.leaky_relu, "squareplus": nn.squareplus}[name]
    check_grads(f, (x, 1.3), order=2)


def test_derivatives_at_the_kinks_are_jaxs():
    d = lambda f, x: float(fgrad.grad(f)(x))
    assert d(nn.relu, 0.0) == 0.0 and d(nn.relu, 1e-300) == 1.0
    assert d(nn.relu6, 0.0) == 0.0 and d(nn.relu6, 6.0) == 0.0 and d(nn.relu6, 5.9) == 1.0
    assert d(nn.leaky_relu, 0.0) == 1.0
    assert d(nn.hard_tanh, 1.0) == 1.0 and d(nn.hard_tanh, -1.0) == 1.0 and d(nn.hard_tanh, 1.1) == 0.0
    assert d(nn.elu, 0.0) == 1.0 and d(lambda x: nn.celu(x, 2.0), 0.0) == 1.0
    assert float(fgrad.grad(fgrad.grad(nn.relu))(0.0)) == 0.0
    np.testing.assert_array_equal(fgrad.vmap(fgrad.grad(nn.relu))(np.array([-1.0, 0.0, 2.0])), [0.0, 0.0, 1.0])
    assert np.isnan(nn.relu(np.nan)) and np.isnan(nn.relu6(np.nan))  # nan stays nan, as in JAX


def test_stability_at_plus_minus_1000():
    big = np.array([-1000.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(nn.softplus(big), [0.0, 1000.0])
        np.testing.assert_array_equal(nn.log_sigmoid(big), [-1000.0, 0.0])
        np.testing.assert_array_equal(nn.sigmoid(big), [0.0, 1.0])
        grad = lambda f: fgrad.vmap(fgrad.grad(f))(big)
        np.testing.assert_array_equal(grad(nn.softplus), [0.0, 1.0])
        np.testing.assert_array_equal(grad(nn.log_sigmoid), [1.0, 0.0])
        np.testing.assert_array_equal(grad(nn.sigmoid), [0.0, 0.0])
        np.testing.assert_array_equal(grad(fgrad.grad(nn.softplus)), [0.0, 0.0])
        for f in (nn.silu, nn.gelu, nn.mish, nn.elu, nn.selu, nn.celu):
            assert np.all(np.isfinite(grad(f))), f.__name__
        np.testing.assert_array_equal(nn.softmax(np.array([1000.0, 1000.0, -1000.0])), [0.5, 0.5, 0.0])
        np.testing.assert_allclose(nn.log_softmax(np.array([1000.0, 0.0])), [0.0, -1000.0], rtol=1e-15)
        assert nn.logsumexp(np.array([1000.0, 1000.0])) == 1000.0 + math.log(2)
        g = fgrad.grad(lambda x: nn.log_softmax(x)[1])(np.array([1000.0, 0.0]))
        np.testing.assert_array_equal(g, [-1.0, 1.0])


# --- softmax, log_softmax, logsumexp --------------------------------------------------------

X = np.random.default_rng(0).normal(size=(3, 4))
MASK = np.array([[True, False, True, True], [False, True, False, False], [False, False, False, False]])
AXES = [-1, 0, (0, 1), None]


@pytest.mark.parametrize("axis", AXES)
def test_softmax_and_log_softmax_are_scipys(axis):
    np.testing.assert_allclose(nn.softmax(X, axis), ss.softmax(X, axis), rtol=1e-14)
    np.testing.assert_allclose(nn.log_softmax(X, axis), ss.log_softmax(X, axis), rtol=1e-14)
    np.testing.assert_allclose(np.sum(nn.softmax(X, axis), axis), 1.0, rtol=1e-15)
    np.testing.assert_allclose(nn.logsumexp(X, axis), ss.logsumexp(X, axis), rtol=1e-14)
    assert nn.softmax(X.astype(np.float32), axis).dtype == np.float32
    assert nn.log_softmax(X.astype(np.float32), axis).dtype == np.float32


def test_softmax_defaults_to_the_last_axis():
    np.testing.assert_allclose(nn.softmax(X), ss.softmax(X, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(nn.log_softmax(X), ss.log_softmax(X, axis=-1), rtol=1e-14)
    assert nn.logsumexp is fsp.logsumexp  # as jax.nn.logsumexp is jax.scipy.special.logsumexp


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("shape", [(4,), (3, 4)])
def test_softmax_derivatives(axis, shape):
    x = X[: shape[0]] if len(shape) == 2 else X[0]
    if len(shape) == 1 and axis in (0, (0, 1)):
        axis = -1 if axis == (0, 1) else 0
    check_grads(lambda x: nn.softmax(x, axis), (x,), order=2)
    check_grads(lambda x: nn.log_softmax(x, axis), (x,), order=2)
    s = nn.softmax(X[0])  # the Jacobian, diag(s) - s s^T
    np.testing.assert_allclose(fgrad.jacobian(nn.softmax)(X[0]), np.diag(s) - np.outer(s, s), rtol=1e-13,
                               atol=1e-16)


def test_softmax_over_leading_axes_binds_no_reshape():
    # Reduced over its leading axes, the maximum and the sum broadcast as they
    # are: no keepdims reshape (a primitive less each, W9's softmax of 4 scalars).
    for x, axis in [(X[0], 0), (X[:3], 0), (X[:3], None)]:
        text = str(fgrad.make_jaxpr(lambda x, axis=axis: nn.softmax(x, axis))(x))
        assert "reshape" not in text
        np.testing.assert_allclose(nn.softmax(x, axis), ss.softmax(x, axis), rtol=1e-14)
        mask = x > 0
        want = np.where(mask, ss.softmax(np.where(mask, x, -np.inf), axis), 0.0)
        np.testing.assert_allclose(nn.softmax(x, axis, where=mask), want, rtol=1e-14)
    assert "reshape" in str(fgrad.make_jaxpr(lambda x: nn.softmax(x, 1))(X[:3]))


def test_softmax_of_minus_inf_entries():
    x = np.array([0.0, -np.inf, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(nn.softmax(x), [ss.expit(-1.0), 0.0, ss.expit(1.0)], rtol=1e-15)
        log = nn.log_softmax(x)
        assert log[1] == -np.inf
        np.testing.assert_allclose(log[[0, 2]], ss.log_softmax([0.0, 1.0]), rtol=1e-15)
        g = fgrad.grad(lambda x: nn.softmax(x)[0])(x)
        s = ss.softmax([0.0, 1.0])
        np.testing.assert_allclose(g, [s[0] * (1 - s[0]), 0.0, -s[0] * s[1]], rtol=1e-14)
        g = fgrad.grad(lambda x: nn.log_softmax(x)[2])(x)
        np.testing.assert_allclose(g, [-s[0], 0.0, 1 - s[1]], rtol=1e-14)
    with np.errstate(invalid="ignore"):
        assert np.isnan(nn.softmax(np.array([np.inf, 0.0]))).all()  # inf / inf, as JAX


def _selected_softmax(x, mask, log):
    """Row by row, SciPy's softmax of the selected entries; 0 (-inf) elsewhere."""
    out = np.full(x.shape, -np.inf if log else 0.0)
    for i in range(x.shape[0]):
        if mask[i].any():
            out[i, mask[i]] = (ss.log_softmax if log else ss.softmax)(x[i, mask[i]])
    return out


def test_where_masks_leave_entries_out():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the row with nothing selected gives 0 (-inf), no nan
        np.testing.assert_allclose(nn.softmax(X, where=MASK), _selected_softmax(X, MASK, False), rtol=1e-14)
        np.testing.assert_allclose(nn.log_softmax(X, where=MASK), _selected_softmax(X, MASK, True), rtol=1e-14)
        want = [ss.logsumexp(X[0, MASK[0]]), X[1, 1], -np.inf]
        np.testing.assert_allclose(nn.logsumexp(X, axis=1, where=MASK), want, rtol=1e-14)
        w = np.arange(12.0).reshape(3, 4)
        g = fgrad.grad(lambda x: fnp.sum(w * nn.softmax(x, where=MASK)))(X)
        g_log = fgrad.grad(lambda x: fnp.sum(fnp.where(MASK, w * nn.log_softmax(x, where=MASK), 0.0)))(X)
    for grad in (g, g_log):
        assert np.all(grad[~MASK] == 0.0) and np.all(np.isfinite(grad))
    s = ss.softmax(X[0, MASK[0]])
    np.testing.assert_allclose(g[0, MASK[0]], s * (w[0, MASK[0]] - s @ w[0, MASK[0]]), rtol=1e-13)
    # A mask that broadcasts, and one over the columns.
    cols = np.array([True, False, True, True])
    np.testing.assert_allclose(nn.softmax(X, where=cols), _selected_softmax(X, np.broadcast_to(cols, X.shape),
                                                                              False), rtol=1e-14)
    np.testing.assert_allclose(nn.softmax(X, axis=0, where=MASK), _selected_softmax(X.T, MASK.T, False).T,
                               rtol=1e-14)


def test_where_mask_derivatives():
    mask = MASK[:2]
    check_grads(lambda x: nn.softmax(x, where=mask), (X[:2],), order=2)
    check_grads(lambda x: fnp.where(mask, nn.log_softmax(x, where=mask), 0.0), (X[:2],), order=2)
    check_grads(lambda x: fsp.logsumexp(x, axis=1, where=mask), (X[:2],), order=2)


# --- standardize, one_hot, glu ---------------------------------------------------------------


def test_standardize():
    np.testing.assert_allclose(nn.standardize(X, epsilon=0.0),
                               (X - X.mean(-1, keepdims=True)) / X.std(-1, keepdims=True), rtol=1e-12)
    v = X.var(0, keepdims=True)
    np.testing.assert_allclose(nn.standardize(X, axis=0),
                               (X - X.mean(0, keepdims=True)) / np.sqrt(v + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(nn.standardize(X, mean=0.5, variance=4.0, epsilon=0.0), (X - 0.5) / 2, rtol=1e-15)
    mask = np.array([[True, False, True, True], [False, True, True, False]])
    got = nn.standardize(X[:2], where=mask, epsilon=0.0)
    for i in range(2):
        sel = X[i, mask[i]]
        np.testing.assert_allclose(got[i], (X[i] - sel.mean()) / sel.std(), rtol=1e-12)
    check_grads(lambda x: nn.standardize(x), (X,), order=2)
    check_grads(lambda x, m, v: nn.standardize(x, mean=m, variance=v), (X[0], 0.3, 2.0), order=2)
    check_grads(lambda x: nn.standardize(x, where=MASK[0]), (X[0],), order=2)
    assert nn.standardize(X.astype(np.float32)).dtype == np.float32


def test_one_hot():
    labels = np.array([0, 2, 3, -1, 5, 1])  # 3 and 5 out of range, -1 negative: zero rows, as in JAX
    want = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 1, 0]], np.float64)
    got = nn.one_hot(labels, 3)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(nn.one_hot(labels, 3, axis=0), want.T)
    assert nn.one_hot(labels, 3, dtype=np.float32).dtype == np.float32
    assert nn.one_hot(labels, 3, dtype=np.int32).dtype == np.int32
    grid = np.array([[0, 1], [2, 7]])
    assert nn.one_hot(grid, 4).shape == (2, 2, 4) and nn.one_hot(grid, 4, axis=1).shape == (2, 4, 2)
    np.testing.assert_array_equal(nn.one_hot(grid, 4, axis=-2), np.moveaxis(nn.one_hot(grid, 4), -1, -2))
    np.testing.assert_array_equal(nn.one_hot(2, 3), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(nn.one_hot(np.array([1, 0], np.uint8), 2), np.eye(2)[::-1])
    np.testing.assert_array_equal(fgrad.jit(lambda x: nn.one_hot(x, 4))(grid), nn.one_hot(grid, 4))
    np.testing.assert_array_equal(fgrad.vmap(lambda x: nn.one_hot(x, 4))(grid), nn.one_hot(grid, 4))
    # Under a loss: one_hot targets need no derivative, the logits get softmax - target.
    logits = X[:2, :3]
    loss = lambda z: -fnp.sum(nn.one_hot(np.array([2, 0]), 3) * nn.log_softmax(z))
    np.testing.assert_allclose(fgrad.grad(loss)(logits), ss.softmax(logits, -1) - np.eye(3)[[2, 0]], rtol=1e-13)


def test_glu():
    x = X[:, :4]
    np.testing.assert_allclose(nn.glu(x), x[:, :2] * ss.expit(x[:, 2:]), rtol=1e-15)
    np.testing.assert_allclose(nn.glu(X[:2], axis=0), X[:1] * ss.expit(X[1:2]), rtol=1e-15)
    check_grads(nn.glu, (x,), order=2)


# --- jit and vmap -----------------------------------------------------------------------------

# name -> function of one batched array (3, 4) (mapped over its first axis)
MAPPED = {name: f for name, (f, _) in ACTIVATIONS.items()} | {
    "softmax": nn.softmax, "log_softmax": nn.log_softmax, "logsumexp": nn.logsumexp,
    "softmax_where": lambda x: nn.softmax(x, where=MASK[0]),
    "log_softmax_where": lambda x: nn.log_softmax(x, where=MASK[0]),
    "logsumexp_where": lambda x: nn.logsumexp(x, where=MASK[0]),
    "standardize": nn.standardize, "glu": nn.glu,
    "one_hot": lambda x: nn.one_hot(fnp.astype(x > 0, np.int64), 2),
}


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_jit_equals_eager_and_vmap_equals_the_loop(name):
    f = MAPPED[name]
    eager = f(X)
    np.testing.assert_allclose(fgrad.jit(f)(X), eager, rtol=1e-15, atol=1e-300)
    loop = np.stack([f(row) for row in X])
    np.testing.assert_allclose(fgrad.vmap(f)(X), loop, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(f))(X), loop, rtol=1e-15, atol=1e-300)
    if name != "one_hot":
        g = lambda x: fnp.sum(fnp.sin(fnp.where(fnp.isfinite(f(x)), f(x), 0.0)))  # log_softmax's -inf
        np.testing.assert_allclose(fgrad.jit(fgrad.grad(g))(X[0]), fgrad.grad(g)(X[0]), rtol=1e-14, atol=1e-300)
    x0 = fgrad.jit(f)(X[0, 0]) if name in ACTIVATIONS else None
    if x0 is not None:
        assert type(x0) is type(f(X[0, 0]))  # 0-d results are NumPy scalars, eagerly and under jit


# --- errors --------------------------------------------------------------------------------


def test_errors():
    with pytest.raises(ValueError, match="glu: the size of axis -1 must be even, to split it in halves; "
                                         "got shape \\(2, 3\\)"):
        nn.glu(np.ones((2, 3)))
    with pytest.raises(TypeError, match="one_hot: num_classes must be an int known when it is called.*got 2.5"):
        nn.one_hot(np.array([0, 1]), 2.5)
    with pytest.raises(TypeError, match="one_hot: num_classes must be an int"):
        fgrad.jit(nn.one_hot)(np.array([0, 1]), 3)
    with pytest.raises(ValueError, match="one_hot: num_classes must be non-negative, got -1"):
        nn.one_hot(np.array([0, 1]), -1)
    with pytest.raises(ValueError, match="one_hot: axis 2 is out of bounds for the result, of 2 dimensions"):
        nn.one_hot(np.array([0, 1]), 3, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        nn.glu(np.ones(4), axis=1)


def test_fgrad_nn_is_a_lazy_attribute():
    assert fgrad.nn is nn and fgrad.nn.initializers is nn.initializers
