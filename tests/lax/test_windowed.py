"""fgrad.lax.reduce_window (max, min, sum, product and any other computation, pytrees
of operands), reduce_window_shape_tuple, padtype_to_pads and lax.add/max/min/mul:
values equal a direct loop over windows (padding and dilation holes skipped, the init
value taken in once, as XLA) and JAX's recorded values; derivatives to second order
in both modes; jit equals eager; errors say what is wrong."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.lax as lax
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.conv_cases import RECORDED, REDUCE_WINDOW, operands
from tests.strategies import seeds, values

OPS = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


def reduce_window_loop(x, init, op, window, strides, padding, base_dilation=None, window_dilation=None):
    """`op` folded from `init` over the elements of each window, by Python loops over an
    explicitly dilated and padded copy of `x` that marks which positions hold elements."""
    n = x.ndim
    base_dilation = base_dilation or (1,) * n
    window_dilation = window_dilation or (1,) * n
    held, vals = np.ones(x.shape, bool), x
    for a in range(n):
        size = (vals.shape[a] - 1) * base_dilation[a] + 1
        idx = np.arange(vals.shape[a]) * base_dilation[a]
        new_vals = np.zeros(vals.shape[:a] + (size,) + vals.shape[a + 1:])
        new_held = np.zeros(new_vals.shape, bool)
        new_vals[(slice(None),) * a + (idx,)] = vals
        new_held[(slice(None),) * a + (idx,)] = held
        lo, hi = padding[a]
        widths = [(0, 0)] * n
        widths[a] = (max(lo, 0), max(hi, 0))
        vals, held = np.pad(new_vals, widths), np.pad(new_held, widths)
        keep = (slice(None),) * a + (slice(max(-lo, 0), vals.shape[a] - max(-hi, 0)),)
        vals, held = vals[keep], held[keep]
    spans = [(w - 1) * d + 1 for w, d in zip(window, window_dilation)]
    out_shape = [max(0, (vals.shape[a] - spans[a]) // strides[a] + 1) for a in range(n)]
    out = np.empty(out_shape)
    for pos in np.ndindex(*out_shape):
        acc = init
        for k in np.ndindex(*window):
            at = tuple(p * s + j * d for p, s, j, d in zip(pos, strides, k, window_dilation))
            if held[at]:
                acc = op(acc, vals[at])
        out[pos] = acc
    return out


def same_pads(in_shape, window, strides, lower=False):
    """'SAME' padding, from its definition: ceil(n / s) windows, the odd one at the end."""
    pads = []
    for n, w, s in zip(in_shape, window, strides):
        total = max((-(-n // s) - 1) * s + w - n, 0)
        pads.append((total - total // 2, total // 2) if lower else (total // 2, total - total // 2))
    return pads


@st.composite
def pooling(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    window = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    base = tuple(draw(st.lists(st.integers(1, 2), min_size=ndim, max_size=ndim)))
    wdil = tuple(draw(st.lists(st.integers(1, 2), min_size=ndim, max_size=ndim)))
    padding = draw(st.one_of(st.sampled_from(["SAME", "VALID", "SAME_LOWER"]),
                             st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 2)), min_size=ndim,
                                      max_size=ndim)))
    op = draw(st.sampled_from(sorted(OPS)))
    init = draw(st.sampled_from({"add": [0.0, 1.5], "max": [-np.inf, 0.0], "min": [np.inf, 0.5],
                                 "mul": [1.0, 2.0]}[op]))
    return shape, init, op, window, strides, padding, base, wdil


@given(case=pooling(), seed=seeds)
def test_reduce_window_equals_a_loop(case, seed):
    shape, init, op, window, strides, padding, base, wdil = case
    x = values(shape, "real", seed)
    if isinstance(padding, str):
        spans = [(w - 1) * d + 1 for w, d in zip(window, wdil)]
        pads = same_pads(shape, spans, strides, lower=padding == "SAME_LOWER") if padding != "VALID" else [(0, 0)] * len(shape)
    else:
        pads = padding
    expected = reduce_window_loop(x, init, OPS[op], window, strides, pads, base, wdil)
    got = lax.reduce_window(x, init, getattr(lax, op), window, strides, padding, base, wdil)
    assert np.shape(got) == expected.shape == lax.reduce_window_shape_tuple(shape, window, strides, pads, base, wdil)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.asarray(got).dtype == np.float64
    generic = lax.reduce_window(x, init, lambda a, b: OPS[op](a, b), window, strides, padding, base, wdil)
    np.testing.assert_allclose(generic, expected, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(REDUCE_WINDOW))
def test_reduce_window_equals_jax(name):
    shape, init, computation, kwargs = REDUCE_WINDOW[name]
    (x,) = operands(shape)
    recorded = json.loads(RECORDED.read_text())["reduce_window"][name]
    got = lax.reduce_window(x, init, getattr(lax, computation), **kwargs)
    np.testing.assert_allclose(got, np.array(recorded["out"]), rtol=1e-13)
    np.testing.assert_allclose(fgrad.jit(lambda x: lax.reduce_window(x, init, getattr(lax, computation), **kwargs))(x),
                               got, rtol=1e-15)


@pytest.mark.parametrize("op, init, padding, base, wdil", [
    ("max", -np.inf, "SAME", None, None),
    ("max", 0.1, [(1, 0), (0, 2)], (1, 2), None),
    ("min", np.inf, "VALID", None, (2, 1)),
    ("add", 0.0, "SAME", (2, 1), None),
    ("add", 1.5, [(0, 1), (1, 1)], None, None),
    ("mul", 1.0, "SAME", None, None),
])
def test_reduce_window_derivatives(op, init, padding, base, wdil):
    x = values((4, 5), "real", 7) + np.arange(20.0).reshape(4, 5) * 0.1  # no ties among window elements
    f = lambda x: lax.reduce_window(x, init, getattr(lax, op), (2, 3), (1, 2), padding, base, wdil)
    check_grads(f, (x,), order=2)
    np.testing.assert_allclose(fgrad.jit(f)(x), f(x), rtol=1e-15)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(f(x))))
    np.testing.assert_allclose(fgrad.jit(g)(x), g(x), rtol=1e-13)


def test_max_pool_gradient_goes_to_the_maximum_and_ties_share_it():
    x = np.array([[1.0, 5.0, 2.0, 2.0], [3.0, 0.0, 2.0, 2.0]])
    pool = lambda x: fnp.sum(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID"))
    np.testing.assert_array_equal(fgrad.grad(pool)(x), [[0.0, 1.0, 0.25, 0.25], [0.0, 0.0, 0.25, 0.25]])
    np.testing.assert_array_equal(fgrad.jacfwd(pool)(x), fgrad.grad(pool)(x))


def test_generic_computations_and_pytrees():
    x = values((2, 5), "real", 1)
    logsumexp_pool = lambda x: lax.reduce_window(x, -np.inf, fnp.logaddexp, (1, 3), (1, 1), "SAME")
    loop = reduce_window_loop(x, -np.inf, np.logaddexp, (1, 3), (1, 1), [(0, 0), (1, 1)])
    np.testing.assert_allclose(logsumexp_pool(x), loop, rtol=1e-13)
    check_grads(logsumexp_pool, (x,), order=2)
    total, prod = lax.reduce_window((x, x + 3), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]),
                                    (2, 2), (1, 1), "VALID")
    np.testing.assert_allclose(total, reduce_window_loop(x, 0.0, np.add, (2, 2), (1, 1), [(0, 0)] * 2))
    np.testing.assert_allclose(prod, reduce_window_loop(x + 3, 1.0, np.multiply, (2, 2), (1, 1), [(0, 0)] * 2))
    np.testing.assert_allclose(fgrad.jit(logsumexp_pool)(x), logsumexp_pool(x), rtol=1e-15)


def test_float32_stays_float32_and_trivial_windows_pass_through():
    x = values((3, 4), "real", 2).astype(np.float32)
    assert lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "SAME").dtype == np.float32
    assert lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 1), "VALID").dtype == np.float32
    np.testing.assert_array_equal(lax.reduce_window(x, 0.0, lax.add, (1, 1), (1, 1), "VALID"), x)
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(lax.reduce_window(ints, 0, lax.add, (1, 2), (1, 1), "VALID"), [[1, 3], [7, 9]])
    np.testing.assert_array_equal(lax.reduce_window(ints, np.iinfo(ints.dtype).min, lax.max, (2, 1), (1, 1),
                                                    "VALID"), [[3, 4, 5]])


def test_padtype_to_pads_and_the_binary_operations():
    assert lax.padtype_to_pads((5, 6), (3, 4), (2, 1), "SAME") == same_pads((5, 6), (3, 4), (2, 1))
    assert lax.padtype_to_pads((5, 6), (2, 4), (1, 1), "same_lower") == same_pads((5, 6), (2, 4), (1, 1), True)
    assert lax.padtype_to_pads((5,), (3,), (2,), "VALID") == [(0, 0)]
    assert lax.add(2.0, 3.0) == 5.0 and lax.mul(2.0, 3.0) == 6.0
    assert lax.max(2.0, 3.0) == 3.0 and lax.min(2.0, 3.0) == 2.0 and np.isnan(lax.max(np.nan, 1.0))


def test_reduce_window_errors_say_what_is_wrong():
    x = np.zeros((3, 4))
    with pytest.raises(TypeError, match=r"reduce_window: window_dimensions must have 2 entries \(one per dimension\), got \(2,\)"):
        lax.reduce_window(x, 0.0, lax.add, (2,), (1, 1), "VALID")
    with pytest.raises(ValueError, match=r"padding must be 'SAME', 'SAME_LOWER' or 'VALID', got 'FULL'"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(ValueError, match=r"reduce_window: padding must have 2 \(low, high\) pairs"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), [(0, 0)])
    with pytest.raises(TypeError, match=r"init values must be scalars, got one of shape \(2,\)"):
        lax.reduce_window(x, np.zeros(2), lax.max, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match=r"an init value of dtype float64 does not fit an operand of dtype int64"):
        lax.reduce_window(np.arange(4), -np.inf, lax.max, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="the operands and init values must have the same tree structure"):
        lax.reduce_window((x, x), 0.0, lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(ValueError, match="window_dimensions must be positive integers, got"):
        lax.reduce_window(x, 0.0, lax.add, (0, 2), (1, 1), "VALID")


def test_a_tuple_of_one_operand_is_a_pytree():
    x = values((2, 4), "real", 3)
    (total,) = lax.reduce_window((x,), (0.0,), lambda a, b: (a[0] + b[0],), (1, 2), (1, 2), "VALID")
    np.testing.assert_allclose(total, x[:, ::2] + x[:, 1::2])
