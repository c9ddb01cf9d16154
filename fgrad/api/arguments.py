"""Arguments and results at the boundary of the public API: argnums, pytree
flattening of functions, conversion of inputs and outputs, and the names of
arguments used in messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..core.avals import get_aval
from ..core.errors import ConcretizationTypeError
from ..core.libraries import NUMPY_VALUE_TYPES, ForeignConstant, Library, is_library_array, library_of
from ..core.trace import EVAL_TRACE, Tracer, ctx
from .pytree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

T = TypeVar("T")

__all__ = [
    "fun_name", "normalize_argnums", "flatten_fun", "to_input", "to_traced_input", "to_output", "leaf_names",
    "describe", "with_args", "check_float_inputs", "arguments_library", "library_to_retry",
    "where_the_data_is",
]


def fun_name(fun: Callable[..., Any]) -> str:
    name = getattr(fun, "__name__", None) or type(fun).__name__
    return name


def normalize_argnums(argnums: int | Sequence[int], nargs: int, fun: Callable[..., Any]) -> tuple[int, ...]:
    """Argnums as a tuple of non-negative ints; TypeError/ValueError when misused."""
    if type(argnums) is int and 0 <= argnums < nargs:
        return (argnums,)
    try:
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    except TypeError:  # not iterable: a float, None, ...
        nums = ()
    if not nums or not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    out = []
    for i in nums:
        j = i + nargs if i < 0 else i
        if not 0 <= j < nargs:
            raise ValueError(
                f"argnums={argnums!r} refers to positional argument {i}, but {fun_name(fun)} was "
                f"called with {nargs} positional argument{'s' if nargs != 1 else ''}"
            )
        out.append(j)
    if len(set(out)) != len(out):
        raise ValueError(f"argnums={argnums!r} names the same argument twice")
    return tuple(out)


class OutStore:
    """Where a flattened function leaves the structure of its output (and of
    its aux value, with has_aux)."""

    __slots__ = ("tree", "aux_tree")

    def __init__(self) -> None:
        self.tree: PyTreeDef | None = None
        self.aux_tree: PyTreeDef | None = None


def describe(x: Any) -> str:
    """A value as a message names it: `a tuple of length 3`, `an array f64[3]`."""
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    if isinstance(x, (Tracer, np.ndarray, np.generic)):
        return f"an array {x.aval.str_short() if isinstance(x, Tracer) else _short(x)}"
    return f"a {type(x).__name__}"


def _short(x: Any) -> str:
    return get_aval(x).str_short()


def flatten_fun(
    fun: Callable[..., Any], in_tree: PyTreeDef, has_aux: bool = False, name: str | None = None
) -> tuple[Callable[..., Any], OutStore]:
    """`fun` of pytrees as a function of flat leaves returning flat leaves.

    With `has_aux`, `fun` returns `(output, aux)` and the flat function returns
    `(output_leaves, aux_leaves)`. `name` is the user's function, for messages.
    """
    name = name or fun_name(fun)
    store = OutStore()

    def flat_fun(*leaves: Any) -> Any:
        try:
            out = fun(*tree_unflatten(in_tree, leaves))
        except ValueError as e:
            # `y[0] = traced` into a NumPy array: NumPy asks float() of the value, and
            # replaces fgrad's error with its own "setting an array element with a
            # sequence"; fgrad's, which says what to write instead, comes first.
            cause = e.__cause__
            if isinstance(cause, ConcretizationTypeError) and "array element with a sequence" in str(e):
                cause.args = ("y[i] = v wrote a traced value v into a NumPy array y, which NumPy does by "
                              f"converting v to a plain number. {cause.args[0]}",)
                raise cause.with_traceback(e.__traceback__) from None
            raise
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"has_aux=True requires {name} to return a pair (output, aux), but it "
                    f"returned {describe(out)}"
                )
            out, aux = out
            aux_leaves, store.aux_tree = tree_flatten(aux)
            out_leaves, store.tree = tree_flatten(out)
            return out_leaves, aux_leaves
        out_leaves, store.tree = tree_flatten(out)
        return out_leaves

    return flat_fun, store


def to_input(x: Any) -> Any:
    """A leaf argument as a value fgrad traces: arrays (of NumPy or another
    array library), NumPy scalars and tracers as they are; Python numbers as
    NumPy scalars; lists as arrays."""
    if isinstance(x, (np.ndarray, np.generic, Tracer)) or is_library_array(x):
        return x
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(
            f"fgrad cannot trace an argument of type {type(x).__name__}: {x!r}. Arguments "
            "must be arrays, numbers, or pytrees (tuples, lists, dicts) of them; pass other "
            "values through a closure or functools.partial."
        )
    return arr[()] if arr.ndim == 0 else arr


_PYTHON_NUMBERS = frozenset({int, float, complex})


def to_traced_input(x: Any) -> Any:
    """A leaf argument of a transform (jvp, vjp, grad, linearize, vmap, the
    Jacobians, make_jaxpr) as the value it traces: `to_input`'s, except that a
    Python int, float or complex stays one, weakly typed as in eager NumPy and
    in jit, so that `x * n` of a float32 `x` and a Python `n` is float32 there
    too. (Loop carries and custom rules keep `to_input`'s NumPy scalars: their
    avals must match the strongly typed ones their bodies return.)"""
    return x if type(x) in _PYTHON_NUMBERS else to_input(x)


def to_output(x: Any) -> Any:
    """A result leaving fgrad: a NumPy array the caller may write to, or a NumPy
    scalar for 0-d; tracers of an enclosing transform and arrays of other
    libraries pass through."""
    if isinstance(x, Tracer):
        return x
    if type(x) is not np.ndarray:
        if not isinstance(x, np.generic) and is_library_array(x):
            return x
        x = np.asarray(x)
    if x.ndim == 0:
        return x[()]
    if not x.flags.writeable:
        return x.copy()
    return x


def leaf_names(fun: Callable[..., Any], args: Sequence[Any], positions: Sequence[int]) -> list[str]:
    """A name for every leaf of the arguments at `positions`, for messages:
    ``x``, ``params['w']``, ``args[2][0]``."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for i in positions:
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
            base = params[i].name
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL:
            base = f"{params[-1].name}[{i - len(params) + 1}]"
        else:
            base = f"argument {i}"
        paths, _ = tree_flatten_with_path(args[i])
        names.extend(base + keystr(path) for path, _ in paths)
    return names


def with_args(
    fun: Callable[..., Any], args: tuple[Any, ...], nums: tuple[int, ...], kwargs: dict[str, Any]
) -> Callable[..., Any]:
    """`fun` as a function of the arguments at `nums`, the others fixed to `args`."""
    if not kwargs and nums == tuple(range(len(args))):
        return fun

    def partial_fun(*dyn: Any) -> Any:
        full = list(args)
        for i, x in zip(nums, dyn):
            full[i] = x
        return fun(*full, **kwargs)

    return partial_fun


def arguments_library(args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Library | None:
    """The array library other than NumPy that the arrays among `args` and
    `kwargs` (a transform's arguments, or its leaves and tangents) belong to,
    or None for NumPy: it is the library the transform computes on. Arguments
    that are all NumPy values are recognised without flattening anything, in
    about 70 ns for three: every gradient call asks."""
    for x in args:
        if type(x) not in NUMPY_VALUE_TYPES:
            break
    else:
        if not kwargs:
            return None
    return library_of(tree_flatten((list(args), kwargs or {}))[0])


def where_the_data_is(run: Callable[[Library | None], T], library: Library | None) -> T:
    """`run(library)` (the transform on the arguments' library, None for NumPy); if it
    meets another library's array through a closure or a global, `run` again on that
    library (`library_to_retry`)."""
    try:
        return run(library)
    except ForeignConstant as e:
        return run(library_to_retry(e, library))


def library_to_retry(error: ForeignConstant, library: Library | None) -> Library:
    """The library a transform runs again on after `error`: an array of it met
    through a closure or a global, while the transform computed on NumPy
    (`library` None) at the top, outside any other transform (an inner one
    lets the outermost run again). Otherwise `error` goes on."""
    if library is not None or ctx.trace is not EVAL_TRACE:
        raise error
    return error.library


_KIND_NAMES = {"f": "float", "fc": "float or complex"}


def check_float_inputs(transform: str, fun: Callable[..., Any], args: Sequence[Any],
                       nums: tuple[int, ...], leaves: list[Any], kinds: str = "f") -> None:
    """Differentiation with respect to `leaves` (the arguments at `nums`) needs
    inexact values: dtype kinds in `kinds` ("f", "fc", or "c" for holomorphic)."""
    for i, leaf in enumerate(leaves):
        dtype = get_aval(leaf).dtype
        if dtype.kind in kinds:
            continue
        names = leaf_names(fun, args, nums)
        original = tree_flatten([args[j] for j in nums])[0][i]
        given = f"the argument `{names[i]}` of {fun_name(fun)} has dtype {dtype}"
        if kinds == "c":
            raise TypeError(
                f"{transform}(holomorphic=True) requires complex inputs, but {given}. Convert it "
                "with .astype(complex), or drop holomorphic=True for a real function."
            )
        if dtype.kind == "c":
            raise TypeError(
                f"{transform} requires real inputs, but {given}. For a holomorphic function pass "
                "holomorphic=True; for other functions of complex inputs use fgrad.jvp directly."
            )
        shape = get_aval(leaf).shape
        if dtype == np.uint64 and shape[-1:] == (2,):  # the words of fgrad.random keys
            raise TypeError(
                f"{transform} requires {_KIND_NAMES[kinds]} inputs, but {given} and shape {shape}: "
                "a key of fgrad.random (or a batch of them), which has no derivative, and would be "
                "broken by a conversion to float. Leave it out of argnums (argnums=... naming only "
                "the arguments to differentiate), or pass it through a closure."
            )
        raise TypeError(
            f"{transform} requires {_KIND_NAMES[kinds]} inputs, but {given}"
            + (" (a Python int)" if type(original) is int else "")
            + ". Derivatives are defined for floating-point values: pass a float, e.g. "
            "2.0 instead of 2, or convert with fgrad.numpy.asarray(x, dtype=float). To "
            "keep an integer argument, leave it out of argnums."
        )
