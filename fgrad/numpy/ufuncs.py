"""Elementwise functions: NumPy's ufuncs on fgrad's elementwise primitives.

Each function is one line: its name, its primitive and its NumPy ufunc. With
no transform active it is the ufunc itself (one identity check of overhead).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.trace import EVAL_TRACE, Primitive, ctx
from ..primitives import elementwise as ew
from .operands import DIRECT_TYPES, Array, ArrayLike, operand

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "power", "square",
    "sqrt", "exp", "log", "sin", "cos", "tanh", "abs", "absolute", "sign", "maximum",
    "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "where",
]


def _unary(name: str, prim: Primitive, np_fn: Callable[..., Any]) -> Callable[[ArrayLike], Array]:
    _ctx, _eval = ctx, EVAL_TRACE

    def fn(x: ArrayLike, /) -> Array:
        trace = _ctx.trace
        if trace is _eval:
            return np_fn(x)
        return trace.process_primitive(prim, (x if type(x) in DIRECT_TYPES else operand(x),), {})

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"numpy.{np_fn.__name__}, differentiable and traceable."
    return fn


def _binary(name: str, prim: Primitive, np_fn: Callable[..., Any]) -> Callable[[ArrayLike, ArrayLike], Array]:
    _ctx, _eval = ctx, EVAL_TRACE

    def fn(x: ArrayLike, y: ArrayLike, /) -> Array:
        trace = _ctx.trace
        if trace is _eval:
            return np_fn(x, y)
        if type(x) not in DIRECT_TYPES:
            x = operand(x)
        if type(y) not in DIRECT_TYPES:
            y = operand(y)
        return trace.process_primitive(prim, (x, y), {})

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

_pow = ew.pow_p.bind
_integer_pow = ew.integer_pow_p.bind


def power(x: ArrayLike, y: ArrayLike, /) -> Array:
    """numpy.power; a Python int exponent becomes `integer_pow` (no log needed)."""
    if ctx.trace is EVAL_TRACE:
        return np.power(x, y)
    if type(y) is int:
        return _integer_pow(operand(x), y=y)
    return _pow(operand(x), operand(y))


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
