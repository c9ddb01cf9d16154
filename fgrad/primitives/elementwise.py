"""Elementwise primitives: NumPy's ufuncs, with NumPy's broadcasting and dtype
promotion (NEP 50: a Python scalar does not widen an array's dtype).

Each member of the family is one line: a name, its function and the
derivative of its output with respect to each argument, as a function of the
primal output and inputs (`JVPFactors`: HIPS autograd's table style, read
next to the calculus). The function is named as the Array API names it
("sin", "atan2"): NumPy's of that name computes it on NumPy's arrays, any
other namespace's on its arrays (`elementwise`). A function the standard
lacks is NumPy's, composed of the standard's for other namespaces. Linear
members carry their transpose on the next line. Members without factors
(comparisons, rounding, logical and bitwise operations, floor_divide) have no
derivative. Shapes and dtypes are worked out once per combination of input
avals (and params) and cached (`cached_aval`). All share one batch rule:
NumPy broadcasting with the batch axis in front.

Where a function has a kink or a singularity, the derivative there follows
JAX: abs'(0) = sign'(x) = 0, ties of maximum/minimum/clip share the derivative
equally, fmax/fmin select one argument as jnp.fmax does (at a tie, the
second), sqrt'(0) = inf, and the derivative of 0**y in x (y == 0) is 0.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, cached_aval, get_aval
from ..core.libraries import cast, library_of_namespace, numpy_blockwise
from ..core.rules import (
    JVPFactors,
    UndefinedPrimal,
    blockwise,
    commutative,
    emit_rules,
    float_rules,
    jvp_rules,
    out_rules,
    transpose_rules,
    unroll_rules,
)
from ..core.trace import Primitive
from ..ir.unroll import elementwise_rule
from . import batching
from . import derivatives as d

__all__ = ["elementwise", "PYTHON_SCALAR_TYPES"]

Factor = Callable[..., Any] | int | float | None

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _dtype_sample(aval: ShapedArray) -> Any:
    # A Python scalar stands for a weak type, an empty array for a strong one:
    # running the NumPy function on these gives NumPy's result dtype.
    return aval.dtype.type(0).item() if aval.weak_type else np.empty(0, aval.dtype)


def _compute_aval(
    np_fn: Callable[..., Any], avals: tuple[ShapedArray, ...], params: dict[str, Any],
    keeps_weak: bool = False,
) -> ShapedArray:
    shape = broadcast_shapes(*(a.shape for a in avals))
    weak = all(a.weak_type for a in avals)
    samples = [np.empty(0, a.dtype) for a in avals] if weak else [_dtype_sample(a) for a in avals]
    with np.errstate(all="ignore"):
        dtype = np.result_type(np_fn(*samples, **params))
    # Python's arithmetic on Python numbers gives a Python number, weakly typed as
    # they are (JAX's rule too: `x * (n - 1)` keeps a float32 x's dtype), where the
    # implementation makes one (`keeps_weak`); a comparison's bool is strong.
    return ShapedArray(shape, dtype, keeps_weak and weak and dtype.kind != "b")


def _elementwise_aval(np_fn: Callable[..., Any], keeps_weak: bool = False) -> Callable[..., ShapedArray]:
    def compute(*avals: ShapedArray, **params: Any) -> ShapedArray:
        return _compute_aval(np_fn, avals, params, keeps_weak)

    return cached_aval(compute)


#: Python's number types. NumPy types them weakly (NEP 50: a Python float does
#: not widen a float32 array; bool, the lowest kind, widens nothing either),
#: and their own operators differ from NumPy's ufuncs (1.0 / 0.0 raises).
PYTHON_SCALAR_TYPES = frozenset({bool, int, float, complex})


def _operator_impl(op: Callable[..., Any], np_fn: Callable[..., Any]) -> Callable[..., Any]:
    """NumPy's binary ufunc through Python's operator: the same result, but NumPy
    scalars take their fast scalar path (about 10x faster than a ufunc call).
    Two Python scalars go to the ufunc, so that 1.0 / 0.0 is inf, not an error,
    and give a Python number (weakly typed, as the aval says: `keeps_weak`)
    unless the result is a bool."""

    def impl(x: Any, y: Any) -> Any:
        if type(x) in PYTHON_SCALAR_TYPES and type(y) in PYTHON_SCALAR_TYPES:
            out = np_fn(x, y)
            return out if out.dtype.kind == "b" else out.item()
        return op(x, y)

    impl.__name__ = np_fn.__name__
    impl.keeps_weak = True  # type: ignore[attr-defined]
    return impl


def elementwise(
    name: str, fn: str | Callable[..., Any], *factors: Factor, impl: Callable[..., Any] | None = None,
    xp: Callable[..., Any] | None = None, cast: str = "out",
) -> Primitive:
    """A primitive applying `fn` elementwise, with the derivative of its output
    with respect to each argument (see `JVPFactors`). With no factors the
    output has no derivative (comparisons, sign, rounding).

    `fn` is the name of the Array API's function (a string: "sin", "atan2"),
    which is NumPy's of that name on NumPy's arrays and the namespace's on any
    other's: one implementation. Or it is a NumPy function the standard lacks
    (np.cbrt, or SciPy's special functions), and `xp(xp, *operands, **params)`
    composes it from the standard's functions for other namespaces; without
    `xp`, a library computing block by block (Dask) runs `fn` on each block.
    Operands reach the namespace's function cast to the result's dtype
    (`cast="out"`), to their common dtype ("common": comparisons), kept in
    their own ("own"), in float64 with the result cast to its dtype ("float64":
    SciPy's functions), or as they are ("none": `xp` casts them itself). `impl`
    replaces NumPy's function for evaluation when it computes the same thing
    faster."""
    np_fn = getattr(np, fn) if isinstance(fn, str) else fn
    abstract_eval = _elementwise_aval(np_fn, getattr(impl, "keeps_weak", False))
    if isinstance(fn, str):
        xp_impl = _on_namespace(_standard(fn), cast, abstract_eval)
    elif xp is not None:
        xp_impl = _on_namespace(xp, cast, abstract_eval)
    else:
        xp_impl = numpy_blockwise(name, np_fn, abstract_eval)
    prim = Primitive(name, xp_impl, abstract_eval, numpy=impl or np_fn)
    jvp_rules[prim] = JVPFactors(factors or (None,) * 3)
    batching.defbatch_elementwise(prim)
    unroll_rules[prim] = elementwise_rule(prim)
    if isinstance(np_fn, np.ufunc):  # `impl`, if given, computes what the ufunc does
        out_rules[prim] = np_fn
        blockwise.add(prim)
    return prim


def _standard(name: str) -> Callable[..., Any]:
    """The namespace's function `name`."""

    def apply(xp: Any, *args: Any, **params: Any) -> Any:
        return getattr(xp, name)(*args, **params)

    apply.__name__ = name
    return apply


def _on_namespace(
    fn: Callable[..., Any], how: str, abstract_eval: Callable[..., ShapedArray]
) -> Callable[..., Any]:
    """`fn(xp, *operands, **params)` on operands cast as `elementwise` says
    (`how`): fgrad's avals follow NumPy's promotion, which the standard leaves
    undefined across kinds (an int array plus a float array), so operands are
    first cast to the dtype NumPy would compute in, and the result has the
    aval's dtype."""

    def impl(xp: Any, *args: Any, **params: Any) -> Any:
        if how == "none":
            return fn(xp, *args, **params)
        avals = [get_aval(a) for a in args]
        if how == "float64":  # computed in float64 as the NumPy function does, then in its dtype
            out = fn(xp, *(cast(xp, a, _F64) for a in args), **params)
            return cast(xp, out, abstract_eval(*avals, **params).dtype)
        if how == "out":
            dtypes = [abstract_eval(*avals, **params).dtype] * len(args)
        elif how == "common":
            dtypes = [np.result_type(*(_dtype_sample(a) for a in avals))] * len(args)
        else:
            dtypes = [a.dtype for a in avals]
        return fn(xp, *(cast(xp, a, dt) for a, dt in zip(args, dtypes)), **params)

    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


# --- NumPy's functions that the standard lacks, composed of its functions -------------
# Where the standard's function differs from NumPy's at some values (nan in
# heaviside, -0.0 in fmod, integers in reciprocal and signbit), the
# composition gives NumPy's.

def _is_real_floating(xp: Any, x: Any) -> bool:
    return bool(xp.isdtype(x.dtype, "real floating"))


def _is_complex_floating(xp: Any, x: Any) -> bool:
    return bool(xp.isdtype(x.dtype, "complex floating"))


def _fmax(xp: Any, x: Any, y: Any) -> Any:
    return xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.maximum(x, y)))


def _fmin(xp: Any, x: Any, y: Any) -> Any:
    return xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.minimum(x, y)))


def _reciprocal(xp: Any, x: Any) -> Any:
    if _is_real_floating(xp, x) or _is_complex_floating(xp, x):
        return 1.0 / x
    # NumPy's integer reciprocal truncates: 1 and -1 are their own, the rest give 0.
    return xp.where(xp.abs(x) == 1, x, xp.zeros_like(x))


def _cbrt(xp: Any, x: Any) -> Any:
    # |x| ** (1/3) is within a few ulps of the cube root; one Newton step
    # makes it NumPy's (exact for perfect cubes). copysign keeps -0.0 and nan.
    magnitude = xp.abs(x)
    r = magnitude ** (1.0 / 3.0)
    regular = xp.isfinite(r) & (r > 0)
    safe = xp.where(regular, r, xp.ones_like(r))
    r = xp.where(regular, safe - (safe * safe * safe - magnitude) / (3.0 * safe * safe), r)
    return xp.copysign(r, x)


def _logaddexp2(xp: Any, x: Any, y: Any) -> Any:
    # NumPy's: the larger plus log2(1 + 2**-|x - y|); equal arguments (infinities
    # too) give x + 1, and a nan propagates through the difference.
    diff = x - y
    larger = xp.where(diff > 0, x, y)
    out = larger + xp.log1p(2.0 ** -xp.abs(diff)) * (1 / _LN2)
    return xp.where(x == y, x + 1.0, out)


def _from_parts(xp: Any, re: Any, im: Any, dtype: Any) -> Any:
    """The complex numbers re + i im, exactly (but for the sign of a zero
    imaginary part: the standard has no constructor from parts)."""
    return xp.astype(re, dtype) + xp.astype(im, dtype) * 1j


def _round(xp: Any, x: Any, decimals: int = 0) -> Any:
    # NumPy's: scale by 10**|decimals| (multiplying for decimals > 0, dividing
    # below), round half to even, scale back. Integers are left as they are
    # for decimals >= 0.
    if decimals == 0:
        return xp.round(x)
    if _is_complex_floating(xp, x):  # each part on its own (a complex division would round otherwise)
        return _from_parts(xp, _round(xp, xp.real(x), decimals), _round(xp, xp.imag(x), decimals), x.dtype)
    real = _is_real_floating(xp, x)
    if decimals > 0:
        return xp.round(x * 10.0 ** decimals) / 10.0 ** decimals if real else x
    scale = 10 ** -decimals
    if real:
        return xp.round(x / float(scale)) * float(scale)
    # Integers to a multiple of 10**-decimals, half to even, in integer arithmetic.
    q, r = x // scale, x % scale
    half = 2 * r - scale
    up = (half > 0) | ((half == 0) & (q % 2 == 1))
    return (q + xp.astype(up, x.dtype)) * scale


def _sinc(xp: Any, x: Any) -> Any:
    zero = x == 0
    safe = xp.where(zero, xp.ones_like(x), x) * math.pi
    return xp.where(zero, xp.ones_like(x), xp.sin(safe) / safe)


def _nan_to_num(xp: Any, x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> Any:
    if _is_complex_floating(xp, x):
        re = _nan_to_num(xp, xp.real(x), copy, nan, posinf, neginf)
        im = _nan_to_num(xp, xp.imag(x), copy, nan, posinf, neginf)
        return _from_parts(xp, re, im, x.dtype)
    if not _is_real_floating(xp, x):
        return x
    info = xp.finfo(x.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    x = xp.where(xp.isnan(x), xp.asarray(nan, dtype=x.dtype), x)
    return xp.where(xp.isinf(x), xp.where(x > 0, xp.asarray(big, dtype=x.dtype),
                                          xp.asarray(small, dtype=x.dtype)), x)


def _fmod(xp: Any, x: Any, y: Any) -> Any:
    # C's fmod: the remainder with the sign of x (the standard's remainder has y's);
    # for positive operands the two are the same, exactly.
    r = xp.remainder(xp.abs(x), xp.abs(y))
    if _is_real_floating(xp, x):
        return xp.copysign(r, x)  # -0.0 and a nan keep their sign
    return r if xp.isdtype(x.dtype, "unsigned integer") else xp.where(x < 0, -r, r)


def _heaviside(xp: Any, x: Any, h0: Any) -> Any:
    step = xp.where(x < 0, xp.zeros_like(x), xp.where(x > 0, xp.ones_like(x), h0))
    return xp.where(xp.isnan(x), x, step)


def _signbit(xp: Any, x: Any) -> Any:
    if _is_real_floating(xp, x):
        return xp.signbit(x)
    return x < 0 if xp.isdtype(x.dtype, "signed integer") else xp.zeros_like(x, dtype=xp.bool)


def _abs(xp: Any, x: Any) -> Any:
    return x if xp.isdtype(x.dtype, "bool") else xp.abs(x)


def _conj(xp: Any, x: Any) -> Any:
    return xp.conj(x) if _is_complex_floating(xp, x) else x


def _real(xp: Any, x: Any) -> Any:
    return xp.real(x) if _is_complex_floating(xp, x) else x


def _imag(xp: Any, x: Any) -> Any:
    return xp.imag(x) if _is_complex_floating(xp, x) else xp.zeros_like(x)



def _ldexp(xp: Any, x: Any, y: Any) -> Any:
    # x * 2**y in two exact halves, so that 2**y alone cannot overflow where
    # the product fits (NumPy's ldexp is exact).
    dtype = ldexp_p.abstract_eval(get_aval(x), get_aval(y)).dtype
    x, y = cast(xp, x, dtype), cast(xp, y, get_aval(y).dtype)
    half = y // 2
    return x * 2.0 ** xp.astype(half, x.dtype) * 2.0 ** xp.astype(y - half, x.dtype)


_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(bool)


def _domain(avals: list[ShapedArray]) -> str:
    """What a float rule's operands are: "f" floats (where jit's code has
    written any Python int of the jaxpr as a float), "i" ints (with bools
    maybe), "b" bools only."""
    dtypes = {a.dtype for a in avals}
    if _F64 in dtypes:
        return "f" if dtypes <= {_F64, _I64} else "?"
    if _I64 in dtypes:
        return "i"
    return "b" if dtypes == {_BOOL} else "?"


def _scalar_rule(f: str | None = None, i: str | None = None,
                 b: str | None = None) -> Callable[..., str | None]:
    """A float rule (jit's code on Python scalars): the template for the
    operands' domain (`_domain`) formatted with them; None for a domain without one.
    An int template's result is checked to fit int64 (`checked_int64`)."""

    def emit(args: list[str], avals: list[ShapedArray], **params: Any) -> str | None:
        template = {"f": f, "i": i, "b": b}.get(_domain(avals))
        return None if template is None else template.format(*args, **params)

    return emit


def _float_expression(template: str) -> Callable[..., str | None]:
    """A float rule for float64 operands only: `template` formatted with them."""
    return _scalar_rule(f=template)


def _operator_emit(symbol: str) -> Callable[..., str | None]:
    """jit's code for a binary operator: Python's operator, which is what the
    implementation calls unless both operands are Python scalars (weakly typed;
    then NumPy's ufunc). Only for operators that cannot raise on numbers."""

    def emit(args: list[str], avals: list[ShapedArray], **params: Any) -> str | None:
        if avals[0].weak_type and avals[1].weak_type:
            return None
        return f"{args[0]} {symbol} {args[1]}"

    return emit


def _fits(ct: Any, aval: ShapedArray) -> bool:
    if ct.shape != aval.shape:
        return False
    dtype = ct.dtype
    if dtype is aval.dtype:  # NumPy's builtin dtypes are singletons: the hot case, one identity test
        return True
    # Another library's dtype is compared through its aval (array_api_strict's
    # dtypes are never equal to NumPy's, and warn when compared).
    return bool((dtype if isinstance(dtype, np.dtype) else get_aval(ct).dtype) == aval.dtype)


def _linear_ct(x: Any, ct: Any) -> Any:
    if type(x) is not UndefinedPrimal:
        return None
    return ct if _fits(ct, x.aval) else d.unbroadcast(ct, x.aval)


# --- unary: d(out)/dx as a function of (ans, x) -------------------------------------

def _neg_impl(x: Any) -> Any:
    return np.negative(x).item() if type(x) in PYTHON_SCALAR_TYPES and type(x) is not bool else -x


_neg_impl.keeps_weak = True  # type: ignore[attr-defined]


neg_p = elementwise("neg", "negative", -1, impl=_neg_impl)
transpose_rules[neg_p] = lambda ct, x: [neg(ct)]

sin_p = elementwise("sin", "sin", lambda ans, x: cos(x))
cos_p = elementwise("cos", "cos", lambda ans, x: neg(sin(x)))
exp_p = elementwise("exp", "exp", lambda ans, x: ans)
log_p = elementwise("log", "log", lambda ans, x: div(1.0, x))
tanh_p = elementwise("tanh", "tanh", lambda ans, x: sub(1.0, square(ans)))
sqrt_p = elementwise("sqrt", "sqrt", lambda ans, x: div(0.5, ans))
square_p = elementwise("square", "square", lambda ans, x: mul(2.0, x))


def _abs_factor(ans: Any, x: Any) -> Any:
    if get_aval(x).dtype.kind != "c":
        return sign(x)
    # d|z| = Re(conj(z) dz) / |z| (0 at z = 0): the factor conj(z)/|z|, whose
    # product with dz the output's real dtype then keeps the real part of.
    return div(conj(x), where(eq(ans, 0), 1.0, ans))


abs_p = elementwise("abs", np.absolute, _abs_factor, xp=_abs, cast="own")
sign_p = elementwise("sign", "sign")
stop_gradient_p = elementwise("stop_gradient", np.positive, xp=lambda xp, x: x, cast="own")

fabs_p = elementwise("fabs", np.fabs, lambda ans, x: sign(x), xp=lambda xp, x: xp.abs(x))
reciprocal_p = elementwise("reciprocal", np.reciprocal, lambda ans, x: neg(square(ans)), xp=_reciprocal)
cbrt_p = elementwise("cbrt", np.cbrt, lambda ans, x: div(1 / 3, square(ans)), xp=_cbrt)
exp2_p = elementwise("exp2", np.exp2, lambda ans, x: mul(ans, _LN2), xp=lambda xp, x: 2.0 ** x)
expm1_p = elementwise("expm1", "expm1", lambda ans, x: add(ans, 1.0))
log2_p = elementwise("log2", "log2", lambda ans, x: div(1 / _LN2, x))
log10_p = elementwise("log10", "log10", lambda ans, x: div(1 / _LN10, x))
log1p_p = elementwise("log1p", "log1p", lambda ans, x: div(1.0, add(x, 1.0)))
tan_p = elementwise("tan", "tan", lambda ans, x: add(square(ans), 1.0))
arcsin_p = elementwise("arcsin", "asin", lambda ans, x: div(1.0, sqrt(sub(1.0, square(x)))))
arccos_p = elementwise("arccos", "acos", lambda ans, x: div(-1.0, sqrt(sub(1.0, square(x)))))
arctan_p = elementwise("arctan", "atan", lambda ans, x: div(1.0, add(square(x), 1.0)))
sinh_p = elementwise("sinh", "sinh", lambda ans, x: cosh(x))
cosh_p = elementwise("cosh", "cosh", lambda ans, x: sinh(x))
arcsinh_p = elementwise("arcsinh", "asinh", lambda ans, x: div(1.0, sqrt(add(square(x), 1.0))))
# 1 / sqrt(x**2 - 1), factored so that it keeps its precision near x = 1.
arccosh_p = elementwise(
    "arccosh", "acosh", lambda ans, x: div(1.0, mul(sqrt(sub(x, 1.0)), sqrt(add(x, 1.0))))
)
arctanh_p = elementwise("arctanh", "atanh", lambda ans, x: div(1.0, sub(1.0, square(x))))
# On Python floats, `math`'s functions: they raise where NumPy returns inf or nan.
for _prim, _template in (
    (sin_p, "math.sin({0})"), (cos_p, "math.cos({0})"), (tan_p, "math.tan({0})"),
    (exp_p, "math.exp({0})"), (expm1_p, "math.expm1({0})"), (log_p, "math.log({0})"),
    (log1p_p, "math.log1p({0})"), (log2_p, "math.log2({0})"), (log10_p, "math.log10({0})"),
    (tanh_p, "math.tanh({0})"), (sinh_p, "math.sinh({0})"), (cosh_p, "math.cosh({0})"),
    (arcsin_p, "math.asin({0})"), (arccos_p, "math.acos({0})"), (arctan_p, "math.atan({0})"),
    (arcsinh_p, "math.asinh({0})"), (arccosh_p, "math.acosh({0})"), (arctanh_p, "math.atanh({0})"),
    (sqrt_p, "math.sqrt({0})"), (square_p, "{0} * {0}"), (reciprocal_p, "1.0 / {0}"),
    (fabs_p, "abs({0})"),
):
    float_rules[_prim] = _float_expression(_template)

deg2rad_p = elementwise("deg2rad", np.deg2rad, np.pi / 180, xp=lambda xp, x: x * (math.pi / 180))
rad2deg_p = elementwise("rad2deg", np.rad2deg, 180 / np.pi, xp=lambda xp, x: x * (180 / math.pi))

# sinc'(x) = (cos(pi x) - sinc(x)) / x cancels catastrophically near 0: below
# |x| = 0.1 it is its Taylor series (to 1e-18), exact at 0 to every order.
_SINC_SERIES = [(-1) ** k * 2 * k * np.pi ** (2 * k) / math.factorial(2 * k + 1) for k in range(1, 7)]


def _sinc_derivative(ans: Any, x: Any) -> Any:
    small = lt(absolute(x), 0.1)
    safe = where(small, 1.0, x)
    closed_form = div(sub(cos(mul(np.pi, safe)), ans), safe)
    x2 = square(x)
    series = _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):
        series = add(mul(series, x2), c)
    return where(small, mul(series, x), closed_form)


sinc_p = elementwise("sinc", np.sinc, _sinc_derivative, xp=_sinc)

# Piecewise constant: the derivative is zero everywhere it exists.
floor_p = elementwise("floor", "floor")
ceil_p = elementwise("ceil", "ceil")
rint_p = elementwise("rint", np.rint, xp=lambda xp, x: xp.round(x))
trunc_p = elementwise("trunc", "trunc")
round_p = elementwise("round", np.round, xp=_round)  # params: decimals

nan_to_num_p = elementwise("nan_to_num", np.nan_to_num, xp=_nan_to_num)


def _nan_to_num_tangent(t: Any, ans: Any, x: Any, **params: Any) -> Any:
    # The tangent where the input is finite (kept), 0 where it is replaced; the
    # real and imaginary parts of a complex number are replaced each on its own.
    if get_aval(x).dtype.kind != "c":
        return where(isfinite(x), t, 0.0)
    re = where(isfinite(real(x)), real(t), 0.0)
    im = where(isfinite(imag(x)), imag(t), 0.0)
    return add(re, mul(im, 1j))


d.defjvp(nan_to_num_p, _nan_to_num_tangent)

# Boolean (and, for invert, integer) valued: no derivative.
isfinite_p = elementwise("isfinite", "isfinite", cast="own")
isnan_p = elementwise("isnan", "isnan", cast="own")
isinf_p = elementwise("isinf", "isinf", cast="own")
signbit_p = elementwise("signbit", np.signbit, xp=_signbit, cast="own")
logical_not_p = elementwise("logical_not", "logical_not")
invert_p = elementwise("invert", "bitwise_invert")


# --- binary: d(out)/dx and d(out)/dy as functions of (ans, x, y) ------------------

add_p: Primitive = elementwise("add", "add", 1, 1, impl=_operator_impl(operator.add, np.add))
transpose_rules[add_p] = lambda ct, x, y: [_linear_ct(x, ct), _linear_ct(y, ct)]
emit_rules[add_p] = _operator_emit("+")

sub_p = elementwise("sub", "subtract", 1, -1, impl=_operator_impl(operator.sub, np.subtract))
emit_rules[sub_p] = _operator_emit("-")
transpose_rules[sub_p] = lambda ct, x, y: [
    _linear_ct(x, ct), _linear_ct(y, neg(ct)) if d.is_linear(y) else None
]

mul_p: Primitive = elementwise(
    "mul", "multiply", lambda ans, x, y: y, lambda ans, x, y: x,
    impl=_operator_impl(operator.mul, np.multiply),
)
commutative.update((add_p, mul_p))


def _mul_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    # The hottest rule of reverse mode: tests inlined, unbroadcast only if needed.
    if type(x) is UndefinedPrimal:
        assert type(y) is not UndefinedPrimal, "mul of two tangents is not linear"
        out = mul(ct, y)
        return [out if _fits(out, x.aval) else d.unbroadcast(out, x.aval), None]
    out = mul(x, ct)
    return [None, out if _fits(out, y.aval) else d.unbroadcast(out, y.aval)]


transpose_rules[mul_p] = _mul_transpose
emit_rules[mul_p] = _operator_emit("*")

div_p = elementwise(
    "div", "divide", lambda ans, x, y: div(1.0, y), lambda ans, x, y: neg(div(ans, y)),
    impl=_operator_impl(operator.truediv, np.true_divide),
)


def _div_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    assert not d.is_linear(y), "div is linear in its numerator only"
    return [d.unbroadcast(div(ct, y), x.aval), None]


transpose_rules[div_p] = _div_transpose
float_rules[div_p] = _float_expression("{0} / {1}")  # raises ZeroDivisionError where NumPy gives inf

pow_p = elementwise(
    "pow", "pow",
    # y * x**(y-1), taken as 0 where y == 0 (so 0**0 has derivative 0, not nan);
    lambda ans, x, y: where(eq(y, 0), 0, mul(y, power(x, sub(y, 1)))),
    # log(x) * x**y, taken as 0 where x == 0 (the limit for y > 0).
    lambda ans, x, y: mul(ans, log(where(eq(x, 0), 1, x))),
    impl=_operator_impl(operator.pow, np.power),
)
float_rules[pow_p] = _float_expression("math.pow({0}, {1})")  # not **, which gives complex numbers


def _balanced_eq(x: Any, ans: Any, y: Any) -> Any:
    # 1 where x is the result, 0 where y is; where they tie each gets half
    # the derivative (JAX's convention). The constants take the result's
    # dtype, so that a float32 derivative stays in float32.
    dtype = get_aval(ans).dtype
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    one, half, zero = dtype.type(1), dtype.type(0.5), dtype.type(0)
    return where(eq(x, ans), where(eq(y, ans), half, one), zero)


_SELECTED = (lambda ans, x, y: _balanced_eq(x, ans, y), lambda ans, x, y: _balanced_eq(y, ans, x))
max_p: Primitive = elementwise("max", "maximum", *_SELECTED)
min_p: Primitive = elementwise("min", "minimum", *_SELECTED)


def _selects_first(compare: Callable[..., Any]) -> tuple[Factor, Factor]:
    """The derivatives of jnp.fmax and jnp.fmin, where(compare(x, y) | isnan(y), x, y):
    the selected argument's (a nan is selected only if both are; at a tie, y)."""

    def first(ans: Any, x: Any, y: Any) -> Any:
        return logical_or(compare(x, y), isnan(y))

    return first, lambda ans, x, y: logical_not(first(ans, x, y))


fmax_p = elementwise("fmax", np.fmax, *_selects_first(lambda x, y: gt(x, y)), xp=_fmax)
fmin_p = elementwise("fmin", np.fmin, *_selects_first(lambda x, y: lt(x, y)), xp=_fmin)

float_power_p = elementwise(
    "float_power", np.float_power,
    lambda ans, x, y: where(eq(y, 0), 0, mul(y, float_power(x, sub(y, 1)))),
    lambda ans, x, y: mul(ans, log(where(eq(x, 0), 1, x))), xp=lambda xp, x, y: xp.pow(x, y),
)

# x = q * y + remainder with an integer q (floored for remainder, truncated for
# fmod): d/dx = 1 and d/dy = -q, with q recovered from the result (rounded, so
# it is the integer NumPy used). floor_divide, like JAX's, has no derivative.
floor_divide_p = elementwise(
    "floor_divide", "floor_divide", impl=_operator_impl(operator.floordiv, np.floor_divide)
)
remainder_p = elementwise(
    "remainder", "remainder", 1, lambda ans, x, y: neg(rint(div(sub(x, ans), y))),
    impl=_operator_impl(operator.mod, np.remainder),
)
fmod_p = elementwise("fmod", np.fmod, 1, lambda ans, x, y: neg(rint(div(sub(x, ans), y))), xp=_fmod)

# |x| with the sign of y: d/dx = sign(x) * sign(y) (0 at x = 0, like abs); none in y.
copysign_p = elementwise("copysign", "copysign", lambda ans, x, y: mul(sign(x), sign(ans)), None)
float_rules[copysign_p] = _float_expression("math.copysign({0}, {1})")


def _ldexp_factor(ans: Any, x: Any, y: Any) -> Any:
    # d/dx of x * 2**y is 2**y, computed as ldexp(1, y): exact, and without the
    # overflow of 2**y itself where x * 2**y fits.
    return ldexp_p.bind(np.ones((), get_aval(ans).dtype), y)


# No derivative in the integer exponent.
ldexp_p = elementwise("ldexp", np.ldexp, _ldexp_factor, None, xp=_ldexp, cast="none")


def _hypot_factor(ans: Any, x: Any, y: Any) -> Any:
    # x / hypot(x, y), taken as 0 at x = y = 0 (where x is 0).
    return div(x, where(eq(ans, 0), 1, ans))


hypot_p = elementwise("hypot", "hypot", _hypot_factor, lambda ans, x, y: _hypot_factor(ans, y, x))


def _arctan2_denominator(x: Any, y: Any) -> Any:
    return add(square(x), square(y))


arctan2_p = elementwise(  # arctan2(x, y) is the angle of the point (y, x)
    "arctan2", "atan2",
    lambda ans, x, y: div(y, _arctan2_denominator(x, y)),
    lambda ans, x, y: div(neg(x), _arctan2_denominator(x, y)),
)
float_rules[arctan2_p] = _float_expression("math.atan2({0}, {1})")


def _log_add_share(exp_prim: Primitive) -> Callable[..., Any]:
    """d/dx logaddexp(x, y) = base**(x - ans): at most 1, so large inputs cannot
    overflow it. Where the result is infinite, x - ans would be nan: there the
    derivative is maximum's (ties shared)."""

    def share(ans: Any, x: Any, y: Any) -> Any:
        finite = isfinite(ans)
        inside = exp_prim.bind(sub(where(finite, x, 0.0), where(finite, ans, 0.0)))
        return where(finite, inside, _balanced_eq(x, ans, y))

    return share


_logaddexp_share = _log_add_share(exp_p)
_logaddexp2_share = _log_add_share(exp2_p)
logaddexp_p = elementwise(
    "logaddexp", "logaddexp", _logaddexp_share, lambda ans, x, y: _logaddexp_share(ans, y, x)
)
logaddexp2_p = elementwise(
    "logaddexp2", np.logaddexp2, _logaddexp2_share, lambda ans, x, y: _logaddexp2_share(ans, y, x),
    xp=_logaddexp2,
)

# 0 for x < 0, h0 at x == 0, 1 for x > 0: the derivative in h0 is (x == 0).
heaviside_p = elementwise("heaviside", np.heaviside, None, lambda ans, x, h0: eq(x, 0), xp=_heaviside)

# Boolean and integer valued: no derivative.
logical_and_p = elementwise("logical_and", "logical_and")
logical_or_p = elementwise("logical_or", "logical_or")
logical_xor_p = elementwise("logical_xor", "logical_xor")
bitwise_and_p = elementwise("bitwise_and", "bitwise_and", impl=_operator_impl(operator.and_, np.bitwise_and))
bitwise_or_p = elementwise("bitwise_or", "bitwise_or", impl=_operator_impl(operator.or_, np.bitwise_or))
bitwise_xor_p = elementwise("bitwise_xor", "bitwise_xor", impl=_operator_impl(operator.xor, np.bitwise_xor))

eq_p = elementwise("eq", "equal", impl=_operator_impl(operator.eq, np.equal), cast="common")
ne_p = elementwise("ne", "not_equal", impl=_operator_impl(operator.ne, np.not_equal), cast="common")
lt_p = elementwise("lt", "less", impl=_operator_impl(operator.lt, np.less), cast="common")
le_p = elementwise("le", "less_equal", impl=_operator_impl(operator.le, np.less_equal), cast="common")
gt_p = elementwise("gt", "greater", impl=_operator_impl(operator.gt, np.greater), cast="common")
ge_p = elementwise("ge", "greater_equal", impl=_operator_impl(operator.ge, np.greater_equal), cast="common")


# --- where(condition, x, y) ----------------------------------------------------

def _where(xp: Any, c: Any, x: Any, y: Any) -> Any:
    dtype = where_p.abstract_eval(get_aval(c), get_aval(x), get_aval(y)).dtype
    return xp.where(cast(xp, c, _BOOL), cast(xp, x, dtype), cast(xp, y, dtype))


where_p = Primitive("where", _where, _elementwise_aval(np.where), numpy=np.where)
batching.defbatch_elementwise(where_p)
# A select rather than a factor: an inf or nan tangent in the unselected
# branch must not leak into the result (0 * inf is nan).
d.defjvp(where_p, None, lambda g, ans, c, x, y: where(c, g, 0), lambda g, ans, c, x, y: where(c, 0, g))


def _where_transpose(ct: Any, c: Any, x: Any, y: Any) -> list[Any]:
    assert not d.is_linear(c), "the condition of where is not linear"
    ct_x = d.unbroadcast(where(c, ct, 0), x.aval) if d.is_linear(x) else None
    ct_y = d.unbroadcast(where(c, 0, ct), y.aval) if d.is_linear(y) else None
    return [None, ct_x, ct_y]


transpose_rules[where_p] = _where_transpose
unroll_rules[where_p] = elementwise_rule(where_p)
blockwise.add(where_p)


# --- jit's code on Python scalars (float_rules) -----------------------------------
# Exact (or libm's, as NumPy's own scalar loop calls) on floats, ints checked
# to stay in int64; NaN handled as NumPy handles it (maximum and minimum
# propagate it, fmax and fmin ignore it, comparisons with it are False).

_CHECKED = "checked_int64({})"
for _prim, _f, _i in (
    (neg_p, "-{0}", _CHECKED.format("-{0}")), (abs_p, "abs({0})", _CHECKED.format("abs({0})")),
    (add_p, "{0} + {1}", _CHECKED.format("{0} + {1}")), (sub_p, "{0} - {1}", _CHECKED.format("{0} - {1}")),
    (mul_p, "{0} * {1}", _CHECKED.format("{0} * {1}")),
    # Python's float % and // are NumPy's (the same divmod), and raise on division by zero.
    (remainder_p, "{0} % {1}", _CHECKED.format("{0} % {1}")),
    (floor_divide_p, "{0} // {1}", _CHECKED.format("{0} // {1}")),
    (fmod_p, "math.fmod({0}, {1})", None),
    # At a tie maximum and minimum give the second operand (maximum(0.0, -0.0) is -0.0),
    # fmax and fmin the first.
    (max_p, "({0} if ({0} > {1} or {0} != {0}) else {1})", "({0} if {0} > {1} else {1})"),
    (min_p, "({0} if ({0} < {1} or {0} != {0}) else {1})", "({0} if {0} < {1} else {1})"),
    (fmax_p, "({0} if ({0} >= {1} or {1} != {1}) else {1})", None),
    (fmin_p, "({0} if ({0} <= {1} or {1} != {1}) else {1})", None),
    # NumPy's npy_logaddexp, which calls libm's exp and log1p as math does.
    (logaddexp_p, "(({0} + 0.6931471805599453) if {0} == {1} else ({0} + math.log1p(math.exp({1} - {0}))"
                  " if {0} > {1} else ({1} + math.log1p(math.exp({0} - {1})) if {0} < {1} else {0} - {1})))",
     None),
    (sign_p, "(1.0 if {0} > 0.0 else (-1.0 if {0} < 0.0 else (0.0 if {0} == 0.0 else {0})))",
     "(({0} > 0) - ({0} < 0))"),
    # floor, ceil, trunc and rint keep the sign of x (floor(-0.0) and ceil(-0.5) are -0.0).
    (floor_p, "math.copysign(float(math.floor({0})), {0})", None),
    (ceil_p, "math.copysign(float(math.ceil({0})), {0})", None),
    (trunc_p, "math.copysign(float(math.trunc({0})), {0})", None),
    (rint_p, "math.copysign(float(round({0})), {0})", None),  # Python's round: half to even
    (isfinite_p, "math.isfinite({0})", None), (isinf_p, "math.isinf({0})", None),
    (isnan_p, "({0} != {0})", None), (signbit_p, "(math.copysign(1.0, {0}) < 0.0)", None),
):
    float_rules[_prim] = _scalar_rule(f=_f, i=_i)
for _prim, _symbol in ((eq_p, "=="), (ne_p, "!="), (lt_p, "<"), (le_p, "<="), (gt_p, ">"), (ge_p, ">=")):
    _compare = f"({{0}} {_symbol} {{1}})"
    float_rules[_prim] = _scalar_rule(_compare, _compare, _compare)
for _prim, _i, _b in (
    (bitwise_and_p, "({0} & {1})", "({0} & {1})"), (bitwise_or_p, "({0} | {1})", "({0} | {1})"),
    (bitwise_xor_p, "({0} ^ {1})", "({0} ^ {1})"), (invert_p, "(~{0})", "(not {0})"),
    (logical_and_p, None, "({0} and {1})"), (logical_or_p, None, "({0} or {1})"),
    (logical_xor_p, None, "({0} != {1})"),
):
    float_rules[_prim] = _scalar_rule(i=_i, b=_b)
float_rules[logical_not_p] = _scalar_rule("({0} == 0.0)", "({0} == 0)", "(not {0})")
float_rules[stop_gradient_p] = _scalar_rule("{0}", "{0}")


def _where_float(args: list[str], avals: list[ShapedArray]) -> str | None:
    if avals[0].dtype != _BOOL or _domain(avals[1:]) == "?":
        return None
    return f"({args[1]} if {args[0]} else {args[2]})"


float_rules[where_p] = _where_float


# --- with parameters ------------------------------------------------------------


@cached_aval
def _integer_pow_aval(x: ShapedArray, *, y: int) -> ShapedArray:
    with np.errstate(all="ignore"):
        return ShapedArray(x.shape, np.power(np.empty(0, x.dtype), y).dtype)


def _integer_pow_factor(ans: Any, x: Any, *, y: int) -> Any:
    if y == 0:
        return 0
    if y == 1:
        return 1
    if y == 2:
        return mul(2.0, x)
    return mul(float(y), integer_pow(x, y=y - 1))


def _integer_pow(xp: Any, x: Any, *, y: int) -> Any:
    return cast(xp, x, _integer_pow_aval(get_aval(x), y=y).dtype) ** y  # NumPy's power, C's pow for floats


integer_pow_p = Primitive(
    "integer_pow", _integer_pow, _integer_pow_aval, numpy=lambda x, *, y: np.power(x, y)
)
jvp_rules[integer_pow_p] = JVPFactors((_integer_pow_factor,))
blockwise.add(integer_pow_p)
batching.defbatch_unary(integer_pow_p)
unroll_rules[integer_pow_p] = elementwise_rule(integer_pow_p)


def _integer_pow_float(args: list[str], avals: list[ShapedArray], *, y: int) -> str | None:
    domain = _domain(avals)
    if domain == "f":
        return f"{args[0]} ** {y}"  # raises where NumPy gives inf
    if domain == "i" and y >= 0:  # a negative power of an int is NumPy's error
        return f"checked_int64({args[0]} ** {y})"
    return None


float_rules[integer_pow_p] = _integer_pow_float


def _convert(xp: Any, x: Any, *, new_dtype: np.dtype) -> Any:
    x = cast(xp, x)
    if _is_complex_floating(xp, x) and new_dtype.kind in "iuf":
        x = xp.real(x)  # complex to real keeps the real part (NumPy would warn); to bool, both count
    return xp.astype(x, new_dtype if xp is np else library_of_namespace(xp).dtype(new_dtype))


def _convert_impl(x: Any, *, new_dtype: np.dtype) -> Any:
    x = np.asarray(x)
    if x.dtype.kind == "c" and new_dtype.kind in "iuf":
        x = x.real
    return x.astype(new_dtype)[()]


def _convert_aval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype)


def _convert_jvp(primals: list[Any], tangents: list[Any], *, new_dtype: np.dtype) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    ans = convert_element_type(x, new_dtype=new_dtype)
    if new_dtype.kind not in "fc":
        return ans, None  # to an integer or bool: no derivative
    return ans, convert_element_type(t, new_dtype=new_dtype)


convert_element_type_p = Primitive("convert_element_type", _convert, _convert_aval, numpy=_convert_impl)
batching.defbatch_unary(convert_element_type_p)
unroll_rules[convert_element_type_p] = elementwise_rule(convert_element_type_p)
blockwise.add(convert_element_type_p)  # astype: a copy
jvp_rules[convert_element_type_p] = _convert_jvp
transpose_rules[convert_element_type_p] = lambda ct, x, *, new_dtype: [
    convert_element_type(ct, new_dtype=x.aval.dtype)
]

# On Python scalars, from (rows) and to (columns) float64, int64 and bool: a float to
# an int truncates, as NumPy's cast does where the result fits (nan and inf raise).
_CONVERSIONS = {
    ("f", _F64): "{0}", ("f", _I64): "checked_int64(int({0}))", ("f", _BOOL): "({0} != 0.0)",
    ("i", _F64): "float({0})", ("i", _I64): "{0}", ("i", _BOOL): "({0} != 0)",
    ("b", _F64): "(1.0 if {0} else 0.0)", ("b", _I64): "int({0})", ("b", _BOOL): "{0}",
}


def _convert_float(args: list[str], avals: list[ShapedArray], *, new_dtype: np.dtype) -> str | None:
    template = _CONVERSIONS.get((_domain(avals), new_dtype))
    return None if template is None else template.format(*args)


float_rules[convert_element_type_p] = _convert_float


# --- complex numbers: real, imag, conj (linear over the reals), angle ---------------------
# Transposes follow JAX's convention (no conjugation of cotangents), so that
# grad of a real function of z is df/dx - i df/dy, and of a holomorphic one f'(z).


def _real_dtype(x: ShapedArray) -> np.dtype:
    return np.empty(0, x.dtype).real.dtype


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _part_aval(x: ShapedArray) -> ShapedArray:
    # A part of a Python complex is a Python float (np.real(1j)): weak, as its input.
    return ShapedArray(x.shape, _real_dtype(x), x.weak_type)


real_p = Primitive("real", _on_namespace(_real, "own", _part_aval), _part_aval, numpy=np.real)
d.deflinear(real_p)
transpose_rules[real_p] = lambda ct, x: [
    convert_element_type(ct, new_dtype=x.aval.dtype) if x.aval.dtype.kind == "c" else ct
]
batching.defbatch_unary(real_p)

imag_p = Primitive("imag", _on_namespace(_imag, "own", _part_aval), _part_aval, numpy=np.imag)
d.deflinear(imag_p)
transpose_rules[imag_p] = lambda ct, x: [
    mul(convert_element_type(ct, new_dtype=_complex_dtype(get_aval(ct).dtype)), -1j)
    if x.aval.dtype.kind == "c" else None
]
batching.defbatch_unary(imag_p)

# np.conjugate is a ufunc: a bool gives int8, a Python scalar a NumPy scalar.
_conj_aval = _elementwise_aval(np.conjugate)
conj_p = Primitive("conj", _on_namespace(_conj, "out", _conj_aval), _conj_aval, numpy=np.conjugate)
d.deflinear(conj_p)
transpose_rules[conj_p] = lambda ct, x: [conj(ct) if x.aval.dtype.kind == "c" else ct]
batching.defbatch_unary(conj_p)
blockwise.add(conj_p)  # (real and imag are views of a complex operand: not blockwise)


def _angle_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    (z,), (t,) = primals, tangents
    ans = angle(z)
    if get_aval(z).dtype.kind != "c":
        return ans, None  # 0 or pi: piecewise constant
    r2 = real(mul(z, conj(z)))
    return ans, div(imag(mul(conj(z), t)), where(eq(r2, 0), 1.0, r2))


def _angle(xp: Any, x: Any) -> Any:
    # np.angle of a real x is arctan2(0, x): pi for negative numbers and -0.0.
    x = cast(xp, x)
    if _is_complex_floating(xp, x):
        return xp.atan2(xp.imag(x), xp.real(x))
    x = cast(xp, x, angle_p.abstract_eval(get_aval(x)).dtype)
    return xp.atan2(xp.zeros_like(x), x)


angle_p = Primitive(
    "angle", _angle, lambda x: ShapedArray(x.shape, np.angle(np.empty(0, x.dtype)).dtype), numpy=np.angle
)
jvp_rules[angle_p] = _angle_jvp
batching.defbatch_unary(angle_p)


# --- the functions rules and the NumPy layer call --------------------------------

neg: Callable[..., Any] = neg_p.bind
sin: Callable[..., Any] = sin_p.bind
cos: Callable[..., Any] = cos_p.bind
exp: Callable[..., Any] = exp_p.bind
log: Callable[..., Any] = log_p.bind
tanh: Callable[..., Any] = tanh_p.bind
sqrt: Callable[..., Any] = sqrt_p.bind
square: Callable[..., Any] = square_p.bind
absolute: Callable[..., Any] = abs_p.bind
sign: Callable[..., Any] = sign_p.bind
stop_gradient: Callable[..., Any] = stop_gradient_p.bind
add: Callable[..., Any] = add_p.bind
sub: Callable[..., Any] = sub_p.bind
mul: Callable[..., Any] = mul_p.bind
div: Callable[..., Any] = div_p.bind
power: Callable[..., Any] = pow_p.bind
maximum: Callable[..., Any] = max_p.bind
minimum: Callable[..., Any] = min_p.bind
eq: Callable[..., Any] = eq_p.bind
ne: Callable[..., Any] = ne_p.bind
lt: Callable[..., Any] = lt_p.bind
le: Callable[..., Any] = le_p.bind
gt: Callable[..., Any] = gt_p.bind
ge: Callable[..., Any] = ge_p.bind
where: Callable[..., Any] = where_p.bind
integer_pow: Callable[..., Any] = integer_pow_p.bind
convert_element_type: Callable[..., Any] = convert_element_type_p.bind
real: Callable[..., Any] = real_p.bind
imag: Callable[..., Any] = imag_p.bind
conj: Callable[..., Any] = conj_p.bind
angle: Callable[..., Any] = angle_p.bind
fabs: Callable[..., Any] = fabs_p.bind
reciprocal: Callable[..., Any] = reciprocal_p.bind
cbrt: Callable[..., Any] = cbrt_p.bind
exp2: Callable[..., Any] = exp2_p.bind
expm1: Callable[..., Any] = expm1_p.bind
log2: Callable[..., Any] = log2_p.bind
log10: Callable[..., Any] = log10_p.bind
log1p: Callable[..., Any] = log1p_p.bind
tan: Callable[..., Any] = tan_p.bind
arcsin: Callable[..., Any] = arcsin_p.bind
arccos: Callable[..., Any] = arccos_p.bind
arctan: Callable[..., Any] = arctan_p.bind
sinh: Callable[..., Any] = sinh_p.bind
cosh: Callable[..., Any] = cosh_p.bind
arcsinh: Callable[..., Any] = arcsinh_p.bind
arccosh: Callable[..., Any] = arccosh_p.bind
arctanh: Callable[..., Any] = arctanh_p.bind
deg2rad: Callable[..., Any] = deg2rad_p.bind
rad2deg: Callable[..., Any] = rad2deg_p.bind
sinc: Callable[..., Any] = sinc_p.bind
floor: Callable[..., Any] = floor_p.bind
ceil: Callable[..., Any] = ceil_p.bind
rint: Callable[..., Any] = rint_p.bind
trunc: Callable[..., Any] = trunc_p.bind
round: Callable[..., Any] = round_p.bind
nan_to_num: Callable[..., Any] = nan_to_num_p.bind
isfinite: Callable[..., Any] = isfinite_p.bind
isnan: Callable[..., Any] = isnan_p.bind
isinf: Callable[..., Any] = isinf_p.bind
signbit: Callable[..., Any] = signbit_p.bind
logical_not: Callable[..., Any] = logical_not_p.bind
invert: Callable[..., Any] = invert_p.bind
fmax: Callable[..., Any] = fmax_p.bind
fmin: Callable[..., Any] = fmin_p.bind
float_power: Callable[..., Any] = float_power_p.bind
floor_divide: Callable[..., Any] = floor_divide_p.bind
remainder: Callable[..., Any] = remainder_p.bind
fmod: Callable[..., Any] = fmod_p.bind
copysign: Callable[..., Any] = copysign_p.bind
hypot: Callable[..., Any] = hypot_p.bind
arctan2: Callable[..., Any] = arctan2_p.bind
logaddexp: Callable[..., Any] = logaddexp_p.bind
logaddexp2: Callable[..., Any] = logaddexp2_p.bind
heaviside: Callable[..., Any] = heaviside_p.bind
logical_and: Callable[..., Any] = logical_and_p.bind
logical_or: Callable[..., Any] = logical_or_p.bind
logical_xor: Callable[..., Any] = logical_xor_p.bind
bitwise_and: Callable[..., Any] = bitwise_and_p.bind
bitwise_or: Callable[..., Any] = bitwise_or_p.bind
bitwise_xor: Callable[..., Any] = bitwise_xor_p.bind
