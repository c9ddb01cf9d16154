"""fgrad.scipy.linalg: SciPy's linear algebra, differentiable and traceable.

solve_triangular, lu_factor, expm and expm_frechet are primitives of
`fgrad.primitives.scipy_linalg` whose values come from SciPy (an optional
extra, imported on first use); cho_factor, cho_solve, lu_solve, lu and
block_diag are written on them and on fgrad.numpy; cholesky, solve, inv and
det are fgrad.numpy.linalg's with SciPy's signatures. Names, signatures,
dtypes and values follow SciPy 1.17, and like it every function works on
stacks of matrices (leading axes, broadcast between operands); unlike
SciPy's, cho_factor and lu_factor (and so lu) accept stacks too.

What differs from SciPy: fgrad never overwrites an input (``overwrite_*`` are
accepted and ignored); ``check_finite`` checks the values where they are
known (no transform, grad, jvp), not under jit or vmap. Functions that read
one triangle of a matrix are differentiated as functions of that triangle.

>>> import fgrad
>>> rotation = np.array([[0.0, 1.0], [-1.0, 0.0]])
>>> round(float(fgrad.grad(lambda t: expm(t * rotation)[0, 0])(0.5)), 12)  # -sin(0.5)
-0.479425538604
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.avals import get_aval
from ..core.optional import require
from ..core.trace import EVAL_TRACE, ctx
from ..numpy.operands import Array, ArrayLike, concrete_value, operand, shape_of
from ..primitives import decompositions as dec
from ..primitives import elementwise as ew
from ..primitives import scipy_linalg as sl

__all__ = [
    "solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "lu", "expm", "expm_frechet",
    "block_diag", "cholesky", "solve", "inv", "det", "LinAlgError",
]

LinAlgError = np.linalg.LinAlgError


def _inexact(x: Any) -> Any:
    """`x` as an operand in SciPy's linalg dtype (integers as float64, float16 as float32)."""
    x = operand(x)
    dtype = get_aval(x).dtype
    wanted = sl.inexact_dtype(dtype)
    return x if wanted == dtype else ew.convert_element_type(x, new_dtype=wanted)


def _check_finite(check_finite: bool, *xs: Any) -> None:
    if not check_finite:
        return
    for x in xs:
        value = concrete_value(x, None)
        if value is not None and not np.isfinite(value).all():
            raise ValueError("array must not contain infs or NaNs")


def _trans(trans: Any) -> int:
    code = {"N": 0, "T": 1, "C": 2}.get(trans, trans) if isinstance(trans, str) else trans
    if code not in (0, 1, 2):
        raise ValueError(f"trans must be 0, 1, 2 (or 'N', 'T', 'C'), got {trans!r}")
    return int(code)


def _as_matrices(b: Any, n: int, message: str) -> tuple[Any, bool]:
    """`b` as a stack of right-hand sides (..., n, k), and whether it was a vector
    (SciPy's rule: a 1-d `b` is one vector, else the last two axes are a matrix)."""
    shape = shape_of(b)
    if len(shape) == 0 or shape[-1 if len(shape) == 1 else -2] != n:
        raise ValueError(message)
    if len(shape) == 1:
        return fnp.reshape(b, (n, 1)), True
    return b, False


def _vector_back(x: Any, vector: bool) -> Any:
    return fnp.reshape(x, shape_of(x)[:-1]) if vector else x


def _square(a: Any, message: str) -> int:
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(message)
    return shape[-1]


# --- triangular systems -----------------------------------------------------------------------------


def solve_triangular(a: ArrayLike, b: ArrayLike, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True) -> Array:
    """scipy.linalg.solve_triangular: x with ``op(a) @ x == b`` for a triangular
    `a` (only its lower or upper triangle is read, without the diagonal if
    `unit_diagonal`); op is given by `trans`: 0 or 'N' (a), 1 or 'T' (a.T),
    2 or 'C' (a.conj().T). Linear in `b`.

    >>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
    array([1., 2.])
    """
    a, b = _inexact(a), _inexact(b)
    n = _square(a, "expected square matrix")
    b2, vector = _as_matrices(b, n, f"shapes of a {shape_of(a)} and b {shape_of(b)} are incompatible")
    _check_finite(check_finite, a, b)
    x = sl.triangular_solve(a, b2, lower=bool(lower), trans=_trans(trans), unit_diagonal=bool(unit_diagonal))
    return _vector_back(x, vector)


# --- Cholesky -----------------------------------------------------------------------------------------


def _cholesky_factor(a: Any, lower: bool, check_finite: bool) -> Any:
    a = _inexact(a)
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Input array is expected to be square but has the shape: {shape}.")
    _check_finite(check_finite, a)
    return dec.cholesky(a, upper=not lower)


def cholesky(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Array:
    """scipy.linalg.cholesky: the upper factor U with ``a = U^H @ U`` (or the
    lower L with ``a = L @ L^H``), zeros in the other triangle. Only that
    triangle of `a` is read, so that is where the derivative lives.

    >>> cholesky(np.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[2., 1.],
           [0., 1.]])
    """
    return _cholesky_factor(a, bool(lower), check_finite)


def cho_factor(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Array, bool]:
    """scipy.linalg.cho_factor: ``(c, lower)`` for cho_solve, c holding the
    Cholesky factor in its upper (or lower) triangle. SciPy leaves arbitrary
    values in the other triangle; fgrad leaves zeros there (c is
    scipy.linalg.cholesky's factor), and stacks of matrices are accepted.

    >>> cho_factor(np.array([[4.0, 2.0], [2.0, 2.0]]), lower=True)
    (array([[2., 0.],
           [1., 1.]]), True)
    """
    return _cholesky_factor(a, bool(lower), check_finite), bool(lower)


def cho_solve(c_and_lower: tuple[ArrayLike, bool], b: ArrayLike, overwrite_b: bool = False,
              check_finite: bool = True) -> Array:
    """scipy.linalg.cho_solve: x with ``a @ x == b`` from cho_factor's ``(c, lower)``
    of `a`; only the factor's triangle of `c` is read.

    >>> cho_solve(cho_factor(np.array([[4.0, 2.0], [2.0, 2.0]])), np.array([6.0, 4.0]))
    array([1., 1.])
    """
    c, lower = c_and_lower
    c, b = _inexact(c), _inexact(b)
    n = _square(c, "The factored matrix c is not square.")
    b2, vector = _as_matrices(b, n, f"incompatible dimensions ({shape_of(c)} and {shape_of(b)})")
    _check_finite(check_finite, c, b)
    lower = bool(lower)
    # a = L L^H: x = L^-H (L^-1 b); a = U^H U: x = U^-1 (U^-H b)
    first, second = (0, 2) if lower else (2, 0)
    y = sl.triangular_solve(c, b2, lower=lower, trans=first, unit_diagonal=False)
    x = sl.triangular_solve(c, y, lower=lower, trans=second, unit_diagonal=False)
    return _vector_back(x, vector)


# --- LU -----------------------------------------------------------------------------------------------


def _lu_factor(a: Any, check_finite: bool) -> tuple[Any, Any]:
    a = _inexact(a)
    if len(shape_of(a)) < 2:
        raise ValueError(f"The input array must be at least two-dimensional (got shape {shape_of(a)}).")
    _check_finite(check_finite, a)
    lu_, piv = sl.lu_factor(a)
    concrete = concrete_value(piv, None)  # no derivative: a NumPy array wherever it is known
    return lu_, piv if concrete is None else np.asarray(concrete)


def lu_factor(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Array, Array]:
    """scipy.linalg.lu_factor: ``(lu, piv)`` with ``a = P @ L @ U``, L (unit
    diagonal) and U packed into `lu`, `piv` LAPACK's 0-based row interchanges
    (int32, without a derivative). Stacks of matrices are accepted. The
    derivative (of square and rectangular matrices) needs the leading
    min(m, n) x min(m, n) block of the pivoted `a` to be invertible.

    >>> lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    (array([[3.        , 4.        ],
           [0.33333333, 0.66666667]]), array([1, 1], dtype=int32))
    """
    return _lu_factor(a, check_finite)


def lu_solve(lu_and_piv: tuple[ArrayLike, ArrayLike], b: ArrayLike, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Array:
    """scipy.linalg.lu_solve: x with ``op(a) @ x == b`` from lu_factor's
    ``(lu, piv)`` of `a`, op given by `trans` (0: a, 1: a.T, 2: a.conj().T).

    >>> lu_solve(lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]])), np.array([3.0, 7.0]))
    array([1., 1.])
    """
    lu_, piv = lu_and_piv
    lu_, b = _inexact(lu_), _inexact(b)
    piv = operand(piv)
    n = _square(lu_, f"expected a square lu (..., n, n), got shape {shape_of(lu_)}")
    b2, vector = _as_matrices(b, n, f"Shapes of lu {shape_of(lu_)} and b {shape_of(b)} are incompatible")
    code = _trans(trans)
    _check_finite(check_finite, lu_, b)
    if ctx.trace is EVAL_TRACE:
        linalg = require("scipy.linalg", "scipy", "fgrad.scipy.linalg.lu_solve")
        return linalg.lu_solve((lu_, piv), b, trans=code, check_finite=False)
    perm = sl.pivots_to_permutation(piv, size=n)
    if code == 0:  # P L U x = b
        y = sl.triangular_solve(lu_, sl.permute_rows(perm, b2), lower=True, trans=0, unit_diagonal=True)
        x = sl.triangular_solve(lu_, y, lower=False, trans=0, unit_diagonal=False)
    else:  # op(U) op(L) P^T x = b
        y = sl.triangular_solve(lu_, b2, lower=False, trans=code, unit_diagonal=False)
        y = sl.triangular_solve(lu_, y, lower=True, trans=code, unit_diagonal=True)
        x = sl.permute_rows(perm, y, inverse=True)
    return _vector_back(x, vector)


def lu(a: ArrayLike, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True,
       p_indices: bool = False) -> tuple[Array, ...]:
    """scipy.linalg.lu: ``(p, l, u)`` with ``a = p @ l @ u`` (l unit lower
    trapezoidal, u upper trapezoidal), or ``(p @ l, u)`` with `permute_l`;
    with `p_indices` p is the row order (int32) with ``a = l[p] @ u``. Built
    on lu_factor, and differentiable as it is.

    >>> p, l, u = lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> p
    array([[0., 1.],
           [1., 0.]])
    """
    lu_, piv = _lu_factor(a, check_finite)
    shape = shape_of(lu_)
    m, n = shape[-2:]
    k = min(m, n)
    dtype = get_aval(lu_).dtype
    low = fnp.tril(lu_[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
    up = fnp.triu(lu_[..., :k, :])
    perm = sl.pivots_to_permutation(piv, size=m)  # a[perm] = l u
    if permute_l:
        return sl.permute_rows(perm, low, inverse=True), up
    if p_indices:
        return fnp.astype(fnp.argsort(perm, axis=-1), np.int32), low, up  # a = l[inverse of perm] u
    real = np.finfo(dtype).dtype
    p = sl.permute_rows(perm, np.broadcast_to(np.eye(m, dtype=real), (*shape[:-2], m, m)), inverse=True)
    return p, low, up


# --- the matrix exponential ---------------------------------------------------------------------------


def _expm_operand(a: Any, name: str) -> Any:
    a = _inexact(a)
    shape = shape_of(a)
    if len(shape) == 0:  # SciPy: a scalar is a 1 x 1 matrix, in double precision
        return fnp.reshape(fnp.astype(a, np.result_type(get_aval(a).dtype, np.float64)), (1, 1))
    if len(shape) < 2:
        raise LinAlgError("The input array must be at least two-dimensional")
    if shape[-1] != shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return a


def expm(A: ArrayLike) -> Array:
    """scipy.linalg.expm: the matrix exponential of each matrix of a stack (a
    scalar is a 1 x 1 matrix). Its derivative is expm_frechet, in both modes
    and to any order.

    >>> expm(np.zeros((2, 2)))
    array([[1., 0.],
           [0., 1.]])
    """
    return sl.expm(_expm_operand(A, "expm"))


def expm_frechet(A: ArrayLike, E: ArrayLike, method: str | None = None, compute_expm: bool = True,
                 check_finite: bool = True) -> Any:
    """scipy.linalg.expm_frechet: the Fréchet derivative of expm at `A` in the
    direction `E`, with ``expm(A)`` first if `compute_expm` (``(expm_A,
    expm_frechet_AE)``). Linear in `E`; differentiable in `A` too.

    >>> expm_frechet(np.zeros((2, 2)), np.eye(2), compute_expm=False)
    array([[1., 0.],
           [0., 1.]])
    """
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {method}")
    a, e = _expm_operand(A, "expm_frechet"), _expm_operand(E, "expm_frechet")
    if shape_of(a) != shape_of(e):
        raise ValueError("expected A and E to be the same shape")
    _check_finite(check_finite, a, e)
    out = sl.expm_frechet(a, e)
    return (sl.expm(a), out) if compute_expm else out


# --- block_diag -----------------------------------------------------------------------------------------


def block_diag(*arrs: ArrayLike) -> Array:
    """scipy.linalg.block_diag: the matrices (0-d and 1-d inputs as 1 x 1 and 1 x n)
    on the diagonal of one matrix, zeros elsewhere, in their promoted dtype.
    Inputs of more than 2 dimensions are stacks of blocks, their leading axes
    broadcast together (a lower-dimensional input is the same in every one).

    >>> block_diag(np.eye(2), 3.0)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 3.]])
    """
    if not arrs:
        arrs = (np.zeros((1, 0)),)
    ops = [operand(x) for x in arrs]
    if ctx.trace is EVAL_TRACE:
        return require("scipy.linalg", "scipy", "fgrad.scipy.linalg.block_diag").block_diag(*ops)
    dtype = np.result_type(*(get_aval(x).dtype for x in ops))
    stack = np.broadcast_shapes(*(shape_of(x)[:-2] for x in ops))
    blocks = [fnp.atleast_2d(fnp.astype(x, dtype)) for x in ops]
    blocks = [fnp.broadcast_to(b, (*stack, *shape_of(b)[-2:])) for b in blocks]
    widths = [shape_of(x)[-1] for x in blocks]
    total = sum(widths)
    rows, start = [], 0
    for block, width in zip(blocks, widths):
        height = shape_of(block)[-2]
        left = np.zeros((*stack, height, start), dtype)
        right = np.zeros((*stack, height, total - start - width), dtype)
        rows.append(fnp.concatenate([left, block, right], axis=-1))
        start += width
    return fnp.concatenate(rows, axis=-2)


# --- SciPy's signatures for fgrad.numpy.linalg ------------------------------------------------------


def solve(a: ArrayLike, b: ArrayLike, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, check_finite: bool = True, assume_a: str | None = None,
          transposed: bool = False) -> Array:
    """scipy.linalg.solve: x with ``a @ x == b`` (``a.T @ x == b`` if `transposed`).
    `assume_a` None or 'general' solves by LU; 'symmetric'/'hermitian' read
    the `lower` (or upper) triangle; 'positive definite' solves by Cholesky;
    'lower triangular' and 'upper triangular' by solve_triangular; 'diagonal'
    divides. Other structures ('banded', 'tridiagonal') raise NotImplementedError.

    >>> solve(np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([3.0, 4.0]), assume_a="pos")
    array([1., 1.])
    """
    kinds = {None: "gen", "gen": "gen", "general": "gen", "sym": "sym", "symmetric": "sym", "her": "her",
             "hermitian": "her", "pos": "pos", "positive definite": "pos", "diagonal": "diagonal",
             "lower triangular": "lower", "upper triangular": "upper"}
    kind = kinds.get(assume_a)
    if kind is None:
        raise NotImplementedError(
            f"fgrad.scipy.linalg.solve does not support assume_a={assume_a!r}; use one of "
            f"{sorted(map(str, kinds))}"
        )
    a, b = _inexact(a), _inexact(b)
    n = _square(a, f"Input a needs to be a square matrix or a stack of them, got shape {shape_of(a)}")
    _as_matrices(b, n, f"Incompatible dimensions: a {shape_of(a)}, b {shape_of(b)}")
    _check_finite(check_finite, a, b)
    if transposed:
        if get_aval(a).dtype.kind == "c":
            raise NotImplementedError("scipy.linalg.solve: transposed=True is not supported for complex a")
        a, kind = fnp.swapaxes(a, -1, -2), {"lower": "upper", "upper": "lower"}.get(kind, kind)
        lower = not lower
    if kind in ("lower", "upper"):
        return solve_triangular(a, b, lower=kind == "lower", check_finite=False)
    if kind == "pos":
        return cho_solve(cho_factor(a, lower=lower, check_finite=False), b, check_finite=False)
    if kind == "diagonal":
        diag = fnp.diagonal(a, axis1=-2, axis2=-1)
        return b / diag if len(shape_of(b)) == 1 else b / fnp.expand_dims(diag, -1)
    if kind in ("sym", "her"):
        triangle = fnp.tril(a) if lower else fnp.triu(a)
        strict = fnp.tril(a, -1) if lower else fnp.triu(a, 1)
        other = fnp.swapaxes(strict, -1, -2)
        a = triangle + (fnp.conj(other) if kind == "her" else other)
    return fnp.linalg.solve(a, b)


def inv(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """scipy.linalg.inv: the inverse of each matrix of a stack.

    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    a = _inexact(a)
    _square(a, f"Expected square matrix or a stack of them, got shape {shape_of(a)}")
    _check_finite(check_finite, a)
    return fnp.linalg.inv(a)


def det(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """scipy.linalg.det: the determinant of each matrix of a stack (computed in the
    precision of `a`, returned in double precision, as SciPy's).

    >>> det(np.array([[2.0, 0.0], [1.0, 3.0]]))
    np.float64(6.0)
    """
    a = _inexact(a)
    _square(a, f"Last 2 dimensions of the array must be square, got shape {shape_of(a)}")
    _check_finite(check_finite, a)
    out = fnp.linalg.det(a)
    double = np.result_type(get_aval(a).dtype, np.float64)  # SciPy's result, whatever the precision of a
    return out if get_aval(out).dtype == double else fnp.astype(out, double)
