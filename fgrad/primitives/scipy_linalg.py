"""The linear-algebra primitives of fgrad.scipy.linalg: the triangular solve,
the LU factorization with its pivots, and the matrix exponential with its
Fréchet derivative. Values come from SciPy (an optional extra, imported when a
primitive first runs, never at import time).

* ``triangular_solve(a, b, lower, trans, unit_diagonal)``: x with
  ``op(a) @ x == b``, op the identity, the transpose or the conjugate
  transpose (trans 0, 1, 2), reading only one triangle of `a` (without its
  diagonal when it is a unit diagonal); linear in `b`, with a transpose. The
  derivative in `a` lives on the triangle read.
* ``lu_factor(a) -> [lu, piv]``: SciPy's packed LU (L's strict lower
  triangle, U's upper) and LAPACK's 0-based row interchanges (int32, no
  derivative); ``pivots_to_permutation(piv, size)`` turns those into the
  permutation `perm` with ``a[perm] == L @ U``.
* ``expm(a)`` and ``expm_frechet(a, e)``: the matrix exponential and its
  Fréchet derivative at `a` in the direction `e`, linear in `e`. The
  transpose of ``e -> expm_frechet(a, e)`` is ``expm_frechet(a^T, .)``;
  the derivative in `a` is the upper-right block of the Fréchet derivative
  of the block matrix [[a, e], [0, a]], so derivatives of every order are
  these two primitives again.

Every primitive works on stacks of matrices (leading axes), broadcast between
operands, so a batch rule only moves batch axes to the front.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, cached_aval, get_aval
from ..core.libraries import cast, numpy_only
from ..core.optional import require
from ..core.rules import batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, decompositions, indexing, linalg, shapes
from . import derivatives as d
from . import elementwise as ew

__all__ = [
    "triangular_solve", "lu_factor", "pivots_to_permutation", "permute_rows", "expm", "expm_frechet",
    "inexact_dtype", "triangle_mask",
]

_mT = linalg.matrix_transpose


def _scipy_linalg() -> Any:
    return require("scipy.linalg", "scipy", "fgrad.scipy.linalg")


def inexact_dtype(*dtypes: np.dtype) -> np.dtype:
    """SciPy's linalg result dtype: the promoted dtype, integers and bools as
    float64 and float16 as float32 (LAPACK has no half precision)."""
    dtype = np.result_type(*dtypes)
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype == np.float16:
        return np.dtype(np.float32)
    return dtype


def _check_square(x: ShapedArray, name: str) -> None:
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"{name}: expected a square matrix or a stack of them (..., n, n), got shape {x.shape}"
        )


def triangle_mask(n: int, dtype: np.dtype, lower: bool, diagonal: bool) -> np.ndarray:
    """1 on the lower (or upper) triangle of an n x n matrix, its diagonal included or not."""
    ones = np.ones((n, n), dtype)
    return np.tril(ones, 0 if diagonal else -1) if lower else np.triu(ones, 0 if diagonal else 1)


def _stacked(x: np.ndarray, core: int, fn: Callable[..., Any]) -> Any:
    """`fn` of each core-`core`-d element of a stack, results stacked (for SciPy
    functions without stacks, or with a Python loop of their own)."""
    lead = x.shape[: x.ndim - core]
    if not lead:
        return fn(x)
    outs = [fn(x[idx]) for idx in np.ndindex(lead)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(parts).reshape(lead + parts[0].shape) for parts in zip(*outs))
    return np.stack(outs).reshape(lead + outs[0].shape)


# --- triangular_solve(a, b, lower, trans, unit_diagonal): a (..., n, n), b (..., n, k) -------------


@cached_aval
def _triangular_solve_aval(a: ShapedArray, b: ShapedArray, *, lower: bool, trans: int,
                           unit_diagonal: bool) -> ShapedArray:
    _check_square(a, "solve_triangular")
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve_triangular: shapes of a {a.shape} and b {b.shape} are incompatible")
    stack = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return ShapedArray((*stack, *b.shape[-2:]), inexact_dtype(a.dtype, b.dtype))


def _triangular_solve_impl(a: Any, b: Any, *, lower: bool, trans: int, unit_diagonal: bool) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    aval = _triangular_solve_aval(
        get_aval(a), get_aval(b), lower=lower, trans=trans, unit_diagonal=unit_diagonal
    )
    if 0 in aval.shape:  # SciPy refuses empty stacks
        return np.zeros(aval.shape, aval.dtype)
    solve = _scipy_linalg().solve_triangular
    if a.ndim == 2 and b.ndim > 2:  # one matrix, a stack of right-hand sides: one call, not a loop
        n, k = b.shape[-2:]
        columns = np.moveaxis(b, -2, 0).reshape(n, -1)
        out = solve(a, columns, trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
        return np.moveaxis(np.asarray(out, aval.dtype).reshape(n, *b.shape[:-2], k), 0, -2)
    out = solve(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    return np.asarray(out, aval.dtype)


# --- the implementation on a namespace -------------------------------------------------
# triangular_solve through the standard's linalg.solve, given an upper
# triangular matrix: LU with partial pivoting then neither pivots nor
# eliminates, and its solve is the back substitution of SciPy's. A lower one
# is turned upper by reversing rows and columns. lu_factor, its pivots and
# expm have no standard composition of SciPy's accuracy: no rule.


def _triangular_solve(xp: Any, a: Any, b: Any, *, lower: bool, trans: int,
                              unit_diagonal: bool) -> Any:
    dtype = _triangular_solve_aval(
        get_aval(a), get_aval(b), lower=lower, trans=trans, unit_diagonal=unit_diagonal
    ).dtype
    a, b = cast(xp, a, dtype), cast(xp, b, dtype)
    t = decompositions.triangle(xp, a, lower, diagonal=not unit_diagonal)
    if unit_diagonal:
        t = t + xp.eye(a.shape[-1], dtype=t.dtype)
    if trans:
        t = xp.matrix_transpose(t)
        if trans == 2 and xp.isdtype(t.dtype, "complex floating"):
            t = xp.conj(t)
    solve = decompositions.linalg_function(xp, triangular_solve_p, "solve")
    if lower == (trans == 0):  # a lower triangular system: reversed, an upper one
        flipped = decompositions.each_matrix(
            xp, solve, xp.flip(t, axis=(-2, -1)), xp.flip(b, axis=-2)
        )
        return xp.flip(flipped, axis=-2)
    return decompositions.each_matrix(xp, solve, t, b)


triangular_solve_p = Primitive(
    "triangular_solve", _triangular_solve, _triangular_solve_aval, numpy=_triangular_solve_impl
)


def _op(a: Any, trans: int) -> Any:
    """a, a^T or a^H."""
    if trans == 0:
        return a
    a_t = _mT(a)
    return ew.conj(a_t) if trans == 2 else a_t


def _triangular_solve_jvp(primals: list[Any], tangents: list[Any], **params: Any) -> tuple[Any, Any]:
    (a, b), (da, db) = primals, tangents
    x = triangular_solve(a, b, **params)
    rhs = db  # op(a) dx = db - op(da) x, da read on the triangle that a is read on
    if da is not None:
        n = get_aval(a).shape[-1]
        mask = triangle_mask(n, get_aval(da).dtype, params["lower"], not params["unit_diagonal"])
        da_x = linalg.matmul(_op(ew.mul(da, mask), params["trans"]), x)
        rhs = ew.neg(da_x) if rhs is None else ew.sub(rhs, da_x)
    return x, d.fit_to(triangular_solve(a, rhs, **params), x)


jvp_rules[triangular_solve_p] = _triangular_solve_jvp


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, lower: bool, trans: int,
                                unit_diagonal: bool) -> list[Any]:
    # The transpose of b -> op(a)^-1 b is ct -> op(a)^-T ct (a plain transpose, also for complex a).
    assert not d.is_linear(a), "triangular_solve is linear in its right-hand side only"
    if trans == 2:
        a, new_trans = ew.conj(a), 0
    else:
        new_trans = 1 - trans
    out = triangular_solve(a, ct, lower=lower, trans=new_trans, unit_diagonal=unit_diagonal)
    return [None, d.unbroadcast(out, b.aval)]


transpose_rules[triangular_solve_p] = _triangular_solve_transpose
batching.defbatch_matrix_stacks(triangular_solve_p)

triangular_solve: Callable[..., Any] = triangular_solve_p.bind


# --- pivots_to_permutation(piv, size): LAPACK's row interchanges as a permutation -------------------


@cached_aval
def _pivots_aval(piv: ShapedArray, *, size: int) -> ShapedArray:
    if piv.ndim < 1 or piv.dtype.kind not in "iu" or piv.shape[-1] > size:
        raise ValueError(
            f"pivots_to_permutation: expected integer pivots (..., k) with k <= {size}, got {piv.str_short()}"
        )
    return ShapedArray((*piv.shape[:-1], size), np.dtype(np.int32))


def _pivots_impl(piv: Any, *, size: int) -> np.ndarray:
    piv = np.asarray(piv)
    _pivots_aval(get_aval(piv), size=size)
    lead, k = piv.shape[:-1], piv.shape[-1]
    rows = np.tile(np.arange(size, dtype=np.int32), (int(np.prod(lead, dtype=int)), 1))
    flat = piv.reshape(-1, k)
    which = np.arange(len(rows))
    for i in range(k):  # row i was interchanged with row piv[i], in this order
        j = flat[:, i]
        swapped = rows[which, j]
        rows[which, j] = rows[:, i]
        rows[:, i] = swapped
    return rows.reshape((*lead, size))


pivots_to_permutation_p = Primitive(
    "pivots_to_permutation", numpy_only("pivots_to_permutation", _pivots_impl), _pivots_aval
)
d.defnojvp(pivots_to_permutation_p)


def _pivots_batch(args: list[Any], dims: list[Any], *, size: int) -> tuple[Any, int]:
    return pivots_to_permutation(batching.move_axis(args[0], dims[0], 0), size=size), 0


batch_rules[pivots_to_permutation_p] = _pivots_batch

pivots_to_permutation: Callable[..., Any] = pivots_to_permutation_p.bind


def permute_rows(perm: Any, x: Any, inverse: bool = False) -> Any:
    """The rows of the stack `x` (..., n, k) in the order `perm` (..., n):
    ``x[..., perm, :]``, or with `inverse` the rows put back where `perm` took
    them from; a product with the permutation matrix, so that stacks of `perm`
    and `x` broadcast and the derivative in `x` is a product too (an inf or nan
    in `x` spreads to its whole column, as 0 * inf is nan)."""
    n = get_aval(perm).shape[-1]
    one_hot = ew.eq(shapes.reshape(perm, new_shape=(*get_aval(perm).shape, 1)), np.arange(n))
    p_t = ew.convert_element_type(one_hot, new_dtype=inexact_dtype(get_aval(x).dtype))
    return linalg.matmul(_mT(p_t) if inverse else p_t, x)


# --- lu_factor(a) -> [lu, piv] --------------------------------------------------------------------


@cached_aval
def _lu_factor_aval(a: ShapedArray) -> list[ShapedArray]:
    if a.ndim < 2:
        raise ValueError(f"lu_factor: expected a matrix or a stack of them (..., m, n), got shape {a.shape}")
    m, n = a.shape[-2:]
    piv = ShapedArray((*a.shape[:-2], min(m, n)), np.dtype(np.int32))
    return [ShapedArray(a.shape, inexact_dtype(a.dtype)), piv]


def _lu_factor_impl(a: Any) -> list[np.ndarray]:
    a = np.asarray(a)
    lu_aval, piv_aval = _lu_factor_aval(get_aval(a))
    if 0 in a.shape:
        return [np.zeros(lu_aval.shape, lu_aval.dtype), np.zeros(piv_aval.shape, np.int32)]
    factor = _scipy_linalg().lu_factor
    lu, piv = _stacked(a, 2, lambda x: factor(x, check_finite=False))
    return [np.asarray(lu, lu_aval.dtype), np.asarray(piv, np.int32)]


lu_factor_p = Primitive(
    "lu_factor", numpy_only("lu_factor", _lu_factor_impl), _lu_factor_aval, multiple_results=True
)


def _rows(x: Any, start: int, stop: int | None, columns: bool = False) -> Any:
    """The rows (or columns) start:stop of a stack of matrices."""
    nd = get_aval(x).ndim
    cut = (slice(start, stop),) + ((slice(None),) if not columns else ())
    return indexing.getitem(x, idx=indexing.StaticIndex((slice(None),) * (nd - len(cut)) + cut))


def _square_lu_tangent(lu: Any, p_t_da: Any) -> Any:
    """dlu of a square P^T a = L U: L^-1 P^T da U^-1 = L^-1 dL + dU U^-1 =: X,
    the first strictly lower (L has a unit diagonal), the second upper
    triangular, so dL = L tril(X, -1), dU = triu(X) U, packed as dL + dU."""
    n = get_aval(lu).shape[-1]
    dtype = get_aval(lu).dtype
    y = triangular_solve(lu, p_t_da, lower=True, trans=0, unit_diagonal=True)
    x = _mT(triangular_solve(lu, _mT(y), lower=False, trans=1, unit_diagonal=False))
    strict_lower = triangle_mask(n, dtype, lower=True, diagonal=False)
    upper = triangle_mask(n, dtype, lower=False, diagonal=True)
    low = ew.add(ew.mul(lu, strict_lower), np.eye(n, dtype=dtype))
    d_low = linalg.matmul(low, ew.mul(x, strict_lower))
    return ew.add(d_low, linalg.matmul(ew.mul(x, upper), ew.mul(lu, upper)))


def _lu_factor_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # With P^T a = L U: a tall a (m > n) splits into a square top a1 = L1 U
    # and a bottom a2 = L2 U, so dL2 = (da2 - L2 dU) U^-1; a wide one (m < n)
    # into a1 = L U1 and a2 = L U2, so dU2 = L^-1 (da2 - dL U2). The square
    # part needs an invertible U1 (a leading block of full rank).
    (a,), (da,) = primals, tangents
    lu, piv = lu_factor(a)
    m, n = get_aval(a).shape[-2:]
    p_t_da = permute_rows(pivots_to_permutation(piv, size=m), da)
    if m == n:
        return [lu, piv], [_square_lu_tangent(lu, p_t_da), None]
    dtype = get_aval(lu).dtype
    nd = get_aval(lu).ndim
    if m > n:
        top = _rows(lu, 0, n)
        d_top = _square_lu_tangent(top, _rows(p_t_da, 0, n))
        d_u = ew.mul(d_top, triangle_mask(n, dtype, lower=False, diagonal=True))
        rhs = ew.sub(_rows(p_t_da, n, None), linalg.matmul(_rows(lu, n, None), d_u))
        d_bottom = _mT(triangular_solve(top, _mT(rhs), lower=False, trans=1, unit_diagonal=False))
        return [lu, piv], [shapes.concatenate(d_top, d_bottom, axis=nd - 2), None]
    left = _rows(lu, 0, m, columns=True)
    d_left = _square_lu_tangent(left, _rows(p_t_da, 0, m, columns=True))
    d_l = ew.mul(d_left, triangle_mask(m, dtype, lower=True, diagonal=False))
    rhs = ew.sub(_rows(p_t_da, m, None, columns=True), linalg.matmul(d_l, _rows(lu, m, None, columns=True)))
    d_right = triangular_solve(left, rhs, lower=True, trans=0, unit_diagonal=True)
    return [lu, piv], [shapes.concatenate(d_left, d_right, axis=nd - 1), None]


jvp_rules[lu_factor_p] = _lu_factor_jvp
batching.defbatch_matrix_stacks(lu_factor_p)

lu_factor: Callable[..., Any] = lu_factor_p.bind


# --- expm(a), expm_frechet(a, e) ------------------------------------------------------------------


@cached_aval
def _expm_aval(a: ShapedArray) -> ShapedArray:
    _check_square(a, "expm")
    return ShapedArray(a.shape, inexact_dtype(a.dtype))


def _expm_impl(a: Any) -> np.ndarray:
    a = np.asarray(a)
    aval = _expm_aval(get_aval(a))
    if 0 in a.shape:
        return np.zeros(aval.shape, aval.dtype)
    return np.asarray(_scipy_linalg().expm(a), aval.dtype)


expm_p = Primitive("expm", numpy_only("expm", _expm_impl), _expm_aval)


def _expm_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    (a,), (da,) = primals, tangents
    return expm(a), expm_frechet(a, da)


jvp_rules[expm_p] = _expm_jvp
batching.defbatch_matrix_stacks(expm_p)


@cached_aval
def _expm_frechet_aval(a: ShapedArray, e: ShapedArray) -> ShapedArray:
    _check_square(a, "expm_frechet")
    _check_square(e, "expm_frechet")
    if a.shape[-1] != e.shape[-1]:
        raise ValueError(
            f"expm_frechet: expected A and E of the same size, got shapes {a.shape} and {e.shape}"
        )
    stack = broadcast_shapes(a.shape[:-2], e.shape[:-2])
    return ShapedArray((*stack, *a.shape[-2:]), inexact_dtype(a.dtype, e.dtype))


def _expm_frechet_impl(a: Any, e: Any) -> np.ndarray:
    aval = _expm_frechet_aval(get_aval(a), get_aval(e))
    if 0 in aval.shape:
        return np.zeros(aval.shape, aval.dtype)
    a, e = np.broadcast_arrays(np.asarray(a, aval.dtype), np.asarray(e, aval.dtype))
    out = _scipy_linalg().expm_frechet(a, e, compute_expm=False, check_finite=False)
    return np.asarray(out, aval.dtype)  # SciPy computes in double precision


expm_frechet_p = Primitive("expm_frechet", numpy_only("expm_frechet", _expm_frechet_impl), _expm_frechet_aval)


def _block_upper(a: Any, e: Any) -> Any:
    """The block matrices [[a, e], [0, a]] (of stacks broadcast together)."""
    aval = _expm_frechet_aval(get_aval(a), get_aval(e))
    a, e = d.fit_to(a, aval), d.fit_to(e, aval)
    nd = aval.ndim
    top = shapes.concatenate(a, e, axis=nd - 1)
    bottom = shapes.concatenate(d.zeros(aval), a, axis=nd - 1)
    return shapes.concatenate(top, bottom, axis=nd - 2)


def _expm_frechet_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    # L(a, e) is the upper-right block of expm([[a, e], [0, a]]), so its
    # tangent is that block of L([[a, e], [0, a]], [[da, de], [0, da]]).
    (a, e), (da, de) = primals, tangents
    out = expm_frechet(a, e)
    if da is None:
        return out, d.fit_to(expm_frechet(a, de), out)
    n = get_aval(a).shape[-1]
    de = d.zeros_like_value(e) if de is None else de
    big = expm_frechet(_block_upper(a, e), _block_upper(da, de))
    nd = get_aval(big).ndim
    upper_right = indexing.StaticIndex((slice(None),) * (nd - 2) + (slice(0, n), slice(n, 2 * n)))
    corner = indexing.getitem(big, idx=upper_right)
    return out, d.fit_to(corner, out)


jvp_rules[expm_frechet_p] = _expm_frechet_jvp


def _expm_frechet_transpose(ct: Any, a: Any, e: Any) -> list[Any]:
    # <ct, a^j e a^k> = <(a^T)^j ct (a^T)^k, e>: the transpose is L at a^T.
    assert not d.is_linear(a), "expm_frechet is linear in its direction E only"
    return [None, d.unbroadcast(expm_frechet(_mT(a), ct), e.aval)]


transpose_rules[expm_frechet_p] = _expm_frechet_transpose
batching.defbatch_matrix_stacks(expm_frechet_p)

expm: Callable[..., Any] = expm_p.bind
expm_frechet: Callable[..., Any] = expm_frechet_p.bind
