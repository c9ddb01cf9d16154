"""fgrad.scipy.stats: densities and distribution functions of SciPy's common
distributions, differentiable and traceable, without SciPy.

Each distribution is a module-level object, as in scipy.stats and
jax.scipy.stats: `norm`, `t`, `gamma`, `beta`, `expon`, `laplace`, `logistic`,
`cauchy`, `uniform` (continuous: logpdf, pdf, cdf, logcdf, sf, logsf; and
where JAX has them, for norm, expon, logistic, cauchy and uniform, ppf and
isf), `poisson`, `binom`, `bernoulli` (discrete: logpmf, pmf, cdf, logcdf, sf,
logsf; bernoulli also ppf), `multivariate_normal` and `dirichlet` (logpdf,
pdf); the class `gaussian_kde` comes from `stats_kde`. The distributions'
arguments are SciPy's: the point, then the shape parameters, then `loc` and
`scale` (`loc` only for the discrete ones), by position or by keyword,
broadcast together. So are the values at special points: outside the support logpdf is
-inf and pdf 0, cdf is 0 below and 1 above it, and an invalid parameter
(scale <= 0, a shape parameter out of its range, a nan) gives nan.

Everything is written on `fgrad.numpy` and `fgrad.scipy.special`, so the
derivatives, in the point and in the parameters, to any order and in both
modes, come from their rules. Where a formula would see a point outside its
domain (a negative x of the gamma density, an invalid parameter), it is given
a harmless point inside instead and the entry is replaced afterwards, so that
no inf or nan of the unused branch reaches a derivative. ppf and isf at q = 0
and q = 1 are the ends of the support, constants in q (as the tails are
there). The pmfs of the discrete distributions take the derivative of their
formula in k (gammaln's continuation of the factorials), as JAX does; their
cdfs have none in k, and bernoulli's ppf none in q or p.

>>> import fgrad
>>> from fgrad.scipy.stats import norm, poisson
>>> norm.logpdf(0.0)  # -log(2 pi) / 2
np.float64(-0.9189385332046727)
>>> fgrad.grad(norm.logpdf, argnums=1)(1.0, 0.0, 2.0)  # d/d loc of log N(x; loc, scale): (x - loc) / scale**2
np.float64(0.25)
>>> poisson.pmf(2, 3.0)  # 3**2 e**-3 / 2!
np.float64(0.22404180765538775)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from .. import numpy as fnp
from ..core.libraries import library_of_value
from ..numpy.operands import Array, ArrayLike, concrete_value
from . import special as fsp
from .stats_kde import gaussian_kde

__all__ = [
    "norm", "t", "gamma", "beta", "expon", "laplace", "logistic", "cauchy", "uniform",
    "poisson", "binom", "bernoulli", "multivariate_normal", "dirichlet", "gaussian_kde",
]

_LOG_2PI = math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_LOG_HALF = math.log(0.5)

Fn = Callable[..., Any]
F = TypeVar("F", bound=Fn)


def _quietly(method: F) -> F:
    """`method` without NumPy's warnings for the inf and nan of the branches its
    where's discard (SciPy computes only on the valid entries, so it has none)."""

    @functools.wraps(method)
    def quiet(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return method(*args, **kwargs)

    return cast(F, quiet)


def _float(x: ArrayLike) -> Array:
    return fnp.asarray(x, dtype=np.float64)  # as SciPy: float64 whatever the input


def _result(out: Any) -> Array:
    """A 0-d result as a NumPy scalar, as SciPy returns it."""
    if isinstance(out, np.ndarray) and out.ndim == 0:
        return out[()]
    return out


def _and(*masks: Any) -> Array:
    out = masks[0]
    for mask in masks[1:]:
        out = fnp.logical_and(out, mask)
    return out


def _finish(value: Any, inside: Any, valid: Any, y: Any, outside: Any) -> Array:
    """`value` where `inside` (the support, or its interior), `outside` elsewhere,
    and nan where the parameters are invalid or the point is nan."""
    out = fnp.where(inside, value, outside)
    return _result(fnp.where(_and(valid, fnp.logical_not(fnp.isnan(y))), out, np.nan))


class _Distribution:
    """What the continuous and discrete distributions share: SciPy's way of
    taking the shape parameters and loc (and scale) by position or keyword, and
    the standardization of the point with safe parameters."""

    def __init__(self, name: str, shapes: tuple[str, ...], safe_shapes: tuple[float, ...],
                 argcheck: Fn | None, support: Fn, inner: float) -> None:
        self.name = name
        self.shapes = shapes
        self.safe_shapes = safe_shapes
        self.argcheck = argcheck
        self.support = support
        self.inner = inner
        self.keywords: tuple[str, ...] = shapes + ("loc", "scale")
        self.defaults: dict[str, float] = {"loc": 0.0, "scale": 1.0}

    def __repr__(self) -> str:
        return f"<fgrad.scipy.stats.{self.name}>"

    def _parse(self, method: str, args: tuple[Any, ...], kwds: dict[str, Any]) -> list[Any]:
        """The shape parameters, loc (and scale), in order, from SciPy's call forms."""
        names = self.keywords
        if len(args) > len(names):
            raise TypeError(
                f"{self.name}.{method} takes at most {len(names)} parameters after the point "
                f"({', '.join(names)}), got {len(args)}"
            )
        values = dict(zip(names, args))
        for key, value in kwds.items():
            if key not in names:
                raise TypeError(
                    f"{self.name}.{method} got an unexpected keyword argument {key!r}; its parameters "
                    f"are {', '.join(names)}"
                )
            if key in values:
                raise TypeError(f"{self.name}.{method} got multiple values for argument {key!r}")
            values[key] = value
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise TypeError(
                f"{self.name}.{method} is missing the shape parameter(s) {', '.join(missing)}: call it "
                f"as {self.name}.{method}(x, {', '.join(names)})"
            )
        return [_float(values.get(n, self.defaults.get(n))) for n in names]

    def _parameters(self, method: str, args: tuple[Any, ...], kwds: dict[str, Any]
                    ) -> tuple[list[Any], Any, Any, Any]:
        """(shapes, loc, scale, valid): the shape parameters and scale with safe
        values where they are invalid, loc, and where they are valid."""
        params = self._parse(method, args, kwds)
        *shapes, loc, scale = params if "scale" in self.keywords else params + [_float(1.0)]
        # Two masks, so that a constant parameter stays one (no zero tangent for it).
        valid = fnp.greater(scale, 0)
        scale = fnp.where(valid, scale, 1.0)
        if self.argcheck is not None:
            valid_shapes = self.argcheck(*shapes)
            shapes = [fnp.where(valid_shapes, s, safe) for s, safe in zip(shapes, self.safe_shapes)]
            valid = _and(valid, valid_shapes)
        return shapes, loc, scale, valid

    def _prepare(self, method: str, x: ArrayLike, args: tuple[Any, ...], kwds: dict[str, Any]
                 ) -> tuple[Any, list[Any], Any, Any, Any, Any]:
        """(y, shapes, scale, valid, lo, hi): the standardized point (x - loc) / scale,
        the shape parameters and scale with safe values where they are invalid,
        where they are valid, and the ends of the support."""
        shapes, loc, scale, valid = self._parameters(method, args, kwds)
        y = fnp.divide(fnp.subtract(_float(x), loc), scale)
        lo, hi = self.support(*shapes)
        return y, shapes, scale, valid, lo, hi

    @_quietly
    def _quantile(self, method: str, fn: Fn, q: ArrayLike, args: tuple[Any, ...], kwds: dict[str, Any],
                  ends: Fn) -> Array:
        """SciPy's ppf and isf: loc + scale * fn(q) for 0 < q < 1, the ends `ends(lo, hi)`
        of the support (moved by loc and scale, unless infinite) at q == 0 and q == 1,
        and nan for other q, invalid parameters and a nan loc. The ends are constants
        in q (as the tails are at the ends of the support)."""
        shapes, loc, scale, valid = self._parameters(method, args, kwds)
        q = _float(q)
        inside = _and(fnp.less(0, q), fnp.less(q, 1))
        at_zero, at_one = ends(*self.support(*shapes))
        end = fnp.where(fnp.equal(q, 0), at_zero, at_one)
        infinite = fnp.isinf(end)
        y = fnp.where(inside, fn(fnp.where(inside, q, 0.5), *shapes), fnp.where(infinite, 0.0, end))
        moved = fnp.add(fnp.multiply(y, scale), loc)
        value = fnp.where(fnp.logical_or(inside, fnp.logical_not(infinite)), moved, end)
        valid = _and(valid, fnp.logical_not(fnp.isnan(loc)), fnp.less_equal(0, q), fnp.less_equal(q, 1))
        return _result(fnp.where(valid, value, np.nan))

    def _inside(self, mask: Any, y: Any) -> Array:
        return fnp.where(mask, y, self.inner)


def _real_line(*shapes: Any) -> tuple[float, float]:
    return -np.inf, np.inf


def _positive_half_line(*shapes: Any) -> tuple[float, float]:
    return 0.0, np.inf


def _unit_interval(*shapes: Any) -> tuple[float, float]:
    return 0.0, 1.0


class _Continuous(_Distribution):
    """A continuous distribution of scipy.stats, from the functions of its
    standard form (loc 0, scale 1), each taking the standardized point (inside
    the support) and valid shape parameters: `logpdf`, `cdf`, and optionally
    `sf`, `logcdf`, `logsf` (by default 1 - cdf, log(cdf) and log(sf), as in
    SciPy). `inner` is a point inside the support for every valid shape."""

    def __init__(self, name: str, logpdf: Fn, cdf: Fn, *, shapes: tuple[str, ...] = (),
                 safe_shapes: tuple[float, ...] = (), argcheck: Fn | None = None,
                 support: Fn = _real_line, inner: float = 0.0, sf: Fn | None = None,
                 logcdf: Fn | None = None, logsf: Fn | None = None) -> None:
        super().__init__(name, shapes, safe_shapes, argcheck, support, inner)
        self._logpdf = logpdf
        self._cdf = cdf
        sf_ = self._sf = sf if sf is not None else (lambda y, *s: 1.0 - cdf(y, *s))
        self._logcdf = logcdf if logcdf is not None else (lambda y, *s: fnp.log(cdf(y, *s)))
        self._logsf = logsf if logsf is not None else (lambda y, *s: fnp.log(sf_(y, *s)))

    @_quietly
    def logpdf(self, x: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The log of the probability density at x (-inf outside the support)."""
        y, shapes, scale, valid, lo, hi = self._prepare("logpdf", x, args, kwds)
        inside = _and(fnp.less_equal(lo, y), fnp.less_equal(y, hi))
        value = fnp.subtract(self._logpdf(self._inside(inside, y), *shapes), fnp.log(scale))
        return _finish(value, inside, valid, y, -np.inf)

    @_quietly
    def pdf(self, x: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The probability density at x (0 outside the support)."""
        return _result(fnp.exp(self.logpdf(x, *args, **kwds)))

    @_quietly
    def _tail(self, method: str, fn: Fn, x: ArrayLike, args: tuple[Any, ...],
              kwds: dict[str, Any], low: float, high: float) -> Array:
        """`fn` on the interior of the support, `low` at and below it, `high` at and above it."""
        y, shapes, _, valid, lo, hi = self._prepare(method, x, args, kwds)
        inside = _and(fnp.less(lo, y), fnp.less(y, hi))
        value = fn(self._inside(inside, y), *shapes)
        return _finish(value, inside, valid, y, fnp.where(fnp.greater_equal(y, hi), high, low))

    def cdf(self, x: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The distribution function P(X <= x)."""
        return self._tail("cdf", self._cdf, x, args, kwds, 0.0, 1.0)

    def logcdf(self, x: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """log P(X <= x)."""
        return self._tail("logcdf", self._logcdf, x, args, kwds, -np.inf, 0.0)

    def sf(self, x: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The survival function P(X > x) = 1 - cdf(x)."""
        return self._tail("sf", self._sf, x, args, kwds, 1.0, 0.0)

    def logsf(self, x: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """log P(X > x)."""
        return self._tail("logsf", self._logsf, x, args, kwds, 0.0, -np.inf)


class _InvertibleContinuous(_Continuous):
    """A continuous distribution with SciPy's ppf and isf, from the inverses `ppf`
    and `isf` of the standard form's cdf and sf, each taking 0 < q < 1."""

    def __init__(self, name: str, logpdf: Fn, cdf: Fn, *, ppf: Fn, isf: Fn, **kwargs: Any) -> None:
        super().__init__(name, logpdf, cdf, **kwargs)
        self._ppf = ppf
        self._isf = isf

    def ppf(self, q: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The percent point function, the inverse of cdf: the x with P(X <= x) = q."""
        return self._quantile("ppf", self._ppf, q, args, kwds, lambda lo, hi: (lo, hi))

    def isf(self, q: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The inverse survival function, the inverse of sf: the x with P(X > x) = q."""
        return self._quantile("isf", self._isf, q, args, kwds, lambda lo, hi: (hi, lo))


class _Discrete(_Distribution):
    """A discrete distribution of scipy.stats on integers, from the functions of
    its standard form (loc 0): `logpmf` at an integer k of the support, `cdf` and
    `sf` at an integer k with lo <= k < hi (and `logcdf`, `logsf`, by default
    their logs)."""

    def __init__(self, name: str, logpmf: Fn, cdf: Fn, sf: Fn, *, shapes: tuple[str, ...],
                 safe_shapes: tuple[float, ...], argcheck: Fn, support: Fn, logcdf: Fn | None = None,
                 logsf: Fn | None = None) -> None:
        super().__init__(name, shapes, safe_shapes, argcheck, support, 0.0)
        self.keywords = shapes + ("loc",)
        self._logpmf = logpmf
        self._cdf = cdf
        self._sf = sf
        self._logcdf = logcdf if logcdf is not None else (lambda k, *s: fnp.log(cdf(k, *s)))
        self._logsf = logsf if logsf is not None else (lambda k, *s: fnp.log(sf(k, *s)))

    @_quietly
    def logpmf(self, k: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The log of the probability of k (-inf off the support or at a non-integer k)."""
        y, shapes, _, valid, lo, hi = self._prepare("logpmf", k, args, kwds)
        inside = _and(fnp.less_equal(lo, y), fnp.less_equal(y, hi), fnp.equal(y, fnp.floor(y)))
        value = self._logpmf(self._inside(inside, y), *shapes)
        return _finish(value, inside, valid, y, -np.inf)

    @_quietly
    def pmf(self, k: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The probability of k."""
        return _result(fnp.exp(self.logpmf(k, *args, **kwds)))

    @_quietly
    def _tail(self, method: str, fn: Fn, k: ArrayLike, args: tuple[Any, ...],
              kwds: dict[str, Any], low: float, high: float) -> Array:
        """`fn` at floor(k) for lo <= k < hi, `low` below, `high` at and above hi."""
        y, shapes, _, valid, lo, hi = self._prepare(method, k, args, kwds)
        inside = _and(fnp.less_equal(lo, y), fnp.less(y, hi))
        value = fn(fnp.floor(self._inside(inside, y)), *shapes)
        return _finish(value, inside, valid, y, fnp.where(fnp.greater_equal(y, hi), high, low))

    def cdf(self, k: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The distribution function P(K <= k)."""
        return self._tail("cdf", self._cdf, k, args, kwds, 0.0, 1.0)

    def logcdf(self, k: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """log P(K <= k)."""
        return self._tail("logcdf", self._logcdf, k, args, kwds, -np.inf, 0.0)

    def sf(self, k: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The survival function P(K > k)."""
        return self._tail("sf", self._sf, k, args, kwds, 1.0, 0.0)

    def logsf(self, k: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """log P(K > k)."""
        return self._tail("logsf", self._logsf, k, args, kwds, 0.0, -np.inf)


class _InvertibleDiscrete(_Discrete):
    """A discrete distribution with SciPy's ppf, from `ppf` of its standard form:
    the least k with cdf(k) >= q, for 0 < q < 1 (and lo - 1 at q == 0, SciPy's
    convention)."""

    def __init__(self, name: str, logpmf: Fn, cdf: Fn, sf: Fn, *, ppf: Fn, **kwargs: Any) -> None:
        super().__init__(name, logpmf, cdf, sf, **kwargs)
        self._ppf = ppf

    def ppf(self, q: ArrayLike, *args: ArrayLike, **kwds: ArrayLike) -> Array:
        """The percent point function: the least k with P(K <= k) >= q (its derivative is 0)."""
        return self._quantile("ppf", self._ppf, q, args, kwds, lambda lo, hi: (fnp.subtract(lo, 1.0), hi))


# --- the continuous distributions ---------------------------------------------------------


def _norm_logpdf(y: Any) -> Array:
    return -0.5 * fnp.square(y) - 0.5 * _LOG_2PI


norm = _InvertibleContinuous(
    "norm", _norm_logpdf,
    cdf=fsp.ndtr, sf=lambda y: fsp.ndtr(-y), logcdf=fsp.log_ndtr, logsf=lambda y: fsp.log_ndtr(-y),
    ppf=fsp.ndtri, isf=lambda q: -fsp.ndtri(q),
)
norm.__doc__ = """The normal distribution N(loc, scale**2): norm.logpdf(x, loc=0, scale=1), ...

>>> norm.cdf(1.0, loc=1.0, scale=3.0)
np.float64(0.5)
>>> norm.ppf(0.5, loc=2.0)
np.float64(2.0)
"""


def _log_poch_half(a: Any) -> Array:
    """log(Gamma(a + 1/2) / Gamma(a)) for a > 0: for large a by its asymptotic
    series, where the difference of gammaln would lose the digits."""
    large = fnp.greater(a, 100.0)
    a_small = fnp.where(large, 1.0, a)
    a_large = fnp.where(large, a, 100.0)
    inv = 1 / a_large
    inv2 = fnp.square(inv)
    # 1/2 log a - 1/(8a) + 1/(192 a^3) - 1/(640 a^5) + 17/(14336 a^7), from the Bernoulli polynomials
    powers = -1 / 8 + fnp.multiply(inv2, 1 / 192 - fnp.multiply(inv2, 1 / 640 - inv2 * 17 / 14336))
    series = fnp.add(0.5 * fnp.log(a_large), fnp.multiply(inv, powers))
    return fnp.where(large, series, fnp.subtract(fsp.gammaln(a_small + 0.5), fsp.gammaln(a_small)))


def _t_logpdf(y: Any, df: Any) -> Array:
    infinite = fnp.isinf(df)
    d = fnp.where(infinite, 1.0, df)
    normalization = fnp.subtract(_log_poch_half(0.5 * d), 0.5 * (fnp.log(d) + _LOG_PI))
    finite = fnp.subtract(normalization, fnp.multiply(0.5 * (d + 1), fnp.log1p(fnp.divide(fnp.square(y), d))))
    return fnp.where(infinite, _norm_logpdf(y), finite)


def _t_cdf(y: Any, df: Any) -> Array:
    """SciPy's stdtr (as Boost computes it): with r = y / sqrt(df), P(0 < T < |y|)
    = I_w(1/2, df/2) / 2 for w = r**2 / (1 + r**2), and where that is over 1/4 the
    tail P(T < -|y|) = I_z(df/2, 1/2) / 2 for z = 1 / (1 + r**2) instead, which
    keeps the digits of small tails; the normal's for df = inf. At y == 0 the
    line 1/2 + pdf(0) y, whose derivatives there are the cdf's (betainc's in w
    is infinite at 0, times a derivative of r**2 that is 0)."""
    infinite = fnp.isinf(df)
    d = fnp.where(infinite, 1.0, df)
    zero = fnp.equal(y, 0)
    y_ = fnp.where(zero, 1.0, y)
    r2 = fnp.divide(fnp.square(y_), d)
    half_middle = 0.5 * fsp.betainc(0.5, 0.5 * d, 1.0 / (1.0 + 1.0 / r2))
    lower = fnp.where(fnp.less(half_middle, 0.25), 0.5 - half_middle,
                      0.5 * fsp.betainc(0.5 * d, 0.5, 1.0 / (1.0 + r2)))
    cdf = fnp.where(fnp.less(y_, 0), lower, 1.0 - lower)
    line = 0.5 + fnp.multiply(fnp.exp(_t_logpdf(0.0, d)), y)
    return fnp.where(infinite, fsp.ndtr(y), fnp.where(zero, line, cdf))


t = _Continuous(
    "t", _t_logpdf, shapes=("df",), safe_shapes=(1.0,), argcheck=lambda df: fnp.greater(df, 0),
    cdf=_t_cdf, sf=lambda y, df: _t_cdf(-y, df),
)
t.__doc__ = """Student's t distribution with df degrees of freedom (df = inf: the normal):
t.logpdf(x, df, loc=0, scale=1), ... For a very large finite df the cdf and sf keep
about 16 - log10(df) digits (SciPy's, through the complement of betainc, all of them).

>>> t.pdf(0.0, 1.0)  # the Cauchy density at 0, 1/pi
np.float64(0.3183098861837907)
"""


gamma = _Continuous(
    "gamma", lambda y, a: fnp.subtract(fnp.subtract(fsp.xlogy(a - 1, y), y), fsp.gammaln(a)),
    shapes=("a",), safe_shapes=(1.0,), argcheck=lambda a: fnp.greater(a, 0),
    support=_positive_half_line, inner=1.0,
    cdf=lambda y, a: fsp.gammainc(a, y), sf=lambda y, a: fsp.gammaincc(a, y),
)
gamma.__doc__ = """The gamma distribution with shape a: gamma.logpdf(x, a, loc=0, scale=1), ...

>>> gamma.logpdf(1.0, 1.0)  # the exponential density at 1: e**-1
np.float64(-1.0)
"""


beta = _Continuous(
    "beta",
    lambda y, a, b: fnp.subtract(fnp.add(fsp.xlog1py(b - 1, -y), fsp.xlogy(a - 1, y)), fsp.betaln(a, b)),
    shapes=("a", "b"), safe_shapes=(1.0, 1.0),
    argcheck=lambda a, b: _and(fnp.greater(a, 0), fnp.greater(b, 0)),
    support=_unit_interval, inner=0.5,
    cdf=lambda y, a, b: fsp.betainc(a, b, y), sf=lambda y, a, b: fsp.betainc(b, a, 1.0 - y),
)
beta.__doc__ = """The beta distribution on [0, 1] with shapes a, b: beta.logpdf(x, a, b, loc=0, scale=1), ...

>>> beta.pdf(0.5, 2.0, 2.0)  # 6 x (1 - x)
np.float64(1.5)
"""


expon = _InvertibleContinuous(
    "expon", lambda y: -y, support=_positive_half_line, inner=1.0,
    cdf=lambda y: -fnp.expm1(-y), logcdf=lambda y: fnp.log1p(-fnp.exp(-y)), sf=lambda y: fnp.exp(-y),
    logsf=lambda y: -y, ppf=lambda q: -fnp.log1p(-q), isf=lambda q: -fnp.log(q),
)
expon.__doc__ = """The exponential distribution with rate 1/scale: expon.logpdf(x, loc=0, scale=1), ...

>>> expon.sf(2.0, scale=2.0)  # e**-1
np.float64(0.36787944117144233)
"""


def _laplace_cdf(y: Any) -> Array:
    # Each side with its own exponent (not exp(-|y|)), so that the derivative at 0 is the density's 1/2.
    right = fnp.greater(y, 0)
    upper = 1.0 - 0.5 * fnp.exp(-fnp.where(right, y, 0.0))
    return fnp.where(right, upper, 0.5 * fnp.exp(fnp.where(right, 0.0, y)))


def _laplace_logcdf(y: Any) -> Array:
    right = fnp.greater(y, 0)
    upper = fnp.log1p(-0.5 * fnp.exp(-fnp.where(right, y, 0.0)))
    return fnp.where(right, upper, _LOG_HALF + fnp.where(right, 0.0, y))


laplace = _Continuous(
    "laplace", lambda y: _LOG_HALF - fnp.abs(y),
    cdf=_laplace_cdf, sf=lambda y: _laplace_cdf(-y),
    logcdf=_laplace_logcdf, logsf=lambda y: _laplace_logcdf(-y),
)
laplace.__doc__ = """The Laplace (double exponential) distribution: laplace.logpdf(x, loc=0, scale=1), ...
Its logpdf is log(1/2) - |x| also where SciPy's, log(pdf), underflows to -inf.

>>> laplace.cdf(0.0)
np.float64(0.5)
"""


# Written on logaddexp rather than on |y| as SciPy's, since |y| would make the
# derivatives of these smooth functions wrong at 0 (the second one of logpdf, the first of logcdf).


def _log_expit(y: Any) -> Array:
    return -fnp.logaddexp(0.0, -y)


def _logistic_logpdf(y: Any) -> Array:
    return -(fnp.logaddexp(0.0, y) + fnp.logaddexp(0.0, -y))


logistic = _InvertibleContinuous(
    "logistic", _logistic_logpdf,
    cdf=fsp.expit, sf=lambda y: fsp.expit(-y), logcdf=_log_expit, logsf=lambda y: _log_expit(-y),
    ppf=fsp.logit, isf=lambda q: -fsp.logit(q),
)
logistic.__doc__ = """The logistic distribution: logistic.logpdf(x, loc=0, scale=1), ...

>>> logistic.pdf(0.0)
np.float64(0.25)
"""


def _cauchy_logpdf(y: Any) -> Array:
    # -log(pi) - log1p(y**2), as -log(pi) - 2 log|y| - log1p(1/y**2) for |y| >= 1 (no overflow).
    small = fnp.less(fnp.abs(y), 1.0)
    near = fnp.where(small, y, 0.0)
    far = fnp.where(small, 1.0, y)
    far_part = fnp.add(2.0 * fnp.log(fnp.abs(far)), fnp.log1p(fnp.square(1.0 / far)))
    return -_LOG_PI - fnp.where(small, fnp.log1p(fnp.square(near)), far_part)


def _cauchy_ppf(q: Any) -> Array:
    """tan(pi (q - 1/2)): in the tails as -1 / tan(pi p) for p = q or q - 1 (SciPy's,
    Boost's), which keeps the digits of a small q or 1 - q; in the middle as
    tan(pi (q - 1/2)) itself, exact in q - 1/2 (Boost's loses digits near 1/2)."""
    middle = _and(fnp.less_equal(0.25, q), fnp.less_equal(q, 0.75))
    p = fnp.where(middle, 0.125, fnp.where(fnp.greater(q, 0.5), fnp.subtract(q, 1.0), q))
    tail = -1.0 / fnp.tan(np.pi * p)
    return fnp.where(middle, fnp.tan(np.pi * fnp.subtract(fnp.where(middle, q, 0.5), 0.5)), tail)


cauchy = _InvertibleContinuous(
    "cauchy", _cauchy_logpdf,
    cdf=lambda y: fnp.arctan2(1.0, -y) / np.pi, sf=lambda y: fnp.arctan2(1.0, y) / np.pi,
    ppf=_cauchy_ppf, isf=lambda q: -_cauchy_ppf(q),
)
cauchy.__doc__ = """The Cauchy distribution: cauchy.logpdf(x, loc=0, scale=1), ...

>>> cauchy.cdf(1.0)
np.float64(0.75)
"""


uniform = _InvertibleContinuous(
    "uniform", lambda y: fnp.zeros_like(y), support=_unit_interval, inner=0.5,
    cdf=lambda y: y, sf=lambda y: 1.0 - y, logcdf=fnp.log, logsf=lambda y: fnp.log1p(-y),
    ppf=lambda q: q, isf=lambda q: 1.0 - q,
)
uniform.__doc__ = """The uniform distribution on [loc, loc + scale]: uniform.logpdf(x, loc=0, scale=1), ...

>>> uniform.pdf([0.5, 1.5], loc=0.0, scale=2.0)
array([0.5, 0.5])
"""


# --- the discrete distributions ------------------------------------------------------------


poisson = _Discrete(
    "poisson", lambda k, mu: fnp.subtract(fnp.subtract(fsp.xlogy(k, mu), fsp.gammaln(k + 1)), mu),
    shapes=("mu",), safe_shapes=(1.0,), argcheck=lambda mu: fnp.greater_equal(mu, 0),
    support=_positive_half_line,
    cdf=lambda k, mu: fsp.gammaincc(k + 1, mu), sf=lambda k, mu: fsp.gammainc(k + 1, mu),
)
poisson.__doc__ = """The Poisson distribution with mean mu: poisson.logpmf(k, mu, loc=0), ...

>>> poisson.logpmf(0, 2.0)
np.float64(-2.0)
"""


def _binom_argcheck(n: Any, p: Any) -> Array:
    return _and(fnp.greater_equal(n, 0), fnp.equal(n, fnp.floor(n)), fnp.greater_equal(p, 0),
                fnp.less_equal(p, 1))


def _binom_logpmf(k: Any, n: Any, p: Any) -> Array:
    n_minus_k = fnp.subtract(n, k)
    log_choose = fnp.subtract(fsp.gammaln(n + 1), fnp.add(fsp.gammaln(k + 1), fsp.gammaln(n_minus_k + 1)))
    return fnp.add(fnp.add(log_choose, fsp.xlogy(k, p)), fsp.xlog1py(n_minus_k, -p))


binom = _Discrete(
    "binom", _binom_logpmf, shapes=("n", "p"), safe_shapes=(1.0, 0.5), argcheck=_binom_argcheck,
    support=lambda n, p: (0.0, n),
    cdf=lambda k, n, p: fsp.betainc(fnp.subtract(n, k), k + 1, 1.0 - p),
    sf=lambda k, n, p: fsp.betainc(k + 1, fnp.subtract(n, k), p),
)
binom.__doc__ = """The binomial distribution of n trials with success probability p:
binom.logpmf(k, n, p, loc=0), ... (n an integer; its derivative is that of gammaln's
continuation of the factorials).

>>> binom.pmf(1, 2, 0.5)
np.float64(0.5)
"""


bernoulli = _InvertibleDiscrete(
    "bernoulli", lambda k, p: fnp.add(fsp.xlogy(k, p), fsp.xlog1py(1 - k, -p)),
    ppf=lambda q, p: fnp.where(fnp.less_equal(q, 1.0 - p), 0.0, 1.0),
    shapes=("p",), safe_shapes=(0.5,), argcheck=lambda p: _and(fnp.greater_equal(p, 0), fnp.less_equal(p, 1)),
    support=lambda p: (0.0, 1.0),
    cdf=lambda k, p: 1.0 - p, sf=lambda k, p: p,
    logcdf=lambda k, p: fnp.log1p(-p), logsf=lambda k, p: fnp.log(p),
)
bernoulli.__doc__ = """The Bernoulli distribution with success probability p:
bernoulli.logpmf(k, p, loc=0), ...

>>> bernoulli.pmf([0, 1], 0.25)
array([0.75, 0.25])
"""


# --- multivariate: the normal and the Dirichlet distribution ---------------------------------


class _MultivariateNormal:
    """scipy.stats.multivariate_normal: logpdf(x, mean=None, cov=1, allow_singular=False)
    and pdf. `x` has the components on its last axis; `mean` is a vector (None:
    zeros), `cov` a matrix, a vector (the diagonal) or a scalar (times the
    identity), with SciPy's shapes, errors and squeezed results. A positive
    definite `cov` goes through its Cholesky factor. With allow_singular=True a
    singular one, or one whose value is not known (under jit or vmap), goes
    through its eigendecomposition with SciPy's cutoff for small eigenvalues
    (pseudo-determinant and pseudo-inverse, -inf off the support); there the
    derivative in `cov` needs distinct eigenvalues (eigh's). `cov` is read as the
    symmetric (cov + cov^T) / 2, as JAX reads it, so the gradient in `cov` is
    symmetric, (S^-1 d d^T S^-1 - S^-1) / 2 for d = x - mean; SciPy reads the lower
    triangle, the same for a symmetric cov.

    >>> multivariate_normal.logpdf([0.0, 0.0], [0.0, 0.0], [1.0, 1.0])  # -log(2 pi)
    np.float64(-1.8378770664093453)
    """

    def __repr__(self) -> str:
        return "<fgrad.scipy.stats.multivariate_normal>"

    @_quietly
    def logpdf(self, x: ArrayLike, mean: ArrayLike | None = None, cov: ArrayLike = 1,
               allow_singular: bool = False) -> Array:
        """The log of the density at x (a vector, or points on the leading axes)."""
        dim, mean, cov = _mvn_parameters(mean, cov)
        x = _mvn_quantiles(_float(x), dim)
        dev = fnp.subtract(x, mean)
        singular = _check_psd(cov, allow_singular)
        # A cov known to be nonsingular takes the Cholesky route even when singular ones are allowed:
        # the same value, and a derivative also where eigenvalues repeat (eigh's has none there).
        logpdf = _mvn_logpdf_psd if allow_singular and singular is not False else _mvn_logpdf_pd
        return _squeeze(logpdf(dev, cov, dim))

    @_quietly
    def pdf(self, x: ArrayLike, mean: ArrayLike | None = None, cov: ArrayLike = 1,
            allow_singular: bool = False) -> Array:
        """The density at x."""
        return _result(fnp.exp(self.logpdf(x, mean, cov, allow_singular)))


def _squeeze(out: Any) -> Array:
    return _result(fnp.squeeze(out))


def _mvn_parameters(mean: ArrayLike | None, cov: ArrayLike) -> tuple[int, Array, Array]:
    """SciPy's _process_parameters_psd: the dimension, mean as a vector, cov as a matrix."""
    cov = _float(cov)
    if mean is None:
        dim = 1 if fnp.ndim(cov) < 2 else fnp.shape(cov)[0]
        mean = fnp.zeros(dim)
    else:
        mean = _float(mean)
        dim = int(fnp.size(mean))
    if dim == 1:
        mean = fnp.reshape(mean, (1,))
        cov = fnp.reshape(cov, (1, 1))
    if fnp.ndim(mean) != 1 or fnp.shape(mean)[0] != dim:
        raise ValueError(f"Array 'mean' must be a vector of length {dim}.")
    if fnp.ndim(cov) == 0:
        cov = fnp.multiply(cov, fnp.eye(dim))
    elif fnp.ndim(cov) == 1:
        cov = fnp.diag(cov)
    elif fnp.ndim(cov) == 2 and fnp.shape(cov) != (dim, dim):
        rows, cols = fnp.shape(cov)
        if rows != cols:
            raise ValueError(
                f"Array 'cov' must be square if it is two dimensional, but cov.shape = {fnp.shape(cov)}."
            )
        raise ValueError(
            f"Dimension mismatch: array 'cov' is of shape {fnp.shape(cov)}, but 'mean' is a vector of "
            f"length {dim}."
        )
    elif fnp.ndim(cov) > 2:
        raise ValueError(f"Array 'cov' must be at most two-dimensional, but cov.ndim = {fnp.ndim(cov)}")
    if fnp.shape(cov)[0] != dim:  # a vector cov of another length
        raise ValueError(
            f"Dimension mismatch: array 'cov' is of shape {fnp.shape(cov)}, but 'mean' is a vector of "
            f"length {dim}."
        )
    if dim > 1:
        # The density is a function of a symmetric matrix: read as (cov + cov^T) / 2 (the same value for
        # a symmetric cov), its gradient is the symmetric -(S^-1 - S^-1 d d^T S^-1) / 2, as JAX's, where
        # cholesky or eigh alone would give one read from the lower triangle, which a gradient step
        # would turn into an unsymmetric cov.
        cov = fnp.multiply(0.5, fnp.add(cov, fnp.transpose(cov)))
    return dim, mean, cov


def _mvn_quantiles(x: Any, dim: int) -> Array:
    """SciPy's _process_quantiles: a 0-d x is one point of dimension 1, a vector
    one point (or, for dim 1, a list of points)."""
    if fnp.ndim(x) == 0:
        return fnp.reshape(x, (1,))
    if fnp.ndim(x) == 1:
        return fnp.reshape(x, (-1, 1) if dim == 1 else (1, -1))
    return x


def _psd_cutoff(eigenvalues: Any) -> Any:
    """SciPy's threshold below which an eigenvalue of cov counts as zero."""
    return 1e6 * np.finfo(np.float64).eps * fnp.max(fnp.abs(eigenvalues))


def _known_value(x: Any) -> Any:
    """`x`'s value for SciPy's checks, where it is known (None under jit or
    vmap), and on NumPy: another library's arrays go unchecked, as under jit,
    since fgrad never converts them (Dask's would be computed)."""
    value = concrete_value(x, None)
    return None if library_of_value(value) is not None else value


def _check_psd(cov: Any, allow_singular: bool) -> bool | None:
    """Whether cov is singular, with SciPy's errors for one that is not positive
    (semi)definite, where its value is known (None where it is not)."""
    value = _known_value(cov)
    if value is None:
        return None
    s = np.linalg.eigvalsh(np.asarray(value))
    eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))  # _psd_cutoff, on NumPy: jit stages fgrad.numpy
    if np.min(s) < -eps:
        raise ValueError("The input matrix must be symmetric positive semidefinite.")
    singular = bool(np.any(s <= eps))
    if singular and not allow_singular:
        raise np.linalg.LinAlgError(
            "When `allow_singular is False`, the input matrix must be symmetric positive definite."
        )
    return singular


def _mvn_logpdf_pd(dev: Any, cov: Any, dim: int) -> Array:
    chol = fnp.linalg.cholesky(cov)
    points = fnp.reshape(dev, (-1, dim))
    z = fnp.linalg.solve(chol, fnp.transpose(points))  # (dim, n): L z = dev
    maha = fnp.reshape(fnp.sum(fnp.square(z), axis=0), fnp.shape(dev)[:-1])
    log_det = 2.0 * fnp.sum(fnp.log(fnp.diagonal(chol)))
    return -0.5 * fnp.add(dim * _LOG_2PI + log_det, maha)


def _mvn_logpdf_psd(dev: Any, cov: Any, dim: int) -> Array:
    s, u = fnp.linalg.eigh(cov)
    eps = _psd_cutoff(s)
    kept = fnp.greater(s, eps)
    s_kept = fnp.where(kept, s, 1.0)
    inv_sqrt = fnp.where(kept, 1.0 / fnp.sqrt(s_kept), 0.0)
    maha = fnp.sum(fnp.square(fnp.matmul(dev, fnp.multiply(u, inv_sqrt))), axis=-1)
    log_pdet = fnp.sum(fnp.where(kept, fnp.log(s_kept), 0.0))
    rank = fnp.sum(kept)
    out = -0.5 * fnp.add(fnp.add(rank * _LOG_2PI, log_pdet), maha)
    # Off the support (dev has a part along the null space) the density is 0.
    null_part = fnp.linalg.norm(fnp.matmul(dev, fnp.multiply(u, fnp.logical_not(kept))), axis=-1)
    return fnp.where(fnp.less(null_part, 1e3 * eps), out, -np.inf)


multivariate_normal = _MultivariateNormal()


class _Dirichlet:
    """scipy.stats.dirichlet: logpdf(x, alpha) and pdf. `alpha` is a vector of k
    positive concentrations; `x` has the k components on its FIRST axis (as in
    SciPy's implementation), or k - 1 of them, the last being 1 minus their sum.
    Where x and alpha are known, SciPy's errors for points off the simplex and
    invalid alpha; where they are not (under jit or vmap), -inf and nan instead.

    >>> dirichlet.pdf([0.2, 0.3, 0.5], [1.0, 1.0, 1.0])  # uniform on the simplex: Gamma(3)
    np.float64(2.0)
    """

    def __repr__(self) -> str:
        return "<fgrad.scipy.stats.dirichlet>"

    @_quietly
    def logpdf(self, x: ArrayLike, alpha: ArrayLike) -> Array:
        """The log of the density at x."""
        alpha = _float(alpha)
        _check_dirichlet_alpha(alpha)
        x = _dirichlet_points(_float(x), alpha)
        k = fnp.shape(alpha)[0]
        log_b = fnp.subtract(fnp.sum(fsp.gammaln(alpha)), fsp.gammaln(fnp.sum(alpha)))
        a = fnp.reshape(alpha, (k,) + (1,) * (fnp.ndim(x) - 1))
        out = fnp.subtract(fnp.sum(fsp.xlogy(a - 1, x), axis=0), log_b)
        # Where the checks could not see the values (jit, vmap): -inf off the simplex, nan for an alpha <= 0.
        on_simplex = _and(fnp.all(fnp.greater_equal(x, 0), axis=0),
                          fnp.less_equal(fnp.abs(fnp.sum(x, axis=0) - 1.0), 10e-10))
        out = fnp.where(on_simplex, out, -np.inf)
        return _squeeze(fnp.where(fnp.all(fnp.greater(alpha, 0)), out, np.nan))

    @_quietly
    def pdf(self, x: ArrayLike, alpha: ArrayLike) -> Array:
        """The density at x."""
        return _result(fnp.exp(self.logpdf(x, alpha)))


def _check_dirichlet_alpha(alpha: Any) -> None:
    value = _known_value(alpha)
    if value is not None and np.min(value) <= 0:
        raise ValueError("All parameters must be greater than 0")
    if fnp.ndim(alpha) != 1:
        raise ValueError(f"Parameter vector 'a' must be one dimensional, but a.shape = {fnp.shape(alpha)}.")


def _dirichlet_points(x: Any, alpha: Any) -> Array:
    """SciPy's _dirichlet_check_input: x with all k components, and its errors."""
    k = fnp.shape(alpha)[0]
    n = fnp.shape(x)[0] if fnp.ndim(x) else None
    if n is None or (n + 1 != k and n != k):
        raise ValueError(
            "Vector 'x' must have either the same number of entries as, or one entry fewer than, "
            f"parameter vector 'a', but alpha.shape = {fnp.shape(alpha)} and x.shape = {fnp.shape(x)}."
        )
    if n != k:
        if fnp.ndim(x) > 2:
            raise ValueError(
                "The input must be one dimensional or a two dimensional matrix containing the entries."
            )
        x = fnp.concatenate([x, 1 - fnp.sum(x, axis=0, keepdims=True)], axis=0)
    value, alpha_value = _known_value(x), _known_value(alpha)
    if value is None:
        return x
    value = np.asarray(value)
    if np.min(value) < 0:
        raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
    if np.max(value) > 1:
        raise ValueError("Each entry in 'x' must be smaller or equal one.")
    if alpha_value is not None:
        below_one = np.reshape(np.asarray(alpha_value) < 1, (k,) + (1,) * (value.ndim - 1))
        if np.any((value == 0) & below_one):
            raise ValueError("Each entry in 'x' must be greater than zero if its alpha is less than one.")
    if np.any(np.abs(np.sum(value, 0) - 1.0) > 10e-10):
        raise ValueError(
            f"The input vector 'x' must lie within the normal simplex. but np.sum(x, 0) = {np.sum(value, 0)}."
        )
    return x


dirichlet = _Dirichlet()
