"""How traced values answer Python operators, array methods and plain NumPy
calls: fills `core.trace.array_ops`, which `Tracer` consults."""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import get_aval
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


# The in-place operators' opcodes (a += b, a *= b, ...), which NumPy turns into
# ufunc(a, b, out=(a,)), exactly as an explicit call with out=a.
if sys.version_info >= (3, 11):
    _IN_PLACE_OPS = {(dis.opmap["BINARY_OP"], n) for n, (name, _) in enumerate(dis._nb_ops)  # type: ignore[attr-defined]
                     if name.startswith("NB_INPLACE_")}
else:  # pragma: no cover - Python 3.10
    _IN_PLACE_OPS = {(code, None) for name, code in dis.opmap.items() if name.startswith("INPLACE_")}


def _called_by_in_place_operator(depth: int) -> bool:
    """Whether the Python frame `depth` levels up is running an in-place operator
    (``a += b``) rather than a call (``numpy.add(a, b, out=a)``, whose result a
    statement may drop)."""
    frame = sys._getframe(depth + 1)
    code, at = frame.f_code.co_code, frame.f_lasti
    op = code[at]
    return (op, code[at + 1] if sys.version_info >= (3, 11) else None) in _IN_PLACE_OPS


def _rebound_in_place(fn: Callable[..., Any], ufunc: Any, inputs: tuple[Any, ...]) -> Any:
    """``a += v`` for a read-only NumPy array `a` and a traced `v`: the traced result, to
    which Python rebinds `a`, as JAX does. Sound because `a` is read-only: whoever else
    holds it sees the value it always had, and NumPy itself would have raised. The result
    keeps `a`'s shape and dtype, as NumPy's in-place operators do."""
    a = inputs[0]
    result = fn(*inputs)
    aval = get_aval(result)
    if aval.shape != a.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {a.shape} doesn't match the broadcast "
            f"shape {aval.shape} (numpy.{ufunc.__name__} in place on a read-only array and a traced "
            "value: write a = a op v to get the broadcast shape)")
    if aval.dtype != a.dtype:
        if not np.can_cast(aval.dtype, a.dtype, "same_kind"):
            raise TypeError(
                f"Cannot cast ufunc '{ufunc.__name__}' output from {aval.dtype!r} to {a.dtype!r} with "
                "casting rule 'same_kind' (in place on a read-only array and a traced value: write "
                "a = a op v to get the promoted dtype)")
        result = creation.astype(result, a.dtype)
    return result


def _out_error(ufunc: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any], in_place: bool) -> TypeError:
    name = ufunc.__name__
    if in_place:
        a = inputs[0]
        given = (f"a NumPy array ({a.dtype}{list(a.shape)}, writeable)" if isinstance(a, np.ndarray)
                 else f"a {type(a).__name__}")
        return TypeError(
            f"a {_SYMBOLS.get(name, 'op')}= v (numpy.{name} in place) with a traced v would write it into "
            f"{given}, which cannot hold a traced value. Write a = a {_SYMBOLS.get(name, 'op')} v "
            "instead, which makes a new array; or make a with fgrad.numpy inside the transformed "
            "function (fnp.zeros, fnp.zeros_like, fnp.ones, fnp.full, ...): those arrays are read-only "
            "there, as JAX's, and a += v rebinds a to the result.")
    return TypeError(
        f"numpy.{name} was called on a traced value with arguments {sorted(kwargs)}; fgrad supports "
        f"the plain call only (no out=, where=, dtype=): write y = fnp.{name}(...) and use its result "
        "(import fgrad.numpy as fnp), since a traced value cannot be written into a NumPy array.")


_SYMBOLS = {
    "add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/",
    "floor_divide": "//", "remainder": "%", "power": "**", "matmul": "@", "bitwise_and": "&",
    "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>",
}


def _array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    fn = _UFUNCS.get(ufunc)
    if fn is None or method != "__call__":
        name = ufunc.__name__ + ("" if method == "__call__" else f".{method}")
        raise _scipy_special_ufunc(ufunc) or _unsupported("the ufunc", name)
    out = kwargs.get("out")
    if any(v is not None for k, v in kwargs.items() if k != "out") or out:
        # Called from Tracer.__array_ufunc__, itself called by NumPy (C) from the user's frame.
        in_place = (not any(v is not None for k, v in kwargs.items() if k != "out")
                    and len(inputs) == 2 and isinstance(out, tuple) and len(out) == 1
                    and out[0] is inputs[0] and _called_by_in_place_operator(2))
        a = inputs[0]
        if in_place and type(a) is np.ndarray and not a.flags.writeable:
            return _rebound_in_place(fn, ufunc, inputs)
        raise _out_error(ufunc, inputs, kwargs, in_place)
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
