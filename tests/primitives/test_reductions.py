"""sum, mean, max, min over axes (keepdims, negative axes, all axes):
values equal NumPy's; derivatives checked to second order in both modes."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.strategies import seeds, shapes, values

PRIMITIVES = {"reduce_sum", "reduce_max", "reduce_min"}

BATCH_CASES = {
    "reduce_sum": (lambda x: fnp.sum(x, axis=(0, 2)), [(2, 3, 4)], "real"),
    "reduce_sum_all": (fnp.sum, [(2, 3)], "real"),
    "reduce_max": (lambda x: fnp.max(x, axis=-1, keepdims=True), [(2, 3)], "real"),
    "reduce_min": (lambda x: fnp.min(x), [(2, 3)], "real"),
}



def axes_for(ndim):
    return st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1) if ndim else st.none(),
        st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim).map(tuple),
    )


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
@given(shape=shapes, seed=seeds, data=st.data(), keepdims=st.booleans())
def test_reductions(name, shape, seed, data, keepdims):
    x = values(shape, "real", seed)
    axis = data.draw(axes_for(x.ndim))
    f, ref = getattr(fnp, name), getattr(np, name)
    out = f(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(out, ref(x, axis=axis, keepdims=keepdims), rtol=1e-13)
    if name in ("max", "min"):  # away from ties
        s = np.sort(x.ravel())
        assume(s.size < 2 or np.min(np.diff(s)) > 1e-3)
    check_grads(lambda x: f(x * x + x, axis=axis, keepdims=keepdims), (x,), order=2)
    method = getattr(fgrad.numpy.asarray(x), name)  # NumPy's method on arrays...
    np.testing.assert_allclose(method(axis=axis, keepdims=keepdims), out)
    g = fgrad.grad(lambda x: fnp.sum(getattr(x, name)(axis=axis, keepdims=keepdims)))(x)
    assert g.shape == x.shape  # ...and fgrad's on tracers


def test_mean_of_integers_is_float_like_numpy():
    assert fgrad.make_jaxpr(fnp.mean)(np.arange(4)).out_avals[0].dtype == np.float64
    assert fnp.mean(np.arange(4)) == 1.5


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
