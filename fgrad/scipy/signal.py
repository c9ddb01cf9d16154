"""fgrad.scipy.signal: SciPy's convolutions and correlations, differentiable in
both inputs and traceable.

With no transform active the values are SciPy's own (an optional extra,
imported on first use). Under a transform every function is one gather of
the sliding windows of `in1` (its boundary extension included) and one
matrix product with `in2`, written on fgrad.numpy, so derivatives in both
inputs, vmap and jit come from those; `method` ('auto', 'direct', 'fft')
chooses SciPy's algorithm only, the traced computation is always direct.
Output shapes and alignment are SciPy's: 'same' has the shape of `in1`,
'valid' swaps the inputs when `in2` is the larger in every axis, and
correlate conjugates `in2`.

>>> import fgrad
>>> fgrad.grad(lambda k: convolve(np.array([1.0, 2.0, 3.0]), k, mode="valid")[0])(np.array([1.0, 1.0]))
array([2., 1.])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.avals import get_aval
from ..core.optional import require
from ..core.trace import EVAL_TRACE, ctx
from ..numpy.operands import Array, ArrayLike, operand, shape_of

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d"]

_MODES = ("full", "valid", "same")
_BOUNDARIES = {"fill": "fill", "pad": "fill", "wrap": "wrap", "circular": "wrap", "symm": "symm",
               "symmetric": "symm"}


def _signal() -> Any:
    return require("scipy.signal", "scipy", "fgrad.scipy.signal")


def _check_mode(mode: Any) -> str:
    if mode not in _MODES:
        raise ValueError(f"Acceptable mode flags are 'valid', 'same', or 'full', not mode={mode}")
    return str(mode)


def _check_method(method: Any) -> None:
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Acceptable method flags are 'auto', 'direct', or 'fft' (got method={method!r}).")


def _swap_needed(mode: str, shape1: tuple[int, ...], shape2: tuple[int, ...]) -> bool:
    """SciPy's rule: in 'valid' mode one input must be at least as large as the
    other in every axis, and the larger goes first."""
    if mode != "valid" or not shape1:
        return False
    ok1 = all(n >= m for n, m in zip(shape1, shape2))
    ok2 = all(m >= n for n, m in zip(shape1, shape2))
    if not (ok1 or ok2):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")
    return not ok1


def _extended_index(i: np.ndarray, n: int, boundary: str) -> np.ndarray:
    """Indices into an axis of length n of the boundary extension at positions `i`
    (-1 where the extension is the fill value)."""
    if boundary == "wrap":
        return i % n
    if boundary == "symm":  # mirrored with the edge repeated: ... 1 0 | 0 1 ... n-1 | n-1 n-2 ...
        j = i % (2 * n)
        return np.where(j >= n, 2 * n - 1 - j, j)
    return np.where((i >= 0) & (i < n), i, -1)


def _direct(x: Any, k: Any, starts: list[int], lengths: list[int], boundary: str = "fill",
            fillvalue: Any = 0) -> Any:
    """``out[r] = sum_j ext(x)[starts + r - j] * k[j]`` for r in the box `lengths`:
    a window of the extension of `x` (by `boundary`) for each output element,
    gathered at once, times `k` flattened."""
    dtype = np.result_type(get_aval(x).dtype, get_aval(k).dtype)
    x, k = fnp.astype(x, dtype), fnp.astype(k, dtype)
    n_shape, m_shape = shape_of(x), shape_of(k)
    nd = len(n_shape)
    size = math.prod(n_shape)
    flat = np.zeros((*lengths, *m_shape), np.intp)
    outside = np.zeros(flat.shape, bool)
    for axis, (n, m, start, length) in enumerate(zip(n_shape, m_shape, starts, lengths)):
        out_at, kernel_at = [1] * (2 * nd), [1] * (2 * nd)
        out_at[axis], kernel_at[nd + axis] = length, m
        positions = (start + np.arange(length)).reshape(out_at) - np.arange(m).reshape(kernel_at)
        index = _extended_index(positions, n, boundary) if n else np.full(positions.shape, -1)
        outside = outside | (index < 0)
        flat = flat + np.maximum(index, 0) * math.prod(n_shape[axis + 1:])
    flat = np.where(outside, size, flat)  # the fill value sits after the last element
    padded = fnp.concatenate([fnp.ravel(x), fnp.reshape(fnp.astype(fillvalue, dtype), (1,))])
    windows = fnp.reshape(padded[flat.reshape(-1)], (*lengths, math.prod(m_shape)))
    return fnp.matmul(windows, fnp.ravel(k))


def _window(mode: str, n_shape: tuple[int, ...], m_shape: tuple[int, ...],
            same_start: Any) -> tuple[list[int], list[int]]:
    """Where each mode's output starts in the full result, and its shape."""
    if mode == "full":
        return [0] * len(n_shape), [n + m - 1 for n, m in zip(n_shape, m_shape)]
    if mode == "same":
        return [same_start(m) for m in m_shape], list(n_shape)
    return [m - 1 for m in m_shape], [n - m + 1 for n, m in zip(n_shape, m_shape)]


def _flip_conj(x: Any) -> Any:
    x = fnp.flip(x)
    return fnp.conj(x) if get_aval(x).dtype.kind == "c" else x


# --- n-dimensional ---------------------------------------------------------------------------------


def convolve(in1: ArrayLike, in2: ArrayLike, mode: str = "full", method: str = "auto") -> Array:
    """scipy.signal.convolve: the n-dimensional convolution of `in1` and `in2`
    (of the same number of axes), mode 'full', 'valid' or 'same' (centered,
    the shape of `in1`).

    >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    _check_method(method)
    if ctx.trace is EVAL_TRACE:
        return _signal().convolve(in1, in2, mode=mode, method=method)
    in1, in2 = operand(in1), operand(in2)
    mode = _check_mode(mode)
    shape1, shape2 = shape_of(in1), shape_of(in2)
    if len(shape1) == len(shape2) == 0:
        return in1 * in2
    if len(shape1) != len(shape2):
        raise ValueError("volume and kernel should have the same dimensionality")
    if _swap_needed(mode, shape1, shape2):
        in1, in2, shape1, shape2 = in2, in1, shape2, shape1
    starts, lengths = _window(mode, shape1, shape2, lambda m: (m - 1) // 2)
    return _direct(in1, in2, starts, lengths)


def correlate(in1: ArrayLike, in2: ArrayLike, mode: str = "full", method: str = "auto") -> Array:
    """scipy.signal.correlate: the n-dimensional cross-correlation
    ``z[k] = sum_l in1[l] * conj(in2[l - k + N - 1])``, which is the convolution
    of `in1` with `in2` reversed and conjugated.

    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), mode="same")
    array([2. , 3.5, 3. ])
    """
    _check_method(method)
    if ctx.trace is EVAL_TRACE:
        return _signal().correlate(in1, in2, mode=mode, method=method)
    in1, in2 = operand(in1), operand(in2)
    mode = _check_mode(mode)
    shape1, shape2 = shape_of(in1), shape_of(in2)
    if len(shape1) == len(shape2) == 0:
        return in1 * _flip_conj(in2)
    if len(shape1) != len(shape2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    return convolve(in1, _flip_conj(in2), mode=mode, method=method)


# --- two-dimensional, with boundaries ------------------------------------------------------------


def _check_2d(in1: Any, in2: Any, name: str, mode: Any, boundary: Any, fillvalue: Any) -> str:
    if not len(shape_of(in1)) == len(shape_of(in2)) == 2:
        raise ValueError(f"{name} inputs must both be 2-D arrays")
    _check_mode(mode)
    if boundary not in _BOUNDARIES:
        raise ValueError(
            "Acceptable boundary flags are 'fill', 'circular' (or 'wrap'), and 'symmetric' (or 'symm')."
        )
    if math.prod(shape_of(fillvalue)) != 1:
        raise ValueError("`fillvalue` must be scalar or an array with one element.")
    return _BOUNDARIES[boundary]


def convolve2d(in1: ArrayLike, in2: ArrayLike, mode: str = "full", boundary: str = "fill",
               fillvalue: Any = 0) -> Array:
    """scipy.signal.convolve2d: the convolution of two 2-d arrays, `in1` extended
    past its edges by `boundary`: 'fill' (with `fillvalue`), 'wrap' (periodic)
    or 'symm' (mirrored, the edge repeated).

    >>> convolve2d(np.eye(2), np.ones((1, 2)))
    array([[1., 1., 0.],
           [0., 1., 1.]])
    """
    if ctx.trace is EVAL_TRACE:
        return _signal().convolve2d(in1, in2, mode=mode, boundary=boundary, fillvalue=fillvalue)
    in1, in2 = operand(in1), operand(in2)
    kind = _check_2d(in1, in2, "convolve2d", mode, boundary, fillvalue)
    if _swap_needed(mode, shape_of(in1), shape_of(in2)):
        in1, in2 = in2, in1
    starts, lengths = _window(mode, shape_of(in1), shape_of(in2), lambda m: (m - 1) // 2)
    return _direct(in1, in2, starts, lengths, kind, fnp.reshape(operand(fillvalue), ()))


def correlate2d(in1: ArrayLike, in2: ArrayLike, mode: str = "full", boundary: str = "fill",
                fillvalue: Any = 0) -> Array:
    """scipy.signal.correlate2d: the cross-correlation of two 2-d arrays (`in2`
    conjugated), `in1` extended past its edges by `boundary` as in convolve2d.
    As SciPy's, 'same' is centered on the correlation (for an even-sized
    `in2` one element off convolve2d's with `in2` reversed).

    >>> correlate2d(np.eye(2), np.ones((1, 2)))
    array([[1., 1., 0.],
           [0., 1., 1.]])
    """
    if ctx.trace is EVAL_TRACE:
        return _signal().correlate2d(in1, in2, mode=mode, boundary=boundary, fillvalue=fillvalue)
    in1, in2 = operand(in1), operand(in2)
    kind = _check_2d(in1, in2, "correlate2d", mode, boundary, fillvalue)
    if _swap_needed(mode, shape_of(in1), shape_of(in2)):  # SciPy: the larger first, the result reversed
        return fnp.flip(correlate2d(in2, in1, mode, boundary, fillvalue))
    starts, lengths = _window(mode, shape_of(in1), shape_of(in2), lambda m: m // 2)
    return _direct(in1, _flip_conj(in2), starts, lengths, kind, fnp.reshape(operand(fillvalue), ()))
