"""getitem with basic and integer-array indices; the scatters index_add (its transpose),
index_set, index_mul, index_min, index_max, with repeated indices; and take,
take_along_axis, diagonal, trace: values equal NumPy's; derivatives to second order in
both modes."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.numpy.indexing import static_index
from fgrad.primitives import indexing
from fgrad.test_util import check_grads
from tests.numpy_checks import check_like_numpy, staged
from tests.strategies import seeds, shapes, values

PRIMITIVES = {"getitem", "index_add", "index_set", "index_mul", "index_min", "index_max"}

SCATTERS = {
    "index_add": (indexing.index_add, np.add),
    "index_set": (indexing.index_set, None),
    "index_mul": (indexing.index_mul, np.multiply),
    "index_min": (indexing.index_min, np.minimum),
    "index_max": (indexing.index_max, np.maximum),
}


def _scatter(name, idx):
    prim = SCATTERS[name][0]
    return lambda x, y: prim(x, y, idx=static_index(idx))


def _scatter_cases():
    repeated = np.array([2, 0, 2, 2])
    separated = (np.array([0, 1, 1]), slice(None), np.array([1, 0, 1]))
    cases = {}
    for name in SCATTERS:
        cases[name] = (_scatter(name, repeated), [(3, 2), (4, 2)], "real")
        cases[f"{name}_broadcast"] = (_scatter(name, (slice(1, 3), 0)), [(4, 2), ()], "real")
        cases[f"{name}_separated"] = (_scatter(name, separated), [(2, 3, 2), (3, 3)], "real")
    return cases

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
    "getitem_int_and_array_separated": (lambda x: x[0, :, np.array([1, 0, 1])], [(2, 3, 2)], "real"),
    **_scatter_cases(),
    "take": (lambda x: fnp.take(x, np.array([[2, 0], [-1, 1]]), axis=1), [(2, 3)], "real"),
    "take_along_axis": (lambda x: fnp.take_along_axis(x, np.array([[2], [0]]), axis=-1), [(2, 3)], "real"),
    "diagonal": (lambda x: fnp.diagonal(x, -1, 2, 0), [(3, 2, 4)], "real"),
    "trace": (lambda x: fnp.trace(x, 1), [(3, 4)], "real"),
    "at_set": (lambda x, y: fnp.at(x)[np.array([1, 1])].set(y), [(3,), ()], "real"),
    "at_max": (lambda x, y: fnp.at(x)[:, np.array([0, 0])].max(y), [(2, 3), (2,)], "real"),
    "at_divide": (lambda x, y: fnp.at(x)[np.array([0, 2, 0])].divide(y), [(3,), (3,)], "nonzero"),
    "at_power": (lambda x, y: fnp.at(x)[1:].power(y), [(3,), ()], "positive"),
    "at_apply": (lambda x: fnp.at(x)[:, np.array([1, 1])].apply(fnp.sin), [(2, 3)], "real"),
}


@given(shape=shapes, seed=seeds, data=st.data())
def test_basic_indexing(shape, seed, data):
    x = values(shape, "real", seed)
    idx = data.draw(hnp.basic_indices(shape, allow_ellipsis=True, allow_newaxis=True))
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


def test_an_empty_list_index_selects_nothing_like_numpy():
    x = np.arange(6.0).reshape(2, 3)
    for idx in ([], [[]], (slice(None), []), (0, []), ([], [])):
        check_like_numpy(lambda x: x[idx] * 2.0, x)
        check_like_numpy(lambda x: fnp.at(x)[idx].set(1.0), x)
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(x[[]]) + fnp.sum(x))(x), np.ones((2, 3)))


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


# --- the scatters ----------------------------------------------------------------------


def _numpy_scatter(name, x, idx, y):
    out = x.copy()
    ufunc = SCATTERS[name][1]
    if ufunc is None:
        out[idx] = y
    else:  # (values broadcast first: NumPy 2.4's ufunc.at is wrong otherwise)
        ufunc.at(out, idx, np.broadcast_to(y, out[idx].shape))
    return out


@pytest.mark.parametrize("name", sorted(SCATTERS))
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_scatters_with_repeated_indices(name, shape, seed, data):
    x = values(shape, "nonzero", seed)
    idx = data.draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(max_dims=2, max_side=4)))
    target = x[idx].shape
    y_shape = data.draw(hnp.broadcastable_shapes(target, max_dims=len(target)).filter(
        lambda s: np.broadcast_shapes(s, target) == target))
    y = values(y_shape, "nonzero", seed + 1)
    f = _scatter(name, idx)
    np.testing.assert_array_equal(f(x, y), _numpy_scatter(name, x, idx, y))
    check_like_numpy(f, x, y, order=0)
    if name in ("index_min", "index_max"):  # away from ties
        s = np.sort(np.concatenate([(x * x).ravel(), np.sin(y).ravel()]))
        assume(s.size < 2 or np.min(np.diff(s)) > 1e-3)
    check_grads(lambda x, y: f(x * x, fnp.sin(y)), (x, y), order=2)


@pytest.mark.parametrize("name", sorted(SCATTERS))
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_scatters_with_basic_indices(name, shape, seed, data):
    x = values(shape, "real", seed)
    idx = data.draw(hnp.basic_indices(shape, allow_ellipsis=True))
    y = values(x[idx].shape, "real", seed + 1)
    f = _scatter(name, idx)
    np.testing.assert_array_equal(f(x, y), _numpy_scatter(name, x, idx, y))
    if name in ("index_min", "index_max"):  # away from ties
        assume(np.all(np.abs((x * x)[idx] - np.sin(y)) > 1e-3))
    check_grads(lambda x, y: f(x * x, fnp.sin(y)), (x, y), order=2)


def test_ufunc_at_with_broadcast_values():
    # NumPy 2.4's own np.add.at gets this wrong (3.0); the scatters must not.
    f = _scatter("index_add", np.zeros((2, 2), int))
    assert f(np.zeros(1), np.array([1.0, 2.0]))[0] == 6.0
    assert staged(f, np.zeros(1), np.array([1.0, 2.0]))[0] == 6.0


def test_set_keeps_the_last_write_and_only_it_has_a_derivative():
    f = _scatter("index_set", np.array([1, 3, 1]))
    x, y = np.zeros(4), np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(f(x, y), [0.0, 30.0, 0.0, 20.0])
    jx, jy = fgrad.jacrev(f, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(jy, [[0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(jx, np.diag([1.0, 0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(fgrad.jacfwd(f, argnums=(0, 1))(x, y)[1], jy)


def test_multiply_with_repeats_and_zeros_has_the_product_rule_derivative():
    f = _scatter("index_mul", np.array([0, 0, 0, 1]))
    x, y = np.array([2.0, 3.0]), np.array([0.0, 5.0, 7.0, 0.0])
    np.testing.assert_array_equal(f(x, y), [0.0, 0.0])
    expected = [[0.0, 0.0, 2 * 5 * 7, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 3.0]]  # [d/dx | d/dy]
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        jx, jy = jac(f, argnums=(0, 1))(x, y)
        np.testing.assert_array_equal(np.concatenate([jx, jy], axis=1), expected)
    check_grads(f, (x, y), order=2)


@pytest.mark.parametrize("name", ["index_max", "index_min"])
def test_extremum_ties_share_the_derivative(name):
    f = _scatter(name, np.array([0, 1, 0]))
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 1.0])  # x[0] ties y[0], y[2]; x[1] ties y[1]
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        jx, jy = jac(f, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(jx, np.diag([1 / 3, 1 / 2, 1.0]))
        np.testing.assert_allclose(jy, [[1 / 3, 0, 1 / 3], [0, 1 / 2, 0], [0, 0, 0]])


def test_scatter_shape_errors():
    f = _scatter("index_set", slice(0, 2))
    with pytest.raises(ValueError, match=r"cannot set values of shape \(3,\) at an index selecting shape \(2,\)"):
        fgrad.make_jaxpr(f)(np.zeros(4), np.zeros(3))
    with pytest.raises(IndexError, match="out of bounds"):
        fgrad.make_jaxpr(_scatter("index_max", np.array([4])))(np.zeros(4), np.zeros(1))


# --- take, take_along_axis, diagonal, trace ------------------------------------------------


@given(shape=shapes, seed=seeds, data=st.data())
def test_take(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-n, n - 1) if n else st.none()))
    size = x.size if axis is None else shape[axis]
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    low, high = (-size, size - 1) if mode == "raise" else (-2 * size - 1, 2 * size + 1)
    ind_shape = data.draw(st.sampled_from([(), (3,), (2, 2)]))
    ind = np.asarray(data.draw(hnp.arrays(np.int64, ind_shape, elements=st.integers(low, high))))
    ind = ind if ind.ndim else int(ind)
    check_like_numpy(lambda x: fnp.take(x * x, ind, axis=axis, mode=mode), x)
    check_like_numpy(lambda x: np.take(x, ind, axis, None, mode) * 2.0, x, order=1)  # NumPy's own name


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_take_along_axis(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-n, n - 1)))
    if axis is None:
        ind_shape = (data.draw(st.integers(0, 5)),)
        size = x.size
    else:
        ind_shape = tuple(data.draw(st.sampled_from([1, s])) for s in shape)
        ind_shape = ind_shape[: axis % n] + (data.draw(st.integers(0, 4)),) + ind_shape[axis % n + 1:]
        size = shape[axis]
    ind = np.asarray(data.draw(hnp.arrays(np.int64, ind_shape, elements=st.integers(-size, size - 1))))
    check_like_numpy(lambda x: fnp.take_along_axis(fnp.sin(x), ind, axis), x)
    order = np.argsort(x, axis=-1)
    check_like_numpy(lambda x: fnp.take_along_axis(x, order, -1) ** 2, x, order=1)


@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, max_side=4), seed=seeds, data=st.data())
def test_diagonal_and_trace(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    a = data.draw(st.integers(-n, n - 1))
    b = data.draw(st.integers(-n, n - 1).filter(lambda b: b % n != a % n))
    offset = data.draw(st.integers(-5, 5))
    check_like_numpy(lambda x: fnp.diagonal(x, offset, a, b) ** 2, x)
    check_like_numpy(lambda x: fnp.trace(x * x, offset, a, b), x)
    check_like_numpy(lambda x: fnp.trace(x, offset, a, b, dtype=np.float32), x, order=0)
    ints = np.arange(x.size, dtype=np.int32).reshape(shape)
    check_like_numpy(lambda x: fnp.trace(x, offset, a, b), ints, order=0)  # NumPy's sum dtype


def test_indexing_function_errors_match_numpy():
    x = np.ones((2, 3))
    cases = [
        (lambda x: fnp.take(x, 5, axis=1), IndexError, "index 5 is out of bounds for axis 1 with size 3"),
        (lambda x: fnp.take(x, [1], mode="nearest"), ValueError, "clipmode"),
        (lambda x: fnp.take(x, 0, axis=2), np.exceptions.AxisError, "out of bounds"),
        (lambda x: fnp.take_along_axis(x, np.zeros((2, 3)), 1), IndexError, "must be an integer array"),
        (lambda x: fnp.take_along_axis(x, np.zeros((2, 3), int), None), ValueError, "single dimension"),
        (lambda x: fnp.take_along_axis(x, np.zeros(3, int), 1), ValueError, "same number of dimensions"),
        (lambda x: fnp.diagonal(x[0]), ValueError, "at least two dimensions"),
        (lambda x: fnp.diagonal(x, 0, 1, -1), ValueError, "cannot be the same"),
        (lambda x: fnp.trace(x, 0, 0, 2), np.exceptions.AxisError, "out of bounds"),
    ]
    for f, error, message in cases:
        with pytest.raises(error, match=message):
            f(x)  # NumPy
        with pytest.raises(error, match=message):
            fgrad.make_jaxpr(f)(x)  # fgrad


def test_traced_indices_are_operands_of_gather_and_scatter():
    # Once refused ("fgrad needs indices as concrete values"): the result's
    # shape is the index's, which is known (tests/primitives/test_gather.py
    # checks every form and transform).
    x = np.arange(4.0)
    np.testing.assert_array_equal(fgrad.vmap(lambda i: fnp.take(x, i))(np.array([[0, 1], [2, 3]])),
                                  [[0.0, 1.0], [2.0, 3.0]])
    closed = fgrad.make_jaxpr(lambda x, i: fnp.take_along_axis(x, i, 0))(x, np.array([1, 0]))
    assert [e.primitive.name for e in closed.eqns] == ["gather"]
    assert fgrad.make_jaxpr(lambda x, i: x[i])(x, 1).eqns[-1].primitive.name == "gather"
    np.testing.assert_array_equal(fgrad.vmap(lambda i: fnp.at(x)[i].set(0.0))(np.array([0, 1])),
                                  [[0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 2.0, 3.0]])
