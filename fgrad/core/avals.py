"""Abstract values: what a transform knows about a value without its data.

A `ShapedArray` is a shape and a NumPy dtype. Instances are interned, so two
avals are equal exactly when they are the same object; that keeps dictionary
keys built from avals (abstract-eval caches, jaxpr environments) cheap.

A *weak* aval is that of a Python scalar: like NumPy (NEP 50), a Python float
next to a float32 array does not promote it. This module knows nothing about
traces or primitives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "ShapedArray", "get_aval", "dtype_name", "is_float_dtype", "is_inexact_dtype", "broadcast_shapes",
    "cached_aval",
]

_SHORT_NAMES = {
    "float64": "f64", "float32": "f32", "float16": "f16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint64": "u64", "uint32": "u32", "uint16": "u16", "uint8": "u8",
    "complex128": "c128", "complex64": "c64", "bool": "bool",
}


def dtype_name(dtype: np.dtype) -> str:
    """The short name JAX prints for a dtype: ``f64``, ``i32``, ``bool``."""
    return _SHORT_NAMES.get(dtype.name, dtype.name)


def is_float_dtype(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_inexact_dtype(dtype: np.dtype) -> bool:
    """Float or complex: the dtypes that carry derivatives."""
    return dtype.kind in "fc"


class ShapedArray:
    """The abstract value of an array: its shape and dtype (interned).

    >>> ShapedArray((3,), np.dtype("float64"))
    f64[3]
    """

    __slots__ = ("shape", "dtype", "weak_type", "ndim", "size", "__weakref__")
    _interned: dict[tuple[tuple[int, ...], np.dtype, bool], ShapedArray] = {}

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool
    ndim: int
    size: int

    def __new__(cls, shape: tuple[int, ...], dtype: Any, weak_type: bool = False) -> ShapedArray:
        key = (shape, dtype, weak_type)
        try:
            return cls._interned[key]
        except (KeyError, TypeError):
            pass
        shape = tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        key = (shape, dtype, weak_type)
        aval = cls._interned.get(key)
        if aval is None:
            aval = object.__new__(cls)
            aval.shape, aval.dtype, aval.weak_type = shape, dtype, weak_type
            aval.ndim = len(shape)
            aval.size = int(np.prod(shape, dtype=np.int64))
            cls._interned[key] = aval
        return aval

    def strip_weak_type(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def str_short(self) -> str:
        return f"{dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        return self.str_short()

    def __reduce__(self) -> Any:
        return (ShapedArray, (self.shape, self.dtype, self.weak_type))


_F64, _I64, _C128, _BOOL = (np.dtype(t) for t in ("float64", "int64", "complex128", "bool"))

# The aval of a scalar depends only on its type. Python scalars are weakly
# typed: they take the dtype of the array they meet. NumPy scalar types are
# added as they are met.
_scalar_avals: dict[type, ShapedArray] = {
    float: ShapedArray((), _F64, True),
    int: ShapedArray((), _I64, True),
    complex: ShapedArray((), _C128, True),
    bool: ShapedArray((), _BOOL, False),
}


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of a concrete value or a tracer.

    >>> get_aval(np.ones((2, 3), np.float32))
    f32[2,3]
    """
    if type(x) is np.ndarray:
        return ShapedArray(x.shape, x.dtype)
    aval = _scalar_avals.get(type(x))
    if aval is not None:
        return aval
    if isinstance(x, np.generic) and x.dtype.kind in "biufc":
        aval = _scalar_avals[type(x)] = ShapedArray((), x.dtype)
        return aval
    aval = getattr(x, "aval", None)  # tracers
    if isinstance(aval, ShapedArray):
        return aval
    try:  # other array-likes with a shape and a dtype
        shape, dtype = x.shape, x.dtype
    except AttributeError:
        pass
    else:
        return ShapedArray(shape, _numpy_dtype(dtype))
    for scalar_type in (bool, int, float, complex):  # subclasses, e.g. IntEnum
        if isinstance(x, scalar_type):
            return _scalar_avals[scalar_type]
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(
            f"fgrad cannot use a value of type {type(x).__name__} as an array: {x!r}. "
            "Pass NumPy arrays, Python scalars, or (nested) lists of numbers."
        )
    return ShapedArray(arr.shape, arr.dtype)


# Other libraries' dtypes that are not NumPy's, and NumPy's for them.
_foreign_dtypes: dict[Any, np.dtype] = {}


def _numpy_dtype(dtype: Any) -> np.dtype:
    """NumPy's dtype for another array library's (array_api_strict.float64,
    torch.float32: the name after the last dot)."""
    if isinstance(dtype, np.dtype):  # Dask's, CuPy's
        return dtype
    found = _foreign_dtypes.get(dtype)
    if found is None:
        try:
            found = np.dtype(dtype)
        except TypeError:
            found = np.dtype(str(dtype).rpartition(".")[2])
        _foreign_dtypes[dtype] = found
    return found


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of shapes; ValueError like NumPy's when they do not fit."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {n for n in dims if n != 1}
        if len(sizes) > 1:
            raise ValueError(
                "operands could not be broadcast together with shapes "
                + " ".join(str(s) for s in shapes)
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


# An abstract-eval cache holds at most this many entries; it starts over when full
# (programs use few distinct shapes, so this bound is rarely reached).
_CACHE_SIZE = 4096


def cached_aval(compute: Callable[..., Any]) -> Callable[..., Any]:
    """`compute(*avals, **params)` memoized, as a primitive's abstract eval: the
    same operand avals (interned, so cheap keys) and params give the same
    result. Errors are not cached; params that cannot be hashed (static
    indices holding arrays) skip the cache.

    >>> total_aval = cached_aval(lambda x, *, axes: ShapedArray((), x.dtype))
    >>> total_aval(ShapedArray((3,), np.dtype("float64")), axes=(0,))
    f64[]
    """
    cache: dict[Any, Any] = {}

    def abstract_eval(*avals: ShapedArray, **params: Any) -> Any:
        key = (avals, tuple(params.items())) if params else avals
        try:
            return cache[key]
        except KeyError:
            pass
        except TypeError:  # unhashable params
            return compute(*avals, **params)
        out = compute(*avals, **params)
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        cache[key] = out
        return out

    abstract_eval.__wrapped__ = compute  # type: ignore[attr-defined]
    return abstract_eval
