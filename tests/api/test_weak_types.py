"""Python numbers passed to a transform stay weakly typed (issue 25): each
transform's values and dtypes are those of the same expression in plain NumPy,
where `float32_array * n + n` is float32 for a Python int or float `n`."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

ARRAYS = {
    "float32": np.array([1.5, -2.0, 0.25], np.float32),
    "int32": np.array([1, -2, 7], np.int32),
    "complex64": np.array([1 + 2j, -0.5j, 3], np.complex64),
}
NUMBERS = [3, 2.5]


def f(x, n):
    return x * n + n


def same(got, want):
    """Equal values and NumPy's dtype (and scalar-ness)."""
    want = np.asarray(want)
    assert np.asarray(got).dtype == want.dtype, (np.asarray(got).dtype, want.dtype)
    assert isinstance(got, np.ndarray) == bool(want.ndim)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def params():
    for name, x in ARRAYS.items():
        for n in NUMBERS:
            if not (name == "int32" and isinstance(n, float)):  # keep some of each
                yield pytest.param(x, n, id=f"{name}-{type(n).__name__}")
    yield pytest.param(ARRAYS["int32"], 2.5, id="int32-float")


@pytest.mark.parametrize("x, n", list(params()))
def test_jit(x, n):
    same(fgrad.jit(f)(x, n), f(x, n))
    same(fgrad.jit(f)(x, n), f(x, n))  # the cached version


@pytest.mark.parametrize("x, n", list(params()))
def test_vmap_of_a_python_number_not_mapped(x, n):
    same(fgrad.vmap(f, in_axes=(0, None))(x, n), f(x, n))
    same(fgrad.vmap(fgrad.jit(f), in_axes=(0, None))(x, n), f(x, n))


# Differentiated Python numbers are floats (an int has no tangent).
DIFFERENTIABLE = [p for p in params() if p.values[0].dtype.kind != "i" and isinstance(p.values[1], float)]


@pytest.mark.parametrize("x, n", DIFFERENTIABLE)
def test_jvp_and_linearize(x, n):
    t = np.ones_like(x)
    y, y_dot = fgrad.jvp(f, (x, n), (t, 1.0))
    same(y, f(x, n))
    # d/dx: n; d/dn: x + 1; both in the output's dtype.
    same(y_dot, (t * n + (x + 1)).astype(y.dtype))
    y, f_jvp = fgrad.linearize(f, x, n)
    same(y, f(x, n))
    same(f_jvp(t, 1.0), (t * n + (x + 1)).astype(y.dtype))


def test_jvp_of_numpy_scalars_and_python_floats():
    x, y = np.float32(2), 3.0
    out, out_dot = fgrad.jvp(lambda a, b: a * b, (x, y), (np.float32(1), 1.0))
    same(out, x * y)  # float32 in NumPy 2: the Python float is weak
    same(out_dot, np.float32(1) * y + x * 1.0)


@pytest.mark.parametrize("x, n", [p for p in DIFFERENTIABLE if p.values[0].dtype.kind == "f"])
def test_vjp_and_grads(x, n):
    y, pull = fgrad.vjp(f, x, n)
    same(y, f(x, n))
    ct_x, ct_n = pull(np.ones_like(y))
    same(ct_x, np.full_like(x, n))
    # A Python number's cotangent has its strong dtype (float64), as its gradient.
    same(ct_n, np.float64((x + 1).sum()))
    loss = lambda x, n: f(x, n).sum()  # noqa: E731
    g = fgrad.grad(loss, argnums=(0, 1))(x, float(n))
    same(g[0], np.full_like(x, n))
    same(g[1], np.float64((x + 1).sum()))
    value, g = fgrad.value_and_grad(loss)(x, n)
    same(value, loss(x, n))
    same(g, np.full_like(x, n))


@pytest.mark.parametrize("x, n", [p for p in params() if p.values[0].dtype.kind == "f"])
def test_jacobians(x, n):
    for jac in (fgrad.jacfwd, fgrad.jacrev):
        same(jac(f)(x, n), np.diag(np.full_like(x, n)))
        same(jac(f, argnums=1)(x, float(n)), (x + 1).astype(np.float64 if jac is fgrad.jacrev else x.dtype))


def test_weak_zero_d_results_leave_as_numpy_scalars():
    out = fgrad.jvp(lambda x, n: x * n, (np.float32(2), 3.0), (np.float32(1), 1.0))
    assert [type(v) for v in out] == [np.float32, np.float32]
    out = fgrad.jvp(lambda n: n * 2, (1.5,), (1.0,))
    assert [type(v) for v in out] == [np.float64, np.float64]


@pytest.mark.parametrize("transform", ["grad", "jvp", "jacfwd", "hessian"])
def test_a_python_number_argument_can_be_indexed_as_a_0d_array(transform):
    f = lambda x: fnp.sum(x[None] ** 3)  # noqa: E731
    got = {"grad": lambda: fgrad.grad(f)(1.5), "jvp": lambda: fgrad.jvp(f, (1.5,), (1.0,))[1],
           "jacfwd": lambda: fgrad.jacfwd(f)(1.5), "hessian": lambda: fgrad.hessian(f)(1.5)}[transform]()
    want = {"hessian": 6 * 1.5}.get(transform, 3 * 1.5 ** 2)
    assert float(got) == pytest.approx(want, rel=1e-15)


def g(x, n):
    return x * (n - 1) + (-n) * 2 + n / 2


@pytest.mark.parametrize("x, n", list(params()))
def test_arithmetic_on_python_numbers_stays_weak_under_every_transform(x, n):
    # `n - 1` of a Python number is a Python number in NumPy: it does not widen x.
    want = g(x, n)
    same(fgrad.jit(g)(x, n), want)
    same(fgrad.vmap(g, in_axes=(0, None))(x, n), want)
    same(fgrad.jvp(g, (x, n), (x, n))[0], want)
    same(fgrad.jit(lambda x: g(x, n))(x), want)
    if x.dtype.kind == "f":
        same(fgrad.grad(lambda x, n: fnp.sum(fnp.real(g(x, n))))(x, n), np.real(np.ones_like(x) * (n - 1)))
        same(fgrad.jit(fgrad.grad(lambda x, n: fnp.sum(fnp.real(g(x, n)))))(x, n),
             np.real(np.ones_like(x) * (n - 1)))


def test_a_comparison_of_python_numbers_is_a_bool_and_a_python_division_by_zero_is_numpys():
    assert fgrad.jit(lambda a, b: a < b)(1, 2) is not True  # NumPy's bool, as eagerly
    with np.errstate(divide="ignore"):
        assert fgrad.jit(lambda a, b: a / b)(1.0, 0.0) == np.inf
        assert fgrad.jit(lambda a, b: (a / b) * np.float32(1))(1.0, 0.0).dtype == np.float32
