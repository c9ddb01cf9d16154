"""fgrad.scipy.linalg and the primitives of fgrad/primitives/scipy_linalg.py:
values and dtypes against SciPy (stacks, float32, complex), derivatives to
second order in both modes (expm's also against scipy.linalg.expm_frechet),
vmap against a loop (BATCH_CASES), jit against eager, and SciPy's errors."""

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.linalg as fsl
from fgrad.primitives import scipy_linalg as P
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

PRIMITIVES = {"triangular_solve", "pivots_to_permutation", "lu_factor", "expm", "expm_frechet"}

_I3 = 3 * np.eye(3)


def _spd(x):
    """A well-conditioned symmetric positive definite matrix (stack) from any x."""
    return x @ fnp.swapaxes(x, -1, -2) + _I3


BATCH_CASES = {  # inputs from (-0.8, 0.8); 3 I keeps the matrices well-conditioned
    "triangular_solve": (lambda a, b: fsl.solve_triangular(a + _I3, b, lower=True), [(3, 3), (3, 2)], "unit"),
    "triangular_solve_trans": (
        lambda a, b: fsl.solve_triangular(a + _I3, b, trans=1, unit_diagonal=True), [(2, 3, 3), (3,)], "unit"
    ),
    "pivots_to_permutation": (lambda a: P.pivots_to_permutation(P.lu_factor(a)[1], size=3), [(3, 3)], "real"),
    "lu_factor": (lambda a: fsl.lu_factor(a + _I3)[0], [(3, 3)], "unit"),
    "lu_factor_wide": (lambda a: fsl.lu_factor(a)[0], [(2, 3)], "real"),
    "lu_solve": (lambda a, b: fsl.lu_solve(fsl.lu_factor(a + _I3), b, trans=1), [(3, 3), (3, 2)], "unit"),
    "cho_solve": (lambda a, b: fsl.cho_solve(fsl.cho_factor(_spd(a)), b), [(3, 3), (3,)], "unit"),
    "expm": (fsl.expm, [(3, 3)], "unit"),
    "expm_stack": (fsl.expm, [(2, 3, 3)], "unit"),
    "expm_frechet": (lambda a, e: fsl.expm_frechet(a, e, compute_expm=False), [(3, 3), (3, 3)], "unit"),
    "scipy_block_diag": (lambda a, b: fsl.block_diag(a, b, 2.0), [(2, 3), (1,)], "real"),
}


def _matrix(shape, seed, dtype=np.float64, diagonal=3.0):
    x = values(shape, "unit", seed)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * values(shape, "unit", seed + 1)
    return (x + diagonal * np.eye(shape[-1], M=shape[-2]).T).astype(dtype)


def _close(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype
    tol = 1e-5 if np.asarray(want).dtype in (np.float32, np.complex64) else 1e-11
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --- solve_triangular -----------------------------------------------------------------------


SHAPES = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (3, 1)), ((2, 1, 3, 3), (4, 3, 2)),
          ((1, 1), (1, 4)), ((4, 4), (2, 4, 3))]


@settings(deadline=None)
@given(data=st.data(), seed=seeds)
def test_solve_triangular_values_against_scipy(data, seed):
    a_shape, b_shape = data.draw(st.sampled_from(SHAPES))
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.complex128]))
    trans = data.draw(st.sampled_from([0, 1, 2, "N", "T", "C"]))
    lower, unit = data.draw(st.booleans()), data.draw(st.booleans())
    a, b = _matrix(a_shape, seed, dtype), values(b_shape, "real", seed + 2).astype(dtype)
    want = sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    f = lambda a, b: fsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)  # noqa: E731
    _close(f(a, b), want)
    _close(fgrad.jit(f)(a, b), want)


def test_solve_triangular_dtypes_follow_scipy():
    for a_dtype, b_dtype in [(np.int64, np.int64), (np.float32, np.float64), (np.float16, np.float16),
                             (np.float64, np.complex64)]:
        a, b = np.eye(2, dtype=a_dtype), np.ones(2, dtype=b_dtype)
        want = sla.solve_triangular(a, b)
        assert fsl.solve_triangular(a, b).dtype == want.dtype
        assert fgrad.jit(fsl.solve_triangular)(a, b).dtype == want.dtype


@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_derivatives(trans, lower, unit):
    a, b = _matrix((2, 3, 3), 0), values((3, 2), "real", 1)
    check_grads(lambda a, b: fsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), (a, b), order=2)


def test_solve_triangular_reads_one_triangle_only():
    a, b = _matrix((3, 3), 0), values((3,), "real", 1)
    g = fgrad.grad(lambda a: fsl.solve_triangular(a, b, lower=True, unit_diagonal=True).sum())(a)
    assert np.all(np.triu(g) == 0)
    g = fgrad.grad(lambda a: fsl.solve_triangular(a, b).sum())(a)
    assert np.all(np.tril(g, -1) == 0) and np.all(np.diag(g) != 0)


def test_solve_triangular_complex_derivatives():
    a, b = _matrix((3, 3), 0, np.complex128), _matrix((3, 2), 3, np.complex128, 0.0)
    for trans in (0, 2):
        check_grads(lambda a, b: fsl.solve_triangular(a, b, trans=trans, lower=True), (a, b), order=2)


def test_solve_triangular_errors():
    with pytest.raises(ValueError, match="expected square matrix"):
        fsl.solve_triangular(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"shapes of a \(2, 2\) and b \(3,\) are incompatible"):
        fsl.solve_triangular(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="incompatible"):
        fgrad.jit(fsl.solve_triangular)(np.eye(2), 1.0)
    with pytest.raises(ValueError, match="trans must be 0, 1, 2"):
        fsl.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        fsl.solve_triangular(np.eye(2), np.array([1.0, np.nan]))
    assert np.isnan(fsl.solve_triangular(np.eye(2), np.array([1.0, np.nan]), check_finite=False)[1])
    with pytest.raises(ValueError, match="shapes of a"):
        P.triangular_solve(np.eye(2), np.ones((3, 1)), lower=True, trans=0, unit_diagonal=False)


# --- Cholesky ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
def test_cho_factor_and_cho_solve_against_scipy(shape, dtype, lower):
    x = _matrix(shape, 5, dtype, 0.0)
    a = (x @ np.conj(np.swapaxes(x, -1, -2)) + 3 * np.eye(shape[-1])).astype(dtype)
    b = values((*shape[:-1], 2), "real", 6).astype(dtype)
    c, low = fsl.cho_factor(a, lower=lower)
    assert low is lower
    triangle = np.tril if lower else np.triu
    for i in np.ndindex(shape[:-2]):  # SciPy's cho_factor has no stacks
        want_c, _ = sla.cho_factor(a[i], lower=lower)
        _close(triangle(c[i]), triangle(want_c))
    np.testing.assert_array_equal(c, triangle(c))  # fgrad's other triangle: zeros
    _close(fsl.cholesky(a, lower=lower), sla.cholesky(a, lower=lower))
    want = sla.cho_solve((sla.cholesky(a, lower=lower), lower), b)
    _close(fsl.cho_solve((c, lower), b), want)
    _close(fgrad.jit(lambda a, b: fsl.cho_solve(fsl.cho_factor(a, lower=lower), b))(a, b), want)


@pytest.mark.parametrize("lower", [True, False])
def test_cho_solve_derivatives(lower):
    x, b = values((3, 3), "unit", 0), values((3,), "real", 1)
    check_grads(lambda x, b: fsl.cho_solve(fsl.cho_factor(_spd(x), lower=lower), b), (x, b), order=2)
    check_grads(lambda x: fsl.cho_factor(_spd(x), lower=lower)[0], (x,), order=2)


def test_cho_solve_reads_the_factors_triangle():
    a = _spd(values((3, 3), "unit", 0))
    c, lower = sla.cho_factor(a)  # SciPy's other triangle holds a's entries
    b = values((3,), "real", 1)
    _close(fsl.cho_solve((c, lower), b), sla.cho_solve((c, lower), b))
    g = fgrad.grad(lambda c: fsl.cho_solve((c, lower), b).sum())(c)
    assert np.all(np.tril(g, -1) == 0)


def test_cholesky_errors():
    with pytest.raises(ValueError, match=r"expected to be square but has the shape: \(2, 3\)"):
        fsl.cho_factor(np.ones((2, 3)))
    with pytest.raises(fsl.LinAlgError):
        fsl.cho_factor(-np.eye(2))
    with pytest.raises(ValueError, match="The factored matrix c is not square"):
        fsl.cho_solve((np.ones((2, 3)), False), np.ones(2))
    with pytest.raises(ValueError, match=r"incompatible dimensions \(\(2, 2\) and \(3,\)\)"):
        fsl.cho_solve((np.eye(2), False), np.ones(3))


# --- LU --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_lu_factor_against_scipy(shape, dtype):
    a = _matrix(shape, 7, dtype, 0.0)
    lu, piv = fsl.lu_factor(a)
    jit_lu, jit_piv = fgrad.jit(fsl.lu_factor)(a)
    for i in np.ndindex(shape[:-2]):  # SciPy's lu_factor has no stacks
        want_lu, want_piv = sla.lu_factor(a[i])
        _close(lu[i], want_lu)
        _close(jit_lu[i], want_lu)
        np.testing.assert_array_equal(piv[i], want_piv)
        np.testing.assert_array_equal(jit_piv[i], want_piv)
    assert piv.dtype == np.int32


def test_lu_factor_pivots_are_concrete_under_grad():
    seen = []

    def f(a):
        lu, piv = fsl.lu_factor(a)
        seen.append(piv)
        return lu.sum()

    fgrad.grad(f)(_matrix((3, 3), 0, diagonal=0.0))
    assert type(seen[0]) is np.ndarray and seen[0].dtype == np.int32


@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 1))])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lu_solve_against_scipy(trans, shapes, dtype):
    a, b = _matrix(shapes[0], 8, dtype, 0.5), values(shapes[1], "real", 9).astype(dtype)
    want = sla.lu_solve(sla.lu_factor(a) if a.ndim == 2 else _stacked_lu(a), b, trans=trans)
    _close(fsl.lu_solve(fsl.lu_factor(a), b, trans=trans), want)
    _close(fgrad.jit(lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=trans))(a, b), want)


def _stacked_lu(a):
    parts = [sla.lu_factor(m) for m in a]
    return np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts])


@pytest.mark.parametrize("trans", [0, 1])
def test_lu_solve_derivatives(trans):
    a, b = _matrix((3, 3), 0, diagonal=0.5), values((3, 2), "real", 1)
    check_grads(lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=trans), (a, b), order=2)
    check_grads(lambda a: fsl.lu_factor(a)[0], (a,), order=2)
    check_grads(lambda a: fsl.lu_factor(a)[0], (_matrix((2, 3, 3), 3, diagonal=0.0),), order=1)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_factor_derivative_matches_finite_differences_of_scipy(shape):
    a, da = _matrix(shape, 2, diagonal=0.0), values(shape, "real", 3)
    _, tangent = fgrad.jvp(lambda a: fsl.lu_factor(a)[0], (a,), (da,))
    eps = 1e-6
    fd = (sla.lu_factor(a + eps * da)[0] - sla.lu_factor(a - eps * da)[0]) / (2 * eps)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3)])
@pytest.mark.parametrize("options", [{}, {"permute_l": True}, {"p_indices": True},
                                     {"permute_l": True, "p_indices": True}])
def test_lu_against_scipy(shape, options):
    a = _matrix(shape, 11, diagonal=0.0).astype(np.float32)
    want = sla.lu(a, **options)
    for got in (fsl.lu(a, **options), fgrad.jit(lambda a: fsl.lu(a, **options))(a)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_lu_derivatives(shape):
    a = _matrix(shape, 0, diagonal=0.0)
    check_grads(lambda a: fsl.lu_factor(a)[0], (a,), order=2)
    check_grads(lambda a: fsl.lu(a)[1:], (a,), order=2)
    check_grads(lambda a: fsl.lu(a, permute_l=True)[0], (a,), order=1)


def test_lu_errors():
    with pytest.raises(ValueError, match="at least two-dimensional"):
        fsl.lu_factor(np.ones(3))
    with pytest.raises(ValueError, match=r"Shapes of lu \(2, 2\) and b \(3,\) are incompatible"):
        fsl.lu_solve(fsl.lu_factor(np.eye(2)), np.ones(3))
    with pytest.raises(ValueError, match="expected a square lu"):
        fsl.lu_solve((np.ones((2, 3)), np.zeros(2, np.int32)), np.ones(2))
    with pytest.raises(ValueError, match="trans must be"):
        fsl.lu_solve(fsl.lu_factor(np.eye(2)), np.ones(2), trans=5)
    with pytest.raises(ValueError, match="integer pivots"):
        P.pivots_to_permutation(np.ones(3), size=3)


def test_pivots_to_permutation_gives_the_row_order():
    a = _matrix((2, 4, 4), 4, diagonal=0.0)
    lu, piv = fsl.lu_factor(a)
    perm = P.pivots_to_permutation(piv, size=4)
    low = np.tril(lu, -1) + np.eye(4)
    np.testing.assert_allclose(np.take_along_axis(a, perm[..., None], axis=-2), low @ np.triu(lu), rtol=1e-12)
    _, tangent = fgrad.jvp(lambda a: P.pivots_to_permutation(P.lu_factor(a)[1], size=4), (a,), (a,))
    assert not np.any(tangent)


# --- expm ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1), (0, 0), ()])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_expm_against_scipy(shape, dtype):
    a = (values(shape, "real", 12) * (1 if dtype != np.int64 else 2)).astype(dtype)
    want = sla.expm(a)
    _close(fsl.expm(a), want)
    _close(fgrad.jit(fsl.expm)(a), want)


def test_expm_derivative_is_scipys_frechet_derivative():
    a, e, ct = values((2, 3, 3), "real", 0), values((2, 3, 3), "real", 1), values((2, 3, 3), "real", 2)
    _, tangent = fgrad.jvp(fsl.expm, (a,), (e,))
    np.testing.assert_allclose(tangent, sla.expm_frechet(a, e, compute_expm=False), rtol=1e-12)
    _, vjp = fgrad.vjp(fsl.expm, a)
    np.testing.assert_allclose(vjp(ct)[0], sla.expm_frechet(np.swapaxes(a, -1, -2), ct, compute_expm=False),
                               rtol=1e-12)
    expm_a, frechet = fsl.expm_frechet(a, e)
    np.testing.assert_allclose(expm_a, sla.expm(a), rtol=1e-13)
    np.testing.assert_allclose(frechet, sla.expm_frechet(a, e, compute_expm=False), rtol=1e-13)


def test_expm_derivatives_to_second_order():
    a = values((3, 3), "real", 3)
    check_grads(fsl.expm, (a,), order=2)
    check_grads(fsl.expm, (values((2, 2, 2), "real", 4),), order=3, modes=("fwd",))
    check_grads(lambda a, e: fsl.expm_frechet(a, e, compute_expm=False), (a, values((3, 3), "real", 5)), order=2)


def test_expm_second_derivative_against_finite_differences_of_scipy():
    # d2/dt2 expm(a + t e) at t = 0, from SciPy's values alone
    a, e = values((3, 3), "real", 6), values((3, 3), "real", 7)
    second = fgrad.jvp(lambda a: fgrad.jvp(fsl.expm, (a,), (e,))[1], (a,), (e,))[1]
    h = 1e-4
    fd = (sla.expm(a + h * e) - 2 * sla.expm(a) + sla.expm(a - h * e)) / h**2
    np.testing.assert_allclose(second, fd, rtol=1e-5, atol=1e-6)


def test_expm_complex_derivatives():
    a = values((3, 3), "real", 8) + 1j * values((3, 3), "real", 9)
    check_grads(fsl.expm, (a,), order=1)


def test_expm_errors():
    with pytest.raises(fsl.LinAlgError, match="must be square"):
        fsl.expm(np.ones((2, 3)))
    with pytest.raises(fsl.LinAlgError, match="at least two-dimensional"):
        fsl.expm(np.ones(3))
    with pytest.raises(ValueError, match="same shape"):
        fsl.expm_frechet(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="Unknown implementation"):
        fsl.expm_frechet(np.eye(2), np.eye(2), method="other")
    with pytest.raises(ValueError, match="expected a square matrix"):
        P.expm(np.ones((2, 3)))


# --- block_diag and SciPy's signatures for fgrad.numpy.linalg ------------------------------------


@pytest.mark.parametrize("arrs", [
    (), (2.0,), (np.eye(2), 3.0), (np.ones((2, 3)), np.arange(2), np.ones((0, 2))), (np.ones((2, 0)),),
    (np.ones((1, 2), np.float32), np.ones((2, 1), np.complex64)), (np.arange(4).reshape(2, 2),),
    (np.arange(4.0).reshape(2, 1, 2), np.ones(3), 5.0), (np.ones((2, 1, 2)), np.arange(3.0).reshape(3, 1, 1, 1)),
])
def test_block_diag_against_scipy(arrs):
    want = sla.block_diag(*arrs)
    got = fsl.block_diag(*arrs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if arrs:
        traced = fgrad.jit(fsl.block_diag)(*arrs)
        assert traced.dtype == want.dtype
        np.testing.assert_array_equal(traced, want)


def test_block_diag_derivatives_and_errors():
    check_grads(lambda a, b: fsl.block_diag(a, b), (values((2, 3), "real", 0), values((2,), "real", 1)), order=2)
    check_grads(lambda a, b: fsl.block_diag(a, b), (values((2, 2, 3), "real", 0), values((2,), "real", 1)), order=1)
    with pytest.raises(ValueError, match="broadcast"):
        fgrad.jit(fsl.block_diag)(np.ones((2, 1, 2)), np.ones((3, 1, 1)))


@pytest.mark.parametrize("assume_a", [None, "gen", "sym", "her", "pos", "lower triangular", "upper triangular",
                                      "diagonal"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transposed", [False, True])
def test_solve_against_scipy(assume_a, lower, transposed):
    x = values((3, 3), "unit", 0)
    a = _spd(x) + 0.3 * np.triu(x, 1)  # not symmetric: which triangle is read matters
    if assume_a == "diagonal":
        a = np.diag(np.diag(a))
    b = values((3, 2), "real", 1)
    if transposed and assume_a in ("sym", "her", "pos"):
        return  # SciPy ignores transposed for these
    want = sla.solve(a, b, lower=lower, assume_a=assume_a, transposed=transposed)
    f = lambda a, b: fsl.solve(a, b, lower=lower, assume_a=assume_a, transposed=transposed)  # noqa: E731
    _close(f(a, b), want)
    _close(fgrad.jit(f)(a, b), want)
    check_grads(f, (a, b), order=1)


def test_inv_det_cholesky_against_scipy():
    a = _spd(values((2, 3, 3), "unit", 2)).astype(np.float32)
    _close(fsl.inv(a), sla.inv(a))
    for got in (fsl.det(a), fgrad.jit(fsl.det)(a)):  # float64 results of float32 factorizations
        assert got.dtype == sla.det(a).dtype
        np.testing.assert_allclose(got, sla.det(a), rtol=1e-6)
    check_grads(lambda a: fsl.inv(a) + fsl.det(a)[..., None, None], (_spd(values((3, 3), "unit", 3)),), order=2)
    check_grads(lambda x: fsl.cholesky(_spd(x)), (values((3, 3), "unit", 4),), order=2)


def test_signature_wrappers_errors():
    with pytest.raises(NotImplementedError, match="assume_a='banded'"):
        fsl.solve(np.eye(2), np.ones(2), assume_a="banded")
    with pytest.raises(ValueError, match="square"):
        fsl.solve(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="Incompatible dimensions"):
        fsl.solve(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="square"):
        fsl.inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="infs or NaNs"):
        fsl.det(np.array([[np.inf]]))
