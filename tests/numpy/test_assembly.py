"""Assembling and building arrays (hstack, vstack, dstack, column_stack, split,
array_split, pad, diag, diagflat, tril, triu, meshgrid, copy, empty_like, linspace):
composites of the data-movement primitives. Values and dtypes equal NumPy's;
derivatives match finite differences to second order; inputs are left unchanged."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.numpy_checks import check_like_numpy, staged
from tests.strategies import seeds, shapes, values

small = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


# each function, the axis it joins along, and how it shapes its inputs first
STACKING = {
    "hstack": (fnp.hstack, lambda ndim: 0 if ndim == 1 else 1, fnp.atleast_1d),
    "vstack": (fnp.vstack, lambda ndim: 0, fnp.atleast_2d),
    "dstack": (fnp.dstack, lambda ndim: 2, fnp.atleast_3d),
    "column_stack": (fnp.column_stack, lambda ndim: 1, lambda x: x if x.ndim >= 2 else x.reshape(-1, 1)),
}


@pytest.mark.parametrize("name", sorted(STACKING))
@given(shape=small, seed=seeds, data=st.data())
def test_stacking_functions(name, shape, seed, data):
    f, axis_of, shaped = STACKING[name]
    x = values(shape, "real", seed)
    other = list(shaped(x).shape)  # a second array: the same shape except along the joined axis
    axis = axis_of(len(other))
    other[axis] = data.draw(st.integers(1, 3))
    y = values(tuple(other), "real", seed + 1)
    check_like_numpy(lambda x, y: f([fnp.sin(x), y, x]), x, y)


def test_stacking_dtypes_and_errors():
    ints, floats = np.arange(3), np.ones(3, np.float32)
    check_like_numpy(lambda a, b: fnp.hstack([a, b]), ints, floats, order=0)
    check_like_numpy(lambda a, b: fnp.vstack([a, b], dtype=np.float64), ints, floats, order=0)
    check_like_numpy(lambda a, b: fnp.concatenate([a, b], dtype=np.float32, casting="unsafe"),
                     ints, floats, order=0)
    check_like_numpy(lambda a, b: fnp.stack([a, b], axis=-1, dtype=np.float64), ints, floats, order=0)
    for f in (lambda a: fnp.hstack([a, a * 1.5], dtype=int), lambda a: fnp.concatenate([a], dtype=np.int8)):
        with pytest.raises(TypeError, match="Cannot cast array data from dtype"):
            f(floats)
        with pytest.raises(TypeError, match="Cannot cast array data from dtype"):
            fgrad.make_jaxpr(f)(floats)
    with pytest.raises(ValueError, match="need at least one array"):
        fgrad.make_jaxpr(lambda a: fnp.vstack([]))(floats)
    with pytest.raises(ValueError, match="dimensions except for the concatenation axis must match"):
        fgrad.make_jaxpr(lambda a: fnp.column_stack([a, np.ones(2)]))(floats)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), seed=seeds, data=st.data())
def test_split_and_array_split(shape, seed, data):
    x = values(shape, "real", seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    sections = data.draw(st.integers(1, 6))
    check_like_numpy(lambda x: fnp.array_split(x * x, sections, axis), x)
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    d = data.draw(st.sampled_from(divisors))
    check_like_numpy(lambda x: fnp.split(fnp.sin(x), d, axis=axis), x)
    points = data.draw(st.lists(st.integers(-n - 1, n + 1), max_size=3))
    check_like_numpy(lambda x: fnp.split(x, points, axis), x, order=1)


def test_split_errors_match_numpy():
    x = np.ones((3, 2))
    for f, error, message in [
        (lambda x: fnp.split(x, 2), ValueError, "does not result in an equal division"),
        (lambda x: fnp.array_split(x, 0), ValueError, "number sections must be larger than 0"),
        (lambda x: fnp.split(x, 0), ZeroDivisionError, "integer modulo by zero"),
        (lambda x: fnp.concatenate([x[0, 0]]), ValueError, "zero-dimensional arrays cannot be concatenated"),
        (lambda x: fnp.concatenate([x[0], x[0, 0]]), ValueError, "must have (the )?same number of dimensions"),
    ]:
        with pytest.raises(error, match=message):
            f(x)
        with pytest.raises(error, match=message):
            fgrad.make_jaxpr(f)(x)
    # an axis out of range: NumPy's IndexError is "tuple index out of range"; fgrad's is an
    # AxisError (an IndexError) that says which axis
    with pytest.raises(IndexError, match="tuple index out of range"):
        fnp.split(x, 1, axis=2)
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        fgrad.make_jaxpr(lambda x: fnp.split(x, 1, axis=2))(x)


pad_widths = st.one_of(
    st.integers(0, 3),
    st.tuples(st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.tuples(st.integers(0, 3), st.integers(0, 3))),
)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@given(shape=small, seed=seeds, width=pad_widths, data=st.data())
def test_pad(mode, shape, seed, width, data):
    x = values(shape, "real", seed)
    if data.draw(st.booleans()) and shape:  # one (before, after) per axis
        width = tuple(data.draw(st.tuples(st.integers(0, 4), st.integers(0, 4))) for _ in shape)
    check_like_numpy(lambda x: fnp.pad(x * x, width, mode=mode), x)


@given(shape=small, seed=seeds, data=st.data())
def test_pad_constant_values(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    cv = data.draw(st.sampled_from([1.5, (1.0, 2.0), ((1.0, 2.0),) * max(n, 1)]))
    check_like_numpy(lambda x: fnp.pad(x, 2, constant_values=cv) * x.sum(), x, order=1)
    # a traced constant gets its derivative
    c = values(data.draw(st.sampled_from([(), (2,), (1, 2), (max(n, 1), 1)])), "real", seed + 1)
    check_like_numpy(lambda x, c: fnp.pad(fnp.sin(x), (1, 2), constant_values=c * c), x, c)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), seed=seeds, data=st.data())
def test_pad_with_a_dict_of_widths_and_empty_mode(shape, seed, data):
    x = values(shape, "real", seed)
    n = len(shape)
    widths = {data.draw(st.integers(-n, n - 1)): data.draw(st.one_of(st.integers(0, 2), st.tuples(
        st.integers(0, 2), st.integers(0, 2))))}
    check_like_numpy(lambda x: fnp.pad(x, widths, mode="edge") ** 2, x)
    # mode="empty": the padding is unspecified (zeros here), the input is in the middle
    ((axis, w),) = widths.items()
    got = staged(lambda x: fnp.pad(x, widths, mode="empty"), x)
    assert got.shape == np.pad(x, widths, mode="empty").shape
    before = w if isinstance(w, int) else w[0]
    inner = [slice(None)] * n
    inner[axis] = slice(before, before + shape[axis])
    np.testing.assert_array_equal(got[tuple(inner)], x)


def test_pad_dtypes_and_errors():
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    check_like_numpy(lambda a: fnp.pad(a, 1, constant_values=1.7), ints, order=0)
    check_like_numpy(lambda a: fnp.pad(a, ((0, 1), (2, 0)), mode="reflect"), ints, order=0)
    x = np.ones((2, 2))
    for f, error, message in [
        (lambda x: fnp.pad(x, -1), ValueError, "negative values"),
        (lambda x: fnp.pad(x, 1.5), TypeError, "integral type"),
        (lambda x: fnp.pad(x, ((1, 2), (1, 2), (3, 3))), ValueError, "broadcast"),
        (lambda x: fnp.pad(x, 1, mode="foo"), ValueError, "mode 'foo' is not supported"),
        (lambda x: fnp.pad(x, 1, mode="edge", constant_values=1), ValueError, "unsupported keyword"),
        (lambda x: fnp.pad(x[:0], 1, mode="wrap"), ValueError, "can't extend empty axis 0"),
    ]:
        with pytest.raises(error, match=message):
            f(x)
        with pytest.raises(error, match=message):
            fgrad.make_jaxpr(f)(x)
    with pytest.raises(NotImplementedError, match="does not support mode 'mean' yet"):
        fgrad.make_jaxpr(lambda x: fnp.pad(x, 1, mode="mean"))(x)
    with pytest.raises(NotImplementedError, match="reflect_type='even' only"):
        fgrad.make_jaxpr(lambda x: fnp.pad(x, 1, mode="reflect", reflect_type="odd"))(x)


@given(n=st.integers(0, 4), k=st.integers(-5, 5), seed=seeds)
def test_diag_and_diagflat(n, k, seed):
    v = values((n,), "real", seed)
    check_like_numpy(lambda v: fnp.diag(v * v, k), v)
    m = values((n, n + 1), "real", seed)
    check_like_numpy(lambda m: fnp.diag(fnp.sin(m), k), m)
    check_like_numpy(lambda m: fnp.diagflat(m, k) * 2.0, m)
    check_like_numpy(lambda v: fnp.diag(v, k), np.arange(n), order=0)


def test_traced_pad_widths_are_refused_naming_them():
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.pad needs `pad_width` as a concrete"):
        fgrad.vmap(lambda w: fnp.pad(np.ones(2), ((w, 1),)))(np.array([1, 2]))
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.pad needs `pad_width` as a concrete"):
        fgrad.make_jaxpr(lambda w: fnp.pad(np.ones((2, 2)), {1: w}))(1)


def test_diag_errors_match_numpy():
    for x in (np.ones((2, 2, 2)), np.float64(1.0)):
        with pytest.raises(ValueError, match="Input must be 1- or 2-d."):
            fnp.diag(x)
        with pytest.raises(ValueError, match="Input must be 1- or 2-d."):
            fgrad.make_jaxpr(fnp.diag)(x)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), k=st.integers(-4, 4), seed=seeds)
def test_tril_and_triu(shape, k, seed):
    x = values(shape, "real", seed)
    check_like_numpy(lambda x: fnp.tril(x * x, k), x)
    check_like_numpy(lambda x: fnp.triu(fnp.sin(x), k), x)
    check_like_numpy(lambda x: fnp.triu(x > 0, k), x, order=0)  # bool stays bool
    check_like_numpy(lambda x: fnp.tril(x, k), np.arange(x.size, dtype=np.int8).reshape(shape), order=0)


def test_tril_of_a_scalar_fails_like_numpy():
    with pytest.raises(TypeError):
        np.tril(np.float64(1.0))
    with pytest.raises(TypeError):
        fgrad.make_jaxpr(fnp.tril)(1.0)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@given(sizes=st.lists(st.integers(1, 3), max_size=4), seed=seeds)
def test_meshgrid(indexing, sparse, sizes, seed):
    xs = [values((n,), "real", seed + i) for i, n in enumerate(sizes)]
    check_like_numpy(lambda *xs: fnp.meshgrid(*[x * x for x in xs], sparse=sparse, indexing=indexing), *xs)
    if sizes:
        grid = values((2, sizes[0]), "real", seed)  # inputs of any shape are flattened
        check_like_numpy(lambda g: fnp.meshgrid(g, indexing=indexing), grid, order=1)


def test_meshgrid_indexing_must_be_xy_or_ij():
    with pytest.raises(ValueError, match="Valid values for `indexing` are 'xy' and 'ij'."):
        fgrad.make_jaxpr(lambda x: fnp.meshgrid(x, indexing="yx"))(np.ones(2))


@given(shape=shapes, seed=seeds)
def test_copy_and_empty_like(shape, seed):
    x = values(shape, "real", seed)
    check_like_numpy(lambda x: fnp.copy(x) * fnp.copy(np.ones(shape)), x)
    closed = fgrad.make_jaxpr(lambda x: fnp.empty_like(x, dtype=np.float32) + np.empty_like(x))(x)
    assert closed.out_avals[0].shape == x.shape and closed.out_avals[0].dtype == np.float64
    assert fgrad.make_jaxpr(lambda x: fnp.empty_like(x, shape=(2, 1)))(x).out_avals[0].shape == (2, 1)
    assert not np.any(fgrad.grad(lambda x: fnp.sum(fnp.empty_like(x) * 0.0 + x))(x) - 1.0)


def test_plain_numpy_calls_on_tracers_use_these_functions():
    x = np.arange(6.0).reshape(2, 3)

    def f(x):
        parts = np.split(x, 3, axis=1)
        m = np.vstack(parts).T @ np.pad(np.diag(np.tril(x)[:, 0]), ((0, 4), (1, 1)), mode="reflect")
        return np.sum(np.hstack([m.ravel(), np.meshgrid(x[0], x[1])[0].ravel(), np.copy(x).ravel()]))

    g = fgrad.grad(f)(x)
    check_grads(f, (x,), order=2)
    assert g.shape == x.shape


def test_linspace_between_traced_end_points():
    # It used to recurse: NumPy's linspace handed the tracer back to fgrad's, which was NumPy's.
    out, tangent = fgrad.jvp(lambda x: fnp.linspace(x, 3.4, 5), (1.2,), (1.0,))
    np.testing.assert_allclose(out, np.linspace(1.2, 3.4, 5), rtol=1e-15)
    np.testing.assert_allclose(tangent, [1.0, 0.75, 0.5, 0.25, 0.0], rtol=1e-15)
    np.testing.assert_allclose(fgrad.grad(lambda stop: fnp.sum(fnp.linspace(0.0, stop, 4, endpoint=False)))(2.0),
                               0.0 + 0.25 + 0.5 + 0.75)


# (start shape, stop shape, axis): end points broadcast, the samples run along `axis`.
LINSPACE_SHAPES = [((), (), 0), ((3,), (), 0), ((), (3,), -1), ((2, 1), (3,), 1), ((3,), (3,), 1)]


@pytest.mark.parametrize("start_shape, stop_shape, axis", LINSPACE_SHAPES, ids=[f"{a}-{b}-axis{c}" for a, b, c in LINSPACE_SHAPES])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("num", [0, 1, 2, 5])
def test_linspace(start_shape, stop_shape, axis, endpoint, num):
    start, stop = values(start_shape, "real", 1), values(stop_shape, "real", 2)
    check_like_numpy(lambda start, stop: fnp.linspace(start, stop, num, endpoint, axis=axis), start, stop)
    check_like_numpy(lambda start: fnp.linspace(start, 1.5, num, endpoint, axis=axis), start)
    check_like_numpy(lambda stop: fnp.linspace(-0.5, stop, num, endpoint, axis=axis), stop)
    samples, step = staged(lambda start, stop: fnp.linspace(start, stop, num, endpoint, True, axis=axis),
                           start, stop)
    expected, expected_step = np.linspace(start, stop, num, endpoint, True, axis=axis)
    np.testing.assert_allclose(samples, expected, rtol=1e-15)
    np.testing.assert_allclose(step, expected_step, rtol=1e-15)


def test_linspace_dtypes_and_errors_like_numpy():
    x32 = np.float32(0.5)
    for f in (lambda x: fnp.linspace(x, 2.0, 4), lambda x: fnp.linspace(x, 7, 4, dtype=np.int64),
              lambda x: fnp.linspace(0, x, 3, dtype=np.float32), lambda x: fnp.linspace(x, np.float64(2.0), 3)):
        out = staged(f, x32)
        assert out.dtype == f(x32).dtype
        np.testing.assert_array_equal(out, f(x32))
    tiny = np.array([0.0, 5e-324])  # a step that underflows to zero: NumPy scales first
    np.testing.assert_array_equal(staged(lambda x: fnp.linspace(0.0, x, 3, axis=1), tiny),
                                  np.linspace(0.0, tiny, 3, axis=1))
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative."):
        fgrad.jvp(lambda x: fnp.linspace(x, 1.0, -1), (0.0,), (1.0,))
    with pytest.raises(fgrad.ConcretizationTypeError, match="`num`"):
        fgrad.make_jaxpr(lambda n: fnp.linspace(0.0, n, n))(3)


# vmap == loop (tests/transforms/test_batching.py): label -> (f, example shapes, domain)
BATCH_CASES = {
    "hstack": (lambda x, y: fnp.hstack([x, y]), [(2, 3), (2, 1)], "real"),
    "vstack": (lambda x, y: fnp.vstack([x, y]), [(3,), (2, 3)], "real"),
    "dstack": (lambda x, y: fnp.dstack([x, y]), [(2,), (1, 2)], "real"),
    "column_stack": (lambda x, y: fnp.column_stack([x, y]), [(3,), (3, 2)], "real"),
    "array_split": (lambda x: fnp.array_split(x, 3, axis=1)[1], [(2, 5)], "real"),
    "pad_constant": (lambda x, c: fnp.pad(x, ((1, 0), (2, 1)), constant_values=c), [(2, 3), ()], "real"),
    "pad_reflect": (lambda x: fnp.pad(x, ((0, 2), (3, 1)), mode="reflect"), [(2, 3)], "real"),
    "pad_wrap": (lambda x: fnp.pad(x, 4, mode="wrap"), [(3,)], "real"),
    "diag": (lambda v: fnp.diag(v, -1), [(3,)], "real"),
    "diag_of_matrix": (lambda m: fnp.diag(m, 1), [(3, 3)], "real"),
    "triu": (lambda x: fnp.triu(x, -1), [(3, 4)], "real"),
    "meshgrid": (lambda x, y: fnp.meshgrid(x, y)[1], [(2,), (3,)], "real"),
    "linspace": (lambda start, stop: fnp.linspace(start, stop, 4, axis=-1), [(2,), ()], "real"),
    "linspace_no_endpoint": (lambda start: fnp.linspace(start, 1.0, 3, endpoint=False), [()], "real"),
}
