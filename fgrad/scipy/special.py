"""fgrad.scipy.special: SciPy's special functions, differentiable and traceable,
without SciPy.

The elementwise functions (erf, gammaln, digamma, polygamma, expit, xlogy, ...)
are primitives of `fgrad.primitives.special`; logsumexp, softmax, log_softmax
and ndtr are written on `fgrad.numpy`, in one body that runs on NumPy itself
when no transform is active (and on fgrad.numpy under one). Names, signatures,
dtypes and values at special points follow SciPy; derivatives at special points
follow JAX, but for one choice of fgrad's: where x == 0 the derivative of xlogy
and xlog1py in y is 0 even at their pole (y == 0, resp. -1), where JAX's x / y
gives nan.

>>> import fgrad
>>> from fgrad.scipy.special import gammaln, logsumexp
>>> fgrad.grad(gammaln)(1.0)  # digamma(1) = -Euler's gamma = -0.57721566490153286...
np.float64(-0.577215664901533)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.avals import get_aval
from ..core.trace import EVAL_TRACE, Tracer, ctx
from ..numpy.operands import Array, ArrayLike, normalize_axes, operand, shape_of
from ..primitives import elementwise as ew
from ..primitives import special as sp

__all__ = [
    "erf", "erfc", "erfinv", "ndtr", "gammaln", "digamma", "psi", "polygamma", "expit", "logit",
    "xlogy", "xlog1py", "entr", "logsumexp", "softmax", "log_softmax",
]

Axis = int | Sequence[int] | None


# --- elementwise: one primitive each -----------------------------------------------------


def erf(z: ArrayLike) -> Array:
    """scipy.special.erf: the error function, 2/sqrt(pi) times the integral of exp(-t**2) from 0 to z.

    >>> erf(0.5)
    np.float64(0.5204998778130465)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.erf_p.impl(z)
    return sp.erf(operand(z))


def erfc(x: ArrayLike) -> Array:
    """scipy.special.erfc: 1 - erf(x), computed directly so that it keeps its
    precision where erf(x) is close to 1.

    >>> erfc(10.0)
    np.float64(2.088487583762545e-45)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.erfc_p.impl(x)
    return sp.erfc(operand(x))


def erfinv(y: ArrayLike) -> Array:
    """scipy.special.erfinv: the inverse of erf on (-1, 1); +-inf at +-1, nan outside.

    >>> erfinv(0.5204998778130465)
    np.float64(0.5)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.erf_inv_p.impl(y)
    return sp.erf_inv(operand(y))


def ndtr(x: ArrayLike) -> Array:
    """scipy.special.ndtr: the standard normal distribution function, erfc(-x/sqrt(2))/2.

    >>> ndtr(0.0)
    np.float64(0.5)
    """
    dtype = get_aval(x).dtype
    if dtype.kind in "biuf" and dtype != np.float32:
        x = fnp.asarray(x, dtype=np.float64)  # as SciPy: float32 only from float32, else float64 throughout
    return 0.5 * erfc(fnp.multiply(x, -1 / math.sqrt(2)))


def gammaln(x: ArrayLike) -> Array:
    """scipy.special.gammaln: log|Gamma(x)|; inf at 0 and the negative integers.
    Its derivative is digamma.

    >>> gammaln(5.0)  # log(4!)
    np.float64(3.1780538303479458)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.lgamma_p.impl(x)
    return sp.lgamma(operand(x))


def digamma(x: ArrayLike) -> Array:
    """scipy.special.digamma (psi): the derivative of gammaln; -inf at +0, nan at
    the negative integers. Its derivative is polygamma(1, x).

    >>> digamma(1.0)  # -Euler's gamma
    np.float64(-0.577215664901533)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.digamma_p.impl(x)
    return sp.digamma(operand(x))


psi = digamma


def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """scipy.special.polygamma: the n-th derivative of digamma (n = 0 is digamma
    itself). `n` is a non-negative integer, or an array of them broadcast with
    `x`; it takes no derivative, so it cannot be a traced value.

    >>> polygamma(1, 1.0)  # pi**2 / 6 = 1.64493406684822643...
    np.float64(1.6449340668482266)
    """
    orders = _polygamma_orders(n)
    if orders.ndim == 0:
        order = int(orders)
        if ctx.trace is EVAL_TRACE:
            return sp.polygamma_p.impl(x, n=order)
        return sp.polygamma(operand(x), n=order)
    out = None
    for order in np.unique(orders).tolist() or [0]:  # one primitive per order, selected elementwise
        value = polygamma(order, x)
        out = fnp.where(orders == order, value, value if out is None else out)
    return out


def _polygamma_orders(n: Any) -> np.ndarray:
    if isinstance(n, Tracer):
        raise TypeError(
            "polygamma: the order n must be a concrete integer, not a traced value (it has no "
            "derivative); pass it as a Python int or NumPy array"
        )
    orders = np.asarray(n)
    if orders.dtype.kind not in "biuf" or (
        orders.dtype.kind == "f" and not np.all(np.floor(orders) == orders)
    ):
        raise TypeError(f"polygamma: the order n must be an integer or an array of integers, got {n!r}")
    if np.any(orders < 0):
        raise ValueError(f"polygamma: the order n must be non-negative, got {n!r}")
    return orders.astype(np.int64)


def expit(x: ArrayLike) -> Array:
    """scipy.special.expit: the logistic sigmoid 1/(1 + exp(-x)), without overflow
    for large |x|.

    >>> expit(-1000.0), expit(0.0)
    (np.float64(0.0), np.float64(0.5))
    """
    if ctx.trace is EVAL_TRACE:
        return sp.logistic_p.impl(x)
    return sp.logistic(operand(x))


def logit(p: ArrayLike) -> Array:
    """scipy.special.logit: log(p / (1 - p)), the inverse of expit; -inf at 0,
    inf at 1, nan outside [0, 1].

    >>> logit(0.5)
    np.float64(0.0)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.logit_p.impl(p)
    return sp.logit(operand(p))


def xlogy(x: ArrayLike, y: ArrayLike) -> Array:
    """scipy.special.xlogy: x * log(y), and 0 where x == 0 (even where y == 0;
    nan where y is nan). Where x == 0 the derivative in y is 0 too, even at y == 0
    (fgrad's choice: JAX's x / y is 0 there except at y == 0, where it is nan).

    >>> xlogy(0.0, 0.0), xlogy(2.0, np.e)
    (np.float64(0.0), np.float64(2.0))
    """
    if ctx.trace is EVAL_TRACE:
        return sp.xlogy_p.impl(x, y)
    return sp.xlogy(operand(x), operand(y))


def xlog1py(x: ArrayLike, y: ArrayLike) -> Array:
    """scipy.special.xlog1py: x * log1p(y), and 0 where x == 0 (even where y == -1).
    Where x == 0 the derivative in y is 0 too, even at y == -1 (fgrad's choice, as
    for xlogy: JAX gives nan there).

    >>> xlog1py(0.0, -1.0)
    np.float64(0.0)
    """
    if ctx.trace is EVAL_TRACE:
        return sp.xlog1py_p.impl(x, y)
    return sp.xlog1py(operand(x), operand(y))


def entr(x: ArrayLike) -> Array:
    """scipy.special.entr: -x log(x) for x > 0, 0 at 0, -inf for x < 0.

    >>> entr(1.0), entr(0.0)
    (np.float64(-0.0), np.float64(0.0))
    """
    if ctx.trace is EVAL_TRACE:
        return sp.entr_p.impl(x)
    return sp.entr(operand(x))


# --- reductions: composites on fgrad.numpy ------------------------------------------------
# Each takes `xp`, the array namespace: NumPy itself with no transform active
# (the fast path), fgrad.numpy under one. The shift by the maximum, which keeps
# exp from overflowing, goes through stop_gradient: the result does not depend
# on it, so its derivative is exactly the softmax.


def _namespace() -> tuple[ModuleType, Callable[[Any], Any]]:
    if ctx.trace is EVAL_TRACE:
        return np, lambda x: x
    return fnp, ew.stop_gradient


def _finite_max(xp: ModuleType, a: Any, axis: Axis) -> Any:
    """The maximum over `axis` (kept as size 1), taken as 0 where it is not finite
    (all -inf, or an inf or nan present) or where the axis is empty."""
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    if any(shape[i] == 0 for i in axes):
        return xp.zeros(tuple(1 if i in axes else n for i, n in enumerate(shape)))
    a_max = xp.max(a, axis=axis, keepdims=True)
    return xp.where(xp.less(xp.abs(a_max), np.inf), a_max, 0.0)


def logsumexp(
    a: ArrayLike, axis: Axis = None, b: ArrayLike | None = None, keepdims: bool = False,
    return_sign: bool = False,
) -> Array | tuple[Array, Array]:
    """scipy.special.logsumexp: log(sum(b * exp(a))) over `axis` (all axes by
    default), without overflow or underflow for large |a|. `b` (weights,
    broadcast with `a`) may be negative; with `return_sign` the result is
    log|sum| and the sign of the sum, else a negative sum gives nan. Entries
    where b == 0 are left out (and have no derivative, in a or in b). The
    gradient in `a` is the softmax (weighted by b).

    >>> logsumexp([1000.0, 1000.0])
    np.float64(1000.6931471805599)
    """
    xp, stop_gradient = _namespace()
    a = xp.asarray(a)
    if b is not None:
        b = xp.asarray(b)
        a = xp.where(xp.not_equal(b, 0), a, -np.inf)  # also broadcasts a with b
    shift = stop_gradient(_finite_max(xp, a, axis))
    terms = xp.exp(xp.subtract(a, shift))
    if b is not None:
        terms = xp.multiply(b, terms)
    with np.errstate(divide="ignore"):
        total = xp.sum(terms, axis=axis, keepdims=keepdims)
        sign = None
        if return_sign:
            sign = xp.sign(total)
            total = xp.abs(total)
        out = xp.log(total)
    if not keepdims:
        shift = xp.reshape(shift, shape_of(out))
    out = xp.add(out, shift)
    return (out, sign) if return_sign else out


def softmax(x: ArrayLike, axis: Axis = None) -> Array:
    """scipy.special.softmax: exp(x) / sum(exp(x)) over `axis` (all axes by
    default), computed with x shifted by its maximum so that exp cannot overflow.

    >>> softmax([1000.0, 1000.0])
    array([0.5, 0.5])
    """
    xp, stop_gradient = _namespace()
    x = xp.asarray(x)
    shift = stop_gradient(xp.max(x, axis=axis, keepdims=True))
    e = xp.exp(xp.subtract(x, shift))
    return xp.divide(e, xp.sum(e, axis=axis, keepdims=True))


def log_softmax(x: ArrayLike, axis: Axis = None) -> Array:
    """scipy.special.log_softmax: x - logsumexp(x) over `axis` (all axes by
    default), accurate where softmax underflows.

    >>> log_softmax([0.0, -1000.0])
    array([    0., -1000.])
    """
    xp, stop_gradient = _namespace()
    x = xp.asarray(x)
    shifted = xp.subtract(x, stop_gradient(_finite_max(xp, x, axis)))
    with np.errstate(divide="ignore"):
        log_total = xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))
    return xp.subtract(shifted, log_total)
