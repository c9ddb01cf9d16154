"""How traced values answer Python operators, array methods and plain NumPy
calls: fills `core.trace.array_ops`, which `Tracer` consults."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.trace import Tracer, array_ops
from . import creation, fft, indexing, linalg, products, reductions, shaping, sorting, ufuncs

__all__ = ["FUNCTIONS"]


def _method_reshape(x: Any, *shape: Any, order: str = "C") -> Any:
    return shaping.reshape(x, shape[0] if len(shape) == 1 else shape, order=order)


def _method_transpose(x: Any, *axes: Any) -> Any:
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        return shaping.transpose(x, axes[0])
    return shaping.transpose(x, axes or None)


def _item(x: Any) -> Any:
    return x._concrete("item").item()


def _tolist(x: Any) -> Any:
    value = x._concrete("tolist")
    return value.tolist() if isinstance(value, Tracer) else np.asarray(value).tolist()


def _in_place(name: str) -> Callable[..., Any]:
    """ndarray.`name`, which changes the array and returns None: traced arrays refuse it
    (returning a new array instead would leave the caller's array silently unchanged)."""

    def method(x: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"ndarray.{name} {name}s in place, and traced arrays cannot be changed: use "
            f"y = fnp.{name}(x) (import fgrad.numpy as fnp)"
        )

    return method


_METHODS: dict[str, Callable[..., Any]] = {
    "sum": reductions.sum, "mean": reductions.mean, "max": reductions.max,
    "min": reductions.min, "reshape": _method_reshape, "transpose": _method_transpose,
    "squeeze": shaping.squeeze, "ravel": shaping.ravel, "flatten": shaping.ravel,
    "dot": products.dot, "astype": creation.astype, "item": _item, "tolist": _tolist,
    "copy": lambda x: x, "__array_namespace__": lambda x: None,
    "clip": ufuncs.clip, "round": ufuncs.round, "conj": ufuncs.conj, "conjugate": ufuncs.conj,
    "prod": reductions.prod, "var": reductions.var, "std": reductions.std,
    "argmax": reductions.argmax, "argmin": reductions.argmin, "all": reductions.all,
    "any": reductions.any, "cumsum": reductions.cumsum, "cumprod": reductions.cumprod,
    "sort": _in_place("sort"), "argsort": sorting.argsort, "searchsorted": sorting.searchsorted,
    "partition": _in_place("partition"), "argpartition": sorting.argpartition,
    "take": indexing.take, "diagonal": indexing.diagonal, "trace": indexing.trace,
    "repeat": shaping.repeat, "swapaxes": shaping.swapaxes,
}

def _reflected(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        return fn(other, self)

    method.__name__ = f"r{fn.__name__}"
    return method


# Python operators on tracers are the fgrad.numpy functions themselves (a
# function on a class is a method: `x * y` calls multiply(x, y) directly).
_OPERATORS: dict[str, Callable[..., Any]] = {
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.absolute,
    "__add__": ufuncs.add, "__radd__": _reflected(ufuncs.add),
    "__sub__": ufuncs.subtract, "__rsub__": _reflected(ufuncs.subtract),
    "__mul__": ufuncs.multiply, "__rmul__": _reflected(ufuncs.multiply),
    "__truediv__": ufuncs.divide, "__rtruediv__": _reflected(ufuncs.divide),
    "__pow__": ufuncs.power, "__rpow__": _reflected(ufuncs.power),
    "__matmul__": products.matmul, "__rmatmul__": _reflected(products.matmul),
    "__lt__": ufuncs.less, "__le__": ufuncs.less_equal,
    "__gt__": ufuncs.greater, "__ge__": ufuncs.greater_equal,
    "__floordiv__": ufuncs.floor_divide, "__rfloordiv__": _reflected(ufuncs.floor_divide),
    "__mod__": ufuncs.remainder, "__rmod__": _reflected(ufuncs.remainder),
    "__divmod__": ufuncs.divmod, "__rdivmod__": _reflected(ufuncs.divmod),
    "__and__": ufuncs.bitwise_and, "__rand__": _reflected(ufuncs.bitwise_and),
    "__or__": ufuncs.bitwise_or, "__ror__": _reflected(ufuncs.bitwise_or),
    "__xor__": ufuncs.bitwise_xor, "__rxor__": _reflected(ufuncs.bitwise_xor),
    "__invert__": ufuncs.invert,
}
for _name, _fn in _OPERATORS.items():
    setattr(Tracer, _name, _fn)

array_ops.update({
    "real": ufuncs.real, "imag": ufuncs.imag, "at": indexing.at,
    "equal": ufuncs.equal, "not_equal": ufuncs.not_equal, "getitem": indexing.getitem,
    "transpose": shaping.transpose,
})
array_ops.update({"method:" + name: fn for name, fn in _METHODS.items()})

# The NumPy functions a traced value answers, through __array_ufunc__ and
# __array_function__: each public function of a module below answers the NumPy
# function of the same name in the matching NumPy namespace.
_UFUNCS: dict[Any, Callable[..., Any]] = {}
FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim, np.size: lambda a: a.size,
}
_NAMESPACES = [
    (module, np) for module in (creation, indexing, products, reductions, shaping, sorting, ufuncs)
] + [(linalg, np.linalg), (fft, np.fft)]
for _module, _namespace in _NAMESPACES:
    for _name in _module.__all__:
        _target = getattr(_namespace, _name, None)
        if isinstance(_target, np.ufunc):
            _UFUNCS[_target] = getattr(_module, _name)
        elif callable(_target):
            FUNCTIONS[_target] = getattr(_module, _name)


def _fgrad_has(name: str) -> bool:
    """Whether fgrad.numpy has the function `name` ("sin", "linalg.eig", "add.reduce")."""
    import importlib

    target: Any = importlib.import_module("fgrad.numpy")
    for part in name.split("."):
        target = getattr(target, part, None)
    return callable(target)


def _unsupported(kind: str, name: str) -> TypeError:
    if _fgrad_has(name):
        advice = (f"fgrad.numpy.{name} exists: call it instead (import fgrad.numpy as fnp; "
                  f"fnp.{name}(...)), so that the call is traced.")
    else:
        advice = f"fgrad.numpy has no {name}: rewrite it with functions fgrad.numpy has."
    return TypeError(
        f"{kind} numpy.{name} was called on a traced value, and fgrad does not support it yet. "
        f"{advice} See docs/numpy-coverage.md for the list of supported functions."
    )


def _scipy_special_ufunc(ufunc: Any) -> TypeError | None:
    """The error for a ufunc of scipy.special called on a traced value, naming fgrad's."""
    special = sys.modules.get("scipy.special")
    name = ufunc.__name__
    if special is None or getattr(special, name, None) is not ufunc:
        return None
    import fgrad.scipy.special

    if hasattr(fgrad.scipy.special, name):
        advice = (f"Call fgrad.scipy.special.{name} instead (import fgrad.scipy.special), which has "
                  "SciPy's values and fgrad's derivatives.")
    else:
        advice = (f"fgrad.scipy.special has no {name}: rewrite it with functions fgrad.scipy.special "
                  "or fgrad.numpy have.")
    return TypeError(f"scipy.special.{name} was called on a traced value, and SciPy's ufuncs compute on "
                     f"plain arrays only. {advice}")


def _array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    fn = _UFUNCS.get(ufunc)
    if fn is None or method != "__call__":
        name = ufunc.__name__ + ("" if method == "__call__" else f".{method}")
        raise _scipy_special_ufunc(ufunc) or _unsupported("the ufunc", name)
    if any(v is not None for k, v in kwargs.items() if k != "out") or kwargs.get("out"):
        raise TypeError(
            f"numpy.{ufunc.__name__} was called on a traced value with arguments "
            f"{sorted(kwargs)}; fgrad supports the plain call only (no out=, where=, dtype=)"
        )
    return fn(*inputs)


def _array_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    fn = FUNCTIONS.get(func)
    if fn is None:
        module = (getattr(func, "__module__", None) or "numpy").removeprefix("numpy")
        name = f"{module.lstrip('.')}.{func.__name__}" if module else func.__name__
        raise _unsupported("the function", name)
    return fn(*args, **kwargs)


array_ops["__array_ufunc__"] = _array_ufunc
array_ops["__array_function__"] = _array_function
