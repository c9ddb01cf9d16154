"""Reductions (sum, prod, mean, var, std, max, min, ptp, argmax, argmin, all, any,
count_nonzero, average, the nan family) and cumulative sums and products:
values and dtypes equal NumPy's; derivatives checked to second order in both
modes, over negative and tuple axes, keepdims, 0-d and empty arrays."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.strategies import seeds, shapes, values

PRIMITIVES = {
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "argmax", "argmin",
    "cumsum", "cumprod",
}

BATCH_CASES = {
    "reduce_sum": (lambda x: fnp.sum(x, axis=(0, 2)), [(2, 3, 4)], "real"),
    "reduce_sum_all": (fnp.sum, [(2, 3)], "real"),
    "reduce_max": (lambda x: fnp.max(x, axis=-1, keepdims=True), [(2, 3)], "real"),
    "reduce_min": (lambda x: fnp.min(x), [(2, 3)], "real"),
    "reduce_prod": (lambda x: fnp.prod(x, axis=(0, 2)), [(2, 3, 4)], "real"),
    "reduce_prod_grad": (fgrad.grad(lambda x: fnp.prod(x)), [(2, 3)], "real"),
    "reduce_and": (lambda x: fnp.all(x > -1.0, axis=1), [(3, 4)], "real"),
    "reduce_or": (lambda x: fnp.any(x > 1.0, axis=0, keepdims=True), [(3, 4)], "real"),
    "argmax": (lambda x: fnp.argmax(x, axis=-1), [(3, 4)], "real"),
    "argmin": (fnp.argmin, [(3, 4)], "real"),
    "cumsum": (lambda x: fnp.cumsum(x, axis=1), [(2, 3, 4)], "real"),
    "cumsum_grad": (fgrad.grad(lambda x: fnp.sum(fnp.cumsum(x) ** 2)), [(2, 3)], "real"),
    "cumprod": (lambda x: fnp.cumprod(x, axis=0), [(3, 2)], "real"),
    "cumprod_grad": (fgrad.grad(lambda x: fnp.sum(fnp.cumprod(x, axis=-1) ** 2)), [(2, 5)], "real"),
    "var": (lambda x: fnp.var(x, axis=0, ddof=1), [(3, 2)], "real"),
    "average": (lambda x, w: fnp.average(x, axis=1, weights=w), [(2, 3), (3,)], "positive"),
    "nanmax": (lambda x: fnp.nanmax(fnp.where(x > 1.0, np.nan, x), axis=0), [(3, 2)], "real"),
    "reduce_sum_0d_last_axis": (lambda x: fnp.sum(x, axis=-1), [()], "real"),
    "reduce_max_where_initial": (lambda x, m: fnp.max(x, axis=0, where=m > 0, initial=-0.5), [(3, 2), (2,)],
                                 "real"),
    "reduce_sum_where_initial": (lambda x, m: fnp.sum(x, axis=1, where=m > 0, initial=2.0), [(3, 2), (2,)],
                                 "real"),
}


def axes_for(ndim):
    return st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1) if ndim else st.none(),
        st.lists(st.integers(-ndim, max(ndim - 1, 0)), unique_by=lambda a: a % max(ndim, 1),
                 max_size=ndim).map(tuple),
    )


def axis_for(ndim):
    """None or one axis, negative allowed."""
    return st.one_of(st.none(), st.integers(-ndim, ndim - 1)) if ndim else st.none()


def distinct(x):
    """Whether the elements of x are apart (no ties, kinks of max and sort)."""
    s = np.sort(x.ravel())
    return s.size < 2 or np.min(np.diff(s)) > 1e-3


def group_sizes(shape, axis):
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis) % max(len(shape), 1)
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "ptp"])
@given(shape=shapes, seed=seeds, data=st.data(), keepdims=st.booleans())
def test_reductions(name, shape, seed, data, keepdims):
    x = values(shape, "real", seed)
    axis = data.draw(axes_for(x.ndim))
    f, ref = getattr(fnp, name), getattr(np, name)
    out = f(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(out, ref(x, axis=axis, keepdims=keepdims), rtol=1e-13)
    traced = fgrad.jvp(lambda x: f(x, axis=axis, keepdims=keepdims), (x,), (x,))[0]
    np.testing.assert_allclose(traced, out, rtol=1e-13)
    assert np.asarray(traced).dtype == np.asarray(out).dtype
    if name in ("max", "min", "ptp"):  # away from ties
        assume(distinct(x * x + x))
    check_grads(lambda x: f(x * x + x, axis=axis, keepdims=keepdims), (x,), order=2)


METHODS = ["sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin", "all", "any", "cumsum",
           "cumprod"]


@pytest.mark.parametrize("name", METHODS)
def test_array_methods_of_tracers(name):
    x = values((2, 3), "positive", 0)
    kwargs = {} if name.startswith("cum") else {"keepdims": True}
    expected = getattr(x, name)(axis=-1, **kwargs)
    got = fgrad.jvp(lambda x: getattr(x, name)(axis=-1, **kwargs), (x,), (x,))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    assert np.asarray(got).dtype == expected.dtype


def test_mean_of_integers_is_float_like_numpy():
    assert fgrad.make_jaxpr(fnp.mean)(np.arange(4)).out_avals[0].dtype == np.float64
    assert fnp.mean(np.arange(4)) == 1.5


def test_float16_mean_is_summed_in_float32_like_numpy():
    h = np.full(10000, 100, np.float16)  # its float16 sum overflows
    out, tangent = fgrad.jvp(fnp.mean, (h,), (h,))
    assert out == tangent == np.mean(h) == 100.0
    assert out.dtype == tangent.dtype == np.float16
    assert fgrad.make_jaxpr(lambda h: fnp.mean(h, axis=0, keepdims=True))(h).out_avals[0].dtype == np.float16
    np.testing.assert_allclose(fgrad.grad(lambda h: fnp.mean(h).astype(np.float64))(h), np.full(10000, 1e-4),
                               rtol=1e-3)
    # var takes its mean in float16 as NumPy does: the same values, bit for bit
    small = np.linspace(-3, 5, 50).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x in (small, h):
            for f in (fnp.mean, fnp.var, fnp.std):
                expected = getattr(np, f.__name__)(x)
                got = fgrad.jvp(f, (x,), (x,))[0]
                assert got.dtype == expected.dtype
                np.testing.assert_array_equal(got, expected)


LENIENT_ON_0D = ["sum", "prod", "max", "min", "all", "any", "ptp", "nansum", "nanmean", "nanmax", "nanmin",
                 "count_nonzero"]


@pytest.mark.parametrize("name", LENIENT_ON_0D + ["mean", "var", "std", "median", "average"])
def test_axis_0_or_minus_1_of_a_0d_array_as_numpy(name):
    # NumPy's ufunc reductions take axis 0 or -1 (an int) of a 0-d array as no axis; mean,
    # var, std, median and average do not.
    a = np.array(2.5)
    f, ref = getattr(fnp, name), getattr(np, name)
    keepdims = [{}] if name == "average" else [{"keepdims": False}, {"keepdims": True}]
    for axis in (0, -1):
        for kwargs in keepdims:
            if name in LENIENT_ON_0D:
                expected = ref(a, axis=axis, **kwargs)
                out, tangent = fgrad.jvp(lambda a: f(a, axis=axis, **kwargs), (a,), (a,))
                np.testing.assert_array_equal(out, expected)
                assert np.shape(out) == np.shape(expected) == () and out.dtype == expected.dtype
            else:
                with pytest.raises(np.exceptions.AxisError):
                    ref(a, axis=axis, **kwargs)
                with pytest.raises(np.exceptions.AxisError):
                    fgrad.jvp(lambda a: f(a, axis=axis, **kwargs), (a,), (a,))
    for axis in ((0,), 1):
        with pytest.raises(np.exceptions.AxisError):
            fgrad.make_jaxpr(lambda a: f(a, axis=axis))(a)


def test_reducing_the_last_axis_of_examples_under_vmap():
    x = values((4,), "real", 1)
    for f in (lambda v: np.sum(v, axis=-1), lambda v: fnp.max(v * v, axis=0, keepdims=True),
              lambda v: fnp.prod(v, axis=-1) + fnp.any(v > 0, axis=0)):
        np.testing.assert_array_equal(fgrad.vmap(f)(x), np.stack([f(v) for v in x]))
    np.testing.assert_array_equal(fgrad.vmap(fgrad.grad(lambda v: np.sum(v * v, axis=-1)))(x), 2 * x)


INITIAL_AND_WHERE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


@pytest.mark.parametrize("name", sorted(INITIAL_AND_WHERE))
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), seed=seeds, data=st.data(),
       keepdims=st.booleans())
def test_initial_and_where(name, shape, seed, data, keepdims):
    x = values(shape, "real", seed)
    axis = data.draw(axes_for(x.ndim))
    mask_shape = data.draw(st.sampled_from([shape, shape[1:], tuple(1 if i % 2 else n for i, n in enumerate(shape))]))
    mask = values(mask_shape, "real", seed + 1) > 0
    initial = data.draw(st.sampled_from([None, -0.5, 2.0]))
    if initial is None and name in ("max", "min"):
        initial = 0.25  # where needs initial for these
    f, ref = getattr(fnp, name), INITIAL_AND_WHERE[name]
    kwargs = {"axis": axis, "keepdims": keepdims, "where": mask}
    if initial is not None:
        kwargs["initial"] = initial
    expected = ref(x, **kwargs)
    assert type(f(x, **kwargs)) is type(expected)  # no transform: NumPy itself
    got = fgrad.jvp(lambda x: f(x, **kwargs), (x,), (x,))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    assert np.shape(got) == np.shape(expected) and np.asarray(got).dtype == expected.dtype
    if name in ("max", "min"):  # away from ties, also with the initial value
        assume(distinct(np.append(x * x + x, initial)))
    check_grads(lambda x: f(x * x + x, **kwargs), (x,), order=2)
    no_mask = {"axis": axis, "keepdims": keepdims, "initial": initial}
    if initial is None:
        return
    np.testing.assert_allclose(fgrad.jvp(lambda x: f(x, **no_mask), (x,), (x,))[0], ref(x, **no_mask),
                               rtol=1e-13)


@pytest.mark.parametrize("name", ["all", "any"])
def test_all_and_any_where(name):
    x = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
    f, ref = getattr(fnp, name), getattr(np, name)
    for mask in (np.array([False, True, True]), x > 0.5, np.zeros((2, 1), bool)):
        for axis in (None, 0, 1):
            expected = ref(x, axis=axis, where=mask)
            got = fgrad.jvp(lambda x: f(x, axis=axis, where=mask), (x,), (x,))[0]
            np.testing.assert_array_equal(got, expected)


def test_initial_and_where_derivatives_and_dtypes():
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(fgrad.grad(lambda x: np.sum(x * x, initial=10.0))(x), 2 * x)
    np.testing.assert_array_equal(fgrad.grad(lambda x: np.max(x, where=x < 2.0, initial=-5.0))(x), [1, 0, 0])
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.min(x, initial=-3.0))(x), [0, 0, 0])
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.prod(x, where=x > 0))(x), [3.0, 0.0, 1.0])
    # an empty max or min is the initial value
    e = np.ones((0, 2))
    out, tangent = fgrad.jvp(lambda e: fnp.max(e, axis=0, initial=5.0), (e,), (e,))
    np.testing.assert_array_equal(out, [5.0, 5.0])
    np.testing.assert_array_equal(tangent, [0.0, 0.0])
    # initial is cast to the result's dtype, as NumPy does
    ints = np.array([1, 2], np.int8)
    for f, kwargs in ((fnp.sum, {"initial": 0.5}), (fnp.max, {"initial": 5.5}), (fnp.prod, {"initial": 300}),
                      (fnp.sum, {"initial": 0.5, "dtype": np.float32})):
        expected = getattr(np, f.__name__)(ints, **kwargs)
        jaxpr = fgrad.make_jaxpr(lambda a: f(a, **kwargs))(ints)
        assert jaxpr.out_avals[0].dtype == expected.dtype
        np.testing.assert_array_equal(fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, ints)[0], expected)


def test_initial_and_where_errors_match_numpy():
    x = np.ones((2, 3))
    cases = [
        (lambda x: np.max(x, where=x > 0), ValueError, "'maximum' does not have an identity.*specify 'initial'"),
        (lambda x: np.min(x, axis=0, where=x > 0), ValueError, "'minimum' does not have an identity"),
        (lambda x: np.sum(x, where=np.ones(3)), TypeError, "Cannot cast array data from dtype\\('float64'\\)"),
        (lambda x: np.sum(x, where=np.ones(2, bool)), ValueError, "could not be broadcast"),
        (lambda x: np.prod(x, where=np.ones((3, 2, 3), bool)), ValueError, "more dimensions than allowed"),
    ]
    for f, error, message in cases:
        with pytest.raises(error, match=message):
            f(x)  # NumPy
        with pytest.raises(error, match=message):
            fgrad.grad(lambda x: f(x) * 1.0)(x)  # fgrad, through NumPy's own names


def test_max_shares_the_derivative_among_ties():
    x = np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]])
    np.testing.assert_array_equal(
        fgrad.grad(lambda x: fnp.sum(fnp.max(x, axis=1)))(x), [[0.5, 0, 0.5], [0, 1, 0]]
    )


def test_reduction_errors_match_numpy():
    with pytest.raises(np.exceptions.AxisError):
        fgrad.grad(lambda x: fnp.sum(x, axis=2))(np.ones((2, 2)))
    with pytest.raises(ValueError, match="zero-size array"):
        fgrad.make_jaxpr(lambda x: fnp.max(x, axis=0))(np.ones((0, 2)))
    with pytest.raises(ValueError, match="repeated axis"):
        fgrad.grad(lambda x: fnp.prod(x, axis=(0, -2)))(np.ones((2, 2)))
    with pytest.raises(TypeError, match="out=, which is not supported under a transform"):
        fgrad.grad(lambda x: fnp.prod(x, out=np.empty(())))(np.ones(2))


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.bool_, np.float32])
def test_dtypes_follow_numpy(name, dtype):
    x = np.array([[1, 0, 1], [1, 1, 1]], dtype=dtype)
    f, ref = getattr(fnp, name), getattr(np, name)
    for kwargs in ({}, {"axis": 0}, {"dtype": np.int8}, {"dtype": np.float32}):
        expected = ref(x, **kwargs)
        jaxpr = fgrad.make_jaxpr(lambda x: f(x, **kwargs))(x)
        assert jaxpr.out_avals[0].dtype == np.asarray(expected).dtype, kwargs
        np.testing.assert_array_equal(fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, x)[0], expected)


# --- products: derivatives right where elements are zero ------------------------------


def others_product(x, axis):
    """Brute force: for each element, the product of the other elements along `axis`."""
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape):
        line = list(idx)
        line[axis] = slice(None)
        row = x[tuple(line)].copy()
        row[idx[axis]] = 1.0
        out[idx] = np.prod(row)
    return out


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_prod_with_zeros(shape, seed, data):
    x = values(shape, "real", seed)
    zeros = data.draw(st.lists(st.integers(0, x.size - 1), max_size=3))
    x.ravel()[zeros] = 0.0
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    g = fgrad.grad(lambda x: fnp.sum(fnp.prod(x, axis=axis)))(x)
    np.testing.assert_allclose(g, others_product(x, axis % x.ndim), rtol=1e-12, atol=1e-300)
    check_grads(lambda x: fnp.prod(x, axis=axis), (x,), order=2)
    check_grads(fnp.prod, (x,), order=2)


def bounded_products(shape, axis, seed):
    """Elements whose products over every run along `axis` (of the flattened array if None)
    are within [1/2, 2] in magnitude: each is the ratio of two consecutive running products
    drawn from +-[1/sqrt(2), sqrt(2)]. Products of independent elements grow or vanish
    geometrically with the run's length, and cumprod's derivatives with them: a dozen values
    from (-2, 2) can multiply to 100, and central differences of the second derivatives then
    miss by eps^2 f'''/6 > 1e-5 where those are zero. (With runs within [1/4, 4], lines of
    100 elements still missed once in 10^5.)"""
    rng = np.random.default_rng(seed)
    running = rng.choice([-1.0, 1.0], shape) * 2.0 ** rng.uniform(-0.5, 0.5, shape)
    lines = running.reshape(-1) if axis is None else np.moveaxis(running, axis, -1)
    before = np.concatenate([np.ones(lines.shape[:-1] + (1,)), lines[..., :-1]], axis=-1)
    ratios = lines / before
    return ratios.reshape(shape) if axis is None else np.moveaxis(ratios, -1, axis)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), seed=seeds, data=st.data())
def test_cumulative(shape, seed, data):
    axis = data.draw(axis_for(len(shape)))
    x = bounded_products(shape, axis, seed)
    zeros = data.draw(st.lists(st.integers(0, x.size - 1), max_size=2))
    x.ravel()[zeros] = 0.0
    for name in ("cumsum", "cumprod"):
        f, ref = getattr(fnp, name), getattr(np, name)
        np.testing.assert_allclose(f(x, axis=axis), ref(x, axis=axis), rtol=1e-13)
        traced = fgrad.jvp(lambda x: f(x, axis=axis), (x,), (x,))[0]
        np.testing.assert_allclose(traced, ref(x, axis=axis), rtol=1e-13)
        check_grads(lambda x: f(x, axis=axis), (x,), order=2)


@pytest.mark.parametrize("shape, seed, zeros", [((4, 5), 6612798, [2]), ((4, 5, 5), 1570343775, [43, 76]),
                                                ((5, 3, 3), 1918607253, [24])])
def test_cumprod_second_derivatives_where_running_products_are_large(shape, seed, zeros):
    # Failures of test_cumulative before it drew from bounded_products (the first found by
    # hypothesis in CI, the others by a longer random search): values from (-2, 2) with runs
    # whose products reach 100, 1700 and 250. The second derivatives agree in every nesting of
    # forward and reverse mode, and with 50-digit arithmetic to 1e-10 relative; central
    # differences with the default step 1e-5 miss by eps^2 f'''/6 (up to 0.37, on values of
    # 2e8), more than atol where the second derivative is zero or small. A step of 1e-7 makes
    # that 10^4 times smaller, and its rounding (1e-16 / eps of the values) is within rtol.
    x = values(shape, "real", seed)
    x.ravel()[zeros] = 0.0
    check_grads(fnp.cumprod, (x,), order=2, eps=1e-7)


def test_cumulative_of_0d_and_empty_arrays_like_numpy():
    for f, ref in ((fnp.cumsum, np.cumsum), (fnp.cumprod, np.cumprod)):
        for x, axis in ((np.float64(2.0), None), (np.float64(2.0), 0), (np.float64(2.0), -1),
                        (np.ones((0, 3)), 0), (np.ones((2, 0)), None)):
            out, tangent = fgrad.jvp(lambda x: f(x, axis=axis), (x,), (np.ones_like(x),))
            np.testing.assert_array_equal(out, ref(x, axis=axis))
            assert np.shape(tangent) == np.shape(out)
        with pytest.raises(np.exceptions.AxisError):
            fgrad.grad(lambda x: f(x, axis=1)[0])(np.float64(2.0))
        with pytest.raises(TypeError):
            fgrad.grad(lambda x: fnp.sum(f(x, axis=(0,))))(np.ones(2))


def test_cumprod_derivative_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    jac = fgrad.jacfwd(fnp.cumprod)(x)
    expected = np.zeros((5, 5))
    for i in range(5):
        for j in range(i + 1):
            expected[i, j] = np.prod(np.delete(x[: i + 1], j))
    np.testing.assert_array_equal(jac, expected)
    np.testing.assert_array_equal(fgrad.jacrev(fnp.cumprod)(x), expected)


def test_reductions_of_empty_axes():
    x = np.ones((0, 3))
    for f, ref in ((fnp.sum, np.sum), (fnp.prod, np.prod)):
        out, tangent = fgrad.jvp(lambda x: f(x, axis=0), (x,), (x,))
        np.testing.assert_array_equal(out, ref(x, axis=0))
        np.testing.assert_array_equal(tangent, np.zeros(3))
        assert fgrad.grad(lambda x: fnp.sum(f(x, axis=0)))(x).shape == (0, 3)
        np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(f(x, axis=1)))(x), x)
    assert fnp.all(x) and not fnp.any(x)
    assert fgrad.jvp(lambda x: fnp.all(x, axis=0), (x,), (x,))[0].tolist() == [True] * 3


def test_prod_over_no_axes_is_the_identity():
    x = values((2, 3), "real", 0)
    np.testing.assert_array_equal(fgrad.jvp(lambda x: fnp.prod(x, axis=()), (x,), (x,))[1], x)


# --- variance and standard deviation ----------------------------------------------------


@given(shape=shapes, seed=seeds, data=st.data(), keepdims=st.booleans(), ddof=st.sampled_from([0, 1]))
def test_var_std(shape, seed, data, keepdims, ddof):
    x = values(shape, "real", seed)
    axis = data.draw(axes_for(x.ndim))
    n = group_sizes(shape, axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # degrees of freedom <= 0: nan or inf, as NumPy
        for name in ("var", "std"):
            f, ref = getattr(fnp, name), getattr(np, name)
            expected = ref(x, axis=axis, ddof=ddof, keepdims=keepdims)
            got = fgrad.jvp(lambda x: f(x, axis=axis, ddof=ddof, keepdims=keepdims), (x,), (x,))[0]
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    if n > ddof:
        check_grads(lambda x: fnp.var(x, axis=axis, ddof=ddof, keepdims=keepdims), (x,), order=2)
    if n >= 2 and n > ddof:  # std has an infinite derivative where the variance is zero
        check_grads(lambda x: fnp.std(x, axis=axis, ddof=ddof, keepdims=keepdims), (x,), order=2)


def test_var_dtypes_and_complex_values():
    ints = np.array([[1, 2], [4, 8]], np.int32)
    assert fgrad.make_jaxpr(lambda x: fnp.var(x, axis=0))(ints).out_avals[0].dtype == np.float64
    x32 = np.array([1.0, 2.0, 4.0], np.float32)
    assert fgrad.make_jaxpr(fnp.std)(x32).out_avals[0].dtype == np.float32
    assert fgrad.make_jaxpr(lambda x: fnp.var(x, dtype=np.float64))(x32).out_avals[0].dtype == np.float64
    z = np.array([1 + 2j, -1j, 3.0])
    got = fgrad.jvp(lambda t: fnp.var(z) + 0 * t, (0.0,), (1.0,))[0]
    np.testing.assert_allclose(got, np.var(z), rtol=1e-13)
    assert np.asarray(got).dtype == np.float64


# --- integer and boolean results: no derivative --------------------------------------


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(shape=shapes, seed=seeds, data=st.data(), keepdims=st.booleans())
def test_argmax_argmin(name, shape, seed, data, keepdims):
    x = values(shape, "real", seed)
    axis = data.draw(axis_for(max(x.ndim, 1)))
    f, ref = getattr(fnp, name), getattr(np, name)
    expected = ref(x, axis=axis, keepdims=keepdims)
    out, tangent = fgrad.jvp(lambda x: f(x, axis=axis, keepdims=keepdims), (x,), (x,))
    np.testing.assert_array_equal(out, expected)
    assert np.asarray(out).dtype == expected.dtype and np.shape(out) == np.shape(expected)
    assert not np.any(tangent)
    g = fgrad.grad(lambda x: fnp.sum(x) * fnp.sum(f(x, axis=axis, keepdims=keepdims)))(x)
    np.testing.assert_array_equal(g, np.full(x.shape, np.sum(expected)))


def test_argmax_errors_match_numpy():
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        fgrad.make_jaxpr(fnp.argmax)(np.ones((0, 2)))
    with pytest.raises(ValueError, match="attempt to get argmin of an empty sequence"):
        fgrad.make_jaxpr(lambda x: fnp.argmin(x, axis=1))(np.ones((3, 0)))
    with pytest.raises(TypeError, match="tuple"):
        fgrad.make_jaxpr(lambda x: fnp.argmax(x, axis=(0,)))(np.ones((3, 2)))
    with pytest.raises(np.exceptions.AxisError):
        fgrad.make_jaxpr(lambda x: fnp.argmax(x, axis=2))(np.ones((3, 2)))
    np.testing.assert_array_equal(fgrad.make_jaxpr(lambda x: fnp.argmax(x, axis=1))(np.ones((0, 2))).out_avals[0].shape, (0,))


@pytest.mark.parametrize("name", ["all", "any", "count_nonzero"])
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), seed=seeds, data=st.data(),
       keepdims=st.booleans())
def test_all_any_count_nonzero(name, shape, seed, data, keepdims):
    x = np.round(values(shape, "unit", seed))  # about a third of the elements are zero
    if data.draw(st.booleans()):
        x = x.astype(bool)
    axis = data.draw(axes_for(x.ndim))
    f, ref = getattr(fnp, name), getattr(np, name)
    expected = ref(x, axis=axis, keepdims=keepdims)
    out = fgrad.jvp(lambda t: f(x, axis=axis, keepdims=keepdims), (0.0,), (1.0,))[0]
    jaxpr = fgrad.make_jaxpr(lambda x: f(x, axis=axis, keepdims=keepdims))(x)
    np.testing.assert_array_equal(out, expected)
    assert jaxpr.out_avals[0].dtype == np.asarray(expected).dtype
    assert jaxpr.out_avals[0].shape == np.shape(expected)


def test_boolean_results_have_no_derivative():
    x = np.array([0.5, -1.0, 2.0])
    assert fgrad.grad(lambda x: fnp.sum(x * fnp.any(x > 1.0) + x * fnp.all(x > 0)))(x).tolist() == [1.0] * 3
    assert fgrad.grad(lambda x: fnp.sum(x * fnp.count_nonzero(x > 0)))(x).tolist() == [2.0] * 3


# --- average ---------------------------------------------------------------------------


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data(),
       keepdims=st.booleans(), returned=st.booleans())
def test_average(shape, seed, data, keepdims, returned):
    a = values(shape, "real", seed)
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1),
                               st.permutations(range(a.ndim)).flatmap(
                                   lambda p: st.integers(1, a.ndim).map(lambda k: tuple(p[:k])))))
    if axis is not None and data.draw(st.booleans()):  # weights along the axes only
        axes = (axis,) if isinstance(axis, int) else axis
        w = values(tuple(shape[i] for i in axes), "positive", seed + 1)
    else:
        w = values(shape, "positive", seed + 1)
    expected = np.average(a, axis=axis, weights=w, returned=returned, keepdims=keepdims)
    f = lambda a, w: fnp.average(a, axis=axis, weights=w, returned=returned, keepdims=keepdims)  # noqa: E731
    got = fgrad.jvp(f, (a, w), (a, w))[0]
    for g, e in zip(*(((got,), (expected,)) if not returned else (got, expected))):
        np.testing.assert_allclose(g, e, rtol=1e-13)
        assert np.shape(g) == np.shape(e)
    check_grads(f, (a, w), order=2)
    np.testing.assert_allclose(fnp.average(a, axis=axis), np.average(a, axis=axis))
    check_grads(lambda a: fnp.average(a, axis=axis, keepdims=keepdims), (a,), order=1)


def test_average_returned_without_weights_and_dtypes():
    a = np.arange(6).reshape(2, 3)
    got = fgrad.jvp(lambda t: fnp.average(a, axis=1, returned=True), (0.0,), (1.0,))[0]
    expected = np.average(a, axis=1, returned=True)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
        assert np.asarray(g).dtype == e.dtype
    w = np.array([1, 2, 3], np.int32)
    assert fgrad.make_jaxpr(lambda a: fnp.average(a, axis=1, weights=w))(a).out_avals[0].dtype == np.float64


def test_average_errors_match_numpy():
    a = np.ones((2, 3))
    with pytest.raises(TypeError, match="Axis must be specified when shapes of a and weights differ"):
        fgrad.grad(lambda a: fnp.sum(fnp.average(a, weights=np.ones(3))))(a)
    with pytest.raises(ValueError, match="Shape of weights must be consistent"):
        fgrad.grad(lambda a: fnp.sum(fnp.average(a, axis=1, weights=np.ones(2))))(a)
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        fgrad.grad(lambda a: fnp.sum(fnp.average(a, axis=1, weights=np.array([1.0, -1.0, 0.0]))))(a)
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        fgrad.grad(lambda w: fnp.average(np.ones(2), weights=w))(np.array([1.0, -1.0]))
    # Abstract weights cannot be checked: NumPy's division gives inf or nan instead.
    fgrad.make_jaxpr(lambda w: fnp.average(np.ones(2), weights=w))(np.array([1.0, -1.0]))


# --- ignoring NaNs ------------------------------------------------------------------------


def without_nans(y):
    return fnp.where(y == y, y, 0.0)


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanmax", "nanmin"])
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=seeds, data=st.data(),
       keepdims=st.booleans())
def test_nan_reductions(name, shape, seed, data, keepdims):
    x = values(shape, "real", seed)
    missing = data.draw(st.lists(st.integers(0, x.size - 1), max_size=x.size))
    x.ravel()[missing] = np.nan
    axis = data.draw(axes_for(x.ndim))
    assume(distinct(x[~np.isnan(x)]))
    f, ref = getattr(fnp, name), getattr(np, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: NaN, as NumPy
        expected = ref(x, axis=axis, keepdims=keepdims)
        got = fgrad.jvp(lambda x: f(x, axis=axis, keepdims=keepdims), (x,), (x,))[0]
        np.testing.assert_allclose(got, expected, rtol=1e-13)
        assert np.shape(got) == np.shape(expected)
        g = fgrad.grad(lambda x: fnp.sum(without_nans(f(x, axis=axis, keepdims=keepdims))))(x)
    assert np.all(g[np.isnan(x)] == 0) and np.all(np.isfinite(g))
    present = ~np.isnan(f(x, axis=axis, keepdims=True))
    if np.all(present):
        check_grads(lambda x: f(x, axis=axis, keepdims=keepdims), (x,), order=2)


def test_nan_reductions_of_integers_are_the_plain_ones():
    x = np.array([[1, 2], [3, 5]])
    for name, plain in (("nansum", np.sum), ("nanmean", np.mean), ("nanmax", np.max), ("nanmin", np.min)):
        jaxpr = fgrad.make_jaxpr(lambda x: getattr(fnp, name)(x, axis=0))(x)
        assert jaxpr.out_avals[0].dtype == plain(x, axis=0).dtype
        np.testing.assert_array_equal(fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, x)[0], plain(x, axis=0))


def test_plain_numpy_calls_on_tracers_use_these_functions():
    x = values((2, 3), "positive", 1)
    g = fgrad.grad(lambda x: np.prod(x) + np.var(x) + np.cumsum(x)[-1] + np.average(x, weights=x))(x)
    g_fnp = fgrad.grad(lambda x: fnp.prod(x) + fnp.var(x) + fnp.cumsum(x)[-1] + fnp.average(x, weights=x))(x)
    np.testing.assert_allclose(g, g_fnp)


def test_jaxprs_print_the_new_primitives():
    text = str(fgrad.make_jaxpr(lambda x: fnp.cumsum(fnp.prod(x, axis=0)) + fnp.argmax(x, axis=0))(np.ones((2, 3))))
    assert "reduce_prod[axes=(0,)]" in text and "cumsum[axis=0 reverse=False]" in text
    assert "argmax[axis=0]" in text
    vjp_text = str(fgrad.make_jaxpr(fgrad.grad(lambda x: fnp.sum(fnp.cumsum(x) ** 2)))(np.ones(3)))
    assert "cumsum[axis=0 reverse=True]" in vjp_text
