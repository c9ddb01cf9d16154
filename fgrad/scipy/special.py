"""fgrad.scipy.special: SciPy's special functions, differentiable and traceable.

The older functions need no SciPy: erf, erfc and erfinv of real numbers,
gammaln, digamma, polygamma, expit, logit, xlogy, xlog1py and entr are
primitives of `fgrad.primitives.special`, computed by fgrad itself; logsumexp,
softmax, log_softmax and ndtr are written on `fgrad.numpy`, in one body that
runs on NumPy itself when no transform is active (and on fgrad.numpy under
one); multigammaln is written on gammaln. The others (gamma, rgamma, gammasgn,
beta, betaln, betainc, gammainc, gammaincc, erfcinv, ndtri, log_ndtr, i0, i0e,
i1, i1e, j0, j1, y0, y1, zeta, rel_entr, kl_div, and erf and erfc of complex
numbers) are primitives of `fgrad.primitives.scipy_special` whose values come
from SciPy, an optional extra (`pip install fgrad[scipy]`): without it they
raise ImportError. Their derivatives are fgrad's own, to every order; those of
gammainc and gammaincc in a (JAX's igamma_grad_a) and of betainc in a and b
are computed by fgrad itself, once.

Names, signatures, dtypes and values at special points follow SciPy;
derivatives at special points follow JAX, but for one choice of fgrad's: where
x == 0 the derivative of xlogy and xlog1py in y is 0 even at their pole (y ==
0, resp. -1), where JAX's x / y gives nan. A derivative fgrad has no rule for
(betainc twice in a or b, gammainc and gammaincc twice in a, zeta in x)
raises NotImplementedError when it is asked for.

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
from ..core.trace import EVAL_TRACE, Primitive, Tracer, ctx
from ..numpy.operands import Array, ArrayLike, concrete_value, normalize_axes, operand, shape_of
from ..primitives import elementwise as ew
from ..primitives import scipy_special as ssp
from ..primitives import special as sp

__all__ = [
    "erf", "erfc", "erfinv", "ndtr", "gammaln", "digamma", "psi", "polygamma", "expit", "logit",
    "xlogy", "xlog1py", "entr", "logsumexp", "softmax", "log_softmax",
    "gamma", "rgamma", "gammasgn", "beta", "betaln", "betainc", "gammainc", "gammaincc", "multigammaln",
    "erfcinv", "ndtri", "log_ndtr", "i0", "i0e", "i1", "i1e", "j0", "j1", "y0", "y1", "zeta", "rel_entr",
    "kl_div",
]

Axis = int | Sequence[int] | None


# --- elementwise: one primitive each -----------------------------------------------------


def _is_complex(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return bool((get_aval(x).dtype if dtype is None else dtype).kind == "c")


def _apply(prim: Primitive, *args: ArrayLike) -> Array:
    """`prim` on `args`: its implementation (SciPy's function) directly when no transform is active."""
    if ctx.trace is EVAL_TRACE:
        return prim.impl(*args)
    return prim.bind(*(operand(x) for x in args))


def erf(z: ArrayLike) -> Array:
    """scipy.special.erf: the error function, 2/sqrt(pi) times the integral of exp(-t**2) from 0 to z.
    Complex z takes SciPy's values (SciPy is then needed); the derivative is
    holomorphic, 2/sqrt(pi) exp(-z**2).

    >>> erf(0.5)
    np.float64(0.5204998778130465)
    """
    if _is_complex(z):
        return _apply(ssp.erf_complex_p, z)
    if ctx.trace is EVAL_TRACE:
        return sp.erf_p.impl(z)
    return sp.erf(operand(z))


def erfc(x: ArrayLike) -> Array:
    """scipy.special.erfc: 1 - erf(x), computed directly so that it keeps its
    precision where erf(x) is close to 1. Complex x as for erf.

    >>> erfc(10.0)
    np.float64(2.088487583762545e-45)
    """
    if _is_complex(x):
        return _apply(ssp.erfc_complex_p, x)
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


# --- SciPy's values, fgrad's derivatives: primitives of fgrad.primitives.scipy_special -------


def gamma(x: ArrayLike) -> Array:
    """scipy.special.gamma: the gamma function, (x-1)! at the positive integers;
    inf at 0, nan at the negative integers. Its derivative is gamma(x) digamma(x).

    >>> gamma(5.0)
    np.float64(24.0)
    """
    return _apply(ssp.gamma_p, x)


def rgamma(x: ArrayLike) -> Array:
    """scipy.special.rgamma: 1/gamma(x), an entire function: 0 at 0 and the
    negative integers, where its derivatives are finite too.

    >>> import fgrad
    >>> rgamma(0.0), fgrad.grad(rgamma)(0.0)
    (np.float64(0.0), np.float64(1.0))
    """
    return _apply(ssp.rgamma_p, x)


def gammasgn(x: ArrayLike) -> Array:
    """scipy.special.gammasgn: the sign of gamma(x) (1 at +0, -1 at -0, nan at
    the negative integers). Piecewise constant: its derivative is 0.

    >>> gammasgn(-0.5), gammasgn(-1.5)
    (np.float64(-1.0), np.float64(1.0))
    """
    return _apply(ssp.gammasgn_p, x)


def beta(a: ArrayLike, b: ArrayLike) -> Array:
    """scipy.special.beta: B(a, b) = gamma(a) gamma(b) / gamma(a + b).

    >>> beta(2.0, 3.0)  # 1/12
    np.float64(0.08333333333333333)
    """
    return _apply(ssp.beta_p, a, b)


def betaln(a: ArrayLike, b: ArrayLike) -> Array:
    """scipy.special.betaln: log|B(a, b)|, without overflow for large a and b.
    Its derivative in a is digamma(a) - digamma(a + b).

    >>> betaln(1000.0, 1000.0)
    np.float64(-1388.482601635902)
    """
    return _apply(ssp.betaln_p, a, b)


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """scipy.special.betainc: the regularized incomplete beta function
    I_x(a, b), for a, b > 0 and 0 <= x <= 1. Differentiable in x to every
    order (the beta density, x**(a-1) (1-x)**(b-1) / B(a, b)), and once in a
    and b (fgrad's own series and continued fraction, to about 1e-14 relative;
    0 at x = 0 and 1), also mixed with x; a second derivative in a or b raises
    NotImplementedError.

    >>> import fgrad
    >>> betainc(2.0, 1.0, 0.5), fgrad.grad(betainc, argnums=2)(2.0, 1.0, 0.5)  # x**2, 2x
    (np.float64(0.25), np.float64(1.0))
    >>> round(float(fgrad.grad(betainc, argnums=1)(1.0, 3.0, 0.5)), 12)  # 1 - (1-x)**b: log(2) / 8
    0.08664339757
    """
    return _apply(ssp.betainc_p, a, b, x)


def gammainc(a: ArrayLike, x: ArrayLike) -> Array:
    """scipy.special.gammainc: the regularized lower incomplete gamma function
    P(a, x), for a > 0 and x >= 0. Differentiable in x (the gamma density,
    x**(a-1) exp(-x) / gamma(a)) to every order, and once in a (by a series or a
    continued fraction of fgrad's, as JAX's igamma_grad_a); its second
    derivative in a raises NotImplementedError.

    >>> gammainc(1.0, 2.0)  # 1 - exp(-2)
    np.float64(0.8646647167633873)
    """
    return _apply(ssp.gammainc_p, a, x)


def gammaincc(a: ArrayLike, x: ArrayLike) -> Array:
    """scipy.special.gammaincc: the regularized upper incomplete gamma function
    Q(a, x) = 1 - P(a, x), accurate where P is close to 1. Differentiable as
    gammainc is (once in a).

    >>> gammaincc(1.0, 2.0)  # exp(-2)
    np.float64(0.1353352832366127)
    """
    return _apply(ssp.gammaincc_p, a, x)


def multigammaln(a: ArrayLike, d: int) -> Array:
    """scipy.special.multigammaln: the log of the multivariate gamma function of
    dimension `d`, d(d-1)/4 log(pi) + sum_j gammaln(a - j/2), j = 0..d-1, for
    a > (d-1)/2 (a ValueError otherwise, where `a` is known). `d` is a concrete
    positive integer. Written on gammaln, so it needs no SciPy; float64 always.

    >>> multigammaln(3.0, 2)
    np.float64(1.5501949939575645)
    """
    d = _multigammaln_dimension(d)
    dtype = get_aval(a).dtype
    if dtype.kind not in "biuf":
        raise TypeError(f"multigammaln takes real numbers, got an input of dtype {dtype}")
    known = concrete_value(a, None)
    if known is not None and np.any(np.asarray(known) <= 0.5 * (d - 1)):
        raise ValueError(
            f"multigammaln: the condition a > (d-1)/2 = {0.5 * (d - 1)} is not met by a = {known}"
        )
    a = fnp.asarray(a, dtype=np.float64)
    out = gammaln(a)
    for j in range(1, d):
        out = out + gammaln(a - 0.5 * j)
    return out + d * (d - 1) / 4 * math.log(math.pi)


def _multigammaln_dimension(d: Any) -> int:
    if isinstance(d, Tracer):
        raise TypeError(
            "multigammaln: the dimension d must be a concrete integer, not a traced value (it fixes the "
            "number of terms); pass it as a Python int"
        )
    value = np.asarray(d)
    if value.ndim != 0 or value.dtype.kind not in "biuf" or np.floor(value) != value or value < 1:
        raise ValueError(f"multigammaln: the dimension d must be a positive integer, got {d!r}")
    return int(value)


def erfcinv(y: ArrayLike) -> Array:
    """scipy.special.erfcinv: the inverse of erfc on (0, 2); inf at 0, -inf at 2,
    nan outside.

    >>> erfcinv(0.5), erfcinv(0.0)
    (np.float64(0.4769362762044699), np.float64(inf))
    """
    return _apply(ssp.erfcinv_p, y)


def ndtri(y: ArrayLike) -> Array:
    """scipy.special.ndtri: the inverse of ndtr, the standard normal quantile
    function on (0, 1); -inf at 0, inf at 1, nan outside.

    >>> ndtri(0.975)
    np.float64(1.959963984540054)
    """
    return _apply(ssp.ndtri_p, y)


def log_ndtr(x: ArrayLike) -> Array:
    """scipy.special.log_ndtr: log(ndtr(x)), accurate for very negative x (and
    near 0 for large x). Its derivative pdf(x)/ndtr(x) is computed in logs, so
    it stays finite where both underflow.

    >>> log_ndtr(-40.0)
    np.float64(-804.6084420137539)
    """
    return _apply(ssp.log_ndtr_p, x)


def i0(x: ArrayLike) -> Array:
    """scipy.special.i0: the modified Bessel function of the first kind of order 0.
    Its derivative is i1.

    >>> i0(0.0)
    np.float64(1.0)
    """
    return _apply(ssp.i0_p, x)


def i0e(x: ArrayLike) -> Array:
    """scipy.special.i0e: exp(-|x|) i0(x), without overflow for large |x|.

    >>> i0e(0.0)
    np.float64(1.0)
    """
    return _apply(ssp.i0e_p, x)


def i1(x: ArrayLike) -> Array:
    """scipy.special.i1: the modified Bessel function of the first kind of order 1.
    Its derivative is i0(x) - i1(x)/x, 1/2 at 0.

    >>> import fgrad
    >>> i1(0.0), fgrad.grad(i1)(0.0)
    (np.float64(0.0), np.float64(0.5))
    """
    return _apply(ssp.i1_p, x)


def i1e(x: ArrayLike) -> Array:
    """scipy.special.i1e: exp(-|x|) i1(x), without overflow for large |x|.

    >>> i1e(0.0)
    np.float64(0.0)
    """
    return _apply(ssp.i1e_p, x)


def j0(x: ArrayLike) -> Array:
    """scipy.special.j0: the Bessel function of the first kind of order 0. Its
    derivative is -j1.

    >>> j0(0.0)
    np.float64(1.0)
    """
    return _apply(ssp.j0_p, x)


def j1(x: ArrayLike) -> Array:
    """scipy.special.j1: the Bessel function of the first kind of order 1. Its
    derivative is j0(x) - j1(x)/x, 1/2 at 0.

    >>> import fgrad
    >>> j1(0.0), fgrad.grad(j1)(0.0)
    (np.float64(0.0), np.float64(0.5))
    """
    return _apply(ssp.j1_p, x)


def y0(x: ArrayLike) -> Array:
    """scipy.special.y0: the Bessel function of the second kind of order 0, for
    x > 0 (-inf at 0, nan below). Its derivative is -y1.

    >>> y0(1.0)
    np.float64(0.08825696421567697)
    """
    return _apply(ssp.y0_p, x)


def y1(x: ArrayLike) -> Array:
    """scipy.special.y1: the Bessel function of the second kind of order 1, for
    x > 0. Its derivative is y0(x) - y1(x)/x.

    >>> y1(1.0)
    np.float64(-0.7812128213002888)
    """
    return _apply(ssp.y1_p, x)


def zeta(x: ArrayLike, q: ArrayLike | None = None) -> Array:
    """scipy.special.zeta: the Hurwitz zeta function sum_k (k + q)**-x, or with
    q None, Riemann's (also for x < 1, by analytic continuation). Its
    derivative in q is -x zeta(x + 1, q); its derivative in x raises
    NotImplementedError.

    >>> zeta(2.0)  # pi**2 / 6
    np.float64(1.6449340668482264)
    """
    if q is None:
        return _apply(ssp.riemann_zeta_p, x)
    return _apply(ssp.zeta_p, x, q)


def rel_entr(x: ArrayLike, y: ArrayLike) -> Array:
    """scipy.special.rel_entr: x log(x/y) for x, y > 0; 0 where x == 0 and y >= 0;
    inf elsewhere. Outside x, y > 0 its derivative is 0 (as JAX's).

    >>> rel_entr(1.0, 0.5), rel_entr(0.0, 0.0)
    (np.float64(0.6931471805599453), np.float64(0.0))
    """
    return _apply(ssp.rel_entr_p, x, y)


def kl_div(x: ArrayLike, y: ArrayLike) -> Array:
    """scipy.special.kl_div: x log(x/y) - x + y for x, y > 0; y where x == 0 and
    y >= 0 (with the derivative 1 in y there); inf elsewhere.

    >>> kl_div(1.0, 0.5), kl_div(0.0, 2.0)
    (np.float64(0.1931471805599453), np.float64(2.0))
    """
    return _apply(ssp.kl_div_p, x, y)


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
    return_sign: bool = False, where: ArrayLike | None = None,
) -> Array | tuple[Array, Array]:
    """scipy.special.logsumexp: log(sum(b * exp(a))) over `axis` (all axes by
    default), without overflow or underflow for large |a|. `b` (weights,
    broadcast with `a`) may be negative; with `return_sign` the result is
    log|sum| and the sign of the sum, else a negative sum gives nan. Entries
    where b == 0, or (JAX's `where`, broadcast with `a`) where `where` is
    False, are left out (and have no derivative, in a or in b); with none
    left the result is -inf. The gradient in `a` is the softmax (weighted by b).

    >>> logsumexp([1000.0, 1000.0])
    np.float64(1000.6931471805599)
    """
    xp, stop_gradient = _namespace()
    a = xp.asarray(a)
    if where is not None:
        a = xp.where(where, a, -np.inf)  # also broadcasts a with where
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
