"""Linear-algebra primitives beyond products: solve, inverse, adjugate,
pseudo-inverse, determinants and factorizations (Cholesky, QR, symmetric and
general eigendecomposition, SVD), each with its jvp rule (the standard
matrix-calculus formulas) and batch rule; `solve` is linear in its right-hand
side and has a transpose.

Every primitive works on stacks of matrices like NumPy's linalg: the last two
axes hold the matrices, so a batch rule only moves the batch axis to the
front. Shapes and dtypes are NumPy's (a dtype is found by running the NumPy
function on a 1x1 sample, once per dtype). Functions that read one triangle
of their input (cholesky, eigh, and pinv with hermitian=True) are
differentiated as what they compute: a function of that triangle, so the
derivative in the other triangle is zero (and, for complex Hermitian input,
in the imaginary parts of the diagonal, which LAPACK ignores).

eig and eigvals always give complex results here (a static dtype): NumPy's
real results, for real matrices whose eigenvalues are all real, are chosen
by fgrad.numpy.linalg from the values.

det's derivative is the adjugate, and its second derivative the adjugate's
derivative, both defined at singular matrices too (through the SVD, never an
inverse); det's third derivatives are those of the SVD, which need distinct
singular values. slogdet's and qr's derivatives need invertible (full rank)
matrices and raise a LinAlgError saying so. Derivatives of the
factorizations assume the generic case: distinct eigenvalues (eigh, eig:
a diagonalizable matrix) and distinct, non-zero singular values (svd), and
constant rank for pinv; otherwise they are inf or nan, as the mathematics
says (as JAX's; eig's eigenvalues get nan where exactly repeated, eigh's
keep diag(V^H da V), a one-sided derivative there). Eigenvectors and singular vectors are fixed only up to a
phase (a sign, for real ones): their derivatives are those of the vectors
NumPy returns only for functions that do not depend on that phase.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, cached_aval, get_aval
from ..core.libraries import cast, is_dask, library_of_namespace, numpy_only
from ..core.rules import batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, indexing, linalg, shapes
from . import derivatives as d
from . import elementwise as ew
from . import reductions as red

__all__ = [
    "solve", "inv", "adjugate", "pinv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "eig",
    "eigvals", "svd", "svdvals", "linalg_function", "each_matrix", "triangle",
]

LinAlgError = np.linalg.LinAlgError


# --- shared helpers -------------------------------------------------------------------


@functools.cache
def _result_dtypes(np_fn: Callable[..., Any], *dtypes: np.dtype) -> tuple[np.dtype, ...]:
    """The dtypes of `np_fn`'s results for inputs of `dtypes` (NumPy's own
    errors, such as float16 being unsupported, are raised here)."""
    out = np_fn(*(np.eye(1, dtype=dt) for dt in dtypes))
    outs = out if isinstance(out, tuple) else (out,)
    return tuple(np.asarray(o).dtype for o in outs)


def _check_matrix(x: ShapedArray, square: bool = True) -> None:
    if x.ndim < 2:
        raise LinAlgError(f"{x.ndim}-dimensional array given. Array must be at least two-dimensional")
    if square and x.shape[-1] != x.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


_mT = linalg.matrix_transpose


def _is_complex(x: Any) -> bool:
    """Whether `x` has a complex dtype (the rules below conjugate only then)."""
    return bool(get_aval(x).dtype.kind == "c")


def _mH(x: Any) -> Any:
    """The conjugate transpose of each matrix of a stack (the transpose of real ones)."""
    return ew.conj(_mT(x)) if _is_complex(x) else _mT(x)


def _re(x: Any) -> Any:
    """The real part of a complex `x`; a real `x` itself."""
    return ew.real(x) if _is_complex(x) else x


def _as_dtype_of(x: Any, like: Any) -> Any:
    """`x` converted to the dtype of `like` (a real tangent of a complex result)."""
    dtype = get_aval(like).dtype
    return x if get_aval(x).dtype == dtype else ew.convert_element_type(x, new_dtype=dtype)


def _mm(a: Any, b: Any) -> Any:
    return linalg.matmul(a, b)


def _diagonal(x: Any) -> Any:
    """The diagonals of a stack of square matrices."""
    return linalg.stacked_einsum("...ii->...i", x)


def _as_row(v: Any) -> Any:
    """A stack of vectors (..., n) as a stack of rows (..., 1, n)."""
    shape = get_aval(v).shape
    return shapes.reshape(v, new_shape=(*shape[:-1], 1, shape[-1]))


def _as_column(v: Any) -> Any:
    shape = get_aval(v).shape
    return shapes.reshape(v, new_shape=(*shape, 1))


def _triangle_mask(n: int, dtype: np.dtype, lower: bool, diagonal: float) -> np.ndarray:
    """1 strictly below (or above) the diagonal, `diagonal` on it, 0 elsewhere."""
    mask = np.tril(np.ones((n, n), dtype), -1) if lower else np.triu(np.ones((n, n), dtype), 1)
    mask[np.diag_indices(n)] = diagonal
    return mask


def _from_triangle(t: Any, lower: bool) -> Any:
    """The symmetric (Hermitian) matrices whose `lower` (or upper) triangle is
    that of `t`: the tangent of an input of which only that triangle is read
    (and of a complex diagonal only the real part, as LAPACK reads it)."""
    n = get_aval(t).shape[-1]
    dtype = get_aval(t).dtype
    strict = ew.mul(t, _triangle_mask(n, np.dtype(np.finfo(dtype).dtype), lower, 0.0))
    diagonal = ew.mul(t, np.eye(n, dtype=np.finfo(dtype).dtype))
    if _is_complex(t):
        diagonal = ew.convert_element_type(ew.real(diagonal), new_dtype=dtype)
    return ew.add(ew.add(strict, _mH(strict)), diagonal)


def _inverse_gaps(values: Any) -> Any:
    """F[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it (the
    diagonal guarded by a double `where`, so that no inf * 0 appears)."""
    n = get_aval(values).shape[-1]
    gaps = ew.sub(_as_row(values), _as_column(values))
    on_diagonal = np.eye(n, dtype=bool)
    return ew.where(on_diagonal, 0.0, ew.div(1.0, ew.where(on_diagonal, 1.0, gaps)))


def _real_only(name: str, a: Any) -> None:
    """The jvp rules below are written for real matrices (transposes where complex
    ones need conjugate transposes)."""
    if get_aval(a).dtype.kind == "c":
        raise NotImplementedError(
            f"the derivative of {name} of complex matrices is not supported yet; "
            "differentiate with respect to real inputs"
        )


def _batch_front(prim: Primitive) -> Callable[..., Any]:
    """NumPy's linalg works on stacks: the batch axis goes in front of the stack."""

    def rule(args: list[Any], dims: list[Any], **params: Any) -> tuple[Any, Any]:
        x = batching.move_axis(args[0], dims[0], 0)
        out = prim.bind(x, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    return rule


# --- the implementations on a namespace -----------------------------------------------
# The standard's linalg extension, `xp.linalg`, where it has the function
# with NumPy's semantics; eig and eigvals (not in the standard) have no rule.
# Operands are cast to NumPy's result dtype first (an int matrix is solved in
# float64).

def linalg_function(xp: Any, prim: Primitive, name: str) -> Callable[..., Any]:
    fn = getattr(getattr(xp, "linalg", None), name, None)
    if fn is None:
        library = library_of_namespace(xp).name
        raise NotImplementedError(
            f"the primitive `{prim.name}` has no implementation for arrays of {library} in fgrad: "
            f"{library} has no linalg.{name} (the Array API's linalg extension). Convert the arrays to "
            f"NumPy yourself (e.g. with np.asarray, or .compute() for Dask) before calling the "
            f"transformed function."
        )
    return fn


def each_matrix(xp: Any, fn: Callable[..., Any], *xs: Any) -> Any:
    """`fn` (results: an array or a tuple of them) on stacks of matrices `xs`
    (broadcast against each other). Dask's linalg takes one matrix at a time,
    each in one chunk (its QR and SVD otherwise need tall-and-skinny chunks,
    with other signs than LAPACK's): there a stack is computed matrix by
    matrix, and stacked again."""
    if not is_dask(xp):
        return fn(*xs)
    xs = tuple(x.rechunk({x.ndim - 2: -1, x.ndim - 1: -1}) for x in xs)
    stack = broadcast_shapes(*(tuple(x.shape[:-2]) for x in xs))
    if not stack:
        return fn(*xs)
    xs = tuple(xp.broadcast_to(x, (*stack, *x.shape[-2:])) for x in xs)
    outs = [fn(*(x[index] for x in xs)) for index in np.ndindex(stack)]
    if not isinstance(outs[0], tuple):
        return xp.reshape(xp.stack(outs), (*stack, *outs[0].shape))
    return tuple(
        xp.reshape(xp.stack([out[i] for out in outs]), (*stack, *outs[0][i].shape))
        for i in range(len(outs[0]))
    )


def _on_namespace(compute: Callable[..., Any], abstract_eval: Callable[..., Any],
                  multiple_results: bool) -> Callable[..., Any]:
    """The implementation `compute(xp, *operands, **params)` on the operands
    cast to the dtype of the (first) result; a list for several results."""

    def impl(xp: Any, *args: Any, **params: Any) -> Any:
        out = abstract_eval(*(get_aval(a) for a in args), **params)
        dtype = (out[0] if multiple_results else out).dtype
        if dtype.kind == "f" and any(get_aval(a).dtype.kind == "c" for a in args):
            dtype = _complex_dtype_of(dtype)  # eigvalsh of a complex matrix is real
        result = compute(xp, *(cast(xp, a, dtype) for a in args), **params)
        # and the results in NumPy's dtypes (Dask's inv of float32 is float64)
        if multiple_results:
            return [cast(xp, r, aval.dtype) for r, aval in zip(result, out)]
        return cast(xp, result, out.dtype)

    return impl


def _complex_dtype_of(dtype: np.dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _conj_transpose(xp: Any, m: Any) -> Any:
    m_t = xp.matrix_transpose(m)
    return xp.conj(m_t) if xp.isdtype(m.dtype, "complex floating") else m_t


def triangle(xp: Any, a: Any, lower: bool, diagonal: bool = True) -> Any:
    """The lower (or upper) triangle of each matrix of `a`, its diagonal
    included or not, zeros elsewhere (by a NumPy mask: Dask's tril of complex
    numbers warns)."""
    n = a.shape[-1]
    mask = np.tri(n, k=0 if diagonal else -1, dtype=bool)
    return xp.where(cast(xp, mask if lower else mask.T), a, xp.zeros_like(a))


def _hermitian(xp: Any, a: Any, lower: bool) -> Any:
    """The Hermitian matrices of `a`'s lower (or upper) triangle, as LAPACK reads
    it (the real part of the diagonal): the same for a library whichever
    triangle its eigh reads."""
    strict = triangle(xp, a, lower, diagonal=False)
    diagonal = a - strict - triangle(xp, a, not lower, diagonal=False)
    if xp.isdtype(a.dtype, "complex floating"):
        diagonal = xp.astype(xp.real(diagonal), a.dtype)
    return strict + _conj_transpose(xp, strict) + diagonal


def _solve_on(xp: Any, a: Any, b: Any) -> Any:
    return each_matrix(xp, linalg_function(xp, solve_p, "solve"), a, b)


def _inv_on(xp: Any, a: Any, *, singular: str = "raise") -> Any:
    if singular != "raise":
        library = library_of_namespace(xp).name
        raise NotImplementedError(
            f"the primitive `inv` with singular={singular!r} (nans for singular matrices, as "
            f"numpy.linalg.cond needs) has no implementation for arrays of {library} in fgrad: it "
            f"needs to look at each matrix's values. Convert the arrays to NumPy first."
        )
    return each_matrix(xp, linalg_function(xp, inv_p, "inv"), a)


def _pinv_on(xp: Any, a: Any, *, rcond: float, hermitian: bool) -> Any:
    if not hermitian:
        pinv_fn = linalg_function(xp, pinv_p, "pinv")
        return each_matrix(xp, lambda m: pinv_fn(m, rtol=rcond), a)
    # NumPy's: the eigendecomposition of the lower triangle, eigenvalues below
    # rcond times the largest magnitude dropped.
    w, v = each_matrix(xp, linalg_function(xp, pinv_p, "eigh"), _hermitian(xp, a, lower=True))
    magnitude = xp.abs(w)
    keep = magnitude > rcond * xp.max(magnitude, axis=-1, keepdims=True)
    w_inv = xp.where(keep, 1.0 / xp.where(keep, w, xp.ones_like(w)), xp.zeros_like(w))
    return xp.matmul(v * xp.astype(w_inv, v.dtype)[..., None, :], _conj_transpose(xp, v))


def _adjugate_on(xp: Any, a: Any) -> Any:
    # As _adjugate_impl: det(U) det(Vh) Vh^H diag(c) U^H, c_i the product of
    # the other singular values (a product over the others, never a division).
    n = a.shape[-1]
    if n == 0:
        return a
    det_fn = linalg_function(xp, adjugate_p, "det")
    svd_fn = linalg_function(xp, adjugate_p, "svd")
    u, s, vh = each_matrix(xp, lambda m: tuple(svd_fn(m, full_matrices=False)), a)
    scale = each_matrix(xp, det_fn, u) * each_matrix(xp, det_fn, vh)
    others = xp.stack([xp.prod(xp.concat([s[..., :i], s[..., i + 1:]], axis=-1), axis=-1)
                       for i in range(n)], axis=-1)
    v_c = _conj_transpose(xp, vh) * xp.astype(others, a.dtype)[..., None, :]
    return xp.matmul(v_c, _conj_transpose(xp, u)) * scale[..., None, None]


def _cholesky_on(xp: Any, a: Any, *, upper: bool) -> Any:
    # NumPy's upper factor U (a = U^H U) reads a's upper triangle: it is the
    # conjugate transpose of the lower factor of a^H, whose lower triangle
    # that is. A library's own upper factor may read the lower triangle
    # (array_api_strict's and array-api-compat's transpose the lower factor of a).
    if is_dask(xp):
        # Dask's own: array-api-compat's wrapper (1.16) passes no `lower` to it,
        # whose default is the upper factor.
        import dask.array as da

        lower_factor: Callable[..., Any] = lambda m: da.linalg.cholesky(m, lower=True)
    else:
        lower_factor = linalg_function(xp, cholesky_p, "cholesky")
    if not upper:
        return each_matrix(xp, lower_factor, a)
    return _conj_transpose(xp, each_matrix(xp, lower_factor, _conj_transpose(xp, a)))


def _qr_on(xp: Any, a: Any, *, mode: str) -> Any:
    qr_fn = linalg_function(xp, qr_p, "qr")
    return each_matrix(xp, lambda m: tuple(qr_fn(m, mode=mode)), a)


def _eigh_on(xp: Any, a: Any, *, UPLO: str) -> Any:
    eigh_fn = linalg_function(xp, eigh_p, "eigh")
    return each_matrix(xp, lambda m: tuple(eigh_fn(m)), _hermitian(xp, a, lower=UPLO == "L"))


def _eigvalsh_on(xp: Any, a: Any, *, UPLO: str) -> Any:
    eigvalsh_fn = linalg_function(xp, eigvalsh_p, "eigvalsh")
    return each_matrix(xp, eigvalsh_fn, _hermitian(xp, a, lower=UPLO == "L"))


def _svd_on(xp: Any, a: Any, *, full_matrices: bool) -> Any:
    svd_fn = linalg_function(xp, svd_p, "svd")
    return each_matrix(xp, lambda m: tuple(svd_fn(m, full_matrices=full_matrices)), a)


def _svdvals_on(xp: Any, a: Any) -> Any:
    if is_dask(xp):  # array-api-compat's (1.16) asks Dask for the full matrices it refuses
        return _svd_on(xp, a, full_matrices=False)[1]
    return each_matrix(xp, linalg_function(xp, svdvals_p, "svdvals"), a)


def _slogdet_on(xp: Any, a: Any) -> Any:
    slogdet_fn = linalg_function(xp, slogdet_p, "slogdet")
    return each_matrix(xp, lambda m: tuple(slogdet_fn(m)), a)




def _det_on(xp: Any, a: Any) -> Any:
    return each_matrix(xp, linalg_function(xp, det_p, "det"), a)


def _primitive(
    name: str, impl: Callable[..., Any], compute_aval: Callable[..., Any], multiple_results: bool = False,
    xp: Callable[..., Any] | None = None,
) -> Primitive:
    """A primitive computed by `impl` on NumPy's arrays and by `xp(xp, *operands,
    **params)` (`_on_namespace`) on another namespace's; by NumPy only without `xp`."""
    abstract_eval = cached_aval(compute_aval)
    if xp is None:
        on_namespace = numpy_only(name, impl)
    else:
        on_namespace = _on_namespace(xp, abstract_eval, multiple_results)
    prim = Primitive(name, on_namespace, abstract_eval, multiple_results, numpy=impl)
    batch_rules[prim] = _batch_front(prim)
    return prim


# --- solve(a, b): a (..., n, n), b (..., n, k) ---------------------------------------


def _solve_aval(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    _check_matrix(a)
    if b.ndim < 2:
        raise LinAlgError(f"{b.ndim}-dimensional array given. Array must be at least two-dimensional")
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(
            f"solve: the right-hand side has {b.shape[-2]} rows for a matrix of size {a.shape[-1]} "
            f"(shapes {a.shape} and {b.shape})"
        )
    stack = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    (dtype,) = _result_dtypes(np.linalg.solve, a.dtype, b.dtype)
    return ShapedArray((*stack, *b.shape[-2:]), dtype)


_solve_aval_cached = cached_aval(_solve_aval)
solve_p = Primitive("solve", _on_namespace(_solve_on, _solve_aval_cached, False), _solve_aval_cached,
                    numpy=np.linalg.solve)


def _solve_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    (a, b), (da, db) = primals, tangents
    x = solve(a, b)
    rhs = db  # d(a x) = db:  a dx = db - da x
    if da is not None:
        da_x = _mm(da, x)
        rhs = ew.neg(da_x) if rhs is None else ew.sub(rhs, da_x)
    return x, d.fit_to(solve(a, rhs), x)


jvp_rules[solve_p] = _solve_jvp


def _solve_transpose(ct: Any, a: Any, b: Any) -> list[Any]:
    assert not d.is_linear(a), "solve is linear in its right-hand side only"
    return [None, d.unbroadcast(solve(_mT(a), ct), b.aval)]


transpose_rules[solve_p] = _solve_transpose


batching.defbatch_matrix_stacks(solve_p)


# --- inv -----------------------------------------------------------------------------


def _same_shape_aval(np_fn: Callable[..., Any]) -> Callable[..., ShapedArray]:
    def compute(x: ShapedArray, **params: Any) -> ShapedArray:
        _check_matrix(x)
        (dtype,) = _result_dtypes(np_fn, x.dtype)
        return ShapedArray(x.shape, dtype)

    return compute


def _inv_impl(a: Any, *, singular: str = "raise") -> Any:
    """NumPy's inv; with ``singular="nan"`` a singular matrix of the stack gets
    an inverse of nans instead of an error (as numpy.linalg.cond needs)."""
    if singular == "raise":
        return np.linalg.inv(a)
    try:
        return np.linalg.inv(a)
    except LinAlgError:
        out = np.empty(a.shape, _result_dtypes(np.linalg.inv, a.dtype)[0])
        for idx in np.ndindex(a.shape[:-2]):
            try:
                out[idx] = np.linalg.inv(a[idx])
            except LinAlgError:
                out[idx] = np.nan
        return out


inv_p = _primitive("inv", _inv_impl, _same_shape_aval(np.linalg.inv), xp=_inv_on)


def _inv_jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[Any, Any]:
    (a,), (da,) = primals, tangents
    ans = inv(a, **params)
    return ans, ew.neg(_mm(_mm(ans, da), ans))  # d(a^-1) = -a^-1 da a^-1


jvp_rules[inv_p] = _inv_jvp


def _inverse_for(a: Any, why: str) -> Any:
    """inv(a) for a derivative that needs it: a singular `a` raises a LinAlgError
    that says which derivative (`why`) needed an invertible matrix."""
    try:
        return inv(a)
    except LinAlgError:
        raise LinAlgError(f"Singular matrix: {why}") from None


# --- pinv(a, rcond, hermitian) -----------------------------------------------------------


def _pinv_aval(a: ShapedArray, *, rcond: float, hermitian: bool) -> ShapedArray:
    _check_matrix(a, square=False)
    (dtype,) = _result_dtypes(np.linalg.pinv, a.dtype)
    return ShapedArray((*a.shape[:-2], a.shape[-1], a.shape[-2]), dtype)


pinv_p = _primitive(
    "pinv", lambda a, *, rcond, hermitian: np.linalg.pinv(a, rcond, hermitian), _pinv_aval, xp=_pinv_on
)


def _pinv_jvp(primals: list[Any], tangents: list[Any], *, rcond: float, hermitian: bool) -> tuple[Any, Any]:
    # Golub and Pereyra: for a of constant rank, with P = a+, dP =
    #   -P da P + P P^T da^T (I - a P) + (I - P a) da^T P^T P.
    # With hermitian=True NumPy reads the lower triangle only (through eigh):
    # a is then the symmetric matrix of that triangle, and so is da.
    (a,), (da,) = primals, tangents
    _real_only("pinv", a)
    p = pinv(a, rcond=rcond, hermitian=hermitian)
    if hermitian:
        a, da = _from_triangle(a, lower=True), _from_triangle(da, lower=True)
    m, n = get_aval(a).shape[-2:]
    dtype = get_aval(p).dtype
    da_t = _mT(da)
    left_null = ew.sub(np.eye(m, dtype=dtype), _mm(a, p))  # I - a P, (m, m)
    right_null = ew.sub(np.eye(n, dtype=dtype), _mm(p, a))  # I - P a, (n, n)
    out = ew.neg(_mm(_mm(p, da), p))
    out = ew.add(out, _mm(_mm(p, _mm(_mT(p), da_t)), left_null))
    out = ew.add(out, _mm(right_null, _mm(da_t, _mm(_mT(p), p))))
    return p, out


jvp_rules[pinv_p] = _pinv_jvp


# --- adjugate, det, slogdet -------------------------------------------------------------


def _products_of_others(s: np.ndarray) -> np.ndarray:
    """c[..., i] = prod over j != i of s[..., j], without dividing (s may hold zeros)."""
    ones = np.ones((*s.shape[:-1], 1), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


def _adjugate_impl(a: np.ndarray) -> np.ndarray:
    """The adjugate det(a) a^-1, defined for singular matrices too: with the SVD
    a = U diag(s) Vh, adj(a) = det(U) det(Vh) Vh^H diag(c) U^H, c_i the product
    of the other singular values (so a rank n-1 matrix has a rank-1 adjugate,
    and one of lower rank a zero adjugate)."""
    if a.shape[-1] == 0:
        return np.empty(a.shape, np.linalg.inv(np.eye(1, dtype=a.dtype)).dtype)
    u, s, vh = np.linalg.svd(a)
    scale = np.linalg.det(u) * np.linalg.det(vh)
    adj = np.matmul(np.swapaxes(vh, -1, -2).conj() * _products_of_others(s)[..., None, :],
                    np.swapaxes(u, -1, -2).conj())
    return adj * scale[..., None, None]


adjugate_p = _primitive("adjugate", _adjugate_impl, _same_shape_aval(np.linalg.inv), xp=_adjugate_on)


def _adjugate_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # With a = U S V^H, a + da = U (S + E) V^H for E = U^H da V exactly, and
    # adj(XY) = adj(Y) adj(X), adj(U) = det(U) U^H for unitary U, so
    # d adj(a) = det(U) det(V^H) V d adj(S)[E] U^H. At a diagonal S,
    # d adj(S)[E] is -E_ij P_ij off the diagonal and sum_k P_ik E_kk on it,
    # P_ij the product of the singular values other than s_i and s_j. No
    # inverse: this holds at singular matrices too, where det's second
    # derivative needs it (det(a) a^-1 would be rounding error over zero).
    (a,), (da,) = primals, tangents
    ans = adjugate(a)
    n = get_aval(a).shape[-1]
    if n == 0:
        return ans, da
    u, s, vh = svd(a, full_matrices=False)
    scale = ew.mul(det(u), det(vh))
    v, uh = _mH(vh), _mH(u)
    e = _mm(_mm(uh, da), v)
    eye = np.eye(n, dtype=bool)
    rows = ew.where(eye, np.ones((), get_aval(s).dtype), _as_row(s))  # row i: s with s_i set to 1
    others = ew.where(eye, np.zeros((), get_aval(s).dtype), _products_of_others_along_rows(rows))
    others = _as_dtype_of(others, e)
    diagonal = ew.mul(np.eye(n, dtype=get_aval(e).dtype), _mm(others, _as_column(_diagonal(e))))
    d_adj_s = ew.sub(diagonal, ew.mul(e, others))
    scale = shapes.reshape(scale, new_shape=(*get_aval(scale).shape, 1, 1))
    return ans, ew.mul(_as_dtype_of(scale, e), _mm(_mm(v, d_adj_s), uh))


def _products_of_others_along_rows(x: Any) -> Any:
    """c[..., i] = prod over j != i of x[..., j], traced: the product of those before
    times the product of those after, never a division (x may hold zeros)."""
    shape = get_aval(x).shape
    ones = np.ones((*shape[:-1], 1), get_aval(x).dtype)
    axis = len(shape) - 1
    all_but_last = indexing.getitem(x, idx=indexing.StaticIndex((Ellipsis, slice(None, -1))))
    all_but_first = indexing.getitem(x, idx=indexing.StaticIndex((Ellipsis, slice(1, None))))
    before = red.cumprod(shapes.concatenate(ones, all_but_last, axis=axis), axis=axis, reverse=False)
    after = red.cumprod(shapes.concatenate(all_but_first, ones, axis=axis), axis=axis, reverse=True)
    return ew.mul(before, after)


jvp_rules[adjugate_p] = _adjugate_jvp


def _stack_aval(np_fn: Callable[..., Any], count: int) -> Callable[..., Any]:
    def compute(x: ShapedArray) -> Any:
        _check_matrix(x)
        dtypes = _result_dtypes(np_fn, x.dtype)
        avals = [ShapedArray(x.shape[:-2], dt) for dt in dtypes]
        return avals if count > 1 else avals[0]

    return compute


det_p = _primitive("det", np.linalg.det, _stack_aval(np.linalg.det, 1), xp=_det_on)


def _det_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # d det a = tr(adj(a) da) (Jacobi's formula), at singular matrices too
    (a,), (da,) = primals, tangents
    return det(a), linalg.stacked_einsum("...ij,...ji->...", adjugate(a), da)


jvp_rules[det_p] = _det_jvp

slogdet_p = _primitive(
    "slogdet", lambda a: list(np.linalg.slogdet(a)), _stack_aval(np.linalg.slogdet, 2), multiple_results=True,
    xp=_slogdet_on,
)


def _slogdet_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # d log|det a| = tr(a^-1 da); the sign is piecewise constant. At a singular
    # matrix log|det a| is -inf and has no derivative (JAX gives nans there).
    (a,), (da,) = primals, tangents
    _real_only("slogdet", a)
    sign, logabsdet = slogdet(a)
    a_inv = _inverse_for(
        a, "slogdet has no derivative at a singular matrix (log|det| is -inf there); differentiate det "
        "instead"
    )
    return [sign, logabsdet], [None, linalg.stacked_einsum("...ij,...ji->...", a_inv, da)]


jvp_rules[slogdet_p] = _slogdet_jvp


# --- cholesky(a, upper) ------------------------------------------------------------------

cholesky_p = _primitive(
    "cholesky", lambda a, *, upper: np.linalg.cholesky(a, upper=upper), _same_shape_aval(np.linalg.cholesky),
    xp=_cholesky_on,
)


def _cholesky_jvp(primals: list[Any], tangents: list[Any], *, upper: bool) -> tuple[Any, Any]:
    # a = L L^T gives dL = L phi(L^-1 da L^-T), phi keeping the lower triangle
    # and half the diagonal; the upper factor is U = L^T.
    (a,), (da,) = primals, tangents
    _real_only("cholesky", a)
    ans = cholesky(a, upper=upper)
    low = _mT(ans) if upper else ans
    da = _from_triangle(da, lower=not upper)
    low_inv = inv(low)
    inner = _mm(_mm(low_inv, da), _mT(low_inv))
    n = get_aval(a).shape[-1]
    phi = ew.mul(inner, _triangle_mask(n, get_aval(ans).dtype, lower=True, diagonal=0.5))
    d_low = _mm(low, phi)
    return ans, _mT(d_low) if upper else d_low


jvp_rules[cholesky_p] = _cholesky_jvp


# --- qr(a, mode): mode "reduced" or "complete" -----------------------------------------


def _qr_aval(a: ShapedArray, *, mode: str) -> list[ShapedArray]:
    _check_matrix(a, square=False)
    m, n = a.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    q_dtype, r_dtype = _result_dtypes(np.linalg.qr, a.dtype)
    return [ShapedArray((*a.shape[:-2], m, k), q_dtype), ShapedArray((*a.shape[:-2], k, n), r_dtype)]


qr_p = _primitive(
    "qr", lambda a, *, mode: list(np.linalg.qr(a, mode=mode)), _qr_aval, multiple_results=True, xp=_qr_on
)


def _qr_square_jvp(q: Any, r: Any, da: Any, tall: bool) -> tuple[Any, Any]:
    """dq, dr for a = q r with r square (n x n) and invertible: with
    C = q^T da r^-1, q^T dq = Omega is antisymmetric and dr r^-1 upper
    triangular, so Omega is C's strictly lower part minus its transpose."""
    n = get_aval(r).shape[-1]
    r_inv = _inverse_for(
        r, "the derivative of qr needs a matrix of full rank (min(m, n) independent columns or rows)"
    )
    da_r_inv = _mm(da, r_inv)
    c = _mm(_mT(q), da_r_inv)
    low = ew.mul(c, _triangle_mask(n, get_aval(r).dtype, lower=True, diagonal=0.0))
    omega = ew.sub(low, _mT(low))
    dr = _mm(ew.sub(c, omega), r)
    dq = _mm(q, omega)
    if tall:  # the part of da r^-1 outside the span of q
        dq = ew.add(dq, ew.sub(da_r_inv, _mm(q, c)))
    return dq, dr


def _qr_jvp(primals: list[Any], tangents: list[Any], *, mode: str) -> tuple[Any, Any]:
    (a,), (da,) = primals, tangents
    _real_only("qr", a)
    q, r = qr(a, mode=mode)
    m, n = get_aval(a).shape[-2:]
    if m > n and mode == "complete":
        raise NotImplementedError(
            "the derivative of qr(a, mode='complete') of a tall matrix is not defined (the extra "
            "columns of q are not unique); use mode='reduced'"
        )
    if m >= n:
        dq, dr = _qr_square_jvp(q, r, da, tall=m > n)
        return [q, r], [dq, dr]
    # Wide: a = [a1 a2] with a1 square gives q, r1 from a1, and r2 = q^T a2.
    dq, dr1 = _qr_square_jvp(q, _columns(r, 0, m), _columns(da, 0, m), tall=False)
    dr2 = ew.add(_mm(_mT(dq), _columns(a, m, n)), _mm(_mT(q), _columns(da, m, n)))
    return [q, r], [dq, shapes.concatenate(dr1, dr2, axis=get_aval(r).ndim - 1)]


def _columns(x: Any, start: int, stop: int) -> Any:
    """The columns start:stop of a stack of matrices."""
    nd = get_aval(x).ndim
    return indexing.getitem(x, idx=indexing.StaticIndex((slice(None),) * (nd - 1) + (slice(start, stop),)))


jvp_rules[qr_p] = _qr_jvp


# --- eigh(a, UPLO), eigvalsh(a, UPLO) ------------------------------------------------


def _eigh_aval(a: ShapedArray, *, UPLO: str) -> list[ShapedArray]:
    _check_matrix(a)
    w_dtype, v_dtype = _result_dtypes(np.linalg.eigh, a.dtype)
    return [ShapedArray(a.shape[:-1], w_dtype), ShapedArray(a.shape, v_dtype)]


def _eigvalsh_aval(a: ShapedArray, *, UPLO: str) -> ShapedArray:
    _check_matrix(a)
    (dtype,) = _result_dtypes(np.linalg.eigvalsh, a.dtype)
    return ShapedArray(a.shape[:-1], dtype)


eigh_p = _primitive(
    "eigh", lambda a, *, UPLO: list(np.linalg.eigh(a, UPLO)), _eigh_aval, multiple_results=True, xp=_eigh_on
)
eigvalsh_p = _primitive(
    "eigvalsh", lambda a, *, UPLO: np.linalg.eigvalsh(a, UPLO), _eigvalsh_aval, xp=_eigvalsh_on
)


def _eigh_jvp(primals: list[Any], tangents: list[Any], *, UPLO: str) -> tuple[Any, Any]:
    # With a = V diag(w) V^H and P = V^H da V (Hermitian): dw = diag(P) (real),
    # dV = V (F * P), F[i, j] = 1 / (w[j] - w[i]) off the diagonal. The phase of
    # each column stays put to first order (diag(V^H dV) = 0).
    (a,), (da,) = primals, tangents
    w, v = eigh(a, UPLO=UPLO)
    da = _from_triangle(da, lower=UPLO == "L")
    p = _mm(_mH(v), _mm(da, v))
    return [w, v], [_re(_diagonal(p)), _mm(v, ew.mul(_inverse_gaps(w), p))]


def _eigvalsh_jvp(primals: list[Any], tangents: list[Any], *, UPLO: str) -> tuple[Any, Any]:
    (a,), (da,) = primals, tangents
    w, v = eigh(a, UPLO=UPLO)
    da = _from_triangle(da, lower=UPLO == "L")
    v_conj = ew.conj(v) if _is_complex(v) else v
    return w, _re(linalg.stacked_einsum("...ij,...ik,...kj->...j", v_conj, da, v))  # dw = diag(V^H da V)


jvp_rules[eigh_p] = _eigh_jvp
jvp_rules[eigvalsh_p] = _eigvalsh_jvp


# --- eig(a), eigvals(a): general square matrices, complex results -------------------------


@functools.cache
def _complex_dtype(np_fn: Callable[..., Any], dtype: np.dtype) -> np.dtype:
    """The complex dtype of `np_fn`'s eigenvalues for input of `dtype`, whether or
    not NumPy would return them as real."""
    real = _result_dtypes(np_fn, dtype)[0]
    return np.result_type(real, np.complex64)


def _eig_aval(a: ShapedArray) -> list[ShapedArray]:
    _check_matrix(a)
    dtype = _complex_dtype(np.linalg.eig, a.dtype)
    return [ShapedArray(a.shape[:-1], dtype), ShapedArray(a.shape, dtype)]


def _eigvals_aval(a: ShapedArray) -> ShapedArray:
    _check_matrix(a)
    return ShapedArray(a.shape[:-1], _complex_dtype(np.linalg.eigvals, a.dtype))


def _eig_impl(a: np.ndarray) -> list[np.ndarray]:
    w, v = np.linalg.eig(a)
    dtype = _complex_dtype(np.linalg.eig, a.dtype)
    return [w.astype(dtype, copy=False), v.astype(dtype, copy=False)]


def _eigvals_impl(a: np.ndarray) -> np.ndarray:
    return np.linalg.eigvals(a).astype(_complex_dtype(np.linalg.eigvals, a.dtype), copy=False)


eig_p = _primitive("eig", _eig_impl, _eig_aval, multiple_results=True)
eigvals_p = _primitive("eigvals", _eigvals_impl, _eigvals_aval)


def _eig_tangent_parts(a: Any, da: Any) -> tuple[Any, Any, Any]:
    """w, V and P = V^-1 da V for a = V diag(w) V^-1."""
    w, v = eig(a)
    v_inv = _inverse_for(
        v, "the derivative of eig needs a diagonalizable matrix (independent eigenvectors); at a "
        "defective one it is infinite"
    )
    return w, v, _mm(v_inv, _mm(_as_dtype_of(da, v), v))


def _eig_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # a V = V diag(w) gives, with P = V^-1 da V: dw = diag(P) and dV = V (F * P)
    # + V diag(c), F[i, j] = 1 / (w[j] - w[i]) off the diagonal and c free (the
    # scale of each column). NumPy's columns have unit norm, so c = -Re(v^H dv):
    # the part of each column along itself that would change its norm goes.
    (a,), (da,) = primals, tangents
    w, v, p = _eig_tangent_parts(a, da)
    du = _mm(v, ew.mul(_inverse_gaps(w), p))
    along = ew.real(linalg.stacked_einsum("...ij,...ij->...j", ew.conj(v), du))
    return [w, v], [_eigenvalue_tangents(w, p), ew.sub(du, ew.mul(v, _as_row(along)))]


def _eigvals_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # The eigenvalues come from eig here, so that they are in the order of the
    # eigenvectors their derivative needs.
    (a,), (da,) = primals, tangents
    w, _, p = _eig_tangent_parts(a, da)
    return w, _eigenvalue_tangents(w, p)


def _eigenvalue_tangents(w: Any, p: Any) -> Any:
    """dw = diag(P), nan for an eigenvalue that is repeated exactly: there a general
    matrix's eigenvalues have no derivative (at a defective matrix they move as a
    square root), and diag(P) would be a meaningless finite number. (A Hermitian
    matrix's eigenvalues have one-sided derivatives there, which eigh keeps.)"""
    if get_aval(w).shape[-1] < 2:
        return _diagonal(p)
    same = ew.convert_element_type(ew.eq(_as_row(w), _as_column(w)), new_dtype=np.dtype(np.int64))
    copies = red.reduce_sum(same, axes=(get_aval(w).ndim - 1,))  # of each eigenvalue, itself included
    real = np.finfo(get_aval(p).dtype).dtype
    return ew.mul(_diagonal(p), ew.where(ew.gt(copies, 1), np.array(np.nan, real), np.array(1.0, real)))


jvp_rules[eig_p] = _eig_jvp
jvp_rules[eigvals_p] = _eigvals_jvp


# --- svd(a, full_matrices), svdvals(a) ---------------------------------------------------


def _svd_aval(a: ShapedArray, *, full_matrices: bool) -> list[ShapedArray]:
    _check_matrix(a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    u_dtype, s_dtype, vh_dtype = _result_dtypes(np.linalg.svd, a.dtype)
    lead = a.shape[:-2]
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    return [
        ShapedArray((*lead, m, u_cols), u_dtype),
        ShapedArray((*lead, k), s_dtype),
        ShapedArray((*lead, vh_rows, n), vh_dtype),
    ]


def _svdvals_aval(a: ShapedArray) -> ShapedArray:
    _check_matrix(a, square=False)
    (dtype,) = _result_dtypes(np.linalg.svdvals, a.dtype)
    return ShapedArray((*a.shape[:-2], min(a.shape[-2:])), dtype)


svd_p = _primitive(
    "svd", lambda a, *, full_matrices: list(np.linalg.svd(a, full_matrices)), _svd_aval,
    multiple_results=True, xp=_svd_on,
)
svdvals_p = _primitive("svdvals", np.linalg.svdvals, _svdvals_aval, xp=_svdvals_on)


def _svd_jvp(primals: list[Any], tangents: list[Any], *, full_matrices: bool) -> tuple[Any, Any]:
    # a = U S V^H, P = U^H da V. ds = Re diag(P); U^H dU = F * (P S + S P^H) + D
    # and V^H dV = F * (S P + P^H S) with F[i, j] = 1 / (s[j]^2 - s[i]^2); for
    # complex a, D = (P - P^H) / 2 S^-1 on the diagonal gives the phase change
    # (put into U, as JAX does; it is 0 for real a). A non-square a adds the
    # parts of dU (or dV) outside the span of U (or V).
    (a,), (da,) = primals, tangents
    m, n = get_aval(a).shape[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(
            "the derivative of svd(a, full_matrices=True) of a non-square matrix is not defined (the "
            "extra singular vectors are not unique); use full_matrices=False"
        )
    u, s, vh = svd(a, full_matrices=full_matrices)
    v = _mH(vh)
    p = _mm(_mH(u), _mm(da, v))
    ds = _re(_diagonal(p))
    f = _inverse_gaps(ew.square(s))
    s_row = _as_row(s)  # P S scales the columns of P, S P its rows
    s_col = _as_column(s)
    p_s, s_p = ew.mul(p, s_row), ew.mul(s_col, p)
    inner_u = ew.mul(f, ew.add(p_s, _mH(p_s)))
    if _is_complex(a):
        k = get_aval(s).shape[-1]
        phase = ew.mul(ew.sub(p, _mH(p)), np.eye(k, dtype=get_aval(s).dtype) * 0.5)
        inner_u = ew.add(inner_u, ew.div(phase, ew.where(ew.eq(s_row, 0.0), 1.0, s_row)))
    du = _mm(u, inner_u)
    dv = _mm(v, ew.mul(f, ew.add(s_p, _mH(s_p))))
    if m > n:
        da_v = _mm(da, v)
        du = ew.add(du, ew.div(ew.sub(da_v, _mm(u, p)), s_row))
    elif n > m:
        da_h_u = _mm(_mH(da), u)
        dv = ew.add(dv, ew.div(ew.sub(da_h_u, _mm(v, _mH(p))), s_row))
    return [u, s, vh], [du, ds, _mH(dv)]


def _svdvals_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    (a,), (da,) = primals, tangents
    u, s, vh = svd(a, full_matrices=False)
    if _is_complex(a):
        u, vh = ew.conj(u), ew.conj(vh)
    ds = linalg.stacked_einsum("...ij,...ik,...jk->...j", u, da, vh)
    return s, _re(ds)  # ds = Re diag(U^H da V)


jvp_rules[svd_p] = _svd_jvp
jvp_rules[svdvals_p] = _svdvals_jvp


# --- the functions rules and the NumPy layer call ----------------------------------------

solve: Callable[..., Any] = solve_p.bind
inv: Callable[..., Any] = inv_p.bind
adjugate: Callable[..., Any] = adjugate_p.bind
pinv: Callable[..., Any] = pinv_p.bind
det: Callable[..., Any] = det_p.bind
slogdet: Callable[..., Any] = slogdet_p.bind
cholesky: Callable[..., Any] = cholesky_p.bind
qr: Callable[..., Any] = qr_p.bind
eigh: Callable[..., Any] = eigh_p.bind
eigvalsh: Callable[..., Any] = eigvalsh_p.bind
eig: Callable[..., Any] = eig_p.bind
eigvals: Callable[..., Any] = eigvals_p.bind
svd: Callable[..., Any] = svd_p.bind
svdvals: Callable[..., Any] = svdvals_p.bind
