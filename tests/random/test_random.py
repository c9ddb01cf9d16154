"""fgrad.random: keys and bits against NumPy's Philox itself (the streams are
pinned), determinism, shapes and dtypes, distributions with fixed seeds and
generous bounds, vmap over keys against a loop, jit against eager (and not
frozen), make_jaxpr staging the bits, derivatives by reparameterisation
against finite differences, gamma's implicit derivative against SciPy's
incomplete gamma function, truncated normals against scipy.stats.truncnorm's
moments and distribution function, and the error messages."""

import itertools

import numpy as np
import pytest
import scipy.special
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
import fgrad.random as fr
from fgrad.primitives import random as prim
from fgrad.test_util import check_grads
from tests.strategies import shapes

PRIMITIVES = {"random_bits", "random_fold_in", "random_gamma", "random_gamma_grad"}


def _key_of(x):
    """A key computed from a float array of shape (2,) (traced under vmap)."""
    return fnp.astype(x * 1e6, np.uint64)


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])

BATCH_CASES = {
    "random_bits": (lambda x: fr.bits(_key_of(x), (3,), np.uint32), [(2,)], "positive"),
    "random_bits_split": (lambda x: fr.split(_key_of(x), 3), [(2,)], "positive"),
    "random_fold_in": (lambda x, y: fr.fold_in(_key_of(x), fnp.astype(y * 100, np.int64)), [(2,), ()],
                       "positive"),
    "random_gamma": (lambda x, a: fr.gamma(_key_of(x), a, (2, 3)), [(2,), (3,)], "positive"),
    "random_gamma_grad": (lambda a, x: prim.random_gamma_grad(a, x), [(3,), (2, 3)], "positive"),
    "random_normal_affine": (lambda x, mu: mu + fr.normal(_key_of(x), (3,)) * mu, [(2,), (3,)], "positive"),
    "random_multivariate_normal": (lambda x, m: fr.multivariate_normal(_key_of(x), m, COV, (2,)), [(2,), (3,)],
                                   "positive"),
    "random_permutation": (lambda x, y: fr.permutation(_key_of(x), y, axis=1), [(2,), (2, 4)], "positive"),
}

KEY = fr.key(42)


def _raw(key, n):
    """NumPy's own Philox stream of `key`, counter from 0."""
    return np.random.Philox(key=np.asarray(key)).random_raw(n)


# --- keys and bits: NumPy's Philox, pinned ----------------------------------------------


def test_key_words_are_the_seed_mod_2_64():
    np.testing.assert_array_equal(fr.key(5), np.array([5, 0], np.uint64))
    np.testing.assert_array_equal(fr.key(2**64 + 3), np.array([3, 1], np.uint64))
    np.testing.assert_array_equal(fr.key(-2), np.array([2**64 - 2, 2**64 - 1], np.uint64))
    np.testing.assert_array_equal(fr.PRNGKey(9), fr.key(9))
    np.testing.assert_array_equal(fr.key(np.int32(-2)), fr.key(-2))
    assert fr.key(0).dtype == np.uint64
    np.testing.assert_array_equal(fr.key_data(fr.split(fr.key(1), 3)), fr.split(fr.key(1), 3))
    np.testing.assert_array_equal(fr.wrap_key_data(np.array([1, 0], np.uint64)), fr.key(1))


@pytest.mark.parametrize("seed", [0, 7, -3, np.uint64(2**63 + 1)])
def test_traced_seeds_give_the_eager_keys(seed):
    np.testing.assert_array_equal(fgrad.jit(fr.key)(np.asarray(seed)), fr.key(int(seed)))
    seeds = np.array([int(seed), 1], dtype=np.asarray(seed).dtype)
    np.testing.assert_array_equal(fgrad.vmap(fr.key)(seeds), np.stack([fr.key(int(s)) for s in seeds]))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 5)])
def test_bits_are_the_philox_stream(dtype, shape):
    size = int(np.prod(shape))
    words = -(-size * np.dtype(dtype).itemsize // 8)
    expected = _raw(KEY, words).astype("<u8").view(np.uint8)[: size * np.dtype(dtype).itemsize]
    got = fr.bits(KEY, shape, dtype)
    assert got.dtype == dtype and got.shape == shape
    np.testing.assert_array_equal(got.reshape(-1).astype(f"<{np.dtype(dtype).str[1:]}").view(np.uint8), expected)


def test_split_and_fold_in_are_philox_blocks():
    np.testing.assert_array_equal(fr.split(KEY, 3), _raw(KEY, 6).reshape(3, 2))
    np.testing.assert_array_equal(fr.split(KEY, (2, 2)).shape, (2, 2, 2))
    counter = np.array([12, 0, 0, 2**63], np.uint64)
    expected = np.random.Philox(key=KEY, counter=counter).random_raw(2)
    np.testing.assert_array_equal(fr.fold_in(KEY, 12), expected)
    np.testing.assert_array_equal(fr.fold_in(KEY, np.int64(12)), expected)
    np.testing.assert_array_equal(fr.fold_in(KEY, -1), fr.fold_in(KEY, 2**64 - 1))


def test_uniform_and_normal_are_pinned_to_the_stream():
    expected = (_raw(KEY, 4) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    np.testing.assert_array_equal(fr.uniform(KEY, (4,)), expected)
    expected = (_raw(KEY, 2).astype("<u8").view("<u4") >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)
    np.testing.assert_array_equal(fr.uniform(KEY, (4,), np.float32), expected)
    u1, u2 = ((_raw(KEY, 6) >> np.uint64(11)) * 2.0**-53).reshape(2, 3)
    np.testing.assert_allclose(fr.normal(KEY, (3,)), np.sqrt(-2 * np.log1p(-u1)) * np.cos(2 * np.pi * u2),
                               rtol=1e-15)


def test_gamma_at_the_edges():
    np.testing.assert_array_equal(fr.gamma(KEY, np.array([0.0, np.inf, np.nan])), [0.0, np.inf, np.nan])
    with pytest.raises(ValueError, match="gamma: a must be non-negative, got -1.0"):
        fr.gamma(KEY, np.array([1.0, -1.0]))


# --- determinism ---------------------------------------------------------------------------


SAMPLERS = {
    "uniform": lambda k, s: fr.uniform(k, s),
    "normal": lambda k, s: fr.normal(k, s),
    "gumbel": lambda k, s: fr.gumbel(k, s),
    "bernoulli": lambda k, s: fr.bernoulli(k, 0.5, s),
    "categorical": lambda k, s: fr.categorical(k, np.zeros(5), shape=s),
    "randint": lambda k, s: fr.randint(k, s, -5, 100),
    "choice": lambda k, s: fr.choice(k, 50, s),
    "gamma": lambda k, s: fr.gamma(k, 1.5, s),
    "truncated_normal": lambda k, s: fr.truncated_normal(k, -0.5, 2.0, s),
    "multivariate_normal": lambda k, s: fr.multivariate_normal(k, np.zeros(3), COV, s),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_key_same_numbers_other_keys_other_numbers(name):
    sample = SAMPLERS[name]
    a, b = sample(fr.key(3), (40,)), sample(np.array([3, 0], np.uint64), (40,))
    np.testing.assert_array_equal(a, b)
    k1, k2 = fr.split(fr.key(3))
    keys = [fr.key(3), fr.key(4), k1, k2, fr.fold_in(fr.key(3), 1), fr.fold_in(fr.key(3), 2)]
    draws = [sample(k, (40,)) for k in keys]
    for x, y in itertools.combinations(draws, 2):
        assert not np.array_equal(x, y)


def test_split_and_fold_in_give_distinct_keys():
    keys = np.concatenate([fr.split(KEY, 100), [fr.fold_in(KEY, i) for i in range(100)], [KEY]])
    assert len({tuple(k) for k in keys}) == len(keys)


# --- shapes and dtypes ---------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(shape=shapes, dtype=st.sampled_from([np.float16, np.float32, np.float64]))
def test_float_samplers_shapes_and_dtypes(shape, dtype):
    for sampler in (fr.uniform, fr.normal, fr.gumbel):
        x = sampler(KEY, shape, dtype)
        assert x.shape == shape and x.dtype == dtype
    x = fr.gamma(KEY, 2.0, shape, dtype)
    assert x.shape == shape and x.dtype == dtype
    x = fr.truncated_normal(KEY, -0.5, 0.25, shape, dtype)
    assert x.shape == shape and x.dtype == dtype and np.all((x >= -0.5) & (x <= 0.25))
    x = fr.uniform(KEY, shape, dtype, minval=0.25, maxval=0.5)  # exact in every dtype: never maxval
    assert np.all((x >= 0.25) & (x < 0.5))


@settings(max_examples=20, deadline=None)
@given(shape=shapes)
def test_discrete_samplers_shapes_and_dtypes(shape):
    assert fr.bernoulli(KEY, 0.5, shape).shape == shape and fr.bernoulli(KEY, 0.5, shape).dtype == bool
    assert fr.randint(KEY, shape, 0, 4).shape == shape and fr.randint(KEY, shape, 0, 4).dtype == np.int64
    assert fr.randint(KEY, shape, 0, 4, np.uint8).dtype == np.uint8
    assert fr.categorical(KEY, np.zeros(3), shape=shape).shape == shape
    assert fr.choice(KEY, 6, shape).shape == shape
    assert fr.choice(KEY, np.ones((2, 6)), shape, axis=1).shape == (2, *shape)


@pytest.mark.parametrize("name", sorted(set(SAMPLERS) - {"multivariate_normal"}))
def test_0d_samples_are_numpy_scalars_as_under_jit(name):
    x, y = SAMPLERS[name](KEY, ()), fgrad.jit(lambda k: SAMPLERS[name](k, ()))(KEY)
    assert isinstance(x, np.generic) and type(x) is type(y) and x == y


def test_parameter_shapes_give_the_default_shape():
    assert fr.bernoulli(KEY, np.full((2, 3), 0.5)).shape == (2, 3)
    assert fr.gamma(KEY, np.ones(4)).shape == (4,)
    assert fr.truncated_normal(KEY, np.zeros((2, 1)), np.ones(3)).shape == (2, 3)
    assert fr.truncated_normal(KEY, -1.0, np.ones(3), (4, 3)).shape == (4, 3)
    assert fr.uniform(KEY, (2, 3), minval=np.zeros(3)).shape == (2, 3)
    assert fr.randint(KEY, (2, 3), np.arange(3), 10).shape == (2, 3)
    assert fr.categorical(KEY, np.zeros((4, 3))).shape == (4,)
    assert fr.categorical(KEY, np.zeros((4, 3)), axis=0).shape == (3,)
    assert fr.categorical(KEY, np.zeros((4, 3)), axis=0, shape=(5, 3)).shape == (5, 3)
    assert fr.multivariate_normal(KEY, np.zeros((4, 2)), np.eye(2)).shape == (4, 2)
    assert fr.permutation(KEY, np.ones((2, 3)), axis=-1).shape == (2, 3)
    assert fr.choice(KEY, 5).shape == ()


# --- distributions (fixed seeds, generous bounds) ------------------------------------------

N = 100_000


def test_normal_mean_and_variance():
    x = fr.normal(fr.key(1), (N,))
    assert abs(x.mean()) < 0.02 and abs(x.var() - 1) < 0.02
    assert abs(np.mean(x > 1.0) - scipy.special.ndtr(-1.0)) < 0.005  # the shape, not only two moments


def test_uniform_range_and_moments():
    x = fr.uniform(fr.key(2), (N,), minval=-1.0, maxval=3.0)
    assert x.min() >= -1.0 and x.max() < 3.0
    assert abs(x.mean() - 1.0) < 0.02 and abs(x.var() - 16 / 12) < 0.02
    assert np.histogram(x, bins=8, range=(-1, 3))[0].min() > N / 8 * 0.95


def test_bernoulli_rate():
    assert abs(fr.bernoulli(fr.key(3), 0.3, (N,)).mean() - 0.3) < 0.01


def test_categorical_frequencies_follow_softmax():
    logits = np.array([0.5, -1.0, 2.0, 0.0])
    probs = np.exp(logits) / np.exp(logits).sum()
    x = fr.categorical(fr.key(4), logits, shape=(N,))
    np.testing.assert_allclose(np.bincount(x, minlength=4) / N, probs, atol=0.01)
    x = fr.categorical(fr.key(5), np.stack([logits, logits[::-1]], axis=1), axis=0, shape=(N // 2, 2))
    np.testing.assert_allclose(np.bincount(x[:, 1], minlength=4) / (N // 2), probs[::-1], atol=0.01)


def test_randint_range_and_frequencies():
    x = fr.randint(fr.key(6), (N,), -3, 4)
    assert x.min() == -3 and x.max() == 3
    np.testing.assert_allclose(np.bincount(x + 3) / N, np.full(7, 1 / 7), atol=0.01)
    np.testing.assert_array_equal(fr.randint(fr.key(6), (5,), 3, 3), np.full(5, 3))  # empty range: minval
    np.testing.assert_array_equal(fr.randint(fr.key(6), (2,), np.array([4, -2]), np.array([1, -9])), [4, -2])
    x = fr.randint(fr.key(6), (2, 1000), np.array([[0], [250]]), np.array([[5], [256]]), np.uint8)
    assert x.dtype == np.uint8 and x[0].max() == 4 and x[1].min() == 250 and x[1].max() == 255
    x = fr.randint(fr.key(6), (1000,), 0, 2**64 - 1, np.uint64)
    assert x.dtype == np.uint64 and x.max() > 2**63
    big = fr.randint(fr.key(6), (1000,), -(2**62), 2**62)
    assert big.min() < -(2**60) and big.max() > 2**60


def test_permutation_is_a_permutation():
    np.testing.assert_array_equal(np.sort(fr.permutation(fr.key(7), 100)), np.arange(100))
    assert not np.array_equal(fr.permutation(fr.key(7), 100), np.arange(100))
    x = np.arange(12.0).reshape(3, 4)
    y = fr.permutation(fr.key(7), x, axis=1)
    np.testing.assert_array_equal(np.sort(y, axis=1), x)
    np.testing.assert_array_equal(y, x[:, y[0].astype(int)])  # whole columns move together
    y = fr.permutation(fr.key(7), np.tile(np.arange(10.0), (50, 1)), axis=-1, independent=True)
    np.testing.assert_array_equal(np.sort(y, axis=1), np.tile(np.arange(10.0), (50, 1)))
    assert len({row.tobytes() for row in y}) == 50  # each row on its own


def test_choice_without_replacement_has_no_repeats():
    x = fr.choice(fr.key(8), 20, (20,), replace=False)
    np.testing.assert_array_equal(np.sort(x), np.arange(20))
    p = np.array([0.5, 0.2, 0.1, 0.1, 0.05, 0.05])
    for seed in range(20):
        x = fr.choice(fr.key(seed), 6, (4,), replace=False, p=p)
        assert len(set(x.tolist())) == 4
    x = fr.choice(fr.key(9), np.arange(10.0) * 2, (3, 2), replace=False)
    assert len(set(x.reshape(-1).tolist())) == 6 and np.all(x % 2 == 0)


def test_choice_with_replacement_follows_p():
    p = np.array([0.5, 0.2, 0.2, 0.1])
    x = fr.choice(fr.key(10), 4, (N,), p=p)
    np.testing.assert_allclose(np.bincount(x, minlength=4) / N, p, atol=0.01)
    x = fr.choice(fr.key(11), 4, (N,))
    np.testing.assert_allclose(np.bincount(x, minlength=4) / N, np.full(4, 0.25), atol=0.01)
    # Without replacement, the first draw follows p too.
    first = [int(fr.choice(fr.key(s), 4, (2,), replace=False, p=p)[0]) for s in range(2000)]
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 2000, p, atol=0.04)


@pytest.mark.parametrize("a", [0.02, 0.3, 1.0, 5.0, 300.0])
def test_gamma_mean_and_variance_are_a(a):
    x = fr.gamma(fr.key(12), a, (N,))
    assert abs(x.mean() - a) < 5 * np.sqrt(a / N) and abs(x.var() / a - 1) < 0.05
    assert scipy.stats.kstest(x, scipy.stats.gamma(a).cdf).pvalue > 1e-3  # the whole distribution


def test_normal_and_uniform_pass_kolmogorov_smirnov():
    assert scipy.stats.kstest(fr.normal(fr.key(19), (N,)), scipy.special.ndtr).pvalue > 1e-3
    assert scipy.stats.kstest(fr.uniform(fr.key(19), (N,), np.float32), "uniform").pvalue > 1e-3


TRUNCATIONS = [(-2.0, 2.0), (-1.0, 0.5), (1.5, 4.0), (-np.inf, -1.0), (0.0, np.inf), (-np.inf, np.inf),
               (5.0, 6.0)]


@pytest.mark.parametrize("lower, upper", TRUNCATIONS)
def test_truncated_normal_follows_truncnorm(lower, upper):
    x = fr.truncated_normal(fr.key(20), lower, upper, (N,))
    law = scipy.stats.truncnorm(lower, upper)
    assert x.min() >= lower and x.max() <= upper
    assert abs(x.mean() - law.mean()) < 5 * law.std() / np.sqrt(N)
    assert abs(x.var() / law.var() - 1) < 0.03
    assert scipy.stats.kstest(x, law.cdf).pvalue > 1e-3  # the whole distribution


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_truncated_normal_in_low_precision_stays_inside(dtype):
    lower, upper = np.array([-0.1, 1.0, -3.0], dtype), np.array([0.1, 1.001, 3.0], dtype)
    x = fr.truncated_normal(fr.key(21), lower, upper, (N // 10, 3), dtype)
    assert x.dtype == dtype and np.all((x >= lower) & (x <= upper))
    law = scipy.stats.truncnorm(-3.0, 3.0)
    assert scipy.stats.kstest(x[:, 2].astype(np.float64), law.cdf).pvalue > 1e-3


def test_truncated_normal_broadcasts_its_bounds():
    lower, upper = np.array([-4.0, -3.0, -2.5]), np.array([[-2.0], [3.0]])  # (3,) with (2, 1)
    x = fr.truncated_normal(fr.key(22), lower, upper, (5000, 2, 3))
    assert np.all((x >= lower) & (x <= upper))
    for i, j in [(0, 0), (1, 2)]:
        law = scipy.stats.truncnorm(lower[j], upper[i, 0])
        assert abs(x[:, i, j].mean() - law.mean()) < 5 * law.std() / np.sqrt(5000)


def test_grad_of_truncated_normal_bounds():
    lo, hi = np.array([-1.0, 0.5, -3.0]), np.array([1.0, 2.0, -2.5])
    check_grads(lambda lo, hi: fr.truncated_normal(KEY, lo, hi), (lo, hi), order=2)
    # By the inverse distribution function, x = Phi^-1(Phi(lo) + u (Phi(hi) - Phi(lo))) for a fixed u:
    x = fr.truncated_normal(KEY, lo, hi)
    ndtr, pdf = scipy.special.ndtr, scipy.stats.norm.pdf
    mass = ndtr(hi) - ndtr(lo)
    d_lo = fgrad.grad(lambda lo: fnp.sum(fr.truncated_normal(KEY, lo, hi)))(lo)
    d_hi = fgrad.grad(lambda hi: fnp.sum(fr.truncated_normal(KEY, lo, hi)))(hi)
    np.testing.assert_allclose(d_lo, (ndtr(hi) - ndtr(x)) / mass * pdf(lo) / pdf(x), rtol=1e-9)
    np.testing.assert_allclose(d_hi, (ndtr(x) - ndtr(lo)) / mass * pdf(hi) / pdf(x), rtol=1e-9)
    assert fgrad.grad(lambda lo: fr.truncated_normal(KEY, lo, np.inf))(-np.inf) == 0.0


def test_multivariate_normal_covariance():
    mean = np.array([1.0, -2.0, 0.5])
    x = fr.multivariate_normal(fr.key(13), mean, COV, (N,))
    np.testing.assert_allclose(x.mean(axis=0), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(x, rowvar=False), COV, atol=0.03)
    # A batch of covariances: one sample per covariance, each from its own factor.
    covs = np.stack([COV, np.diag([1.0, 4.0, 9.0])])
    x = fr.multivariate_normal(fr.key(14), np.zeros(3), covs, (N // 2, 2))
    np.testing.assert_allclose(np.cov(x[:, 1], rowvar=False), covs[1], atol=0.2)


# --- vmap, jit, make_jaxpr -----------------------------------------------------------------


VMAPPED = {
    "normal": lambda k: fr.normal(k, (3,)),
    "uniform": lambda k: fr.uniform(k, (2, 2), minval=-1.0),
    "randint": lambda k: fr.randint(k, (4,), 0, 10),
    "permutation": lambda k: fr.permutation(k, 6),
    "permutation_independent": lambda k: fr.permutation(k, np.ones((2, 1)) * np.arange(4), 1, True),
    "gamma": lambda k: fr.gamma(k, np.array([0.5, 2.0])),
    "truncated_normal": lambda k: fr.truncated_normal(k, np.array([-1.0, 0.0]), 1.0),
    "split": lambda k: fr.split(k, 3),
    "fold_in": lambda k: fr.fold_in(k, 5),
    "categorical": lambda k: fr.categorical(k, np.zeros(4), shape=(3,)),
    "nested": lambda k: fr.normal(fr.split(k)[1], (2,)),
}


@pytest.mark.parametrize("name", sorted(VMAPPED))
def test_vmap_over_split_keys_equals_the_loop(name):
    f = VMAPPED[name]
    keys = fr.split(fr.key(15), 5)
    got = fgrad.vmap(f)(keys)
    np.testing.assert_array_equal(got, np.stack([f(k) for k in keys]))
    assert len({np.asarray(g).tobytes() for g in got}) == 5  # independent draws
    grid = fr.split(fr.key(16), (2, 3))
    np.testing.assert_array_equal(fgrad.vmap(fgrad.vmap(f))(grid), np.stack([[f(k) for k in row] for row in grid]))
    np.testing.assert_array_equal(fgrad.jit(fgrad.vmap(f))(keys), got)


def test_vmap_over_data_with_one_key():
    got = fgrad.vmap(lambda d: fr.fold_in(KEY, d))(np.arange(4))
    np.testing.assert_array_equal(got, np.stack([fr.fold_in(KEY, d) for d in range(4)]))
    mus = np.array([0.0, 10.0, 20.0])
    got = fgrad.vmap(lambda mu: mu + fr.normal(KEY, (2,)))(mus)
    np.testing.assert_array_equal(got, np.stack([mu + fr.normal(KEY, (2,)) for mu in mus]))
    got = fgrad.vmap(lambda a: fr.gamma(KEY, a, (2,)))(np.array([0.5, 3.0]))
    np.testing.assert_array_equal(got, np.stack([fr.gamma(KEY, a, (2,)) for a in (0.5, 3.0)]))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_jit_equals_eager_and_is_not_frozen(name):
    f = fgrad.jit(lambda k: SAMPLERS[name](k, (30,)))
    for seed in (0, 1):
        np.testing.assert_array_equal(f(fr.key(seed)), SAMPLERS[name](fr.key(seed), (30,)))
    assert not np.array_equal(f(fr.key(0)), f(fr.key(1)))


def test_jit_with_keys_made_inside():
    f = fgrad.jit(lambda seed: fr.normal(fr.fold_in(fr.key(seed), 3), (4,)))
    np.testing.assert_array_equal(f(np.int64(5)), fr.normal(fr.fold_in(fr.key(5), 3), (4,)))
    assert not np.array_equal(f(np.int64(5)), f(np.int64(6)))


def test_make_jaxpr_stages_the_bits():
    text = str(fgrad.make_jaxpr(lambda k: fr.normal(fr.split(k)[0], (3,)))(KEY))
    assert text.count("random_bits") == 2 and "u64[2]" in text
    assert "random_fold_in" in str(fgrad.make_jaxpr(lambda k, d: fr.fold_in(k, d))(KEY, np.int64(3)))
    assert "random_gamma" in str(fgrad.make_jaxpr(lambda k: fr.gamma(k, 2.0))(KEY))


# --- derivatives by reparameterisation -----------------------------------------------------


def test_grad_of_location_and_scale():
    z = fr.normal(KEY, (5,))
    check_grads(lambda mu, sigma: mu + sigma * fr.normal(KEY, (5,)), (0.3, 1.7), order=2)
    g_mu, g_sigma = fgrad.grad(lambda mu, s: fnp.sum(mu + s * fr.normal(KEY, (5,))), argnums=(0, 1))(0.3, 1.7)
    np.testing.assert_allclose([g_mu, g_sigma], [5.0, z.sum()], rtol=1e-12)


def test_grad_of_uniform_bounds():
    check_grads(lambda lo, hi: fr.uniform(KEY, (4,), minval=lo, maxval=hi), (np.array([-1.0, 0.0, 1.0, 2.0]), 3.0),
                order=2)
    u = fr.uniform(KEY, (4,))
    g = fgrad.grad(lambda hi: fnp.sum(fr.uniform(KEY, (4,), minval=0.5, maxval=hi)))(3.0)
    np.testing.assert_allclose(g, u.sum(), rtol=1e-12)


def test_grad_of_multivariate_normal_in_mean_and_covariance():
    def sample(mean, a):
        return fr.multivariate_normal(KEY, mean, a @ a.T + np.eye(3), (2,))

    a = np.array([[1.0, 0.2, 0.0], [0.3, 0.8, 0.1], [-0.2, 0.4, 0.6]])
    check_grads(sample, (np.array([0.1, -0.3, 2.0]), a), order=2)


def test_grad_of_multivariate_normal_in_covariance_is_symmetric():
    # Issue 25: cov is a symmetric matrix; a gradient read from its lower triangle alone would make a
    # gradient step leave the symmetric matrices. Along symmetric directions E the derivative is
    # <G, E>, checked against central differences.
    def loss(cov):
        return fnp.sum(fnp.sin(fr.multivariate_normal(KEY, np.zeros(3), cov, (4,))))

    g = fgrad.grad(loss)(COV)
    np.testing.assert_array_equal(g, g.T)
    rng = np.random.default_rng(5)
    for _ in range(3):
        e = rng.normal(size=(3, 3))
        e = e + e.T
        h = 1e-6
        fd = (loss(COV + h * e) - loss(COV - h * e)) / (2 * h)
        np.testing.assert_allclose(np.sum(g * e), fd, rtol=1e-7)


def test_grad_through_permutation_and_choice_of_an_array():
    x = np.arange(6.0).reshape(2, 3) / 7
    check_grads(lambda x: fr.permutation(KEY, x, axis=1), (x,), order=2)
    check_grads(lambda x: fr.permutation(KEY, x, axis=0, independent=True), (x,), order=2)
    check_grads(lambda x: fr.choice(KEY, x, (4,), axis=1) ** 2, (x,), order=2)
    check_grads(lambda x: fr.choice(KEY, x, (2,), replace=False), (x,), order=2)


def _implicit_gamma_grad(a, x):
    """-(dP/da) / (dP/dx), dP/da by central differences of SciPy's gammainc."""
    h = 1e-6 * a
    dp_da = (scipy.special.gammainc(a + h, x) - scipy.special.gammainc(a - h, x)) / (2 * h)
    density = np.exp((a - 1) * np.log(x) - x - scipy.special.gammaln(a))
    return -dp_da / density


@pytest.mark.parametrize("a", [0.05, 0.4, 1.0, 3.7, 60.0, 2000.0])
def test_gamma_grad_is_the_implicit_reparameterisation(a):
    x = fr.gamma(fr.key(17), a, (50,))
    x = x[x > 1e-200]  # small a: samples that underflowed have derivative 0
    got = prim.random_gamma_grad(a, x)
    np.testing.assert_allclose(got, _implicit_gamma_grad(a, x), rtol=1e-5)
    # And grad of the sampler itself gives it, in both modes.
    g = fgrad.grad(lambda a: fnp.sum(fr.gamma(fr.key(17), a, (50,))))(a)
    np.testing.assert_allclose(g, np.sum(prim.random_gamma_grad(a, fr.gamma(fr.key(17), a, (50,)))), rtol=1e-12)
    _, t = fgrad.jvp(lambda a: fr.gamma(fr.key(17), a, (50,)), (a,), (1.0,))
    np.testing.assert_allclose(t, prim.random_gamma_grad(a, fr.gamma(fr.key(17), a, (50,))), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_gamma_tangents_have_the_samples_dtype(dtype):
    x, t = fgrad.jvp(lambda a: fr.gamma(KEY, a, (3,), dtype), (dtype(2.0),), (dtype(1.0),))
    assert x.dtype == t.dtype == dtype
    np.testing.assert_allclose(t, _implicit_gamma_grad(2.0, x.astype(np.float64)), rtol=2e-3)


def test_gamma_grad_is_unbiased():
    # E[x] = a for x ~ Gamma(a): the mean derivative of the samples is 1.
    for a in (0.5, 4.0):
        g = fgrad.grad(lambda a: fnp.mean(fr.gamma(fr.key(18), a, (20_000,))))(a)
        assert abs(g - 1) < 0.05


def test_gamma_grad_at_zero_samples_and_second_order():
    np.testing.assert_array_equal(prim.random_gamma_grad(np.array([0.01, 2.0]), np.array([0.0, 0.0])), [0, 0])
    with pytest.raises(NotImplementedError, match="only first derivatives in the shape parameter"):
        fgrad.grad(fgrad.grad(lambda a: fr.gamma(KEY, a)))(2.0)
    with pytest.raises(NotImplementedError, match="only first derivatives"):
        fgrad.jvp(lambda a: fgrad.jvp(lambda a: fr.gamma(KEY, a), (a,), (1.0,))[1], (2.0,), (1.0,))


def test_keys_have_no_derivative():
    # Integer results: no tangent flows, and grad through samples of a traced key works.
    _, t = fgrad.jvp(lambda x: fr.normal(KEY, (2,)) * x, (2.0,), (1.0,))
    np.testing.assert_array_equal(t, fr.normal(KEY, (2,)))
    g = fgrad.grad(lambda mu, k: fnp.sum(mu * fr.normal(k, (3,))))(2.0, KEY)
    np.testing.assert_allclose(g, fr.normal(KEY, (3,)).sum(), rtol=1e-12)
    g = fgrad.vmap(fgrad.grad(lambda mu, k: fnp.sum(mu * fr.normal(k, (3,)))), in_axes=(None, 0))(2.0, fr.split(KEY, 3))
    np.testing.assert_allclose(g, [fr.normal(k, (3,)).sum() for k in fr.split(KEY, 3)], rtol=1e-12)


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad, hint", [
    (np.array([1.0, 2.0]), "got f64\\[2\\]"),
    (np.array([1, 2, 3], np.uint64), "got u64\\[3\\]"),
    (np.zeros((4, 2), np.uint64), "batch of keys: map the function over it with fgrad.vmap"),
    (np.zeros(2, np.uint32), "JAX's uint32 keys are not fgrad keys"),
    (3, "got i64\\[\\]"),
])
def test_a_key_that_is_not_a_key(bad, hint):
    for call in (lambda: fr.normal(bad), lambda: fr.split(bad), lambda: fr.fold_in(bad, 1),
                 lambda: fr.uniform(bad, (2,)), lambda: fr.gamma(bad, 1.0)):
        with pytest.raises(TypeError, match="expected a key.*uint64 array of shape \\(2,\\).*fgrad.random.key"):
            call()
        with pytest.raises(TypeError, match=hint):
            call()
    with pytest.raises(TypeError, match="expected a key"):
        fgrad.jit(fr.normal)(np.zeros(2))
    with pytest.raises(TypeError, match="key_data: expected keys of shape"):
        fr.key_data(np.zeros(2))


def test_bad_shapes():
    with pytest.raises(ValueError, match="normal: shape must not have negative sizes, got \\(2, -1\\)"):
        fr.normal(KEY, (2, -1))
    with pytest.raises(TypeError, match="shape must be a tuple of ints, got"):
        fr.uniform(KEY, (2.5,))
    with pytest.raises(ValueError, match="minval and maxval \\(shapes \\(3,\\), \\(\\)\\) must broadcast to shape \\(2,\\)"):
        fr.uniform(KEY, (2,), minval=np.zeros(3))
    with pytest.raises(ValueError, match="p \\(shapes \\(3,\\)\\) must broadcast"):
        fr.bernoulli(KEY, np.full(3, 0.5), (2,))
    with pytest.raises(ValueError, match="a \\(shapes \\(2,\\)\\) must broadcast to shape \\(3,\\)"):
        fr.gamma(KEY, np.ones(2), (3,))
    with pytest.raises(ValueError, match="logits without the category axis"):
        fr.categorical(KEY, np.zeros((2, 3)), shape=(3,))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        fr.categorical(KEY, np.zeros((2, 3)), axis=2)
    with pytest.raises(ValueError, match="mean must have shape \\(..., n\\) and cov \\(..., n, n\\)"):
        fr.multivariate_normal(KEY, np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="do not broadcast together"):
        fr.multivariate_normal(KEY, np.zeros((2, 3)), np.stack([np.eye(3)] * 4))
    with pytest.raises(ValueError, match="lower and upper \\(shapes \\(2,\\), \\(3,\\)\\) do not broadcast together"):
        fr.truncated_normal(KEY, np.zeros(2), np.ones(3))
    with pytest.raises(ValueError, match="lower and upper \\(shapes \\(3,\\), \\(\\)\\) must broadcast to shape \\(2,\\)"):
        fr.truncated_normal(KEY, np.zeros(3), 1.0, (2,))
    with pytest.raises(ValueError, match="split: shape must not have negative sizes"):
        fr.split(KEY, -1)


def test_bad_arguments():
    with pytest.raises(TypeError, match="normal: dtype must be a real float type"):
        fr.normal(KEY, (), np.int32)
    with pytest.raises(TypeError, match="truncated_normal: dtype must be a real float type.*got int32"):
        fr.truncated_normal(KEY, -1.0, 1.0, (), np.int32)
    with pytest.raises(TypeError, match="randint: dtype must be an integer type"):
        fr.randint(KEY, (), 0, 3, np.float64)
    with pytest.raises(TypeError, match="randint: minval must be integers"):
        fr.randint(KEY, (), 0.5, 3)
    with pytest.raises(TypeError, match="bits: dtype must be an unsigned integer type"):
        fr.bits(KEY, (), np.int32)
    with pytest.raises(TypeError, match="key: seed must be an integer scalar, got f64"):
        fr.key(1.5)
    with pytest.raises(ValueError, match="seed must fit in 128 bits"):
        fr.key(2**128)
    with pytest.raises(TypeError, match="fold_in: data must be an integer scalar"):
        fr.fold_in(KEY, np.arange(2))
    with pytest.raises(ValueError, match="cannot take 4 samples without replacement from 3 entries"):
        fr.choice(KEY, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="p must have shape \\(3,\\)"):
        fr.choice(KEY, 3, (2,), p=np.ones(4) / 4)
    with pytest.raises(ValueError, match="a is empty but samples were asked for"):
        fr.choice(KEY, 0, (2,))
    with pytest.raises(TypeError, match="permutation: x must be an int or an array of at least one axis"):
        fr.permutation(KEY, np.float64(3.0))
    with pytest.raises(ValueError, match="method must be 'cholesky'"):
        fr.multivariate_normal(KEY, np.zeros(2), np.eye(2), method="svd")
    with pytest.raises(TypeError, match="random_bits: keys must be uint64 arrays of shape \\(..., 2\\)"):
        fgrad.make_jaxpr(lambda k: prim.random_bits(k, shape=(), dtype=np.dtype(np.uint32)))(np.zeros(3))


def test_fgrad_random_is_a_lazy_attribute():
    assert fgrad.random is fr
