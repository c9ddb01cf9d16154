"""fgrad.nn.initializers: shapes and dtypes, constants, the variance of every
fan-based initializer against scale / n with JAX's fans (in_axis=-2,
out_axis=-1, the other axes the receptive field, batch axes left out) for
dense and convolution kernels, the truncated ones' bound and the truncation
constant against scipy.stats.truncnorm, orthogonal's QᵀQ = I (tall, wide,
along another column axis, of a convolution kernel), delta_orthogonal,
determinism and jit against eager, and the errors. Fixed keys: the
statistical bounds hold for these draws, never by chance."""

import numpy as np
import pytest
import scipy.stats

import fgrad
import fgrad.random as fr
from fgrad.nn import initializers as init

KEY = fr.key(7)

# name -> (factory, scale, mode, distribution)
FAN_BASED = {
    "glorot_uniform": (init.glorot_uniform, 1.0, "fan_avg", "uniform"),
    "xavier_uniform": (init.xavier_uniform, 1.0, "fan_avg", "uniform"),
    "glorot_normal": (init.glorot_normal, 1.0, "fan_avg", "truncated_normal"),
    "xavier_normal": (init.xavier_normal, 1.0, "fan_avg", "truncated_normal"),
    "lecun_uniform": (init.lecun_uniform, 1.0, "fan_in", "uniform"),
    "lecun_normal": (init.lecun_normal, 1.0, "fan_in", "truncated_normal"),
    "he_uniform": (init.he_uniform, 2.0, "fan_in", "uniform"),
    "kaiming_uniform": (init.kaiming_uniform, 2.0, "fan_in", "uniform"),
    "he_normal": (init.he_normal, 2.0, "fan_in", "truncated_normal"),
    "kaiming_normal": (init.kaiming_normal, 2.0, "fan_in", "truncated_normal"),
}

# name -> an initializer made with default parameters
ALL = {name: factory() for name, (factory, *_) in FAN_BASED.items()} | {
    "zeros": init.zeros, "ones": init.ones, "constant": init.constant(-7.5), "uniform": init.uniform(),
    "normal": init.normal(), "truncated_normal": init.truncated_normal(), "orthogonal": init.orthogonal(),
    "variance_scaling": init.variance_scaling(0.5, "fan_out", "normal"),
}


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5, 4)])
def test_shapes_and_dtypes(name, shape):
    f = ALL[name]
    w = f(KEY, shape)
    assert w.shape == shape and w.dtype == np.float64
    w32 = f(KEY, shape, np.float32)
    assert w32.shape == shape and w32.dtype == np.float32
    assert isinstance(f, init.Initializer)


def test_constants():
    np.testing.assert_array_equal(init.zeros(KEY, (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(init.ones(None, (2,), np.float32), np.ones(2, np.float32))
    np.testing.assert_array_equal(init.constant(-7)(KEY, (2, 2)), np.full((2, 2), -7.0))
    np.testing.assert_array_equal(init.constant(np.arange(3.0))(KEY, (2, 3)), np.tile(np.arange(3.0), (2, 1)))
    assert init.constant(1, dtype=np.float32)(KEY, (2,)).dtype == np.float32


def test_uniform_normal_and_truncated_normal_factories():
    u = init.uniform(10.0)(KEY, (20_000,))
    assert u.min() >= 0 and u.max() < 10 and abs(u.mean() - 5) < 0.1
    z = init.normal(3.0)(KEY, (20_000,))
    assert abs(z.std() / 3 - 1) < 0.03
    t = init.truncated_normal(3.0)(KEY, (20_000,))  # stddev before truncation, as JAX: no correction
    assert np.abs(t).max() <= 6.0 and abs(t.std() / (3 * scipy.stats.truncnorm(-2, 2).std()) - 1) < 0.03
    t = init.truncated_normal(1.0, lower=0.0, upper=1.0)(KEY, (20_000,))
    assert t.min() >= 0 and t.max() <= 1 and abs(t.mean() - scipy.stats.truncnorm(0, 1).mean()) < 0.01


def test_the_truncation_constant_is_truncnorms_stddev():
    np.testing.assert_allclose(init._TRUNCATED_STDDEV, scipy.stats.truncnorm(-2, 2).std(), rtol=1e-15)


def _fans(shape, in_axis=-2, out_axis=-1, batch=()):
    receptive = np.prod(shape) / shape[in_axis] / shape[out_axis] / np.prod([shape[b] for b in batch])
    return shape[in_axis] * receptive, shape[out_axis] * receptive


@pytest.mark.parametrize("name", sorted(FAN_BASED))
@pytest.mark.parametrize("shape", [(400, 300), (3, 3, 64, 32)])  # dense, and a conv kernel (H, W, in, out)
def test_variance_is_scale_over_the_fan(name, shape):
    factory, scale, mode, distribution = FAN_BASED[name]
    fan_in, fan_out = _fans(shape)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    w = factory()(fr.key(11), shape)
    assert abs(w.mean()) < 5 * np.sqrt(scale / n / w.size)
    assert abs(w.var() / (scale / n) - 1) < 5 * np.sqrt(2 / w.size)  # 5 standard errors of a normal's
    bound = np.sqrt(3 * scale / n) if distribution == "uniform" else 2 * np.sqrt(scale / n) / init._TRUNCATED_STDDEV
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound


def test_fans_of_other_axes():
    shape = (5, 8, 3, 7)
    w = init.variance_scaling(1.0, "fan_in", "normal", in_axis=1, out_axis=0)(fr.key(12), shape)
    fan_in, _ = _fans(shape, in_axis=1, out_axis=0)
    assert fan_in == 8 * 21 and abs(w.var() * fan_in - 1) < 0.05
    w = init.variance_scaling(1.0, "fan_out", "normal", in_axis=(0, 1), out_axis=-1, batch_axis=(2,))(
        fr.key(13), shape)
    assert abs(w.var() * 7 - 1) < 0.05  # no receptive field left: fan_out is the out axis alone
    w = init.variance_scaling(3.0, "fan_avg", "uniform", batch_axis=(0,))(fr.key(14), (50, 40, 60))
    assert abs(w.var() * 50 - 3) < 0.05 * 3


@pytest.mark.parametrize("shape, column_axis", [((5, 5), -1), ((8, 3), -1), ((3, 8), -1), ((4, 6), 0),
                                                 ((3, 3, 4, 16), -1)])
def test_orthogonal_columns_are_orthonormal(shape, column_axis):
    q = init.orthogonal(scale=2.0, column_axis=column_axis)(fr.key(15), shape)
    assert q.shape == shape
    m = np.moveaxis(q, column_axis, -1).reshape(-1, shape[column_axis]) / 2.0
    if m.shape[0] >= m.shape[1]:
        np.testing.assert_allclose(m.T @ m, np.eye(m.shape[1]), atol=1e-13)  # orthonormal columns
    else:
        np.testing.assert_allclose(m @ m.T, np.eye(m.shape[0]), atol=1e-13)  # orthonormal rows
    q32 = init.orthogonal()(fr.key(15), (6, 6), np.float32)
    assert q32.dtype == np.float32
    np.testing.assert_allclose(q32.T @ q32, np.eye(6), atol=1e-5)


def test_orthogonal_is_uniform_not_qrs_signs():
    # Haar-distributed: the diagonal of Q has mean 0 (NumPy's QR alone gives it means near -0.5 and 0.5).
    diag = np.stack([np.diag(init.orthogonal()(k, (3, 3))) for k in fr.split(fr.key(16), 2000)])
    assert np.all(np.abs(diag.mean(0)) < 5 * np.sqrt(1 / 3 / 2000))  # 5 standard errors (variance 1/3)


def test_delta_orthogonal():
    w = init.delta_orthogonal()(fr.key(17), (3, 3, 4, 6))
    centre = w[1, 1]
    np.testing.assert_allclose(centre @ centre.T, np.eye(4), atol=1e-13)
    w[1, 1] = 0
    assert np.all(w == 0)
    assert init.delta_orthogonal()(fr.key(17), (2, 3, 3)).shape == (2, 3, 3)


@pytest.mark.parametrize("name", sorted(ALL))
def test_same_key_same_weights_and_jit_equals_eager(name):
    f = ALL[name]
    w = f(KEY, (4, 3))
    np.testing.assert_array_equal(f(np.array([7, 0], np.uint64), (4, 3)), w)
    np.testing.assert_allclose(fgrad.jit(lambda k: f(k, (4, 3)))(KEY), w, rtol=1e-14, atol=1e-15)
    if name not in ("zeros", "ones", "constant"):
        assert not np.array_equal(f(fr.key(8), (4, 3)), w)
    keys = fr.split(KEY, 3)
    np.testing.assert_allclose(fgrad.vmap(lambda k: f(k, (4, 3)))(keys), np.stack([f(k, (4, 3)) for k in keys]),
                               rtol=1e-14, atol=1e-15)


def test_errors():
    with pytest.raises(ValueError, match="variance_scaling: invalid mode 'fan_sum'; expected one of 'fan_in', "
                                         "'fan_out', 'fan_avg'"):
        init.variance_scaling(1.0, "fan_sum", "normal")
    with pytest.raises(ValueError, match="invalid distribution 'cauchy'; expected one of 'truncated_normal'"):
        init.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="variance_scaling: a kernel needs at least 2 dimensions to have a "
                                         "fan-in and a fan-out, got shape \\(5,\\)"):
        init.glorot_uniform()(KEY, (5,))
    with pytest.raises(ValueError, match="in_axis 3, out_axis -1 or batch_axis \\(\\) is out of bounds"):
        init.he_normal(in_axis=3)(KEY, (2, 3))
    with pytest.raises(TypeError, match="glorot_normal|variance_scaling: dtype must be a real float type.*complex128"):
        init.glorot_normal()(KEY, (2, 3), np.complex128)
    with pytest.raises(TypeError, match="normal: dtype must be a real float type.*int32"):
        init.normal()(KEY, (2,), np.int32)
    with pytest.raises(ValueError, match="orthogonal: needs a shape of at least 2 dimensions, got \\(4,\\)"):
        init.orthogonal()(KEY, (4,))
    with pytest.raises(ValueError, match="delta_orthogonal: needs a shape of 3, 4 or 5 dimensions"):
        init.delta_orthogonal()(KEY, (3, 3))
    with pytest.raises(ValueError, match="input channels \\(5\\) must be at most the output channels \\(4\\)"):
        init.delta_orthogonal()(KEY, (3, 5, 4))
    with pytest.raises(TypeError, match="uniform: shape must be a tuple of ints, got \\(2.5,\\)"):
        init.uniform()(KEY, (2.5,))
    with pytest.raises(ValueError, match="zeros: shape must not have negative sizes, got \\(-1,\\)"):
        init.zeros(KEY, (-1,))
    with pytest.raises(TypeError, match="expected a key"):
        init.normal()(np.zeros(2), (2,))
