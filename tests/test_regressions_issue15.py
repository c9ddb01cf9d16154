"""Regression tests for the bugs of issue 15, each against the values JAX gives.

Each test names the failure it guards against: a RecursionError, a NumPy
reduction called on a traced value, a lost broadcast tangent, a complex
constant's tangent, and jacfwd refusing a float32 input beside a float64 one.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp

x = np.array([1.0, 2.0])
y = np.array([0.5, 2.0])


def test_checkpoint_closing_over_a_differentiated_argument():
    """A checkpointed function that closes over `y`, differentiated with respect
    to both arguments, used to recurse without end (RecursionError)."""
    grads = fgrad.grad(lambda x, y: fnp.sum(fgrad.checkpoint(lambda a: a * y)(x)),
                       argnums=(0, 1))(x, y)
    assert_allclose(grads[0], [0.5, 2.0])
    assert_allclose(grads[1], [1.0, 2.0])


def test_custom_jvp_closing_over_a_differentiated_argument():
    """A custom_jvp built inside the function, closing over the traced `y`,
    differentiated with respect to both arguments, used to raise RecursionError."""

    def loss(x, y):
        f = fgrad.custom_jvp(lambda a: fnp.sin(a) * y)

        @f.defjvp
        def f_jvp(primals, tangents):
            (a,), (da,) = primals, tangents
            return fnp.sin(a) * y, fnp.cos(a) * y * da

        return fnp.sum(f(x))

    grads = fgrad.grad(loss, argnums=(0, 1))(x, y)
    assert_allclose(grads[0], np.cos(x) * y)
    assert_allclose(grads[1], np.sin(x))


def test_checkpoint_returning_a_closed_over_value():
    """A checkpointed function that ignores its argument and returns the
    closed-over input used to raise "numpy.add.reduce called on a traced value"."""
    g = fgrad.grad(lambda x1: fgrad.checkpoint(lambda a: x1)(x1))(2.0)
    assert_allclose(g, 1.0)


def test_tangent_of_a_scalar_broadcast_against_a_constant():
    """The tangent of sum(x), a scalar, broadcast by adding a constant vector,
    must be broadcast too: [6, 6, 6], and jacfwd a 3 x 3 matrix of ones."""
    f = lambda x: fnp.sum(x) + np.ones(3)  # noqa: E731
    primal, tangent = fgrad.jvp(f, (np.arange(3.0),), (np.array([1.0, 2.0, 3.0]),))
    assert_allclose(primal, [4.0, 4.0, 4.0])
    assert_allclose(tangent, [6.0, 6.0, 6.0])
    assert_allclose(fgrad.jacfwd(f)(np.arange(3.0)), np.ones((3, 3)))


def test_jvp_of_a_product_with_an_imaginary_constant():
    """1j * x, x * 1j and a 1-d x: a real input times a complex constant has a
    complex primal and tangent."""
    for f in (lambda x: 1j * x, lambda x: x * 1j):
        primal, tangent = fgrad.jvp(f, (np.float64(0.5),), (np.float64(1.0),))
        assert_array_equal(primal, 0.5j)
        assert_array_equal(tangent, 1j)
    primal, tangent = fgrad.jvp(lambda x: 1j * x, (np.array([0.5, 1.0]),), (np.array([1.0, 2.0]),))
    assert_array_equal(primal, [0.5j, 1j])
    assert_array_equal(tangent, [1j, 2j])


def test_jacobians_of_a_float32_input_beside_a_float64_one():
    """jacfwd used to build one float64 basis for both inputs and so raise
    "the tangent at leaf 0 ... has dtype float64, but the corresponding primal
    input has dtype float32". Each input now gets a basis of its own dtype.

    As in JAX, jacfwd's Jacobians have the output's dtype (float64 here, by
    promotion), while jacrev's have each input's dtype, as cotangents do
    (float32 for `a`): the values agree."""
    a = np.array([1.0, 2.0], dtype=np.float32)
    f = lambda a, b: a * b  # noqa: E731
    expected = ([[0.5, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 2.0]])

    fwd = fgrad.jacfwd(f, argnums=(0, 1))(a, y)
    for jac, want in zip(fwd, expected):
        assert jac.dtype == np.float64
        assert_array_equal(jac, want)

    rev = fgrad.jacrev(f, argnums=(0, 1))(a, y)
    assert [jac.dtype for jac in rev] == [np.float32, np.float64]
    for jac, want in zip(rev, expected):
        assert_array_equal(jac, want)


def test_hessian_of_a_float32_input_beside_a_float64_one():
    """hessian is jacfwd over jacrev, so it failed the same way; the blocks of
    sum(a * b**2) are [[0, diag(2b)], [diag(2b), diag(2a)]]."""
    a = np.array([1.0, 2.0], dtype=np.float32)
    (h_aa, h_ab), (h_ba, h_bb) = fgrad.hessian(lambda a, b: fnp.sum(a * b * b), argnums=(0, 1))(a, y)
    assert_array_equal(h_aa, np.zeros((2, 2)))
    assert_array_equal(h_ab, np.diag(2 * y))
    assert_array_equal(h_ba, np.diag(2 * y))
    assert_array_equal(h_bb, np.diag(2 * a.astype(np.float64)))


def test_jacrev_of_a_float32_output_beside_a_float64_one():
    """jacrev's output basis had the same fault: one float64 cotangent for a
    float32 output was refused. Each output now gets a basis of its own dtype."""
    a = np.array([1.0, 2.0], dtype=np.float32)
    (j_aa, j_ab), (j_ba, j_bb) = fgrad.jacrev(lambda a, b: (a * 2, b * 3), argnums=(0, 1))(a, y)
    assert [j.dtype for j in (j_aa, j_ab, j_ba, j_bb)] == [np.float32, np.float64] * 2
    assert_array_equal(j_aa, 2 * np.eye(2))
    assert_array_equal(j_ab, np.zeros((2, 2)))
    assert_array_equal(j_ba, np.zeros((2, 2)))
    assert_array_equal(j_bb, 3 * np.eye(2))


@pytest.mark.parametrize("verb, want", [("add", 1.5), ("multiply", 0.5), ("min", 0.5), ("max", 1.0),
                                        ("set", 0.5)])
def test_an_update_of_one_element_at_a_traced_index_under_jit(verb, want):
    """Found by the error catalogue: a 0-d value at a traced 0-d index of a 1-d array
    reached NumPy's ufunc.at as a 1-d array (np.ascontiguousarray makes 0-d 1-d),
    which refused it."""
    f = fgrad.jit(lambda x, i, v: getattr(fnp.at(x)[i], verb)(v))
    assert_array_equal(f(np.ones(3), 1, 0.5), [1.0, want, 1.0])
    # and its derivatives, against the same update at a constant index
    g = lambda x, v: fnp.sum(getattr(fnp.at(x)[1], verb)(v) * np.arange(1.0, 4.0))  # noqa: E731
    got = fgrad.jit(fgrad.grad(lambda x, i, v: fnp.sum(getattr(fnp.at(x)[i], verb)(v) * np.arange(1.0, 4.0)),
                               argnums=(0, 2)))(np.full(3, 0.7), 1, 0.5)
    want_grads = fgrad.grad(g, argnums=(0, 1))(np.full(3, 0.7), 0.5)
    for a, b in zip(got, want_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-15)
