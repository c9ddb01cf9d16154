"""fgrad.numpy.fft and the `fft` primitive: values and dtypes against NumPy (traced,
under jit and eager), derivatives to second order in both modes (real and complex
inputs, real functions of the complex results), the transposes against the jvp
(<u, J v> = <J^T u, v>), vmap against a loop with the batch axis anywhere, and
the errors."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.primitives import fft as fp
from fgrad.test_util import check_grads
from tests.primitives.test_linalg import traced

FFT = fnp.fft
R = np.random.default_rng(2718)
X = R.normal(size=(4, 5))
Z = R.normal(size=(4, 5)) + 1j * R.normal(size=(4, 5))
T = R.normal(size=(2, 3, 4))
NORMS = [None, "backward", "ortho", "forward"]

PRIMITIVES = {"fft"}

BATCH_CASES = {
    "fft": (lambda x: fp.fft(x, fft_type="fft", axes=(1,), lengths=(3,), norm="ortho"), [(2, 3)], "real"),
    "fft_ifft_complex": (lambda x: FFT.ifft(x * (1 + 0.5j), n=4, axis=0), [(3, 2)], "real"),
    "fft_fft2": (lambda x: FFT.fft2(x, s=(3, 2)), [(2, 3, 2)], "real"),
    "fft_rfft": (lambda x: FFT.rfft(x, axis=0, norm="forward"), [(5, 2)], "real"),
    "fft_irfft_odd": (lambda x: FFT.irfft(x * (1 - 1j), n=5), [(2, 3)], "real"),
    "fft_irfftn": (lambda x: FFT.irfftn(x + 0.5j, s=(2, 4), axes=(1, 0)), [(3, 2)], "real"),
    "fft_rfftn_repeated_axis": (lambda x: FFT.rfftn(x, s=(3, 4), axes=(0, 0)), [(3, 2)], "real"),
    "fft_hfft": (lambda x: FFT.hfft(x * 1j + x[::-1]), [(3,)], "real"),
    "fft_fftshift": (lambda x: FFT.fftshift(FFT.fft(x), axes=0), [(3, 2)], "real"),
}


def check_values(f, *args):
    """fgrad's primitives (traced, and under jit) give NumPy's values, dtype and shape."""
    expected = f(*args)  # no transform active: NumPy itself
    for got in (traced(f)(*args), fgrad.jit(f)(*args)):
        got = np.asarray(got)
        assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype, (got, expected)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)


def check_transpose(f, x, seed=0):
    """Re sum(u * J v) = Re sum(J^T u * v) (JAX's convention: no conjugation) for
    random v like x and u like f(x)."""
    rng = np.random.default_rng(seed)

    def like(a):
        a = np.asarray(a)
        r = rng.normal(size=a.shape)
        return (r + 1j * rng.normal(size=a.shape)).astype(a.dtype) if a.dtype.kind == "c" else r.astype(a.dtype)

    v = like(x)
    out, jv = fgrad.jvp(f, (x,), (v,))
    u = like(out)
    out, vjp_fn = fgrad.vjp(f, x)
    (ju,) = vjp_fn(u)
    assert np.asarray(ju).dtype == np.asarray(x).dtype
    np.testing.assert_allclose(np.real(np.sum(u * jv)), np.real(np.sum(ju * v)), rtol=1e-10, atol=1e-10)


# --- one axis: every n, axis and norm ------------------------------------------------------

ONE_AXIS = [
    (name, n, axis, norm)
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    for n in (None, 3, 4, 8, 9)
    for axis in (-1, 0)
    for norm in NORMS
]


@pytest.mark.parametrize("name, n, axis, norm", ONE_AXIS)
def test_one_axis_values_derivatives_and_transpose(name, n, axis, norm):
    f = lambda x: getattr(FFT, name)(x, n=n, axis=axis, norm=norm)
    check_values(f, X)
    check_grads(f, (X,), order=2)
    check_transpose(f, X)
    if name not in ("rfft", "ihfft"):  # these take real input only
        check_values(f, Z)
        check_grads(f, (Z,), order=1)
        check_transpose(f, Z)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.complex64])
def test_dtypes_are_numpy_2s(name, dtype):
    if name in ("rfft", "ihfft") and np.dtype(dtype).kind == "c":
        return
    x = (np.abs(X) * 3).astype(dtype)
    f = getattr(FFT, name)
    expected = f(x)
    for got in (traced(f)(x), fgrad.jit(f)(x)):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=2e-3 if dtype == np.float16 else 1e-5)


def test_float32_stays_single_precision_in_both_modes():
    x = X.astype(np.float32)
    f = lambda x: fnp.sum(fnp.abs(FFT.rfft(x, n=6)) ** 2)
    g = fgrad.grad(f)(x)
    assert g.dtype == np.float32
    check_grads(f, (x,), order=1)
    assert fgrad.grad(lambda z: fnp.sum(FFT.irfft(z)))(Z.astype(np.complex64)).dtype == np.complex64


@pytest.mark.parametrize("n", [4, 5, 6, 7])
def test_irfft_ignores_what_numpy_ignores(n):
    # The zero frequency's imaginary part (and the last's, for even n) has no effect:
    # its derivative is 0, as a finite difference sees.
    z = Z[0, : n // 2 + 1]
    g = fgrad.grad(lambda z: fnp.sum(FFT.irfft(z, n=n) * np.arange(n)))(z)
    assert g[0].imag == 0
    if n % 2 == 0:
        assert g[-1].imag == 0
    check_grads(lambda z: FFT.irfft(z, n=n), (z,), order=2)


def test_real_functions_of_the_complex_results():
    w = R.normal(size=(4, 5)) + 1j * R.normal(size=(4, 5))
    for f in [lambda x: fnp.sum(fnp.abs(FFT.fft(x)) ** 2),
              lambda x: fnp.real(FFT.fft(x, axis=0) * w),
              lambda x: fnp.imag(FFT.ifft2(x, norm="ortho") * w),
              lambda x: fnp.sum(fnp.real(FFT.rfft(x) * w[:, :3])),
              lambda x: fnp.imag(FFT.fftn(x * w))]:
        check_grads(f, (X,), order=2)
    # Parseval: sum |fft(x)|^2 = n sum x^2, so the gradient is 2 n x
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(fnp.abs(FFT.fft(x)) ** 2))(X), 10 * X)
    # JAX's convention for a real function of complex z: df/dx - i df/dy
    g = fgrad.grad(lambda z: fnp.sum(fnp.abs(FFT.fft(z, norm="ortho")) ** 2))(Z)
    np.testing.assert_allclose(g, 2 * np.conj(Z))


def test_jvp_is_the_transform_of_the_tangent():
    _, t = fgrad.jvp(lambda x: FFT.rfft(x, n=7), (X,), (Z.real[::-1],))
    np.testing.assert_allclose(t, np.fft.rfft(Z.real[::-1], n=7))


# --- several axes ---------------------------------------------------------------------------

N_D = [
    ("fftn", {}), ("fftn", {"s": (3, 6), "axes": (0, -1)}), ("fftn", {"axes": (-1, 0), "norm": "ortho"}),
    ("ifftn", {"s": (2, 2, 5), "axes": (2, 0, 1), "norm": "forward"}), ("ifftn", {"axes": (1,)}),
    ("rfftn", {}), ("rfftn", {"s": (3, 5), "axes": (2, 1)}), ("rfftn", {"s": (4, 2, 6), "axes": (0, 1, 2),
                                                                         "norm": "ortho"}),
    ("irfftn", {}), ("irfftn", {"s": (3, 5), "axes": (1, 2)}), ("irfftn", {"s": (2, 3, 4), "axes": (2, 0, 1),
                                                                          "norm": "forward"}),
    ("irfftn", {"axes": (0, 1), "s": (4, -1)}),
    ("fft2", {}), ("fft2", {"s": (2, 6), "norm": "forward"}), ("ifft2", {"axes": (0, 2)}),
    ("rfft2", {}), ("rfft2", {"s": (5, 3), "axes": (-1, -2)}), ("irfft2", {}), ("irfft2", {"s": (3, 7)}),
    # an axis given twice is transformed twice, as NumPy does
    ("fftn", {"axes": (0, 0)}), ("ifftn", {"s": (5, 2), "axes": (1, 1)}),
    ("rfftn", {"s": (3, 4, 2), "axes": (1, 2, 1)}), ("irfftn", {"s": (4, 6), "axes": (2, 2)}),
]


@pytest.mark.parametrize("name, kwargs", N_D, ids=[f"{n}-{i}" for i, (n, _) in enumerate(N_D)])
def test_several_axes(name, kwargs):
    f = lambda x: getattr(FFT, name)(x, **kwargs)
    check_values(f, T)
    check_grads(f, (T,), order=2)
    check_transpose(f, T)
    if not name.startswith("rfft"):
        t = T + 1j * T[::-1]
        check_values(f, t)
        check_transpose(f, t)


def test_deprecated_forms_warn_as_numpy_does():
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        expected = np.fft.fftn(T, s=(2, 5))
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        got = traced(lambda x: FFT.fftn(x, s=(2, 5)))(T)
    np.testing.assert_allclose(got, expected)
    with pytest.warns(DeprecationWarning, match="containing `None` values"):
        expected = np.fft.irfftn(T, s=(3, None), axes=(0, 2))
    with pytest.warns(DeprecationWarning, match="containing `None` values"):
        got = traced(lambda x: FFT.irfftn(x, s=(3, None), axes=(0, 2)))(T)
    np.testing.assert_allclose(got, expected)


def test_no_axes():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(fgrad.jit(lambda x: FFT.fftn(x, axes=()))(T), np.fft.fftn(T, axes=()))
        assert fgrad.jit(FFT.fftn)(np.float64(2.0)) == np.fft.fftn(np.float64(2.0))
    with pytest.raises(IndexError, match="needs at least one axis"):
        fgrad.jit(lambda x: FFT.rfftn(x, axes=()))(T)


# --- hypothesis: any shape, axis, length and norm ----------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_transform_matches_numpy_and_its_transpose_its_jvp(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    name = data.draw(st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.one_of(st.none(), st.integers(1, 8)))
    if n is None and name in ("irfft", "hfft") and shape[axis] == 1:
        n = 1  # the default length 2 * (1 - 1) is invalid
    norm = data.draw(st.sampled_from(NORMS))
    x = np.random.default_rng(data.draw(st.integers(0, 2**20))).normal(size=shape)
    f = lambda x: getattr(FFT, name)(x, n=n, axis=axis, norm=norm)
    check_values(f, x)
    check_transpose(f, x)


# --- vmap and jit ----------------------------------------------------------------------------


@pytest.mark.parametrize("in_axis", [0, 1, 2, -1])
@pytest.mark.parametrize("f", [
    lambda x: FFT.fft(x, n=6),
    lambda x: FFT.irfft(x * 1j + 1, axis=0),
    lambda x: FFT.rfftn(x, s=(3, 4), axes=(1, 0), norm="ortho"),
    lambda x: FFT.ifft2(x, s=(4, 2)),
    lambda x: FFT.fftshift(FFT.rfft(x), axes=-1),
], ids=["fft", "irfft", "rfftn", "ifft2", "fftshift"])
def test_vmap_over_a_batch_axis_anywhere(f, in_axis):
    batch = R.normal(size=(3, 4, 5))
    got = fgrad.vmap(f, in_axes=in_axis, out_axes=-1)(batch)
    expected = np.stack([f(np.take(batch, i, axis=in_axis)) for i in range(batch.shape[in_axis])], axis=-1)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
    # and derivatives of the batched transform
    grads = fgrad.vmap(fgrad.grad(lambda x: fnp.sum(fnp.abs(f(x)) ** 2)), in_axes=in_axis)(batch)
    loop = [fgrad.grad(lambda x: fnp.sum(fnp.abs(f(x)) ** 2))(np.take(batch, i, axis=in_axis))
            for i in range(batch.shape[in_axis])]
    np.testing.assert_allclose(grads, np.stack(loop), rtol=1e-10)


def test_jit_of_derivatives_equals_eager():
    f = lambda x: fnp.sum(fnp.real(FFT.irfft2(FFT.rfft2(x, s=(3, 6)) * Z[:3, :4], s=(3, 6))) ** 2)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(f))(X), fgrad.grad(f)(X), rtol=1e-12)
    np.testing.assert_allclose(fgrad.jit(f)(X), f(X), rtol=1e-12)


def test_the_primitive_in_a_jaxpr():
    text = str(fgrad.make_jaxpr(lambda x: FFT.rfft(x, n=3, norm="ortho"))(X))
    assert "getitem" in text and "fft[fft_type=rfft axes=(1,) lengths=(3,) norm=ortho]" in text


def test_numpy_functions_on_traced_values_dispatch_to_fgrad():
    g = fgrad.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(X)
    np.testing.assert_allclose(g, 10 * X)
    np.testing.assert_allclose(fgrad.jit(lambda x: np.fft.fftshift(np.fft.irfftn(x)))(Z), np.fft.fftshift(
        np.fft.irfftn(Z)))


# --- shifts and frequencies ------------------------------------------------------------------


@pytest.mark.parametrize("axes", [None, 0, -1, (1, 0), [2]])
def test_fftshift_and_ifftshift(axes):
    x = R.normal(size=(3, 4, 5))
    for name in ("fftshift", "ifftshift"):
        f = lambda x: getattr(FFT, name)(x, axes=axes)
        check_values(f, x)
        check_grads(f, (x,), order=1)
    np.testing.assert_array_equal(fgrad.jit(lambda x: FFT.ifftshift(FFT.fftshift(x, axes), axes))(x), x)
    assert fgrad.jit(FFT.fftshift)(np.float64(3.0)) == 3.0


@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.1, np.float32(0.5), 2])
def test_fftfreq_and_rfftfreq(n, d):
    for name in ("fftfreq", "rfftfreq"):
        expected = getattr(np.fft, name)(n, d)
        got = getattr(FFT, name)(n, d)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        # d traced: the same values, and the derivative of k / (n d)
        traced_value = fgrad.jit(lambda d: getattr(FFT, name)(n, d))(np.float64(d))
        np.testing.assert_allclose(traced_value, getattr(np.fft, name)(n, np.float64(d)), rtol=1e-15)
        k = getattr(np.fft, name)(n, 1.0 / n)
        np.testing.assert_allclose(fgrad.jacfwd(lambda d: getattr(FFT, name)(n, d))(float(d)),
                                   -k / (n * float(d) ** 2), rtol=1e-12)
    assert fgrad.jit(lambda d: FFT.fftfreq(4, d, device="cpu"))(1.0).dtype == np.float64


# --- errors ------------------------------------------------------------------------------------


def test_errors():
    for name in ("fft", "rfft", "irfft", "hfft"):
        with pytest.raises(IndexError):  # NumPy's: a 0-d array has no axis to transform
            getattr(np.fft, name)(np.float64(1.0))
        with pytest.raises(IndexError, match="axis -1 is out of bounds for array of dimension 0"):
            fgrad.jit(getattr(FFT, name))(np.float64(1.0))
        with pytest.raises(IndexError, match="axis 2 is out of bounds"):
            fgrad.jit(lambda x: getattr(FFT, name)(x, axis=2))(X)
        with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
            fgrad.jit(lambda x: getattr(FFT, name)(x, n=0))(X)
        with pytest.raises(ValueError, match='Invalid norm value ortogonal; should be "backward"'):
            fgrad.jit(lambda x: getattr(FFT, name)(x, norm="ortogonal"))(X)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        fgrad.jit(FFT.irfft)(X[:, :1])  # default length 2 * (1 - 1)
    with pytest.raises(TypeError, match="rfft takes real input, but it got c128"):
        fgrad.jit(FFT.rfft)(Z)
    with pytest.raises(TypeError, match="rfft takes real input"):
        fgrad.jit(FFT.ihfft)(Z)
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        fgrad.jit(lambda x: FFT.fftn(x, s=(2, 3), axes=(0,)))(T)
    with pytest.raises(IndexError, match="axis 3 is out of bounds"):
        fgrad.jit(lambda x: FFT.rfftn(x, axes=(0, 3)))(T)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.fft.fft needs `n` as a concrete"):
        fgrad.jit(lambda x, n: FFT.fft(x, n=n))(X, 3)
    with pytest.raises(TypeError, match="fgrad.numpy.fft.rfft2 got out="):
        fgrad.jit(lambda x: FFT.rfft2(x, out=np.empty((4, 3), complex)))(X)
    with pytest.raises(ValueError, match="n should be an integer"):
        fgrad.jit(lambda d: FFT.fftfreq(4.0, d))(1.0)
    with pytest.raises(ValueError, match="device must be None or 'cpu'"):
        fgrad.jit(lambda d: FFT.rfftfreq(4, d, device="gpu"))(1.0)


def test_primitive_checks_its_operand():
    with pytest.raises(ValueError, match=r"takes lengths \(3,\) there, but the operand is f64\[4,5\]"):
        fgrad.make_jaxpr(lambda x: fp.fft(x, fft_type="irfft", axes=(1,), lengths=(5,), norm="backward"))(X)
    with pytest.raises(ValueError, match="must be distinct axes"):
        fgrad.make_jaxpr(lambda x: fp.fft(x, fft_type="fft", axes=(1, 1), lengths=(5, 5), norm="backward"))(X)
    with pytest.raises(ValueError, match="fft_type must be one of"):
        fgrad.make_jaxpr(lambda x: fp.fft(x, fft_type="dct", axes=(1,), lengths=(5,), norm="backward"))(X)
