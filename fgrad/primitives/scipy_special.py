"""Special functions whose values come from SciPy (an optional extra), as
elementwise primitives: gamma, rgamma, gammasgn, beta, betaln, betainc,
gammainc, gammaincc, erfcinv, ndtri, log_ndtr, the Bessel functions i0, i0e,
i1, i1e, j0, j1, y0, y1 (and x**-n times J_n, I_n: their derivatives need it),
zeta (Hurwitz and Riemann), rel_entr, kl_div, and erf and erfc of complex
numbers.

Each implementation calls the scipy.special function of the same name, looked
up at run time (never at import time: `import fgrad` does not import SciPy; a
call without SciPy raises ImportError naming the extra). Result dtypes are
therefore SciPy's, and the abstract value of each is found by calling SciPy on
empty arrays of the input dtypes (and Python scalars for weakly typed inputs,
which SciPy types by its own rules). Complex inputs are refused, except by
erf_complex and erfc_complex.

The derivatives are fgrad's, factors written with fgrad's primitives, so every
order is available: gamma' = gamma digamma, rgamma' = -rgamma digamma (at the
zeros of rgamma, the derivative of its reflection formula), beta and betaln
through digamma, betainc, gammainc and gammaincc in x in closed form (the
densities), erfcinv' = -sqrt(pi)/2 exp(erfcinv**2), ndtri' = sqrt(2 pi)
exp(ndtri**2 / 2), log_ndtr' = exp(log_pdf - log_ndtr) (below -20, the series
of Mills' ratio), i0' = i1, j0' = -j1, y0' = -y1, i1' = i0 - i1/x, j1' = j0 -
j1/x, y1' = y0 - y1/x, where i1/x and j1/x are `bessel_over_power`, x**-n I_n(x)
(or J_n), finite at 0, with the derivative x times the next order's.
gammainc and gammaincc in a have `gammainc_grad_a` (JAX's igamma_grad_a), and
betainc in a and b `betainc_grad_ab`, both computed by fgrad (a series or a
continued fraction differentiated term by term), themselves differentiable in
x but not in the shape parameters. A derivative fgrad has no rule for (betainc
and gammainc twice in their shape parameters, zeta in x) raises
NotImplementedError naming the function and the argument as soon as it is
asked for: never a silent zero. The NumPy-level functions are in
fgrad.scipy.special; this module knows nothing of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.optional import require
from ..core.trace import Primitive
from . import elementwise as ew
from . import special as sp

__all__ = [
    "gamma", "rgamma", "gammasgn", "beta", "betaln", "betainc", "gammainc", "gammaincc", "gammainc_grad_a",
    "betainc_grad_ab",
    "erfcinv", "ndtri", "log_ndtr", "i0", "i0e", "i1", "i1e", "j0", "j1", "y0", "y1", "bessel_over_power",
    "zeta", "riemann_zeta", "rel_entr", "kl_div", "erf_complex", "erfc_complex",
]

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_F32 = np.dtype(np.float32)


def _scipy_function(name: str) -> Callable[..., Any]:
    """scipy.special.`name`, or the ImportError naming the `scipy` extra."""
    return getattr(require("scipy.special", "scipy", f"fgrad.scipy.special.{name}"), name)


def _dtype(x: Any) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    return np.asarray(x).dtype if dtype is None else dtype


def _check_inputs(name: str, args: tuple[Any, ...], complex_input: bool) -> None:
    for x in args:
        kind = _dtype(x).kind
        if complex_input and kind != "c":
            raise TypeError(f"{name}_complex takes complex numbers, got dtype {_dtype(x)}")
        if not complex_input and kind not in "biuf":
            raise TypeError(
                f"fgrad.scipy.special.{name} is not supported for inputs of dtype {_dtype(x)} (it takes "
                "real numbers: bool, integer or float)"
            )


def _scipy_impl(name: str, complex_input: bool = False) -> Callable[..., Any]:
    """The implementation of a primitive: scipy.special.`name` on the inputs as
    given (so that Python scalars are typed as SciPy types them)."""

    def impl(*args: Any) -> Any:
        _check_inputs(name, args, complex_input)
        fn = _scipy_function(name)
        with np.errstate(all="ignore"):
            return fn(*args)

    impl.__name__ = name
    return impl


def _scipy_primitive(name: str, *factors: ew.Factor, xp: Callable[..., Any] | None = None) -> Primitive:
    """An elementwise primitive computed by scipy.special.`name`, with the
    derivative factors given; on other namespaces by `xp` (in float64), else
    block by block where the library computes so (Dask)."""
    return ew.elementwise(name, _scipy_impl(name), *factors, xp=xp, cast="float64")


def _no_derivative(
    function: str, argument: str, why: str, derivative: str = "derivative"
) -> Callable[..., Any]:
    """A factor that refuses: fgrad has no rule for the `derivative` of `function`
    in `argument` (a zero would be a silent wrong derivative)."""

    def factor(ans: Any, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(
            f"fgrad.scipy.special.{function}: the {derivative} with respect to `{argument}` is not "
            f"implemented ({why}). Differentiate with respect to the other arguments only, or pass "
            f"`{argument}` through fgrad.stop_gradient if its derivative is not needed."
        )

    return factor


# --- the gamma and beta families ----------------------------------------------------------


def _rgamma_factor(ans: Any, x: Any) -> Any:
    # -rgamma(x) digamma(x), which is 0 * nan at the poles x = 0, -1, -2, ...; there
    # the derivative of the reflection rgamma(x) = sin(pi x) gamma(1 - x) / pi,
    # exact everywhere, so that every order is right at the poles too.
    pole = ew.logical_and(ew.le(x, 0), ew.eq(ew.floor(x), x))
    safe = ew.where(pole, x, 0.5)
    g = gamma(ew.sub(1.0, safe))
    pi_x = ew.mul(math.pi, safe)
    psi = sp.digamma(ew.sub(1.0, safe))
    reflected = ew.sub(ew.mul(ew.cos(pi_x), g), ew.mul(ew.mul(ew.sin(pi_x), g), ew.div(psi, math.pi)))
    return ew.where(pole, reflected, ew.neg(ew.mul(ans, sp.digamma(ew.where(pole, 0.5, x)))))


def _digamma_difference(a: Any, b: Any) -> Any:
    """d/da log|B(a, b)| = digamma(a) - digamma(a + b)."""
    return ew.sub(sp.digamma(a), sp.digamma(ew.add(a, b)))


def _gammainc_factor(ans: Any, a: Any, x: Any) -> Any:
    # x**(a-1) exp(-x) / Gamma(a), in logs (xlogy: 1 at x == 0 when a == 1).
    return ew.exp(ew.sub(ew.sub(sp.xlogy(ew.sub(a, 1.0), x), x), sp.lgamma(a)))


def _betainc_factor(ans: Any, a: Any, b: Any, x: Any) -> Any:
    # x**(a-1) (1-x)**(b-1) / B(a, b), in logs.
    log_density = ew.add(sp.xlogy(ew.sub(a, 1.0), x), sp.xlog1py(ew.sub(b, 1.0), ew.neg(x)))
    return ew.exp(ew.sub(log_density, betaln(a, b)))


gamma_p = _scipy_primitive("gamma", lambda ans, x: ew.mul(ans, sp.digamma(x)))
rgamma_p = _scipy_primitive("rgamma", _rgamma_factor)
gammasgn_p = _scipy_primitive("gammasgn")  # piecewise constant: no derivative
beta_p = _scipy_primitive(
    "beta",
    lambda ans, a, b: ew.mul(ans, _digamma_difference(a, b)),
    lambda ans, a, b: ew.mul(ans, _digamma_difference(b, a)),
)
betaln_p = _scipy_primitive(
    "betaln", lambda ans, a, b: _digamma_difference(a, b), lambda ans, a, b: _digamma_difference(b, a)
)
betainc_p = _scipy_primitive(
    "betainc", lambda ans, a, b, x: betainc_grad_ab(a, b, x, wrt="a"),
    lambda ans, a, b, x: betainc_grad_ab(a, b, x, wrt="b"), _betainc_factor,
)
gammainc_p = _scipy_primitive("gammainc", lambda ans, a, x: gammainc_grad_a(a, x), _gammainc_factor)
gammaincc_p = _scipy_primitive(
    "gammaincc", lambda ans, a, x: ew.neg(gammainc_grad_a(a, x)),
    lambda ans, a, x: ew.neg(_gammainc_factor(ans, a, x)),
)


# --- gammainc_grad_a: d/da gammainc(a, x), fgrad's own (JAX's igamma_grad_a) ---------------
# For x < a + 1 the series P = sum_n t_n, t_n = x**(a+n) exp(-x) / gamma(a+n+1),
# differentiated termwise: sum_n t_n (log x - digamma(a+n+1)), terms decreasing
# from n = 0. Beyond, Q = exp(-x) x**a / gamma(a) h, h Legendre's continued
# fraction (modified Lentz), carried with its derivative in a (forward mode on
# the recurrence); then dP/da = -dQ/da, accurate also where P rounds to 1.
# Relative error, against mpmath, about 1e-16 times the size of the exponent
# a log x - x - lgamma(a) (its rounding): 1e-14 for a, x up to 100, 5e-13 at 1000.
# 0 at x == 0 and x == inf; nan outside a > 0, x >= 0.
# Its derivative in x is that of the gamma density in a; in a it has none.

_TINY = 1e-300
_MAX_TERMS = 100_000
_SERIES_X, _SERIES_BX = 0.5, 2.0  # betainc_grad_ab's power series: where x <= 0.5 and b x <= 2


def _gammainc_grad_a_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    log_x = np.log(x)
    term = np.exp(a * log_x - x - sp.lgamma_p.impl(a + 1))
    psi = sp.digamma_p.impl(a + 1)
    total = term * (log_x - psi)
    active = np.ones(x.shape, bool)  # each element stops at its own convergence, whatever its batch
    for n in range(1, _MAX_TERMS):
        term = term * x / (a + n)
        psi = psi + 1 / (a + n)
        step = term * (log_x - psi)
        total = np.where(active, total + step, total)
        active &= np.abs(step) > 1e-17 * np.abs(total)
        if not active.any():
            break
    return total


def _gammainc_grad_a_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    log_x = np.log(x)
    b = x + 1 - a  # d b/da = -1 at every step
    c, dc = np.full_like(x, 1 / _TINY), np.zeros_like(x)
    d = 1 / b
    dd = d * d
    h, dh = d, dd
    active = np.ones(x.shape, bool)  # each element stops at its own convergence, whatever its batch
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)  # d an/da = i
        b = b + 2
        dd = i * d + an * dd - 1
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        dc = -1 + (i - an * dc / c) / c
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        dd = -dd * d * d
        delta, ddelta = d * c, dd * c + d * dc
        h, dh = np.where(active, h * delta, h), np.where(active, dh * delta + h * ddelta, dh)
        active &= (np.abs(delta - 1) > 1e-16) | (np.abs(h * ddelta) > 1e-16 * np.abs(dh))
        if not active.any():
            break
    prefix = np.exp(a * log_x - x - sp.lgamma_p.impl(a))
    return -prefix * (h * (log_x - sp.digamma_p.impl(a)) + dh)


def _gammainc_grad_a_impl(a: Any, x: Any) -> Any:
    _check_inputs("gammainc", (a, x), False)
    dtype = _F32 if _dtype(a) == _F32 and _dtype(x) == _F32 else np.dtype(np.float64)  # gammainc's
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        valid = (a > 0) & (x >= 0) & np.isfinite(a)
        out[valid & ((x == 0) | np.isinf(x))] = 0.0
        live = valid & (x > 0) & np.isfinite(x)
        series = live & (x < a + 1)
        sp._fill(out, series, _gammainc_grad_a_series, a, x)
        sp._fill(out, live & ~series, _gammainc_grad_a_fraction, a, x)
    return out.astype(dtype, copy=False)[()]


def _gammainc_grad_a_dx(ans: Any, a: Any, x: Any) -> Any:
    # d/da of the density x**(a-1) exp(-x) / gamma(a): itself times log x - digamma(a); 0 where it is 0.
    density = _gammainc_factor(None, a, x)
    safe_x = ew.where(ew.eq(density, 0), 1.0, x)
    return ew.where(ew.eq(density, 0), 0.0, ew.mul(density, ew.sub(ew.log(safe_x), sp.digamma(a))))


gammainc_grad_a_p = ew.elementwise(
    "gammainc_grad_a", _gammainc_grad_a_impl,
    _no_derivative("gammainc", "a", "only its first derivative in a is", "second derivative"),
    _gammainc_grad_a_dx,
)


# --- betainc_grad_ab: d/da and d/db of betainc(a, b, x), fgrad's own ----------------------
# Written dI = I dlog I, with I SciPy's value (accurate to a few ulps; fgrad's
# own prefactor x**a (1-x)**b / B(a, b) would round the exponent), or, where I
# underflows (below 1e-290), exp(log I + log|dlog I|) from logs. dlog I comes
# from one of two expansions, each differentiated term by term (as Boik &
# Robison-Cox 1998 do the second):
# - the power series I = x**a / B(a, b) sum_n (1-b)_n x**n / (n! (a+n)), where
#   x <= 1/2 and b x <= 2: its terms fall at once, and their signs cancel
#   at most e**4 of the sum;
# - elsewhere the continued fraction I = x**a (1-x)**b / (a B(a, b)) f,
#   f = 1/(1 + d_1/(1 + d_2/(1 + ...))), d_2m+1 = -(a+m)(a+b+m) x / ((a+2m)
#   (a+2m+1)), d_2m = m(b-m) x / ((a+2m-1)(a+2m)), by modified Lentz, log f'
#   summed from the factors' derivatives (forward mode on the recurrence);
#   it converges fast for x < (a+1)/(a+b+2).
# Where I_1-x(b, a) = 1 - I_x(a, b) has the better expansion (its series, or
# its fraction above x = (a+1)/(a+b+2)), that one is differentiated, which
# also keeps the digits of a derivative where I rounds to 1 (1 - x is exact
# for the series: x >= 1/2). The differences digamma(a+b) - digamma(a+1) and
# digamma(a+b) - digamma(b) in dlog I are taken without cancellation
# (_digamma_increment). Relative error, against mpmath: below 5e-14 for
# a, b in [0.1, 200] and x in (0, 1) (median 4e-16), below 3e-13 for a, b in
# [1e-3, 1e4]; where I underflows, about 1e-16 times the exponent a log x +
# b log(1-x) (1e-12 at a = 1000). Iterations grow as sqrt(max(a, b)) (a few
# thousand at 1e6); an element that has not converged after _MAX_TERMS steps
# (a, b beyond about 1e10) is nan, never a wrong number. 0 at x == 0 and
# x == 1; nan outside a > 0, b > 0 (finite), 0 <= x <= 1. Its derivative in x
# is that of the beta density in a (or b); in a and b it has none.


def _betainc_term(n: int, a: np.ndarray, b: np.ndarray, x: np.ndarray, wrt_a: bool) -> tuple[Any, Any]:
    """d_n of the continued fraction of I_x(a, b), and its derivative in a (or b)."""
    m = n // 2
    if n % 2:  # d_2m+1 = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))
        num, den = (a + m) * (a + b + m), (a + 2 * m) * (a + 2 * m + 1)
        d = -x * num / den
        return d, d * ((2 * a + b + 2 * m) / num - (2 * a + 4 * m + 1) / den) if wrt_a else -x * (a + m) / den
    den = (a + 2 * m - 1) * (a + 2 * m)  # d_2m = m(b-m) x / ((a+2m-1)(a+2m))
    d = x * m * (b - m) / den
    return d, -d * (2 * a + 4 * m - 1) / den if wrt_a else x * m / den


def _betainc_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray, wrt_a: bool) -> tuple[Any, Any, Any]:
    """The continued fraction f = 1/(1 + d_1/(1 + d_2/(1 + ...))) of I_x(a, b), the derivative
    of log f in a (or b), and a mask of the elements that converged: modified Lentz, f the
    product of the factors C_n D_n, log f' the sum of C_n'/C_n + D_n'/D_n."""
    d_n, dd_n = _betainc_term(1, a, b, x, wrt_a)
    big_d = 1 / (1 + d_n)
    dbig_d = -big_d * big_d * dd_n
    c, dc = np.ones_like(x), np.zeros_like(x)
    f, dlog_f = big_d, dbig_d / big_d
    active = np.ones(x.shape, bool)  # each element stops at its own convergence, whatever its batch
    for n in range(2, _MAX_TERMS):
        d_n, dd_n = _betainc_term(n, a, b, x, wrt_a)
        big_d_new = 1 + d_n * big_d
        big_d_new = 1 / np.where(np.abs(big_d_new) < _TINY, _TINY, big_d_new)
        dbig_d = -big_d_new * big_d_new * (dd_n * big_d + d_n * dbig_d)
        c_new = 1 + d_n / c
        dc = dd_n / c - d_n * dc / (c * c)
        big_d, c = big_d_new, np.where(np.abs(c_new) < _TINY, _TINY, c_new)
        delta, step = big_d * c, dbig_d / big_d + dc / c
        f, dlog_f = np.where(active, f * delta, f), np.where(active, dlog_f + step, dlog_f)
        active &= (np.abs(delta - 1) > 1e-16) | (np.abs(step) > 1e-16 * np.abs(dlog_f))
        if not active.any():
            break
    return f, dlog_f, ~active


# B_2k / 2k, k = 1..8: the asymptotic series of digamma, psi(w) = log w - 1/(2w) - sum_k B_2k / (2k w**2k),
# whose next term is below 1e-17 relative for w >= 10.
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12, -3617 / 8160)


def _digamma_increment(z: np.ndarray, h: np.ndarray) -> np.ndarray:
    """digamma(z + h) - digamma(z) for z, z + h > 0, to a few ulps of itself also
    where |h| << z, which the difference of the two would cancel: shifted by the
    recurrence psi(w + 1) = psi(w) + 1/w until both are 10 or more, then the
    asymptotic series, differenced term by term ((w+h)**-n - w**-n = w**-n
    expm1(-n log1p(h/w)))."""
    total = np.zeros_like(z)
    for _ in range(10):
        shift = np.minimum(z, z + h) < 10
        total = total + np.where(shift, h / (z * (z + h)), 0.0)
        z = np.where(shift, z + 1, z)
    r = np.log1p(h / z)
    total = total + r + h / (2 * z * (z + h))
    w2 = 1 / (z * z)
    power = w2
    for k, c in enumerate(_DIGAMMA_SERIES, 1):
        total = total - c * power * np.expm1(-2 * k * r)
        power = power * w2
    return total


def _betainc_series(a: np.ndarray, b: np.ndarray, x: np.ndarray, wrt_a: bool) -> tuple[Any, Any, Any]:
    """S1 = sum_n>=1 c_n x**n / (a+n), c_n = (1-b)_n / n!, and T = sum_n>=1 c_n x**n n / (a+n)**2
    (wrt a) or sum_n>=1 c_n' x**n / (a+n) (wrt b, c_n' = dc_n/db), with a mask of the converged."""
    c, dc, power = np.ones_like(x), np.zeros_like(x), np.ones_like(x)
    s1, t = np.zeros_like(x), np.zeros_like(x)
    active = np.ones(x.shape, bool)
    for n in range(1, _MAX_TERMS):
        dc = (dc * (n - b) - c) / n
        c = c * (n - b) / n
        power = power * x
        term = c * power / (a + n)
        step = term * n / (a + n) if wrt_a else dc * power / (a + n)
        s1, t = np.where(active, s1 + term, s1), np.where(active, t + step, t)
        active &= (np.abs(term) > 1e-17 * np.abs(s1)) | (np.abs(step) > 1e-17 * np.abs(t))
        if not active.any():
            break
    return s1, t, ~active


def _betainc_dlog(a: np.ndarray, b: np.ndarray, x: np.ndarray, wrt_a: bool) -> tuple[Any, Any, Any]:
    """d/da (or d/db) log I_x(a, b), log I_x(a, b) and a mask of the converged: by the power
    series where x and b x are small, by the continued fraction elsewhere (which converges
    fast below x = (a+1)/(a+b+2))."""
    if wrt_a:
        # digamma(a+b) - digamma(a+1) (1/a + digamma(a) = digamma(a+1)); where a + b is
        # small, (a+1) + (b-1) would round it, and psi(a+b+1) - 1/(a+b) is used instead
        psi = np.where(a + b < 1, _digamma_increment(a + 1, b) - 1 / (a + b),
                       _digamma_increment(a + 1, b - 1))
    else:
        psi = _digamma_increment(b, a)
    log_x, log1m_x = np.log(x), np.log1p(-x)
    log_beta = _scipy_function("betaln")(a, b)
    dlog, log_value, converged = np.empty_like(x), np.empty_like(x), np.empty(x.shape, bool)
    series = (x <= _SERIES_X) & (b * x <= _SERIES_BX)

    def by_series(
        a: Any, b: Any, x: Any, psi: Any, log_x: Any, log1m_x: Any, log_beta: Any
    ) -> tuple[Any, Any, Any]:
        # I = x**a / B(a, b) (1/a + S1): d/da log I = log x + digamma(a+b) - digamma(a+1)
        # + T / (1 + a S1), d/db log I = digamma(a+b) - digamma(b) + a T / (1 + a S1)
        s1, t, ok = _betainc_series(a, b, x, wrt_a)
        total = 1 + a * s1
        d = log_x + psi + t / total if wrt_a else psi + a * t / total
        return d, a * log_x - log_beta + np.log(total) - np.log(a), ok

    def by_fraction(
        a: Any, b: Any, x: Any, psi: Any, log_x: Any, log1m_x: Any, log_beta: Any
    ) -> tuple[Any, Any, Any]:
        f, dlog_f, ok = _betainc_fraction(a, b, x, wrt_a)
        d = (log_x if wrt_a else log1m_x) + psi + dlog_f
        return d, a * log_x + b * log1m_x - np.log(a) - log_beta + np.log(f), ok

    for mask, method in ((series, by_series), (~series, by_fraction)):
        if mask.any():
            d, v, ok = method(*(u[mask] for u in (a, b, x, psi, log_x, log1m_x, log_beta)))
            dlog[mask], log_value[mask], converged[mask] = d, v, ok
    return dlog, log_value, converged


def _betainc_grad(a: np.ndarray, b: np.ndarray, x: np.ndarray, value: np.ndarray, wrt_a: bool) -> Any:
    """d/da (or d/db) of I_x(a, b) = `value`."""
    dlog, log_value, converged = _betainc_dlog(a, b, x, wrt_a)
    tiny = np.sign(dlog) * np.exp(log_value + np.log(np.abs(dlog)))  # where value underflows
    return np.where(converged, np.where(value > 1e-290, value * dlog, tiny), np.nan)


def _betainc_grad_ab_impl(a: Any, b: Any, x: Any, *, wrt: str) -> Any:
    _check_inputs("betainc", (a, b, x), False)
    if wrt not in ("a", "b"):
        raise ValueError(f"betainc_grad_ab differentiates in wrt='a' or wrt='b', got wrt={wrt!r}")
    betainc_ = _scipy_function("betainc")
    with np.errstate(all="ignore"):
        dtype = np.result_type(betainc_(a, b, x))  # betainc's
        a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
        out = np.full(a.shape, np.nan)
        valid = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b) & (x >= 0) & (x <= 1)
        out[valid & ((x == 0) | (x == 1))] = 0.0
        live = valid & (x > 0) & (x < 1)
        # the side whose power series converges fast, else the side where the fraction does
        series = (x <= _SERIES_X) & (b * x <= _SERIES_BX)
        series_mirrored = (1 - x <= _SERIES_X) & (a * (1 - x) <= _SERIES_BX)
        lower = live & (series | ~series_mirrored & (x < (a + 1) / (a + b + 2)))

        def direct(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> Any:
            return _betainc_grad(a, b, x, betainc_(a, b, x), wrt == "a")

        def mirrored(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> Any:  # -d I_1-x(b, a)
            y = 1 - x
            return -_betainc_grad(b, a, y, betainc_(b, a, y), wrt == "b")

        sp._fill(out, lower, direct, a, b, x)
        sp._fill(out, live & ~lower, mirrored, a, b, x)
    return out.astype(dtype, copy=False)[()]


def _betainc_grad_ab_dx(ans: Any, a: Any, b: Any, x: Any, *, wrt: str) -> Any:
    # d/da of the density x**(a-1) (1-x)**(b-1) / B(a, b): itself times log x -
    # digamma(a) + digamma(a+b) (for b: log(1-x) - digamma(b) + digamma(a+b)); 0 where it is 0.
    density = _betainc_factor(None, a, b, x)
    zero = ew.eq(density, 0)
    if wrt == "a":
        log_x = ew.log(ew.where(zero, 1.0, x))
        psi = sp.digamma(a)
    else:
        log_x = ew.log1p(ew.neg(ew.where(zero, 0.0, x)))
        psi = sp.digamma(b)
    return ew.where(zero, 0.0, ew.mul(density, ew.add(ew.sub(log_x, psi), sp.digamma(ew.add(a, b)))))


def _betainc_second_derivative(argument: str) -> Callable[..., Any]:
    """The factor of betainc_grad_ab in a or b: a second derivative of betainc (fgrad has no rule for it)."""

    def factor(ans: Any, a: Any, b: Any, x: Any, *, wrt: str) -> Any:
        which = f"`{argument}`" if wrt == argument else f"`{wrt}` and `{argument}`"
        raise NotImplementedError(
            f"fgrad.scipy.special.betainc: the second derivative with respect to {which} is not implemented "
            "(only its first derivatives in a and b are). Differentiate once in a and b, or pass them "
            "through fgrad.stop_gradient where their derivative is not needed."
        )

    return factor


# params: wrt ("a" or "b", the argument betainc is differentiated in)
betainc_grad_ab_p = ew.elementwise(
    "betainc_grad_ab", _betainc_grad_ab_impl,
    _betainc_second_derivative("a"), _betainc_second_derivative("b"), _betainc_grad_ab_dx,
)


# --- inverses and logs of the normal distribution ----------------------------------------

erfcinv_p = _scipy_primitive("erfcinv", lambda ans, y: ew.mul(-_SQRT_PI / 2, ew.exp(ew.square(ans))))
ndtri_p = _scipy_primitive("ndtri", lambda ans, y: ew.mul(_SQRT_2PI, ew.exp(ew.mul(0.5, ew.square(ans)))))
# log_ndtr' = pdf/ndtr = exp(log pdf(x) - log_ndtr(x)), in logs so that it does not
# underflow for very negative x. Below -20 the two logs, about -x**2/2, cancel to
# more than the precision they have: there the asymptotic series of Mills' ratio,
# ndtr(x)/pdf(x) = 1/t (1 - 1/t**2 + 3/t**4 - 15/t**6 ...), t = -x, whose terms
# (-1)**k (2k-1)!! / t**2k fall below 1e-17 by k = 10 (at t = 20).
_LOG_NDTR_TAIL = -20.0
_MILLS_SERIES = tuple((-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(11))


def _log_ndtr_factor(ans: Any, x: Any) -> Any:
    tail = ew.lt(x, _LOG_NDTR_TAIL)
    t = ew.neg(ew.where(tail, x, _LOG_NDTR_TAIL))
    u = ew.div(1.0, ew.square(t))
    series = _MILLS_SERIES[-1]
    for c in _MILLS_SERIES[-2::-1]:
        series = ew.add(ew.mul(series, u), float(c))
    bulk = ew.exp(ew.sub(ew.sub(ew.mul(-0.5, ew.square(x)), _HALF_LOG_2PI), ew.where(tail, 0.0, ans)))
    return ew.where(tail, ew.div(t, series), bulk)


log_ndtr_p = _scipy_primitive("log_ndtr", _log_ndtr_factor)


# --- Bessel functions ---------------------------------------------------------------------
# bessel_over_power[kind, n](x) is x**-n J_n(x) (kind "j"), x**-n I_n(x) ("i") or
# exp(-|x|) x**-n I_n(x) ("ie"): even, finite at 0 (1/(2**n n!)), and
# d/dx x**-n C_n(x) = -+x x**-(n+1) C_{n+1}(x), so that j1/x and i1/x, in the
# derivatives of j1, i1 and i1e, have derivatives of every order also at 0.
# Near 0, where x**n may underflow, two terms of the power series (the third is
# below x**4 / 32 relative: nothing for |x| < 1e-4).

_BESSEL_SMALL = 1e-4
_BESSEL_ORDER = {"j": "jv", "i": "iv", "ie": "ive"}


def _bessel_over_power_impl(x: Any, *, kind: str, n: int) -> Any:
    _check_inputs("bessel_over_power", (x,), False)
    fn = _scipy_function(_BESSEL_ORDER[kind])
    x = np.asarray(x)
    dtype = _F32 if x.dtype == _F32 else np.dtype(np.float64)
    x = x.astype(np.float64, copy=False)
    with np.errstate(all="ignore"):
        small = np.abs(x) < _BESSEL_SMALL
        safe = np.where(small, 1.0, x)
        out = fn(n, safe) / safe**n
        sign = -1.0 if kind == "j" else 1.0
        series = (1 + sign * x * x / (4 * (n + 1))) / (2.0**n * math.factorial(n))
        if kind == "ie":
            series = series * np.exp(-np.abs(x))
        out = np.where(small, series, out)
    return out.astype(dtype, copy=False)[()]


def _bessel_over_power_factor(ans: Any, x: Any, *, kind: str, n: int) -> Any:
    higher = ew.mul(x, bessel_over_power(x, kind=kind, n=n + 1))
    if kind == "j":
        return ew.neg(higher)
    if kind == "i":
        return higher
    return ew.sub(higher, ew.mul(ew.sign(x), ans))


# params: kind ("j", "i" or "ie"), n (the order, a non-negative int)
bessel_over_power_p = ew.elementwise(
    "bessel_over_power", _bessel_over_power_impl, _bessel_over_power_factor
)

i0_p = _scipy_primitive("i0", lambda ans, x: i1(x))
i0e_p = _scipy_primitive("i0e", lambda ans, x: ew.sub(i1e(x), ew.mul(ew.sign(x), ans)))
i1_p = _scipy_primitive("i1", lambda ans, x: ew.sub(i0(x), bessel_over_power(x, kind="i", n=1)))
i1e_p = _scipy_primitive(
    "i1e",
    lambda ans, x: ew.sub(ew.sub(i0e(x), ew.mul(ew.sign(x), ans)), bessel_over_power(x, kind="ie", n=1)),
)
j0_p = _scipy_primitive("j0", lambda ans, x: ew.neg(j1(x)))
j1_p = _scipy_primitive("j1", lambda ans, x: ew.sub(j0(x), bessel_over_power(x, kind="j", n=1)))
y0_p = _scipy_primitive("y0", lambda ans, x: ew.neg(y1(x)))
y1_p = _scipy_primitive("y1", lambda ans, x: ew.sub(y0(x), ew.div(ans, x)))


# --- zeta ---------------------------------------------------------------------------------

_NO_ZETA_RULE = "the derivative of zeta in its exponent is not one of SciPy's functions"
# zeta(x, q), Hurwitz's: d/dq = -x zeta(x + 1, q).
zeta_p = ew.elementwise(
    "zeta", _scipy_impl("zeta"), _no_derivative("zeta", "x", _NO_ZETA_RULE),
    lambda ans, x, q: ew.neg(ew.mul(x, zeta(ew.add(x, 1.0), q))),
)


# zeta(x), Riemann's (SciPy's zeta of one argument), also for x < 1, where zeta(x, 1) is nan.
riemann_zeta_p = ew.elementwise(
    "riemann_zeta", _scipy_impl("zeta"), _no_derivative("zeta", "x", _NO_ZETA_RULE)
)


# --- relative entropy ---------------------------------------------------------------------
# As JAX: inside the domain (x > 0 and y > 0) the derivatives of the formula;
# outside it the value is a constant (0 or inf), with derivative 0, except that
# kl_div(0, y) = y has the derivative 1 in y.


def _both_positive(x: Any, y: Any) -> tuple[Any, Any, Any]:
    inside = ew.logical_and(ew.gt(x, 0), ew.gt(y, 0))
    return inside, ew.where(inside, x, 1.0), ew.where(inside, y, 1.0)


def _rel_entr_dx(ans: Any, x: Any, y: Any, offset: float) -> Any:
    inside, x, y = _both_positive(x, y)
    return ew.where(inside, ew.add(ew.sub(ew.log(x), ew.log(y)), offset), 0.0)


def _rel_entr_dy(ans: Any, x: Any, y: Any) -> Any:
    inside, x, y = _both_positive(x, y)
    return ew.where(inside, ew.neg(ew.div(x, y)), 0.0)


def _kl_div_dy(ans: Any, x: Any, y: Any) -> Any:
    inside, safe_x, safe_y = _both_positive(x, y)
    at_zero = ew.logical_and(ew.eq(x, 0), ew.ge(y, 0))
    return ew.where(inside, ew.sub(1.0, ew.div(safe_x, safe_y)), ew.where(at_zero, 1.0, 0.0))


# On other namespaces, rel_entr and kl_div are compositions of the standard's functions (SciPy's
# cases, in float64); the others run block by block on Dask as elementwise
# primitives, and raise NotImplementedError on other libraries.


def _rel_entr_on(xp: Any, x: Any, y: Any, kl: bool = False) -> Any:
    inside = (x > 0) & (y > 0)
    safe_x, safe_y = xp.where(inside, x, xp.ones_like(x)), xp.where(inside, y, xp.ones_like(y))
    value = safe_x * xp.log(safe_x / safe_y)
    if kl:
        value = value - safe_x + safe_y
    at_zero = y if kl else xp.zeros_like(y)  # where x == 0 and y >= 0
    out = xp.where(inside, value, xp.where((x == 0) & (y >= 0), at_zero, xp.full_like(value, math.inf)))
    return xp.where(xp.isnan(x) | xp.isnan(y), x + y, out)


rel_entr_p = _scipy_primitive("rel_entr", lambda ans, x, y: _rel_entr_dx(ans, x, y, 1.0), _rel_entr_dy,
                              xp=_rel_entr_on)
kl_div_p = _scipy_primitive("kl_div", lambda ans, x, y: _rel_entr_dx(ans, x, y, 0.0), _kl_div_dy,
                            xp=lambda xp, x, y: _rel_entr_on(xp, x, y, kl=True))


# --- erf and erfc of complex numbers: holomorphic ------------------------------------------


def _erf_complex_factor(ans: Any, z: Any) -> Any:
    return ew.mul(2 / _SQRT_PI, ew.exp(ew.neg(ew.square(z))))


erf_complex_p = ew.elementwise("erf_complex", _scipy_impl("erf", complex_input=True), _erf_complex_factor)
erfc_complex_p = ew.elementwise(
    "erfc_complex", _scipy_impl("erfc", complex_input=True),
    lambda ans, z: ew.neg(_erf_complex_factor(ans, z)),
)


# --- the functions rules and fgrad.scipy.special call ---------------------------------------

gamma: Callable[..., Any] = gamma_p.bind
rgamma: Callable[..., Any] = rgamma_p.bind
gammasgn: Callable[..., Any] = gammasgn_p.bind
beta: Callable[..., Any] = beta_p.bind
betaln: Callable[..., Any] = betaln_p.bind
betainc: Callable[..., Any] = betainc_p.bind
gammainc: Callable[..., Any] = gammainc_p.bind
gammaincc: Callable[..., Any] = gammaincc_p.bind
gammainc_grad_a: Callable[..., Any] = gammainc_grad_a_p.bind
betainc_grad_ab: Callable[..., Any] = betainc_grad_ab_p.bind
erfcinv: Callable[..., Any] = erfcinv_p.bind
ndtri: Callable[..., Any] = ndtri_p.bind
log_ndtr: Callable[..., Any] = log_ndtr_p.bind
bessel_over_power: Callable[..., Any] = bessel_over_power_p.bind
i0: Callable[..., Any] = i0_p.bind
i0e: Callable[..., Any] = i0e_p.bind
i1: Callable[..., Any] = i1_p.bind
i1e: Callable[..., Any] = i1e_p.bind
j0: Callable[..., Any] = j0_p.bind
j1: Callable[..., Any] = j1_p.bind
y0: Callable[..., Any] = y0_p.bind
y1: Callable[..., Any] = y1_p.bind
zeta: Callable[..., Any] = zeta_p.bind
riemann_zeta: Callable[..., Any] = riemann_zeta_p.bind
rel_entr: Callable[..., Any] = rel_entr_p.bind
kl_div: Callable[..., Any] = kl_div_p.bind
erf_complex: Callable[..., Any] = erf_complex_p.bind
erfc_complex: Callable[..., Any] = erfc_complex_p.bind
