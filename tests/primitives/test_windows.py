"""The window primitives (window_patches, window_fold): patches equal a direct loop
over windows, fold is their transpose (the adjoint identity), both differentiate to
second order in both modes, run the same under jit, and say what is wrong with bad
parameters. BATCH_CASES also holds the convolutions and pooling written on them."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.lax as lax
import fgrad.numpy as fnp
from fgrad.primitives import windows
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

PRIMITIVES = {"window_patches", "window_fold"}

_PARAMS = dict(axes=(0, 2), window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 0), (0, 1)),
               base_dilation=(2, 1), window_dilation=(1, 1))
_FOLD_SHAPE = (3, 2, 4)


BATCH_CASES = {
    "window_patches": (lambda x: windows.window_patches(x, **_PARAMS), [_FOLD_SHAPE], "real"),
    "window_fold": (lambda c: windows.window_fold(c, shape=_FOLD_SHAPE, **_PARAMS), [(5, 2, 2, 2, 2)], "real"),
    "conv_general_dilated": (
        lambda x, w: lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2)),
        [(1, 2, 4, 3), (2, 2, 2, 2)], "real"),
    "conv_depthwise_nhwc": (
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                              feature_group_count=2),
        [(1, 4, 3, 2), (2, 2, 1, 4)], "real"),
    "conv_batch_groups": (
        lambda x, w: lax.conv_general_dilated(x, w, (1,), [(1, 0)], batch_group_count=2),
        [(4, 2, 5), (2, 2, 2)], "real"),
    "conv_transpose": (lambda x, w: lax.conv_transpose(x, w, (2,), "SAME"), [(1, 3, 2), (2, 2, 3)], "real"),
    "reduce_window_max": (
        lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 3), (2, 1), "SAME"), [(4, 5)], "real"),
    "reduce_window_sum_dilated": (
        lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), [(1, 1), (0, 1)], (2, 1), (1, 2)),
        [(3, 4)], "real"),
    "reduce_window_generic": (
        lambda x: lax.reduce_window(x, -np.inf, fnp.logaddexp, (3,), (1,), "SAME"), [(5,)], "real"),
}


def _patches_loop(x, axes, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """Patches by a loop over window positions, from an explicitly dilated and padded copy of `x`."""
    for a, (lo, hi), bd in zip(axes, padding, base_dilation):
        n = x.shape[a]
        dilated = np.zeros(x.shape[:a] + ((n - 1) * bd + 1,) + x.shape[a + 1:])
        dilated[(slice(None),) * a + (slice(None, None, bd),)] = x
        x = np.pad(dilated, [(max(lo, 0), max(hi, 0)) if i == a else (0, 0) for i in range(x.ndim)])
        x = x[(slice(None),) * a + (slice(max(-lo, 0), x.shape[a] - max(-hi, 0)),)]
    outs = [(x.shape[a] - (w - 1) * wd - 1) // s + 1
            for a, w, s, wd in zip(axes, window_dimensions, window_strides, window_dilation)]
    shape = list(x.shape)
    for a, n in zip(axes, outs):
        shape[a] = max(n, 0)
    result = np.zeros(tuple(shape) + tuple(window_dimensions))
    for pos in np.ndindex(*[max(n, 0) for n in outs]):
        for k in np.ndindex(*window_dimensions):
            src = [slice(None)] * x.ndim
            dst = [slice(None)] * x.ndim
            for i, a in enumerate(axes):
                src[a] = pos[i] * window_strides[i] + k[i] * window_dilation[i]
                dst[a] = pos[i]
            # integer indices drop axes: put the element's line of the other axes in place
            result[tuple(dst) + k] = x[tuple(src)]
    return result


@st.composite
def window_params(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    axes = tuple(draw(st.permutations(range(ndim)))[:draw(st.integers(1, ndim))])
    k = len(axes)
    window = tuple(draw(st.integers(1, 3)) for _ in range(k))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(k))
    base = tuple(draw(st.integers(1, 2)) for _ in range(k))
    wdil = tuple(draw(st.integers(1, 2)) for _ in range(k))
    pads = []
    for a, b in zip(axes, base):
        size = (shape[a] - 1) * b + 1
        lo = draw(st.integers(-(size - 1) // 2, 2))
        hi = draw(st.integers(-(size - 1) // 2, 2))
        pads.append((lo, hi))
    return shape, dict(axes=axes, window_dimensions=window, window_strides=strides, padding=tuple(pads),
                       base_dilation=base, window_dilation=wdil)


@given(case=window_params(), seed=seeds)
def test_patches_are_the_windows_and_fold_is_their_transpose(case, seed):
    shape, params = case
    x = values(shape, "real", seed)
    patches = windows.window_patches(x, **params)
    np.testing.assert_array_equal(patches, _patches_loop(x, **params))
    c = values(np.shape(patches), "real", seed + 1)
    folded = windows.window_fold(c, shape=shape, **params)
    assert folded.shape == shape
    # <patches(x), c> = <x, fold(c)>: fold is the adjoint (transpose) of patches
    np.testing.assert_allclose(np.sum(patches * c), np.sum(x * folded), rtol=1e-12, atol=1e-12)
    assert fgrad.make_jaxpr(lambda x: windows.window_patches(x, **params))(x).out_avals[0].shape == patches.shape


@pytest.mark.parametrize("params", [
    _PARAMS,
    dict(axes=(1,), window_dimensions=(3,), window_strides=(2,), padding=((2, -1),), base_dilation=(1,),
         window_dilation=(2,)),
])
def test_patches_and_fold_derivatives_jit_and_vmap(params):
    x = values(_FOLD_SHAPE, "real", 3)
    patches = lambda x: windows.window_patches(x * x, **params)
    check_grads(patches, (x,), order=2)
    c = values(np.shape(windows.window_patches(x, **params)), "real", 4)
    fold = lambda c: windows.window_fold(fnp.sin(c), shape=_FOLD_SHAPE, **params)
    check_grads(fold, (c,), order=2)
    np.testing.assert_array_equal(fgrad.jit(patches)(x), patches(x))
    np.testing.assert_allclose(fgrad.jit(fold)(c), fold(c), rtol=1e-15)
    cs = np.stack([c, 2 * c, -c])
    for axis in (0, c.ndim):  # the batch among the leading axes, and among the window axes
        batch = np.moveaxis(cs, 0, axis)
        np.testing.assert_allclose(fgrad.vmap(fold, in_axes=axis)(batch), np.stack([fold(e) for e in cs]))


def test_window_errors_say_what_is_wrong():
    x = np.zeros((3, 4))
    good = dict(window_dimensions=(2,), window_strides=(1,), padding=((0, 0),), base_dilation=(1,),
                window_dilation=(1,))
    with pytest.raises(ValueError, match=r"window axes \(2,\) must be distinct axes of an array of dimension 2"):
        windows.window_patches(x, axes=(2,), **good)
    with pytest.raises(ValueError, match=r"window_strides \(1, 1\) must have one entry per window axis \(0,\)"):
        windows.window_patches(x, axes=(0,), **{**good, "window_strides": (1, 1)})
    with pytest.raises(ValueError, match=r"window_dimensions must be positive integers, got \(0,\)"):
        fgrad.make_jaxpr(lambda x: windows.window_patches(x, axes=(0,), **{**good, "window_dimensions": (0,)}))(x)
    with pytest.raises(ValueError, match=r"negative padding \(-3, -1\) is larger than the size 3"):
        windows.window_patches(x, axes=(0,), **{**good, "padding": ((-3, -1),)})
    with pytest.raises(ValueError, match=r"patches of shape \(2, 4, 3\) do not fit an array of shape \(3, 4\) "
                                         r"\(its patches have shape \(2, 4, 2\)\)"):
        windows.window_fold(np.zeros((2, 4, 3)), shape=(3, 4), axes=(0,), **good)


def test_patches_of_windows_larger_than_the_input_are_empty():
    params = dict(axes=(0,), window_dimensions=(4,), window_strides=(1,), padding=((0, 0),), base_dilation=(1,),
                  window_dilation=(1,))
    x = np.arange(3.0)
    assert windows.window_patches(x, **params).shape == (0, 4)
    assert np.array_equal(windows.window_fold(np.zeros((0, 4)), shape=(3,), **params), np.zeros(3))
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(windows.window_patches(x, **params)))(x), np.zeros(3))
