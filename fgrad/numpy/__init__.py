"""fgrad.numpy: NumPy's API, differentiable and traceable.

Functions take and return what NumPy's do (float64 by default, NumPy dtype
promotion and broadcasting; results are `numpy.ndarray`, or NumPy scalars for
0-d). Under a transform they take and return tracers instead. With no
transform active each function is NumPy's own after one identity check.

>>> import fgrad, fgrad.numpy as fnp
>>> fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2))(fnp.zeros(3))
array([0., 0., 0.])
"""

from numpy import (
    bool_,
    complex64,
    complex128,
    dtype,
    e,
    float16,
    float32,
    float64,
    inf,
    int8,
    int16,
    int32,
    int64,
    nan,
    ndarray,
    newaxis,
    pi,
    uint8,
)

from . import dispatch as _dispatch  # noqa: F401  (installs the tracers' operators)
from . import linalg
from .creation import (
    arange,
    array,
    asarray,
    astype,
    concatenate,
    empty,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    stack,
    zeros,
    zeros_like,
)
from .operands import Array, ArrayLike
from .products import dot, matmul
from .reductions import amax, amin, max, mean, min, sum
from .shaping import expand_dims, ravel, reshape, squeeze, transpose
from .ufuncs import (
    abs,
    absolute,
    add,
    cos,
    divide,
    equal,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    sign,
    sin,
    sqrt,
    square,
    subtract,
    tanh,
    true_divide,
    where,
)

__all__ = [
    "Array", "ArrayLike", "linalg", "random",
    "bool_", "complex64", "complex128", "dtype", "e", "float16", "float32", "float64", "inf",
    "int8", "int16", "int32", "int64", "nan", "ndarray", "newaxis", "pi", "uint8",
    "arange", "array", "asarray", "astype", "concatenate", "empty", "eye", "full", "full_like",
    "linspace", "ones", "ones_like", "stack", "zeros", "zeros_like",
    "dot", "matmul", "amax", "amin", "max", "mean", "min", "sum",
    "expand_dims", "ravel", "reshape", "squeeze", "transpose",
    "abs", "absolute", "add", "cos", "divide", "equal", "exp", "greater", "greater_equal",
    "less", "less_equal", "log", "maximum", "minimum", "multiply", "negative", "not_equal",
    "power", "sign", "sin", "sqrt", "square", "subtract", "tanh", "true_divide", "where",
]


def __getattr__(name: str) -> object:
    # numpy.random (NumPy's generators, for data) is imported on first use, as
    # NumPy itself does: it would otherwise double the cost of `import fgrad`.
    if name == "random":
        import numpy.random

        return numpy.random
    raise AttributeError(f"module 'fgrad.numpy' has no attribute {name!r}")
