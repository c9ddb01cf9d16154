"""The discrete Fourier transform: one primitive, `fft`, as JAX's `lax.fft`.

``fft(x, fft_type=..., axes=..., lengths=..., norm=...)`` transforms `x` over
`axes` (distinct, non-negative, in NumPy's order: the last is the real axis of
the real transforms), `lengths` being the lengths of the transforms:

| fft_type | input along axes | result along axes | NumPy |
|---|---|---|---|
| fft, ifft | lengths, any dtype | lengths, complex | fftn, ifftn |
| rfft | lengths, real | the last n // 2 + 1 (n = lengths[-1]), complex | rfftn |
| irfft | the last n // 2 + 1, any dtype | lengths, real | irfftn |

The operand already has those lengths: NumPy's cropping and zero-padding to
`n` or `s` is done by the NumPy layer with getitem and concatenate, so that
their derivatives are theirs. `norm` is "backward", "ortho" or "forward", as
NumPy's. Values and dtypes are NumPy's (complex64 for float32, float16 and
complex64; the real results of irfft have the input's precision).

Every transform is linear: the jvp is the transform of the tangent. The
transposes follow JAX's convention for complex numbers (cotangents are not
conjugated, see `elementwise`): fft and ifft are their own transposes (the
DFT matrix is symmetric). rfft is the complex fft of the real input, cut to
the non-redundant half: its transpose pads the cotangent with zeros, takes its
fft and keeps the real part. irfft sums each non-redundant frequency with its
conjugate twin, so its transpose is the rfft of the cotangent with the twice
counted frequencies (all but the zero frequency and, for even n, the last)
doubled, conjugated; the norm of that rfft is the other direction's (its
scale, 1/n by default, is irfft's). A real input gets the real part of its
cotangent.

Batching moves the batch axis to the front: it is never transformed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..core.avals import ShapedArray, cached_aval, get_aval
from ..core.libraries import cast, is_dask, library_of_namespace
from ..core.rules import batch_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, indexing, shapes
from . import derivatives as d
from . import elementwise as ew

__all__ = ["fft", "FFT_TYPES", "NORMS", "swap_direction", "half_length", "crop_or_pad"]

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")
NORMS = ("backward", "ortho", "forward")


class _FFT(Protocol):
    def __call__(self, x: Any, /, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
                 norm: str) -> Any: ...


def swap_direction(norm: str) -> str:
    """The norm whose scale in the other direction is `norm`'s: backward and forward swap."""
    return {"backward": "forward", "ortho": "ortho", "forward": "backward"}[norm]


# --- values and shapes -------------------------------------------------------------------


_NUMPY_N_D: dict[str, Callable[..., Any]] = {
    "fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn,
}
_NUMPY_1_D: dict[str, Callable[..., Any]] = {
    "fft": np.fft.fft, "ifft": np.fft.ifft, "rfft": np.fft.rfft, "irfft": np.fft.irfft,
}


def _fft_impl(x: Any, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...], norm: str) -> Any:
    if len(axes) == 1:  # NumPy's 1-d function: the n-d one loops over it, with more overhead
        return _NUMPY_1_D[fft_type](x, lengths[0], axes[0], norm)
    return _NUMPY_N_D[fft_type](x, lengths, axes, norm)


@functools.cache
def _result_dtype(fft_type: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result dtype for an input of `dtype` (found on a sample, once per pair)."""
    return np.dtype(_NUMPY_1_D[fft_type](np.ones(2, dtype)).dtype)


def half_length(n: int) -> int:
    """The length of the non-redundant half of a real signal's transform of length n."""
    return n // 2 + 1


def _fft_aval(x: ShapedArray, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
              norm: str) -> ShapedArray:
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft: fft_type must be one of {FFT_TYPES}, not {fft_type!r}")
    if norm not in NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    if not axes or len(axes) != len(lengths) or len(set(axes)) != len(axes) or not all(
            0 <= a < x.ndim for a in axes):
        raise ValueError(f"fft: axes {axes} must be distinct axes of {x.str_short()}, one per length "
                         f"in {lengths}")
    if any(n < 1 for n in lengths):
        raise ValueError(f"Invalid number of FFT data points ({min(lengths)}) specified.")
    if fft_type == "rfft" and x.dtype.kind == "c":
        raise TypeError(f"rfft takes real input, but it got {x.str_short()}: use fft for complex input, "
                        "or take the real part first")
    expected = list(lengths)
    if fft_type == "irfft":
        expected[-1] = half_length(lengths[-1])
    got = [x.shape[a] for a in axes]
    if got != expected:
        raise ValueError(f"fft: an {fft_type} of lengths {lengths} over axes {axes} takes lengths "
                         f"{tuple(expected)} there, but the operand is {x.str_short()}")
    shape = list(x.shape)
    if fft_type == "rfft":
        shape[axes[-1]] = half_length(lengths[-1])
    elif fft_type == "irfft":
        shape[axes[-1]] = lengths[-1]
    return ShapedArray(tuple(shape), _result_dtype(fft_type, x.dtype))


# --- the implementation on a namespace -------------------------------------------------


def _fft(xp: Any, x: Any, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
                 norm: str) -> Any:
    """The standard's fft extension, `xp.fft`, which takes complex input for
    fft, ifft and irfft and real input for rfft: the operand is cast to the one
    that gives NumPy's result dtype. Dask transforms only along an axis held in
    one chunk: those axes are rechunked so, the others keep their chunks."""
    out = fft_p.abstract_eval(get_aval(x), fft_type=fft_type, axes=axes, lengths=lengths, norm=norm).dtype
    real = np.empty(0, out).real.dtype
    x = cast(xp, x, real if fft_type == "rfft" else np.result_type(out, np.complex64))
    module = getattr(xp, "fft", None)
    if module is None:
        library = library_of_namespace(xp).name
        raise NotImplementedError(
            f"the primitive `fft` has no implementation for arrays of {library} in fgrad: {library} has "
            f"no fft module (the Array API's fft extension). Convert the arrays to NumPy first."
        )
    if is_dask(xp):
        x = x.rechunk({a: -1 for a in axes})
    if len(axes) == 1:
        return getattr(module, fft_type)(x, n=lengths[0], axis=axes[0], norm=norm)
    return getattr(module, f"{fft_type}n")(x, s=lengths, axes=axes, norm=norm)


fft_p = Primitive("fft", _fft, cached_aval(_fft_aval), numpy=_fft_impl)
fft: _FFT = fft_p.bind


# --- forward and reverse mode ------------------------------------------------------------


def _padded(x: Any, axis: int, length: int) -> Any:
    """`x` with zeros appended along `axis` up to `length`."""
    shape = list(get_aval(x).shape)
    missing = length - shape[axis]
    if missing == 0:
        return x
    shape[axis] = missing
    return shapes.concatenate(x, d.zeros(ShapedArray(tuple(shape), get_aval(x).dtype)), axis=axis)


def crop_or_pad(x: Any, axis: int, length: int) -> Any:
    """`x` cut or zero-padded along `axis` to `length`, as NumPy's FFTs do to their input."""
    size = get_aval(x).shape[axis]
    if size > length:
        return indexing.getitem(x, idx=indexing.StaticIndex((slice(None),) * axis + (slice(0, length),)))
    return _padded(x, axis, length)


def _twin_weights(n: int, axis: int, ndim: int, dtype: np.dtype) -> np.ndarray:
    """1 for the frequencies of a real signal of length n that have no conjugate
    twin in the full spectrum (0, and n / 2 for even n), 2 for the others;
    shaped to multiply along `axis` of an array of rank `ndim`."""
    weights = np.full(half_length(n), 2.0, dtype)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    return weights.reshape([half_length(n) if i == axis else 1 for i in range(ndim)])


def _fft_transpose(ct: Any, x: Any, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
                   norm: str) -> list[Any]:
    assert d.is_linear(x), "fft has one operand, the linear one"
    if fft_type in ("fft", "ifft"):
        out = fft(ct, fft_type=fft_type, axes=axes, lengths=lengths, norm=norm)
    elif fft_type == "rfft":
        full = _padded(ct, axes[-1], lengths[-1])
        out = fft(full, fft_type="fft", axes=axes, lengths=lengths, norm=norm)
    else:
        half = fft(ct, fft_type="rfft", axes=axes, lengths=lengths, norm=swap_direction(norm))
        aval = get_aval(half)
        weights = _twin_weights(lengths[-1], axes[-1], aval.ndim, np.empty(0, aval.dtype).real.dtype)
        out = ew.conj(ew.mul(half, weights))
    if get_aval(out).dtype != x.aval.dtype:
        out = ew.convert_element_type(out, new_dtype=x.aval.dtype)  # a real input: the real part
    return [out]


d.deflinear(fft_p)
transpose_rules[fft_p] = _fft_transpose


# --- batching ----------------------------------------------------------------------------


def _fft_batch(args: list[Any], dims: list[Any], *, fft_type: str, axes: tuple[int, ...],
               lengths: tuple[int, ...], norm: str) -> tuple[Any, int]:
    x = batching.move_axis(args[0], dims[0], 0)
    return fft(x, fft_type=fft_type, axes=tuple(a + 1 for a in axes), lengths=lengths, norm=norm), 0


batch_rules[fft_p] = _fft_batch
