"""Checks shared by the tests of fgrad.numpy functions: compare fgrad's own
implementation (traced, then evaluated) with NumPy, and the derivatives with
finite differences."""

from __future__ import annotations

import numpy as np

import fgrad
from fgrad.ir import eval_jaxpr
from fgrad.test_util import check_grads


def _run_staged(f, args):
    closed = fgrad.make_jaxpr(f)(*args)
    return eval_jaxpr(closed.jaxpr, closed.consts, *args), closed.out_avals


def staged(f, *args):
    """`f(*args)` computed by fgrad's own implementation (traced to a jaxpr, then
    evaluated), not by NumPy, which fgrad.numpy calls when no transform is active."""
    outs, _ = _run_staged(f, args)
    return outs if isinstance(f(*args), (list, tuple)) else outs[0]


def staged_with_aval(f, *args):
    """`staged` for a function of one output, with the abstract value make_jaxpr
    recorded for it, checked to be the value's shape and dtype."""
    (out,), (aval,) = _run_staged(f, args)
    assert np.shape(out) == aval.shape and np.asarray(out).dtype == aval.dtype, (out, aval)
    return out, aval


def assert_same_values(got, expected):
    """Equal, up to the rounding of arithmetic done in a different order (NumPy's scalar
    and array paths differ, e.g. x ** 2 for a NumPy scalar and a 0-d array)."""
    if np.asarray(expected).dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)
    else:
        np.testing.assert_array_equal(got, expected)


def check_like_numpy(f, *args, order=2):
    """fgrad's values and dtypes are NumPy's, the derivatives match finite differences to
    `order`, and the arguments are left unchanged."""
    before = [np.copy(a) for a in args]
    expected = f(*args)  # no transform active: NumPy itself
    got = staged(f, *args)
    pairs = zip(got, expected, strict=True) if isinstance(expected, (list, tuple)) else [(got, expected)]
    for g, e in pairs:
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == np.asarray(e).dtype
        assert_same_values(g, e)
    if order:
        check_grads(f, args, order=order)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
