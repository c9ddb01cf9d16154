"""fgrad.scipy.signal: values, shapes and alignment against scipy.signal for
every mode (even and odd sizes, in2 larger than in1, 0-d to 3-d), real and
complex, boundaries of convolve2d/correlate2d; derivatives in both inputs to
second order in both modes; vmap against a loop (BATCH_CASES); jit against
eager; SciPy's errors. The traced computation is fgrad's own (a gather and a
product), so it is checked under jit and grad, where SciPy is not called."""

import numpy as np
import pytest
import scipy.signal as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.scipy.signal as fss
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

BATCH_CASES = {  # positive inputs: no cancellation, so a batched product agrees with a loop to 1e-12
    "signal_convolve": (lambda a, b: fss.convolve(a, b), [(4,), (2,)], "positive"),
    "signal_convolve_same_2d": (lambda a, b: fss.convolve(a, b, mode="same"), [(3, 4), (2, 2)], "positive"),
    "signal_correlate_valid": (lambda a, b: fss.correlate(a, b, mode="valid"), [(2, 3), (3, 4)], "positive"),
    "signal_convolve2d_wrap": (lambda a, b: fss.convolve2d(a, b, boundary="wrap"), [(3, 2), (2, 3)], "positive"),
    "signal_correlate2d_symm": (lambda a, b: fss.correlate2d(a, b, "same", "symm"), [(3, 3), (2, 2)], "positive"),
}


def _valid_possible(shape1, shape2):
    return all(n >= m for n, m in zip(shape1, shape2)) or all(m >= n for n, m in zip(shape1, shape2))


def _inputs(shape1, shape2, seed, kind):
    x, k = values(shape1, "real", seed), values(shape2, "real", seed + 1)
    if kind == "complex":
        x, k = x + 1j * values(shape1, "real", seed + 2), k - 1j * values(shape2, "real", seed + 3)
    elif kind == "float32":
        x, k = x.astype(np.float32), k.astype(np.float32)
    elif kind == "int":
        x, k = np.round(3 * x).astype(np.int64), np.round(3 * k).astype(np.int64)
    return x, k


def _check(got, want):
    want = np.asarray(want)
    assert np.shape(got) == want.shape
    assert np.asarray(got).dtype == want.dtype
    tol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


pair_shapes = st.integers(1, 3).flatmap(
    lambda nd: st.tuples(*[st.tuples(st.integers(1, 5), st.integers(1, 4)) for _ in range(nd)])
).map(lambda sides: (tuple(s[0] for s in sides), tuple(s[1] for s in sides)))


@settings(deadline=None)
@given(shapes=pair_shapes, seed=seeds, data=st.data())
def test_convolve_and_correlate_against_scipy(shapes, seed, data):
    shape1, shape2 = shapes if data.draw(st.booleans()) else shapes[::-1]
    kind = data.draw(st.sampled_from(["float64", "complex", "float32", "int"]))
    modes = ["full", "same"] + (["valid"] if _valid_possible(shape1, shape2) else [])
    mode = data.draw(st.sampled_from(modes))
    method = data.draw(st.sampled_from(["auto", "direct", "fft"] if kind != "int" else ["direct"]))
    x, k = _inputs(shape1, shape2, seed, kind)
    for name in ("convolve", "correlate"):
        want = getattr(ss, name)(x, k, mode=mode, method=method)
        f = lambda x, k: getattr(fss, name)(x, k, mode=mode, method=method)  # noqa: E731, B023
        _check(f(x, k), want)  # SciPy's own
        _check(fgrad.jit(f)(x, k), want)  # fgrad's traced computation


def test_same_mode_centers_like_scipy_for_even_and_odd_sizes():
    x = np.arange(1.0, 8.0)
    for m in range(1, 9):
        k = np.arange(1.0, m + 1)
        for name in ("convolve", "correlate"):
            _check(fgrad.jit(lambda x, k: getattr(fss, name)(x, k, mode="same"))(x, k),  # noqa: B023
                   getattr(ss, name)(x, k, mode="same"))


def test_zero_dimensional_inputs():
    for name in ("convolve", "correlate"):
        want = getattr(ss, name)(np.float64(2.0), np.complex128(1 + 2j))
        _check(fgrad.jit(getattr(fss, name))(np.float64(2.0), np.complex128(1 + 2j)), want)


@settings(deadline=None)
@given(shapes=pair_shapes.filter(lambda s: len(s[0]) == 2), seed=seeds, data=st.data())
def test_convolve2d_and_correlate2d_against_scipy(shapes, seed, data):
    shape1, shape2 = shapes if data.draw(st.booleans()) else shapes[::-1]
    kind = data.draw(st.sampled_from(["float64", "complex", "float32"]))
    modes = ["full", "same"] + (["valid"] if _valid_possible(shape1, shape2) else [])
    mode = data.draw(st.sampled_from(modes))
    boundary = data.draw(st.sampled_from(["fill", "wrap", "symm", "circular", "symmetric", "pad"]))
    fillvalue = data.draw(st.sampled_from([0, 1.5]))
    x, k = _inputs(shape1, shape2, seed, kind)
    for name in ("convolve2d", "correlate2d"):
        want = getattr(ss, name)(x, k, mode, boundary, fillvalue)
        f = lambda x, k: getattr(fss, name)(x, k, mode, boundary, fillvalue)  # noqa: E731, B023
        _check(f(x, k), want)
        _check(fgrad.jit(f)(x, k), want)


@pytest.mark.parametrize("shapes", [((5,), (3,)), ((3,), (4,)), ((3, 4), (2, 2)), ((2, 3, 2), (2, 2, 2))])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_derivatives_in_both_inputs(shapes, mode):
    x, k = _inputs(*shapes, 0, "float64")
    check_grads(lambda x, k: fss.convolve(x, k, mode), (x, k), order=2)
    check_grads(lambda x, k: fss.correlate(x, k, mode), (x, k), order=2)


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_2d_derivatives(boundary, mode):
    x, k = _inputs((3, 4), (2, 3), 1, "float64")
    check_grads(lambda x, k: fss.convolve2d(x, k, mode, boundary, fillvalue=0.5), (x, k), order=2)
    check_grads(lambda x, k: fss.correlate2d(x, k, mode, boundary), (x, k), order=2)
    check_grads(lambda v: fss.convolve2d(x, k, mode, boundary, fillvalue=v), (0.5,), order=1)


def test_complex_derivatives():
    x, k = _inputs((4,), (2,), 2, "complex")
    check_grads(lambda x, k: fss.correlate(x, k), (x, k), order=1)
    check_grads(lambda x, k: fss.correlate2d(x[None], k[None], "same"), (x, k), order=1)


def test_gradient_of_a_correlation_is_a_convolution():
    x, k = _inputs((6,), (3,), 3, "float64")
    ct = values((4,), "real", 5)
    _, vjp = fgrad.vjp(lambda x: fss.correlate(x, k, mode="valid"), x)
    np.testing.assert_allclose(vjp(ct)[0], ss.convolve(ct, k, mode="full"), rtol=1e-12)


def test_errors():
    static = {"static_argnames": ("mode",)}
    for f in (fss.convolve, fss.correlate, fgrad.jit(fss.convolve, **static), fgrad.jit(fss.correlate, **static)):
        with pytest.raises(ValueError, match="should have the same dimensionality"):
            f(np.ones(2), np.ones((1, 1)))
        with pytest.raises(ValueError, match="Acceptable mode flags are 'valid', 'same', or 'full'"):
            f(np.ones(2), np.ones(2), mode="other")
        with pytest.raises(ValueError, match="one must be at least as large as the other in every dimension"):
            f(np.ones((3, 1)), np.ones((1, 3)), mode="valid")
    with pytest.raises(ValueError, match="Acceptable method flags are 'auto', 'direct', or 'fft'"):
        fss.convolve(np.ones(2), np.ones(2), method="other")
    for f in (fss.convolve2d, fss.correlate2d):
        traced = fgrad.jit(f, static_argnames=("mode", "boundary"))
        for g in (f, traced):
            with pytest.raises(ValueError, match="inputs must both be 2-D arrays"):
                g(np.ones(2), np.ones(2))
            with pytest.raises(ValueError, match="Acceptable boundary flags"):
                g(np.ones((2, 2)), np.ones((1, 1)), mode="full", boundary="other")
            with pytest.raises(ValueError, match="Acceptable mode flags"):
                g(np.ones((2, 2)), np.ones((1, 1)), mode="other", boundary="fill")
            with pytest.raises(ValueError, match="one must be at least as large"):
                g(np.ones((3, 1)), np.ones((1, 3)), mode="valid", boundary="fill")
        with pytest.raises(ValueError, match="`fillvalue` must be scalar"):
            fgrad.jit(lambda a: f(a, np.ones((1, 1)), fillvalue=np.ones(2)))(np.ones((2, 2)))
