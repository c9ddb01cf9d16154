"""Complex numbers: values as NumPy's, derivatives with JAX's conventions
(grad of a real function of z is df/dx - i df/dy; holomorphic=True gives f'(z)),
checked numerically in both modes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.numpy_checks import staged, staged_with_aval
from tests.strategies import shapes, values


def complex_values(shape, seed):
    return values(shape, "real", seed) + 1j * values(shape, "nonzero", seed + 1)


PRIMITIVES = {"real", "imag", "conj", "angle"}
BATCH_CASES = {
    "real": (lambda x: fnp.real(x * (1 + 2j)), [(3,)], "real"),
    "imag": (lambda x: fnp.imag(x * (1 - 1j)), [(2, 3)], "real"),
    "conj": (lambda x: fnp.real(fnp.conj(x * 1j) * x), [(3,)], "real"),
    "angle": (lambda x: fnp.angle(x + 1j), [(3,)], "real"),
}

FUNCTIONS = [
    ("real", fnp.real, np.real), ("imag", fnp.imag, np.imag), ("conj", fnp.conj, np.conj),
    ("angle", fnp.angle, np.angle), ("abs", fnp.abs, np.abs), ("exp", fnp.exp, np.exp),
    ("sin", fnp.sin, np.sin), ("square", fnp.square, np.square), ("sqrt", fnp.sqrt, np.sqrt),
    ("log", fnp.log, np.log), ("mul_conj", lambda z: z * fnp.conj(z), lambda z: z * np.conj(z)),
    ("sum_sq", lambda z: fnp.sum(z**2), lambda z: np.sum(z**2)),
]


@pytest.mark.parametrize("name, f, ref", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
@given(shape=shapes, seed=st.integers(0, 2**20))
def test_values_and_derivatives(name, f, ref, shape, seed):
    z = complex_values(shape, seed)
    np.testing.assert_allclose(f(z), ref(z), rtol=1e-13)
    assert np.asarray(f(z)).dtype == np.asarray(ref(z)).dtype
    check_grads(f, (z,), order=2)


def test_grad_of_a_real_function_of_z_is_the_conjugate_gradient():
    z = np.array([3 + 4j, 1 - 2j])
    np.testing.assert_allclose(fgrad.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(z), 2 * np.conj(z))
    np.testing.assert_allclose(fgrad.grad(lambda z: fnp.sum(fnp.abs(z)))(z), np.conj(z) / np.abs(z))
    # f = x * y: df/dx - i df/dy = y - i x
    np.testing.assert_allclose(fgrad.grad(lambda z: fnp.sum(z.real * z.imag))(z), z.imag - 1j * z.real)
    assert fgrad.grad(lambda z: fnp.abs(z))(0j) == 0  # not nan


def test_holomorphic_grad_and_jacobians_give_the_complex_derivative():
    z = np.array([0.3 + 0.4j, -1.0 + 0.5j])
    assert fgrad.grad(lambda z: z**3, holomorphic=True)(1 + 2j) == pytest.approx(3 * (1 + 2j) ** 2)
    for jac in (fgrad.jacfwd, fgrad.jacrev):
        np.testing.assert_allclose(jac(fnp.sin, holomorphic=True)(z), np.diag(np.cos(z)))
    np.testing.assert_allclose(
        fgrad.hessian(lambda z: fnp.sum(z**3), holomorphic=True)(z), np.diag(6 * z), rtol=1e-12
    )


def test_complex_misuse_messages():
    with pytest.raises(TypeError, match="real floating-point scalar.*holomorphic=True"):
        fgrad.grad(lambda z: z * 2)(1j)
    with pytest.raises(TypeError, match="grad\\(holomorphic=True\\) requires complex inputs"):
        fgrad.grad(lambda z: z * 2, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="jacfwd requires real inputs.*holomorphic=True"):
        fgrad.jacfwd(fnp.sin)(np.array([1j]))
    with pytest.raises(TypeError, match="jacrev requires float outputs.*holomorphic=True"):
        fgrad.jacrev(lambda x: x * 1j)(np.array([1.0]))


def test_complex_float32_stays_complex64():
    z = np.array([1 + 1j], np.complex64)
    assert fgrad.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(z).dtype == np.complex64
    assert fnp.real(z).dtype == np.float32


def test_tracer_real_imag_conj_attributes():
    def f(z):
        return fnp.sum(z.real**2 + z.imag**2 + (z.conj() * z).real)

    z = np.array([1 + 2j])
    np.testing.assert_allclose(fgrad.grad(f)(z), 4 * np.conj(z))


# --- real and complex together ------------------------------------------------------------

MIXED = {  # real x (broadcast against complex z where both appear), checked in both modes
    "real_times_complex_constant": (lambda x, z: x * (1 + 2j) + z, [(2, 3), (3,)]),
    "complex_times_real": (lambda x, z: z * x, [(3,), (2, 1)]),
    "complex_over_real": (lambda x, z: z / (x + 3.0), [(2, 3), ()]),
    "complex_power_real": (lambda x, z: fnp.power(z, x), [(3,), (3,)]),
    "real_power_complex": (lambda x, z: fnp.power(x + 3.0, z), [(), (2, 3)]),
    "where_complex_branches": (lambda x, z: fnp.where(x > 0, z * z, x), [(2, 3), (3,)]),
    "where_real_and_complex": (lambda x, z: fnp.where(x > 0, x * x, fnp.sin(z)), [(3,), (2, 3)]),
    "real_to_complex_cast": (lambda x, z: fnp.astype(x, np.complex128) * z, [(3,), (3,)]),
    "complex_to_real_cast": (lambda x, z: fnp.astype(z * x, np.float64), [(2, 3), (3,)]),
    "real_part_times_real": (lambda x, z: fnp.real(z) * x + fnp.imag(z * x), [(3,), (2, 3)]),
}


@pytest.mark.parametrize("name", sorted(MIXED))
@given(seed=st.integers(0, 2**20))
def test_real_and_complex_mixed(name, seed):
    f, (x_shape, z_shape) = MIXED[name]
    x, z = values(x_shape, "nonzero", seed), complex_values(z_shape, seed + 2)
    with np.errstate(all="ignore"):
        expected = f(x, z)  # NumPy itself, no transform active
    np.testing.assert_allclose(staged(f, x, z), expected, rtol=1e-14)
    assert np.asarray(staged(f, x, z)).dtype == np.asarray(expected).dtype
    check_grads(f, (x, z), order=2)


def test_casts_between_real_and_complex_and_their_transposes():
    x, z = np.array([0.5, -1.5]), np.array([1 + 2j, -3 - 1j])
    # real -> complex: the cotangent of x is the real part of the complex cotangent
    _, vjp_fn = fgrad.vjp(lambda x: fnp.astype(x, np.complex128), x)
    np.testing.assert_array_equal(vjp_fn(np.array([1 + 5j, 2 - 3j]))[0], [1.0, 2.0])
    # complex -> real keeps the real part, and its transpose gives it back as a complex number
    _, vjp_fn = fgrad.vjp(lambda z: fnp.astype(z, np.float64), z)
    ct = vjp_fn(np.array([2.0, -1.0]))[0]
    assert ct.dtype == np.complex128
    np.testing.assert_array_equal(ct, [2.0, -1.0])
    for dtype in (np.complex64, np.complex128, np.float32, np.float64):
        check_grads(lambda z, dtype=dtype: fnp.astype(z, dtype) * 2.0, (z,), order=2, eps=1e-3, atol=1e-2, rtol=1e-2)


def test_derivatives_at_complex64_stay_complex64():
    z = complex_values((3,), 7).astype(np.complex64)
    for f in (fnp.sin, fnp.exp, lambda z: z * fnp.conj(z), lambda z: fnp.sqrt(z) * np.float32(2), fnp.abs, fnp.angle):
        check_grads(f, (z,), order=2)
        _, vjp_fn = fgrad.vjp(f, z)
        out = f(z)
        assert vjp_fn(np.ones_like(out))[0].dtype == np.complex64
        assert np.asarray(fgrad.jvp(f, (z,), (np.ones_like(z),))[1]).dtype == np.asarray(out).dtype
    text = str(fgrad.make_jaxpr(fgrad.grad(lambda z: fnp.sum(fnp.abs(fnp.sin(z)) ** 2)))(z))
    assert "c128" not in text and "f64" not in text, text


def test_complex_to_bool_counts_both_parts():
    z = np.array([[1j, 0j, 2, -0.5j]])
    expected = z.astype(bool)
    np.testing.assert_array_equal(fgrad.vmap(lambda v: v.astype(bool))(z), expected)
    np.testing.assert_array_equal(staged(lambda v: fnp.astype(v, np.bool_), z), expected)
    np.testing.assert_array_equal(fgrad.vmap(lambda v: fnp.asarray(v, dtype=bool))(z), expected)
    # to integers and floats the real part is kept, as NumPy does (with its ComplexWarning)
    np.testing.assert_array_equal(staged(lambda v: fnp.astype(v, np.int64), np.array([2.7 + 5j])), [2])
    primal, tangent = fgrad.jvp(lambda v: fnp.astype(v, np.bool_) * v, (z[0],), (np.ones(4, complex),))
    np.testing.assert_array_equal(tangent, expected[0].astype(complex))


CONJ_REAL_IMAG_INPUTS = {
    "bool": np.array([True, False]), "int8": np.array([3, -2], np.int8), "float32": np.float32([0.5, -1.5]),
    "complex64": np.complex64([1 + 2j]), "python_float": 1.5, "python_complex": 1.5 - 2j, "python_int": 3,
}


@pytest.mark.parametrize("input_name", sorted(CONJ_REAL_IMAG_INPUTS))
@pytest.mark.parametrize("name", ["conj", "real", "imag"])
def test_conj_real_imag_dtypes_are_numpys(name, input_name):
    value = CONJ_REAL_IMAG_INPUTS[input_name]
    fgrad_fn, numpy_fn = getattr(fnp, name), getattr(np, name)
    x32 = np.float32([1.0, 2.0])

    def f(a):  # the result next to a float32 array: a weak (Python) result does not widen it
        return fgrad_fn(value) * a

    expected = numpy_fn(value) * x32
    out, aval = staged_with_aval(f, x32)
    assert aval.dtype == np.asarray(out).dtype == expected.dtype
    assert type(fgrad_fn(value)) is type(numpy_fn(value))  # no transform: NumPy's own result
    alone = fgrad.make_jaxpr(lambda a: fgrad_fn(value))(x32).out_avals[0]
    assert alone.dtype == np.result_type(numpy_fn(value))
    if isinstance(value, np.ndarray):
        out, aval = staged_with_aval(fgrad_fn, value)
        assert aval.dtype == np.asarray(out).dtype == numpy_fn(value).dtype


def test_conj_of_a_real_value_transposes_to_the_cotangent_itself():
    assert fgrad.grad(lambda x: fnp.conj(x) * 3.0)(2.0) == 3.0
    _, vjp_fn = fgrad.vjp(fnp.conj, np.float32([1.0, 2.0]))
    assert vjp_fn(np.float32([4.0, 5.0]))[0].dtype == np.float32
    text = str(fgrad.make_jaxpr(lambda x, ct: fgrad.vjp(fnp.conj, x)[1](ct))(np.ones(2), np.ones(2)))
    assert "real" not in text and text.endswith("in (b,) }"), text  # the cotangent b itself


def test_a_python_complex_tangent_for_a_real_input_is_refused_with_the_fix():
    message = ("the tangent has dtype complex128 \\(a Python complex\\), but the corresponding primal input "
               "has dtype float64 \\(shape \\(\\)\\). They must match; convert it with .astype\\('float64'\\)")
    with pytest.raises(TypeError, match=message):
        fgrad.jvp(fnp.sin, (1.0,), (1j,))
    with pytest.raises(ValueError, match="the cotangent has dtype complex128 \\(a Python complex\\)"):
        fgrad.vjp(fnp.sin, 1.0)[1](1j)
    # a Python number that fits is taken in the input's dtype, as before
    assert fgrad.jvp(fnp.sin, (np.float32(1.0),), (2,))[1].dtype == np.float32
    assert fgrad.jvp(fnp.sin, (1j,), (1.0,))[1] == pytest.approx(np.cos(1j))
