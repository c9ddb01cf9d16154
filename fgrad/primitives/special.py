"""Special functions as elementwise primitives: erf, erfc, erf_inv, lgamma,
digamma, polygamma, logistic, logit, xlogy, xlog1py, entr.

They are computed with NumPy and the standard library only (no SciPy), each a
vectorised evaluation of a standard method, in float64, with its accuracy
(relative, against mpmath) stated beside it. Results take SciPy 1.17's dtypes:
float32 when every input is float32 and float64 otherwise (float16, bool,
integers and Python scalars included), except that erf_inv and entr follow
NumPy's promotion with float32 (float16, bool and integers of up to 16 bits
give float32 too) and polygamma is always float64. Complex inputs are refused.

Derivatives are factors written with these same primitives, so every order is
available: lgamma' = digamma, digamma' = polygamma(1, .), polygamma(n, .)' =
polygamma(n + 1, .), erf' = 2/sqrt(pi) exp(-x**2), erf_inv' = sqrt(pi)/2
exp(erf_inv(x)**2). The NumPy-level functions (scipy.special's names and
signatures) are in fgrad.scipy.special; this module knows nothing of them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import elementwise as ew

__all__ = [
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma", "logistic", "logit", "xlogy", "xlog1py",
    "entr",
]

_SQRT_PI = math.sqrt(math.pi)
_EULER_GAMMA = 0.57721566490153286061
_INV_SQRT_PI = 1 / _SQRT_PI
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)

# Bernoulli numbers B2, B4, ..., B22: the asymptotic series below.
_BERNOULLI = (
    1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
    -174611 / 330, 854513 / 138,
)

# Up to this size, inputs go through the standard library's function where it has one.
_SCALAR_SIZE = 256
# Large arrays are updated in place (allocating them costs more than the
# arithmetic); small ones, NumPy scalars above all, are faster out of place.
_IN_PLACE_SIZE = 512


# --- result dtypes: SciPy 1.17's, from the input dtypes ----------------------------------
# A rule is `(name, *input_dtypes) -> dtype`; a Python scalar comes as its NumPy dtype.

_DtypeRule = Callable[..., np.dtype]
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _check_real(name: str, *dtypes: np.dtype) -> None:
    for dtype in dtypes:
        if dtype.kind not in "biuf":
            raise TypeError(
                f"{name} is not supported for inputs of dtype {dtype} (it takes real numbers: "
                "bool, integer or float)"
            )


def _float32_loop(name: str, *dtypes: np.dtype) -> np.dtype:
    """float32 if every input is float32, else float64: a SciPy ufunc with only
    float32 and float64 loops (erf, gammaln, expit, xlogy, ...)."""
    _check_real(name, *dtypes)
    return _F32 if all(dtype == _F32 for dtype in dtypes) else _F64


def _float32_promotion(name: str, *dtypes: np.dtype) -> np.dtype:
    """NumPy's promotion with float32 (SciPy's erfinv and entr): float16, bool and
    integers of up to 16 bits give float32."""
    _check_real(name, *dtypes)
    return np.promote_types(np.result_type(*dtypes), _F32)


def _always_float64(name: str, *dtypes: np.dtype) -> np.dtype:
    """float64 whatever the input (SciPy's polygamma, a Python function on float64)."""
    _check_real(name, *dtypes)
    return _F64


def _unary_impl(
    name: str, kernel: Callable[..., np.ndarray], result_dtype: _DtypeRule,
    scalar: Callable[[float], float] | None = None,
) -> Callable[..., Any]:
    """The NumPy implementation of a primitive from its float64 `kernel`:
    conversion, SciPy's result dtype, and a NumPy scalar for a 0-d result.
    `scalar`, the standard library's function where it is as accurate, takes
    small inputs: a vectorised kernel costs tens of NumPy calls whatever the size."""

    def impl(x: Any, **params: Any) -> Any:
        x = np.asarray(x)
        dtype = result_dtype(name, x.dtype)
        if scalar is not None and x.size <= _SCALAR_SIZE:
            values = [scalar(v) for v in x.ravel().tolist()]
            return np.array(values, dtype).reshape(x.shape)[()]
        with np.errstate(all="ignore"):
            out = kernel(x.astype(np.float64, copy=False), **params)
        return out.astype(dtype, copy=False)[()]

    impl.__name__ = name
    return impl


def _binary_impl(name: str, kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Any]:
    def impl(x: Any, y: Any) -> Any:
        # SciPy's binary ufuncs take Python scalars as float64: xlogy(float32 array, 2.0)
        # is float64 (they are not weak there, unlike in NumPy's ufuncs).
        x, y = np.asarray(x), np.asarray(y)
        dtype = _float32_loop(name, x.dtype, y.dtype)
        x, y = x.astype(np.float64, copy=False), y.astype(np.float64, copy=False)
        with np.errstate(all="ignore"):
            out = np.asarray(kernel(x, y))
        return out.astype(dtype, copy=False)[()]

    impl.__name__ = name
    return impl


def _fill(out: np.ndarray, mask: np.ndarray, fn: Callable[..., np.ndarray], *xs: np.ndarray) -> None:
    """out[mask] = fn(*(x[mask] for x in xs)), without gathering when the mask is all or nothing."""
    if mask.all():
        out[...] = fn(*xs)
    elif mask.any():
        out[mask] = fn(*(x[mask] for x in xs))


def _horner(coefficients: tuple[float, ...] | list[float], x: np.ndarray) -> np.ndarray:
    """sum_k coefficients[k] * x**k (at least two coefficients)."""
    if x.size < _IN_PLACE_SIZE:
        x = x[()] if x.ndim == 0 else x  # a NumPy scalar: its arithmetic skips the ufunc machinery
        out = coefficients[-1] * x + coefficients[-2]
        for c in coefficients[-3::-1]:
            out = out * x + c
        return out
    out = coefficients[-1] * x
    out += coefficients[-2]
    for c in coefficients[-3::-1]:
        out *= x
        out += c
    return out


def _sinpi(x: np.ndarray) -> np.ndarray:
    """|sin(pi x)|, exactly 0 at the integers (pi x rounds; x - round(x) does not)."""
    return np.abs(np.sin(np.pi * (x - np.round(x))))


def _tanpi(x: np.ndarray) -> np.ndarray:
    """tan(pi x), of period 1: computed on r = x - round(x), and inf at the
    half-integers (tan(pi r) there is about 1.6e16: its reciprocal, not 0,
    would weigh in the cot polynomials of polygamma)."""
    r = x - np.round(x)
    return np.where(np.abs(r) == 0.5, np.inf, np.tan(np.pi * r))


# --- erf and erfc -------------------------------------------------------------------
# W. J. Cody's rational Chebyshev approximations (Math. Comp. 23, 1969; as in his
# CALERF): erf on |x| <= 0.46875, erfc on (0.46875, 4] and beyond 4, each to
# about 1e-16 relative (max 1e-15 against mpmath over the whole line). erfc is
# computed directly for large x, never as 1 - erf: it stays accurate down to
# 1e-300 and below. exp(-x**2) is split so that x**2 does not round.

_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERFC_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
           2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
           2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERFC_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
           1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
           3.43936767414372164e03, 1.23033935480374942e03)
_ERFC_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
           1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERFC_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
           6.05183413124413191e-2, 2.33520497626869185e-3)
_ERF_SMALL = 0.46875
_ERFC_UNDERFLOW = 27.3  # erfc(x) < 2**-1074 beyond


def _rational(num: tuple[float, ...], den: tuple[float, ...], t: np.ndarray) -> np.ndarray:
    """Cody's form: (((num[-1] t + num[0]) t + num[1]) t ... + num[-2]) over the same
    in den, whose leading coefficient is 1."""
    if t.size < _IN_PLACE_SIZE:
        t = t[()] if t.ndim == 0 else t
        p, q = num[-1] * t, t
        for a, b in zip(num[:-2], den[:-1]):
            p, q = (p + a) * t, (q + b) * t
        return (p + num[-2]) / (q + den[-1])
    p, q = num[-1] * t, t.copy()
    for a, b in zip(num[:-2], den[:-1]):
        p += a
        p *= t
        q += b
        q *= t
    p += num[-2]
    q += den[-1]
    p /= q
    return p


def _exp_minus_square(y: np.ndarray) -> np.ndarray:
    """exp(-y**2) without the rounding of y**2: y = hi + lo, hi a multiple of 1/16."""
    hi = np.trunc(y * 16) / 16
    lo = y - hi
    lo *= y + hi  # y**2 - hi**2
    out = np.exp(-hi * hi)
    out *= np.exp(-lo)
    return out


def _erf_small(x: np.ndarray) -> np.ndarray:
    """erf(x) for |x| <= 0.46875."""
    return x * _rational(_ERF_A, _ERF_B, x * x)


def _erfc_mid(y: np.ndarray) -> np.ndarray:
    """erfc(y) for 0.46875 < y <= 4."""
    return _exp_minus_square(y) * _rational(_ERFC_C, _ERFC_D, y)


def _erfc_tail(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 4, inf and nan included."""
    u = 1 / (y * y)
    tail = _INV_SQRT_PI - u * _rational(_ERFC_P, _ERFC_Q, u)
    return np.where(y >= _ERFC_UNDERFLOW, 0.0, _exp_minus_square(y) * tail / y)


def _erfc_positive(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.46875 (and inf, nan)."""
    out = np.empty_like(y)
    mid = y <= 4
    _fill(out, mid, _erfc_mid, y)
    _fill(out, ~mid, _erfc_tail, y)
    return out


def _erf_kernel(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    small = np.abs(x) <= _ERF_SMALL
    _fill(out, small, _erf_small, x)
    _fill(out, ~small, lambda x: np.copysign(1.0 - _erfc_positive(np.abs(x)), x), x)
    return out


def _erfc_kernel(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    small = np.abs(x) <= _ERF_SMALL
    _fill(out, small, lambda x: 1.0 - _erf_small(x), x)

    def large(x: np.ndarray) -> np.ndarray:
        tail = _erfc_positive(np.abs(x))
        return np.where(x < 0, 2.0 - tail, tail)

    _fill(out, ~small, large, x)
    return out


# --- erf_inv --------------------------------------------------------------------------
# An initial guess to a few 1e-3 (S. Winitzki's closed form), then three Halley
# steps (cubic convergence) on erf(x) = y, with the residual taken through erfc
# near |y| = 1 so that it keeps its precision there: about 5e-16 relative.

_WINITZKI_A = 0.147


def _erf_inv_kernel(y: np.ndarray) -> np.ndarray:
    t = np.abs(y)
    one_minus_t = 1.0 - t  # exact for t >= 0.5, where it matters
    w = np.log(one_minus_t * (1.0 + t))
    b = 2 / (np.pi * _WINITZKI_A) + w / 2
    x = np.sqrt(np.sqrt(b * b - w / _WINITZKI_A) - b)
    near_one = t > 0.5
    residual = np.empty_like(x)
    for _ in range(3):
        _fill(residual, near_one, lambda x, c: c - _erfc_kernel(x), x, one_minus_t)
        _fill(residual, ~near_one, lambda x, t: _erf_kernel(x) - t, x, t)
        step = residual / (2 * _INV_SQRT_PI * np.exp(-x * x))
        x = x - step / (1 + x * step)
    x = np.where(t == 1, np.inf, np.where(t > 1, np.nan, x))
    return np.copysign(x, y)


# --- Hurwitz zeta: the sums behind polygamma --------------------------------------------


@functools.cache
def _zeta_threshold(s: int) -> float:
    """Where the Euler-Maclaurin tail with B2..B20 is accurate to 2**-56 for
    zeta(s, q): its first omitted term, B22/22! s(s+1)...(s+20) q**(-s-21), is
    that small against the leading q**(1-s)/(s-1)."""
    log_term = (math.log(_BERNOULLI[10]) - math.lgamma(23) + math.lgamma(s + 21) - math.lgamma(s)
                + math.log(s - 1) + 56 * math.log(2))
    return float(max(10, math.ceil(math.exp(log_term / 22))))


@functools.cache
def _zeta_tail_coefficients(s: int) -> tuple[float, ...]:
    """B_2j/(2j)! s(s+1)...(s+2j-2), j = 1..10."""
    out, rising = [], float(s)
    for j in range(1, 11):
        out.append(_BERNOULLI[j - 1] / math.factorial(2 * j) * rising)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return tuple(out)


def _hurwitz_zeta(s: int, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_{k >= 0} (q + k)**-s for an integer s >= 2 and q > 0: the
    first terms summed until q + k passes the threshold, then Euler-Maclaurin.
    All terms are positive: about 5e-16 relative."""
    threshold = _zeta_threshold(s)
    count = np.ceil(np.maximum(threshold - q, 0.0))
    total = np.zeros_like(q)
    for k in range(int(np.max(count, initial=0))):
        total += np.where(k < count, (q + k) ** -s, 0.0)
    big = q + count
    u = 1 / (big * big)
    series = _horner(_zeta_tail_coefficients(s), u) / big
    return total + big ** (1 - s) / (s - 1) + big ** -s * (0.5 + series)


# --- digamma and polygamma --------------------------------------------------------------
# digamma: shifted up by 10 with psi(x) = psi(x + 10) - sum 1/(x + k), then its
# asymptotic series; near its positive root x0 a Taylor series in (x - x0),
# which keeps the relative precision there; for x < 0 the reflection
# psi(x) = psi(1 - x) - pi cot(pi x). About 1.5e-15 relative, except near the
# negative roots, where the error is about 1e-16 |psi(1 - x)| (absolute).
# polygamma(n >= 1, x) = (-1)**(n+1) n! zeta(n + 1, x); for x < 0 the reflection
# psi_n(x) = (-1)**n psi_n(1 - x) - pi**(n+1) P_n(cot(pi x)), where
# P_0(c) = c, P_{k+1}(c) = -(1 + c**2) P_k'(c). About 1e-15 relative for x > 0
# (for large n, while zeta(n + 1, x) stays within float64's range), absolute
# near the roots at x < 0. At the
# poles (x = 0, -1, ...) digamma is -inf at +0, +inf at -0 and nan at the
# negative integers; polygamma(n, .) is (-1)**(n+1) inf, as SciPy's.

_DIGAMMA_ROOT_HI = 1.4616321449683622  # x0 = 1.46163214496836234126...
_DIGAMMA_ROOT_LO = 9.549995429965697e-17  # x0 - _DIGAMMA_ROOT_HI
_DIGAMMA_ROOT_WINDOW = 0.5
_DIGAMMA_SHIFT = 10


def _digamma_asymptotic(q: np.ndarray) -> np.ndarray:
    """psi(q) for q >= 10: log q - 1/(2q) - sum_j B_2j/(2j q**2j), j <= 8 (error < 1e-18)."""
    u = 1 / (q * q)
    series = u * _horner([_BERNOULLI[j] / (2 * j + 2) for j in range(8)], u)
    return np.log(q) - 0.5 / q - series


@functools.cache
def _digamma_root_series() -> tuple[float, ...]:
    """The Taylor coefficients psi^(n)(x0)/n! = (-1)**(n+1) zeta(n + 1, x0), n = 1..40
    (the series converges like (h/x0)**n: to 1e-19 at the window's edge)."""
    x0 = np.array(_DIGAMMA_ROOT_HI)
    return (0.0, *(float((-1) ** (n + 1) * _hurwitz_zeta(n + 1, x0)) for n in range(1, 41)))


def _digamma_shifted(x: np.ndarray) -> np.ndarray:
    """psi(x) for 0 < x < 10."""
    shifted_sum = 1 / x
    for k in range(1, _DIGAMMA_SHIFT):
        shifted_sum += 1 / (x + k)
    return _digamma_asymptotic(x + _DIGAMMA_SHIFT) - shifted_sum


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    h = (x - _DIGAMMA_ROOT_HI) - _DIGAMMA_ROOT_LO
    near_root = np.abs(h) < _DIGAMMA_ROOT_WINDOW
    small = (x < _DIGAMMA_SHIFT) & ~near_root
    _fill(out, near_root, functools.partial(_horner, _digamma_root_series()), h)
    _fill(out, small, _digamma_shifted, x)
    _fill(out, x >= _DIGAMMA_SHIFT, _digamma_asymptotic, x)
    return out


def _digamma_kernel(x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, np.nan)  # nan, -inf and the negative integers
    _fill(out, x > 0, _digamma_positive, x)
    _fill(out, (x < 0) & (np.floor(x) != x), lambda x: _digamma_positive(1 - x) - np.pi / _tanpi(x), x)
    zero = x == 0
    if zero.any():
        out[zero] = np.copysign(np.inf, -x[zero])
    return out


@functools.cache
def _cot_derivative_polynomial(n: int) -> tuple[float, ...]:
    """P_n with d^n/dx^n cot(pi x) = pi**n P_n(cot(pi x)), coefficients from degree 0."""
    p = [0, 1]
    for _ in range(n):
        dp = [k * p[k] for k in range(1, len(p))]  # P'
        p = [0] * (len(dp) + 2)
        for k, c in enumerate(dp):  # -(1 + c**2) P'
            p[k] -= c
            p[k + 2] -= c
    return tuple(float(c) for c in p)


def _polygamma_kernel(x: np.ndarray, *, n: int) -> np.ndarray:
    if n == 0:
        return _digamma_kernel(x)
    sign = (-1.0) ** (n + 1)
    factorial = math.factorial(n)
    shift = max(0, factorial.bit_length() - 1000)  # n! past float64 (n > 170): scaled by 2**-shift
    scale = sign * float(factorial >> shift)

    def positive(x: np.ndarray) -> np.ndarray:
        return np.ldexp(scale * _hurwitz_zeta(n + 1, x), shift)

    def reflected(x: np.ndarray) -> np.ndarray:
        cot = 1 / _tanpi(x)
        cot_derivative = np.pi ** (n + 1) * _horner(_cot_derivative_polynomial(n), cot)
        return (-1) ** n * positive(1 - x) - cot_derivative

    out = np.full_like(x, np.nan)
    _fill(out, x > 0, positive, x)
    integer = np.floor(x) == x
    _fill(out, (x < 0) & ~integer, reflected, x)
    out[(x <= 0) & integer] = sign * np.inf
    return out


# --- lgamma -----------------------------------------------------------------------------
# log|Gamma(x)|. Below 15 the argument is brought to z = x - 2 in [-0.5, 0.5]
# with lgamma(x + 1) = lgamma(x) + log(x) (exactly: the shifts of x are exact)
# and lgamma(2 + z) is its Taylor series, (1 - gamma) z + sum_k (-1)**k
# (zeta(k) - 1)/k z**k: relative precision is kept at the zeros x = 1 and 2.
# From 15 on, Stirling's series to B14 (error < 1e-18). For x < 0 the
# reflection lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x). About 5e-16
# relative, except near the zeros at x < 0 (-2.457, -2.747, ...), where the
# error is about 1e-16 |lgamma(1 - x)| (absolute); inf at the poles.

_LGAMMA_STIRLING = 15.0


@functools.cache
def _lgamma_series() -> tuple[float, ...]:
    """The Taylor coefficients of lgamma(2 + z): (1 - gamma), then (-1)**k zeta(k, 2)/k, k = 2..28."""
    zeta = [float(_hurwitz_zeta(k, np.array(2.0))) for k in range(2, 29)]
    return (0.0, 1 - _EULER_GAMMA, *((-1) ** k * zeta[k - 2] / k for k in range(2, 29)))


def _lgamma_stirling(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for x >= 15."""
    u = 1 / (x * x)
    series = _horner([_BERNOULLI[k] / ((2 * k + 2) * (2 * k + 1)) for k in range(7)], u) / x
    return np.where(x == np.inf, np.inf, (x - 0.5) * np.log(x) - x + _HALF_LOG_2PI + series)


def _lgamma_small(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for 0 < x < 15, as lgamma(2 + z) - c on four ranges of x."""
    shifts = np.maximum(np.floor(x - 1.5), 0.0)  # for x >= 2.5: x - shifts in [1.5, 2.5)
    product = np.ones_like(x)
    for k in range(1, int(np.max(shifts, initial=0)) + 1):
        product *= np.where(k <= shifts, x - k, 1.0)
    z = np.where(x < 0.5, x, np.where(x < 1.5, x - 1, x - shifts - 2))
    correction = np.where(
        x < 0.5, np.log1p(x) + np.log(x), np.where(x < 1.5, np.log1p(z), -np.log(product))
    )
    return _horner(_lgamma_series(), z) - correction


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    big = x >= _LGAMMA_STIRLING
    _fill(out, big, _lgamma_stirling, x)
    _fill(out, ~big, _lgamma_small, x)
    return out


def _lgamma_kernel(x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, np.inf)  # the poles, and -inf
    _fill(out, x > 0, _lgamma_positive, x)
    negative = (x < 0) & (np.floor(x) != x)
    _fill(out, negative, lambda x: np.log(np.pi / _sinpi(x)) - _lgamma_positive(1 - x), x)
    out[np.isnan(x)] = np.nan
    return out


# --- logistic, logit, xlogy, xlog1py, entr --------------------------------------------


def _logistic_kernel(x: np.ndarray) -> np.ndarray:
    # exp of -|x| only, so that nothing overflows: 1/(1 + e) for x >= 0, e/(1 + e) below.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def _logit_kernel(p: np.ndarray) -> np.ndarray:
    # Near p = 1/2, log1p of (2p - 1)/(1 - p) (2p - 1 is exact) keeps the precision
    # of the small result; elsewhere log(p / (1 - p)) is accurate.
    middle = np.abs(p - 0.5) <= 0.25
    return np.where(middle, np.log1p((2 * p - 1) / (1 - p)), np.log(p / (1 - p)))


def _xlogy_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


def _xlog1py_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))


def _entr_kernel(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, -x * np.log(x), np.where(x < 0, -np.inf, np.where(x == 0, 0.0, x)))


# --- the primitives and their derivatives -------------------------------------------------


def _erf_factor(ans: Any, x: Any) -> Any:
    return ew.mul(2 * _INV_SQRT_PI, ew.exp(ew.neg(ew.square(x))))


def _nonzero_where_x(x: Any, y: Any) -> Any:
    # y, or 1 where x == 0: the derivative x / y of x log(y) is then 0 there, even
    # at y == 0 (fgrad's choice: JAX's x / y gives nan at x == y == 0).
    return ew.where(ew.eq(x, 0), 1.0, y)


def _entr_factor(ans: Any, x: Any) -> Any:
    # -(log x + 1), and 0 for x < 0, where entr is the constant -inf (as in JAX).
    return ew.where(ew.lt(x, 0), 0.0, ew.neg(ew.add(ew.log(x), 1.0)))


# --- on other namespaces -------------------------------------------------------------
# The functions the standard can compose faithfully are composed of the
# standard's: the
# kernels above, written with the standard's functions, in float64 like the
# NumPy implementations, the result cast to SciPy's dtype. The others (erf,
# lgamma, ...) have no standard composition of their accuracy: as elementwise
# primitives they run block by block on Dask (`core.libraries.numpy_blockwise`), and other
# libraries raise NotImplementedError.


def _logistic_on(xp: Any, x: Any) -> Any:
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, xp.ones_like(x), e) / (1.0 + e)


def _logit_on(xp: Any, p: Any) -> Any:
    middle = xp.abs(p - 0.5) <= 0.25
    return xp.where(middle, xp.log1p((2.0 * p - 1.0) / (1.0 - p)), xp.log(p / (1.0 - p)))


def _x_times(log_name: str) -> Callable[..., Any]:
    """x * log(y) (or log1p), 0 where x == 0 and y is not nan (SciPy's xlogy, xlog1py)."""

    def kernel(xp: Any, x: Any, y: Any) -> Any:
        return xp.where((x == 0) & ~xp.isnan(y), xp.zeros_like(x), x * getattr(xp, log_name)(y))

    return kernel


def _entr_on(xp: Any, x: Any) -> Any:
    positive = x > 0
    inside = -x * xp.log(xp.where(positive, x, xp.ones_like(x)))
    outside = xp.where(x < 0, xp.full_like(x, -math.inf), xp.where(x == 0, xp.zeros_like(x), x))
    return xp.where(positive, inside, outside)


erf_p = ew.elementwise("erf", _unary_impl("erf", _erf_kernel, _float32_loop, math.erf), _erf_factor)
erfc_p = ew.elementwise(
    "erfc", _unary_impl("erfc", _erfc_kernel, _float32_loop, math.erfc),
    lambda ans, x: ew.neg(_erf_factor(ans, x)),
)
erf_inv_p = ew.elementwise(
    "erf_inv", _unary_impl("erfinv", _erf_inv_kernel, _float32_promotion),
    lambda ans, x: ew.mul(_SQRT_PI / 2, ew.exp(ew.square(ans))),
)
lgamma_p = ew.elementwise(
    "lgamma", _unary_impl("gammaln", _lgamma_kernel, _float32_loop), lambda ans, x: digamma(x)
)
digamma_p = ew.elementwise(
    "digamma", _unary_impl("digamma", _digamma_kernel, _float32_loop), lambda ans, x: polygamma(x, n=1)
)
# params: n, the order
polygamma_p = ew.elementwise(
    "polygamma", _unary_impl("polygamma", _polygamma_kernel, _always_float64),
    lambda ans, x, *, n: polygamma(x, n=n + 1),
)
logistic_p = ew.elementwise(
    "logistic", _unary_impl("expit", _logistic_kernel, _float32_loop),
    lambda ans, x: ew.mul(ans, ew.sub(1.0, ans)), xp=_logistic_on, cast="float64",
)
logit_p = ew.elementwise(
    "logit", _unary_impl("logit", _logit_kernel, _float32_loop),
    lambda ans, x: ew.div(1.0, ew.mul(x, ew.sub(1.0, x))), xp=_logit_on, cast="float64",
)
entr_p = ew.elementwise(
    "entr", _unary_impl("entr", _entr_kernel, _float32_promotion), _entr_factor, xp=_entr_on, cast="float64"
)
xlogy_p = ew.elementwise(
    "xlogy", _binary_impl("xlogy", _xlogy_kernel),
    lambda ans, x, y: ew.log(y),
    lambda ans, x, y: ew.div(x, _nonzero_where_x(x, y)), xp=_x_times("log"), cast="float64",
)
xlog1py_p = ew.elementwise(
    "xlog1py", _binary_impl("xlog1py", _xlog1py_kernel),
    lambda ans, x, y: xlog1py(1.0, y),  # log1p(y)
    lambda ans, x, y: ew.div(x, _nonzero_where_x(x, ew.add(y, 1.0))), xp=_x_times("log1p"), cast="float64",
)


# --- the functions rules and fgrad.scipy.special call ---------------------------------------

erf: Callable[..., Any] = erf_p.bind
erfc: Callable[..., Any] = erfc_p.bind
erf_inv: Callable[..., Any] = erf_inv_p.bind
lgamma: Callable[..., Any] = lgamma_p.bind
digamma: Callable[..., Any] = digamma_p.bind
polygamma: Callable[..., Any] = polygamma_p.bind
logistic: Callable[..., Any] = logistic_p.bind
logit: Callable[..., Any] = logit_p.bind
xlogy: Callable[..., Any] = xlogy_p.bind
xlog1py: Callable[..., Any] = xlog1py_p.bind
entr: Callable[..., Any] = entr_p.bind
