"""fgrad.lax's convolutions (conv_general_dilated, conv, conv_with_general_padding,
conv_transpose, conv_general_dilated_patches) and their shape helpers: values equal a
direct loop and JAX's recorded values (gradients too), in 1-d and 2-d, every layout,
strides, SAME / VALID / explicit padding, both dilations and both kinds of groups;
derivatives to second order in both modes; vmap equals a loop; jit equals eager; errors
say what is wrong. Then a small CNN and a stax-like library written with JAX's names."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.lax as lax
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.conv_cases import CONV, CONV_TRANSPOSE, PATCHES, RECORDED, jsonable, operands
from tests.lax.test_windowed import same_pads
from tests.strategies import seeds, values


def _dilate(x, axis, factor):
    shape = list(x.shape)
    shape[axis] = (shape[axis] - 1) * factor + 1
    out = np.zeros(shape)
    out[(slice(None),) * axis + (slice(None, None, factor),)] = x
    return out


def conv_loop(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None, specs=None,
              feature_group_count=1, batch_group_count=1):
    """XLA's convolution from its definition: operands to (N, C, spatial) and (O, I,
    spatial) by their layout strings, dilated and padded explicitly, then a loop over
    the output's positions, each one sum of products."""
    n = lhs.ndim - 2
    specs = specs or ("NC" + "HWD"[:n], "OI" + "HWD"[:n], "NC" + "HWD"[:n])
    lhs_spec, rhs_spec, out_spec = specs
    spatial = [c for c in rhs_spec if c not in "OI"]
    x = np.transpose(lhs, [lhs_spec.index(c) for c in ["N", "C", *spatial]])
    w = np.transpose(rhs, [rhs_spec.index(c) for c in ["O", "I", *spatial]])
    for i in range(n):
        x = _dilate(x, 2 + i, (lhs_dilation or (1,) * n)[i])
        w = _dilate(w, 2 + i, (rhs_dilation or (1,) * n)[i])
    if isinstance(padding, str):
        padding = ([(0, 0)] * n if padding == "VALID" else
                   same_pads(x.shape[2:], w.shape[2:], strides, lower=padding == "SAME_LOWER"))
    for i, (lo, hi) in enumerate(padding):
        widths = [(0, 0)] * x.ndim
        widths[2 + i] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths)
        x = x[(slice(None),) * (2 + i) + (slice(max(-lo, 0), x.shape[2 + i] - max(-hi, 0)),)]
    batch, features = x.shape[:2]
    out_features, in_features = w.shape[:2]
    kernel = w.shape[2:]
    space = [max(0, (x.shape[2 + i] - kernel[i]) // strides[i] + 1) for i in range(n)]
    out = np.zeros((batch // batch_group_count, out_features, *space))
    for b, o in np.ndindex(batch // batch_group_count, out_features):
        if feature_group_count > 1:
            g = o // (out_features // feature_group_count)
            example, channels = b, slice(g * in_features, (g + 1) * in_features)
        else:
            g = o // (out_features // batch_group_count)
            example, channels = g * (batch // batch_group_count) + b, slice(None)
        for pos in np.ndindex(*space):
            window = tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, strides, kernel))
            out[(b, o, *pos)] = np.sum(x[(example, channels, *window)] * w[o])
    return np.transpose(out, [["N", "C", *spatial].index(c) for c in out_spec])


LAYOUTS = {1: [None, ("NWC", "WIO", "NWC"), ("CWN", "OWI", "NCW")],
           2: [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NHWC"), ("HWCN", "IOWH", "WNCH")]}


@st.composite
def convolutions(draw):
    n = draw(st.integers(1, 2))
    specs = draw(st.sampled_from(LAYOUTS[n]))
    layout = specs or ("NC" + "HW"[:n], "OI" + "HW"[:n], "NC" + "HW"[:n])
    groups = draw(st.sampled_from([(1, 1), (2, 1), (1, 2)]))
    fgc, bgc = groups
    batch = draw(st.integers(1, 2)) * bgc
    in_features = draw(st.integers(1, 2))
    out_features = draw(st.integers(1, 2)) * fgc * bgc
    spatial = [c for c in layout[1] if c not in "OI"]
    sizes = {c: draw(st.integers(1, 5)) for c in spatial}
    kernel = {c: draw(st.integers(1, 3)) for c in spatial}
    lhs_dims = {"N": batch, "C": in_features * fgc, **sizes}
    rhs_dims = {"O": out_features, "I": in_features, **kernel}
    lhs_shape = tuple(lhs_dims[c] for c in layout[0])
    rhs_shape = tuple(rhs_dims[c] for c in layout[1])
    strides = tuple(draw(st.integers(1, 3)) for _ in range(n))
    rhs_dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    lhs_dilation = draw(st.one_of(st.none(), st.tuples(*[st.integers(1, 2)] * n)))
    if lhs_dilation is None:
        padding = draw(st.one_of(st.sampled_from(["SAME", "VALID", "SAME_LOWER"]),
                                 st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 2)), min_size=n, max_size=n)))
    else:
        padding = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=n, max_size=n))
    return lhs_shape, rhs_shape, dict(window_strides=strides, padding=padding, lhs_dilation=lhs_dilation,
                                      rhs_dilation=rhs_dilation, dimension_numbers=specs,
                                      feature_group_count=fgc, batch_group_count=bgc)


def _loop_of(lhs, rhs, kwargs):
    return conv_loop(lhs, rhs, kwargs["window_strides"], kwargs["padding"], kwargs.get("lhs_dilation"),
                     kwargs.get("rhs_dilation"), kwargs.get("dimension_numbers"),
                     kwargs.get("feature_group_count", 1), kwargs.get("batch_group_count", 1))


@given(case=convolutions(), seed=seeds)
def test_conv_general_dilated_equals_a_loop(case, seed):
    lhs_shape, rhs_shape, kwargs = case
    lhs, rhs = values(lhs_shape, "real", seed), values(rhs_shape, "real", seed + 1)
    got = lax.conv_general_dilated(lhs, rhs, **kwargs)
    expected = _loop_of(lhs, rhs, kwargs)
    assert np.shape(got) == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    if kwargs["lhs_dilation"] is None and kwargs["batch_group_count"] == 1 and kwargs["rhs_dilation"] == (1,) * len(
            kwargs["window_strides"]):
        assert expected.shape == lax.conv_general_shape_tuple(lhs_shape, rhs_shape, kwargs["window_strides"],
                                                              kwargs["padding"], kwargs["dimension_numbers"])


@pytest.fixture(scope="module")
def recorded():
    return json.loads(RECORDED.read_text())


def _check_recorded(fun, lhs, rhs, entry):
    np.testing.assert_allclose(fun(lhs, rhs), np.array(entry["out"]), rtol=1e-12, atol=1e-13)
    grads = fgrad.grad(lambda a, b: fnp.sum(fnp.sin(fun(a, b))), argnums=(0, 1))(lhs, rhs)
    np.testing.assert_allclose(grads[0], np.array(entry["grad_lhs"]), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(grads[1], np.array(entry["grad_rhs"]), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONV))
def test_conv_general_dilated_equals_jax(name, recorded):
    lhs_shape, rhs_shape, kwargs = CONV[name]
    lhs, rhs = operands(lhs_shape, rhs_shape)
    fun = lambda a, b: lax.conv_general_dilated(a, b, **kwargs)
    _check_recorded(fun, lhs, rhs, recorded["conv_general_dilated"][name])
    np.testing.assert_allclose(fun(lhs, rhs), _loop_of(lhs, rhs, jsonable(kwargs)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONV_TRANSPOSE))
def test_conv_transpose_equals_jax(name, recorded):
    lhs_shape, rhs_shape, kwargs = CONV_TRANSPOSE[name]
    lhs, rhs = operands(lhs_shape, rhs_shape)
    kwargs = jsonable(kwargs)
    _check_recorded(lambda a, b: lax.conv_transpose(a, b, **kwargs), lhs, rhs, recorded["conv_transpose"][name])
    if not kwargs.get("use_consistent_padding") and not kwargs.get("transpose_kernel"):
        shape = lax.conv_transpose_shape_tuple(lhs_shape, rhs_shape, kwargs["strides"], kwargs["padding"],
                                               ("NHWC", "HWIO", "NHWC"))
        assert shape == np.shape(recorded["conv_transpose"][name]["out"])


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_conv_general_dilated_patches_equals_jax(name, recorded):
    shape, kwargs = PATCHES[name]
    (lhs,) = operands(shape)
    got = lax.conv_general_dilated_patches(lhs, **kwargs)
    np.testing.assert_allclose(got, np.array(recorded["conv_general_dilated_patches"][name]["out"]), rtol=1e-15)
    check_grads(lambda x: lax.conv_general_dilated_patches(x * x, **kwargs), (lhs,), order=2)


def test_conv_wrappers_and_shape_helpers():
    lhs, rhs = values((2, 3, 5, 4), "real", 1), values((4, 3, 2, 3), "real", 2)
    np.testing.assert_allclose(lax.conv(lhs, rhs, (2, 1), "SAME"), conv_loop(lhs, rhs, (2, 1), "SAME"), rtol=1e-12)
    np.testing.assert_allclose(lax.conv_with_general_padding(lhs, rhs, (1, 1), [(1, 0), (2, 1)], (2, 1), (1, 2)),
                               conv_loop(lhs, rhs, (1, 1), [(1, 0), (2, 1)], (2, 1), (1, 2)), rtol=1e-12)
    assert lax.conv_shape_tuple((2, 3, 5, 4), (4, 3, 2, 3), (2, 1), "SAME") == (2, 4, 3, 4)
    assert lax.conv_shape_tuple((4, 3, 5, 4), (4, 3, 2, 3), (1, 1), "VALID", batch_group_count=2) == (2, 4, 4, 2)
    dn = lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), dn) is dn
    assert lax.conv_general_permutations(("NCHW", "OIHW", "NHWC")) == ((0, 1, 2, 3), (0, 1, 2, 3), (0, 3, 1, 2))
    assert lax.conv_general_shape_tuple((1, 28, 28, 1), (3, 3, 1, 8), (2, 2), "SAME",
                                        ("NHWC", "HWIO", "NHWC")) == (1, 14, 14, 8)
    f32 = lax.conv(lhs.astype(np.float32), rhs.astype(np.float32), (1, 1), "VALID")
    assert f32.dtype == np.float32
    assert lax.conv(lhs, rhs, (1, 1), "VALID", preferred_element_type=np.float32).dtype == np.float32
    np.testing.assert_array_equal(lax.conv(lhs, rhs, (1, 1), "VALID", precision=lax.Precision.HIGHEST),
                                  lax.conv(lhs, rhs, (1, 1), "VALID", precision=("highest", "bfloat16")))
    ints = lax.conv(np.ones((1, 1, 3), int), np.ones((1, 1, 2), int), (1,), "VALID")
    assert ints.dtype == np.int64 and ints.tolist() == [[[2, 2]]]


CONFIGS = {  # small convolutions whose derivatives are checked to second order
    "nchw_strided_same": ((1, 2, 4, 3), (2, 2, 2, 2), dict(window_strides=(2, 1), padding="SAME")),
    "nhwc_rhs_dilated": ((1, 4, 3, 2), (2, 2, 2, 3), dict(window_strides=(1, 1), padding="VALID",
                                                          rhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "lhs_dilated_explicit": ((1, 1, 3, 2), (2, 1, 2, 2), dict(window_strides=(1, 1), padding=[(1, 0), (0, -1)],
                                                              lhs_dilation=(2, 2))),
    "depthwise": ((2, 3, 2), (2, 1, 4), dict(window_strides=(1,), padding="SAME", feature_group_count=2,
                                             dimension_numbers=("NWC", "WIO", "NWC"))),
    "batch_groups": ((4, 1, 3), (2, 1, 2), dict(window_strides=(1,), padding="VALID", batch_group_count=2)),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_conv_derivatives_jit_and_vmap(name):
    lhs_shape, rhs_shape, kwargs = CONFIGS[name]
    lhs, rhs = values(lhs_shape, "real", 5), values(rhs_shape, "real", 6)
    f = lambda a, b: lax.conv_general_dilated(a, b, **kwargs)
    check_grads(lambda a, b: f(a * a, fnp.sin(b)), (lhs, rhs), order=2)
    np.testing.assert_allclose(fgrad.jit(f)(lhs, rhs), f(lhs, rhs), rtol=1e-14)
    loss = lambda a, b: fnp.sum(fnp.tanh(f(a, b)))
    grad = fgrad.grad(loss, argnums=(0, 1))
    for got, want in zip(fgrad.jit(grad)(lhs, rhs), grad(lhs, rhs)):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    lhss, rhss = np.stack([lhs, 2 * lhs, -lhs]), np.stack([rhs, rhs + 1, -rhs])
    for axes in ((0, 0), (0, None), (None, 0)):
        pick = lambda i: (lhss[i] if axes[0] is not None else lhs, rhss[i] if axes[1] is not None else rhs)
        args = (lhss if axes[0] is not None else lhs, rhss if axes[1] is not None else rhs)
        np.testing.assert_allclose(fgrad.vmap(f, in_axes=axes)(*args), np.stack([f(*pick(i)) for i in range(3)]),
                                   rtol=1e-13)
        per_example = np.stack([grad(*pick(i))[1] for i in range(3)])
        np.testing.assert_allclose(fgrad.vmap(grad, in_axes=axes)(*args)[1], per_example, rtol=1e-12)


def test_conv_errors_say_what_is_wrong():
    x, w = np.zeros((1, 4, 5, 5)), np.zeros((6, 2, 3, 3))
    with pytest.raises(ValueError, match=r"feature_group_count must divide lhs feature dimension size, but 3 does not divide 4"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=3)
    with pytest.raises(ValueError, match=r"lhs feature dimension size divided by feature_group_count must equal the rhs input "
                                         r"feature dimension size, but 4 // 1 != 2"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME")
    with pytest.raises(ValueError, match=r"batch_group_count must divide lhs batch dimension size, but 2 does not divide 1"):
        lax.conv_general_dilated(np.zeros((1, 2, 5, 5)), w, (1, 1), "SAME", batch_group_count=2)
    with pytest.raises(ValueError, match="At most one of batch_group_count and feature_group_count may be > 1"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2, batch_group_count=2)
    with pytest.raises(TypeError, match=r"convolution requires lhs and rhs ndim to be equal, got 4 and 3"):
        lax.conv_general_dilated(x, np.zeros((6, 2, 3)), (1, 1), "SAME")
    with pytest.raises(TypeError, match=r"window_strides must have 2 entries \(one per dimension\), got \(1,\)"):
        lax.conv_general_dilated(x, np.zeros((6, 4, 3, 3)), (1,), "SAME")
    with pytest.raises(ValueError, match="padding must be 'SAME', 'SAME_LOWER' or 'VALID', got 'FULL'"):
        lax.conv_general_dilated(x, np.zeros((6, 4, 3, 3)), (1, 1), "FULL")
    with pytest.raises(ValueError, match="String padding is not implemented for transposed convolution"):
        lax.conv_general_dilated(x, np.zeros((6, 4, 3, 3)), (1, 1), "SAME", lhs_dilation=(2, 2))
    with pytest.raises(TypeError, match=r"dimension_numbers\[1\] must contain the characters 'O' and 'I' exactly once, got 'HWII'"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "HWII", "NCHW"))
    with pytest.raises(TypeError, match="must each have the same set of spatial characters"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHX", "NCHW"))
    with pytest.raises(ValueError, match=r"conv_general_dilated: precision must be None, a fgrad.lax.Precision"):
        lax.conv_general_dilated(x, np.zeros((6, 4, 3, 3)), (1, 1), "SAME", precision="exact")
    with pytest.raises(ValueError, match=r"negative padding \(-4, -3\) is larger than the size 5"):
        lax.conv_general_dilated(x, np.zeros((6, 4, 3, 3)), (1, 1), [(-4, -3), (0, 0)])


# --- a small CNN: conv -> relu -> max pool -> avg pool -> dense ---------------------------

DN = ("NHWC", "HWIO", "NHWC")


def cnn(params, x):
    w1, b1, w2 = params
    h = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=DN) + b1
    h = fnp.maximum(h, 0.0)
    h = lax.reduce_window(h, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4.0
    return h.reshape(h.shape[0], -1) @ w2


def cnn_loss(params, x, y):
    return fnp.mean((cnn(params, x) - y) ** 2)


def test_cnn_gradient_under_jit_equals_eager_and_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, 6, 1))
    y = rng.normal(size=(2, 3))
    params = [rng.normal(size=(3, 3, 1, 4)), rng.normal(size=(4,)) * 0.1, rng.normal(size=(3 * 3 * 4, 3)) * 0.3]
    grad = fgrad.grad(cnn_loss)
    eager, jitted = grad(params, x, y), fgrad.jit(grad)(params, x, y)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j, e, rtol=1e-12, atol=1e-14)
    check_grads(lambda *p: cnn_loss(list(p), x, y), params, order=1)
    check_grads(lambda x: cnn_loss(params, x, y), (x,), order=1)


# --- stax, written with fgrad's names: its layers need nothing but import swaps -----------

def Conv(out_chan, filter_shape, strides=None, padding="VALID", dimension_numbers=DN):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one

    def init_fun(rng, input_shape):
        shapes = iter(filter_shape)
        kernel = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(shapes)
                  for c in rhs_spec]
        out_shape = lax.conv_general_shape_tuple(input_shape, kernel, strides, padding, dimension_numbers)
        bias = [out_chan if c == "C" else 1 for c in out_spec]
        return out_shape, (rng.normal(size=kernel) / math.sqrt(math.prod(kernel[:-1])), np.zeros(bias))

    def apply_fun(params, inputs):
        w, b = params
        return lax.conv_general_dilated(inputs, w, strides, padding, one, one, dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


def _pooling(reducer, init_val, normalize=False):
    def layer(window_shape, strides=None, padding="VALID"):
        strides = strides or (1,) * len(window_shape)
        dims, steps = (1, *window_shape, 1), (1, *strides, 1)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, dims, steps, padding)
            return lax.reduce_window_shape_tuple(input_shape, dims, steps, pads, (1,) * 4, (1,) * 4), ()

        def apply_fun(params, inputs):
            out = lax.reduce_window(inputs, init_val, reducer, dims, steps, padding)
            if not normalize:
                return out
            ones = fnp.ones(inputs.shape[1:-1], dtype=inputs.dtype)
            sizes = lax.reduce_window(ones, 0.0, lax.add, window_shape, strides, padding)
            return out / fnp.expand_dims(fnp.expand_dims(sizes, 0), -1)

        return init_fun, apply_fun

    return layer


MaxPool = _pooling(lax.max, -fnp.inf)
AvgPool = _pooling(lax.add, 0.0, normalize=True)
Relu = (lambda rng, shape: (shape, ()), lambda params, x: fnp.maximum(x, 0.0))
Flatten = (lambda rng, shape: ((shape[0], math.prod(shape[1:])), ()),
           lambda params, x: fnp.reshape(x, (x.shape[0], -1)))


def Dense(out_dim):
    def init_fun(rng, input_shape):
        return (*input_shape[:-1], out_dim), (rng.normal(size=(input_shape[-1], out_dim)) * 0.3, np.zeros(out_dim))

    return init_fun, lambda params, x: fnp.dot(x, params[0]) + params[1]


def serial(*layers):
    def init_fun(rng, input_shape):
        params = []
        for init, _ in layers:
            input_shape, p = init(rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, x):
        for (_, apply), p in zip(layers, params):
            x = apply(p, x)
        return x

    return init_fun, apply_fun


def test_a_stax_like_network_trains_under_jit():
    init, apply = serial(Conv(4, (3, 3), padding="SAME"), Relu, MaxPool((2, 2), (2, 2)),
                         Conv(3, (2, 2), strides=(1, 1)), Relu, AvgPool((2, 2), padding="SAME"),
                         Flatten, Dense(2))
    rng = np.random.default_rng(1)
    out_shape, params = init(rng, (4, 8, 8, 1))
    x, y = rng.normal(size=(4, 8, 8, 1)), rng.normal(size=(4, 2))
    assert out_shape == (4, 2) == np.shape(apply(params, x))
    loss = lambda params: fnp.mean((apply(params, x) - y) ** 2)
    step = fgrad.jit(lambda params: fgrad.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, fgrad.grad(loss)(params)))
    eager_grads = fgrad.grad(loss)(params)
    jit_grads = fgrad.jit(fgrad.grad(loss))(params)
    for e, j in zip(fgrad.tree_util.tree_leaves(eager_grads), fgrad.tree_util.tree_leaves(jit_grads)):
        np.testing.assert_allclose(j, e, rtol=1e-12, atol=1e-14)
    first = loss(params)
    for _ in range(5):
        params = step(params)
    assert loss(params) < first
    check_grads(loss, (params,), order=1, modes=("rev",))

