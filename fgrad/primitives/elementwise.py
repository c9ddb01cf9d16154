"""Elementwise primitives: NumPy's ufuncs, with NumPy's broadcasting and dtype
promotion (NEP 50: a Python scalar does not widen an array's dtype).

Each member of the family is one line: a name, its NumPy function and the
derivative of its output with respect to each argument, as a function of the
primal output and inputs (`JVPFactors`: HIPS autograd's table style, read
next to the calculus). Linear members carry their transpose on the next
line. Shapes and dtypes are worked out once per combination of input avals
and cached. All share one batch rule: NumPy broadcasting with the batch axis
in front.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes
from ..core.rules import JVPFactors, UndefinedPrimal, jvp_rules, transpose_rules
from ..core.trace import Primitive
from . import batching
from . import derivatives as d

__all__ = ["elementwise"]

Factor = Callable[..., Any] | int | float | None


def _dtype_sample(aval: ShapedArray) -> Any:
    # A Python scalar stands for a weak type, an empty array for a strong one:
    # running the NumPy function on these gives NumPy's result dtype.
    return aval.dtype.type(0).item() if aval.weak_type else np.empty(0, aval.dtype)


def _compute_aval(np_fn: Callable[..., Any], avals: tuple[ShapedArray, ...]) -> ShapedArray:
    shape = broadcast_shapes(*(a.shape for a in avals))
    if all(a.weak_type for a in avals):
        samples = [np.empty(0, a.dtype) for a in avals]
    else:
        samples = [_dtype_sample(a) for a in avals]
    with np.errstate(all="ignore"):
        dtype = np_fn(*samples).dtype
    return ShapedArray(shape, dtype)


def _elementwise_aval(np_fn: Callable[..., Any]) -> Callable[..., ShapedArray]:
    cache: dict[tuple[ShapedArray, ...], ShapedArray] = {}  # avals are interned

    def abstract_eval(*avals: ShapedArray) -> ShapedArray:
        out = cache.get(avals)
        if out is None:
            out = cache[avals] = _compute_aval(np_fn, avals)
        return out

    return abstract_eval


_PYTHON_SCALARS = {float, int, bool, complex}


def _operator_impl(op: Callable[..., Any], np_fn: Callable[..., Any]) -> Callable[..., Any]:
    """NumPy's binary ufunc through Python's operator: the same result, but NumPy
    scalars take their fast scalar path (about 10x faster than a ufunc call).
    Two Python scalars go to the ufunc, so that 1.0 / 0.0 is inf, not an error."""

    def impl(x: Any, y: Any) -> Any:
        if type(x) in _PYTHON_SCALARS and type(y) in _PYTHON_SCALARS:
            return np_fn(x, y)
        return op(x, y)

    impl.__name__ = np_fn.__name__
    return impl


def elementwise(
    name: str, np_fn: Callable[..., Any], *factors: Factor, impl: Callable[..., Any] | None = None
) -> Primitive:
    """A primitive applying `np_fn` elementwise, with the derivative of its output
    with respect to each argument (see `JVPFactors`). With no factors the
    output has no derivative (comparisons, sign, rounding). `impl` replaces
    `np_fn` for evaluation when it computes the same thing faster."""
    prim = Primitive(name, impl or np_fn, _elementwise_aval(np_fn))
    jvp_rules[prim] = JVPFactors(factors or (None,) * 3)
    batching.defbatch_elementwise(prim)
    return prim


def _fits(ct: Any, aval: ShapedArray) -> bool:
    return bool(ct.shape == aval.shape and ct.dtype == aval.dtype)


def _linear_ct(x: Any, ct: Any) -> Any:
    if type(x) is not UndefinedPrimal:
        return None
    return ct if _fits(ct, x.aval) else d.unbroadcast(ct, x.aval)


# --- unary: d(out)/dx as a function of (ans, x) -------------------------------------

def _neg_impl(x: Any) -> Any:
    return np.negative(x) if type(x) in _PYTHON_SCALARS else -x


neg_p = elementwise("neg", np.negative, -1, impl=_neg_impl)
transpose_rules[neg_p] = lambda ct, x: [neg(ct)]

sin_p = elementwise("sin", np.sin, lambda ans, x: cos(x))
cos_p = elementwise("cos", np.cos, lambda ans, x: neg(sin(x)))
exp_p = elementwise("exp", np.exp, lambda ans, x: ans)
log_p = elementwise("log", np.log, lambda ans, x: div(1.0, x))
tanh_p = elementwise("tanh", np.tanh, lambda ans, x: sub(1.0, square(ans)))
sqrt_p = elementwise("sqrt", np.sqrt, lambda ans, x: div(0.5, ans))
square_p = elementwise("square", np.square, lambda ans, x: mul(2.0, x))
abs_p = elementwise("abs", np.absolute, lambda ans, x: sign(x))
sign_p = elementwise("sign", np.sign)
stop_gradient_p = elementwise("stop_gradient", np.positive)


# --- binary: d(out)/dx and d(out)/dy as functions of (ans, x, y) ------------------

add_p = elementwise("add", np.add, 1, 1, impl=_operator_impl(operator.add, np.add))
transpose_rules[add_p] = lambda ct, x, y: [_linear_ct(x, ct), _linear_ct(y, ct)]

sub_p = elementwise("sub", np.subtract, 1, -1, impl=_operator_impl(operator.sub, np.subtract))
transpose_rules[sub_p] = lambda ct, x, y: [
    _linear_ct(x, ct), _linear_ct(y, neg(ct)) if d.is_linear(y) else None
]

mul_p = elementwise(
    "mul", np.multiply, lambda ans, x, y: y, lambda ans, x, y: x,
    impl=_operator_impl(operator.mul, np.multiply),
)


def _mul_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    # The hottest rule of reverse mode: tests inlined, unbroadcast only if needed.
    if type(x) is UndefinedPrimal:
        assert type(y) is not UndefinedPrimal, "mul of two tangents is not linear"
        out = mul(ct, y)
        return [out if _fits(out, x.aval) else d.unbroadcast(out, x.aval), None]
    out = mul(x, ct)
    return [None, out if _fits(out, y.aval) else d.unbroadcast(out, y.aval)]


transpose_rules[mul_p] = _mul_transpose

div_p = elementwise(
    "div", np.true_divide, lambda ans, x, y: div(1.0, y), lambda ans, x, y: neg(div(ans, y)),
    impl=_operator_impl(operator.truediv, np.true_divide),
)


def _div_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    assert not d.is_linear(y), "div is linear in its numerator only"
    return [d.unbroadcast(div(ct, y), x.aval), None]


transpose_rules[div_p] = _div_transpose

pow_p = elementwise(
    "pow", np.power,
    # y * x**(y-1), taken as 0 where y == 0 (so 0**0 has derivative 0, not nan);
    lambda ans, x, y: where(eq(y, 0), 0, mul(y, power(x, sub(y, 1)))),
    # log(x) * x**y, taken as 0 where x == 0 (the limit for y > 0).
    lambda ans, x, y: mul(ans, log(where(eq(x, 0), 1, x))),
    impl=_operator_impl(operator.pow, np.power),
)


def _balanced_eq(x: Any, ans: Any, y: Any) -> Any:
    # 1 where x is the result, 0 where y is; where they tie each gets half
    # the derivative (JAX's convention).
    return where(eq(x, ans), where(eq(y, ans), 0.5, 1.0), 0.0)


max_p = elementwise(
    "max", np.maximum, lambda ans, x, y: _balanced_eq(x, ans, y), lambda ans, x, y: _balanced_eq(y, ans, x)
)
min_p = elementwise(
    "min", np.minimum, lambda ans, x, y: _balanced_eq(x, ans, y), lambda ans, x, y: _balanced_eq(y, ans, x)
)

eq_p = elementwise("eq", np.equal, impl=_operator_impl(operator.eq, np.equal))
ne_p = elementwise("ne", np.not_equal, impl=_operator_impl(operator.ne, np.not_equal))
lt_p = elementwise("lt", np.less, impl=_operator_impl(operator.lt, np.less))
le_p = elementwise("le", np.less_equal, impl=_operator_impl(operator.le, np.less_equal))
gt_p = elementwise("gt", np.greater, impl=_operator_impl(operator.gt, np.greater))
ge_p = elementwise("ge", np.greater_equal, impl=_operator_impl(operator.ge, np.greater_equal))


# --- where(condition, x, y) ----------------------------------------------------

where_p = Primitive("where", np.where, _elementwise_aval(np.where))
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


# --- with parameters ------------------------------------------------------------


@functools.cache
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


integer_pow_p = Primitive("integer_pow", lambda x, *, y: np.power(x, y), _integer_pow_aval)
jvp_rules[integer_pow_p] = JVPFactors((_integer_pow_factor,))
batching.defbatch_unary(integer_pow_p)


def _convert_impl(x: Any, *, new_dtype: np.dtype) -> Any:
    return np.asarray(x).astype(new_dtype)[()]


def _convert_aval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype)


def _convert_jvp(primals: list[Any], tangents: list[Any], *, new_dtype: np.dtype) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    ans = convert_element_type(x, new_dtype=new_dtype)
    if new_dtype.kind not in "fc":
        return ans, None  # to an integer or bool: no derivative
    return ans, convert_element_type(t, new_dtype=new_dtype)


convert_element_type_p = Primitive("convert_element_type", _convert_impl, _convert_aval)
batching.defbatch_unary(convert_element_type_p)
jvp_rules[convert_element_type_p] = _convert_jvp
transpose_rules[convert_element_type_p] = lambda ct, x, *, new_dtype: [
    convert_element_type(ct, new_dtype=x.aval.dtype)
]


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
