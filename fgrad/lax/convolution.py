"""Convolutions, as JAX's lax: `conv_general_dilated` and its wrappers `conv`,
`conv_with_general_padding`, `conv_transpose` and `conv_general_dilated_patches`,
with the shape and dimension-number helpers JAX programs (stax) call.

A convolution is XLA's: a cross-correlation (the kernel is not flipped) of
`lhs` dilated by `lhs_dilation`, then padded, with `rhs` dilated by
`rhs_dilation`, in steps of `window_strides`. It is computed as one einsum
of `lhs`'s patches (primitives/windows.py, a view of `lhs` on NumPy) with
the kernel, whatever the layout the dimension numbers give: the einsum's
letters say which axis is which, so nothing is transposed. Feature groups
(depthwise convolutions) and batch groups split an axis of each operand into
(group, rest), the group a letter they share.

So the derivatives are einsum's and the patches': the product rule; the
kernel's cotangent an einsum of the cotangent with the patches, the input's
the kernel's einsum with the cotangent folded back onto the input
(`window_fold`). Both are linear again, in a closed pair, so derivatives of
any order, vmap (einsum's batch letter) and jit come with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core.avals import get_aval
from ..numpy import shaping
from ..numpy.operands import Array, ArrayLike, operand, shape_of
from ..numpy.products import check_precision
from ..primitives import elementwise as ew
from ..primitives import linalg, shapes, windows
from .windowed import ints_of, pads_of, padtype_to_pads

__all__ = [
    "ConvDimensionNumbers", "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
    "conv_general_dilated_patches", "conv_dimension_numbers", "conv_general_permutations",
    "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
]


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution are
    (JAX's `lax.ConvDimensionNumbers`): `lhs_spec` is (batch, feature, spatial...)
    positions of the input, `rhs_spec` (out feature, in feature, spatial...) of the
    kernel, `out_spec` (batch, feature, spatial...) of the output.

    >>> import fgrad.lax
    >>> fgrad.lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


DimensionNumbers = Any  # None, a ConvDimensionNumbers, or three strings such as ("NCHW", "OIHW", "NCHW")


def conv_general_permutations(dimension_numbers: Sequence[str]
                              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The positions of (batch, feature, spatial...) in each of three layout strings
    (JAX's `lax.conv_general_permutations`); spatial dimensions in the kernel's order.

    >>> import fgrad.lax
    >>> fgrad.lax.conv_general_permutations(("NCHW", "OIHW", "NHWC"))
    ((0, 1, 2, 3), (0, 1, 2, 3), (0, 3, 1, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters {a!r} and {b!r} "
                            f"exactly once, got {spec!r}")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, "
                            f"got {spec!r}")
    if not set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}:
        raise TypeError(f"convolution dimension_numbers elements must each have the same set of spatial "
                        f"characters, got {tuple(dimension_numbers)}")

    def permutation(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        spatial = sorted((i for i, c in enumerate(spec) if c not in pair),
                         key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *spatial)

    lhs, rhs, out = (permutation(s, p) for s, p in zip(dimension_numbers, pairs))
    return lhs, rhs, out


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: DimensionNumbers) -> ConvDimensionNumbers:
    """`dimension_numbers` (None: NCHW, OIHW, NCHW; three layout strings; or
    ConvDimensionNumbers) as ConvDimensionNumbers (JAX's `lax.conv_dimension_numbers`).

    >>> import fgrad.lax
    >>> fgrad.lax.conv_dimension_numbers((1, 3, 5, 5), (8, 3, 3, 3), None)
    ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and "
                        f"{len(rhs_shape)} (shapes {tuple(lhs_shape)} and {tuple(rhs_shape)})")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(f"convolution dimension_numbers must be None, a ConvDimensionNumbers or three "
                        f"strings such as ('NCHW', 'OIHW', 'NCHW'), got {type(dimension_numbers).__name__}")
    if len(dimension_numbers) != 3 or not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers must be three strings such as "
                        f"('NCHW', 'OIHW', 'NCHW'), got {dimension_numbers!r}")
    for i, spec in enumerate(dimension_numbers):
        if len(spec) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and "
                            f"rhs, got {len(spec)} for lhs and rhs shapes {tuple(lhs_shape)} and "
                            f"{tuple(rhs_shape)}")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], strides: Sequence[int],
                     pads: str | Sequence[tuple[int, int]], batch_group_count: int = 1) -> tuple[int, ...]:
    """The output shape of a convolution of shapes in (N, C, spatial...) and
    (O, I, spatial...) order (JAX's `lax.conv_shape_tuple`).

    >>> import fgrad.lax
    >>> fgrad.lax.conv_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (2, 2), "SAME")
    (1, 4, 4, 4)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, "
                        f"got {len(pads)}.")
    n = len(pads)
    space = windows.window_shape(lhs_shape[2:], rhs_shape[2:], strides, pads, (1,) * n, (1,) * n)
    return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0]), *space)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]],
                             dimension_numbers: DimensionNumbers) -> tuple[int, ...]:
    """The output shape of `conv_general_dilated` without dilation (JAX's
    `lax.conv_general_shape_tuple`; stax's Conv asks it).

    >>> import fgrad.lax
    >>> fgrad.lax.conv_general_shape_tuple((1, 28, 28, 1), (3, 3, 1, 8), (1, 1), "SAME",
    ...                                    ("NHWC", "HWIO", "NHWC"))
    (1, 28, 28, 8)
    """
    lhs_perm, rhs_perm, out_perm = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    out = conv_shape_tuple([lhs_shape[i] for i in lhs_perm], [rhs_shape[i] for i in rhs_perm],
                           window_strides, padding)
    return tuple(out[i] for i in np.argsort(out_perm))


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """The padding of the lhs-dilated convolution that `conv_transpose` computes
    for one dimension: kernel size `k`, stride `s`, the forward convolution's padding."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else math.ceil(pad_len / 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"conv_transpose: padding must be 'SAME', 'VALID' or (low, high) pairs, "
                         f"got {padding!r}")
    return pad_a, pad_len - pad_a


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]],
                               dimension_numbers: DimensionNumbers) -> tuple[int, ...]:
    """The output shape of `conv_transpose` (JAX's `lax.conv_transpose_shape_tuple`).

    >>> import fgrad.lax
    >>> fgrad.lax.conv_transpose_shape_tuple((1, 4, 4, 8), (3, 3, 8, 1), (2, 2), "SAME",
    ...                                      ("NHWC", "HWIO", "NHWC"))
    (1, 8, 8, 1)
    """
    lhs_perm, rhs_perm, out_perm = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = [lhs_shape[i] for i in lhs_perm]
    rhs_t = [rhs_shape[i] for i in rhs_perm]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
    totals = [sum(p) for p in padding]
    space = [(i - 1) * s - k + 2 + p for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, totals)]
    out = (lhs_t[0], rhs_t[0], *space)
    return tuple(int(out[i]) for i in np.argsort(out_perm))


def _check_groups(lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...], dnums: ConvDimensionNumbers,
                  feature_group_count: int, batch_group_count: int) -> None:
    """JAX's errors for group counts that do not fit the operands."""
    lhs_spec, rhs_spec, _ = dnums
    features, batch = lhs_shape[lhs_spec[1]], lhs_shape[lhs_spec[0]]
    out_features, in_features = rhs_shape[rhs_spec[0]], rhs_shape[rhs_spec[1]]
    prefix = "conv_general_dilated"
    if feature_group_count < 1:
        raise ValueError(f"{prefix} feature_group_count must be a positive integer, "
                         f"got {feature_group_count}.")
    if batch_group_count < 1:
        raise ValueError(f"{prefix} batch_group_count must be a positive integer, got {batch_group_count}.")
    if feature_group_count > 1 and batch_group_count > 1:
        raise ValueError(f"At most one of batch_group_count and feature_group_count may be > 1, got "
                         f"batch_group_count={batch_group_count} and "
                         f"feature_group_count={feature_group_count}")
    if features % feature_group_count:
        raise ValueError(f"{prefix} feature_group_count must divide lhs feature dimension size, but "
                         f"{feature_group_count} does not divide {features}.")
    if features // feature_group_count != in_features:
        raise ValueError(f"{prefix} lhs feature dimension size divided by feature_group_count must equal the "
                         f"rhs input feature dimension size, but {features} // {feature_group_count} != "
                         f"{in_features}.")
    counts = ((feature_group_count, "feature_group_count"), (batch_group_count, "batch_group_count"))
    for count, name in counts:
        if out_features % count:
            raise ValueError(f"{prefix} rhs output feature dimension size must be a multiple of {name}, but "
                             f"{out_features} is not a multiple of {count}.")
    if batch % batch_group_count:
        raise ValueError(f"{prefix} batch_group_count must divide lhs batch dimension size, but "
                         f"{batch_group_count} does not divide {batch}.")


def _split(shape: tuple[int, ...], axis: int, count: int) -> tuple[int, ...]:
    """`shape` with axis `axis` split into (count, rest)."""
    return (*shape[:axis], count, shape[axis] // count, *shape[axis + 1:])


def conv_general_dilated(
    lhs: ArrayLike,
    rhs: ArrayLike,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: DimensionNumbers = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Array:
    """General n-dimensional convolution, with dilation (JAX's `lax.conv_general_dilated`).

    `lhs` is the input, (batch, features, spatial...) under the default
    dimension numbers (NCHW), `rhs` the kernel, (out features, in features,
    spatial...) (OIHW); ``dimension_numbers=("NHWC", "HWIO", "NHWC")`` for
    TensorFlow's layout. `padding` is 'SAME', 'SAME_LOWER', 'VALID' or
    (low, high) pairs; `lhs_dilation` is a transposed convolution's, `rhs_dilation`
    an atrous one's; `feature_group_count` = number of input features makes it
    depthwise. `precision` (a `Precision`, its name, or a pair) is checked and
    changes nothing (NumPy computes in the operands' dtype);
    `preferred_element_type` is the dtype to compute and return in.
    Operands of different dtypes are promoted as NumPy does.

    >>> import fgrad.lax
    >>> import numpy as np
    >>> x = np.arange(5.0).reshape(1, 1, 5)              # N, C, W
    >>> fgrad.lax.conv_general_dilated(x, np.ones((1, 1, 2)), (1,), "VALID")
    array([[[1., 3., 5., 7.]]])
    """
    lhs, rhs = operand(lhs), operand(rhs)
    lhs_shape, rhs_shape = tuple(shape_of(lhs)), tuple(shape_of(rhs))
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dnums
    n = len(lhs_shape) - 2
    if n < 0:
        raise TypeError(f"conv_general_dilated needs operands of at least 2 dimensions, got shapes "
                        f"{lhs_shape} and {rhs_shape}")
    name = "conv_general_dilated"
    check_precision(precision, name)
    window_strides = ints_of("window_strides", window_strides, n, name)
    lhs_dilation = (1,) * n if lhs_dilation is None else ints_of("lhs_dilation", lhs_dilation, n, name)
    rhs_dilation = (1,) * n if rhs_dilation is None else ints_of("rhs_dilation", rhs_dilation, n, name)
    kernel = tuple(rhs_shape[i] for i in rhs_spec[2:])
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution using this op. "
                             "Please either exactly specify the required padding or use conv_transpose.")
        spans = [windows.dilate_dim(k, d) for k, d in zip(kernel, rhs_dilation)]
        pads = tuple(padtype_to_pads([lhs_shape[i] for i in lhs_spec[2:]], spans, window_strides, padding))
    else:
        pads = pads_of(padding, n, name)
    feature_group_count, batch_group_count = int(feature_group_count), int(batch_group_count)
    _check_groups(lhs_shape, rhs_shape, dnums, feature_group_count, batch_group_count)
    if preferred_element_type is not None:
        dtype = np.dtype(preferred_element_type)
        lhs, rhs = (x if get_aval(x).dtype == dtype else ew.convert_element_type(x, new_dtype=dtype)
                    for x in (lhs, rhs))
    patches = windows.window_patches(
        lhs, axes=tuple(lhs_spec[2:]), window_dimensions=kernel, window_strides=window_strides, padding=pads,
        base_dilation=lhs_dilation, window_dilation=rhs_dilation) if n else lhs
    return _contract(patches, rhs, dnums, feature_group_count, batch_group_count)


# Einsum letters: batch, feature, out feature, group; then spatial and window letters.
_SPATIAL = "abdefhijklmpqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _contract(patches: Any, rhs: Any, dnums: ConvDimensionNumbers, feature_groups: int, batch_groups: int
              ) -> Any:
    """The convolution from `lhs`'s patches: one einsum, each operand's group
    axis split out first where there are groups."""
    lhs_spec, rhs_spec, out_spec = dnums
    n = len(lhs_spec) - 2
    if 2 * n > len(_SPATIAL):
        raise ValueError(f"conv_general_dilated supports at most {len(_SPATIAL) // 2} spatial dimensions, "
                         f"got {n}")
    space, window = _SPATIAL[:n], _SPATIAL[n:2 * n]
    p_shape, r_shape = tuple(shape_of(patches)), tuple(shape_of(rhs))
    lhs_terms = [""] * (n + 2)
    lhs_terms[lhs_spec[0]], lhs_terms[lhs_spec[1]] = "n", "c"
    rhs_terms = [""] * (n + 2)
    rhs_terms[rhs_spec[0]], rhs_terms[rhs_spec[1]] = "o", "c"
    out_terms = [""] * (n + 2)
    out_terms[out_spec[0]], out_terms[out_spec[1]] = "n", "o"
    for i in range(n):
        lhs_terms[lhs_spec[2 + i]] = space[i]
        rhs_terms[rhs_spec[2 + i]] = window[i]
        out_terms[out_spec[2 + i]] = space[i]
    groups = feature_groups if feature_groups > 1 else batch_groups
    if groups > 1:
        split = lhs_spec[1] if feature_groups > 1 else lhs_spec[0]
        lhs_terms[split] = "g" + lhs_terms[split]
        patches = shapes.reshape(patches, new_shape=_split(p_shape, split, groups))
        rhs_terms[rhs_spec[0]] = "go"
        rhs = shapes.reshape(rhs, new_shape=_split(r_shape, rhs_spec[0], groups))
        out_terms[out_spec[1]] = "go"
    subscripts = f"{''.join(lhs_terms)}{window},{''.join(rhs_terms)}->{''.join(out_terms)}"
    out = linalg.einsum(patches, rhs, subscripts=subscripts)
    if groups > 1:
        shape = list(shape_of(out))
        g = out_spec[1]
        out = shapes.reshape(out, new_shape=(*shape[:g], shape[g] * shape[g + 1], *shape[g + 2:]))
    return out


def conv(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int], padding: str, precision: Any = None,
         preferred_element_type: Any = None) -> Array:
    """`conv_general_dilated` in NCHW / OIHW layout, without dilation (JAX's `lax.conv`).

    >>> import fgrad.lax
    >>> import numpy as np
    >>> fgrad.lax.conv(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), (1, 1), "VALID")
    array([[[[4., 4.],
             [4., 4.]]]])
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int],
                              padding: str | Sequence[tuple[int, int]], lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Array:
    """`conv_general_dilated` in NCHW / OIHW layout (JAX's `lax.conv_with_general_padding`).

    >>> import fgrad.lax
    >>> import numpy as np
    >>> fgrad.lax.conv_with_general_padding(np.ones((1, 1, 3)), np.ones((1, 1, 2)), (1,), [(1, 0)],
    ...                                     None, None)
    array([[[1., 2., 2.]]])
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                      5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: ArrayLike, rhs: ArrayLike, strides: Sequence[int],
                   padding: str | Sequence[tuple[int, int]], rhs_dilation: Sequence[int] | None = None,
                   dimension_numbers: DimensionNumbers = None, transpose_kernel: bool = False,
                   precision: Any = None, preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Array:
    """A transposed ("fractionally strided") convolution (JAX's `lax.conv_transpose`):
    `lhs` dilated by `strides`, convolved with `rhs`. Layout NHWC / HWIO by default.
    'SAME' and 'VALID' are the forward convolution's padding; (low, high) pairs are
    this convolution's own unless `use_consistent_padding`. `transpose_kernel` flips
    the kernel's spatial axes and swaps its feature axes (Keras' Conv2DTranspose).

    >>> import fgrad.lax
    >>> import numpy as np
    >>> fgrad.lax.conv_transpose(np.ones((1, 2, 1)), np.ones((2, 1, 1)), (2,), "VALID")[..., 0]
    array([[1., 1., 1., 1.]])
    """
    lhs, rhs = operand(lhs), operand(rhs)
    lhs_shape, rhs_shape = tuple(shape_of(lhs)), tuple(shape_of(rhs))
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim or ndim < 2:
        raise TypeError(f"conv_transpose needs operands of the same number (at least 2) of dimensions, "
                        f"got shapes {lhs_shape} and {rhs_shape}")
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = ndim - 2
    strides = ints_of("strides", strides, n, "conv_transpose")
    dilation = (1,) * n if rhs_dilation is None else ints_of("rhs_dilation", rhs_dilation, n,
                                                             "conv_transpose")
    kernel = [rhs_shape[i] for i in dn.rhs_spec[2:]]
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        each = [padding] * n if isinstance(padding, str) else [tuple(p) for p in padding]
        pads: Any = tuple(_conv_transpose_padding(windows.dilate_dim(k, d), s, p)
                          for k, d, s, p in zip(kernel, dilation, strides, each))
    else:
        pads = padding
    if transpose_kernel:
        rhs = shaping.flip(rhs, axis=tuple(dn.rhs_spec[2:]))
        rhs = shaping.swapaxes(rhs, dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * n, pads, strides, dilation, dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(
    lhs: ArrayLike,
    filter_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: DimensionNumbers = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Array:
    """The patches a convolution with a kernel of spatial shape `filter_shape`
    sees, flattened into the feature dimension (JAX's
    `lax.conv_general_dilated_patches`): features ordered (input feature, then the
    window's spatial positions in the kernel layout's order), so the output has
    ``C * prod(filter_shape)`` features.

    >>> import fgrad.lax
    >>> import numpy as np
    >>> fgrad.lax.conv_general_dilated_patches(np.arange(4.0).reshape(1, 1, 4), (2,), (2,), "VALID")
    array([[[0., 2.],
            [1., 3.]]])
    """
    lhs = operand(lhs)
    lhs_shape = tuple(shape_of(lhs))
    filter_shape = tuple(int(k) for k in filter_shape)
    dnums = conv_dimension_numbers(lhs_shape, (1, 1, *filter_shape), dimension_numbers)
    lhs_spec, _, out_spec = dnums
    n = len(lhs_shape) - 2
    name = "conv_general_dilated_patches"
    check_precision(precision, name)
    window_strides = ints_of("window_strides", window_strides, n, name)
    lhs_dilation = (1,) * n if lhs_dilation is None else ints_of("lhs_dilation", lhs_dilation, n, name)
    rhs_dilation = (1,) * n if rhs_dilation is None else ints_of("rhs_dilation", rhs_dilation, n, name)
    filter_shape = ints_of("filter_shape", filter_shape, n, name)
    if isinstance(padding, str):
        spans = [windows.dilate_dim(k, d) for k, d in zip(filter_shape, rhs_dilation)]
        pads = tuple(padtype_to_pads([lhs_shape[i] for i in lhs_spec[2:]], spans, window_strides, padding))
    else:
        pads = pads_of(padding, n, name)
    if preferred_element_type is not None and get_aval(lhs).dtype != np.dtype(preferred_element_type):
        lhs = ew.convert_element_type(lhs, new_dtype=np.dtype(preferred_element_type))
    patches = windows.window_patches(lhs, axes=tuple(lhs_spec[2:]), window_dimensions=filter_shape,
                                     window_strides=window_strides, padding=pads, base_dilation=lhs_dilation,
                                     window_dilation=rhs_dilation)
    # (N, C, window..., spatial...) flattened to (N, C * window, spatial...), then into out_spec's layout
    order = (lhs_spec[0], lhs_spec[1], *range(n + 2, 2 * n + 2), *lhs_spec[2:])
    canonical = shapes.transpose(patches, axes=order)
    shape = shape_of(canonical)
    canonical = shapes.reshape(canonical, new_shape=(shape[0], math.prod(shape[1:n + 2]), *shape[n + 2:]))
    return shapes.transpose(canonical, axes=tuple(int(i) for i in np.argsort(out_spec)))
