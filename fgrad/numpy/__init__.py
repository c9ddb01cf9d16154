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
from . import fft, linalg
from .creation import *  # noqa: F403
from .creation import __all__ as _creation
from .indexing import *  # noqa: F403
from .indexing import __all__ as _indexing
from .operands import Array, ArrayLike
from .products import *  # noqa: F403
from .products import __all__ as _products
from .reductions import *  # noqa: F403
from .reductions import __all__ as _reductions
from .shaping import *  # noqa: F403
from .shaping import __all__ as _shaping
from .sorting import *  # noqa: F403
from .sorting import __all__ as _sorting
from .ufuncs import *  # noqa: F403
from .ufuncs import __all__ as _ufuncs

__all__ = [
    "Array", "ArrayLike", "fft", "linalg",
    "bool_", "complex64", "complex128", "dtype", "e", "float16", "float32", "float64", "inf",
    "int8", "int16", "int32", "int64", "nan", "ndarray", "newaxis", "pi", "uint8",
    *_creation, *_indexing, *_products, *_reductions, *_shaping, *_sorting, *_ufuncs,
]


def __getattr__(name: str) -> object:
    # numpy.random (NumPy's generators, for data) is imported on first use, as
    # NumPy itself does: it would otherwise double the cost of `import fgrad`.
    if name == "random":
        import numpy.random

        return numpy.random
    raise AttributeError(f"module 'fgrad.numpy' has no attribute {name!r}")
