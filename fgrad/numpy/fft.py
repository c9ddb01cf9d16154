"""fgrad.numpy.fft: NumPy's discrete Fourier transforms, differentiable and traceable.

The transforms (fft, ifft, rfft, irfft, hfft, ihfft and their 2-d and n-d
variants) have NumPy's signatures, values and dtypes (NumPy 2: complex64
for float32 input). Each is one `fft` primitive (`fgrad.primitives.fft`)
on its input cut or zero-padded to `n` or `s` here, as NumPy does, so that
the derivative sees that too; hfft and ihfft are irfft and rfft of the
conjugate in the other direction, as in NumPy. Axes given twice to an n-d
transform are transformed again, one axis at a time, in NumPy's order.
fftshift and ifftshift are `roll`; fftfreq and rfftfreq are NumPy's
constants, with a derivative in the sample spacing `d` when it is traced.

>>> import fgrad, fgrad.numpy as fnp
>>> fgrad.grad(lambda x: fnp.fft.fft(x)[0].real)(np.ones(3))  # the zero frequency sums x
array([1., 1., 1.])
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import numpy as np

from ..core.trace import Tracer
from ..primitives import elementwise as ew
from ..primitives import fft as fp
from . import shaping
from .operands import Array, ArrayLike, check_no_out, numpy_when_eager, operand, shape_of, static_argument

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
    "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq",
]

#: NumPy's normalizations: None and "backward" scale the inverse transforms by 1/n,
#: "forward" the forward ones, "ortho" both by 1/sqrt(n).
Norm: TypeAlias = Literal["backward", "ortho", "forward"] | None


# --- arguments ---------------------------------------------------------------------------


def _norm(norm: Norm) -> str:
    """`norm` as the primitive's parameter: None is "backward"; NumPy's ValueError otherwise."""
    if norm is None:
        return "backward"
    if norm not in fp.NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _swapped(norm: Norm) -> str:
    """The norm of the other direction (hfft is an irfft, ihfft an rfft, of the conjugate)."""
    return fp.swap_direction(_norm(norm))


def _axis(axis: int, ndim: int) -> int:
    """`axis` as a non-negative int (NumPy's AxisError, an IndexError, on a 0-d array too)."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _lengths_and_axes(shape: tuple[int, ...], s: Any, axes: Any, inverse_real: bool
                      ) -> tuple[list[int | None], list[int]]:
    """NumPy's lengths and axes of an n-d transform (its `_cook_nd_args`, warnings
    included): None in the lengths is a 1-d transform's default."""
    # The warnings are the caller's: past _n_d, fftn (say) and numpy_when_eager's frame.
    ndim = len(shape)
    if axes is not None:
        axes = [_axis(a, ndim) for a in axes]
    if s is None:
        lengths: list[int | None] = list(shape) if axes is None else [shape[a] for a in axes]
    else:
        lengths = [None if n is None else operator.index(n) for n in s]
        if axes is None:
            warnings.warn(
                "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future "
                "version of NumPy, this will raise an error and `s[i]` will correspond to the size along "
                "the transformed axis specified by `axes[i]`. To retain current behaviour, pass a sequence "
                "[0, ..., k-1] to `axes` for an array of dimension k.", DeprecationWarning, stacklevel=5)
    if axes is None:
        axes = [_axis(a, ndim) for a in range(-len(lengths), 0)]
    if len(lengths) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if inverse_real and s is None and axes:
        lengths[-1] = None
    if None in lengths and s is not None:
        warnings.warn(
            "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 and will raise an "
            "error in a future version of NumPy. To use the default behaviour of the corresponding 1-D "
            "transform, pass the value matching the default for its `n` parameter. To use the default "
            "behaviour for every axis, the `s` argument can be omitted.", DeprecationWarning, stacklevel=5)
    return [shape[a] if n == -1 else n for n, a in zip(lengths, axes)], axes


# --- the transforms on the primitive -------------------------------------------------------


def _transform(x: Any, fft_type: str, lengths: Sequence[int | None], axes: Sequence[int], norm: str) -> Any:
    """The `fft_type` transform of `x` over `axes` (non-negative, in NumPy's order)
    with NumPy's `lengths` (None: the length of the axis, or for irfft's last
    axis twice its length less one): the input cut or padded, then one primitive."""
    if len(set(axes)) < len(axes):
        return _one_axis_at_a_time(x, fft_type, lengths, axes, norm)
    shape = shape_of(x)
    resolved = []
    for i, (a, n) in enumerate(zip(axes, lengths)):
        halved = fft_type == "irfft" and i == len(axes) - 1  # irfft's input: half the spectrum
        if n is None:
            n = 2 * (shape[a] - 1) if halved else shape[a]
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
        x = fp.crop_or_pad(x, a, fp.half_length(n) if halved else n)
        resolved.append(n)
    return fp.fft(x, fft_type=fft_type, axes=tuple(axes), lengths=tuple(resolved), norm=norm)


def _one_axis_at_a_time(x: Any, fft_type: str, lengths: Sequence[int | None], axes: Sequence[int],
                        norm: str) -> Any:
    """An n-d transform with an axis given twice, as NumPy computes it: 1-d
    transforms in turn, each cutting or padding what the one before gave."""
    pairs = list(zip(lengths, axes))
    if fft_type in ("fft", "ifft"):
        steps = [(fft_type, pair) for pair in reversed(pairs)]
    elif fft_type == "rfft":
        steps = [("rfft", pairs[-1])] + [("fft", pair) for pair in reversed(pairs[:-1])]
    else:
        steps = [("ifft", pair) for pair in pairs[:-1]] + [("irfft", pairs[-1])]
    for kind, (n, a) in steps:
        x = _transform(x, kind, [n], [a], norm)
    return x


def _one_d(fft_type: str, name: str, a: ArrayLike, n: int | None, axis: int, norm: str, out: Any) -> Any:
    check_no_out(out, f"fft.{name}")
    x = operand(a)
    axis = _axis(axis, len(shape_of(x)))
    n = static_argument(n, f"fft.{name}", "n")
    return _transform(x, fft_type, [None if n is None else operator.index(n)], [axis], norm)


def _n_d(fft_type: str, name: str, a: ArrayLike, s: Sequence[int] | None, axes: Sequence[int] | None,
         norm: Norm, out: Any) -> Any:
    check_no_out(out, f"fft.{name}")
    x = operand(a)
    s = static_argument(s, f"fft.{name}", "s")
    scaling = _norm(norm)
    lengths, axes = _lengths_and_axes(shape_of(x), s, axes, fft_type == "irfft")
    if not axes:
        if fft_type in ("rfft", "irfft"):
            raise IndexError(f"fgrad.numpy.fft.{name} needs at least one axis to transform, got none")
        return x  # NumPy returns its input unchanged
    return _transform(x, fft_type, lengths, axes, scaling)


# --- one axis ------------------------------------------------------------------------------


@numpy_when_eager(np.fft.fft)
def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
        out: Any = None) -> Array:
    """numpy.fft.fft: the discrete Fourier transform along `axis`, the input cut or
    zero-padded to `n`.

    >>> fft(np.array([1.0, 0.0, 0.0, 0.0]))
    array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _one_d("fft", "fft", a, n, axis, _norm(norm), out)


@numpy_when_eager(np.fft.ifft)
def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
         out: Any = None) -> Array:
    """numpy.fft.ifft: the inverse discrete Fourier transform along `axis`.

    >>> ifft(np.array([4.0, 0.0, 0.0, 0.0]))
    array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _one_d("ifft", "ifft", a, n, axis, _norm(norm), out)


@numpy_when_eager(np.fft.rfft)
def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
         out: Any = None) -> Array:
    """numpy.fft.rfft: the transform of a real signal, its n // 2 + 1 non-negative frequencies.

    >>> rfft(np.array([1.0, 1.0, 1.0, 1.0]))
    array([4.+0.j, 0.+0.j, 0.+0.j])
    """
    return _one_d("rfft", "rfft", a, n, axis, _norm(norm), out)


@numpy_when_eager(np.fft.irfft)
def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
          out: Any = None) -> Array:
    """numpy.fft.irfft: the real signal of length `n` (default 2 * (m - 1)) whose rfft
    is `a`; the imaginary parts of the frequencies without a twin are ignored.

    >>> irfft(np.array([4.0, 0.0, 0.0]))
    array([1., 1., 1., 1.])
    """
    return _one_d("irfft", "irfft", a, n, axis, _norm(norm), out)


@numpy_when_eager(np.fft.hfft)
def hfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
         out: Any = None) -> Array:
    """numpy.fft.hfft: the (real) transform of a signal with Hermitian symmetry, given
    by its first half: irfft of the conjugate, scaled the other way.

    >>> hfft(np.array([1.0, 0.0, 0.0]))
    array([1., 1., 1., 1.])
    """
    return _one_d("irfft", "hfft", ew.conj(operand(a)), n, axis, _swapped(norm), out)


@numpy_when_eager(np.fft.ihfft)
def ihfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
          out: Any = None) -> Array:
    """numpy.fft.ihfft: the inverse of hfft, the conjugate of rfft scaled the other way.

    >>> ihfft(np.array([1.0, 1.0, 1.0, 1.0]))
    array([1.-0.j, 0.-0.j, 0.-0.j])
    """
    return ew.conj(_one_d("rfft", "ihfft", a, n, axis, _swapped(norm), out))


# --- several axes --------------------------------------------------------------------------


@numpy_when_eager(np.fft.fftn)
def fftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.fftn: the transform over `axes` (all by default), each cut or padded to `s`.

    >>> fftn(np.ones((2, 2)))
    array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]])
    """
    return _n_d("fft", "fftn", a, s, axes, norm, out)


@numpy_when_eager(np.fft.ifftn)
def ifftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.ifftn: the inverse transform over `axes` (all by default).

    >>> ifftn(np.array([[4.0, 0.0], [0.0, 0.0]])).real
    array([[1., 1.],
           [1., 1.]])
    """
    return _n_d("ifft", "ifftn", a, s, axes, norm, out)


@numpy_when_eager(np.fft.rfftn)
def rfftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.rfftn: the transform of a real array, halved along the last of `axes`.

    >>> rfftn(np.ones((2, 2))).shape
    (2, 2)
    """
    return _n_d("rfft", "rfftn", a, s, axes, norm, out)


@numpy_when_eager(np.fft.irfftn)
def irfftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.irfftn: the real array of shape `s` whose rfftn is `a`.

    >>> irfftn(np.array([[4.0, 0.0], [0.0, 0.0]]))
    array([[1., 1.],
           [1., 1.]])
    """
    return _n_d("irfft", "irfftn", a, s, axes, norm, out)


@numpy_when_eager(np.fft.fft2)
def fft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
         norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.fft2: fftn over the last two axes.

    >>> fft2(np.ones((2, 2)))[0, 0]
    np.complex128(4+0j)
    """
    return _n_d("fft", "fft2", a, s, axes, norm, out)


@numpy_when_eager(np.fft.ifft2)
def ifft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
          norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.ifft2: ifftn over the last two axes.

    >>> ifft2(np.full((2, 2), 4.0))[0, 0]
    np.complex128(4+0j)
    """
    return _n_d("ifft", "ifft2", a, s, axes, norm, out)


@numpy_when_eager(np.fft.rfft2)
def rfft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
          norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.rfft2: rfftn over the last two axes.

    >>> rfft2(np.ones((2, 4))).shape
    (2, 3)
    """
    return _n_d("rfft", "rfft2", a, s, axes, norm, out)


@numpy_when_eager(np.fft.irfft2)
def irfft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
           norm: Norm = None, out: Any = None) -> Array:
    """numpy.fft.irfft2: irfftn over the last two axes.

    >>> irfft2(np.ones((2, 3))).shape
    (2, 4)
    """
    return _n_d("irfft", "irfft2", a, s, axes, norm, out)


# --- helpers ----------------------------------------------------------------------------


def _shifts(shape: tuple[int, ...], axes: int | Sequence[int] | None, sign: int) -> tuple[Any, Any]:
    """NumPy's shifts and axes of fftshift (sign -1: ifftshift) for an array of `shape`."""
    if axes is None:
        return [sign * (n // 2) for n in shape], tuple(range(len(shape)))
    if isinstance(axes, (int, np.integer)):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[a] // 2) for a in axes], axes


@numpy_when_eager(np.fft.fftshift)
def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """numpy.fft.fftshift: the zero frequency moved to the centre (a roll of each axis by half).

    >>> fftshift(np.fft.fftfreq(4))
    array([-0.5 , -0.25,  0.  ,  0.25])
    """
    x = operand(x)
    shift, axes = _shifts(shape_of(x), axes, 1)
    return shaping.roll(x, shift, axes)


@numpy_when_eager(np.fft.ifftshift)
def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """numpy.fft.ifftshift: the inverse of fftshift (they differ for odd lengths).

    >>> ifftshift(np.array([-0.5, -0.25, 0.0, 0.25]))
    array([ 0.  ,  0.25, -0.5 , -0.25])
    """
    x = operand(x)
    shift, axes = _shifts(shape_of(x), axes, -1)
    return shaping.roll(x, shift, axes)


def _sample_count(n: Any, name: str) -> int:
    n = static_argument(n, f"fft.{name}", "n")
    if not isinstance(n, (int, np.integer)):
        raise ValueError("n should be an integer")
    return int(n)


def _check_device(device: Any, name: str) -> None:
    if device not in (None, "cpu"):
        raise ValueError(f"fgrad.numpy.fft.{name}: device must be None or 'cpu', not {device!r}")


def fftfreq(n: int, d: ArrayLike = 1.0, device: Literal["cpu"] | None = None) -> Array:
    """numpy.fft.fftfreq: the frequencies of fft's results for `n` samples spaced `d`
    apart (d may be traced: the frequencies are k / (n d)).

    >>> fftfreq(4, d=0.5)
    array([ 0. ,  0.5, -1. , -0.5])
    """
    n = _sample_count(n, "fftfreq")
    if not isinstance(d, Tracer):
        return np.fft.fftfreq(n, d, device=device)
    _check_device(device, "fftfreq")
    count = np.concatenate((np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)))  # NumPy's order
    return count * (1.0 / (n * d))


def rfftfreq(n: int, d: ArrayLike = 1.0, device: Literal["cpu"] | None = None) -> Array:
    """numpy.fft.rfftfreq: the frequencies of rfft's results for `n` samples spaced `d` apart.

    >>> rfftfreq(4)
    array([0.  , 0.25, 0.5 ])
    """
    n = _sample_count(n, "rfftfreq")
    if not isinstance(d, Tracer):
        return np.fft.rfftfreq(n, d, device=device)
    _check_device(device, "rfftfreq")
    return np.arange(0, n // 2 + 1, dtype=int) * (1.0 / (n * d))
