"""Functional updates, `fnp.at(x)[idx].op(v)` (and `x.at[idx].op(v)` on traced values):
a new array each time, x unchanged; NumPy's indexing; repeated integer indices
accumulate (set: the last write wins); values cast to x's dtype. The scatter
primitives' rules are checked in tests/primitives/test_indexing.py."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

OPS = ["set", "add", "subtract", "multiply", "divide", "power", "min", "max"]


def numpy_update(op, x, idx, v):
    """What `at(x)[idx].op(v)` computes, in plain NumPy."""
    out = x.copy()
    v = np.broadcast_to(np.asarray(v).astype(x.dtype), out[idx].shape)
    if op == "set":
        out[idx] = v
    elif op == "divide":  # as JAX: x divided by the product of the values at each element
        divisors = np.ones_like(x)
        np.multiply.at(divisors, idx, v)
        out = x / divisors
    else:
        ufunc = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "power": np.power,
                 "min": np.minimum, "max": np.maximum}[op]
        ufunc.at(out, idx, v)
    return out


INDICES = [
    np.array([0, 2, 0]),
    (slice(None), np.array([1, 1])),
    (np.array([[0], [1]]), np.array([2, 0, 2])),
    (1, slice(0, 3, 2)),
    (Ellipsis, -1),
    np.array([True, False, True]),
    [0, 0, 1],
    (np.array([1, 0]), slice(None), np.array([0, 0])),
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("i", range(len(INDICES)))
def test_updates_of_numpy_arrays_match_numpy_and_leave_x_unchanged(op, i):
    idx = INDICES[i]
    x = values((3, 4, 2) if i == len(INDICES) - 1 else (3, 4), "nonzero", i)
    x_before = x.copy()
    v = values(x[tuple(idx) if isinstance(idx, tuple) else idx].shape[-1:], "nonzero", i + 1)
    out = getattr(fnp.at(x)[idx], op)(v)
    assert type(out) is np.ndarray and out is not x
    np.testing.assert_allclose(out, numpy_update(op, x, idx, v), rtol=1e-15)
    np.testing.assert_array_equal(x, x_before)
    # the same through fgrad's primitives, and the derivatives to second order
    jaxpr = fgrad.make_jaxpr(lambda x, v: getattr(fnp.at(x)[idx], op)(v))(x, v)
    assert jaxpr.out_avals[0].shape == x.shape
    check_grads(lambda x, v: getattr(fnp.at(x * x)[idx], op)(fnp.sin(v) + 1.5), (x, v), order=2)
    np.testing.assert_array_equal(x, x_before)


def test_set_keeps_the_last_write_and_add_accumulates():
    x = np.zeros(3)
    idx = np.array([0, 2, 0])
    np.testing.assert_array_equal(fnp.at(x)[idx].set(np.array([1.0, 2.0, 3.0])), [3.0, 0.0, 2.0])
    np.testing.assert_array_equal(fnp.at(x)[idx].add(1.0), [2.0, 0.0, 1.0])
    np.testing.assert_array_equal(fnp.at(np.ones(3))[idx].multiply(3.0), [9.0, 1.0, 3.0])
    g = fgrad.grad(lambda v: fnp.sum(fnp.at(x)[idx].set(v) * np.array([1.0, 10.0, 100.0])))(np.ones(3))
    np.testing.assert_array_equal(g, [0.0, 100.0, 1.0])  # only the last write to x[0] counts
    g = fgrad.grad(lambda v: fnp.sum(fnp.at(x)[idx].add(v) * np.array([1.0, 10.0, 100.0])))(np.ones(3))
    np.testing.assert_array_equal(g, [1.0, 100.0, 1.0])


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data(),
       op=st.sampled_from(OPS))
def test_updates_with_drawn_indices(shape, seed, data, op):
    x = values(shape, "nonzero", seed)
    idx = data.draw(st.one_of(
        hnp.basic_indices(shape, allow_ellipsis=True),
        hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(max_dims=2, max_side=3)),
    ))
    v = values(x[idx].shape, "nonzero", seed + 1)
    np.testing.assert_allclose(getattr(fnp.at(x)[idx], op)(v), numpy_update(op, x, idx, v), rtol=1e-15)
    if op in ("min", "max") and np.any(np.abs((x * x)[idx] - (np.sin(v) + 1.5)) < 1e-3):
        return  # a tie: the derivative jumps there
    check_grads(lambda x, v: getattr(fnp.at(x * x)[idx], op)(fnp.sin(v) + 1.5), (x, v), order=2)


def test_get():
    x = np.arange(6.0).reshape(2, 3)
    out = fnp.at(x)[:, 1].get()
    np.testing.assert_array_equal(out, x[:, 1])
    out[0] = 100.0  # a copy, not a view of x
    assert x[0, 1] == 1.0
    g = fgrad.grad(lambda x: fnp.sum(fnp.at(x)[np.array([0, 0]), 2].get() ** 2))(x)
    np.testing.assert_array_equal(g, [[0, 0, 4 * 2.0], [0, 0, 0]])


def test_values_are_cast_to_the_dtype_of_x_and_broadcast():
    ints = np.arange(4)
    out = fnp.at(ints)[1:3].set(2.7)
    assert out.dtype == ints.dtype and out.tolist() == [0, 2, 2, 3]
    assert fnp.at(ints)[np.array([0, 0])].add(1.5).tolist() == [2, 1, 2, 3]
    f32 = np.ones(3, np.float32)
    assert fnp.at(f32)[0].add(np.float64(1.0)).dtype == np.float32
    assert fgrad.make_jaxpr(lambda x: fnp.at(x)[0].add(2.0))(f32).out_avals[0].dtype == np.float32
    # a leading axis of size 1 in the values is dropped, as NumPy does
    np.testing.assert_array_equal(fnp.at(np.zeros((2, 2)))[0].set(np.ones((1, 2))), [[1, 1], [0, 0]])
    # the derivative stops where the values are cast to an integer array
    assert fgrad.grad(lambda v: fnp.sum(fnp.at(ints)[0].set(v)) * 1.0 + v)(1.5) == 1.0


def test_misuse_raises():
    x = np.zeros(4)
    with pytest.raises(ValueError, match=r"cannot set values of shape \(3,\) at an index selecting shape \(2,\)"):
        fnp.at(x)[:2].set(np.ones(3))
    with pytest.raises(ValueError, match="cannot add values of shape"):
        fgrad.grad(lambda v: fnp.sum(fnp.at(x)[:2].add(v)))(np.ones(3))
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.at(x)[np.array([4])].max(1.0)
    with pytest.raises(IndexError, match="only integers, slices"):
        fnp.at(x)[0.5].set(1.0)
    with pytest.raises(TypeError, match="divide needs a float or complex array"):
        fnp.at(np.arange(3))[0].divide(2)


def test_updates_under_vmap():
    xs = values((3, 4), "real", 0)
    vs = values((3, 2), "real", 1)
    idx = np.array([3, 0])
    for op in OPS:
        got = fgrad.vmap(lambda x, v, op=op: getattr(fnp.at(x)[idx], op)(v))(xs, vs)
        expected = np.stack([numpy_update(op, x, idx, v) for x, v in zip(xs, vs)])
        np.testing.assert_allclose(got, expected, rtol=1e-15)
        shared = fgrad.vmap(lambda v, op=op: getattr(fnp.at(xs[0])[idx], op)(v))(vs)
        np.testing.assert_allclose(shared, np.stack([numpy_update(op, xs[0], idx, v) for v in vs]), rtol=1e-15)


def test_jaxpr_shows_the_scatter():
    jaxpr = fgrad.make_jaxpr(lambda x, v: fnp.at(x)[np.array([0, 0]), 1:].max(v))(np.zeros((2, 3)), 1.0)
    assert "index_max[idx=[<int64[2]>, 1:]]" in str(jaxpr)


def test_at_on_traced_values():
    def f(x, at):
        y = at(x)[0].set(x[1] * 2.0)
        return fnp.sum(at(y)[np.array([1, 1])].add(3.0) ** 2)

    x = np.array([1.0, 2.0, 3.0])
    method = fgrad.hessian(lambda x: f(x, lambda t: t.at))(x)  # x.at: traced values only
    np.testing.assert_allclose(method, fgrad.hessian(lambda x: f(x, fnp.at))(x))
    assert fgrad.vmap(lambda x: x.at[-1].max(0.0))(-np.ones((2, 3))).tolist() == [[-1, -1, 0]] * 2


def test_divide_is_an_exact_division():
    # x * (1 / v) would overflow here (1 / 1e-310 is inf) and round elsewhere
    assert fnp.at(np.array([1e-310]))[0].divide(1e-310) == 1.0
    x, v = values((6,), "nonzero", 3), values((3,), "nonzero", 4)
    idx = np.array([4, 0, 2])
    for out in (fnp.at(x)[idx].divide(v), fgrad.jvp(lambda x: fnp.at(x)[idx].divide(v), (x,), (x,))[0]):
        np.testing.assert_array_equal(out[idx], x[idx] / v)  # bit for bit
        np.testing.assert_array_equal(np.delete(out, idx), np.delete(x, idx))
    # an element selected twice is divided by the product of its values, as JAX does
    np.testing.assert_array_equal(fnp.at(np.array([6.0, 1.0]))[np.array([0, 0])].divide(np.array([2.0, 3.0])),
                                  [1.0, 1.0])


def test_power_and_apply_repeat_for_each_selection_like_ufunc_at():
    x = values((3, 4), "positive", 5)
    idx = (np.array([0, 2, 0, 0]), np.array([1, 3, 1, 1]))
    for f in (fnp.sin, fnp.exp, np.negative):
        expected = x.copy()
        getattr(np, f.__name__).at(expected, idx)
        np.testing.assert_allclose(fnp.at(x)[idx].apply(f), expected, rtol=1e-15)
        check_grads(lambda x, f=f: fnp.at(x)[idx].apply(f), (x,), order=2)
    check_grads(lambda x: fnp.at(x)[1:, ::2].apply(fnp.log), (x,), order=2)
    v = values((4,), "positive", 6)
    np.testing.assert_allclose(fnp.at(x)[idx].power(v), numpy_update("power", x, idx, v), rtol=1e-15)
    check_grads(lambda x, v: fnp.at(x)[idx].power(v), (x, v), order=2)
    ints = np.arange(5)
    assert fnp.at(ints)[np.array([1, 1, 3])].power(2).tolist() == [0, 1, 2, 9, 4]
    assert fnp.at(ints)[1:3].apply(fnp.sqrt).dtype == ints.dtype  # cast back, as set casts
    got = fgrad.vmap(lambda x: fnp.at(x)[np.array([1, 1])].apply(fnp.sin))(x)
    np.testing.assert_allclose(got, np.stack([fnp.at(r)[np.array([1, 1])].apply(np.sin) for r in x]))
    with pytest.raises(ValueError, match=r"cannot raise to the power of values of shape \(3,\)"):
        fnp.at(x)[0, :2].power(np.ones(3))


def test_jax_keywords():
    x = np.arange(5.0)
    idx = np.array([1, 3])
    for op in OPS:
        np.testing.assert_array_equal(
            getattr(fnp.at(x)[idx], op)(2.0, indices_are_sorted=True, unique_indices=True, mode="promise_in_bounds"),
            getattr(fnp.at(x)[idx], op)(2.0))
    np.testing.assert_array_equal(fnp.at(x)[idx].get(indices_are_sorted=True, unique_indices=True), x[idx])
    # mode="clip": a negative index counts from the end once, then indices are clamped into bounds
    clip = (np.array([7, -1, -9, 2]),)
    np.testing.assert_array_equal(fnp.at(x)[clip].get(mode="clip"), [4.0, 4.0, 0.0, 2.0])
    np.testing.assert_array_equal(fnp.at(x)[9].set(-1.0, mode="clip"), [0, 1, 2, 3, -1])
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(fnp.at(m)[..., np.array([5, -6])].get(mode="clip"), m[:, [3, 0]])
    np.testing.assert_array_equal(fnp.at(m)[np.array([True, False, True]), 7].add(1.0, mode="clip"),
                                  m + np.array([[0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 1]]))
    g = fgrad.grad(lambda x: fnp.sum(fnp.at(x)[np.array([6, 6])].get(mode="clip")))(x)
    np.testing.assert_array_equal(g, [0, 0, 0, 0, 2.0])
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.at(x)[7].get(mode="promise_in_bounds")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"mode": "fill"}, TypeError, "got mode='fill', which fgrad does not support.*'clip'"),
    ({"mode": "drop"}, TypeError, "got mode='drop', which fgrad does not support"),
    ({"mode": "wrap"}, ValueError, "invalid mode 'wrap'; fgrad supports None, 'promise_in_bounds' and 'clip'"),
])
def test_unsupported_jax_keywords_say_so(kwargs, error, message):
    x = np.arange(3.0)
    if kwargs["mode"] not in ("fill", "drop"):  # get takes those (tests/primitives/test_gather.py)
        with pytest.raises(error, match=message):
            fnp.at(x)[0].get(**kwargs)
    with pytest.raises(error, match=message):
        fgrad.grad(lambda x: fnp.sum(x.at[0].add(1.0, **kwargs)))(x)


def test_fill_value_without_mode_fill_says_where_it_goes():
    with pytest.raises(TypeError, match=r"fill_value is for at\[...\].get\(mode='fill'"):
        fnp.at(np.arange(3.0))[0].get(fill_value=0.0)


def test_at_of_arrays_that_are_not_traced():
    # A NumPy array has no .at (only traced values do), so in code that may get either,
    # fnp.at(x) is the spelling that always works, e.g. when x is not differentiated:
    f = lambda x, y: fnp.sum(fnp.at(x)[0].set(y) ** 2)  # noqa: E731
    assert fgrad.grad(f, argnums=1)(np.ones(3), 2.0) == 4.0
    np.testing.assert_array_equal(fgrad.grad(f)(np.ones(3), 2.0), [0.0, 2.0, 2.0])
    with pytest.raises(AttributeError):
        fgrad.grad(lambda x, y: fnp.sum(x.at[0].set(y) ** 2), argnums=1)(np.ones(3), 2.0)
