"""Elementwise, linear-algebra, FFT and special-function primitives on arrays of
other libraries (fgrad/primitives/{elementwise,decompositions,fft,special,
scipy_special}.py, their implementations on a namespace, and scipy.stats over them): on
array_api_strict and on chunked Dask arrays, through jit, vmap, jvp and grad,
the values NumPy (or SciPy) gives, in the library's array type and NumPy's dtype."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.linalg as fsl
import fgrad.scipy.special as fsp
import fgrad.scipy.stats as fst
from fgrad.core.avals import get_aval
from fgrad.primitives.random import random_gamma_grad

xs = pytest.importorskip("array_api_strict")
da = pytest.importorskip("dask.array")
scipy_special = pytest.importorskip("scipy.special")
scipy_linalg = pytest.importorskip("scipy.linalg")
scipy_stats = pytest.importorskip("scipy.stats")

pytestmark = pytest.mark.filterwarnings("error::UserWarning")


def _strict(x: Any) -> Any:
    return xs.asarray(np.asarray(x))


def _dask(x: Any) -> Any:
    x = np.asarray(x)
    return da.from_array(x, chunks=tuple(max(1, (n + 1) // 2) for n in x.shape))  # several chunks


LIBRARIES = {"strict": (_strict, type(xs.asarray(0.0))), "dask": (_dask, da.Array)}


def _numpy(y: Any) -> np.ndarray:
    return np.asarray(y.compute()) if hasattr(y, "compute") else np.from_dlpack(y)


def _check(lib: str, got: Any, expected: Any, rtol: float = 1e-12, atol: float = 0.0) -> None:
    expected = np.asarray(expected)
    assert isinstance(got, LIBRARIES[lib][1]), type(got)
    assert get_aval(got).dtype == expected.dtype
    np.testing.assert_allclose(_numpy(got), expected, rtol=rtol, atol=atol, equal_nan=True)


lib_names = pytest.mark.parametrize("lib", list(LIBRARIES))


# --- elementwise ------------------------------------------------------------------------

X = np.array([-2.5, -1.0, -0.3, 0.2, 0.7, 1.5, 2.0, 3.25])
POSITIVE = np.abs(X) + 0.5

# name: (fgrad function, NumPy function, NumPy derivative or None, input)
UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], Any, np.ndarray]] = {
    "sin": (fnp.sin, np.sin, np.cos, X),
    "exp2": (fnp.exp2, np.exp2, lambda x: np.exp2(x) * math.log(2), X),
    "cbrt": (fnp.cbrt, np.cbrt, lambda x: 1 / (3 * np.cbrt(x) ** 2), X),
    "sinc": (fnp.sinc, np.sinc, lambda x: (np.cos(np.pi * x) - np.sinc(x)) / x, X),
    "expm1": (fnp.expm1, np.expm1, np.exp, X),
    "log1p": (fnp.log1p, np.log1p, lambda x: 1 / (1 + x), POSITIVE),
    "arcsinh": (fnp.arcsinh, np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), X),
    "deg2rad": (fnp.deg2rad, np.deg2rad, lambda x: np.full_like(x, np.pi / 180), X),
    "reciprocal": (fnp.reciprocal, np.reciprocal, lambda x: -1 / x**2, X),
    "square": (fnp.square, np.square, lambda x: 2 * x, X),
    "cube": (lambda x: x**3, lambda x: x**3, lambda x: 3 * x**2, X),
    "inverse_square": (lambda x: x**-2, lambda x: np.power(x, -2), lambda x: -2 * x**-3.0, X),
    "round2": (lambda x: fnp.round(x * 1.2345, 2), lambda x: np.round(x * 1.2345, 2), None, X),
    "round-1": (lambda x: fnp.round(x * 123.4, -1), lambda x: np.round(x * 123.4, -1), None, X),
    "trunc": (fnp.trunc, np.trunc, None, X),
    "sign": (fnp.sign, np.sign, None, X),
    "signbit": (fnp.signbit, np.signbit, None, X),
    "angle": (fnp.angle, np.angle, None, X),
    "real": (fnp.real, np.real, lambda x: np.ones_like(x), X),
    "imag": (fnp.imag, np.imag, None, X),
    "logaddexp2": (lambda x: fnp.logaddexp2(x, 0.5), lambda x: np.logaddexp2(x, 0.5),
                   lambda x: 2.0**x / (2.0**x + 2.0**0.5), X),
    "fmod": (lambda x: fnp.fmod(x, 0.75), lambda x: np.fmod(x, 0.75), lambda x: np.ones_like(x), X),
    "heaviside": (lambda x: fnp.heaviside(x, 0.5), lambda x: np.heaviside(x, 0.5), None, X),
    "hypot": (lambda x: fnp.hypot(x, 2.0), lambda x: np.hypot(x, 2.0), lambda x: x / np.hypot(x, 2.0), X),
    "ldexp": (lambda x: fnp.ldexp(x, 3), lambda x: np.ldexp(x, 3), lambda x: np.full_like(x, 8.0), X),
}
DIFFERENTIABLE = [name for name, case in UNARY.items() if case[2] is not None]


@lib_names
@pytest.mark.parametrize("name", list(UNARY))
def test_elementwise_under_jit_and_vmap(lib: str, name: str) -> None:
    f, f_np, _, x = UNARY[name]
    convert = LIBRARIES[lib][0]
    _check(lib, fgrad.jit(f)(convert(x)), f_np(x))
    stack = np.stack([x, x[::-1] * 0.5, x + 0.25])
    _check(lib, fgrad.vmap(f)(convert(stack)), f_np(stack))


@lib_names
@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_elementwise_derivatives(lib: str, name: str) -> None:
    f, f_np, df_np, x = UNARY[name]
    convert = LIBRARIES[lib][0]
    t = np.linspace(0.5, 1.5, x.size)
    out, tangent = fgrad.jvp(f, (convert(x),), (convert(t),))
    _check(lib, out, f_np(x))
    _check(lib, tangent, df_np(x) * t, rtol=1e-10)  # the derivative formulas round differently
    _check(lib, fgrad.grad(lambda x: fnp.sum(f(x)))(convert(x)), df_np(x), rtol=1e-10)


# NumPy's values at nan, infinities, -0.0 and integers, where the standard's
# functions differ from NumPy's (or do not exist).
SPECIAL_VALUES = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -7.0, 27.0, 1e300, 2.5, -2.5])
with np.errstate(over="ignore", invalid="ignore"):
    SPECIAL_VALUES_32 = SPECIAL_VALUES.astype(np.float32)
    SPECIAL_COMPLEX = SPECIAL_VALUES * (1 - 2j)
    SPECIAL_COMPLEX_2 = SPECIAL_VALUES + np.array(1j) * SPECIAL_VALUES[::-1]
    SPECIAL_IMAGINARY = SPECIAL_VALUES * 1j
INTEGERS = np.array([-7, -1, 0, 1, 2, 15, 25, -25])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's own, at nan and inf
@lib_names
@pytest.mark.parametrize("f, f_np, x", [
    (fnp.heaviside, np.heaviside, (SPECIAL_VALUES, 0.5)),
    (fnp.fmod, np.fmod, (SPECIAL_VALUES, 2.0)),
    (fnp.fmod, np.fmod, (INTEGERS, 4)),
    (fnp.angle, np.angle, (SPECIAL_VALUES,)),
    (fnp.angle, np.angle, (SPECIAL_VALUES_32,)),
    (fnp.angle, np.angle, (SPECIAL_COMPLEX,)),
    (fnp.cbrt, np.cbrt, (SPECIAL_VALUES,)),
    (fnp.exp2, np.exp2, (np.array([1000.0, -1000.0, 1023.5, -1074.0, 0.1]),)),
    (fnp.signbit, np.signbit, (SPECIAL_VALUES,)),
    (fnp.signbit, np.signbit, (INTEGERS,)),
    (fnp.reciprocal, np.reciprocal, (INTEGERS[INTEGERS != 0],)),
    (lambda x: fnp.round(x, -1), lambda x: np.round(x, -1), (INTEGERS,)),
    (lambda x: fnp.round(x, 2), lambda x: np.round(x, 2), (INTEGERS,)),
    (lambda x: fnp.round(x, -2), lambda x: np.round(x, -2), (np.array([1250.0, 1350.0, -1234.5, np.inf]),)),
    (lambda x: fnp.round(x, 1), lambda x: np.round(x, 1), (np.array([1.25, 2.675, -0.05]) * (1 + 1j),)),
    (fnp.nan_to_num, np.nan_to_num, (SPECIAL_VALUES,)),
    (fnp.nan_to_num, np.nan_to_num, (SPECIAL_VALUES_32,)),
    (fnp.nan_to_num, np.nan_to_num, (SPECIAL_COMPLEX_2,)),
    (lambda x: fnp.nan_to_num(x, nan=-1.0, posinf=9.0), lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0),
     (SPECIAL_VALUES,)),
    (fnp.logaddexp2, np.logaddexp2, (SPECIAL_VALUES, SPECIAL_VALUES[::-1])),
    (fnp.real, np.real, (INTEGERS,)),
    (fnp.imag, np.imag, (INTEGERS,)),
    (fnp.imag, np.imag, (SPECIAL_IMAGINARY,)),
    (fnp.abs, np.abs, (np.array([True, False]),)),
    (fnp.conj, np.conj, (INTEGERS,)),
    (fnp.ldexp, np.ldexp, (np.full(10, 0.5), np.array([1030, -1080, 3, 0, -2, 5, 7, 1, 2, 3]))),
    (fnp.floor_divide, np.floor_divide, (SPECIAL_VALUES, 2.5)),
    (fnp.copysign, np.copysign, (INTEGERS, -1.0)),
])
def test_elementwise_special_values(lib: str, f: Any, f_np: Any, x: tuple[Any, ...]) -> None:
    convert = LIBRARIES[lib][0]
    with np.errstate(all="ignore"):
        expected = np.asarray(f_np(*x))
    got = fgrad.jit(f)(*(convert(a) for a in x))
    _check(lib, got, expected, rtol=_ulps(expected, 2))  # another library's libm may round differently
    # nan, the infinities and the zeros' signs are exactly NumPy's
    got, special = _numpy(got), ~np.isfinite(expected) | (expected == 0)
    np.testing.assert_array_equal(got[special], expected[special])
    signed = special & ~np.isnan(expected)  # a nan's sign bit means nothing
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(expected[signed]))


def _ulps(expected: np.ndarray, n: int) -> float:
    """A relative tolerance of `n` units in the last place of `expected`'s dtype (0 for exact dtypes)."""
    return n * float(np.finfo(expected.dtype).eps) if expected.dtype.kind in "fc" else 0.0


@lib_names
def test_int_and_float_operands_promote_as_numpy(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    i, f = np.arange(1, 7), np.linspace(0.1, 1.1, 6)
    for fn, fn_np in ((fnp.add, np.add), (fnp.hypot, np.hypot), (fnp.arctan2, np.arctan2),
                      (fnp.maximum, np.maximum), (fnp.less, np.less), (fnp.power, np.power),
                      (fnp.heaviside, np.heaviside), (fnp.true_divide, np.true_divide)):
        _check(lib, fgrad.jit(fn)(convert(i), convert(f)), fn_np(i, f))
    _check(lib, fgrad.jit(fnp.sin)(convert(i)), np.sin(i))
    _check(lib, fgrad.jit(lambda a: a / 2)(convert(i)), i / 2)
    _check(lib, fgrad.jit(lambda a: fnp.where(a > 3, a, 0.5))(convert(i)), np.where(i > 3, i, 0.5))


@lib_names
def test_float32_stays_float32_with_python_scalars(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    x = np.linspace(-1, 1, 6, dtype=np.float32)

    def f(x: Any) -> Any:
        return fnp.hypot(fnp.exp2(x) * 2.0 + 1, 0.5) - fnp.heaviside(x, 0.5) / 3 + x**-2 + fnp.cbrt(x)

    with np.errstate(all="ignore"):
        expected = np.hypot(np.exp2(x) * 2.0 + 1, 0.5) - np.heaviside(x, 0.5) / 3 + x**-2 + np.cbrt(x)
    assert expected.dtype == np.float32
    _check(lib, fgrad.jit(f)(convert(x)), expected, rtol=1e-6)  # float32's precision
    _check(lib, fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * 2.0))(convert(x)), 2 * np.cos(x), rtol=1e-6)


@lib_names
def test_zero_dimensional_and_broadcast_operands(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    column, row = np.linspace(-1, 1, 3)[:, None], np.linspace(0.5, 2, 4)
    _check(lib, fgrad.jit(fnp.logaddexp2)(convert(column), convert(row)), np.logaddexp2(column, row))
    _check(lib, fgrad.jit(fnp.fmod)(convert(row), convert(np.float64(0.75))), np.fmod(row, 0.75))
    _check(lib, fgrad.jit(fnp.cbrt)(convert(np.float64(-8.0))), np.cbrt(np.array(-8.0)))
    g = fgrad.grad(lambda a, b: fnp.sum(fnp.hypot(a, b)), argnums=(0, 1))(convert(column), convert(row))
    h = np.hypot(column, row)
    _check(lib, g[0], np.sum(column / h, axis=1, keepdims=True))
    _check(lib, g[1], np.sum(row / h, axis=0))


Z = X * (0.5 - 0.75j) + 0.25j


@lib_names
@pytest.mark.parametrize("f, f_np", [
    (fnp.sin, np.sin), (fnp.exp2, np.exp2), (fnp.sinc, np.sinc), (fnp.log1p, np.log1p),
    (fnp.reciprocal, np.reciprocal), (fnp.sqrt, np.sqrt), (fnp.sign, np.sign), (fnp.conj, np.conj),
    (fnp.abs, np.abs), (fnp.angle, np.angle), (fnp.real, np.real), (fnp.imag, np.imag),
    (lambda z: z**3, lambda z: z**3), (lambda z: z * 2.0 + 1j, lambda z: z * 2.0 + 1j),
])
def test_complex_operands(lib: str, f: Any, f_np: Any) -> None:
    convert = LIBRARIES[lib][0]
    _check(lib, fgrad.jit(f)(convert(Z)), f_np(Z))
    _check(lib, fgrad.jit(f)(convert(Z.astype(np.complex64))), f_np(Z.astype(np.complex64)), rtol=1e-6)


@lib_names
def test_complex_derivatives(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    # holomorphic: the jvp multiplies by f'(z); the grad of a real function is df/dx - i df/dy
    _, tangent = fgrad.jvp(fnp.sin, (convert(Z),), (convert(np.ones_like(Z)),))
    _check(lib, tangent, np.cos(Z))
    g = fgrad.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(convert(Z))
    _check(lib, g, 2 * np.conj(Z))


@lib_names
def test_grad_of_complex_parts(lib: str) -> None:
    # The transposes of imag and angle (JAX's convention, df/dx - i df/dy): the
    # gradient of sum(imag(z)) is -i, of sum(angle(z)) = atan2(y, x) it is (-y - i x) / |z|**2.
    convert = LIBRARIES[lib][0]
    _check(lib, fgrad.grad(lambda z: fnp.sum(fnp.imag(z)))(convert(Z)), np.full_like(Z, -1j))
    _check(lib, fgrad.grad(lambda z: fnp.sum(fnp.angle(z)))(convert(Z)), -1j * np.conj(Z) / np.abs(Z) ** 2)


# --- linear algebra -----------------------------------------------------------------------

RNG = np.random.default_rng(16)
_A = RNG.standard_normal((3, 4, 4))
SPD = _A @ np.swapaxes(_A, -1, -2) + 4 * np.eye(4)
RHS = RNG.standard_normal((4, 2))
TALL = RNG.standard_normal((2, 5, 3))


def _sign_fixed(vectors: np.ndarray) -> np.ndarray:
    """Columns with a positive first row: eigenvectors and singular vectors
    are fixed only up to a sign."""
    return vectors * np.sign(vectors[..., :1, :])


# name: (fgrad function, NumPy function, operand, libraries with the function)
LINALG: dict[str, tuple[Callable[..., Any], Callable[..., Any], np.ndarray, tuple[str, ...]]] = {
    "solve": (lambda a: fnp.linalg.solve(a, RHS[None]), lambda a: np.linalg.solve(a, RHS[None]), SPD,
              ("strict", "dask")),
    "inv": (fnp.linalg.inv, np.linalg.inv, SPD, ("strict", "dask")),
    "cholesky": (fnp.linalg.cholesky, np.linalg.cholesky, SPD, ("strict", "dask")),
    "cholesky_upper": (lambda a: fnp.linalg.cholesky(a, upper=True),
                       lambda a: np.linalg.cholesky(a, upper=True), SPD, ("strict", "dask")),
    # of a matrix that is not symmetric: NumPy's upper factor reads the upper triangle, the lower the lower
    "cholesky_upper_triangle": (lambda a: fnp.linalg.cholesky(fnp.triu(a) + 0.25, upper=True),
                                lambda a: np.linalg.cholesky(np.triu(a) + 0.25, upper=True), SPD,
                                ("strict", "dask")),
    "cholesky_lower_triangle": (lambda a: fnp.linalg.cholesky(fnp.tril(a) + 0.25),
                                lambda a: np.linalg.cholesky(np.tril(a) + 0.25), SPD, ("strict", "dask")),
    "qr_r": (lambda a: fnp.linalg.qr(a)[1], lambda a: np.linalg.qr(a)[1], TALL, ("strict", "dask")),
    "qr_complete_q": (lambda a: fnp.linalg.qr(a, mode="complete")[0],
                      lambda a: np.linalg.qr(a, mode="complete")[0], TALL, ("strict",)),
    "svd_u": (lambda a: fnp.linalg.svd(a, full_matrices=False)[0],
              lambda a: np.linalg.svd(a, full_matrices=False)[0], TALL, ("strict", "dask")),
    "svd_full_u": (lambda a: fnp.linalg.svd(a)[0], lambda a: np.linalg.svd(a)[0], TALL, ("strict",)),
    "svdvals": (fnp.linalg.svdvals, np.linalg.svdvals, TALL, ("strict", "dask")),
    "det": (fnp.linalg.det, np.linalg.det, SPD, ("strict",)),
    "slogdet": (lambda a: fnp.stack(fnp.linalg.slogdet(a)), lambda a: np.stack(np.linalg.slogdet(a)), SPD,
                ("strict",)),
    "eigh": (lambda a: fnp.linalg.eigh(a)[1], lambda a: np.linalg.eigh(a)[1], SPD, ("strict",)),
    "eigh_upper": (lambda a: fnp.linalg.eigh(fnp.triu(a), UPLO="U")[0],
                   lambda a: np.linalg.eigh(np.triu(a), UPLO="U")[0], SPD, ("strict",)),
    "eigvalsh_upper": (lambda a: fnp.linalg.eigvalsh(fnp.triu(a), UPLO="U"),
                       lambda a: np.linalg.eigvalsh(np.triu(a), UPLO="U"), SPD, ("strict",)),
    "pinv": (fnp.linalg.pinv, np.linalg.pinv, TALL, ("strict",)),
    "pinv_hermitian": (lambda a: fnp.linalg.pinv(a, hermitian=True),
                       lambda a: np.linalg.pinv(a, hermitian=True), SPD, ("strict",)),
}


@pytest.mark.parametrize(("lib", "name"), [(lib, name) for name, (*_, libs) in LINALG.items() for lib in libs])
def test_linalg_values(lib: str, name: str) -> None:
    f, f_np, a, _ = LINALG[name]  # a library a case does not list is tested to raise, below
    convert = LIBRARIES[lib][0]
    # The stack's matrices are conditioned (SPD: eigenvalues 4 to 20), but not
    # computed with the same LAPACK calls everywhere (eigh with UPLO="U" reads
    # the other triangle): agreement to 1e-10 relative.
    _check(lib, fgrad.jit(f)(convert(a)), f_np(a), rtol=1e-10, atol=1e-12)
    _check(lib, fgrad.vmap(f)(convert(a)), np.stack([f_np(m) for m in a]), rtol=1e-10, atol=1e-12)


@lib_names
def test_linalg_int_matrices_are_solved_in_float64(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    a, b = np.array([[3, 1], [1, 2]]), np.array([[1], [2]])
    _check(lib, fgrad.jit(fnp.linalg.solve)(convert(a), convert(b)), np.linalg.solve(a, b))
    _check(lib, fgrad.jit(fnp.linalg.inv)(convert(a.astype(np.float32))),
           np.linalg.inv(a.astype(np.float32)), rtol=1e-6)


@pytest.mark.parametrize("lib", ["strict"])
def test_linalg_derivatives(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    a = SPD[0]
    # d/da sum(solve(a, b)) = -a^-T (1 1^T) x^T; d det = det a^-T; d log|det| = a^-T
    x = np.linalg.solve(a, RHS)
    a_inv_t = np.linalg.inv(a).T
    g = fgrad.grad(lambda a: fnp.sum(fnp.linalg.solve(a, RHS)))(convert(a))
    _check(lib, g, -a_inv_t @ np.ones_like(RHS) @ x.T, rtol=1e-10)
    _check(lib, fgrad.grad(fnp.linalg.det)(convert(a)), np.linalg.det(a) * a_inv_t, rtol=1e-10)
    _check(lib, fgrad.grad(lambda a: fnp.linalg.slogdet(a)[1])(convert(a)), a_inv_t, rtol=1e-10)
    t = RNG.standard_normal((4, 4))
    _, tangent = fgrad.jvp(fnp.linalg.inv, (convert(a),), (convert(t),))
    _check(lib, tangent, -np.linalg.inv(a) @ t @ np.linalg.inv(a), rtol=1e-10)
    # eigenvalues of a symmetric matrix: dw = diag(V^T t_sym V)
    w, v = np.linalg.eigh(a)
    t_sym = np.tril(t, -1) + np.tril(t, -1).T + np.diag(np.diag(t))
    _, dw = fgrad.jvp(fnp.linalg.eigvalsh, (convert(a),), (convert(t),))
    _check(lib, dw, np.diag(v.T @ t_sym @ v), rtol=1e-10)


@lib_names
def test_linalg_complex_matrices(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    a = SPD + 1j * (_A - np.swapaxes(_A, -1, -2))  # Hermitian, positive definite
    _check(lib, fgrad.jit(fnp.linalg.inv)(convert(a)), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    _check(lib, fgrad.jit(fnp.linalg.svdvals)(convert(a)), np.linalg.svdvals(a), rtol=1e-10)
    if lib == "strict":
        _check(lib, fgrad.jit(fnp.linalg.eigvalsh)(convert(a)), np.linalg.eigvalsh(a), rtol=1e-10)
        _check(lib, fgrad.jit(fnp.linalg.det)(convert(a)), np.linalg.det(a), rtol=1e-10)


@lib_names
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular(lib: str, lower: bool, trans: int, unit_diagonal: bool) -> None:
    convert = LIBRARIES[lib][0]
    a = _A + 3 * np.eye(4) + 0.5j * _A[::-1]
    b = RNG.standard_normal((3, 4, 2))

    def f(a: Any, b: Any) -> Any:
        return fsl.solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit_diagonal)

    expected = np.stack([scipy_linalg.solve_triangular(a[i], b[i], lower=lower, trans=trans,
                                                       unit_diagonal=unit_diagonal) for i in range(3)])
    _check(lib, fgrad.jit(f)(convert(a), convert(b)), expected, rtol=1e-12)
    real = a.real
    g = fgrad.grad(lambda b: fnp.sum(f(real, b)))(convert(b))
    op = np.swapaxes(np.tril(real) if lower else np.triu(real), -1, -2) if trans else (
        np.tril(real) if lower else np.triu(real))
    if unit_diagonal:
        op = op - np.eye(4) * np.diagonal(real, axis1=-2, axis2=-1)[..., None, :] + np.eye(4)
    _check(lib, g, np.linalg.solve(np.swapaxes(op, -1, -2), np.ones_like(b)), rtol=1e-10)


def test_gamma_sample_derivative_block_by_block_on_dask() -> None:
    a, x = POSITIVE, np.linspace(0.2, 4, X.size)
    expected = random_gamma_grad(a, x)  # fgrad's NumPy kernel, the same function per block
    _check("dask", fgrad.jit(random_gamma_grad)(_dask(a), _dask(x)), expected, rtol=0)


@pytest.mark.parametrize("lib, f, args, message", [
    ("strict", fsl.lu_factor, (SPD[0],), "`lu_factor` has no implementation for arrays of array_api_strict"),
    ("strict", fsl.expm, (SPD[0],), "`expm` has no implementation for arrays of array_api_strict"),
    ("strict", random_gamma_grad, (POSITIVE, POSITIVE),
     "`random_gamma_grad` has no implementation for arrays of array_api_strict"),
    ("dask", fsl.expm, (SPD[0],), "`expm` has no implementation for arrays of dask.array"),
])
def test_without_a_rule_says_so(lib: str, f: Any, args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(NotImplementedError, match=message):
        fgrad.jit(f)(*(LIBRARIES[lib][0](a) for a in args))


@pytest.mark.parametrize("lib, f, message", [
    ("strict", fnp.linalg.eigvals, "`eigvals` has no implementation for arrays of array_api_strict"),
    ("strict", fnp.linalg.eig, "`eig` has no implementation for arrays of array_api_strict"),
    ("dask", fnp.linalg.det, "`det` has no implementation for arrays of dask.array.*no linalg.det"),
    ("dask", fnp.linalg.eigh, "`eigh` has no implementation for arrays of dask.array.*no linalg.eigh"),
    ("dask", fnp.linalg.pinv, "`pinv` has no implementation for arrays of dask.array"),
])
def test_linalg_without_a_rule_says_so(lib: str, f: Any, message: str) -> None:
    with pytest.raises(NotImplementedError, match=message):
        fgrad.jit(f)(LIBRARIES[lib][0](SPD))


# --- FFT --------------------------------------------------------------------------------

SIGNAL = RNG.standard_normal((4, 6))


@lib_names
@pytest.mark.parametrize("f, f_np", [
    (fnp.fft.fft, np.fft.fft),
    (lambda x: fnp.fft.fft(x, n=8, norm="ortho"), lambda x: np.fft.fft(x, n=8, norm="ortho")),
    (lambda x: fnp.fft.ifft(x, axis=0, norm="forward"), lambda x: np.fft.ifft(x, axis=0, norm="forward")),
    (lambda x: fnp.fft.rfft(x, n=5), lambda x: np.fft.rfft(x, n=5)),
    (lambda x: fnp.fft.irfft(x, n=6, axis=0), lambda x: np.fft.irfft(x, n=6, axis=0)),
    (fnp.fft.fftn, np.fft.fftn),
    (lambda x: fnp.fft.rfftn(x, norm="ortho"), lambda x: np.fft.rfftn(x, norm="ortho")),
    (lambda x: fnp.fft.irfftn(x, s=(4, 10), axes=(0, 1)), lambda x: np.fft.irfftn(x, s=(4, 10), axes=(0, 1))),
])
def test_fft(lib: str, f: Any, f_np: Any) -> None:
    convert = LIBRARIES[lib][0]
    _check(lib, fgrad.jit(f)(convert(SIGNAL)), f_np(SIGNAL), atol=1e-13)
    _check(lib, fgrad.jit(f)(convert(SIGNAL.astype(np.float32))), f_np(SIGNAL.astype(np.float32)),
           rtol=1e-5, atol=1e-5)  # float32's precision
    _check(lib, fgrad.vmap(f)(convert(np.stack([SIGNAL, 2 * SIGNAL]))),
           f_np(np.stack([SIGNAL, 2 * SIGNAL])[0])[None] * np.array([1, 2]).reshape(2, *[1] * SIGNAL.ndim),
           atol=1e-12)


@lib_names
def test_fft_derivatives(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    t = RNG.standard_normal(SIGNAL.shape)
    _, tangent = fgrad.jvp(lambda x: fnp.fft.rfft(x, norm="ortho"), (convert(SIGNAL),), (convert(t),))
    _check(lib, tangent, np.fft.rfft(t, norm="ortho"), atol=1e-13)
    # sum |fft(x)|^2 = n sum x^2 (Parseval): the gradient is 2 n x
    g = fgrad.grad(lambda x: fnp.sum(fnp.abs(fnp.fft.fft(x)) ** 2))(convert(SIGNAL))
    _check(lib, g, 2 * SIGNAL.shape[-1] * SIGNAL, rtol=1e-10)


# --- special functions ------------------------------------------------------------------

P = np.array([0.01, 0.2, 0.45, 0.5, 0.55, 0.8, 0.99, 0.3])

# name: (fgrad function, SciPy function, operands, SciPy derivative in the first operand)
SPECIAL: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...], Any]] = {
    "expit": (fsp.expit, scipy_special.expit, (X * 3,),
              lambda x: scipy_special.expit(x) * scipy_special.expit(-x)),
    "logit": (fsp.logit, scipy_special.logit, (P,), lambda p: 1 / (p * (1 - p))),
    "xlogy": (fsp.xlogy, scipy_special.xlogy, (np.array([0.0, 1, 2, 0, 3, 4, 5, 6]), POSITIVE),
              lambda x, y: np.log(y)),
    "xlog1py": (fsp.xlog1py, scipy_special.xlog1py, (X, POSITIVE), lambda x, y: np.log1p(y)),
    "entr": (fsp.entr, scipy_special.entr, (np.array([0.0, 0.5, 1, 2, 3, 4, 5, 6]),), None),
    "rel_entr": (fsp.rel_entr, scipy_special.rel_entr, (P, P[::-1]), lambda x, y: np.log(x / y) + 1),
    "kl_div": (fsp.kl_div, scipy_special.kl_div, (P, P[::-1]), lambda x, y: np.log(x / y)),
}
# Elementwise, without a standard composition: block by block on Dask only.
BLOCKWISE = {
    "erf": (fsp.erf, scipy_special.erf, (X,)),
    "gammaln": (fsp.gammaln, scipy_special.gammaln, (POSITIVE,)),
    "digamma": (fsp.digamma, scipy_special.digamma, (POSITIVE,)),
    "gamma": (fsp.gamma, scipy_special.gamma, (POSITIVE,)),
    "betainc": (fsp.betainc, scipy_special.betainc, (POSITIVE, 2.0, P)),
    "j0": (fsp.j0, scipy_special.j0, (X,)),
}


@lib_names
@pytest.mark.parametrize("name", list(SPECIAL))
def test_special_functions(lib: str, name: str) -> None:
    f, f_np, args, df = SPECIAL[name]
    convert = LIBRARIES[lib][0]
    _check(lib, fgrad.jit(f)(*(convert(a) for a in args)), f_np(*args), rtol=1e-14)
    stacked = [np.stack([a, a[::-1]]) for a in args]
    _check(lib, fgrad.vmap(f)(*(convert(a) for a in stacked)), f_np(*stacked), rtol=1e-14)
    as32 = [a.astype(np.float32) for a in args]
    _check(lib, fgrad.jit(f)(*(convert(a) for a in as32)), f_np(*as32), rtol=1e-6)
    if df is not None:
        _check(lib, fgrad.grad(lambda x: fnp.sum(f(x, *args[1:])))(convert(args[0])), df(*args), rtol=1e-10)
        _, tangent = fgrad.jvp(lambda x: f(x, *args[1:]), (convert(args[0]),), (convert(args[0]),))
        _check(lib, tangent, df(*args) * args[0], rtol=1e-10)


@lib_names
def test_special_edge_values(lib: str) -> None:
    convert = LIBRARIES[lib][0]
    values = np.array([np.nan, -1.0, 0.0, 1.0, np.inf, -np.inf])
    y = values[:, None]
    for f, f_np in ((fsp.entr, scipy_special.entr), (fsp.expit, scipy_special.expit),
                    (fsp.logit, scipy_special.logit)):
        with np.errstate(all="ignore"):
            _check(lib, fgrad.jit(f)(convert(values)), f_np(values), rtol=0)
    for f, f_np in ((fsp.xlogy, scipy_special.xlogy), (fsp.rel_entr, scipy_special.rel_entr),
                    (fsp.kl_div, scipy_special.kl_div)):
        with np.errstate(all="ignore"):
            _check(lib, fgrad.jit(f)(convert(values), convert(y)), f_np(values, y), rtol=1e-15)
    # SciPy types a Python scalar as float64: xlogy(float32 array, 2.0) is float64
    x32 = np.linspace(0, 2, 4, dtype=np.float32)
    _check(lib, fgrad.jit(lambda x: fsp.xlogy(x, 2.0))(convert(x32)), scipy_special.xlogy(x32, 2.0))
    ints = np.arange(1, 5)
    _check(lib, fgrad.jit(fsp.expit)(convert(ints)), scipy_special.expit(ints))


@pytest.mark.parametrize("name", list(BLOCKWISE))
def test_special_functions_block_by_block_on_dask(name: str) -> None:
    f, f_np, args = BLOCKWISE[name]
    operands = [_dask(a) if isinstance(a, np.ndarray) else a for a in args]
    out = fgrad.jit(f)(*operands)
    assert out.chunks == operands[0].chunks  # computed block by block, lazily
    _check("dask", out, f_np(*args), rtol=1e-13)  # fgrad's own kernels (erf, gammaln, digamma): 1e-13


def test_special_derivatives_block_by_block_on_dask() -> None:
    g = fgrad.grad(lambda x: fnp.sum(fsp.gammaln(x)))(_dask(POSITIVE))
    _check("dask", g, scipy_special.digamma(POSITIVE), rtol=1e-13)
    _, tangent = fgrad.jvp(fsp.erf, (_dask(X),), (_dask(np.ones_like(X)),))
    _check("dask", tangent, 2 / np.sqrt(np.pi) * np.exp(-X**2), rtol=1e-13)


@pytest.mark.parametrize("name", list(BLOCKWISE))
def test_special_functions_without_a_rule_on_strict_say_so(name: str) -> None:
    f, _, args = BLOCKWISE[name]
    with pytest.raises(NotImplementedError, match="has no implementation for arrays of array_api_strict"):
        fgrad.jit(f)(*(_strict(a) if isinstance(a, np.ndarray) else a for a in args))


# --- scipy.stats on arrays of the library closed over ------------------------------------------


@lib_names
def test_multivariate_normal_with_points_of_the_library_and_a_traced_mean(lib: str) -> None:
    # x - mean with x the library's array and mean a tracer: strict's operators
    # refuse a tracer, fgrad.numpy's subtract does not.
    convert = LIBRARIES[lib][0]
    points = RNG.standard_normal((5, 4))
    mean = RNG.standard_normal(4)
    cov = SPD[0]
    x = convert(points)
    g = fgrad.grad(lambda m: fnp.sum(fst.multivariate_normal.logpdf(x, m, cov)))(convert(mean))
    _check(lib, g, np.linalg.solve(cov, np.sum(points - mean, axis=0)), rtol=1e-10)
    value = fgrad.jit(lambda m: fst.multivariate_normal.logpdf(x, m, cov))(convert(mean))
    _check(lib, value, scipy_stats.multivariate_normal.logpdf(points, mean, cov), rtol=1e-12)
