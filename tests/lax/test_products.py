"""JAX's `Precision` and the `precision=` / `preferred_element_type=` keywords of
fgrad.numpy's products (accepted, checked, and at NumPy's precision), and
`lax.dot` / `lax.dot_general` (fgrad/lax/products.py) against numpy.einsum."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads

rng = np.random.default_rng(0)
A, B = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
V, W = rng.normal(size=3), rng.normal(size=3)

# (fgrad's product, NumPy's, the operands)
PRODUCTS = [
    (fnp.dot, np.dot, (A, B)),
    (fnp.matmul, np.matmul, (A, B)),
    (lambda a, b, **kw: fnp.tensordot(a, b, 1, **kw), lambda a, b: np.tensordot(a, b, 1), (A, B)),
    (fnp.inner, np.inner, (A, B.T)),
    (fnp.vdot, np.vdot, (V, W)),
    (fnp.vecdot, np.vecdot, (A, V)),
    (lambda a, b, **kw: fnp.einsum("ij,jk->ik", a, b, **kw), lambda a, b: np.einsum("ij,jk->ik", a, b), (A, B)),
    (lambda a, b, **kw: fnp.einsum(a, [0, 1], b, [1, 2], **kw), lambda a, b: a @ b, (A, B)),
]


def test_precision_members_and_names_as_jax():
    assert [p.name for p in lax.Precision] == ["DEFAULT", "HIGH", "HIGHEST"]
    for names, member in ((("default", "fastest", "bfloat16"), lax.Precision.DEFAULT),
                          (("high", "bfloat16_3x", "tensorfloat32"), lax.Precision.HIGH),
                          (("highest", "float32"), lax.Precision.HIGHEST)):
        assert all(lax.Precision(n) is member for n in names)
    assert repr(lax.Precision.HIGH) == "Precision.HIGH" and str(lax.Precision.HIGH) == "HIGH"
    assert lax.Precision(2) is lax.Precision.HIGHEST
    with pytest.raises(ValueError):
        lax.Precision("fast")


@pytest.mark.parametrize("fgrad_product, numpy_product, operands", PRODUCTS)
@pytest.mark.parametrize("precision", [None, "highest", lax.Precision.HIGH, ("default", lax.Precision.HIGHEST)])
def test_precision_gives_numpy_s_result_eager_jit_and_grad(fgrad_product, numpy_product, operands, precision):
    expected = numpy_product(*operands)
    product = lambda a, b: fgrad_product(a, b, precision=precision)  # noqa: E731
    np.testing.assert_allclose(product(*operands), expected, rtol=1e-14)
    np.testing.assert_allclose(fgrad.jit(product)(*operands), expected, rtol=1e-14)
    check_grads(product, operands, order=1)


@pytest.mark.parametrize("fgrad_product, numpy_product, operands", PRODUCTS)
def test_preferred_element_type_is_the_result_dtype(fgrad_product, numpy_product, operands):
    small = tuple((100 * x).astype(np.int8) for x in operands)
    # computed in int32, so the int8 products do not wrap around
    expected = numpy_product(*(x.astype(np.int32) for x in small))
    for run in (fgrad_product, fgrad.jit(lambda a, b: fgrad_product(a, b, preferred_element_type=np.int32))):
        got = run(*small, preferred_element_type=np.int32) if run is fgrad_product else run(*small)
        assert np.asarray(got).dtype == np.int32
        np.testing.assert_array_equal(got, expected)
    got = fgrad_product(*operands, preferred_element_type=np.float32)
    assert np.asarray(got).dtype == np.float32
    np.testing.assert_allclose(got, numpy_product(*operands), rtol=1e-6)
    g = fgrad.grad(lambda a: fnp.sum(fgrad_product(a, operands[1], preferred_element_type=np.float32)))(operands[0])
    assert g.dtype == np.float64  # the cast's derivative goes back to the operand's dtype
    np.testing.assert_allclose(g, fgrad.grad(lambda a: fnp.sum(fgrad_product(a, operands[1])))(operands[0]),
                               rtol=1e-6)


def test_multi_dot_takes_precision():
    np.testing.assert_allclose(fnp.linalg.multi_dot([A, B, B.T], precision="highest"), A @ B @ B.T)
    with pytest.raises(ValueError, match="multi_dot: precision must be None"):
        fnp.linalg.multi_dot([A, B], precision="exact")


def test_a_bad_precision_says_what_is_accepted():
    for bad in ("fast", 3, ("high",), ("high", "high", "high"), (None, None)):
        with pytest.raises(ValueError, match=r"fgrad.numpy.dot: precision must be None, a fgrad.lax.Precision, "
                                             r"one of the strings \['bfloat16', .*got"):
            fnp.dot(A, B, precision=bad)
    with pytest.raises(ValueError, match="fgrad.numpy.einsum: precision"):
        fgrad.jit(lambda a: fnp.einsum("ij,jk", a, B, precision="x"))(A)


# --- lax.dot and lax.dot_general --------------------------------------------------------

# (lhs shape, rhs shape, dimension numbers, the same contraction as einsum subscripts)
CONTRACTIONS = [
    ((2, 3), (3, 4), (([1], [0]), ([], [])), "ij,jk->ik"),
    ((5, 2, 3), (5, 3, 4), (([2], [1]), ([0], [0])), "bij,bjk->bik"),
    ((3, 5, 2), (4, 3, 5), (([0], [1]), ([1], [2])), "ibj,kib->bjk"),
    ((2, 3, 4), (4, 3), (([1, 2], [1, 0]), ([], [])), "ijk,kj->i"),
    ((2, 3), (4,), (([], []), ([], [])), "ij,k->ijk"),
    ((6, 2), (6, 2), (([1], [1]), ([0], [0])), "bi,bi->b"),
]


@pytest.mark.parametrize("lhs, rhs, dims, subscripts", CONTRACTIONS)
def test_dot_general_against_einsum(lhs, rhs, dims, subscripts):
    a, b = rng.normal(size=lhs), rng.normal(size=rhs)
    expected = np.einsum(subscripts, a, b)
    np.testing.assert_allclose(lax.dot_general(a, b, dims), expected)
    np.testing.assert_allclose(fgrad.jit(lambda a, b: lax.dot_general(a, b, dims, "highest"))(a, b), expected)
    np.testing.assert_allclose(fgrad.vmap(lambda a, b: lax.dot_general(a, b, dims))(a[None], b[None]),
                               expected[None])
    check_grads(lambda a, b: lax.dot_general(a, b, dims), (a, b), order=2)
    np.testing.assert_allclose(lax.dot(a, b, dimension_numbers=dims, preferred_element_type=np.float32),
                               expected.astype(np.float32), rtol=1e-6)


def test_dot_of_vectors_and_matrices():
    np.testing.assert_allclose(lax.dot(A, B), A @ B)
    np.testing.assert_allclose(lax.dot(A, V), A @ V)
    np.testing.assert_allclose(lax.dot(V, W, precision=lax.Precision.HIGHEST), V @ W)
    np.testing.assert_allclose(lax.dot(V, B), V @ B)
    with pytest.raises(ValueError, match=r"dimension_numbers must be given .* got shapes \(5, 2, 3\) and \(3,\)"):
        lax.dot(np.ones((5, 2, 3)), V)


def test_dot_general_errors():
    with pytest.raises(TypeError, match=r"dimension_numbers must be \(\(lhs_contracting"):
        lax.dot_general(A, B, ([1], [0]))
    with pytest.raises(TypeError, match=r"lhs contracting dimensions \(2,\) must be in \[0, 2\)"):
        lax.dot_general(A, B, (([2], [0]), ([], [])))
    with pytest.raises(TypeError, match=r"contracting dimensions \(0,\) of lhs \(shape \(2, 3\)\) and \(0,\) of rhs"):
        lax.dot_general(A, B, (([0], [0]), ([], [])))
    with pytest.raises(TypeError, match="batch and contracting dimensions must be disjoint"):
        lax.dot_general(A, A, (([0], [0]), ([0], [0])))
    with pytest.raises(TypeError, match="must be distinct"):
        lax.dot_general(A, A, (([0, 0], [0, 1]), ([], [])))
