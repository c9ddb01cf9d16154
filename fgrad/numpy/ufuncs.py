"""Elementwise functions: NumPy's ufuncs on fgrad's elementwise primitives.

Each ufunc is one line: its name, its primitive and its NumPy ufunc. With no
transform active it is the ufunc itself (one identity check of overhead).
Below them, the functions with more arguments (round, clip, nan_to_num,
select) and the composites (positive, fix, isposinf, isneginf, divmod).
NumPy's aliases (mod, around, radians, acos, ...) are the same functions.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import get_aval
from ..core.trace import EVAL_TRACE, Primitive, Tracer, ctx, transforming
from ..primitives import elementwise as ew
from .operands import DIRECT_TYPES, Array, ArrayLike, check_no_out, numpy_when_eager, operand

__all__ = [
    "ldexp", "frexp", "real_if_close", "piecewise",
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive", "power", "pow",
    "float_power", "square", "sqrt", "cbrt", "reciprocal", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "logaddexp", "logaddexp2", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "arctan2", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "asinh", "acosh", "atanh", "hypot", "deg2rad", "rad2deg", "radians", "degrees",
    "sinc", "abs", "absolute", "fabs", "sign", "copysign", "heaviside", "maximum", "minimum",
    "fmax", "fmin", "clip", "floor_divide", "remainder", "mod", "fmod", "divmod", "floor", "ceil",
    "rint", "trunc", "fix", "round", "around", "nan_to_num", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not",
    "bitwise_invert", "isfinite", "isnan", "isinf", "isposinf", "isneginf", "signbit", "where",
    "select", "real", "imag", "conj", "conjugate", "angle", "iscomplexobj", "isrealobj",
    "iscomplex", "isreal", "isclose", "shape", "ndim", "size", "isscalar", "result_type",
]


def _unary(name: str, prim: Primitive, np_fn: Callable[..., Any]) -> Callable[[ArrayLike], Array]:
    _ctx, _eval, bind_on, _transforming = ctx, EVAL_TRACE, prim.bind_on, transforming

    def fn(x: ArrayLike, /) -> Array:
        if not _transforming.threads:  # no transform in any thread: NumPy, no thread-local read
            return np_fn(x)
        trace = _ctx.trace  # read once, for the test and for the call
        if trace is _eval:
            return np_fn(x)
        return bind_on(trace, x if type(x) in DIRECT_TYPES else operand(x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"numpy.{np_fn.__name__}, differentiable and traceable."
    return fn


def _binary(name: str, prim: Primitive, np_fn: Callable[..., Any]) -> Callable[[ArrayLike, ArrayLike], Array]:
    _ctx, _eval, bind_on, _transforming = ctx, EVAL_TRACE, prim.bind_on, transforming

    def fn(x: ArrayLike, y: ArrayLike, /) -> Array:
        if not _transforming.threads:  # no transform in any thread: NumPy, no thread-local read
            return np_fn(x, y)
        trace = _ctx.trace  # read once, for the test and for the call
        if trace is _eval:
            return np_fn(x, y)
        if type(x) not in DIRECT_TYPES:
            x = operand(x)
        if type(y) not in DIRECT_TYPES:
            y = operand(y)
        return bind_on(trace, x, y)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"numpy.{np_fn.__name__}, with NumPy broadcasting; differentiable and traceable."
    return fn


negative = _unary("negative", ew.neg_p, np.negative)
sin = _unary("sin", ew.sin_p, np.sin)
cos = _unary("cos", ew.cos_p, np.cos)
exp = _unary("exp", ew.exp_p, np.exp)
log = _unary("log", ew.log_p, np.log)
tanh = _unary("tanh", ew.tanh_p, np.tanh)
sqrt = _unary("sqrt", ew.sqrt_p, np.sqrt)
square = _unary("square", ew.square_p, np.square)
absolute = _unary("absolute", ew.abs_p, np.absolute)
abs = absolute
sign = _unary("sign", ew.sign_p, np.sign)
fabs = _unary("fabs", ew.fabs_p, np.fabs)
reciprocal = _unary("reciprocal", ew.reciprocal_p, np.reciprocal)
cbrt = _unary("cbrt", ew.cbrt_p, np.cbrt)
exp2 = _unary("exp2", ew.exp2_p, np.exp2)
expm1 = _unary("expm1", ew.expm1_p, np.expm1)
log2 = _unary("log2", ew.log2_p, np.log2)
log10 = _unary("log10", ew.log10_p, np.log10)
log1p = _unary("log1p", ew.log1p_p, np.log1p)
tan = _unary("tan", ew.tan_p, np.tan)
arcsin = asin = _unary("arcsin", ew.arcsin_p, np.arcsin)
arccos = acos = _unary("arccos", ew.arccos_p, np.arccos)
arctan = atan = _unary("arctan", ew.arctan_p, np.arctan)
sinh = _unary("sinh", ew.sinh_p, np.sinh)
cosh = _unary("cosh", ew.cosh_p, np.cosh)
arcsinh = asinh = _unary("arcsinh", ew.arcsinh_p, np.arcsinh)
arccosh = acosh = _unary("arccosh", ew.arccosh_p, np.arccosh)
arctanh = atanh = _unary("arctanh", ew.arctanh_p, np.arctanh)
deg2rad = radians = _unary("deg2rad", ew.deg2rad_p, np.deg2rad)
rad2deg = degrees = _unary("rad2deg", ew.rad2deg_p, np.rad2deg)
sinc = _unary("sinc", ew.sinc_p, np.sinc)
floor = _unary("floor", ew.floor_p, np.floor)
ceil = _unary("ceil", ew.ceil_p, np.ceil)
rint = _unary("rint", ew.rint_p, np.rint)
trunc = _unary("trunc", ew.trunc_p, np.trunc)
logical_not = _unary("logical_not", ew.logical_not_p, np.logical_not)
invert = bitwise_not = bitwise_invert = _unary("invert", ew.invert_p, np.invert)
isfinite = _unary("isfinite", ew.isfinite_p, np.isfinite)
isnan = _unary("isnan", ew.isnan_p, np.isnan)
isinf = _unary("isinf", ew.isinf_p, np.isinf)
signbit = _unary("signbit", ew.signbit_p, np.signbit)

add = _binary("add", ew.add_p, np.add)
subtract = _binary("subtract", ew.sub_p, np.subtract)
multiply = _binary("multiply", ew.mul_p, np.multiply)
divide = _binary("divide", ew.div_p, np.true_divide)
true_divide = divide
maximum = _binary("maximum", ew.max_p, np.maximum)
minimum = _binary("minimum", ew.min_p, np.minimum)
equal = _binary("equal", ew.eq_p, np.equal)
not_equal = _binary("not_equal", ew.ne_p, np.not_equal)
less = _binary("less", ew.lt_p, np.less)
less_equal = _binary("less_equal", ew.le_p, np.less_equal)
greater = _binary("greater", ew.gt_p, np.greater)
greater_equal = _binary("greater_equal", ew.ge_p, np.greater_equal)
fmax = _binary("fmax", ew.fmax_p, np.fmax)
fmin = _binary("fmin", ew.fmin_p, np.fmin)
float_power = _binary("float_power", ew.float_power_p, np.float_power)
floor_divide = _binary("floor_divide", ew.floor_divide_p, np.floor_divide)
remainder = mod = _binary("remainder", ew.remainder_p, np.remainder)
fmod = _binary("fmod", ew.fmod_p, np.fmod)
copysign = _binary("copysign", ew.copysign_p, np.copysign)
hypot = _binary("hypot", ew.hypot_p, np.hypot)
arctan2 = atan2 = _binary("arctan2", ew.arctan2_p, np.arctan2)
logaddexp = _binary("logaddexp", ew.logaddexp_p, np.logaddexp)
logaddexp2 = _binary("logaddexp2", ew.logaddexp2_p, np.logaddexp2)
heaviside = _binary("heaviside", ew.heaviside_p, np.heaviside)
logical_and = _binary("logical_and", ew.logical_and_p, np.logical_and)
logical_or = _binary("logical_or", ew.logical_or_p, np.logical_or)
logical_xor = _binary("logical_xor", ew.logical_xor_p, np.logical_xor)
bitwise_and = _binary("bitwise_and", ew.bitwise_and_p, np.bitwise_and)
bitwise_or = _binary("bitwise_or", ew.bitwise_or_p, np.bitwise_or)
bitwise_xor = _binary("bitwise_xor", ew.bitwise_xor_p, np.bitwise_xor)

_pow = ew.pow_p.bind
_integer_pow = ew.integer_pow_p.bind


def power(x: ArrayLike, y: ArrayLike, /) -> Array:
    """numpy.power; a Python int exponent becomes `integer_pow` (no log needed)."""
    if ctx.trace is EVAL_TRACE:
        return np.power(x, y)
    if type(y) is int:
        return _integer_pow(operand(x), y=y)
    return _pow(operand(x), operand(y))


pow = power


def where(condition: ArrayLike, x: ArrayLike | None = None, y: ArrayLike | None = None, /) -> Array:
    """numpy.where: `x` where `condition` holds, else `y` (broadcast together).

    Only the selected values flow into the derivative, but both branches are
    computed: if the unselected one is inf or nan, its derivative can still be
    nan. Guard the input instead (the "double where"):
    ``fnp.where(x > 0, fnp.log(fnp.where(x > 0, x, 1.0)), 0.0)``.
    """
    if x is None and y is None:
        return np.where(np.asarray(condition))  # indices: needs a concrete condition
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    if ctx.trace is EVAL_TRACE:
        return np.where(condition, x, y)
    return ew.where(operand(condition), operand(x), operand(y))


# --- with more arguments, and composites ---------------------------------------

def positive(x: ArrayLike, /) -> Array:
    """numpy.positive: `x` itself (+x); like NumPy, a TypeError for booleans."""
    if ctx.trace is EVAL_TRACE:
        return np.positive(x)
    x = operand(x)
    if get_aval(x).dtype == np.bool_:
        np.positive(np.empty(0, np.bool_))  # raises NumPy's own error
    return x


@numpy_when_eager(np.fix)
def fix(x: ArrayLike, out: None = None) -> Array:
    """numpy.fix: round towards zero (trunc); its derivative is zero."""
    check_no_out(out, "fix")
    return ew.trunc(operand(x))


@numpy_when_eager(np.round)
def round(a: ArrayLike, decimals: int = 0, out: None = None) -> Array:
    """numpy.round to `decimals` places (half to even; negative: tens, hundreds);
    its derivative is zero.

    >>> round(2.567, 2)
    np.float64(2.57)
    """
    check_no_out(out, "round")
    return ew.round(operand(a), decimals=operator.index(decimals))


around = round


def divmod(x: ArrayLike, y: ArrayLike, /) -> tuple[Array, Array]:
    """numpy.divmod: (floor_divide(x, y), remainder(x, y))."""
    if ctx.trace is EVAL_TRACE:
        return np.divmod(x, y)
    return floor_divide(x, y), remainder(x, y)


def _signed_inf(x: ArrayLike, negative: bool) -> Array:
    x = operand(x)
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        raise TypeError(
            f"This operation is not supported for {dtype.name} values because it would be ambiguous."
        )
    sign = ew.signbit(x)
    return ew.logical_and(ew.isinf(x), sign if negative else ew.logical_not(sign))


@numpy_when_eager(np.isposinf)
def isposinf(x: ArrayLike, out: None = None) -> Array:
    """numpy.isposinf: where `x` is +inf (a bool array; TypeError for complex)."""
    check_no_out(out, "isposinf")
    return _signed_inf(x, negative=False)


@numpy_when_eager(np.isneginf)
def isneginf(x: ArrayLike, out: None = None) -> Array:
    """numpy.isneginf: where `x` is -inf (a bool array; TypeError for complex)."""
    check_no_out(out, "isneginf")
    return _signed_inf(x, negative=True)


class _NotGiven:
    def __repr__(self) -> str:
        return "<not given>"


_NOT_GIVEN: Any = _NotGiven()


def _clip_bounds(a_min: Any, a_max: Any, min: Any, max: Any) -> tuple[Any, Any]:
    # NumPy's rules: the bounds positionally (both) or as min=/max= keywords.
    if a_min is _NOT_GIVEN and a_max is _NOT_GIVEN:
        return (None if min is _NOT_GIVEN else min), (None if max is _NOT_GIVEN else max)
    if a_min is _NOT_GIVEN:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    if a_max is _NOT_GIVEN:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    if min is not _NOT_GIVEN or max is not _NOT_GIVEN:
        raise ValueError(
            "Passing `min` or `max` keyword argument when `a_min` and `a_max` are provided is forbidden."
        )
    return a_min, a_max


def _clip_bound(bound: Any, x: Any) -> Any:
    dtype = get_aval(x).dtype
    if type(bound) is int and dtype.kind in "iu":
        # NumPy saturates a Python int bound outside the integer dtype's range.
        info = np.iinfo(dtype)
        return builtins.min(builtins.max(bound, int(info.min)), int(info.max))
    return operand(bound)


def clip(
    a: ArrayLike, a_min: ArrayLike | None = _NOT_GIVEN, a_max: ArrayLike | None = _NOT_GIVEN,
    out: None = None, *, min: ArrayLike | None = _NOT_GIVEN, max: ArrayLike | None = _NOT_GIVEN,
) -> Array:
    """numpy.clip: `a` limited to [a_min, a_max] (either may be None, or an array).

    It is maximum(a, a_min) then minimum(., a_max), and so is its derivative:
    1 inside, 0 outside; on a bound the derivative is shared equally between
    `a` and that bound (JAX's jnp.clip), as for a tie of maximum.

    >>> clip([-1.0, 0.5, 2.0], 0.0, 1.0)
    array([0. , 0.5, 1. ])
    """
    lo, hi = _clip_bounds(a_min, a_max, min, max)
    if ctx.trace is EVAL_TRACE:
        return np.clip(a, lo, hi, out)
    check_no_out(out, "clip")
    x = operand(a)
    if lo is not None:
        x = ew.maximum(x, _clip_bound(lo, x))
    if hi is not None:
        x = ew.minimum(x, _clip_bound(hi, x))
    return x


def _replacement(name: str, value: Any) -> float | complex | None:
    if value is None:
        return None
    if isinstance(value, Tracer) or np.ndim(value) != 0:
        raise TypeError(
            f"fgrad.numpy.nan_to_num takes a number as {name}= under a transform, got {value!r}; "
            "for replacements per element use fnp.where(fnp.isnan(x), values, x)"
        )
    return complex(value) if np.iscomplexobj(value) else float(value)


@numpy_when_eager(np.nan_to_num)
def nan_to_num(
    x: ArrayLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
    neginf: float | None = None,
) -> Array:
    """numpy.nan_to_num: nan, +inf and -inf replaced by `nan`, `posinf` and
    `neginf` (by default 0, and the largest and lowest finite values of the
    dtype). The derivative is 1 where `x` is finite, 0 where it was replaced (for
    complex `x`, part by part: each of the real and imaginary parts is replaced on
    its own)."""
    x = operand(x)
    if get_aval(x).dtype.kind not in "fc":
        return x  # integers and booleans are always finite
    return ew.nan_to_num(
        x, nan=_replacement("nan", nan), posinf=_replacement("posinf", posinf),
        neginf=_replacement("neginf", neginf),
    )


@numpy_when_eager(np.select)
def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: ArrayLike = 0) -> Array:
    """numpy.select: from the first of `choicelist` whose condition in `condlist`
    holds, else `default` (all broadcast together). Differentiable in the
    choices and the default.

    >>> select([[True, False], [True, True]], [[1, 2], [3, 4]], default=0)
    array([1, 4])
    """
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    conds = [operand(c) for c in condlist]
    for i, c in enumerate(conds):
        if get_aval(c).dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    # Python scalars stay weak in the result dtype, as in NumPy (NEP 50).
    weak = ew.PYTHON_SCALAR_TYPES
    choices = [c if type(c) in weak else operand(c) for c in (*choicelist, default)]
    try:
        dtype = np.result_type(*(c if type(c) in weak else get_aval(c).dtype for c in choices))
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    out = choices[-1]
    for cond, choice in zip(reversed(conds), reversed(choices[:-1])):
        out = ew.where(cond, choice, out)
    if get_aval(out).dtype != dtype:
        out = ew.convert_element_type(out, new_dtype=dtype)
    return out


# --- complex numbers --------------------------------------------------------------
# Derivatives follow JAX: cotangents are never conjugated, so grad of a real
# function of z is df/dx - i df/dy, and of a holomorphic one (holomorphic=True) f'(z).

conj = _unary("conj", ew.conj_p, np.conjugate)
conjugate = conj


def real(val: ArrayLike, /) -> Array:
    """numpy.real: the real part (the array itself for a real array)."""
    if ctx.trace is EVAL_TRACE:
        return np.real(val)
    val = operand(val)
    return ew.real(val) if get_aval(val).dtype.kind == "c" else val


def imag(val: ArrayLike, /) -> Array:
    """numpy.imag: the imaginary part (zeros for a real array)."""
    if ctx.trace is EVAL_TRACE:
        return np.imag(val)
    return ew.imag(operand(val))


@numpy_when_eager(np.angle)
def angle(z: ArrayLike, deg: bool = False) -> Array:
    """numpy.angle: the argument of complex numbers, in radians (degrees with `deg`)."""
    out = ew.angle(operand(z))
    return ew.mul(out, 180 / np.pi) if deg else out


def iscomplexobj(x: ArrayLike) -> bool:
    """numpy.iscomplexobj: whether the dtype is complex (a static property)."""
    return get_aval(x).dtype.kind == "c"


def isrealobj(x: ArrayLike) -> bool:
    """numpy.isrealobj: whether the dtype is not complex."""
    return not iscomplexobj(x)


@numpy_when_eager(np.iscomplex)
def iscomplex(x: ArrayLike) -> Array:
    """numpy.iscomplex: elementwise, whether the imaginary part is nonzero (False for a real dtype).

    >>> import fgrad.numpy as fnp
    >>> fnp.iscomplex(np.array([1.0 + 1j, 2.0]))
    array([ True, False])
    """
    x = operand(x)
    aval = get_aval(x)
    if aval.dtype.kind == "c":
        return not_equal(ew.imag(x), 0)
    return np.zeros(aval.shape, bool)[()]


@numpy_when_eager(np.isreal)
def isreal(x: ArrayLike) -> Array:
    """numpy.isreal: elementwise, whether the imaginary part is zero (True for a real dtype).

    >>> import fgrad.numpy as fnp
    >>> fnp.isreal(np.array([1.0 + 1j, 2.0]))
    array([False,  True])
    """
    return equal(imag(x), 0)


def _as_operand(x: Any) -> Any:
    """`x` as isclose takes it: Python scalars kept (weak), anything else an array or tracer."""
    return x if isinstance(x, (int, float, complex)) else operand(x)


@numpy_when_eager(np.isclose)
def isclose(a: ArrayLike, b: ArrayLike, rtol: ArrayLike = 1e-05, atol: ArrayLike = 1e-08,
            equal_nan: bool = False) -> Array:
    """numpy.isclose: elementwise ``|a - b| <= atol + rtol * |b|`` (booleans, no derivative).

    >>> import fgrad.numpy as fnp
    >>> fnp.isclose(np.array([1.0, 2.0]), np.array([1.0 + 1e-9, 2.1]))
    array([ True, False])
    """
    x, y, atol, rtol = (_as_operand(v) for v in (a, b, atol, rtol))
    if not isinstance(y, (int, float, complex)):
        dt = np.result_type(get_aval(y).dtype, 1.0)
        if get_aval(y).dtype != dt:
            y = ew.convert_element_type(y, new_dtype=dt)
    elif isinstance(y, int):
        y = float(y)
    close = less_equal(absolute(subtract(x, y)), add(atol, multiply(rtol, absolute(y))))
    result = logical_or(logical_and(close, isfinite(y)), equal(x, y))
    if equal_nan:
        result = logical_or(result, logical_and(isnan(x), isnan(y)))
    return result


@numpy_when_eager(np.shape)
def shape(a: ArrayLike) -> tuple[int, ...]:
    """numpy.shape: the shape of `a`, a tuple of Python ints (known from the type alone).

    >>> import fgrad.numpy as fnp
    >>> fnp.shape([[1.0, 2.0, 3.0]])
    (1, 3)
    """
    return tuple(get_aval(operand(a)).shape)


@numpy_when_eager(np.ndim)
def ndim(a: ArrayLike) -> int:
    """numpy.ndim: the number of dimensions of `a` (known from the type alone).

    >>> import fgrad.numpy as fnp
    >>> fnp.ndim([[1.0, 2.0, 3.0]])
    2
    """
    return len(shape(a))


@numpy_when_eager(np.size)
def size(a: ArrayLike, axis: int | tuple[int, ...] | None = None) -> int:
    """numpy.size: the number of elements of `a`, or along `axis` (known from the type alone).

    >>> import fgrad.numpy as fnp
    >>> fnp.size(np.zeros((2, 3))), fnp.size(np.zeros((2, 3)), 1)
    (6, 3)
    """
    # NumPy's own rules (and errors) for `axis`, on a stand-in of the same shape.
    return int(np.size(np.broadcast_to(np.empty((), np.int8), shape(a)), axis))


def isscalar(element: Any) -> bool:
    """numpy.isscalar: whether `element` is a scalar; a traced value is one if it is 0-d.

    Under a transform a Python or NumPy scalar argument is traced as a 0-d value, so
    (as in JAX) every 0-d traced value counts as a scalar.

    >>> import fgrad.numpy as fnp
    >>> fnp.isscalar(2.0), fnp.isscalar(np.ones(2))
    (True, False)
    """
    if isinstance(element, Tracer):
        return get_aval(element).ndim == 0
    return bool(np.isscalar(element))


_WEAK_STAND_IN = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """numpy.result_type: the dtype NumPy's promotion gives its arguments (from their types alone).

    >>> import fgrad.numpy as fnp
    >>> fnp.result_type(np.float32, 2.0), fnp.result_type(np.arange(2), 1.5)
    (dtype('float32'), dtype('float64'))
    """
    args = []
    for x in arrays_and_dtypes:
        if isinstance(x, Tracer):
            aval = get_aval(x)
            x = _WEAK_STAND_IN[aval.dtype.kind] if aval.weak_type else aval.dtype
        args.append(x)
    return np.result_type(*args)


ldexp = _binary("ldexp", ew.ldexp_p, np.ldexp)
ldexp.__doc__ = """numpy.ldexp: ``x1 * 2**x2`` for integer exponents `x2` (differentiable in `x1`).

>>> ldexp(3.0, 2)
np.float64(12.0)
"""


def frexp(x: ArrayLike, /) -> tuple[Array, Array]:
    """numpy.frexp: the mantissas (in [0.5, 1) in magnitude; differentiable) and the integer exponents
    of `x`, with ``x == mantissa * 2**exponent``.

    >>> frexp(12.0)
    (np.float64(0.75), np.int32(4))
    """
    if ctx.trace is EVAL_TRACE:
        return np.frexp(x)
    from .creation import astype

    x = operand(x)
    dtype = np.frexp(np.ones((), get_aval(x).dtype))[0].dtype  # NumPy's loops (and its TypeError)
    x = astype(x, dtype)
    magnitude = absolute(x)
    regular = logical_and(isfinite(x), not_equal(x, 0))
    safe = where(regular, magnitude, np.ones((), dtype))
    def scaled(v: Any, e: Any) -> Any:  # v / 2**e in two steps, which neither overflow nor underflow
        half = floor_divide(e, 2)
        return divide(divide(v, exp2(half)), exp2(subtract(e, half)))

    e = add(floor(log2(safe)), 1)  # then corrected by one where log2 rounded across a power of two
    e = where(greater_equal(scaled(safe, e), 1), add(e, 1), e)
    e = where(less(scaled(safe, e), 0.5), subtract(e, 1), e)
    e = where(regular, e, np.zeros((), dtype))
    mantissa = where(regular, scaled(x, e), x)
    return mantissa, astype(e, np.intc)


@numpy_when_eager(np.real_if_close)
def real_if_close(a: ArrayLike, tol: float = 100) -> Array:
    """numpy.real_if_close: the real part of a complex `a` whose imaginary parts are all within
    `tol` machine epsilons of zero, else `a` (for a complex `a`, needs its concrete values).

    >>> real_if_close([2.0 + 1e-16j, 1.0])
    array([2., 1.])
    """
    from .operands import concrete_value

    a = operand(a)
    if get_aval(a).dtype.kind != "c":
        return a
    value = concrete_value(
        a, "fgrad.numpy.real_if_close decides its result's dtype from the values of a complex array, so it "
        "needs concrete values, but it got a traced {aval} value under `{transform}`, where only its type "
        "is known. Use fgrad.numpy.real where the result should be real.")
    return real(a) if np.real_if_close(value, tol).dtype.kind != "c" else a


def _one_condition(condlist: Any, ndim: int) -> bool:
    """Whether numpy.piecewise reads `condlist` as one condition rather than a list of them."""
    if np.isscalar(condlist):
        return True
    if isinstance(condlist, (np.ndarray, Tracer)):
        return get_aval(condlist).ndim == 0 or (get_aval(condlist).ndim == 1 and ndim != 0)
    return not isinstance(condlist[0], (list, np.ndarray, Tracer)) and ndim != 0


@numpy_when_eager(np.piecewise)
def piecewise(x: ArrayLike, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Array:
    """numpy.piecewise: `x` mapped by the function (or value) of the condition each element meets
    (a last extra function for elements meeting none). Under a transform each function is applied
    to all of `x` and the results are selected, so the functions should be elementwise.

    >>> x = np.array([-2.0, 3.0])
    >>> piecewise(x, [x < 0], [lambda v: -v, lambda v: v * 10])
    array([ 2., 30.])
    """
    from .creation import astype, zeros_like
    from .reductions import any as any_

    x = operand(x)
    ndim = get_aval(x).ndim
    n2 = len(funclist)
    if _one_condition(condlist, ndim):
        condlist = [condlist]
    conds = [astype(operand(c), np.bool_) for c in condlist]
    n = len(conds)
    if n == n2 - 1:
        conds.append(logical_not(any_(operand(conds) if n else np.zeros((0,) + get_aval(x).shape, bool),
                                      axis=0)))
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    dtype = get_aval(x).dtype
    y: Any = zeros_like(x)
    for cond, func in zip(conds, funclist):
        value = func(x, *args, **kw) if callable(func) else func
        y = where(cond, astype(operand(value), dtype), y)
    return y
