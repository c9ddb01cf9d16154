"""Sliding windows: `window_patches` (im2col) and its transpose `window_fold` (col2im).

`window_patches(x, axes=..., ...)` gives every window of `x` over the axes
`axes`, XLA's windows as convolutions and `reduce_window` see them: `x` is
dilated (``base_dilation - 1`` zeros between neighbours), padded with zeros
(`padding`, one ``(low, high)`` pair per axis; negative crops), and a window
of `window_dimensions` elements, each `window_dilation` apart, slides over it
in steps of `window_strides`. The result has `x`'s shape with each of `axes`
replaced by the number of window positions along it, followed by one axis
per entry of `axes` for the position inside the window:
``(..., out_0, ..., out_k, ..., w_0, ..., w_k)``. On NumPy it is a view
(`sliding_window_view`), so taking patches costs no copy.

It is linear. Its transpose `window_fold` adds every window back onto the
positions it was taken from (overlaps summed, padding dropped), and
`window_patches` is in turn the transpose of `window_fold`: derivatives of
any order stay within the pair. Convolutions (an einsum of patches with a
kernel) and windowed reductions (a reduction over the window axes) are
written on them in fgrad/lax, so their derivatives are einsum's and the
reductions' rules, already tested.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, cached_aval, get_aval
from ..core.libraries import cast
from ..core.rules import batch_rules, transpose_rules
from ..core.trace import Primitive
from . import batching
from . import derivatives as d

__all__ = ["window_patches", "window_fold", "window_shape", "dilate_dim", "patches_mask"]


def dilate_dim(n: int, dilation: int) -> int:
    """The size of `n` elements with `dilation - 1` holes between neighbours."""
    return 0 if n == 0 else 1 + dilation * (n - 1)


def window_shape(
    shape: Sequence[int],
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    base_dilation: Sequence[int],
    window_dilation: Sequence[int],
) -> tuple[int, ...]:
    """The number of window positions along each axis of `shape` (one entry of
    the other arguments per axis). ValueError for padding that crops more than
    the axis has."""
    out = []
    for n, w, s, (lo, hi), bd, wd in zip(shape, window_dimensions, window_strides, padding, base_dilation,
                                         window_dilation):
        padded = dilate_dim(n, bd) + lo + hi
        if padded < 0:
            raise ValueError(
                f"negative padding {(lo, hi)} is larger than the size {dilate_dim(n, bd)} of the "
                "(dilated) axis it crops; use less negative padding"
            )
        out.append(max(0, (padded - dilate_dim(w, wd)) // s + 1))
    return tuple(out)


def _check_params(
    ndim: int,
    axes: tuple[int, ...],
    window_dimensions: tuple[int, ...],
    window_strides: tuple[int, ...],
    padding: tuple[tuple[int, int], ...],
    base_dilation: tuple[int, ...],
    window_dilation: tuple[int, ...],
) -> None:
    if len(set(axes)) != len(axes) or any(not 0 <= a < ndim for a in axes):
        raise ValueError(f"window axes {axes} must be distinct axes of an array of dimension {ndim}")
    k = len(axes)
    given: dict[str, tuple[Any, ...]] = {
        "window_dimensions": window_dimensions, "window_strides": window_strides, "padding": padding,
        "base_dilation": base_dilation, "window_dilation": window_dilation}
    for name, value in given.items():
        if len(value) != k:
            raise ValueError(f"{name} {value} must have one entry per window axis {axes} ({k})")
    for name in ("window_dimensions", "window_strides", "base_dilation", "window_dilation"):
        if any(int(n) < 1 for n in given[name]):
            raise ValueError(f"{name} must be positive integers, got {given[name]}")


def _out_aval_shape(shape: tuple[int, ...], axes: tuple[int, ...], params: dict[str, Any]) -> tuple[int, ...]:
    """The shape of the patches of an array of `shape`."""
    sizes = window_shape([shape[a] for a in axes], params["window_dimensions"], params["window_strides"],
                         params["padding"], params["base_dilation"], params["window_dilation"])
    out = list(shape)
    for a, n in zip(axes, sizes):
        out[a] = n
    return (*out, *params["window_dimensions"])


@cached_aval
def _patches_aval(x: ShapedArray, *, axes: tuple[int, ...], **params: Any) -> ShapedArray:
    _check_params(x.ndim, axes, **params)
    return ShapedArray(_out_aval_shape(x.shape, axes, params), x.dtype)


# --- NumPy: dilation and padding in one buffer, windows as a view ------------------------
# "Extended" coordinates: the dilated axis with its positive padding on either
# side. Negative padding then crops the extended array.


def _extended(n: int, pad: tuple[int, int], bd: int) -> tuple[int, slice, slice]:
    """The extended size of an axis of `n` elements, where its elements sit in
    it, and the part of it that the (cropping) padding keeps."""
    lo, hi = pad
    dil = dilate_dim(n, bd)
    size = dil + max(lo, 0) + max(hi, 0)
    return size, slice(max(lo, 0), max(lo, 0) + dil, bd), slice(max(-lo, 0), size - max(-hi, 0))


def _layout(shape: tuple[int, ...], axes: tuple[int, ...], padding: Any, base_dilation: Any
            ) -> tuple[list[int], tuple[slice, ...], tuple[slice, ...]]:
    full, where, kept = list(shape), [slice(None)] * len(shape), [slice(None)] * len(shape)
    for a, pad, bd in zip(axes, padding, base_dilation):
        full[a], where[a], kept[a] = _extended(shape[a], pad, bd)
    return full, tuple(where), tuple(kept)


def _window_slices(ndim: int, axes: tuple[int, ...], offset: tuple[int, ...], sizes: tuple[int, ...],
                   window_strides: Any, window_dilation: Any) -> tuple[slice, ...]:
    """The positions (in padded coordinates) that element `offset` of each window reads."""
    index = [slice(None)] * ndim
    for a, k, n, s, wd in zip(axes, offset, sizes, window_strides, window_dilation):
        start = k * wd
        index[a] = slice(start, start + (n - 1) * s + 1, s)
    return tuple(index)


def _patches_impl(x: Any, *, axes: tuple[int, ...], window_dimensions: tuple[int, ...],
                  window_strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                  base_dilation: tuple[int, ...], window_dilation: tuple[int, ...]) -> Any:
    x = np.asarray(x)
    out_shape = _patches_aval(get_aval(x), axes=axes, window_dimensions=window_dimensions,
                              window_strides=window_strides, padding=padding, base_dilation=base_dilation,
                              window_dilation=window_dilation).shape
    if not axes:
        return x
    if any(pad != (0, 0) for pad in padding) or any(bd != 1 for bd in base_dilation):
        full, where, kept = _layout(x.shape, axes, padding, base_dilation)
        buffer = np.zeros(full, x.dtype)
        buffer[where] = x
        x = buffer[kept]
    if 0 in out_shape:
        return np.zeros(out_shape, x.dtype)
    spans = tuple(dilate_dim(w, wd) for w, wd in zip(window_dimensions, window_dilation))
    view = np.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)
    index = [slice(None)] * x.ndim
    for a, s in zip(axes, window_strides):
        index[a] = slice(None, None, s)
    key = (*index, *(slice(None, None, wd) for wd in window_dilation))
    return view[key]


# --- the implementation on a namespace -------------------------------------------------
# The standard's functions only: dilation by stacking zeros beside each
# element, padding by concatenating zeros, each window element a strided
# slice, the patches stacked from them; folding places each window element's
# cotangent back (dilated by the stride, padded into place) and sums.


def _library_dilate_pad(xp: Any, x: Any, axes: tuple[int, ...], padding: Any, base_dilation: Any) -> Any:
    for a, (lo, hi), bd in zip(axes, padding, base_dilation):
        x = _library_dilate(xp, x, a, bd)
        x = _library_pad(xp, x, a, lo, hi)
    return x


def _library_dilate(xp: Any, x: Any, axis: int, factor: int) -> Any:
    n = x.shape[axis]
    if factor == 1 or n == 0:
        return x
    holes = xp.zeros((*x.shape[:axis + 1], factor - 1, *x.shape[axis + 1:]), dtype=x.dtype)
    x = xp.concat([xp.expand_dims(x, axis=axis + 1), holes], axis=axis + 1)
    x = xp.reshape(x, (*x.shape[:axis], n * factor, *x.shape[axis + 2:]))
    return _library_slice(xp, x, axis, 0, dilate_dim(n, factor))


def _library_slice(xp: Any, x: Any, axis: int, start: int, stop: int, step: int = 1) -> Any:
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop, step)
    return x[tuple(index)]


def _library_pad(xp: Any, x: Any, axis: int, lo: int, hi: int) -> Any:
    n = x.shape[axis]
    x = _library_slice(xp, x, axis, max(-lo, 0), n - max(-hi, 0))
    parts = [x]
    if lo > 0:
        parts.insert(0, xp.zeros((*x.shape[:axis], lo, *x.shape[axis + 1:]), dtype=x.dtype))
    if hi > 0:
        parts.append(xp.zeros((*x.shape[:axis], hi, *x.shape[axis + 1:]), dtype=x.dtype))
    return parts[0] if len(parts) == 1 else xp.concat(parts, axis=axis)


def _patches(xp: Any, x: Any, *, axes: tuple[int, ...], **params: Any) -> Any:
    aval = _patches_aval(get_aval(x), axes=axes, **params)
    x = cast(xp, x, aval.dtype)
    if 0 in aval.shape:
        return xp.zeros(aval.shape, dtype=x.dtype)
    x = _library_dilate_pad(xp, x, axes, params["padding"], params["base_dilation"])
    sizes = tuple(aval.shape[a] for a in axes)
    windows = params["window_dimensions"]
    elements = [x[_window_slices(x.ndim, axes, offset, sizes, params["window_strides"],
                                 params["window_dilation"])]
                for offset in itertools.product(*(range(w) for w in windows))]
    stacked = xp.stack(elements, axis=-1)
    return xp.reshape(stacked, aval.shape)


def _fold(xp: Any, ct: Any, *, shape: tuple[int, ...], axes: tuple[int, ...], **params: Any) -> Any:
    aval = _fold_aval(get_aval(ct), shape=shape, axes=axes, **params)
    ct = cast(xp, ct, aval.dtype)
    ndim = len(shape)
    windows = params["window_dimensions"]
    padded = [dilate_dim(shape[a], bd) + lo + hi
              for a, (lo, hi), bd in zip(axes, params["padding"], params["base_dilation"])]
    if 0 in ct.shape:
        return xp.zeros(shape, dtype=ct.dtype)
    flat = xp.reshape(ct, (*ct.shape[:ndim], math.prod(windows)))
    total = flat[..., 0]  # replaced by the first element's part
    for k, offset in enumerate(itertools.product(*(range(w) for w in windows))):
        part = flat[..., k]
        steps = zip(axes, offset, params["window_strides"], params["window_dilation"], padded)
        for a, j, s, wd, size in steps:
            part = _library_dilate(xp, part, a, s)
            start = j * wd
            part = _library_pad(xp, part, a, start, size - start - part.shape[a])
        total = part if k == 0 else total + part
    for a, (lo, hi), bd in zip(axes, params["padding"], params["base_dilation"]):
        # undo the padding, then keep the positions of the elements (not the holes)
        total = _library_pad(xp, total, a, -lo, -hi)
        total = _library_slice(xp, total, a, 0, total.shape[a], bd)
    return total


window_patches_p = Primitive("window_patches", _patches, _patches_aval, numpy=_patches_impl)
d.deflinear(window_patches_p)


@cached_aval
def _fold_aval(ct: ShapedArray, *, shape: tuple[int, ...], axes: tuple[int, ...], **params: Any
               ) -> ShapedArray:
    _check_params(len(shape), axes, **params)
    expected = _out_aval_shape(shape, axes, params)
    if ct.shape != expected:
        raise ValueError(f"window_fold: patches of shape {ct.shape} do not fit an array of shape {shape} "
                         f"(its patches have shape {expected})")
    return ShapedArray(shape, ct.dtype)


def _fold_impl(ct: Any, *, shape: tuple[int, ...], axes: tuple[int, ...], window_dimensions: tuple[int, ...],
               window_strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
               base_dilation: tuple[int, ...], window_dilation: tuple[int, ...]) -> Any:
    ct = np.asarray(ct)
    _fold_aval(get_aval(ct), shape=shape, axes=axes, window_dimensions=window_dimensions,
               window_strides=window_strides, padding=padding, base_dilation=base_dilation,
               window_dilation=window_dilation)
    full, where, kept = _layout(shape, axes, padding, base_dilation)
    buffer = np.zeros(full, ct.dtype)
    padded = buffer[kept]  # a view: adding into it adds into the buffer
    ndim = len(shape)
    sizes = tuple(ct.shape[a] for a in axes)
    if 0 not in ct.shape:
        for offset in itertools.product(*(range(w) for w in window_dimensions)):
            # one window element at a time: its positions are distinct, so `+=` adds each once
            element = (Ellipsis, *offset)
            padded[_window_slices(ndim, axes, offset, sizes, window_strides, window_dilation)] += ct[element]
    return buffer[where]


window_fold_p = Primitive("window_fold", _fold, _fold_aval, numpy=_fold_impl)
d.deflinear(window_fold_p)

window_patches: Callable[..., Any] = window_patches_p.bind
window_fold: Callable[..., Any] = window_fold_p.bind


def _patches_transpose(ct: Any, x: Any, *, axes: tuple[int, ...], **params: Any) -> list[Any]:
    return [window_fold(ct, shape=x.aval.shape, axes=axes, **params)]


def _fold_transpose(ct: Any, patches: Any, *, shape: tuple[int, ...], axes: tuple[int, ...], **params: Any
                    ) -> list[Any]:
    return [window_patches(ct, axes=axes, **params)]


transpose_rules[window_patches_p] = _patches_transpose
transpose_rules[window_fold_p] = _fold_transpose


def _patches_batch(args: list[Any], dims: list[Any], *, axes: tuple[int, ...], **params: Any
                   ) -> tuple[Any, int]:
    # The batch axis is not a window axis: it keeps its place among the leading axes.
    (x,), (dim,) = args, dims
    return window_patches(x, axes=tuple(batching.batched_axis(a, dim) for a in axes), **params), dim


def _fold_batch(args: list[Any], dims: list[Any], *, shape: tuple[int, ...], axes: tuple[int, ...],
                **params: Any) -> tuple[Any, int]:
    (ct,), (dim,) = args, dims
    if dim >= len(shape):  # among the window axes: to the front
        ct, dim = batching.move_axis(ct, dim, 0), 0
    size = get_aval(ct).shape[dim]
    return window_fold(ct, shape=(*shape[:dim], size, *shape[dim:]),
                       axes=tuple(batching.batched_axis(a, dim) for a in axes), **params), dim


batch_rules[window_patches_p] = _patches_batch
batch_rules[window_fold_p] = _fold_batch


def patches_mask(shape: tuple[int, ...], axes: tuple[int, ...], **params: Any) -> np.ndarray:
    """Where the patches of an array of `shape` hold its elements (True) rather
    than padding or dilation holes (False): a constant, computed now, of size 1
    along the axes that are not windowed (it broadcasts against the patches)."""
    small = tuple(n if a in axes else 1 for a, n in enumerate(shape))
    return np.ascontiguousarray(_patches_impl(np.ones(small, bool), axes=axes, **params))
