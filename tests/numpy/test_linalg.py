"""The namespace fgrad.numpy.linalg: its named-tuple results, NumPy 2's
array-API names it shares with fgrad.numpy, NumPy's linalg functions called on
traced values, and the functions it leaves out."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.primitives.test_linalg import traced

LA = fnp.linalg

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

RESULTS = [  # function, argument, result type name, fields
    (lambda a: LA.eigh(a), SPD, "EighResult", ("eigenvalues", "eigenvectors")),
    (lambda a: LA.eig(a), SPD, "EigResult", ("eigenvalues", "eigenvectors")),
    (lambda a: LA.qr(a), SPD, "QRResult", ("Q", "R")),
    (lambda a: LA.qr(a, "complete"), SPD[:, :2], "QRResult", ("Q", "R")),
    (lambda a: LA.slogdet(a), SPD, "SlogdetResult", ("sign", "logabsdet")),
    (lambda a: LA.svd(a), SPD, "SVDResult", ("U", "S", "Vh")),
]


@pytest.mark.parametrize("f, a, name, fields", RESULTS, ids=[r[2] + str(i) for i, r in enumerate(RESULTS)])
def test_results_are_fgrad_named_tuples_with_numpy_names_and_fields(f, a, name, fields):
    eager, under_vmap = f(a), fgrad.vmap(f)(a[None])
    for out in (eager, under_vmap):
        assert type(out).__name__ == name and type(out).__module__ == "fgrad.numpy.linalg"
        assert type(out)._fields == fields
    assert type(eager) is type(under_vmap)
    first, *rest = eager  # unpacks like NumPy's
    for field, value in zip(fields, eager):
        assert getattr(eager, field) is value


def test_results_hold_numpy_values():
    np.testing.assert_allclose(LA.eigh(SPD).eigenvalues, np.linalg.eigh(SPD).eigenvalues)
    np.testing.assert_allclose(fgrad.vmap(LA.eig)(SPD[None]).eigenvalues[0], np.linalg.eig(SPD).eigenvalues)
    np.testing.assert_allclose(fgrad.vmap(LA.svd)(SPD[None]).S[0], np.linalg.svd(SPD).S)
    assert isinstance(LA.qr(SPD, "r"), np.ndarray) and isinstance(LA.svd(SPD, compute_uv=False), np.ndarray)
    g = fgrad.grad(lambda a: LA.slogdet(a).logabsdet)(SPD)
    np.testing.assert_allclose(g, np.linalg.inv(SPD).T)


def test_array_api_names_reuse_fgrad_numpy():
    x = np.arange(18.0).reshape(2, 3, 3) / 7
    for name, kwargs in [("trace", {}), ("trace", {"offset": 1}), ("trace", {"dtype": np.float32}),
                         ("diagonal", {}), ("diagonal", {"offset": -1})]:
        f = lambda x, name=name, kwargs=kwargs: getattr(LA, name)(x, **kwargs)
        expected = getattr(np.linalg, name)(x, **kwargs)
        got = traced(f)(x)
        np.testing.assert_allclose(got, expected)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(f(x), expected)
        check_grads(f, (x,), order=1)
        np.testing.assert_allclose(fgrad.vmap(f)(x), expected)
    for name in ("trace", "diagonal", "outer", "matrix_transpose", "vecdot", "matmul", "tensordot"):
        assert name in LA.__all__ and callable(getattr(LA, name))
    # NumPy's own functions called on traced values dispatch to them
    np.testing.assert_allclose(fgrad.grad(lambda x: np.linalg.trace(x).sum())(x), np.broadcast_to(np.eye(3), x.shape))


def test_numpy_linalg_functions_on_traced_values_dispatch_to_fgrad():
    a = np.array([[2.0, 1.0], [-1.0, 3.0]])  # eigenvalues 2.5 +- i sqrt(3)/2
    g = fgrad.grad(lambda a: np.linalg.eig(a)[0].real.sum() + np.abs(np.linalg.eigvals(a)).sum())(a)
    np.testing.assert_allclose(g, fgrad.grad(lambda a: LA.eig(a)[0].real.sum() + fnp.abs(LA.eigvals(a)).sum())(a))
    # sum Re w = trace a, and |w1| + |w2| = 2 sqrt(det a) for a conjugate pair
    np.testing.assert_allclose(g, np.eye(2) + np.sqrt(np.linalg.det(a)) * np.linalg.inv(a).T, rtol=1e-12)
    t = np.eye(4).reshape(2, 2, 2, 2) + 0.1
    np.testing.assert_allclose(fgrad.jit(lambda t: np.linalg.tensorinv(t))(t), np.linalg.tensorinv(t))
    np.testing.assert_allclose(fgrad.jit(lambda t: np.linalg.tensorsolve(t, np.ones((2, 2))))(t),
                               np.linalg.tensorsolve(t, np.ones((2, 2))))
    for name in ("eig", "eigvals", "tensorinv", "tensorsolve"):
        assert name in LA.__all__


def test_unsupported_linalg_functions_say_so():
    assert not hasattr(LA, "cross")
    x = np.array([[1.0, 0.0, 0.0]])
    with pytest.raises(TypeError, match=r"numpy\.linalg\.cross was called on a traced value.*not support it yet"):
        fgrad.grad(lambda x: np.linalg.cross(x, x).sum())(x)
    with pytest.raises(TypeError, match=r"numpy\.linalg\.cross was called on a traced value"):
        fgrad.make_jaxpr(lambda x: np.linalg.cross(x, x))(x)
