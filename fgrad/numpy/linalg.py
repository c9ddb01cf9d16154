"""fgrad.numpy.linalg: NumPy's linear algebra on fgrad's primitives.

Norms, solve, inv, pinv, det, slogdet, the factorizations (cholesky, qr, eigh,
eig, svd), lstsq and the functions composed from them (tensorsolve and
tensorinv are solve and inv of reshaped arrays), and NumPy 2's array-API
names shared with fgrad.numpy (matmul, trace, diagonal, ...). All work on
stacks of matrices (leading axes) like NumPy. Results with several parts come
back as fgrad's named tuples with NumPy's names and fields
(``eigh(a).eigenvectors``), with or without a transform.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core.avals import get_aval
from ..core.errors import ConcretizationTypeError
from ..core.trace import EVAL_TRACE, ctx
from ..primitives import decompositions as dec
from ..primitives import elementwise as ew
from ..primitives import linalg as lin
from ..primitives import reductions as red
from ..primitives import shapes
from . import indexing, products, shaping, sorting
from .operands import Array, ArrayLike, concrete_value, normalize_axes, numpy_when_eager, operand, shape_of

__all__ = [
    "norm", "vector_norm", "matrix_norm", "solve", "inv", "pinv", "det", "slogdet", "cholesky", "qr",
    "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "lstsq", "matrix_power", "multi_dot",
    "matrix_rank", "cond", "tensorsolve", "tensorinv",
    "matrix_transpose", "matmul", "outer", "tensordot", "vecdot", "trace", "diagonal",
]

LinAlgError = np.linalg.LinAlgError


# The named tuples NumPy's functions return, with NumPy's names and fields; the
# functions return them with or without a transform.


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


def _inexact(x: Any) -> Any:
    """`x` as an operand, integers and bools converted to float64 (as NumPy's linalg does)."""
    x = operand(x)
    if get_aval(x).dtype.kind not in "fc":
        x = ew.convert_element_type(x, new_dtype=np.dtype(np.float64))
    return x


def _keep(out: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    return shapes.reshape(out, new_shape=red.kept_shape(shape, axes)) if keepdims else out


def _check_square(x: Any) -> tuple[int, ...]:
    shape = shape_of(x)
    if len(shape) < 2:
        raise LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    if shape[-1] != shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return shape


# --- norms ------------------------------------------------------------------------------


def _abs_squared(x: Any) -> Any:
    """|x|^2, real, differentiable everywhere (also at complex 0, unlike abs)."""
    if get_aval(x).dtype.kind != "c":
        return ew.mul(x, x)
    return ew.add(ew.square(ew.real(x)), ew.square(ew.imag(x)))


def _two_norm(x: Any, axes: tuple[int, ...]) -> Any:
    """sqrt(sum(|x|^2)) over `axes`, with derivative 0 (not nan) where it is 0: one
    primitive (see `two_norm_p`)."""
    return red.two_norm(x, axes=axes)


def _p_norm(x: Any, p: float, axes: tuple[int, ...]) -> Any:
    """(sum |x|^p)^(1/p) over `axes`; for p > 0 guarded like `_two_norm` where it is 0."""
    powers = ew.power(ew.absolute(x), p)
    total = red.reduce_sum(powers, axes=axes)
    if p <= 0:
        return ew.power(total, 1.0 / p)
    zero = ew.eq(total, 0.0)
    return ew.where(zero, 0.0, ew.power(ew.where(zero, 1.0, total), 1.0 / p))


def _largest(x: Any, axes: tuple[int, ...]) -> Any:
    """The maximum of the non-negative `x` over `axes`: 0 over no elements, as NumPy's norms."""
    shape = shape_of(x)
    if any(shape[a] == 0 for a in axes):
        return red.reduce_sum(x, axes=axes)  # zeros of the result's shape and dtype
    return red.reduce_max(x, axes=axes)


def _vector_norm(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return _two_norm(x, axes)
    if ord == np.inf:
        return _largest(ew.absolute(x), axes)
    if ord == -np.inf:
        return red.reduce_min(ew.absolute(x), axes=axes)
    if ord == 0:  # the number of non-zero elements: no derivative
        dtype = np.finfo(get_aval(x).dtype).dtype  # the real dtype of a complex one
        return red.reduce_sum(ew.convert_element_type(ew.ne(x, 0), new_dtype=dtype), axes=axes)
    if ord == 1:
        return red.reduce_sum(ew.absolute(x), axes=axes)
    return _p_norm(x, float(ord), axes)


def _singular_values_last(x: Any, row: int, col: int) -> Any:
    """The singular values of the matrices on axes (row, col), along the last axis."""
    nd = len(shape_of(x))
    perm = tuple(i for i in range(nd) if i not in (row, col)) + (row, col)
    if perm != tuple(range(nd)):
        x = shapes.transpose(x, axes=perm)
    return dec.svdvals(x)


def _matrix_norm(x: Any, ord: Any, row: int, col: int) -> Any:
    if ord is None or ord in ("fro", "f"):
        return _two_norm(x, tuple(sorted((row, col))))
    if ord == "nuc":
        s = _singular_values_last(x, row, col)
        return red.reduce_sum(s, axes=(len(shape_of(s)) - 1,))
    if ord in (2, -2):
        s = _singular_values_last(x, row, col)
        last = (len(shape_of(s)) - 1,)
        return _largest(s, last) if ord == 2 else red.reduce_min(s, axes=last)
    if ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum (summed over rows); inf: the largest row sum.
        summed, kept = (row, col) if ord in (1, -1) else (col, row)
        sums = red.reduce_sum(ew.absolute(x), axes=(summed,))
        kept_axes = (kept - (kept > summed),)
        return _largest(sums, kept_axes) if ord in (1, np.inf) else red.reduce_min(sums, axes=kept_axes)
    raise ValueError("Invalid norm order for matrices.")


@numpy_when_eager(np.linalg.norm)
def norm(
    x: ArrayLike, ord: Any = None, axis: int | Sequence[int] | None = None, keepdims: bool = False
) -> Array:
    """numpy.linalg.norm: a vector norm (ord None or 2, 1, inf, -inf, 0, any
    other p) over one axis, or a matrix norm (None or 'fro', 'nuc', 1, -1, 2,
    -2, inf, -inf) over two; by default the 2-norm of all elements. Its
    derivative at 0 is 0, not nan.

    >>> norm(np.array([3.0, 4.0]))
    np.float64(5.0)
    """
    x = operand(x)
    aval = get_aval(x)
    if aval.dtype.kind not in "fc":
        x = ew.convert_element_type(x, new_dtype=np.dtype(np.float64))
    shape = aval.shape
    if axis is None:
        if ord is None:  # the 2-norm of every element: the common call, often in a loop
            every = tuple(range(len(shape)))
            out = red.two_norm(x, axes=every)
            return _keep(out, shape, every, keepdims) if keepdims else out
        if len(shape) not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axes = tuple(range(len(shape)))
    else:
        axes = products.ordered_axes(axis, len(shape))
    if len(axes) == 1:
        out = _vector_norm(x, ord, axes)
    elif len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("Duplicate axes given.")
        out = _matrix_norm(x, ord, *axes)
    else:
        raise ValueError("Improper number of dimensions to norm.")
    return _keep(out, shape, tuple(sorted(axes)), keepdims)


@numpy_when_eager(np.linalg.vector_norm)
def vector_norm(x: ArrayLike, /, *, axis: int | Sequence[int] | None = None, keepdims: bool = False,
                ord: Any = 2) -> Array:
    """numpy.linalg.vector_norm: the vector norm over `axis` (all axes by default,
    or a tuple of axes taken together as one vector).

    >>> vector_norm(np.ones((2, 2)), ord=1)
    np.float64(4.0)
    """
    x = _inexact(x)
    shape = shape_of(x)
    axes = normalize_axes(axis, len(shape))
    return _keep(_vector_norm(x, ord, axes), shape, axes, keepdims)


@numpy_when_eager(np.linalg.matrix_norm)
def matrix_norm(x: ArrayLike, /, *, keepdims: bool = False, ord: Any = "fro") -> Array:
    """numpy.linalg.matrix_norm: the matrix norm of each matrix of a stack.

    >>> matrix_norm(np.eye(2), ord="nuc")
    np.float64(2.0)
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# --- solve, inverses, determinants ---------------------------------------------------------


@numpy_when_eager(np.linalg.solve)
def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """numpy.linalg.solve: x with ``a @ x == b``; `b` is a vector if 1-d, else a
    stack of matrices (..., n, k). Linear in `b`.

    >>> solve(2 * np.eye(2), np.array([2.0, 4.0]))
    array([1., 2.])
    """
    a, b = _inexact(a), _inexact(b)
    a_shape, b_shape = _check_square(a), shape_of(b)
    if not b_shape:
        raise ValueError(
            "solve: the right-hand side b is 0-d; pass a vector (n,) or a stack of matrices (..., n, k)"
        )
    if len(b_shape) == 1:
        if b_shape[0] != a_shape[-1]:
            raise ValueError(
                f"solve: the right-hand side has {b_shape[0]} elements for a matrix of size {a_shape[-1]}"
            )
        x = dec.solve(a, shapes.reshape(b, new_shape=(b_shape[0], 1)))
        return shapes.reshape(x, new_shape=shape_of(x)[:-1])
    return dec.solve(a, b)


@numpy_when_eager(np.linalg.inv)
def inv(a: ArrayLike) -> Array:
    """numpy.linalg.inv: the inverse of each matrix of a stack.

    >>> inv(2 * np.eye(2))
    array([[0.5, 0. ],
           [0. , 0.5]])
    """
    return dec.inv(_inexact(a))


_NO_VALUE: Any = np._NoValue  # NumPy's marker for an argument not given


@numpy_when_eager(np.linalg.pinv)
def pinv(a: ArrayLike, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NO_VALUE) -> Array:
    """numpy.linalg.pinv: the Moore-Penrose pseudo-inverse, singular values at or
    below ``rcond * largest`` treated as zero (the derivative assumes the rank
    does not change nearby). With ``hermitian=True`` only the lower triangle is
    read, so that is where the derivative lives.

    >>> pinv(np.array([[2.0, 0.0]]))
    array([[0.5],
           [0. ]])
    """
    a = _inexact(a)
    shape = shape_of(a)
    if len(shape) < 2:
        raise LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(shape[-2:]) * np.finfo(get_aval(a).dtype).eps
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if np.ndim(rcond) != 0:
        raise NotImplementedError("fgrad.numpy.linalg.pinv supports a scalar rcond (or rtol) only")
    return dec.pinv(a, rcond=float(rcond), hermitian=bool(hermitian))


@numpy_when_eager(np.linalg.det)
def det(a: ArrayLike) -> Array:
    """numpy.linalg.det: the determinant of each matrix of a stack. Its gradient
    is the transposed adjugate, at singular matrices too.

    >>> det(2 * np.eye(2))
    np.float64(4.0)
    """
    return dec.det(_inexact(a))


def slogdet(a: ArrayLike) -> SlogdetResult:
    """numpy.linalg.slogdet: (sign, log|det|) of each matrix; the sign has no
    derivative, and log|det| none at a singular matrix (a LinAlgError says so).

    >>> slogdet(-np.eye(3)).sign
    np.float64(-1.0)
    """
    if ctx.trace is EVAL_TRACE:
        return SlogdetResult(*np.linalg.slogdet(a))
    sign, logabsdet = dec.slogdet(_inexact(a))
    return SlogdetResult(sign, logabsdet)


# --- factorizations -----------------------------------------------------------------------


@numpy_when_eager(np.linalg.cholesky)
def cholesky(a: ArrayLike, /, *, upper: bool = False) -> Array:
    """numpy.linalg.cholesky: L with ``a = L @ L.T`` (or U with ``a = U.T @ U``).
    Only the lower (upper) triangle of `a` is read, so that is where the
    derivative lives.

    >>> cholesky(4 * np.eye(2))
    array([[2., 0.],
           [0., 2.]])
    """
    return dec.cholesky(_inexact(a), upper=bool(upper))


def qr(a: ArrayLike, mode: str = "reduced") -> Any:
    """numpy.linalg.qr: Q with orthonormal columns and upper-triangular R with
    ``a = Q @ R``; mode 'reduced', 'complete' or 'r' (R only).

    >>> qr(np.eye(2)).R.shape
    (2, 2)
    """
    if ctx.trace is EVAL_TRACE:
        out = np.linalg.qr(a, mode=mode)  # type: ignore[call-overload]
        return QRResult(*out) if mode in ("reduced", "complete") else out
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    if mode == "raw":
        raise NotImplementedError("fgrad.numpy.linalg.qr does not support mode='raw' (Householder vectors)")
    a = _inexact(a)
    q, r = dec.qr(a, mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else QRResult(q, r)


def _uplo(UPLO: str) -> str:
    UPLO = UPLO.upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


def eigh(a: ArrayLike, UPLO: str = "L") -> EighResult:
    """numpy.linalg.eigh: eigenvalues (ascending) and eigenvectors of symmetric
    matrices, reading the lower ('L') or upper ('U') triangle. The derivative
    assumes distinct eigenvalues.

    >>> eigh(np.diag([2.0, 1.0])).eigenvalues
    array([1., 2.])
    """
    if ctx.trace is EVAL_TRACE:
        return EighResult(*np.linalg.eigh(a, UPLO))  # type: ignore[call-overload]
    w, v = dec.eigh(_inexact(a), UPLO=_uplo(UPLO))
    return EighResult(w, v)


@numpy_when_eager(np.linalg.eigvalsh)
def eigvalsh(a: ArrayLike, UPLO: str = "L") -> Array:
    """numpy.linalg.eigvalsh: the eigenvalues (ascending) of symmetric matrices.

    >>> eigvalsh(np.diag([2.0, 1.0]))
    array([1., 2.])
    """
    return dec.eigvalsh(_inexact(a), UPLO=_uplo(UPLO))


def _real_if_numpy_would(a: Any, parts: tuple[Any, ...]) -> tuple[Any, ...]:
    """NumPy's eig and eigvals return real arrays for a real matrix (or stack) whose
    eigenvalues all have an imaginary part of exactly 0. Where the values are
    known (no transform, grad, jvp) so do these; where they are not (make_jaxpr,
    jit, vmap) the results stay complex, as JAX's."""
    if get_aval(a).dtype.kind == "c":
        return parts
    w = concrete_value(parts[0], None)
    if w is None or np.any(np.imag(w) != 0):
        return parts
    return tuple(ew.real(x) for x in parts)


def eig(a: ArrayLike) -> EigResult:
    """numpy.linalg.eig: eigenvalues and unit-norm eigenvectors (the columns) of
    square matrices; complex, or real where the matrix and all its eigenvalues
    are real and the values are known (under make_jaxpr, jit and vmap they stay
    complex). The derivative assumes distinct eigenvalues (at an exactly
    repeated one it is nan, and the eigenvectors' inf or nan) and holds for
    functions of the eigenvectors that do not depend on their phase, which is
    arbitrary (``abs(v) ** 2``, ``v v^H``).

    >>> eig(np.diag([2.0, 1.0])).eigenvalues
    array([2., 1.])
    """
    if ctx.trace is EVAL_TRACE:
        return EigResult(*np.linalg.eig(a))
    a = _inexact(a)
    w, v = _real_if_numpy_would(a, tuple(dec.eig(a)))
    return EigResult(w, v)


@numpy_when_eager(np.linalg.eigvals)
def eigvals(a: ArrayLike) -> Array:
    """numpy.linalg.eigvals: the eigenvalues of square matrices, complex or real
    as with `eig`. The derivative assumes distinct eigenvalues (nan at an
    exactly repeated one).

    >>> eigvals(np.array([[0.0, 1.0], [-1.0, 0.0]]))
    array([0.+1.j, 0.-1.j])
    """
    a = _inexact(a)
    (w,) = _real_if_numpy_would(a, (dec.eigvals(a),))
    return w


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """numpy.linalg.svd: U, S, Vh with ``a = U @ (S[..., None] * Vh)`` (singular
    values descending), or S alone with ``compute_uv=False``; with
    ``hermitian=True`` computed from eigh of the lower triangle, as NumPy's
    (the same singular values, its own signs of the vectors). The derivative
    of U and Vh assumes distinct non-zero singular values and ``full_matrices=False``
    (or square matrices).

    >>> svd(np.diag([1.0, 3.0]), compute_uv=False)
    array([3., 1.])
    """
    if ctx.trace is EVAL_TRACE:
        out = np.linalg.svd(a, full_matrices, compute_uv, hermitian)  # type: ignore[call-overload]
        return SVDResult(*out) if compute_uv else out
    a = _inexact(a)
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    if not compute_uv:
        return dec.svdvals(a)
    u, s, vh = dec.svd(a, full_matrices=bool(full_matrices))
    return SVDResult(u, s, vh)


def _svd_hermitian(a: Any, compute_uv: bool) -> Any:
    """NumPy's svd(a, hermitian=True): from eigh of the lower triangle, the
    absolute eigenvalues descending, U the eigenvectors in that order and Vh
    their conjugate transposes times the eigenvalues' signs."""
    _check_square(a)
    if not compute_uv:
        return shaping.flip(sorting.sort(ew.absolute(dec.eigvalsh(a, UPLO="L")), axis=-1), axis=-1)
    w, v = dec.eigh(a, UPLO="L")
    s = ew.absolute(w)
    order = shaping.flip(sorting.argsort(s, axis=-1), axis=-1)
    s, signs = indexing.take_along_axis(s, order, -1), indexing.take_along_axis(ew.sign(w), order, -1)
    as_rows = lambda x: shapes.reshape(x, new_shape=(*shape_of(x)[:-1], 1, shape_of(x)[-1]))
    u = indexing.take_along_axis(v, as_rows(order), -1)
    vh = lin.matrix_transpose(ew.mul(u, as_rows(signs)))
    return SVDResult(u, s, ew.conj(vh) if get_aval(vh).dtype.kind == "c" else vh)


def svdvals(x: ArrayLike, /) -> Array:
    """numpy.linalg.svdvals: the singular values of each matrix, descending.

    >>> svdvals(np.diag([1.0, -3.0]))
    array([3., 1.])
    """
    if ctx.trace is EVAL_TRACE:
        return np.linalg.svdvals(x)
    return dec.svdvals(_inexact(x))


# --- composed from the above ---------------------------------------------------------------


def _concrete_or(value: Any, default: Any) -> Any:
    """The concrete value of a traced int, or `default` when tracing abstractly."""
    try:
        return int(value)
    except ConcretizationTypeError:
        return default


@numpy_when_eager(np.linalg.lstsq)
def lstsq(a: ArrayLike, b: ArrayLike, rcond: float | None = None) -> tuple[Array, Array, Any, Array]:
    """numpy.linalg.lstsq: (x, residuals, rank, s), x minimizing ``|b - a @ x|``
    (the least-norm one), computed as ``pinv(a, rcond) @ b``, so that its
    derivative is that of the pseudo-inverse. The residuals are returned when
    `a` is tall and of full rank; when the rank is not known (under
    make_jaxpr, or vmap) full rank is assumed.

    >>> lstsq(np.array([[1.0], [1.0]]), np.array([1.0, 3.0]))[0]
    array([2.])
    """
    a, b = _inexact(a), _inexact(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    if len(a_shape) != 2 or len(b_shape) not in (1, 2):
        bad = len(a_shape) if len(a_shape) != 2 else len(b_shape)
        raise LinAlgError(f"{bad}-dimensional array given. Array must be two-dimensional")
    m, n = a_shape
    if b_shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    dtype = np.result_type(get_aval(a).dtype, get_aval(b).dtype)
    if rcond is None:
        rcond = float(np.finfo(dtype).eps) * max(m, n)
    x = lin.matmul(dec.pinv(a, rcond=float(rcond), hermitian=False), b)
    s = dec.svdvals(a)
    cutoff = ew.mul(red.reduce_max(s, axes=(0,)), rcond) if min(m, n) else 0.0
    rank = ew.convert_element_type(red.reduce_sum(ew.gt(s, cutoff), axes=(0,)), new_dtype=np.dtype(np.int32))
    if m > n and _concrete_or(rank, n) == n:
        r = ew.sub(b, lin.matmul(a, x))
        residuals = red.reduce_sum(_abs_squared(r), axes=(0,))  # real, as NumPy's
        if len(b_shape) == 1:
            residuals = shapes.reshape(residuals, new_shape=(1,))
    else:
        residuals = np.array([], np.finfo(dtype).dtype)
    return x, residuals, rank, s


@numpy_when_eager(np.linalg.matrix_power)
def matrix_power(a: ArrayLike, n: int) -> Array:
    """numpy.linalg.matrix_power: ``a @ a @ ... @ a`` (n times, by repeated
    squaring); the inverse's powers for n < 0, the identity for n = 0.

    >>> matrix_power(2 * np.eye(2), 3)
    array([[8., 0.],
           [0., 8.]])
    """
    a = operand(a)
    shape = _check_square(a)
    try:
        n = int(n.__index__())
    except (AttributeError, TypeError):
        raise TypeError("exponent must be an integer") from None
    if n == 0:
        return np.broadcast_to(np.eye(shape[-1], dtype=get_aval(a).dtype), shape).copy()
    if n < 0:
        a, n = dec.inv(_inexact(a)), -n
    result, power = None, a
    while True:
        if n & 1:
            result = power if result is None else lin.matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = lin.matmul(power, power)


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The cheapest parenthesization of a chain of matrix products (dynamic
    programming over the matrices' sizes dims[i] x dims[i+1]): split[i][j]."""
    count = len(dims) - 1
    cost = [[0.0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays: Sequence[ArrayLike], *, out: Any = None, precision: Any = None) -> Array:
    """numpy.linalg.multi_dot: the product of a chain of matrices in the cheapest
    order; the first may be a vector (a row) and the last one (a column).
    `precision` is JAX's keyword (see `fgrad.lax.Precision`), checked and ignored.

    >>> multi_dot([np.ones(3), np.ones((3, 4)), np.ones(4)])
    np.float64(12.0)
    """
    if precision is not None:
        products.check_precision(precision, "fgrad.numpy.linalg.multi_dot")
    if ctx.trace is EVAL_TRACE:
        return np.linalg.multi_dot(arrays, out=out)
    if out is not None:
        raise TypeError("fgrad.numpy.linalg.multi_dot does not support out= under a transform")
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    mats = [operand(x) for x in arrays]
    if len(mats) == 2:
        return products.dot(mats[0], mats[1])
    first_vector, last_vector = len(shape_of(mats[0])) == 1, len(shape_of(mats[-1])) == 1
    if first_vector:
        mats[0] = shapes.reshape(mats[0], new_shape=(1, shape_of(mats[0])[0]))
    if last_vector:
        mats[-1] = shapes.reshape(mats[-1], new_shape=(shape_of(mats[-1])[0], 1))
    for m in mats:
        if len(shape_of(m)) != 2:
            raise LinAlgError(f"{len(shape_of(m))}-dimensional array given. Array must be two-dimensional")
    split = _chain_order([shape_of(m)[0] for m in mats] + [shape_of(mats[-1])[1]])

    def product(i: int, j: int) -> Any:
        if i == j:
            return mats[i]
        k = split[i][j]
        return lin.matmul(product(i, k), product(k + 1, j))

    result = product(0, len(mats) - 1)
    shape = shape_of(result)
    final = shape[int(first_vector):len(shape) - int(last_vector)]
    return result if final == shape else shapes.reshape(result, new_shape=final)


@numpy_when_eager(np.linalg.matrix_rank)
def matrix_rank(A: ArrayLike, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Array:
    """numpy.linalg.matrix_rank: the number of singular values above the
    tolerance (an integer: no derivative); with ``hermitian=True`` the
    absolute eigenvalues of the lower triangle, as NumPy's.

    >>> matrix_rank(np.diag([1.0, 0.0]))
    np.int64(1)
    """
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = _inexact(A)
    shape = shape_of(A)
    if len(shape) < 2:  # 1 unless every element is 0
        nonzero = red.reduce_or(ew.ne(A, 0), axes=tuple(range(len(shape))))
        return ew.convert_element_type(nonzero, new_dtype=np.dtype(np.int64))
    s = ew.absolute(dec.eigvalsh(A, UPLO="L")) if hermitian else dec.svdvals(A)
    last = len(shape_of(s)) - 1
    if tol is None:
        if rtol is None:
            rtol = max(shape[-2:]) * np.finfo(get_aval(s).dtype).eps
        else:
            rtol = shapes.reshape(operand(rtol), new_shape=(*np.shape(rtol), 1)) if np.ndim(rtol) else rtol
        largest = red.reduce_max(s, axes=(last,)) if shape_of(s)[-1] else np.zeros(shape_of(s)[:-1])
        tol = ew.mul(shapes.reshape(largest, new_shape=(*shape_of(largest), 1)), rtol)
    elif np.ndim(tol):
        tol = shapes.reshape(operand(tol), new_shape=(*np.shape(tol), 1))
    above = ew.convert_element_type(ew.gt(s, tol), new_dtype=np.dtype(np.int64))
    return red.reduce_sum(above, axes=(last,))


@numpy_when_eager(np.linalg.cond)
def cond(x: ArrayLike, p: Any = None) -> Array:
    """numpy.linalg.cond: the condition number ``norm(x, p) * norm(inv(x), p)``;
    for p None, 2 or -2 the ratio of extreme singular values; inf for a
    singular matrix, as NumPy's.

    >>> cond(np.diag([1.0, 4.0]))
    np.float64(4.0)
    """
    x = _inexact(x)
    shape = shape_of(x)
    if math.prod(shape[-2:]) == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = dec.svdvals(x)
        last = len(shape_of(s)) - 1
        largest, smallest = red.reduce_max(s, axes=(last,)), red.reduce_min(s, axes=(last,))
        num, den = (smallest, largest) if p == -2 else (largest, smallest)
        zero = ew.eq(den, 0.0)  # a singular matrix (or a zero one for p=-2): inf, as NumPy's
        return ew.where(zero, np.inf, ew.div(num, ew.where(zero, 1.0, den)))
    _check_square(x)
    # A singular matrix has an inverse of nans here, and a condition number of inf
    # (nan stays nan where x itself holds a nan), as NumPy's.
    r = ew.mul(norm(x, p, axis=(-2, -1)), norm(dec.inv(x, singular="nan"), p, axis=(-2, -1)))
    x_has_nan = red.reduce_or(ew.isnan(x), axes=(len(shape) - 2, len(shape) - 1))
    return ew.where(ew.isnan(r), ew.where(x_has_nan, r, np.inf), r)


@numpy_when_eager(np.linalg.tensorsolve)
def tensorsolve(a: ArrayLike, b: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """numpy.linalg.tensorsolve: x with ``tensordot(a, x, axes=x.ndim) == b``,
    the axes `axes` of `a` moved to the end first: solve of `a` reshaped to a
    square matrix, so its derivatives are solve's.

    >>> tensorsolve(2 * np.eye(4).reshape(2, 2, 2, 2), np.ones((2, 2)))
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    a, b = _inexact(a), _inexact(b)
    an, bn = len(shape_of(a)), len(shape_of(b))
    if axes is not None:
        order = list(range(an))
        for k in axes:  # as NumPy's: each axis (non-negative) moved to the end in turn
            order.remove(k)
            order.insert(an, k)
        a = shapes.transpose(a, axes=tuple(order))
    a_shape = shape_of(a)
    x_shape = a_shape[-(an - bn):]
    size = math.prod(x_shape)
    if math.prod(a_shape) != size**2:
        moved = "" if axes is None else " (its `axes` moved to the end)"
        raise LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim]); "
            f"got a of shape {a_shape}{moved} and b of shape {shape_of(b)}"
        )
    b = shapes.reshape(b, new_shape=(math.prod(shape_of(b)),))
    x = solve(shapes.reshape(a, new_shape=(size, size)), b)
    return shapes.reshape(x, new_shape=x_shape)


@numpy_when_eager(np.linalg.tensorinv)
def tensorinv(a: ArrayLike, ind: int = 2) -> Array:
    """numpy.linalg.tensorinv: the inverse of `a` seen as a linear map from its
    axes ``ind:`` to its first `ind` axes (the result has the axes ``ind:``
    first): inv of `a` reshaped to a square matrix.

    >>> tensorinv(2 * np.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    a = _inexact(a)
    shape = shape_of(a)
    if not ind > 0:
        raise ValueError("Invalid ind argument.")
    rows = math.prod(shape[ind:])
    if rows == 0 or math.prod(shape) % rows:
        raise ValueError(
            f"tensorinv: cannot reshape an array of shape {shape} into a matrix of {rows} rows (the product "
            f"of the axes from ind={ind} on); pass an array whose first ind axes and the others hold as many "
            "elements"
        )
    inverse = dec.inv(shapes.reshape(a, new_shape=(rows, math.prod(shape) // rows)))
    return shapes.reshape(inverse, new_shape=shape[ind:] + shape[:ind])


# --- NumPy 2's array-API names -----------------------------------------------------------------


def matrix_transpose(x: ArrayLike, /) -> Array:
    """numpy.linalg.matrix_transpose: each matrix of a stack transposed.

    >>> matrix_transpose(np.ones((2, 3))).shape
    (3, 2)
    """
    if ctx.trace is EVAL_TRACE:
        return np.linalg.matrix_transpose(x)
    x = operand(x)
    nd = len(shape_of(x))
    if nd < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {nd}")
    return lin.matrix_transpose(x)


def matmul(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """numpy.linalg.matmul: the same as numpy.matmul.

    >>> matmul(np.eye(2), np.ones(2))
    array([1., 1.])
    """
    return products.matmul(x1, x2)


def outer(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """numpy.linalg.outer: the outer product of two vectors (1-d only).

    >>> outer(np.ones(2), np.ones(3)).shape
    (2, 3)
    """
    if ctx.trace is EVAL_TRACE:
        return np.linalg.outer(x1, x2)
    x1, x2 = operand(x1), operand(x2)
    n1, n2 = len(shape_of(x1)), len(shape_of(x2))
    if n1 != 1 or n2 != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={n1} and x2.ndim={n2}.")
    return products.outer(x1, x2)


def tensordot(x1: ArrayLike, x2: ArrayLike, /, *, axes: int | Sequence[Any] = 2) -> Array:
    """numpy.linalg.tensordot: numpy.tensordot with `axes` keyword-only.

    >>> tensordot(np.ones((2, 3)), np.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    return products.tensordot(x1, x2, axes)


@numpy_when_eager(np.linalg.vecdot)
def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1) -> Array:
    """numpy.linalg.vecdot: the dot product of vectors along `axis`, broadcast.

    >>> vecdot(np.ones((2, 3)), np.ones(3))
    array([3., 3.])
    """
    return products.vecdot(x1, x2, axis=axis)


@numpy_when_eager(np.linalg.trace)
def trace(x: ArrayLike, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """numpy.linalg.trace: the trace of each matrix of a stack (fgrad.numpy.trace
    over the last two axes).

    >>> trace(np.ones((2, 3, 3)))
    array([3., 3.])
    """
    return indexing.trace(x, offset, -2, -1, dtype)


@numpy_when_eager(np.linalg.diagonal)
def diagonal(x: ArrayLike, /, *, offset: int = 0) -> Array:
    """numpy.linalg.diagonal: the diagonal of each matrix of a stack
    (fgrad.numpy.diagonal over the last two axes).

    >>> diagonal(np.eye(2)[None])
    array([[1., 1.]])
    """
    return indexing.diagonal(x, offset, -2, -1)
