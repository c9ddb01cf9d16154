"""matmul (and dot) with NumPy's 1-d promotion and batch broadcasting:
values equal NumPy's; derivatives checked to second order in both modes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

PRIMITIVES = {"matmul"}

BATCH_CASES = {
    "matmul": (fnp.matmul, [(2, 3), (3, 4)], "real"),
    "matmul_vec_mat": (fnp.matmul, [(3,), (3, 4)], "real"),
    "matmul_mat_vec": (fnp.matmul, [(2, 3), (3,)], "real"),
    "matmul_vec_vec": (fnp.matmul, [(3,), (3,)], "real"),
    "matmul_stacks": (fnp.matmul, [(5, 2, 3), (3, 2)], "real"),
    "matmul_stack_vec": (fnp.matmul, [(3,), (2, 3, 4)], "real"),
}


MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)),
    ((2, 2, 3), (3,)), ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES)
@given(seed=seeds)
def test_matmul(a_shape, b_shape, seed):
    a, b = values(a_shape, "real", seed), values(b_shape, "real", seed + 1)
    np.testing.assert_allclose(fnp.matmul(a, b), a @ b, rtol=1e-13)
    check_grads(fnp.matmul, (a, b), order=2)
    check_grads(lambda a, b: a @ b, (a, b), order=1)


@given(seed=seeds, n=st.integers(1, 4), k=st.integers(1, 4))
def test_dot(seed, n, k):
    a, b, v = values((n, k), "real", seed), values((k, n), "real", seed + 1), values((k,), "real", seed)
    for x, y in [(a, b), (a, v), (v, v), (2.0, a), (v, b)]:
        np.testing.assert_allclose(fnp.dot(x, y), np.dot(x, y), rtol=1e-13)
        check_grads(fnp.dot, (x, y), order=2)


def test_matmul_errors_like_numpy():
    with pytest.raises(ValueError, match="mismatch"):  # NumPy's own error, computing the primal
        fgrad.grad(lambda a: fnp.sum(a @ np.ones((3, 2))))(np.ones((2, 2)))
    message = r"mismatch in the contracted dimension: shapes \(2, 2\) and \(3, 2\)"
    with pytest.raises(ValueError, match=message):
        fgrad.make_jaxpr(lambda a: a @ np.ones((3, 2)))(np.ones((2, 2)))
    with pytest.raises(ValueError, match="0-d"):
        fgrad.make_jaxpr(fnp.matmul)(1.0, np.ones(2))


@given(shape=st.sampled_from([(3,), (2, 3), (2, 2, 3)]), seed=seeds)
def test_norm(shape, seed):
    x = values(shape, "nonzero", seed)
    for kwargs in [{}, {"axis": -1}, {"axis": -1, "keepdims": True}, {"ord": 1, "axis": -1},
                   {"ord": np.inf, "axis": -1}]:
        np.testing.assert_allclose(fnp.linalg.norm(x, **kwargs), np.linalg.norm(x, **kwargs))
        check_grads(lambda x, kw=kwargs: fnp.linalg.norm(x, **kw), (x,), order=2)
