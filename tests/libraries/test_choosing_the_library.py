"""Which array library a transform runs on: that of all its arguments, the
differentiated ones and the others (keywords too); an array of another library
reached only through a closure or a global makes the transform run on that
library (lazily, for Dask), never converted to NumPy; a third library raises."""

import dask
import dask.array as da
import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

An = np.random.default_rng(0).standard_normal((40, 5))
bn = np.linspace(-1.0, 1.0, 40)
w = np.linspace(0.5, 1.5, 5)
A = da.from_array(An, chunks=(10, 5))
b = da.from_array(bn, chunks=10)
EXPECTED = An.T @ (An @ w - bn)


def loss(w, A, b):
    return 0.5 * fnp.sum((A @ w - b) ** 2)


def test_an_argument_left_out_of_argnums_chooses_the_library():
    g = fgrad.grad(loss)(w, A, b)
    assert isinstance(g, da.Array)
    np.testing.assert_allclose(g.compute(), EXPECTED, rtol=1e-12)


def test_a_keyword_argument_chooses_the_library():
    value, g = fgrad.value_and_grad(lambda w, *, A, b: loss(w, A, b))(w, A=A, b=b)
    assert isinstance(value, da.Array) and isinstance(g, da.Array)
    np.testing.assert_allclose(g.compute(), EXPECTED, rtol=1e-12)
    np.testing.assert_allclose(value.compute(), 0.5 * np.sum((An @ w - bn) ** 2), rtol=1e-12)


@pytest.mark.parametrize("jacobian", [fgrad.jacfwd, fgrad.jacrev])
def test_jacobians_take_the_library_of_the_fixed_arguments(jacobian):
    jac = jacobian(lambda w, A: A @ w)(w, A)
    assert isinstance(jac, da.Array)
    np.testing.assert_allclose(jac.compute(), An, rtol=1e-12)


def _never_compute(dsk, keys, **kwargs):
    raise AssertionError("fgrad computed a Dask array while building the result")


def residual(w):
    return A @ w - b  # A and b, Dask arrays, are not arguments


CLOSURES = {  # transform of functions closing over A and b -> NumPy's result
    "grad": (lambda: fgrad.grad(lambda w: fnp.sum(residual(w) ** 2))(w), 2 * An.T @ (An @ w - bn)),
    "value_and_grad": (lambda: fgrad.value_and_grad(lambda w: 0.5 * fnp.sum(residual(w) ** 2))(w)[1], EXPECTED),
    "jvp": (lambda: fgrad.jvp(residual, (w,), (np.ones(5),))[1], An @ np.ones(5)),
    "vjp": (lambda: fgrad.vjp(residual, w)[1](np.ones(40))[0], An.T @ np.ones(40)),
    "linearize": (lambda: fgrad.linearize(residual, w)[1](np.ones(5)), An @ np.ones(5)),
    "vmap": (lambda: fgrad.vmap(residual)(np.stack([w, 2 * w])), np.stack([An @ w - bn, An @ (2 * w) - bn])),
    "jacfwd": (lambda: fgrad.jacfwd(residual)(w), An),
    "jacrev": (lambda: fgrad.jacrev(residual)(w), An),
    "hessian": (lambda: fgrad.hessian(lambda w: 0.5 * fnp.sum(residual(w) ** 2))(w), An.T @ An),
    "vmap of grad": (lambda: fgrad.vmap(fgrad.grad(lambda w: 0.5 * fnp.sum(residual(w) ** 2)))(np.stack([w, w])),
                     np.stack([EXPECTED, EXPECTED])),
    "jit of grad": (lambda: fgrad.jit(fgrad.grad(lambda w: 0.5 * fnp.sum(residual(w) ** 2)))(w), EXPECTED),
    "grad of jit": (lambda: fgrad.grad(fgrad.jit(lambda w: 0.5 * fnp.sum(residual(w) ** 2)))(w), EXPECTED),
}


@pytest.mark.parametrize("name", sorted(CLOSURES))
def test_a_closure_over_another_librarys_array_computes_in_that_library(name):
    # The transform meets A on NumPy, and runs again on Dask: a lazy result, NumPy's numbers.
    run, expected = CLOSURES[name]
    with dask.config.set(scheduler=_never_compute):
        got = run()
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), expected, rtol=1e-12)


def test_a_closure_over_another_library_keeps_numpys_path_for_numpy_closures():
    # Nothing of Dask's anywhere: NumPy in, NumPy out.
    g = fgrad.grad(lambda w: 0.5 * fnp.sum((An @ w - bn) ** 2))(w)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, EXPECTED, rtol=1e-12)


def test_a_closure_over_the_same_library_runs_there():
    g = fgrad.grad(lambda w: loss(w, A, b))(da.from_array(w, chunks=5))
    assert isinstance(g, da.Array)
    np.testing.assert_allclose(g.compute(), EXPECTED, rtol=1e-12)


def test_a_closure_over_another_library_than_the_arguments_raises():
    import array_api_strict as xp

    with pytest.raises(TypeError, match=r"array of dask\.array .* computes on arrays of array_api_strict"):
        fgrad.grad(lambda w: fnp.sum(A @ w))(xp.asarray(w))


def test_jit_runs_a_closure_on_its_library():
    # jit sees what its function closes over (the jaxpr's constants).
    out = fgrad.jit(lambda w: loss(w, A, b))(w)
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), 0.5 * np.sum((An @ w - bn) ** 2), rtol=1e-12)


def test_pytorch_tensors_take_the_same_route():
    # PyTorch through array-api-compat's wrapper: tensors in, tensors out.
    torch = pytest.importorskip("torch")
    t = torch.linspace(-1.0, 1.0, 5, dtype=torch.float64)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(-x ** 2)))(t)
    assert isinstance(g, torch.Tensor) and g.dtype == torch.float64
    xn = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(g.numpy(), (np.cos(xn) - 2 * xn * np.sin(xn)) * np.exp(-xn ** 2), rtol=1e-12)
    out = fgrad.vmap(lambda x: fnp.dot(x, x))(torch.ones((3, 2), dtype=torch.float64))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0, 2.0])
