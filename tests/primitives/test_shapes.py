"""reshape, transpose, broadcast_to, concatenate (through fgrad.numpy):
values equal NumPy's; derivatives checked to second order in both modes."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad.numpy as fnp
from fgrad.primitives import shapes as P
from fgrad.test_util import check_grads
from tests.strategies import seeds, shapes, values

PRIMITIVES = {"reshape", "transpose", "broadcast_to", "concatenate"}

BATCH_CASES = {
    "reshape": (lambda x: fnp.reshape(x, (3, 2)), [(2, 3)], "real"),
    "transpose": (lambda x: fnp.transpose(x, (2, 0, 1)), [(2, 3, 4)], "real"),
    "broadcast_to": (lambda x: P.broadcast_to(x, shape=(2, 4, 3)), [(4, 1)], "real"),
    "concatenate": (lambda x, y: fnp.concatenate([x, y, x], axis=1), [(2, 3), (2, 1)], "real"),
    "stack": (lambda x, y: fnp.stack([x, y], axis=-1), [(2,), (2,)], "real"),
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
