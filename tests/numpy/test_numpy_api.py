"""fgrad.numpy behaves as NumPy: types, dtype promotion, broadcasting, methods,
operators, creation functions and plain-NumPy calls on traced values."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.numpy_checks import check_like_numpy, staged


def test_results_leave_as_numpy_types():
    assert type(fnp.exp(np.ones(2))) is np.ndarray
    assert type(fnp.exp(1.0)) is np.float64
    assert type(fnp.sum(np.ones(3))) is np.float64
    assert type(fnp.array([1.0, 2.0])) is np.ndarray


@pytest.mark.parametrize("x, y", [(np.ones(2, np.float32), 2.0), (np.ones(2, np.float32), 2),
                                  (np.arange(2), 1.5), (np.arange(2), np.arange(2)),
                                  (np.ones(2, np.float32), np.ones(2, np.float64)), (True, 1)])
def test_dtype_promotion_matches_numpy_under_tracing(x, y):
    for f, ref in [(fnp.add, np.add), (fnp.multiply, np.multiply), (fnp.divide, np.divide),
                   (fnp.power, np.power), (fnp.maximum, np.maximum)]:
        expected = ref(x, y)
        assert np.asarray(f(x, y)).dtype == expected.dtype
        traced = fgrad.make_jaxpr(lambda a, f=f: f(a, y))(x).out_avals[0]
        assert traced.dtype == expected.dtype and traced.shape == np.shape(expected)


def test_python_scalars_and_lists_are_accepted_where_numpy_accepts_them():
    assert fnp.add([1.0, 2.0], 1) .tolist() == [2.0, 3.0]
    g = fgrad.grad(lambda x: fnp.sum(fnp.multiply(x, [1.0, 2.0]) + [[1.0], [2.0]]))(np.ones(2))
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_operators_and_methods_on_tracers():
    def f(x):
        y = (-x + 1.0) * 2 / (x**2 + 1) - 3.0 ** fnp.abs(x) @ np.ones(2)
        checks = [x.T.shape == (2,), x.reshape(1, 2).shape == (1, 2), x.reshape((2, 1)).shape == (2, 1),
                  x.ravel().shape == (2,), x.astype(np.float32).dtype == np.float32,
                  (x < 0).dtype == bool, x.dot(np.ones(2)).shape == (), x.transpose().shape == (2,)]
        assert all(checks)
        return y.sum() + x.mean() + x.max() + x.min() + abs(x).sum() + (1 - x).sum() + (2 * x).sum()

    x = np.array([0.5, -1.5])
    expected = fgrad.grad(lambda x: f(x))(x)
    eps = 1e-6
    numeric = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(expected, numeric, rtol=1e-5)


def test_comparisons_under_grad_are_concrete_and_constants_come_from_stop_gradient():
    def f(x):
        if x > 0:  # Python control flow on the value
            c = fgrad.stop_gradient(x)  # float(x) itself would drop the derivative: it raises
            return x * float(c) + c.item()
        return -x

    assert fgrad.grad(f)(2.0) == 2.0  # float(c) and c.item() are constants: d/dx (2x + 2) = 2
    assert fgrad.grad(f)(-2.0) == -1.0


def test_plain_numpy_calls_on_tracers_use_fgrads_functions():
    x = np.array([0.3, 0.6])
    g = fgrad.grad(lambda x: np.sum(np.sin(x) ** 2 * np.exp(x)))(x)
    g_fnp = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2 * fnp.exp(x)))(x)
    np.testing.assert_allclose(g, g_fnp)
    assert fgrad.grad(lambda x: np.float64(2.0) * x)(1.0) == 2.0
    assert np.shape(fgrad.make_jaxpr(lambda x: np.reshape(x, (2, 1)))(x).out_avals[0].shape) == (2,)


def test_unsupported_numpy_functions_say_which_and_what_to_do():
    with pytest.raises(TypeError, match="numpy.unwrap was called on a traced value.*fgrad.numpy has no unwrap"):
        fgrad.grad(lambda x: np.unwrap(x).sum())(np.ones(2))
    with pytest.raises(TypeError, match="ufunc numpy.spacing was called on a traced value"):
        fgrad.grad(lambda x: np.spacing(x))(1.0)
    with pytest.raises(TypeError, match="numpy.add.reduce"):
        fgrad.grad(lambda x: np.add.reduce(x))(np.ones(2))


def test_asarray_of_a_tracer_refuses_to_drop_the_derivative():
    with pytest.raises(fgrad.TracerArrayConversionError, match="would silently drop its derivative"):
        fgrad.grad(lambda x: np.asarray(x).sum())(np.ones(2))


def test_array_creation():
    np.testing.assert_array_equal(fnp.zeros((2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(fnp.ones(3, np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(fnp.full((2,), 7.0), np.full((2,), 7.0))
    np.testing.assert_array_equal(fnp.arange(5), np.arange(5))
    np.testing.assert_array_equal(fnp.linspace(0, 1, 5), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(fnp.eye(3), np.eye(3))

    def f(x):
        z = fnp.zeros_like(x) + fnp.ones_like(x) + fnp.full((2, 2), x[0]) + fnp.full_like(x, 2.0)
        return fnp.sum(z * fnp.asarray(x) * fnp.array(x, dtype=np.float64))

    g = fgrad.grad(f)(np.array([1.0, 2.0]))
    eps = 1e-6
    x = np.array([1.0, 2.0])
    numeric = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g, numeric, rtol=1e-6)


def test_where_with_one_argument_and_misuse():
    assert fnp.where(np.array([True, False, True]))[0].tolist() == [0, 2]
    with pytest.raises(ValueError, match="both or neither"):
        fnp.where(True, 1.0)


def test_random_is_numpys():
    assert fnp.random.default_rng(0).normal() == np.random.default_rng(0).normal()


# --- Issue 12: shape queries, comparisons, creation, differences, assembly, products ---

R = np.random.default_rng(12)
V3 = np.array([0.31, 0.47, 0.83])
M34 = R.normal(size=(3, 4))
T234 = R.normal(size=(2, 3, 4))


def _second(x):
    x = np.asarray(x)
    return 0.5 * x + 0.1 if x.dtype.kind in "fc" else x


def check_vmap_and_jit(f, *args):
    """vmap over two examples of every argument equals a Python loop; jit equals eager."""
    def leaves(out):
        return list(out) if isinstance(out, (list, tuple)) else [out]

    for got, expected in zip(leaves(fgrad.jit(f)(*args)), leaves(f(*args)), strict=True):
        assert np.shape(got) == np.shape(expected) and np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    batch = [np.stack([np.asarray(a), _second(a)]) for a in args]
    loop = [leaves(f(*[b[k] for b in batch])) for k in range(2)]
    for i, got in enumerate(leaves(fgrad.vmap(f)(*batch))):
        np.testing.assert_allclose(got, np.stack([out[i] for out in loop]), rtol=1e-13)


@pytest.mark.parametrize("x", [np.float64(1.5), np.ones(3), np.ones((2, 3), np.float32), np.ones((2, 0, 4))])
def test_shape_ndim_size_isscalar_result_type_come_from_the_type(x):
    a = np.asarray(x)
    expected = (np.shape(x), np.ndim(x), np.size(x), np.size(a, 0) if a.ndim else None,
                np.size(a, -1) if a.ndim else None, a.ndim == 0,  # a traced 0-d value counts as a scalar
                np.result_type(a, 2.0), np.result_type(a, np.int8, 1j), False)

    def f(x):
        got = (fnp.shape(x), fnp.ndim(x), fnp.size(x), fnp.size(x, 0) if fnp.ndim(x) else None,
               fnp.size(x, -1) if fnp.ndim(x) else None, fnp.isscalar(x), fnp.result_type(x, 2.0),
               fnp.result_type(x, np.int8, 1j), fnp.iscomplexobj(x))
        assert got == expected and type(got[0]) is tuple and type(got[1]) is int and type(got[2]) is int
        return x * 2

    assert f(x) is not None
    for transform in (fgrad.jit, fgrad.make_jaxpr, fgrad.grad if np.ndim(x) == 0 else fgrad.jacfwd):
        transform(f)(x)
    fgrad.vmap(lambda y: f(y[0]))(np.stack([np.stack([x, x])] * 2))
    assert fnp.shape([[1.0, 2.0]]) == (1, 2) and fnp.ndim(2.0) == 0 and fnp.size([1, 2, 3]) == 3
    assert fnp.isscalar(2.0) and not fnp.isscalar(np.ones(1)) and fnp.isscalar("a")
    assert fnp.result_type(np.float32, 2.0) == np.float32


def test_result_type_of_a_weak_traced_scalar_is_weak():
    # A Python float argument is traced weakly typed: it does not widen float32.
    fgrad.jit(lambda x: (fnp.result_type(x, np.float32) == np.float32) or x)(2.0)
    assert fgrad.make_jaxpr(lambda x: fnp.zeros(2, fnp.result_type(x, np.float32)) + x)(2.0)


@pytest.mark.parametrize("a, b", [(V3, V3 + 1e-9), (V3, V3[::-1]), (np.float64(1.0), np.float64(1.0 + 1e-6)),
                                  (np.array([np.nan, 1.0, np.inf]), np.array([np.nan, 1.0, np.inf])),
                                  (np.arange(3), np.arange(3)), (M34, 1.0)])
def test_isclose_allclose_array_equal_are_numpys(a, b):
    for equal_nan in (False, True):
        f = lambda a, b: fnp.isclose(a, b, rtol=1e-4, atol=1e-7, equal_nan=equal_nan)  # noqa: E731
        check_like_numpy(f, a, b, order=0)
        assert fnp.allclose(a, b, equal_nan=equal_nan) == np.allclose(a, b, equal_nan=equal_nan)
        assert fnp.array_equal(a, b, equal_nan=equal_nan) == np.array_equal(a, b, equal_nan=equal_nan)
    check_vmap_and_jit(lambda a, b: fnp.isclose(a, b), a, np.broadcast_to(b, np.shape(a)))
    assert staged(lambda a: fnp.isclose(a, 1), a).dtype == bool


def test_allclose_and_array_equal_use_concrete_values_under_grad_and_refuse_abstract_ones():
    def f(x):
        return x * 2 if fnp.allclose(x, 1.0) and fnp.array_equal(x, x) else x

    assert fgrad.grad(f)(1.0) == 2.0 and fgrad.grad(f)(3.0) == 1.0
    assert fnp.allclose([1.0, 2.0], [1.0, 2.0 + 1e-9]) is True and fnp.array_equal([1], [1, 1]) is False
    for fn in (fnp.allclose, fnp.array_equal):
        for transform in (fgrad.jit, fgrad.make_jaxpr, fgrad.vmap):
            with pytest.raises(fgrad.ConcretizationTypeError,
                               match=rf"fgrad.numpy.{fn.__name__} returns a Python bool, so it needs concrete "
                                     r"values, but it got a traced f64\[.*\] value under `(jit|make_jaxpr|vmap)"):
                transform(lambda x, fn=fn: fn(x, x))(M34)


@pytest.mark.parametrize("x", [V3, V3 + 1j * np.array([0.0, 1.0, 0.0]), np.float64(2.0), np.complex128(1j),
                               np.arange(3), M34])
def test_iscomplex_and_isreal(x):
    for f in (fnp.iscomplex, fnp.isreal):
        check_like_numpy(f, x, order=0)
        if np.ndim(x):
            check_vmap_and_jit(f, x)


def test_identity_and_tri_are_constants_and_need_static_sizes():
    np.testing.assert_array_equal(fnp.identity(3, int), np.identity(3, int))
    np.testing.assert_array_equal(fnp.tri(3, 4, 1), np.tri(3, 4, 1))
    np.testing.assert_array_equal(fgrad.jit(lambda x: fnp.identity(2) * x)(3.0), 3 * np.identity(2))
    np.testing.assert_array_equal(fgrad.jit(lambda x: fnp.tri(2, k=-1, dtype=np.float32) * x)(3.0),
                                  3 * np.tri(2, k=-1))
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.identity needs `n` as a concrete value"):
        fgrad.jit(lambda n: fnp.identity(n))(3)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.tri needs `k` as a concrete value"):
        fgrad.jit(lambda k: fnp.tri(3, 3, k))(1)


@pytest.mark.parametrize("start, stop, kwargs", [
    (np.float64(0.1), np.float64(2.0), {}), (np.float64(0.1), V3, {"num": 4}),
    (V3, V3 + 1, {"num": 5, "endpoint": False, "axis": 1}), (np.float64(-1.0), V3, {"num": 3, "base": 2.0}),
    (V3, np.float64(1.0), {"num": 1}), (np.float64(0.5), np.float64(1.5), {"num": 4, "dtype": np.float32}),
])
def test_logspace(start, stop, kwargs):
    f = lambda a, b: fnp.logspace(a, b, **kwargs)  # noqa: E731
    check_like_numpy(f, start, stop, order=0 if "dtype" in kwargs else 2)
    check_vmap_and_jit(f, start, stop)
    check_grads(lambda b: fnp.logspace(0.5, 2.0, 4, base=b), (np.float64(3.0),), order=2)


@pytest.mark.parametrize("start, stop, kwargs", [
    (np.float64(0.1), np.float64(2.0), {}), (np.float64(0.1), V3, {"num": 4}),
    (V3, V3 + 1, {"num": 5, "endpoint": False, "axis": 1}), (-V3, -V3 - 2, {"num": 3, "axis": -1}),
    (V3, np.float64(1.0), {"num": 1}), (np.float64(0.5), np.float64(1.5), {"num": 4, "dtype": np.float32}),
])
def test_geomspace(start, stop, kwargs):
    f = lambda a, b: fnp.geomspace(a, b, **kwargs)  # noqa: E731
    check_like_numpy(f, start, stop, order=0 if "dtype" in kwargs else 2)
    check_vmap_and_jit(f, start, stop)


def test_geomspace_errors():
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        fgrad.grad(lambda a: fnp.geomspace(a, 1.0, 3).sum())(0.0)
    with pytest.raises(NotImplementedError, match="geomspace supports real end points only"):
        fgrad.make_jaxpr(lambda a: fnp.geomspace(a, 1j, 3))(1.0)


@pytest.mark.parametrize("x, kwargs", [
    (V3, {}), (V3, {"N": 5, "increasing": True}), (V3, {"N": 1}), (V3, {"N": 0}), (np.arange(1, 4), {}),
    (np.array([0.0, 0.5, 2.0]), {"N": 4}),
])
def test_vander(x, kwargs):
    f = lambda x: fnp.vander(x, **kwargs)  # noqa: E731
    check_like_numpy(f, x, order=2 if x.dtype.kind == "f" and kwargs.get("N", 3) > 1 else 0)
    check_vmap_and_jit(f, x)
    with pytest.raises(ValueError, match="x must be a one-dimensional array or sequence"):
        fgrad.make_jaxpr(fnp.vander)(M34)


@pytest.mark.parametrize("x, kwargs", [
    (V3, {}), (V3, {"n": 2}), (V3, {"n": 0}), (M34, {"axis": 0}), (M34, {"n": 2, "prepend": 0.5}),
    (M34, {"axis": 0, "append": M34[:1], "prepend": 1.0}), (T234, {"axis": 1, "n": 3}), (np.arange(5), {}),
    (np.array([True, False, False]), {}), (V3, {"n": 4}),
])
def test_diff(x, kwargs):
    f = lambda x: fnp.diff(x, **kwargs)  # noqa: E731
    check_like_numpy(f, x, order=2 if x.dtype.kind == "f" else 0)
    check_vmap_and_jit(f, x)


def test_diff_of_traced_prepend_and_append_and_errors():
    check_like_numpy(lambda x, p, a: fnp.diff(x, prepend=p, append=a), M34, V3[:, None], np.float64(0.2))
    with pytest.raises(ValueError, match="order must be non-negative but got -1"):
        fgrad.make_jaxpr(lambda x: fnp.diff(x, -1))(V3)
    with pytest.raises(ValueError, match="diff requires input that is at least one dimensional"):
        fgrad.make_jaxpr(fnp.diff)(1.0)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.diff needs `n` as a concrete value"):
        fgrad.jit(fnp.diff)(V3, 1)


@pytest.mark.parametrize("args", [(V3,), (M34, 1.0), (M34, None, V3[:2]), (V3, [1.0, 2.0], [[3.0]]),
                                  (np.float64(1.0), 2.0), (np.arange(4), None, 7)])
def test_ediff1d(args):
    check_like_numpy(lambda x: fnp.ediff1d(x, *args[1:]), args[0],
                     order=2 if np.asarray(args[0]).dtype.kind == "f" else 0)
    arrays = [np.asarray(a) for a in args if a is not None]
    if len(arrays) == len(args) and np.asarray(args[0]).dtype.kind == "f":  # traced extras too
        check_like_numpy(fnp.ediff1d, *arrays)
    check_vmap_and_jit(lambda x: fnp.ediff1d(x, *args[1:]), args[0])


def test_ediff1d_refuses_extras_it_cannot_cast():
    with pytest.raises(TypeError, match="dtype of `to_end` must be compatible with input `ary` under the "
                                        "`same_kind` rule"):
        fgrad.make_jaxpr(lambda x: fnp.ediff1d(x, to_end=0.5))(np.arange(3))
    with pytest.raises(TypeError, match="dtype of `to_begin` must be compatible"):
        fgrad.make_jaxpr(lambda x: fnp.ediff1d(x, to_begin=1j))(V3)


@pytest.mark.parametrize("y, x, kwargs", [
    (V3, None, {}), (V3, None, {"dx": 0.5}), (M34, None, {"axis": 0}), (M34, np.array([0.0, 1.0, 1.5, 3.0]), {}),
    (M34, np.array([0.0, 1.0, 3.0]), {"axis": 0}), (T234, 2 * T234, {"axis": 1}), (np.arange(4), None, {}),
])
def test_trapezoid(y, x, kwargs):
    if x is None:
        f = lambda y: fnp.trapezoid(y, **kwargs)  # noqa: E731
        check_like_numpy(f, y, order=2 if y.dtype.kind == "f" else 0)
        check_vmap_and_jit(f, y)
    else:
        f = lambda y, x: fnp.trapezoid(y, x, **kwargs)  # noqa: E731
        check_like_numpy(f, y, x)
        check_vmap_and_jit(f, y, x)
    check_grads(lambda d: fnp.trapezoid(M34, dx=d), (np.float64(0.3),), order=2)


@pytest.mark.parametrize("arr, values, axis", [
    (V3, 2 * V3, None), (M34, V3, None), (M34, M34[:1], 0), (M34, M34[:, :2], 1), (np.float64(1.0), 2.0, None),
    (np.arange(3), 1.5, None),
])
def test_append(arr, values, axis):
    f = lambda a, v: fnp.append(a, v, axis)  # noqa: E731
    check_like_numpy(f, arr, values, order=2 if np.asarray(arr).dtype.kind == "f" else 0)
    check_vmap_and_jit(f, arr, np.asarray(values))


@pytest.mark.parametrize("arr, obj, values, axis", [
    (V3, 1, 0.5, None), (V3, [0, 3], np.array([0.1, 0.2]), None), (M34, 1, V3, 1), (M34, 2, np.array(0.5), 0),
    (M34, [1], M34[:1], 0), (M34, slice(0, 4, 2), np.array([[0.1], [0.2], [0.3]]), 1),
    (M34, -1, np.arange(4.0), None), (np.float64(1.0), 0, 2.0, None), (np.arange(4), 2, np.array(7.0), None),
])
def test_insert(arr, obj, values, axis):
    f = lambda a, v: fnp.insert(a, obj, v, axis)  # noqa: E731
    check_like_numpy(f, arr, values, order=2 if np.asarray(arr).dtype.kind == "f" else 0)
    check_vmap_and_jit(f, arr, np.asarray(values))


@pytest.mark.parametrize("arr, obj, axis", [
    (V3, 1, None), (V3, [0, 2], None), (M34, 1, 1), (M34, [0, 2], 0), (M34, slice(None, None, 2), 1),
    (M34, np.array([True, False, True]), 0), (M34, -1, None), (np.arange(4), [1], None), (V3, [], None),
])
def test_delete(arr, obj, axis):
    f = lambda a: fnp.delete(a, obj, axis)  # noqa: E731
    check_like_numpy(f, arr, order=2 if arr.dtype.kind == "f" else 0)
    check_vmap_and_jit(f, arr)


def test_insert_and_delete_need_concrete_indices_and_raise_numpys_errors():
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.insert needs `obj` as a concrete value"):
        fgrad.jit(lambda x, i: fnp.insert(x, i, 0.0))(V3, 1)
    with pytest.raises(fgrad.ConcretizationTypeError, match="fgrad.numpy.delete needs `obj` as a concrete value"):
        fgrad.jit(lambda x, i: fnp.delete(x, i))(V3, 1)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        fgrad.make_jaxpr(lambda x: fnp.delete(x, 5))(V3)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 3"):
        fgrad.make_jaxpr(lambda x: fnp.insert(x, 7, 1.0))(V3)


@pytest.mark.parametrize("fn, x, spec", [
    (fnp.hsplit, V3[:2], 2), (fnp.hsplit, M34, 2), (fnp.hsplit, M34, [1, 3]), (fnp.hsplit, T234, 3),
    (fnp.vsplit, M34, 3), (fnp.vsplit, T234, [1]), (fnp.dsplit, T234, 2), (fnp.dsplit, T234, [1, 2]),
])
def test_hsplit_vsplit_dsplit(fn, x, spec):
    f = lambda x: fn(x, spec)  # noqa: E731
    check_like_numpy(f, x)
    check_vmap_and_jit(f, x)


def test_split_errors():
    for fn, x, text in [(fnp.hsplit, 1.0, "hsplit only works on arrays of 1 or more dimensions"),
                        (fnp.vsplit, V3, "vsplit only works on arrays of 2 or more dimensions"),
                        (fnp.dsplit, M34, "dsplit only works on arrays of 3 or more dimensions")]:
        with pytest.raises(ValueError, match=text):
            fgrad.make_jaxpr(lambda x, fn=fn: fn(x, 1))(x)
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        fgrad.make_jaxpr(lambda x: fnp.hsplit(x, 3))(M34)


@pytest.mark.parametrize("xs", [(V3, 2 * V3), (M34, M34[:1]), (np.float64(1.0), np.float64(2.0))])
def test_row_stack_is_vstack_and_warns_as_numpy_does(xs):
    f = lambda *xs: fnp.row_stack(xs)  # noqa: E731
    with pytest.warns(DeprecationWarning, match="`row_stack` alias is deprecated"):
        check_like_numpy(f, *xs)
    with pytest.warns(DeprecationWarning, match="`row_stack` alias is deprecated"):
        check_vmap_and_jit(f, *xs)


@pytest.mark.parametrize("axis, start", [(0, 0), (2, 0), (2, 1), (0, 3), (-1, 1), (1, -1), (1, 2), (1, 1)])
def test_rollaxis(axis, start):
    f = lambda x: fnp.rollaxis(x, axis, start)  # noqa: E731
    check_like_numpy(f, T234)
    check_vmap_and_jit(f, T234)


def test_rollaxis_errors():
    with pytest.raises(np.exceptions.AxisError, match="'start' arg requires -3 <= start < 4, but 5 was passed in"):
        fgrad.make_jaxpr(lambda x: fnp.rollaxis(x, 0, 5))(T234)
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        fgrad.make_jaxpr(lambda x: fnp.rollaxis(x, 3))(T234)


@pytest.mark.parametrize("a, b, kwargs", [
    (V3, V3[::-1] + 1, {}), (M34[:, :3], M34[:, 1:], {}), (M34[:, :3], V3, {}), (M34[:3, :3], M34[:, 1:], {"axisa": 0}),
    (M34[:, :3], M34[:, 1:], {"axisb": 0, "axisc": 0}), (T234[:, :, :3], M34[:, 1:], {"axis": -1}),
    (np.arange(3), np.arange(3.0)[::-1], {}), (T234[:, :3], T234[:, :3] + 1, {"axis": 1}),
])
def test_cross(a, b, kwargs):
    f = lambda a, b: fnp.cross(a, b, **kwargs)  # noqa: E731
    check_like_numpy(f, a, b)
    check_vmap_and_jit(f, a, b)


@pytest.mark.parametrize("a, b", [(V3[:2], V3[1:]), (M34[:, :2], M34[:, :3]), (M34[:, :3], M34[:, 2:])])
def test_cross_of_two_component_vectors_warns_as_numpy_does(a, b):
    with pytest.warns(DeprecationWarning, match="Arrays of 2-dimensional vectors are deprecated"):
        check_like_numpy(fnp.cross, a, b)
    with pytest.warns(DeprecationWarning, match="Arrays of 2-dimensional vectors are deprecated"):
        check_vmap_and_jit(fnp.cross, a, b)


def test_cross_errors():
    with pytest.raises(ValueError, match="At least one array has zero dimension"):
        fgrad.make_jaxpr(fnp.cross)(1.0, V3)
    with pytest.raises(ValueError, match=r"incompatible dimensions for cross product\n\(dimension must be 2 or 3\)"):
        fgrad.make_jaxpr(fnp.cross)(M34, M34)
    with pytest.raises(np.exceptions.AxisError, match="axisb: axis 2 is out of bounds"):
        fgrad.make_jaxpr(lambda a, b: fnp.cross(a, b, axisb=2))(V3, V3)


@pytest.mark.parametrize("p, x", [(V3, np.float64(0.7)), (V3, M34), (np.array([2.0]), V3), (np.arange(3), V3),
                                  (V3, np.arange(4)), (np.array([[1.0, 2.0], [0.5, 0.1]]), V3[:2])])
def test_polyval(p, x):
    check_like_numpy(fnp.polyval, p, x, order=2 if p.dtype.kind == x.dtype.kind == "f" else 0)
    check_vmap_and_jit(fnp.polyval, p, x)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        fgrad.make_jaxpr(fnp.polyval)(1.0, V3)


def test_plain_numpy_calls_reach_the_new_functions():
    g = fgrad.grad(lambda x: np.sum(np.diff(x, prepend=0.0) ** 2) + np.trapezoid(x) + np.size(x, 0))(V3)
    np.testing.assert_allclose(g, fgrad.grad(lambda x: fnp.sum(fnp.diff(x, prepend=0.0) ** 2)
                                             + fnp.trapezoid(x))(V3))
    assert fgrad.make_jaxpr(lambda x: np.cross(x, np.delete(np.insert(x, 0, 1.0), 3)))(V3).out_avals[0].shape == (3,)
