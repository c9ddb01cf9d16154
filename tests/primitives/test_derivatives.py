"""The shared derivative helpers (fgrad/primitives/derivatives.py).

`fit_to` broadcasts a tangent to the shape of the output. It only has work to
do when the differentiated operand is smaller than the output, that is when a
larger operand is a constant: the binary tests of test_elementwise.py
differentiate every operand, so they never reach it.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

# Divisors and dividends away from 0, and x / c and c / x away from integers,
# so that `%` is smooth where it is checked.
X = 2.3
CONSTANTS = {
    "0-d": np.float64(0.7),
    "(3,)": np.array([0.7, -1.3, 1.9]),
    "(3,4)": np.linspace(0.6, 1.9, 12).reshape(3, 4) * np.array([1.0, -1.0, 1.0, -1.0]),
}

OPERATIONS = {
    "x + c": lambda x, c: x + c,
    "c + x": lambda x, c: c + x,
    "x - c": lambda x, c: x - c,
    "c - x": lambda x, c: c - x,
    "x * c": lambda x, c: x * c,
    "x / c": lambda x, c: x / c,
    "c / x": lambda x, c: c / x,
    "x % c": lambda x, c: x % c,
    "c % x": lambda x, c: c % x,
    "where(x > 0, x * x, c)": lambda x, c: fnp.where(x > 0, x * x, c),
    "where(c > 0, x, c)": lambda x, c: fnp.where(c > 0, x, c),
}


@pytest.mark.parametrize("c", CONSTANTS.values(), ids=CONSTANTS)
@pytest.mark.parametrize("op", OPERATIONS.values(), ids=OPERATIONS)
@pytest.mark.parametrize("x", [np.float64(X), np.array([X])], ids=["0-d x", "(1,) x"])
def test_a_constant_operand_larger_than_the_differentiated_one(op, c, x):
    def f(x):
        return op(x, c)

    for q in (X / c, c / X):
        assert np.min(np.abs(q - np.round(q))) > 0.05  # % is smooth here
    check_grads(f, (x,), order=2)
    np.testing.assert_allclose(fgrad.jacfwd(f)(x), fgrad.jacrev(f)(x), rtol=1e-12)
    np.testing.assert_allclose(
        fgrad.jacfwd(fgrad.jacfwd(f))(x), fgrad.jacrev(fgrad.jacrev(f))(x), rtol=1e-12, atol=1e-12
    )


def test_second_derivative_through_where_with_a_larger_constant_branch():
    # x * x broadcast against the (3,) branch: three copies of x**2.
    y = np.array([1.0, 2.0, 3.0])

    def f(x):
        return fnp.sum(fnp.where(x > 0, x * x, y))

    assert fgrad.grad(fgrad.grad(f))(2.0) == 6.0
    assert fgrad.grad(fgrad.grad(f))(-2.0) == 0.0
    check_grads(f, (2.0,), order=2)


def test_jvp_of_a_scalar_plus_a_constant_matrix():
    tangent = fgrad.jvp(lambda x: x + np.ones((3, 4)), (2.0,), (1.0,))[1]
    np.testing.assert_array_equal(tangent, np.ones((3, 4)))
