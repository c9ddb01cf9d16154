"""Sorting and searching (sort, argsort, sort_by_key, searchsorted, partition,
argpartition, lexsort, median, unique): values and dtypes equal NumPy's; sort's and median's
derivatives checked to second order in both modes; index results carry none."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.primitives import sorting
from fgrad.test_util import check_grads
from tests.strategies import seeds, shapes, values

PRIMITIVES = {"sort", "argsort", "argpartition", "sort_by_key", "searchsorted"}

BATCH_CASES = {
    "sort": (lambda x: fnp.sort(x, axis=0), [(3, 4)], "real"),
    "sort_flattened": (lambda x: fnp.sort(x, axis=None), [(2, 3)], "real"),
    "sort_grad": (fgrad.grad(lambda x: fnp.sum(fnp.sort(x) * np.arange(4.0))), [(4,)], "real"),
    "argsort": (fnp.argsort, [(3, 4)], "real"),
    "argpartition": (lambda x: fnp.argpartition(x, (0, -1), axis=0), [(4, 3)], "real"),
    "partition": (lambda x: fnp.partition(x, 2), [(2, 5)], "real"),
    "sort_by_key": (lambda k, v: sorting.sort_by_key(k, v, axis=1), [(2, 4), (2, 4)], "real"),
    "searchsorted": (lambda a, v: fnp.searchsorted(fnp.sort(a), v), [(5,), (2, 3)], "real"),
    "searchsorted_right": (lambda a, v: fnp.searchsorted(fnp.sort(a), v, side="right"), [(4,), ()], "real"),
    "median": (lambda x: fnp.median(x, axis=-1), [(3, 4)], "real"),
    "lexsort": (lambda a, b: fnp.lexsort((a, b > 0)), [(5,), (5,)], "real"),
}


def distinct(x):
    s = np.sort(np.ravel(x))
    return s.size < 2 or np.min(np.diff(s)) > 1e-3


def axis_for(ndim, default=-1):
    """None (the flattened array) or one axis, negative allowed."""
    return st.one_of(st.none(), st.integers(-ndim, ndim - 1)) if ndim else st.none()


@given(shape=shapes, seed=seeds, data=st.data())
def test_sort(shape, seed, data):
    x = values(shape, "real", seed)
    axis = data.draw(axis_for(x.ndim))
    expected = np.sort(x, axis=axis)
    out, tangent = fgrad.jvp(lambda x: fnp.sort(x, axis=axis), (x,), (x,))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(tangent, expected)  # the tangent moves with its value
    assume(distinct(x))
    check_grads(lambda x: fnp.sort(x * x * x, axis=axis), (x,), order=2)


def test_sort_ties_keep_their_order_in_the_derivative():
    x = np.array([1.0, 1.0, 0.0, 1.0])
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    g = fgrad.grad(lambda x: fnp.sum(fnp.sort(x) * weights))(x)
    np.testing.assert_array_equal(g, [2.0, 3.0, 1.0, 4.0])  # stable: the tied ones stay in order
    np.testing.assert_array_equal(fgrad.jacfwd(fnp.sort)(x), fgrad.jacrev(fnp.sort)(x))


def test_sort_and_argsort_errors_and_defaults_match_numpy():
    with pytest.raises(np.exceptions.AxisError, match="axis -1 is out of bounds for array of dimension 0"):
        fgrad.grad(fnp.sort)(1.0)
    with pytest.raises(ValueError, match="Cannot specify order"):
        fgrad.grad(lambda x: fnp.sum(fnp.sort(x, order="a")))(np.ones(2))
    x = values((2, 3), "real", 0)
    np.testing.assert_array_equal(fgrad.jvp(lambda x: fnp.sort(x, axis=None, kind="heapsort"), (x,), (x,))[0],
                                  np.sort(x, axis=None))
    assert fgrad.jvp(lambda x: fnp.argsort(np.float64(2.0), axis=None), (x,), (x,))[0].tolist() == [0]


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), seed=seeds, data=st.data())
def test_argsort_is_stable(shape, seed, data):
    x = np.round(values(shape, "real", seed), 1)  # with ties
    axis = data.draw(axis_for(x.ndim))
    expected = np.argsort(x, axis=axis, kind="stable")
    out, tangent = fgrad.jvp(lambda x: fnp.argsort(x, axis=axis), (x,), (x,))
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == expected.dtype and not np.any(tangent)
    assert fgrad.make_jaxpr(lambda x: fnp.argsort(x, axis=axis))(x).out_avals[0].dtype == np.intp
    g = fgrad.grad(lambda x: fnp.sum(x) * fnp.sum(fnp.argsort(x, axis=axis)))(x)
    np.testing.assert_array_equal(g, np.full(x.shape, np.sum(expected)))


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_sort_by_key(shape, seed, data):
    keys = np.round(values(shape, "real", seed), 1)
    v = values(shape, "real", seed + 1)
    axis = data.draw(st.integers(0, len(shape) - 1))
    expected = np.take_along_axis(v, np.argsort(keys, axis=axis, kind="stable"), axis=axis)
    np.testing.assert_array_equal(sorting.sort_by_key(keys, v, axis=axis), expected)
    check_grads(lambda v: sorting.sort_by_key(keys, v * v, axis=axis), (v,), order=2)
    keys = values(shape, "real", seed + 2)
    assume(distinct(keys))  # away from ties, where the order jumps
    check_grads(lambda k, v: sorting.sort_by_key(k, v, axis=axis), (keys, v), order=2)


def test_sort_by_key_needs_equal_shapes():
    with pytest.raises(ValueError, match="must have the same shape"):
        fgrad.make_jaxpr(lambda k, v: sorting.sort_by_key(k, v, axis=0))(np.ones(3), np.ones(2))


@given(n=st.integers(1, 6), v_shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), seed=seeds,
       side=st.sampled_from(["left", "right"]), use_sorter=st.booleans())
def test_searchsorted(n, v_shape, seed, side, use_sorter):
    a = np.round(values((n,), "real", seed), 1)
    v = np.round(values(v_shape, "real", seed + 1), 1)  # some equal to elements of a
    v.ravel()[:1] = a[:1]
    sorter = np.argsort(a) if use_sorter else None
    a = a if use_sorter else np.sort(a)
    expected = np.searchsorted(a, v, side=side, sorter=sorter)
    out, tangent = fgrad.jvp(lambda a, v: fnp.searchsorted(a, v, side=side, sorter=sorter), (a, v), (a, v))
    np.testing.assert_array_equal(out, expected)
    assert np.asarray(out).dtype == expected.dtype and np.shape(out) == np.shape(expected)
    jaxpr = fgrad.make_jaxpr(lambda a, v: fnp.searchsorted(a, v, side=side, sorter=sorter))(a, v)
    assert jaxpr.out_avals[0].dtype == np.intp


def test_searchsorted_batched_over_sorted_arrays_places_nan_last():
    a = np.array([[0.0, 1.0, np.nan], [1.0, 2.0, 3.0]])
    v = np.array([np.nan, 1.0, 5.0])
    for side in ("left", "right"):
        got = fgrad.vmap(lambda a: fnp.searchsorted(a, v, side=side))(a)
        np.testing.assert_array_equal(got, [np.searchsorted(row, v, side=side) for row in a])


def test_searchsorted_errors():
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        fgrad.make_jaxpr(lambda v: fnp.searchsorted(np.ones(3), v, side="middle"))(1.0)
    with pytest.raises(ValueError, match="must be 1-d"):
        fgrad.make_jaxpr(lambda v: fnp.searchsorted(np.ones((2, 2)), v))(1.0)


def assert_partitioned(out, x, kth, axis):
    """`out` is a partition of `x` at `kth` along `axis`: a rearrangement of each line with the sorted
    values at the kth positions, none larger before one and none smaller after it. Which order the
    elements within each part take is NumPy's implementation's choice, not part of the contract."""
    if axis is None:
        x, out, axis = x.ravel(), np.asarray(out).ravel(), 0
    out, expected = np.moveaxis(out, axis, -1), np.sort(np.moveaxis(x, axis, -1), axis=-1)
    np.testing.assert_array_equal(np.sort(out, axis=-1), expected)
    n = out.shape[-1]
    for k in np.atleast_1d(kth) % n:
        np.testing.assert_array_equal(out[..., k], expected[..., k])
        assert np.all(out[..., :k] <= out[..., k:k + 1]) and np.all(out[..., k + 1:] >= out[..., k:k + 1])


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), seed=seeds, data=st.data())
def test_partition_and_argpartition_partition_as_numpys_do(shape, seed, data):
    x = np.round(values(shape, "real", seed), data.draw(st.integers(0, 2)))  # ties at times
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else shape[axis]
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
    out, tangent = fgrad.jvp(lambda x: fnp.partition(x, kth, axis=axis), (x,), (x,))
    assert_partitioned(out, x, kth, axis)
    np.testing.assert_array_equal(tangent, out)  # the tangent moves with its value
    idx = fgrad.jvp(lambda x: fnp.argpartition(x, kth, axis=axis), (x,), (x,))[0]
    assert idx.dtype == np.argpartition(x, kth, axis=axis).dtype
    line = x.ravel() if axis is None else x
    positions = np.sort(idx, axis=-1 if axis is None else axis)  # each position once in each line
    np.testing.assert_array_equal(positions, np.broadcast_to(
        np.arange(n).reshape([-1 if a == (axis or 0) % line.ndim else 1 for a in range(line.ndim)]), line.shape))
    assert_partitioned(np.take_along_axis(line, idx, axis=-1 if axis is None else axis), x, kth, axis)
    assume(distinct(x))
    check_grads(lambda x: fnp.partition(x, kth, axis=axis), (x,), order=2)


def test_partition_errors_match_numpy():
    with pytest.raises(ValueError, match=r"kth\(=3\) out of bounds \(3\)"):
        fgrad.grad(lambda x: fnp.sum(fnp.partition(x, 3)))(np.ones(3))
    with pytest.raises(ValueError, match=r"kth\(=-4\) out of bounds \(3\)"):
        fgrad.grad(lambda x: fnp.sum(fnp.argpartition(x, -4) * x))(np.ones(3))
    with pytest.raises(TypeError, match="Partition index must be integer"):
        fgrad.grad(lambda x: fnp.sum(fnp.partition(x, 1.0)))(np.ones(3))


@given(n=st.integers(1, 6), num_keys=st.integers(1, 3), seed=seeds, as_array=st.booleans(),
       leading=st.integers(0, 2))
def test_lexsort(n, num_keys, seed, as_array, leading):
    keys = np.round(values((num_keys, *(leading,) * bool(leading), n), "unit", seed))  # many ties
    arg = keys if as_array else tuple(keys)
    expected = np.lexsort(arg)
    out = fgrad.jvp(lambda k: fnp.lexsort(k if as_array else tuple(k)), (keys,), (keys,))[0]
    np.testing.assert_array_equal(out, expected)
    assert np.asarray(out).dtype == expected.dtype
    jaxpr = fgrad.make_jaxpr(lambda k: fnp.lexsort(tuple(k), axis=-1))(keys)
    np.testing.assert_array_equal(fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, keys)[0], expected)


def test_lexsort_of_one_key_and_errors():
    np.testing.assert_array_equal(fgrad.jvp(fnp.lexsort, (np.array([2.0, 1.0]),), (np.ones(2),))[0], [1, 0])
    with pytest.raises(ValueError, match="all keys need to be the same shape"):
        fgrad.make_jaxpr(lambda a, b: fnp.lexsort((a, b)))(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="need sequence of keys"):
        fgrad.make_jaxpr(lambda a: fnp.lexsort(()) + a)(1.0)


def axes_for(ndim):
    return st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1) if ndim else st.none(),
        st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, min_size=1, max_size=ndim).map(tuple)
        if ndim else st.none(),
    )


@given(shape=shapes, seed=seeds, data=st.data(), keepdims=st.booleans())
def test_median(shape, seed, data, keepdims):
    x = values(shape, "real", seed)
    axis = data.draw(axes_for(x.ndim))
    expected = np.median(x, axis=axis, keepdims=keepdims)
    out = fgrad.jvp(lambda x: fnp.median(x, axis=axis, keepdims=keepdims), (x,), (x,))[0]
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    assert np.shape(out) == np.shape(expected) and np.asarray(out).dtype == expected.dtype
    assume(distinct(x))
    check_grads(lambda x: fnp.median(x, axis=axis, keepdims=keepdims), (x,), order=2)


def test_median_derivative_goes_to_the_middle_elements():
    np.testing.assert_array_equal(fgrad.grad(fnp.median)(np.array([1.0, 3.0, 2.0, 4.0])), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(fgrad.grad(fnp.median)(np.array([5.0, 3.0, 1.0])), [0, 1, 0])


def test_median_of_nans_integers_and_empty_arrays_like_numpy():
    x = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a, kwargs in ((x, {"axis": 1}), (x, {}), (np.arange(5), {}), (np.ones((0, 2)), {"axis": 0}),
                          (np.ones(0), {})):
            expected = np.median(a, **kwargs)
            jaxpr = fgrad.make_jaxpr(lambda a: fnp.median(a, **kwargs))(a)
            got = fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, a)[0]
            np.testing.assert_array_equal(got, expected)
            assert jaxpr.out_avals[0].dtype == np.asarray(expected).dtype
    g = fgrad.grad(lambda x: fnp.sum(fnp.median(x, axis=1)[1:]))(x)
    np.testing.assert_array_equal(g, [[0, 0, 0], [0, 0, 1]])


@given(shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=5), seed=seeds, axis=st.sampled_from([None, 0]))
def test_unique_values_carry_the_derivative_of_the_elements_they_come_from(shape, seed, axis):
    x = values(shape, "real", seed)
    assume(distinct(x))

    def f(x):
        u = fnp.unique(x, axis=axis)
        return fnp.sum(u**2 * np.cos(np.arange(u.size)).reshape(u.shape))  # each unique value weighted apart

    np.testing.assert_array_equal(f(x), fgrad.jvp(f, (x,), (x,))[0])
    check_grads(f, (x,), order=2)


def test_unique_at_ties_takes_the_derivative_of_the_first_occurrence_as_jax_does():
    x = np.array([2.0, 1.0, 2.0])
    g = fgrad.grad(lambda x: fnp.sum(fnp.unique(x) * np.array([10.0, 100.0])))(x)
    np.testing.assert_array_equal(g, [100.0, 10.0, 0.0])
    g = fgrad.grad(lambda x: np.sum(np.unique(x ** 2)))(np.array([0.5, 1.5, 2.5]))  # plain NumPy's unique
    np.testing.assert_allclose(g, [1.0, 3.0, 5.0])  # finite differences of sum(unique(x**2)) = sum(x**2)


def test_unique_indices_inverse_and_counts_are_concrete_numpy_arrays():
    x = np.array([3.0, 1.0, 3.0, 2.0])
    seen = []

    def f(x):
        values, index, inverse, counts = fnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
        seen.append((index, inverse, counts))
        return fnp.sum(values * values)

    np.testing.assert_array_equal(fgrad.grad(f)(x), [6.0, 2.0, 0.0, 4.0])
    fgrad.grad(fgrad.grad(lambda x: f(x[None])))(1.0)  # nested: the value under both tracers
    for got, expected in zip(seen[0], np.unique(x, return_index=True, return_inverse=True, return_counts=True)[1:]):
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(seen[1][2], [1])


@pytest.mark.parametrize("transform", [fgrad.make_jaxpr, fgrad.vmap])
def test_unique_of_abstract_values_says_why_not(transform):
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.unique needs concrete values"):
        transform(lambda x: fnp.unique(x))(np.ones((2, 3)))


def test_plain_numpy_calls_on_tracers_use_these_functions():
    x = values((2, 5), "real", 3)
    f = lambda np_: lambda x: np_.sum(np_.sort(x) ** 2 * np_.argsort(x)) + np_.median(x)  # noqa: E731
    np.testing.assert_allclose(fgrad.grad(f(np))(x), fgrad.grad(f(fnp))(x))


@pytest.mark.parametrize("name, args", [("argsort", (0,)), ("argpartition", (1, 0)), ("searchsorted", (0.5,))])
def test_array_methods_of_tracers(name, args):
    x = values((3, 2), "real", 0)
    if name == "searchsorted":
        x = np.sort(x[:, 0])
    expected = getattr(x, name)(*args)
    got = fgrad.jvp(lambda x: getattr(x, name)(*args), (x,), (x,))[0]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["sort", "partition"])
def test_in_place_sort_methods_of_tracers_raise(name):
    # NumPy's x.sort() sorts x itself and returns None; a traced array cannot change, and
    # returning a sorted copy would leave the caller's array silently unsorted.
    def f(x):
        a = x.copy()
        getattr(a, name)(0)
        return a[0]

    x = np.array([3.0, 1.0, 2.0])
    assert f(x) == 1.0  # NumPy
    message = rf"ndarray.{name} {name}s in place, and traced arrays cannot be changed: use y = fnp.{name}\(x\)"
    with pytest.raises(TypeError, match=message):
        fgrad.jvp(f, (x,), (x,))
    with pytest.raises(TypeError, match=message):
        fgrad.grad(f)(x)
    with pytest.raises(TypeError, match=message):
        fgrad.make_jaxpr(f)(x)


def test_traced_kth_is_refused_naming_it_and_concrete_kth_works():
    x = np.array([1.0, 3.0, 2.0, 0.5])
    for f in (fnp.partition, fnp.argpartition):
        with pytest.raises(fgrad.ConcretizationTypeError, match=f"fgrad.numpy.{f.__name__} needs `kth`.*vmap"):
            fgrad.vmap(lambda k, f=f: f(x, k))(np.array([1, 2]))
    # under grad the index has a value: it is used as a constant
    g = fgrad.grad(lambda v: fnp.partition(v, fnp.argmax(v))[0])(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 1.0])


def test_argsort_and_argpartition_take_a_0d_array_as_1d_like_numpy():
    a = np.array(2.0)
    for f, args in ((fnp.argsort, ()), (fnp.argpartition, (0,))):
        for axis in (0, -1, None):
            expected = getattr(np, f.__name__)(a, *args, axis=axis)
            got = fgrad.jvp(lambda a: f(a, *args, axis=axis), (a,), (a,))[0]
            np.testing.assert_array_equal(got, expected)
            assert np.shape(got) == expected.shape == (1,)
        with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds for array of dimension 1"):
            fgrad.make_jaxpr(lambda a: f(a, *args, axis=1))(a)
    for f, args in ((fnp.sort, ()), (fnp.partition, (0,))):  # NumPy refuses these
        with pytest.raises(np.exceptions.AxisError):
            getattr(np, f.__name__)(a, *args, axis=0)
        with pytest.raises(np.exceptions.AxisError):
            fgrad.make_jaxpr(lambda a: f(a, *args, axis=0))(a)
