"""The transforms end to end on arrays of array_api_strict and Dask, against
derivatives written out by hand and computed by NumPy: each result is an array
of the input's library with NumPy's values; a Dask result is a lazy graph,
built without computing anything; and the errors for mixing libraries or
missing array-api-compat."""

import sys

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.core import libraries

xs = pytest.importorskip("array_api_strict")
da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

pytestmark = pytest.mark.filterwarnings("error::UserWarning")  # strict's warning on comparing dtypes

X = np.linspace(-1.0, 1.2, 6)
Y = np.linspace(0.3, 0.8, 6)


def _strict(x):
    return xs.asarray(x)


def _dask(x):
    return da.from_array(x, chunks=tuple(max(1, n // 2) for n in np.shape(x)))


LIBRARIES = {"array_api_strict": (_strict, type(_strict(0.0)), np.from_dlpack),
             "dask": (_dask, da.Array, lambda x: x.compute())}


@pytest.fixture(params=sorted(LIBRARIES))
def lib(request):
    return LIBRARIES[request.param]


def check(got, want, lib):
    """`got` is an array of the library equal to NumPy's `want`."""
    _, array_type, to_numpy = lib
    assert isinstance(got, array_type), type(got)
    value = to_numpy(got)
    assert value.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-14)


# f(x) = sum(sin(x) exp(-x^2)); its gradient and Hessian (diagonal), by hand.
def f(x):
    return fnp.sum(fnp.sin(x) * fnp.exp(-x**2))


def df(x):
    return (np.cos(x) - 2 * x * np.sin(x)) * np.exp(-x**2)


def d2f(x):
    return (-np.sin(x) - 4 * x * np.cos(x) + (4 * x**2 - 2) * np.sin(x)) * np.exp(-x**2)


def g(x):  # elementwise: its Jacobian is diag(cos(x) y + ...)
    return fnp.sin(x) * x


def dg(x):
    return np.cos(x) * x + np.sin(x)


def test_grad(lib):
    to, _, _ = lib
    check(fgrad.grad(f)(to(X)), df(X), lib)


def test_value_and_grad_with_aux(lib):
    to, _, _ = lib
    (value, aux), grad = fgrad.value_and_grad(lambda x: (f(x), fnp.cos(x)), has_aux=True)(to(X))
    check(value, np.sum(np.sin(X) * np.exp(-X**2)), lib)
    check(aux, np.cos(X), lib)
    check(grad, df(X), lib)


def test_grad_of_two_arguments(lib):
    to, _, _ = lib
    gx, gy = fgrad.grad(lambda x, y: fnp.sum(x * fnp.exp(y)), argnums=(0, 1))(to(X), to(Y))
    check(gx, np.exp(Y), lib)
    check(gy, X * np.exp(Y), lib)


def test_vjp_with_a_numpy_cotangent(lib):
    to, _, _ = lib
    out, pullback = fgrad.vjp(g, to(X))
    check(out, np.sin(X) * X, lib)
    (ct,) = pullback(Y)  # a NumPy cotangent for the library's primals: computed in the library
    check(ct, Y * dg(X), lib)


def test_vjp_of_the_identity_returns_the_library_cotangent(lib):
    to, _, _ = lib
    _, pullback = fgrad.vjp(lambda x: x, to(X))
    check(pullback(Y)[0], Y, lib)


def test_jvp(lib):
    to, _, _ = lib
    out, tangent = fgrad.jvp(g, (to(X),), (to(Y),))
    check(out, np.sin(X) * X, lib)
    check(tangent, dg(X) * Y, lib)


def test_linearize(lib):
    to, _, _ = lib
    out, f_jvp = fgrad.linearize(g, to(X))
    check(out, np.sin(X) * X, lib)
    check(f_jvp(to(Y)), dg(X) * Y, lib)
    check(f_jvp(Y), dg(X) * Y, lib)  # a NumPy tangent


def test_vmap(lib):
    to, _, _ = lib
    batch = np.stack([X, Y])
    check(fgrad.vmap(lambda x: fnp.sum(fnp.sin(x)) * x)(to(batch)),
          np.sum(np.sin(batch), axis=1, keepdims=True) * batch, lib)


def test_jit(lib):
    to, _, _ = lib
    jitted = fgrad.jit(lambda x, y: fnp.sin(x) * y + fnp.sum(x))
    check(jitted(to(X), to(Y)), np.sin(X) * Y + np.sum(X), lib)
    check(jitted(to(X), to(Y)), np.sin(X) * Y + np.sum(X), lib)  # the cached version
    check(jitted.lower(to(X), to(Y)).compile()(to(X), to(Y)), np.sin(X) * Y + np.sum(X), lib)


def test_jacfwd_and_jacrev(lib):
    to, _, _ = lib
    check(fgrad.jacfwd(g)(to(X)), np.diag(dg(X)), lib)
    check(fgrad.jacrev(g)(to(X)), np.diag(dg(X)), lib)


def test_hessian(lib):
    to, _, _ = lib
    check(fgrad.hessian(f)(to(X)), np.diag(d2f(X)), lib)


def test_grad_of_jit(lib):
    to, _, _ = lib
    check(fgrad.grad(fgrad.jit(f))(to(X)), df(X), lib)


def test_vmap_of_grad(lib):
    to, _, _ = lib
    batch = np.stack([X, Y])
    check(fgrad.vmap(fgrad.grad(f))(to(batch)), df(batch), lib)


def test_cond(lib):
    to, _, _ = lib

    def h(x):
        return lax.cond(fnp.sum(x) > 0, lambda x: fnp.sum(fnp.sin(x)), lambda x: fnp.sum(x**2), x)

    check(fgrad.grad(h)(to(X)), np.cos(X), lib)  # sum(X) > 0
    check(fgrad.grad(h)(to(-X)), -2 * X, lib)
    check(fgrad.jit(h)(to(X)), np.sum(np.sin(X)), lib)


def test_fori_loop(lib):
    to, _, _ = lib
    # three halvings then a square: d/dx sum((x / 8)^2) = x / 32
    h = lambda x: fnp.sum(lax.fori_loop(0, 3, lambda i, c: c * 0.5, x) ** 2)  # noqa: E731
    check(fgrad.grad(h)(to(X)), X / 32, lib)


def test_scan(lib):
    to, _, _ = lib

    def cumulative(x):  # the running products of x, by a scan
        return lax.scan(lambda c, y: (c * y, c * y), 1.0, x)[1]

    check(fgrad.jit(cumulative)(to(Y)), np.cumprod(Y), lib)
    check(fgrad.grad(lambda x: fnp.sum(cumulative(x)))(to(Y)),
          np.array([np.sum(np.cumprod(Y)[k:]) / Y[k] for k in range(len(Y))]), lib)


def test_while_loop(lib):
    to, _, _ = lib

    def doubling(x):  # double until the sum reaches 10: 1+...+1 (6) doubles once
        return lax.while_loop(lambda c: fnp.sum(c) < 10.0, lambda c: c * 2.0, x)

    ones = np.ones(6)
    check(fgrad.jit(doubling)(to(ones)), 2 * ones, lib)
    check(fgrad.grad(lambda x: fnp.sum(doubling(x)))(to(ones)), 2 * ones, lib)


def test_custom_vjp(lib):
    to, _, _ = lib

    @fgrad.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (cube(x), x), lambda x, ct: (3 * x**2 * ct * 10.0,))  # a rule that says x 10
    check(fgrad.grad(lambda x: fnp.sum(cube(x)))(to(X)), 30 * X**2, lib)


def test_checkpoint(lib):
    to, _, _ = lib
    layer = fgrad.checkpoint(lambda h: fnp.tanh(h * 2.0))
    check(fgrad.grad(lambda x: fnp.sum(layer(x)))(to(X)), 2 / np.cosh(2 * X) ** 2, lib)


def test_jit_of_a_function_closing_over_a_library_array(lib):
    to, _, _ = lib
    c = to(Y)
    jitted = fgrad.jit(lambda x: fnp.sin(x) * c)
    check(jitted(X), np.sin(X) * Y, lib)  # NumPy's operand, the library's constant: the library's result
    check(jitted(to(X)), np.sin(X) * Y, lib)


def test_make_jaxpr_of_library_arrays(lib):
    to, _, _ = lib
    assert str(fgrad.make_jaxpr(g)(to(X))) == str(fgrad.make_jaxpr(g)(X))


def test_fgrad_numpy_keeps_a_closed_over_library_array(lib):
    to, _, _ = lib
    c = to(Y)
    grad = fgrad.grad(lambda x: fnp.sum(x * fnp.asarray(c)) + fnp.sum(x * fnp.astype(c, np.float32)))
    check(grad(to(X)), Y + Y.astype(np.float32), lib)


def test_indexing_by_a_library_integer_array_stays_in_the_library(lib):
    to, _, _ = lib
    index = np.array([4, 0, 4, 2])
    want = np.zeros(6)
    np.add.at(want, index, np.cos(X[index]))
    i = to(index)
    check(fgrad.grad(lambda x: fnp.sum(fnp.sin(x[i])))(to(X)), want, lib)  # closed over
    check(fgrad.grad(lambda x: fnp.sum(fnp.sin(fnp.take(x, i))))(to(X)), want, lib)
    check(fgrad.grad(lambda x, i: fnp.sum(fnp.sin(x[i])))(to(X), i), want, lib)  # an argument


def test_debug_print_and_tap_grad_see_the_library_arrays(lib, capsys):
    to, array_type, _ = lib
    seen = []

    def h(x):
        fgrad.debug.print("x = {}", x)
        return fnp.sum(fgrad.debug.tap_grad(x * 2.0, seen.append) ** 2)

    check(fgrad.grad(h)(to(X)), 8 * X, lib)
    printed = capsys.readouterr().out
    assert ("dask.array<" if array_type is da.Array else "array_api_strict.float64") in printed, printed
    assert len(seen) == 1
    check(seen[0], 4 * X, lib)


# --- Dask stays lazy --------------------------------------------------------------


def _no_compute(dsk, keys, **kwargs):
    raise AssertionError("a Dask graph was computed while fgrad built it")


@pytest.mark.parametrize("transform", [
    lambda x: fgrad.grad(f)(x),
    lambda x: fgrad.jit(g)(x),
    lambda x: fgrad.vmap(fgrad.grad(f))(x.reshape((2, 3))),
    lambda x: fgrad.jvp(g, (x,), (x,))[1],
    lambda x: fgrad.vjp(g, x)[1](x)[0],
    lambda x: fgrad.hessian(f)(x),
    lambda x: fgrad.grad(lambda x: fnp.sum(fgrad.checkpoint(fnp.sin)(x)))(x),
    lambda x: fgrad.grad(lambda x: fnp.sum(lax.scan(lambda c, y: (c * y, c), 1.0, x)[1]))(x),
    lambda x: fgrad.grad(lambda x: fnp.sum(x[da.from_array(np.array([4, 0, 4]), chunks=2)]))(x),
], ids=["grad", "jit", "vmap_of_grad", "jvp", "vjp", "hessian", "checkpoint", "scan", "dask_index"])
def test_a_dask_result_is_a_graph_built_without_computing(transform):
    x = da.from_array(X, chunks=3)
    with dask.config.set(scheduler=_no_compute):
        out = transform(x)
    assert isinstance(out, da.Array)
    assert isinstance(out.compute(), np.ndarray)


def test_the_gradient_of_a_dask_array_keeps_its_chunks():
    x = da.from_array(X, chunks=2)
    assert fgrad.grad(f)(x).chunks == x.chunks


# --- errors ------------------------------------------------------------------------


def test_mixing_two_libraries_raises_naming_both():
    with pytest.raises(TypeError, match=r"mix arrays of (array_api_strict|dask\.array) and of "
                                        r"(dask\.array|array_api_strict)"):
        fgrad.grad(lambda x, y: fnp.sum(x * y), argnums=(0, 1))(_strict(X), _dask(Y))


def test_a_cotangent_of_another_library_raises_naming_both():
    _, pullback = fgrad.vjp(g, _strict(X))
    with pytest.raises(TypeError, match=r"array_api_strict \(the primals\) and of dask\.array"):
        pullback(_dask(Y))


def test_without_array_api_compat_the_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(libraries, "_libraries", {})  # forget the libraries already met
    monkeypatch.setitem(sys.modules, "array_api_compat", None)  # import fails as if not installed
    for name in [m for m in sys.modules if m.startswith("array_api_compat.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install fgrad\[array-api\]"):
        fgrad.grad(f)(_dask(X))
