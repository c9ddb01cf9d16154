"""solve, inv, pinv, det, slogdet, cholesky, qr, eigh, eigvalsh, eig, eigvals,
svd, svdvals and what is composed from them (lstsq, matrix_power, multi_dot,
matrix_rank, cond, tensorsolve, tensorinv): values equal NumPy's, on single
matrices and stacks, real and complex; derivatives checked to second order in
both modes on well-conditioned matrices (distinct eigenvalues and singular
values); NumPy's errors on misuse.

Eigenvectors and singular vectors are determined up to sign (a phase, for
complex ones), so their derivatives are checked through phase-invariant
products: each column times the conjugate of its own first element, |v|^2,
projectors v v^H, U diag(s) V^H."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.primitives import decompositions as dec
from fgrad.test_util import check_grads
from tests.primitives.test_linalg import traced
from tests.strategies import seeds

LA = fnp.linalg

PRIMITIVES = {
    "solve", "inv", "adjugate", "pinv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "eig", "eigvals", "svd",
    "svdvals",
}

_I3 = np.eye(3)

BATCH_CASES = {  # inputs from (-0.8, 0.8) plus 3 I: diagonally dominant, well-conditioned
    "solve": (lambda a, b: LA.solve(a + 3 * _I3, b), [(3, 3), (3, 2)], "unit"),
    "solve_vector": (lambda a, b: LA.solve(a + 3 * _I3, b), [(3, 3), (3,)], "unit"),
    "solve_stacks": (lambda a, b: LA.solve(a + 3 * _I3, b), [(2, 3, 3), (3, 1)], "unit"),
    "solve_stack_rhs": (lambda a, b: LA.solve(a + 3 * _I3, b), [(3, 3), (2, 3, 2)], "unit"),
    "inv": (lambda a: LA.inv(a + 3 * _I3), [(3, 3)], "unit"),
    "inv_nan_if_singular": (lambda a: dec.inv(a + 3 * _I3, singular="nan"), [(2, 3, 3)], "unit"),
    "adjugate": (lambda a: dec.adjugate(a + 3 * _I3), [(3, 3)], "unit"),
    "adjugate_singular": (lambda x, y: dec.adjugate(x @ y), [(3, 2), (2, 3)], "unit"),  # rank 2
    "pinv_hermitian": (lambda a: LA.pinv(a + 3 * _I3, hermitian=True), [(3, 3)], "unit"),
    "pinv": (lambda a: LA.pinv(a + 2 * np.eye(3, 2)), [(3, 2)], "unit"),
    "det": (lambda a: LA.det(a + 3 * _I3), [(3, 3)], "unit"),
    "slogdet": (lambda a: (lambda sign, log: sign * log)(*LA.slogdet(a - 3 * _I3)), [(3, 3)], "unit"),
    "cholesky": (lambda a: LA.cholesky(a + 3 * _I3), [(3, 3)], "unit"),
    "cholesky_upper": (lambda a: LA.cholesky(a + 3 * _I3, upper=True), [(2, 3, 3)], "unit"),
    "qr": (lambda a: LA.qr(a + 2 * np.eye(3, 2)).R, [(3, 2)], "unit"),
    "qr_q": (lambda a: LA.qr(a + 2 * np.eye(2, 3)).Q, [(2, 3)], "unit"),
    "eigh": (lambda a: (lambda w, v: v * w[..., None, :])(*LA.eigh(a + np.diag([0.0, 5, 10]))), [(3, 3)], "unit"),
    "eigvalsh": (lambda a: LA.eigvalsh(a, UPLO="U"), [(3, 3)], "unit"),
    "svd": (lambda a: (lambda u, s, vh: u @ vh)(*LA.svd(a + 2 * np.eye(3, 2), full_matrices=False)), [(3, 2)], "unit"),
    "svdvals": (LA.svdvals, [(2, 3)], "unit"),
    # eig and eigvals are complex under vmap (the values are not known there), so these
    # call the primitives, complex with or without a transform
    "eig": (lambda a: (lambda w, v: v * w[..., None, :])(*dec.eig(a + np.diag([0.0, 5, 10]))), [(3, 3)], "unit"),
    "eigvals": (lambda a: dec.eigvals(a + np.diag([0.0, 5, 10])), [(2, 3, 3)], "unit"),
    "eig_abs_eigenvalues": (lambda a: abs(LA.eig(a).eigenvalues), [(3, 3)], "unit"),
    "eigvalsh_complex": (lambda x, y: LA.eigvalsh(x + 1j * y), [(3, 3), (3, 3)], "unit"),
    "svdvals_complex": (lambda x, y: LA.svdvals(x + 1j * y), [(3, 2), (3, 2)], "unit"),
    "tensorsolve": (lambda a, b: LA.tensorsolve(a + 3 * np.eye(4).reshape(4, 2, 2), b), [(4, 2, 2), (4,)], "unit"),
    "tensorinv": (lambda a: LA.tensorinv(a + 3 * np.eye(4).reshape(2, 2, 4), ind=2), [(2, 2, 4)], "unit"),
}


# --- well-conditioned test matrices ------------------------------------------------------


def _orthogonal(n, rng):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


def _spectrum(k, rng, low, high):
    """k values from [low, high], at least (high - low) / (2 k) apart."""
    base = np.linspace(high, low, k) if k > 1 else np.array([(low + high) / 2])
    return base + rng.uniform(-0.25, 0.25, k) * (high - low) / (2 * k)


def with_singular_values(shape, seed, low=1.0, high=3.0):
    """Matrices of `shape` (a stack) with distinct singular values in [low, high]."""
    rng = np.random.default_rng(seed)
    *stack, m, n = shape
    k = min(m, n)
    out = np.empty(shape)
    for idx in np.ndindex(*stack):
        u, v = _orthogonal(m, rng)[:, :k], _orthogonal(n, rng)[:k, :]
        out[idx] = (u * _spectrum(k, rng, low, high)) @ v
    return out


def for_qr(shape, seed):
    """Matrices of `shape` whose QR is well-conditioned: a wide matrix's Q and R are those of
    its leading square block (the rest of R is Q^T times the other columns), so that block,
    not the whole matrix, gets singular values in [1, 3]."""
    a = with_singular_values(shape, seed)
    *stack, m, n = shape
    if m < n:
        a[..., :, :m] = with_singular_values((*stack, m, m), seed + 1)
    return a


def householder_pivots(a):
    """The pivots of LAPACK's Householder QR of `a`, one per reflection that acts on more than
    one element: where one crosses zero, LAPACK flips the sign of that row of R and that column
    of Q, so NumPy's qr is discontinuous there. A reflection with pivot alpha gives
    r_jj = beta and tau = (beta - alpha) / beta, so alpha = r_jj (1 - tau)."""
    h, tau = np.linalg.qr(a, mode="raw")
    pivots = np.diagonal(h, axis1=-2, axis2=-1) * (1 - tau)
    return pivots[tau != 0]  # tau = 0: nothing below the pivot, no reflection, no sign to flip


def symmetric(shape, seed, low=-3.0, high=3.0):
    """Symmetric matrices with distinct eigenvalues in [low, high]."""
    rng = np.random.default_rng(seed)
    *stack, n, _ = shape
    out = np.empty(shape)
    for idx in np.ndindex(*stack):
        q = _orthogonal(n, rng)
        a = (q * _spectrum(n, rng, low, high)) @ q.T
        out[idx] = (a + a.T) / 2
    return out


def spd(shape, seed):
    return symmetric(shape, seed, low=1.0, high=3.0)


def rhs(shape, seed):
    return np.random.default_rng(seed + 1).uniform(-2, 2, shape)


def sign_free(vectors, axis):
    """Each singular/eigen-vector times the conjugate of its own first element:
    independent of its sign (or phase)."""
    first = vectors[..., :1, :] if axis == -2 else vectors[..., :, :1]
    return vectors * (fnp.conj(first) if np.iscomplexobj(vectors) else first)


def complex_like(f, shape, seed, **kwargs):
    """f's matrices for real and imaginary parts: complex matrices of the same kind
    (well-conditioned; for symmetric `f` the sum is not Hermitian, see `hermitian`)."""
    return f(shape, seed, **kwargs) + 1j * f(shape, seed + 1, **kwargs)


def hermitian(shape, seed, low=-3.0, high=3.0):
    """Complex Hermitian matrices with distinct eigenvalues in [low, high]."""
    rng = np.random.default_rng(seed)
    *stack, n, _ = shape
    out = np.empty(shape, complex)
    for idx in np.ndindex(*stack):
        q = np.linalg.qr(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))[0]
        a = (q * _spectrum(n, rng, low, high)) @ q.conj().T
        out[idx] = (a + a.conj().T) / 2
    return out


def general(shape, seed, complex_=False):
    """Square matrices with well-separated eigenvalues and well-conditioned
    eigenvectors, V diag(w) V^-1: for real ones some eigenvalues come in complex
    conjugate pairs (2x2 blocks [[r, s], [-s, r]]), others are real."""
    rng = np.random.default_rng(seed)
    *stack, n, _ = shape
    out = np.empty(shape, complex if complex_ else float)
    for idx in np.ndindex(*stack):
        values = _spectrum(n, rng, -3.0, 3.0)
        if complex_:
            d = np.diag(values + 1j * rng.uniform(-1, 1, n))
            q = np.linalg.qr(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))[0]
        else:
            d = np.zeros((n, n))
            i = 0
            while i < n:
                if i + 1 < n and rng.random() < 0.6:
                    r, s = (values[i] + values[i + 1]) / 2, 0.6 + rng.random()
                    d[i:i + 2, i:i + 2] = [[r, s], [-s, r]]
                    i += 2
                else:
                    d[i, i] = values[i]
                    i += 1
            q = _orthogonal(n, rng)
        q = q @ (np.eye(n) + 0.2 * rng.uniform(-1, 1, (n, n)))
        out[idx] = q @ d @ np.linalg.inv(q)
    return out


def projectors(v):
    """v_k v_k^H for each unit-norm column v_k: independent of its phase."""
    return fnp.einsum("...ik,...jk->...kij", v, fnp.conj(v))


sizes = st.integers(1, 4)
stacks = st.sampled_from([(), (2,)])


# --- solve, inv, det, slogdet -----------------------------------------------------------


@given(n=sizes, k=st.integers(1, 3), seed=seeds, data=st.data())
def test_solve(n, k, seed, data):
    a_stack, b_stack = data.draw(st.sampled_from([((), ()), ((2,), ()), ((), (2,)), ((2, 1), (3,)), ((2,), (1,))]))
    vector = data.draw(st.booleans())
    a = with_singular_values(a_stack + (n, n), seed)
    b = rhs((n,) if vector else b_stack + (n, k), seed)
    expected = np.linalg.solve(a, b)
    out = traced(LA.solve)(a, b)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert out.shape == expected.shape
    check_grads(LA.solve, (a, b), order=2)


@pytest.mark.parametrize("name", ["inv", "det", "slogdet"])
@given(n=sizes, stack=stacks, seed=seeds, data=st.data())
def test_inv_det_slogdet(name, n, stack, seed, data):
    a = with_singular_values(stack + (n, n), seed)
    if data.draw(st.booleans()):
        a = -a  # negative determinants too, for odd n
    f, ref = getattr(LA, name), getattr(np.linalg, name)
    out, expected = traced(f)(a), ref(a)
    for got, want in zip(out, expected) if name == "slogdet" else [(out, expected)]:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    check_grads(f, (a,), order=2)


def test_slogdet_returns_numpy_result_type_and_sign_has_no_derivative():
    a = -np.eye(3) * np.array([1.0, 2.0, 3.0])
    sign, logabsdet = fgrad.jvp(LA.slogdet, (a,), (np.ones((3, 3)),))[1]
    assert type(LA.slogdet(a)).__name__ == "SlogdetResult"
    assert np.all(sign == 0) and np.isclose(logabsdet, -(1 + 1 / 2 + 1 / 3))  # tr(a^-1 da) = sum 1/a_ii
    g = fgrad.grad(lambda a: LA.slogdet(a).logabsdet)(a)
    np.testing.assert_allclose(g, np.linalg.inv(a).T)
    np.testing.assert_allclose(fgrad.grad(LA.det)(a), np.linalg.det(a) * np.linalg.inv(a).T)


# --- adjugate, and det and slogdet at singular matrices -------------------------------------


@given(n=sizes, stack=stacks, seed=seeds, complex_=st.booleans())
def test_adjugate_of_invertible_matrices_is_det_times_inverse(n, stack, seed, complex_):
    a = with_singular_values(stack + (n, n), seed)
    if complex_:
        a = a + 1j * with_singular_values(stack + (n, n), seed + 1)
    expected = np.linalg.det(a)[..., None, None] * np.linalg.inv(a)
    out = traced(dec.adjugate)(a)
    np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-12)
    check_grads(dec.adjugate, (a,), order=2)  # d adj, through the inverse, to second order


def test_adjugate_of_singular_and_small_matrices():
    rank_two = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    cofactors = np.array([[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]])  # by hand
    rank_one = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
    complex_rank_one = np.array([[1.0, 1j], [1j, -1.0]])  # det 0, adj [[d, -b], [-c, a]]
    cases = [
        (rank_two, cofactors.T),
        (rank_one, np.zeros((3, 3))),
        (np.zeros((2, 2)), np.zeros((2, 2))),
        (np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[0.0, -1.0], [0.0, 0.0]])),
        (complex_rank_one, np.array([[-1.0, -1j], [-1j, 1.0]])),
        (np.array([[5.0]]), np.array([[1.0]])),
        (np.zeros((1, 1)), np.array([[1.0]])),
        (np.ones((0, 0)), np.ones((0, 0))),
        (np.ones((2, 0, 0)), np.ones((2, 0, 0))),
        (np.stack([rank_two, np.eye(3)]), np.stack([cofactors.T, np.eye(3)])),
    ]
    for a, expected in cases:
        out = traced(dec.adjugate)(a)
        np.testing.assert_allclose(out, expected, atol=1e-12)
        assert out.shape == a.shape and out.dtype == np.result_type(a.dtype, np.float64)
    assert traced(dec.adjugate)(np.eye(2, dtype=np.float32)).dtype == np.float32


def test_det_gradient_at_singular_matrices_is_the_transposed_adjugate():
    np.testing.assert_array_equal(fgrad.grad(LA.det)(np.zeros((1, 1))), [[1.0]])
    np.testing.assert_allclose(fgrad.grad(LA.det)(np.diag([1.0, 2.0, 0.0])), np.diag([0.0, 0.0, 2.0]), atol=1e-15)
    np.testing.assert_allclose(fgrad.grad(LA.det)(np.zeros((3, 3))), np.zeros((3, 3)), atol=1e-15)
    rank_two = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    for a in (rank_two, np.outer([1.0, 2.0], [3.0, -1.0]), np.stack([rank_two, np.eye(3)])):
        check_grads(LA.det, (a,), order=1)  # against finite differences
    g = fgrad.vmap(fgrad.grad(LA.det))(np.stack([rank_two, 2 * np.eye(3)]))
    np.testing.assert_allclose(g[1], 4 * np.eye(3))
    np.testing.assert_allclose(g[0], fgrad.grad(LA.det)(rank_two))
    assert fgrad.grad(LA.det)(np.ones((0, 0))).shape == (0, 0)


def test_det_second_derivatives():
    a = with_singular_values((3, 3), 3)
    check_grads(LA.det, (a,), order=2)
    h = fgrad.hessian(LA.det)(np.eye(2))  # det = a d - b c
    np.testing.assert_allclose(h.reshape(4, 4), np.fliplr(np.diag([1.0, -1.0, -1.0, 1.0])), atol=1e-15)
    complex_a = a + 1j * with_singular_values((3, 3), 4)
    check_grads(LA.det, (complex_a,), order=2)



def cofactors(a):
    """det's gradient by its definition: C_ij = (-1)^(i+j) det(a without row i and column j)."""
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)]
                     for i in range(n)])


@pytest.mark.parametrize("a", [
    np.diag([1.0, 2.0, 0.0]),  # exactly singular
    np.arange(9.0).reshape(3, 3),  # rank 2
    np.outer([1.0, -2.0, 0.5, 3.0], [0.3, 1.0, -1.0, 2.0]),  # rank 1: the adjugate is 0, its derivative is not
    np.eye(3),  # repeated singular values
], ids=["diagonal", "rank2", "rank1", "identity"])
def test_det_second_derivatives_at_singular_matrices(a):
    # The cofactors are a polynomial of degree n - 1 <= 3: central differences with h = 1e-3 are exact
    # to 1e-6 * (third derivative); the hessian is each cofactor's derivative in each entry.
    h, n = 1e-3, a.shape[0]
    expected = np.empty((n, n, n, n))
    for k, m in np.ndindex(n, n):
        e = np.zeros((n, n))
        e[k, m] = h
        expected[:, :, k, m] = (cofactors(a + e) - cofactors(a - e)) / (2 * h)
    np.testing.assert_allclose(fgrad.hessian(LA.det)(a), expected, atol=1e-8)
    np.testing.assert_allclose(fgrad.jacfwd(fgrad.grad(LA.det))(a), expected, atol=1e-8)
    np.testing.assert_allclose(fgrad.jit(fgrad.hessian(LA.det))(a), expected, atol=1e-8)
    stack = np.stack([a, a.T])
    np.testing.assert_allclose(fgrad.vmap(fgrad.hessian(LA.det))(stack)[1],
                               np.transpose(expected, (1, 0, 3, 2)), atol=1e-8)


def test_slogdet_at_a_singular_matrix():
    a = np.diag([1.0, 2.0, 0.0])
    sign, logabsdet = traced(LA.slogdet)(a)
    assert sign == 0 and logabsdet == -np.inf  # NumPy's values
    with pytest.raises(np.linalg.LinAlgError, match=r"slogdet has no derivative at a singular matrix.*det instead"):
        fgrad.grad(lambda a: LA.slogdet(a).logabsdet)(a)


# --- cholesky -------------------------------------------------------------------------------


@pytest.mark.parametrize("upper", [False, True])
@given(n=sizes, stack=stacks, seed=seeds)
def test_cholesky(upper, n, stack, seed):
    a = spd(stack + (n, n), seed)
    f = lambda a: LA.cholesky(a, upper=upper)
    np.testing.assert_allclose(traced(f)(a), np.linalg.cholesky(a, upper=upper), rtol=1e-12, atol=1e-13)
    check_grads(f, (a,), order=2)  # as a function of the triangle it reads
    x = np.linalg.cholesky(a)
    through_product = lambda x: f(x @ np.swapaxes(x, -1, -2) + 0.5 * np.eye(n))
    check_grads(through_product, (x,), order=2)


def test_cholesky_derivative_lives_in_the_triangle_it_reads():
    a = spd((3, 3), 0)
    lower = fgrad.grad(lambda a: fnp.sum(LA.cholesky(a)))(a)
    upper = fgrad.grad(lambda a: fnp.sum(LA.cholesky(a, upper=True)))(a)
    assert np.all(np.triu(lower, 1) == 0) and np.all(np.tril(upper, -1) == 0)
    np.testing.assert_allclose(upper, lower.T)


# --- qr -------------------------------------------------------------------------------------

QR_SHAPES = [(3, 2), (4, 1), (3, 3), (1, 1), (2, 4), (1, 3), (2, 3, 2), (2, 2, 3)]


@pytest.mark.parametrize("shape", QR_SHAPES, ids=str)
@given(seed=seeds, mode=st.sampled_from(["reduced", "complete", "r"]))
def test_qr(shape, seed, mode):
    a = for_qr(shape, seed)
    # A finite-difference step (1e-5 along a random normal direction) moves a pivot by up to
    # about 1e-4: from 1e-2 away it never crosses zero, where the signs flip.
    assume(np.all(np.abs(householder_pivots(a)) > 1e-2))
    f = lambda a: LA.qr(a, mode=mode)
    expected = np.linalg.qr(a, mode=mode)
    for got, want in zip(*(([traced(f)(a)], [expected]) if mode == "r" else (traced(f)(a), expected))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    if mode == "complete" and shape[-2] > shape[-1]:
        return  # the extra columns of Q are not unique: no derivative (see test_decomposition_errors)
    check_grads(f, (a,), order=2)


@pytest.mark.parametrize("shape, seed, mode", [((2, 2, 3), 10032, "reduced"), ((2, 4), 1532088447, "complete")])
def test_qr_derivatives_where_a_wide_matrix_has_an_ill_conditioned_leading_block(shape, seed, mode):
    # Failures of test_qr before it drew from for_qr (the first found by hypothesis in CI, the
    # second by a longer random search): singular values in [1, 3], but leading blocks with
    # condition numbers 143 and 1460 (r_00 = -0.034 and -0.0092). The second derivatives agree
    # in every nesting of forward and reverse mode, and with 40-digit arithmetic to 1e-13
    # relative; central differences with the default step 1e-5 miss by eps^2 f'''/6, up to
    # 3e-3, and by 100 times less with a step 10 times smaller.
    a = with_singular_values(shape, seed)
    check_grads(lambda a: LA.qr(a, mode=mode), (a,), order=2, eps=1e-6)


def test_qr_derivatives_beside_a_householder_pivot_sign_flip():
    # Found by a random search of test_qr's inputs: the second matrix of the stack has
    # a_00 = -1.2e-5, so a step of 1e-5 moves the first pivot across zero, where LAPACK flips
    # the sign of R's first row (finite differences then miss by 2e5). The derivative is that
    # of the branch at the point: steps that stay on its side agree with it.
    a = with_singular_values((2, 2, 3), 2242627216)
    assert np.abs(householder_pivots(a)).min() < 1e-4
    check_grads(lambda a: LA.qr(a, mode="r"), (a,), order=2, eps=1e-7)


# --- eigh, eigvalsh ---------------------------------------------------------------------------


@pytest.mark.parametrize("UPLO", ["L", "U"])
@given(n=sizes, stack=stacks, seed=seeds)
def test_eigh(UPLO, n, stack, seed):
    a = symmetric(stack + (n, n), seed)
    w, v = traced(lambda a: LA.eigh(a, UPLO))(a)
    expected = np.linalg.eigh(a, UPLO)
    np.testing.assert_allclose(w, expected.eigenvalues, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(v, expected.eigenvectors, rtol=1e-12, atol=1e-13)
    check_grads(lambda a: (lambda w, v: (w, sign_free(v, axis=-2)))(*LA.eigh(a, UPLO)), (a,), order=2)


@pytest.mark.parametrize("UPLO", ["L", "U"])
@given(n=sizes, stack=stacks, seed=seeds)
def test_eigvalsh(UPLO, n, stack, seed):
    a = symmetric(stack + (n, n), seed)
    f = lambda a: LA.eigvalsh(a, UPLO)
    np.testing.assert_allclose(traced(f)(a), np.linalg.eigvalsh(a, UPLO), rtol=1e-12, atol=1e-13)
    check_grads(f, (a,), order=2)


def test_eigh_of_a_symmetric_function_and_its_jaxpr():
    x = symmetric((3, 3), 1)
    f = lambda x: LA.eigh(x + x.T)
    check_grads(lambda x: (f(x)[0], sign_free(f(x)[1], -2)), (x,), order=2)
    text = str(fgrad.make_jaxpr(lambda a: LA.eigh(a))(x))
    assert "b:f64[3] c:f64[3,3] = eigh[UPLO=L] a" in text


@pytest.mark.parametrize("UPLO", ["L", "U"])
@given(n=sizes, stack=stacks, seed=seeds)
def test_eigh_of_complex_hermitian_matrices(UPLO, n, stack, seed):
    a = hermitian(stack + (n, n), seed)
    w, v = traced(lambda a: LA.eigh(a, UPLO))(a)
    expected = np.linalg.eigh(a, UPLO)
    np.testing.assert_allclose(w, expected.eigenvalues, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(v, expected.eigenvectors, rtol=1e-12, atol=1e-13)
    assert w.dtype == np.float64 and v.dtype == np.complex128
    invariant = lambda a: (lambda w, v: (w, sign_free(v, -2), abs(v) ** 2, projectors(v)))(*LA.eigh(a, UPLO))
    check_grads(invariant, (a,), order=2)
    check_grads(lambda a: LA.eigvalsh(a, UPLO), (a,), order=2)
    for got, want in zip(fgrad.jit(invariant)(a), invariant(a)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_complex_eigh_is_differentiated_as_a_function_of_the_triangle_and_real_diagonal():
    a = hermitian((3, 3), 0)
    c = rhs((3,), 0)
    not_hermitian = a + np.triu(rhs((3, 3), 1) + 1j * rhs((3, 3), 2), 1) + 1j * np.diag([1.0, 2.0, 3.0])
    for f in (lambda a: fnp.sum(LA.eigvalsh(a) * c), lambda a: fnp.sum(LA.eigh(a).eigenvalues * c)):
        np.testing.assert_allclose(f(not_hermitian), f(a), rtol=1e-12)  # NumPy reads the lower triangle only
        g = fgrad.grad(f)(not_hermitian)
        assert np.all(np.triu(g, 1) == 0) and np.all(np.diag(g).imag == 0)
        np.testing.assert_allclose(g, fgrad.grad(f)(a), rtol=1e-10, atol=1e-12)
        check_grads(f, (not_hermitian,), order=2)  # random complex directions, in every entry
    w, v = np.linalg.eigh(a)
    dw = fgrad.jvp(LA.eigvalsh, (a,), (np.tril(a),))[1]  # the lower triangle with the diagonal: a again
    np.testing.assert_allclose(dw, w, rtol=1e-10)


def test_complex_eigh_in_single_precision():
    a = hermitian((2, 3, 3), 3).astype(np.complex64)
    w, v = traced(LA.eigh)(a)
    assert w.dtype == np.float32 and v.dtype == np.complex64
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5)
    check_grads(LA.eigvalsh, (a,), order=1)  # single precision: finite differences allow one order
    check_grads(lambda a: projectors(LA.eigh(a).eigenvectors), (a,), order=1)


# --- eig, eigvals ----------------------------------------------------------------------------

EIG_SHAPES = [(1, 1), (2, 2), (3, 3), (4, 4), (2, 3, 3), (2, 1, 2, 2)]


def _eig_invariants(a):
    w, v = LA.eig(a)
    return w, fnp.real(w), fnp.imag(w), abs(v) ** 2, projectors(v), sign_free(v, -2)


@pytest.mark.parametrize("shape", EIG_SHAPES, ids=str)
@settings(max_examples=25)  # per shape
@given(seed=seeds, complex_=st.booleans())
def test_eig(shape, seed, complex_):
    a = general(shape, seed, complex_)
    expected = np.linalg.eig(a)
    w, v = traced(LA.eig)(a)  # staged: complex, as the values are not known
    np.testing.assert_allclose(w, expected.eigenvalues, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v, expected.eigenvectors, rtol=1e-12, atol=1e-12)
    assert w.dtype == v.dtype == np.complex128
    np.testing.assert_allclose(traced(LA.eigvals)(a), np.linalg.eigvals(a), rtol=1e-12, atol=1e-12)
    # under grad and jvp the values are known: NumPy's dtypes, real where NumPy's are
    (w, v), _ = fgrad.jvp(LA.eig, (a,), (a,))
    assert w.dtype == expected.eigenvalues.dtype and v.dtype == expected.eigenvectors.dtype
    assert fgrad.jvp(LA.eigvals, (a,), (a,))[0].dtype == np.linalg.eigvals(a).dtype
    check_grads(_eig_invariants, (a,), order=2)
    check_grads(LA.eigvals, (a,), order=2)


def test_eig_results_are_real_where_numpy_s_are():
    real_spectrum = np.array([[2.0, 1.0], [0.5, -1.0]])
    rotation = np.array([[0.0, 1.0], [-1.0, 0.0]])
    mixed = np.stack([real_spectrum, rotation])  # NumPy decides for the whole stack
    for a in (real_spectrum, rotation, mixed, np.ones((0, 0)), np.array([[2, 1], [1, 2]])):
        expected = np.linalg.eig(a)
        for f in (LA.eig, lambda a: fgrad.jvp(LA.eig, (a.astype(float),), (np.ones(a.shape),))[0]):
            w, v = f(a)
            assert w.dtype == expected.eigenvalues.dtype and v.dtype == expected.eigenvectors.dtype
            np.testing.assert_allclose(w, expected.eigenvalues, atol=1e-14)
        g = fgrad.grad(lambda a: fnp.sum(LA.eigvals(a) ** 2).real)(a.astype(float))
        np.testing.assert_allclose(g, 2 * np.swapaxes(a, -1, -2), atol=1e-12)  # sum w^2 = trace(a^2)
    # real eigenvalues: the real results are differentiated too (they stay real nearby)
    check_grads(lambda a: (lambda w, v: (w, v * v[:1]))(*LA.eig(a)), (real_spectrum,), order=2)
    for transform in (fgrad.jit, fgrad.vmap):  # values not known: complex, as JAX's
        w, v = transform(LA.eig)(real_spectrum if transform is fgrad.jit else real_spectrum[None])
        assert w.dtype == v.dtype == np.complex128
        np.testing.assert_allclose(np.squeeze(w), np.linalg.eig(real_spectrum).eigenvalues)


def test_eig_in_single_precision_and_of_integers():
    a = general((2, 3, 3), 7).astype(np.float32)
    w, v = traced(LA.eig)(a)
    assert w.dtype == v.dtype == np.complex64
    np.testing.assert_allclose(w, np.linalg.eig(a).eigenvalues, rtol=1e-5, atol=1e-5)
    check_grads(LA.eigvals, (a,), order=1)  # single precision: finite differences allow one order
    check_grads(lambda a: abs(LA.eig(a).eigenvectors) ** 2, (a,), order=1)
    c = general((3, 3), 8, complex_=True).astype(np.complex64)
    assert traced(LA.eigvals)(c).dtype == np.complex64 == np.linalg.eigvals(c).dtype
    check_grads(LA.eigvals, (c,), order=1)
    ints = np.array([[1, 2], [3, 4]])
    assert traced(LA.eigvals)(ints).dtype == np.complex128
    assert fgrad.jvp(LA.eigvals, (ints.astype(float),), (ints.astype(float),))[0].dtype == np.float64


def test_eig_derivative_of_the_reconstruction_and_of_the_eigenvalues():
    a = general((3, 3), 1)
    rebuilt = lambda a: (lambda w, v: (v * w[..., None, :]) @ fnp.linalg.inv(v))(*LA.eig(a))
    parts = lambda a: fnp.stack([fnp.real(rebuilt(a)), fnp.imag(rebuilt(a))])
    identity = np.stack([np.eye(9).reshape(3, 3, 3, 3), np.zeros((3, 3, 3, 3))])
    np.testing.assert_allclose(fgrad.jacrev(parts)(a), identity, atol=1e-10)
    np.testing.assert_allclose(fgrad.jacfwd(parts)(a), identity, atol=1e-10)
    w, v = np.linalg.eig(a)
    left = np.linalg.inv(v)  # dw_k = (V^-1)_k da v_k
    t = rhs((3, 3), 0)
    np.testing.assert_allclose(fgrad.jvp(LA.eigvals, (a,), (t,))[1], np.einsum("ki,ij,jk->k", left, t, v))
    unit = fgrad.jvp(lambda a: fnp.sum(abs(LA.eig(a).eigenvectors) ** 2, axis=0), (a,), (t,))[1]
    np.testing.assert_allclose(unit, 0, atol=1e-12)  # the columns keep unit norm


def test_eig_at_repeated_eigenvalues_has_no_derivative():
    # As eigh's (and JAX's), the eigenvectors' derivative is inf or nan at repeated
    # eigenvalues. eig's eigenvalues have none either (at a defective matrix they move
    # as a square root): nan for each exactly repeated one, where diag(V^-1 da V)
    # would be a meaningless number (5e291 for the Jordan block below).
    t = rhs((3, 3), 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w_dot, v_dot = fgrad.jvp(LA.eig, (np.diag([1.0, 2.0, 1.0]),), (t,))[1]
        assert np.all(np.isnan(w_dot[[0, 2]])) and np.isclose(w_dot[1], t[1, 1]) and not np.all(np.isfinite(v_dot))
        w_dot = fgrad.jvp(LA.eigvals, (np.array([[0.0, 1.0], [0.0, 0.0]]),), (t[:2, :2],))[1]
        assert np.all(np.isnan(w_dot))
        g = fgrad.grad(lambda a: fnp.sum(LA.eigvals(a)).real)(np.eye(2))
        assert np.all(np.isnan(g))
        w_dot, v_dot = fgrad.jvp(LA.eigh, (np.eye(3),), (t + t.T,))[1]
    assert np.all(np.isfinite(w_dot)) and not np.all(np.isfinite(v_dot))


def test_eig_under_vmap_and_jit_and_numpy_dispatch():
    a = general((3, 3, 3), 2)
    w, v = fgrad.vmap(LA.eig)(a)
    for i in range(3):
        expected = np.linalg.eig(a[i])
        np.testing.assert_allclose(w[i], expected.eigenvalues, rtol=1e-12)
        np.testing.assert_allclose(v[i], expected.eigenvectors, rtol=1e-12, atol=1e-13)
    jitted = fgrad.jit(_eig_invariants)
    for got, want in zip(jitted(a), _eig_invariants(a)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    g = fgrad.grad(lambda a: np.linalg.eigvals(a).real.sum() + np.linalg.eig(a)[0].imag.sum())(a)
    np.testing.assert_allclose(g, np.broadcast_to(np.eye(3), a.shape), atol=1e-12)  # d trace = I
    assert type(fgrad.vmap(LA.eig)(a)).__name__ == "EigResult"


# --- svd, svdvals ---------------------------------------------------------------------------

SVD_SHAPES = [(3, 2), (2, 3), (3, 3), (1, 1), (4, 1), (2, 3, 2), (2, 2, 4)]


@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
@given(seed=seeds, full_matrices=st.booleans())
def test_svd(shape, seed, full_matrices):
    a = with_singular_values(shape, seed)
    f = lambda a: LA.svd(a, full_matrices=full_matrices)
    for got, want in zip(traced(f)(a), np.linalg.svd(a, full_matrices=full_matrices)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    if full_matrices and shape[-1] != shape[-2]:
        return  # the extra singular vectors are not unique: no derivative
    invariant = lambda a: (lambda u, s, vh: (sign_free(u, -2), s, sign_free(vh, -1)))(*f(a))
    check_grads(invariant, (a,), order=2)


@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
@given(seed=seeds)
def test_svdvals(shape, seed):
    a = with_singular_values(shape, seed)
    np.testing.assert_allclose(traced(LA.svdvals)(a), np.linalg.svdvals(a), rtol=1e-12)
    np.testing.assert_allclose(traced(lambda a: LA.svd(a, compute_uv=False))(a), np.linalg.svdvals(a))
    check_grads(LA.svdvals, (a,), order=2)


def test_svd_hermitian_and_reconstruction():
    a = spd((3, 3), 2)
    u, s, vh = traced(lambda a: LA.svd(a, hermitian=True))(a)
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(a, hermitian=True).S, rtol=1e-12)
    # NumPy's hermitian=True: eigh of the lower triangle, |w| descending, its own signs
    upper = np.triu(rhs((3, 3), 0), 1)
    for x in (symmetric((3, 3), 0), symmetric((2, 4, 4), 1) + np.triu(rhs((4, 4), 1), 1), hermitian((3, 3), 2),
              hermitian((2, 3, 3), 3) + 1j * np.diag([1.0, 2.0, 3.0]) + upper):
        for kwargs in ({}, {"compute_uv": False}):
            f = lambda x, kwargs=kwargs: LA.svd(x, hermitian=True, **kwargs)
            expected = np.linalg.svd(x, hermitian=True, **kwargs)
            outs, wants = traced(f)(x), expected
            if kwargs:  # S alone
                outs, wants = [outs], [wants]
            for got, want in zip(outs, wants):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
                assert got.dtype == want.dtype
        check_grads(lambda x: LA.svd(x, compute_uv=False, hermitian=True), (x,), order=2)
        check_grads(lambda x: (lambda u, s, vh: ((u * s[..., None, :]) @ vh, abs(u) ** 2))(*LA.svd(x, hermitian=True)),
                    (x,), order=2)
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        fgrad.make_jaxpr(lambda a: LA.svd(a, hermitian=True))(np.ones((2, 3)))
    rebuilt = lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*LA.svd(a, full_matrices=False))
    x = with_singular_values((3, 2), 3)
    np.testing.assert_allclose(fgrad.jacrev(rebuilt)(x), fgrad.jacrev(lambda x: x)(x), atol=1e-10)


@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
@settings(max_examples=20)  # per shape: seven shapes, each example a second-order check
@given(seed=seeds)
def test_svd_of_complex_matrices(shape, seed):
    a = complex_like(with_singular_values, shape, seed)
    expected = np.linalg.svd(a, full_matrices=False)
    u, s, vh = traced(lambda a: LA.svd(a, full_matrices=False))(a)
    for got, want in zip((u, s, vh), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    assert u.dtype == vh.dtype == np.complex128 and s.dtype == np.float64
    np.testing.assert_allclose(traced(LA.svdvals)(a), expected.S, rtol=1e-12)

    def invariant(a):  # the phases of u_k and v_k are one: these do not depend on it
        u, s, vh = LA.svd(a, full_matrices=False)
        return s, (u * s[..., None, :]) @ vh, abs(u) ** 2, abs(vh) ** 2, projectors(u), sign_free(vh, -1)

    check_grads(invariant, (a,), order=2)
    check_grads(LA.svdvals, (a,), order=2)
    for got, want in zip(fgrad.jit(invariant)(a), invariant(a)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_complex_svd_phase_term_and_single_precision():
    # For complex a, U^H dU gets an imaginary diagonal (P - P^H) / 2 S^-1 beside the
    # real-case terms: without it U diag(s) V^H would not have the derivative of a.
    a = complex_like(with_singular_values, (3, 3), 5)
    rebuilt = lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*LA.svd(a))
    t = rhs((3, 3), 0) + 1j * rhs((3, 3), 1)
    np.testing.assert_allclose(fgrad.jvp(rebuilt, (a,), (t,))[1], t, atol=1e-12)
    a32 = complex_like(with_singular_values, (2, 3, 2), 6).astype(np.complex64)
    u, s, vh = traced(lambda a: LA.svd(a, full_matrices=False))(a32)
    assert u.dtype == np.complex64 and s.dtype == np.float32
    np.testing.assert_allclose(s, np.linalg.svdvals(a32), rtol=1e-5)
    check_grads(LA.svdvals, (a32,), order=1)  # single precision: finite differences allow one order
    check_grads(lambda a: projectors(LA.svd(a, full_matrices=False).U), (a32,), order=1)


@pytest.mark.parametrize("ord", ["nuc", 2, -2, "fro"], ids=str)
@given(seed=seeds, shape=st.sampled_from([(3, 2), (2, 3), (3, 3), (2, 2, 3)]))
def test_spectral_and_nuclear_norms_of_complex_matrices(ord, seed, shape):
    a = complex_like(with_singular_values, shape, seed)
    f = lambda a: LA.norm(a, ord, axis=(-2, -1))
    np.testing.assert_allclose(traced(f)(a), np.linalg.norm(a, ord, axis=(-2, -1)), rtol=1e-12)
    np.testing.assert_allclose(traced(lambda a: LA.matrix_norm(a, ord=ord))(a), np.linalg.matrix_norm(a, ord=ord))
    check_grads(f, (a,), order=2)
    # cond's second differences keep ~1e-5 of truncation error once complex_like's sum of two matrices
    # has a condition number of ~40 (a smaller step passes there): its derivative is checked below 20
    if shape[-1] == shape[-2] and np.max(np.linalg.cond(a)) < 20:
        check_grads(LA.cond, (a,), order=2)


# --- pinv, lstsq ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (3, 3), (1, 2), (2, 3, 2)], ids=str)
@given(seed=seeds, data=st.data())
def test_pinv(shape, seed, data):
    a = with_singular_values(shape, seed)
    kwargs = data.draw(st.sampled_from([{}, {"rcond": 1e-10}, {"rtol": None}, {"rtol": 1e-8}]))
    f = lambda a: LA.pinv(a, **kwargs)
    np.testing.assert_allclose(traced(f)(a), np.linalg.pinv(a, **kwargs), rtol=1e-11, atol=1e-12)
    check_grads(f, (a,), order=2)


def test_pinv_of_a_rank_deficient_matrix_and_hermitian():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])
    np.testing.assert_allclose(traced(LA.pinv)(a), np.linalg.pinv(a), atol=1e-12)
    # The derivative holds where the rank is constant: along rank-1 matrices here.
    check_grads(lambda x, y: LA.pinv(fnp.outer(x, y)), (a[:, 0], a[0]), order=2)
    s = spd((3, 3), 4)
    np.testing.assert_allclose(traced(lambda s: LA.pinv(s, hermitian=True))(s), np.linalg.inv(s), atol=1e-12)


def test_pinv_hermitian_is_differentiated_as_a_function_of_the_lower_triangle():
    f = lambda a: LA.pinv(a, hermitian=True)
    s = spd((3, 3), 4)
    not_symmetric = s + np.triu(rhs((3, 3), 0), 1)  # NumPy reads the lower triangle only
    np.testing.assert_allclose(traced(f)(not_symmetric), np.linalg.pinv(not_symmetric, hermitian=True), atol=1e-12)
    for a in (s, not_symmetric):
        check_grads(f, (a,), order=2)  # random, non-symmetric directions
    g = fgrad.grad(lambda a: fnp.sum(f(a) * rhs((3, 3), 1)))(not_symmetric)
    assert np.all(np.triu(g, 1) == 0)
    v = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 1.0]]).T  # rank 2, constant along x x^T
    check_grads(lambda x: f(x @ x.T + 0.3 * np.triu(np.ones((3, 3)), 1)), (v,), order=2)


@pytest.mark.parametrize("shape", [(4, 2), (3, 3), (2, 3), (3, 1)], ids=str)
@settings(max_examples=25)  # per shape
@given(seed=seeds, k=st.sampled_from([None, 1, 2]))
def test_lstsq(shape, seed, k):
    a = with_singular_values(shape, seed)
    b = rhs((shape[0],) if k is None else (shape[0], k), seed)
    x, residuals, rank, s = traced(LA.lstsq)(a, b)
    expected = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, expected[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(residuals, expected[1], rtol=1e-10, atol=1e-12)
    assert np.shape(residuals) == np.shape(expected[1]) and rank == expected[2]
    np.testing.assert_allclose(s, expected[3], rtol=1e-12)
    check_grads(lambda a, b: LA.lstsq(a, b)[:2], (a, b), order=2)  # the solution and the residuals


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.float32])
def test_lstsq_residuals_are_real_squared_magnitudes_and_rank_is_int32(dtype):
    a = (with_singular_values((3, 2), 0) + 1j * with_singular_values((3, 2), 1)).astype(dtype)
    b = (rhs((3,), 0) + 1j * rhs((3,), 2)).astype(dtype)
    x, residuals, rank, s = traced(LA.lstsq)(a, b)
    expected = np.linalg.lstsq(a, b)
    tol = 1e-5 if dtype in (np.complex64, np.float32) else 1e-12
    np.testing.assert_allclose(residuals, expected[1], rtol=tol)
    assert residuals.dtype == expected[1].dtype and np.asarray(rank).dtype == np.int32 == expected[2].dtype
    empty = traced(LA.lstsq)(a[:2], b[:2])[1]
    assert empty.shape == (0,) and empty.dtype == np.linalg.lstsq(a[:2], b[:2])[1].dtype


def test_lstsq_of_a_rank_deficient_matrix():
    a = np.outer([1.0, 2.0, 3.0, 1.0], [1.0, -1.0])
    b = np.array([1.0, 0.0, 2.0, 1.0])
    x, residuals, rank, s = fgrad.jvp(LA.lstsq, (a, b), (np.zeros_like(a), np.zeros_like(b)))[0]
    expected = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, expected[0], atol=1e-12)
    assert rank == 1 and residuals.shape == (0,)


# --- matrix_power, multi_dot, matrix_rank, cond -----------------------------------------------


@given(n=sizes, stack=stacks, power=st.integers(-3, 6), seed=seeds)
def test_matrix_power(n, stack, power, seed):
    a = with_singular_values(stack + (n, n), seed, low=0.6, high=1.2)
    f = lambda a: LA.matrix_power(a, power)
    np.testing.assert_allclose(traced(f)(a), np.linalg.matrix_power(a, power), rtol=1e-11, atol=1e-12)
    check_grads(f, (a,), order=2)


def test_matrix_power_of_integers_stays_integer():
    a = np.array([[1, 1], [0, 1]])
    out = fgrad.make_jaxpr(lambda a: LA.matrix_power(a, 3))(a)
    assert out.out_avals[0].dtype == a.dtype
    np.testing.assert_array_equal(fgrad.vmap(lambda a: LA.matrix_power(a, 3))(a[None]), [[[1, 3], [0, 1]]])


@given(dims=st.lists(st.integers(1, 4), min_size=3, max_size=6), seed=seeds, data=st.data())
def test_multi_dot(dims, seed, data):
    arrays = [rhs((m, n), seed + i) for i, (m, n) in enumerate(zip(dims, dims[1:]))]
    if data.draw(st.booleans()):
        arrays[0] = arrays[0][0]
    if data.draw(st.booleans()):
        arrays[-1] = arrays[-1][:, 0]
    f = lambda *arrays: LA.multi_dot(arrays)
    np.testing.assert_allclose(traced(f)(*arrays), np.linalg.multi_dot(arrays), rtol=1e-11, atol=1e-12)
    check_grads(f, arrays, order=2)


TENSORSOLVE_CASES = [  # a's shape, b's shape, axes
    ((6, 2, 3), (6,), None),
    ((2, 3, 6), (2, 3), None),
    ((2, 3, 2, 3), (2, 3), None),
    ((2, 3, 4, 2, 3, 4), (2, 3, 4), None),
    ((2, 6, 3), (6,), (0,)),
    ((3, 2, 6), (6,), (0, 1)),
    ((4, 4), (4,), None),
    ((1, 1), (1,), None),
]


@pytest.mark.parametrize("a_shape, b_shape, axes", TENSORSOLVE_CASES, ids=str)
@given(seed=seeds)
def test_tensorsolve(a_shape, b_shape, axes, seed):
    n = int(np.prod(b_shape))
    square = with_singular_values((n, n), seed)
    order = [i for i in range(len(a_shape)) if i not in (axes or ())] + list(axes or ())
    a = square.reshape(tuple(a_shape[i] for i in order)).transpose(np.argsort(order))  # as a_shape
    b = rhs(b_shape, seed)
    f = lambda a, b: LA.tensorsolve(a, b, axes)
    expected = np.linalg.tensorsolve(a, b, axes)
    out = traced(f)(a, b)
    np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-12)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(fgrad.jit(f)(a, b), expected, rtol=1e-11, atol=1e-12)
    check_grads(f, (a, b), order=2)


TENSORINV_CASES = [((4, 2, 2), 1), ((2, 2, 4), 2), ((2, 3, 6), 2), ((2, 2, 2, 8), 3), ((3, 3), 1), ((2, 3, 2, 3), 2)]


@pytest.mark.parametrize("shape, ind", TENSORINV_CASES, ids=str)
@given(seed=seeds, complex_=st.booleans())
def test_tensorinv(shape, ind, seed, complex_):
    n = int(np.prod(shape[ind:]))
    a = (complex_like(with_singular_values, (n, n), seed) if complex_ else with_singular_values((n, n), seed))
    a = a.reshape(shape)
    f = lambda a: LA.tensorinv(a, ind)
    expected = np.linalg.tensorinv(a, ind)
    out = traced(f)(a)
    np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-12)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(fgrad.jit(f)(a), expected, rtol=1e-11, atol=1e-12)
    # complex_like's sum of two matrices may have a condition number of ~40, where the
    # second differences of an 8 x 8 inverse keep ~1e-5 of rounding and truncation
    tol = 1e-4 if complex_ else None
    check_grads(f, (a,), order=2, atol=tol, rtol=tol)


def test_tensorsolve_and_tensorinv_dtypes_vmap_and_errors():
    a = np.eye(6).reshape(6, 2, 3) * 2
    ints = np.eye(4, dtype=int).reshape(2, 2, 2, 2)
    for f, args in [(LA.tensorsolve, (a.astype(np.float32), np.ones(6, np.float32))),
                    (LA.tensorsolve, (ints, np.ones((2, 2), int))), (LA.tensorinv, (ints,)),
                    (LA.tensorinv, (a.astype(np.float32).reshape(2, 3, 6),))]:
        assert traced(f)(*args).dtype == f(*args).dtype
    stack = np.stack([a, 3 * a])
    got = fgrad.vmap(LA.tensorsolve, in_axes=(0, None))(stack, np.arange(6.0))
    np.testing.assert_allclose(got, [np.linalg.tensorsolve(x, np.arange(6.0)) for x in stack])
    got = fgrad.vmap(lambda a: LA.tensorinv(a, ind=1))(stack)
    np.testing.assert_allclose(got, [np.linalg.tensorinv(x, ind=1) for x in stack])
    jaxpr = fgrad.make_jaxpr
    for run in (np.linalg.tensorsolve, jaxpr(LA.tensorsolve)):
        with pytest.raises(np.linalg.LinAlgError, match=r"prod\(a.shape\[b.ndim:\]\) == prod\(a.shape\[:b.ndim\]\)"):
            run(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="right-hand side has 3 elements for a matrix of size 2"):
        jaxpr(LA.tensorsolve)(np.ones((2, 2)), np.ones(3))
    for run in (np.linalg.tensorinv, lambda a, ind: jaxpr(lambda a: LA.tensorinv(a, ind))(a)):
        with pytest.raises(ValueError, match="Invalid ind argument"):
            run(np.ones((2, 2)), 0)
        with pytest.raises(np.linalg.LinAlgError, match="must be square"):
            run(np.ones((2, 3)), 1)
    with pytest.raises(ValueError, match=r"cannot reshape an array of shape \(2, 0\) into a matrix of 0 rows"):
        jaxpr(lambda a: LA.tensorinv(a, 1))(np.ones((2, 0)))
    with pytest.raises(ValueError):
        np.linalg.tensorinv(np.ones((2, 0)), 1)  # NumPy: a ValueError too


def test_matrix_rank_and_cond():
    a = with_singular_values((2, 3, 3), 5)
    deficient = np.outer([1.0, 2.0], [3.0, 4.0])
    for x in (a, deficient, np.zeros((2, 2)), np.ones(3), np.zeros(3)):
        np.testing.assert_array_equal(traced(LA.matrix_rank)(x), np.linalg.matrix_rank(x))
    np.testing.assert_array_equal(traced(lambda x: LA.matrix_rank(x, tol=0.5))(a), np.linalg.matrix_rank(a, tol=0.5))
    np.testing.assert_array_equal(traced(lambda x: LA.matrix_rank(x, rtol=0.5))(a), np.linalg.matrix_rank(a, rtol=0.5))
    for p in (None, 2, -2, 1, -1, np.inf, "fro", "nuc"):
        np.testing.assert_allclose(traced(lambda a, p=p: LA.cond(a, p))(a), np.linalg.cond(a, p), rtol=1e-11)
    check_grads(LA.cond, (a,), order=2)
    check_grads(lambda a: LA.cond(a, "fro"), (a,), order=2)


def test_matrix_rank_like_numpy():
    a = with_singular_values((2, 3, 3), 5)
    lower_only = np.array([[0.0, 0.0], [1.0, 0.0]])  # hermitian=True reads [[0, 1], [1, 0]]: rank 2
    cases = [
        (a, {}), (a, {"hermitian": True}), (spd((2, 3, 3), 1), {"hermitian": True}),
        (lower_only, {}), (lower_only, {"hermitian": True}),
        (a, {"tol": np.array([0.5, 10.0])}), (a, {"rtol": np.array([0.1, 0.9])}), (a, {"tol": 2.0}),
        (complex_like(with_singular_values, (3, 2), 1), {}), (hermitian((3, 3), 2), {"hermitian": True}),
        (a.astype(np.float32), {}), (np.ones((2, 0)), {}), (np.ones((3, 2, 0)), {"tol": 1.0}),
        (np.zeros(0), {}), (np.array(3.0), {}), (np.array(0.0), {}), (np.array([0, 1]), {}),
    ]
    for x, kwargs in cases:
        expected = np.linalg.matrix_rank(x, **kwargs)
        got = traced(lambda x: LA.matrix_rank(x, **kwargs))(x)
        np.testing.assert_array_equal(got, expected)
        assert np.shape(got) == np.shape(expected) and np.asarray(got).dtype == np.int64
    with pytest.raises(ValueError, match="can't be both set"):
        fgrad.make_jaxpr(lambda x: LA.matrix_rank(x, tol=1.0, rtol=1.0))(a)
    assert fgrad.grad(lambda x: fnp.sum(x) * LA.matrix_rank(x))(a[0]).tolist() == np.full((3, 3), 3.0).tolist()


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"], ids=str)
def test_cond_of_complex_single_precision_and_stacked_matrices(p):
    a = with_singular_values((2, 3, 3), 5)
    for x, tol in [(a, 1e-11), (complex_like(with_singular_values, (2, 3, 3), 6), 1e-11),
                   (a.astype(np.float32), 1e-5), (complex_like(with_singular_values, (3, 3), 7).astype(np.complex64), 1e-5)]:
        expected = np.linalg.cond(x, p)
        got = traced(lambda x: LA.cond(x, p))(x)
        np.testing.assert_allclose(got, expected, rtol=tol)
        assert got.dtype == expected.dtype and got.shape == expected.shape
    check_grads(lambda x: LA.cond(x, p), (complex_like(with_singular_values, (3, 3), 8),), order=1)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"], ids=str)
def test_cond_of_singular_empty_and_nan_matrices_like_numpy(p):
    singular = np.stack([np.ones((2, 2)), np.zeros((2, 2)), np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])
    f = lambda x: LA.cond(x, p)
    if p == "nuc":  # the nuclear norm of an inverse of nans: NumPy's SVD fails
        for ref in (np.linalg.cond, lambda x, p: traced(f)(x)):
            with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
                ref(singular, p)
    else:
        np.testing.assert_array_equal(traced(f)(singular), np.linalg.cond(singular, p))
        assert np.isinf(traced(f)(singular)[1]) and (p in (None, 2, -2) or np.isinf(traced(f)(singular)[0]))
        np.testing.assert_array_equal(traced(f)(np.ones((2, 2))), np.linalg.cond(np.ones((2, 2)), p))
    for empty in (np.ones((0, 0)), np.ones((2, 0)), np.ones((3, 0, 0))):
        with pytest.raises(np.linalg.LinAlgError, match="cond is not defined on empty arrays"):
            np.linalg.cond(empty, p)
        with pytest.raises(np.linalg.LinAlgError, match="cond is not defined on empty arrays"):
            traced(f)(empty)
    if p not in (None, 2, -2, "nuc"):  # a nan stays nan (NumPy's SVD rejects it)
        with_nan = np.array([[1.0, np.nan], [0.0, 1.0]])
        np.testing.assert_array_equal(traced(f)(with_nan), np.linalg.cond(with_nan, p))


# --- dtypes and errors --------------------------------------------------------------------------


def test_dtypes_follow_numpy():
    a32 = spd((3, 3), 6).astype(np.float32)
    ints = np.array([[2, 1], [1, 2]])
    for f in (LA.inv, LA.det, LA.cholesky, LA.eigvalsh, LA.svdvals, LA.pinv, lambda a: LA.solve(a, a[0]),
              lambda a: LA.eigh(a)[1], lambda a: LA.qr(a)[0], lambda a: LA.svd(a)[0],
              lambda a: LA.slogdet(a)[1], lambda a: LA.lstsq(a, a)[0]):
        for x in (a32, ints):
            got = traced(f)(x)
            assert np.asarray(got).dtype == np.asarray(f(x)).dtype
    check_grads(lambda a: LA.solve(a, a[0]), (a32,), order=1)
    check_grads(lambda a: LA.eigh(a).eigenvalues, (a32,), order=1)


def test_decomposition_errors():
    jaxpr = fgrad.make_jaxpr
    for f in (LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.eigvalsh, LA.eig, LA.eigvals):
        for run in (f, jaxpr(f)):  # NumPy's errors, eagerly and traced
            with pytest.raises(np.linalg.LinAlgError, match="1-dimensional array given"):
                run(np.ones(3))
            with pytest.raises(np.linalg.LinAlgError, match="0-dimensional array given"):
                run(np.array(1.0))
            with pytest.raises(np.linalg.LinAlgError, match="must be square"):
                run(np.ones((2, 3)))
    with pytest.raises(TypeError, match="float16 is unsupported in linalg"):
        jaxpr(LA.eig)(np.eye(2, dtype=np.float16))
    for f in (LA.svd, LA.qr, LA.pinv, LA.svdvals):
        with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
            jaxpr(f)(np.ones(3))
    with pytest.raises(TypeError, match="float16 is unsupported in linalg"):
        jaxpr(LA.inv)(np.eye(2, dtype=np.float16))
    with pytest.raises(ValueError, match="right-hand side has 3 rows"):
        jaxpr(LA.solve)(np.eye(2), np.ones((3, 1)))
    with pytest.raises(ValueError, match="right-hand side has 3 elements"):
        jaxpr(LA.solve)(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="right-hand side b is 0-d") as info:  # NumPy: a ValueError
        jaxpr(LA.solve)(np.eye(2), np.array(1.0))
    assert type(info.value) is ValueError
    rank_deficient = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # R has a zero on the diagonal
    with pytest.raises(np.linalg.LinAlgError, match="the derivative of qr needs a matrix of full rank"):
        fgrad.grad(lambda a: fnp.sum(LA.qr(a).R))(rank_deficient)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        fgrad.grad(lambda a: fnp.sum(LA.solve(a, np.ones(2))))(np.ones((2, 2)))
    with pytest.raises(ValueError, match="UPLO argument must be 'L' or 'U'"):
        jaxpr(lambda a: LA.eigh(a, "X"))(np.eye(2))
    with pytest.raises(ValueError, match="Unrecognized mode 'xx'"):
        jaxpr(lambda a: LA.qr(a, "xx"))(np.eye(2))
    with pytest.raises(NotImplementedError, match="mode='raw'"):
        jaxpr(lambda a: LA.qr(a, "raw"))(np.eye(2))
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        fgrad.grad(lambda a: fnp.sum(LA.svd(a)[0]))(np.ones((3, 2)))
    with pytest.raises(NotImplementedError, match="use mode='reduced'"):
        fgrad.grad(lambda a: fnp.sum(LA.qr(a, "complete")[0]))(with_singular_values((3, 2), 0))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        jaxpr(lambda a: LA.matrix_power(a, 1.5))(np.eye(2))
    with pytest.raises(ValueError, match="Expecting at least two arrays"):
        jaxpr(lambda a: LA.multi_dot([a]))(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError, match="Incompatible dimensions"):
        jaxpr(LA.lstsq)(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="can't be both set"):
        jaxpr(lambda a: LA.pinv(a, rcond=0.1, rtol=0.1))(np.eye(2))


def test_complex_matrices_have_values_but_some_no_derivative_yet():
    a = np.array([[2.0, 1j], [-1j, 3.0]])
    np.testing.assert_allclose(traced(LA.eigvalsh)(a), np.linalg.eigvalsh(a))
    np.testing.assert_allclose(traced(LA.inv)(a), np.linalg.inv(a))
    check_grads(LA.eigvalsh, (a,), order=2)
    for name, f in [("cholesky", LA.cholesky), ("qr", lambda a: LA.qr(a).R), ("pinv", LA.pinv),
                    ("slogdet", lambda a: LA.slogdet(a).logabsdet)]:
        np.testing.assert_allclose(traced(f)(a), f(a), atol=1e-15)
        with pytest.raises(NotImplementedError, match=f"derivative of {name} of complex matrices"):
            fgrad.jvp(f, (a,), (a,))
