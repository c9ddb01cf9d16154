"""reshape, transpose, broadcast_to, concatenate (through fgrad.numpy), and the shape
functions written on them (moveaxis, swapaxes, broadcast_to/arrays, atleast_nd, flips,
roll, rot90, tile, repeat): values and dtypes equal NumPy's; derivatives checked to second
order in both modes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.primitives import shapes as P
from fgrad.test_util import check_grads
from tests.numpy_checks import check_like_numpy
from tests.strategies import seeds, shapes, values

PRIMITIVES = {"reshape", "transpose", "broadcast_to", "concatenate"}

BATCH_CASES = {
    "reshape": (lambda x: fnp.reshape(x, (3, 2)), [(2, 3)], "real"),
    "transpose": (lambda x: fnp.transpose(x, (2, 0, 1)), [(2, 3, 4)], "real"),
    "broadcast_to": (lambda x: P.broadcast_to(x, shape=(2, 4, 3)), [(4, 1)], "real"),
    "concatenate": (lambda x, y: fnp.concatenate([x, y, x], axis=1), [(2, 3), (2, 1)], "real"),
    "stack": (lambda x, y: fnp.stack([x, y], axis=-1), [(2,), (2,)], "real"),
    "moveaxis": (lambda x: fnp.moveaxis(x, (0, -1), (1, 0)), [(2, 3, 4)], "real"),
    "broadcast_arrays": (lambda x, y: fnp.broadcast_arrays(x, y)[1], [(2, 1), (3,)], "real"),
    "flip": (lambda x: fnp.flip(x, (0, 2)), [(2, 3, 2)], "real"),
    "roll": (lambda x: fnp.roll(x, (1, -4), (1, 0)), [(3, 2)], "real"),
    "roll_flat": (lambda x: fnp.roll(x, 2), [(3, 2)], "real"),
    "rot90": (lambda x: fnp.rot90(x, 1, (1, 0)), [(2, 3)], "real"),
    "tile": (lambda x: fnp.tile(x, (2, 1, 3)), [(2, 3)], "real"),
    "repeat": (lambda x: fnp.repeat(x, 2, axis=0), [(2, 3)], "real"),
    "repeat_counts": (lambda x: fnp.repeat(x, [1, 0, 2], axis=-1), [(2, 3)], "real"),
}


@given(shape=shapes, seed=seeds, data=st.data())
def test_reshape(shape, seed, data):
    x = values(shape, "real", seed)
    size = x.size
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    d = data.draw(st.sampled_from(divisors))
    for new in [(size,), (d, size // d), (-1, d), ()] if size == 1 else [(size,), (d, size // d), (-1, d)]:
        np.testing.assert_array_equal(fnp.reshape(x, new), np.reshape(x, new))
        check_grads(lambda x, new=new: fnp.reshape(x, new) * 2.0, (x,), order=2)


@given(shape=shapes, seed=seeds, data=st.data())
def test_transpose_and_methods(shape, seed, data):
    x = values(shape, "real", seed)
    perm = tuple(data.draw(st.permutations(range(x.ndim))))
    np.testing.assert_array_equal(fnp.transpose(x, perm), np.transpose(x, perm))
    np.testing.assert_array_equal(fnp.transpose(x), x.T)
    check_grads(lambda x: fnp.transpose(x, perm) ** 2, (x,), order=2)
    check_grads(lambda x: x.T * 3.0, (x,), order=2)


@given(shape=shapes, seed=seeds, data=st.data())
def test_expand_dims_squeeze_ravel(shape, seed, data):
    x = values(shape, "real", seed)
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    np.testing.assert_array_equal(fnp.expand_dims(x, axis), np.expand_dims(x, axis))
    np.testing.assert_array_equal(fnp.squeeze(fnp.expand_dims(x, axis)), np.squeeze(x))
    check_grads(lambda x: fnp.squeeze(fnp.expand_dims(fnp.sin(x), axis), axis), (x,), order=2)
    check_grads(lambda x: fnp.ravel(x) * 2.0, (x,), order=2)


@given(shape=shapes, seed=seeds, data=st.data())
def test_broadcast_to(shape, seed, data):
    x = values(shape, "real", seed)
    target = data.draw(hnp.broadcastable_shapes(shape, min_dims=len(shape), max_dims=4, max_side=3))
    target = np.broadcast_shapes(shape, target)
    np.testing.assert_array_equal(fnp.full(target, 0.0) + x, np.broadcast_to(x, target))
    check_grads(lambda x: P.broadcast_to(x, shape=target) * 1.5, (x,), order=2)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), seed=seeds, data=st.data())
def test_concatenate_and_stack(shape, seed, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    other = list(shape)
    other[axis] = data.draw(st.integers(1, 3))
    x, y = values(shape, "real", seed), values(tuple(other), "real", seed + 1)
    np.testing.assert_array_equal(fnp.concatenate([x, y], axis), np.concatenate([x, y], axis))
    check_grads(lambda x, y: fnp.concatenate([x, fnp.sin(y), x], axis), (x, y), order=2)
    np.testing.assert_array_equal(fnp.stack([x, x * 2], axis), np.stack([x, x * 2], axis))
    check_grads(lambda x: fnp.stack([x, x * x], axis), (x,), order=2)


def test_array_of_traced_scalars_is_differentiable():
    import fgrad

    f = lambda a, b: fnp.sum(fnp.array([a, 1.0, b * b]) * np.array([1.0, 2.0, 3.0]))  # noqa: E731
    assert fgrad.grad(f, argnums=(0, 1))(2.0, 3.0) == (1.0, 18.0)
    check_grads(lambda a, b: fnp.array([[a, b], [b * a, 2.0]]), (2.0, 3.0), order=2)


# --- shape functions written on the primitives above ---------------------------------


@given(shape=shapes, seed=seeds, data=st.data())
def test_moveaxis_and_swapaxes(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    if n == 0:
        check_like_numpy(lambda x: fnp.moveaxis(x, (), ()) * 2.0, x)
        return
    src = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda a: a % n))
    dst = data.draw(st.lists(st.integers(-n, n - 1), min_size=len(src), max_size=len(src),
                             unique_by=lambda a: a % n))
    check_like_numpy(lambda x: fnp.moveaxis(fnp.sin(x), tuple(src), tuple(dst)), x)
    check_like_numpy(lambda x: fnp.moveaxis(x, src[0], dst[0]) * 2.0, x, order=1)
    a, b = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    check_like_numpy(lambda x: fnp.swapaxes(x, a, b) ** 2, x)


@given(shape=shapes, seed=seeds, data=st.data())
def test_broadcast_to_and_broadcast_arrays(shape, seed, data):
    x = values(shape, "real", seed)
    target = data.draw(hnp.broadcastable_shapes(shape, min_dims=len(shape), max_dims=4, max_side=3))
    target = np.broadcast_shapes(shape, target)
    check_like_numpy(lambda x: fnp.broadcast_to(x, target) * 1.5, x)
    other = values(data.draw(hnp.broadcastable_shapes(shape, max_dims=3, max_side=3)), "real", seed + 1)
    check_like_numpy(lambda x, y: fnp.broadcast_arrays(x, y * y), x, other)


@given(shape=shapes, seed=seeds)
def test_atleast_nd(shape, seed):
    x = values(shape, "real", seed)
    for f in (fnp.atleast_1d, fnp.atleast_2d, fnp.atleast_3d):
        check_like_numpy(lambda x, f=f: f(x) * 2.0, x, order=1)
        check_like_numpy(lambda x, f=f: f(x, fnp.sin(x)), x, order=1)
    check_grads(lambda x: fnp.atleast_3d(x) ** 2, (x,), order=2)


@given(shape=shapes, seed=seeds, data=st.data())
def test_flips(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-n, n - 1) if n else st.none(),
                               st.lists(st.integers(0, max(n - 1, 0)), unique=True, max_size=n).map(tuple)))
    check_like_numpy(lambda x: fnp.flip(x, axis) ** 2, x)
    if n >= 1:
        check_like_numpy(lambda x: fnp.flipud(x) * x, x)
    if n >= 2:
        check_like_numpy(lambda x: fnp.fliplr(x) * x, x)


@given(shape=shapes, seed=seeds, data=st.data())
def test_roll(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    shift = data.draw(st.integers(-5, 5))
    check_like_numpy(lambda x: fnp.roll(x, shift) * x, x)
    if n:
        axes = tuple(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
        shifts = tuple(data.draw(st.lists(st.integers(-5, 5), min_size=len(axes), max_size=len(axes))))
        check_like_numpy(lambda x: fnp.roll(x, shifts, axes) ** 2, x)
        check_like_numpy(lambda x: fnp.roll(x, shift, axes), x, order=1)


@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_rot90(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    k = data.draw(st.integers(-5, 5))
    a = data.draw(st.integers(-n, n - 1))
    b = data.draw(st.integers(-n, n - 1).filter(lambda b: b % n != a % n))
    check_like_numpy(lambda x: fnp.rot90(x, k, (a, b)) * x.sum(), x)


@given(shape=shapes, seed=seeds, data=st.data())
def test_tile(shape, seed, data):
    x = values(shape, "real", seed)
    reps = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=4).map(tuple)))
    check_like_numpy(lambda x: fnp.tile(x, reps) ** 2, x)


@given(shape=shapes, seed=seeds, data=st.data())
def test_repeat(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-n, n - 1) if n else st.none()))
    length = x.size if axis is None else shape[axis]
    repeats = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=length,
                                                               max_size=length)))
    check_like_numpy(lambda x: fnp.repeat(x, repeats, axis) ** 2, x)


def test_shape_function_errors_match_numpy():
    x = np.ones((2, 3))
    cases = [
        (lambda x: fnp.moveaxis(x, (0, 1), 0), ValueError, "same number of elements"),
        (lambda x: fnp.moveaxis(x, (0, 0), (0, 1)), ValueError, "repeated axis"),
        (lambda x: fnp.moveaxis(x, 2, 0), np.exceptions.AxisError, "out of bounds"),
        (lambda x: fnp.swapaxes(x, 0, 2), np.exceptions.AxisError, "axis2"),
        (lambda x: fnp.broadcast_to(x, (3, 3)), ValueError, "broadcast"),
        (lambda x: fnp.broadcast_to(x, (3,)), ValueError, "more dimensions"),
        (lambda x: fnp.broadcast_to(x, (-1, 3)), ValueError, "non-negative"),
        (lambda x: fnp.fliplr(x[0]), ValueError, "Input must be >= 2-d."),
        (lambda x: fnp.flipud(x[0, 0]), ValueError, "Input must be >= 1-d."),
        (lambda x: fnp.roll(x, (1, 2, 3), (0, 1)), ValueError, "shape mismatch"),
        (lambda x: fnp.roll(x, [[1]], 0), ValueError, "scalars or 1D sequences"),
        (lambda x: fnp.rot90(x, 1, (0,)), ValueError, "len"),
        (lambda x: fnp.rot90(x[0]), ValueError, "Axes must be different"),
        (lambda x: fnp.rot90(x, 1, (0, 3)), ValueError, "out of range"),
        (lambda x: fnp.tile(x, -1), ValueError, "negative dimensions"),
        (lambda x: fnp.repeat(x, [1, 2]), ValueError, "broadcast"),
        (lambda x: fnp.repeat(x, -1), ValueError, "negative"),
        (lambda x: fnp.repeat(x, 2, axis=2), np.exceptions.AxisError, "out of bounds"),
    ]
    for f, error, message in cases:
        with pytest.raises(error, match=message):
            f(x)  # NumPy
        with pytest.raises(error, match=message):
            fgrad.make_jaxpr(f)(x)  # fgrad


STATIC_ARGUMENTS = {  # function, the argument that fixes the result's shape: a call with it traced
    ("repeat", "repeats"): lambda r: fnp.repeat(np.ones(3), r),
    ("roll", "shift"): lambda s: fnp.roll(np.arange(4.0), s),
    ("tile", "reps"): lambda r: fnp.tile(np.arange(2.0), r),
    ("rot90", "k"): lambda k: fnp.rot90(np.eye(2), k),
    ("pad", "pad_width"): lambda w: fnp.pad(np.ones(2), w),
    ("split", "indices_or_sections"): lambda n: fnp.split(np.ones(4), n),
    ("array_split", "indices_or_sections"): lambda n: fnp.array_split(np.ones(4), n),
}


@pytest.mark.parametrize("function, argument", sorted(STATIC_ARGUMENTS))
def test_arguments_fixing_the_shape_must_be_concrete(function, argument):
    f = STATIC_ARGUMENTS[function, argument]
    message = f"fgrad.numpy.{function} needs `{argument}` as a concrete value.*i64\\[\\] value under `vmap"
    with pytest.raises(fgrad.ConcretizationTypeError, match=message):
        fgrad.vmap(f)(np.array([1, 2]))
    with pytest.raises(fgrad.ConcretizationTypeError, match=f"fgrad.numpy.{function} needs `{argument}`"):
        fgrad.make_jaxpr(f)(2)


def test_arguments_fixing_the_shape_may_be_values_of_differentiation():
    # Under grad the argument carries its value (here an argmax): it is used as a constant.
    x = np.array([1.0, 3.0, 2.0, 0.5])
    np.testing.assert_array_equal(fgrad.grad(lambda v: fnp.roll(v, fnp.argmax(v))[0] * v[1])(x), [0, 0.5, 0, 3])
    np.testing.assert_array_equal(fgrad.grad(lambda v: fnp.sum(fnp.tile(v, fnp.argmax(v) + 1)))(x), [2.0] * 4)
    np.testing.assert_array_equal(fgrad.grad(lambda v: fnp.rot90(fnp.diag(v), fnp.argmax(v))[0, 3])(x),
                                  [0, 0, 0, 1.0])
    np.testing.assert_array_equal(fgrad.grad(lambda v: fnp.sum(fnp.pad(v, fnp.argmax(v), "wrap")))(x),
                                  [2.0, 1.0, 1.0, 2.0])  # width 1: [v3, v0, v1, v2, v3, v0]


def test_repeat_of_a_0d_array_along_axis_0_like_numpy():
    a = np.float64(2.5)
    for axis in (0, -1, None):
        check_like_numpy(lambda a: fnp.repeat(a * a, 3, axis=axis), a)
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds for array of dimension 1"):
        fgrad.make_jaxpr(lambda a: fnp.repeat(a, 3, axis=1))(a)
