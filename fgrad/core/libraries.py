"""Arrays of other libraries: Dask, array_api_strict, CuPy, PyTorch, any library
of the Python Array API standard, reached through array-api-compat (the
optional extra `array-api`, imported only when such an array is met).

Every primitive has one implementation, `prim.xp_impl(xp, *args, **params)`,
written against an array namespace `xp` (core/trace.py). This module is what
is particular to each library other than NumPy: a `Library` holds its name, its
namespace (array-api-compat's `array_namespace`) and the mapping between its
dtypes and NumPy's, which fgrad's avals use; `cast` makes an operand of the
dtype NumPy's promotion gives (the standard leaves promotion across kinds
undefined). A transform whose inputs are arrays of such a library runs on a
root trace of that library, `LibraryTrace`, in place of evaluation: it calls
each primitive's implementation with the library's namespace, so that results
stay arrays of that library and a Dask graph stays lazy. Nothing is converted
to NumPy behind the user's back: a primitive that only NumPy computes (its
values come from SciPy or LAPACK routines the standard lacks) raises
NotImplementedError (`numpy_only`), or, on a library that computes block by
block (Dask), runs on each block of NumPy data if it is elementwise
(`numpy_blockwise`). NumPy constants (a jaxpr's literals, zeros a rule
makes) become the library's arrays on the way in, which is a copy into the
library, never out of it.

NumPy's own arrays never come here: evaluation stays their fast path. A
program on NumPy arrays pays for this module only the check, once per
transform call, that its arguments are NumPy's (`api/arguments.py`
`arguments_library`), and one set lookup per constant a transform meets
(`check_constant`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .avals import get_aval
from .optional import require
from .trace import EVAL_TRACE, Primitive, Trace, Tracer, ctx, tracing

__all__ = [
    "Library", "LibraryTrace", "library_of", "library_of_value", "library_of_namespace", "current_library",
    "on_library", "is_library_array", "check_constant", "NUMPY_VALUE_TYPES", "ForeignConstant", "cast",
    "numpy_only", "numpy_blockwise",
    "not_implemented", "is_dask", "dtype_of", "on_every_namespace",
]

_NUMPY_DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)


class Library:
    """An array library other than NumPy: its name (the module its arrays come
    from, as messages say it), its Array-API namespace `xp` (array-api-compat's
    wrapper where the library needs one) and the mapping between its dtypes
    and NumPy's, which fgrad's avals use."""

    __slots__ = ("name", "xp", "blocks", "_to_numpy", "_from_numpy")

    def __init__(self, name: str, xp: Any, blocks: Callable[..., Any] | None = None) -> None:
        self.name = name
        self.xp = xp
        #: `blocks(fn, *args, dtype=...)`: `fn` (a NumPy function) applied to each
        #: block of the broadcast arguments, lazily; None for a library without blocks.
        self.blocks = blocks
        self._from_numpy: dict[np.dtype, Any] = {}
        self._to_numpy: dict[Any, np.dtype] = {}
        for dtype_name in _NUMPY_DTYPE_NAMES:
            theirs = getattr(xp, dtype_name, None)
            if theirs is not None:
                self._from_numpy[np.dtype(dtype_name)] = theirs
                self._to_numpy[theirs] = np.dtype(dtype_name)

    def dtype(self, dtype: Any) -> Any:
        """The library's dtype for a NumPy dtype; TypeError when it has none."""
        dtype = np.dtype(dtype)
        try:
            return self._from_numpy[dtype]
        except KeyError:
            raise TypeError(
                f"{self.name} has no dtype {dtype.name}: fgrad cannot compute this on its arrays. Use "
                f"one of {', '.join(d.name for d in self._from_numpy)}."
            ) from None

    def numpy_dtype(self, dtype: Any) -> np.dtype:
        """The NumPy dtype for one of the library's dtypes."""
        found = self._to_numpy.get(dtype)
        return found if found is not None else np.dtype(dtype)

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        """`x` (a NumPy value, a Python number or an array of the library) as an
        array of the library, of NumPy dtype `dtype` if given."""
        xp = self.xp
        if dtype is None:
            dtype = x.dtype if isinstance(x, (np.ndarray, np.generic)) else None
        theirs = None if dtype is None else self.dtype(dtype)
        if is_library_array(x):
            return x if theirs is None or x.dtype == theirs else xp.astype(x, theirs)
        return xp.asarray(x, dtype=theirs)

    def take_in(self, x: Any) -> Any:
        """`x` as an array of the library if it is a NumPy array or scalar (but
        not a loop's tape, an object array of lists of steps); anything else
        (the library's arrays, Python numbers, tracers) as it is."""
        if isinstance(x, (np.ndarray, np.generic)) and x.dtype != object:
            return self.asarray(x)
        return x

    def __repr__(self) -> str:
        return f"Library({self.name})"


_NOT_A_LIBRARY: frozenset[type] = frozenset({np.ndarray, float, int, complex, bool, type(None)})
_libraries: dict[type, Library | None] = {}
_by_namespace: dict[Any, Library] = {}
_lock = threading.Lock()
# Modules whose arrays array-api-compat knows without an `__array_namespace__`.
_KNOWN_MODULES = ("dask", "cupy", "torch", "jax", "ndonnx", "sparse")
# The array classes of those modules: array-api-compat is asked only about a type
# that may be an array, so that nothing imports it for NumPy's.
_KNOWN_ARRAY_CLASSES = frozenset({"Array", "ndarray", "Tensor", "ArrayImpl"})


def library_of_value(x: Any) -> Library | None:
    """The library of the array `x`; None for NumPy's arrays and scalars,
    Python numbers, tracers and anything that is not an array."""
    t = type(x)
    if t in _NOT_A_LIBRARY:
        return None
    try:
        return _libraries[t]
    except KeyError:
        pass
    found: Library | None = None
    root = t.__module__.partition(".")[0]
    may_be_array = hasattr(t, "__array_namespace__") or (
        root in _KNOWN_MODULES and t.__name__ in _KNOWN_ARRAY_CLASSES
    )
    if may_be_array and not issubclass(t, (np.ndarray, np.generic, Tracer)):
        require("array_api_compat", "array-api", f"fgrad on arrays of {root}")
        import array_api_compat

        xp = array_api_compat.array_namespace(x)
        name = "dask.array" if root == "dask" else root
        with _lock:  # one Library per namespace, whichever of its array types comes first
            found = _by_namespace.get(xp)
            if found is None:
                found = _by_namespace[xp] = Library(name, xp, _dask_blocks if root == "dask" else None)
    _libraries[t] = found
    return found


def library_of_namespace(xp: Any) -> Library:
    """The Library whose namespace is `xp` (another library's, met first through one of its arrays)."""
    return _by_namespace[xp]


def is_dask(xp: Any) -> bool:
    """Whether `xp` is Dask's namespace (which reshapes only by merging or
    splitting adjacent axes, and has no boolean-mask indexing)."""
    return xp is not np and _by_namespace[xp].name == "dask.array"


def cast(xp: Any, x: Any, dtype: Any = None) -> Any:
    """`x` (an array of `xp`, a NumPy value or a Python number) as an array of
    `xp` of the NumPy dtype `dtype` (its own if None): an implementation's
    operands in the dtype NumPy's promotion gives, which the standard leaves
    undefined across kinds."""
    if xp is np:
        return np.asarray(x, dtype)
    return _by_namespace[xp].asarray(x, dtype)


def dtype_of(xp: Any, dtype: Any) -> Any:
    """The dtype of `xp` for the NumPy dtype `dtype`; TypeError when it has none."""
    return np.dtype(dtype) if xp is np else _by_namespace[xp].dtype(dtype)


def not_implemented(name: str, xp: Any) -> NotImplementedError:
    """The error of a primitive `name` that has no implementation on `xp`."""
    return NotImplementedError(
        f"the primitive `{name}` has no implementation for arrays of {_by_namespace[xp].name} "
        f"in fgrad, and fgrad does not convert them to NumPy behind your back. Convert the "
        f"arrays to NumPy yourself (e.g. with np.asarray, or .compute() for Dask) before calling "
        f"the transformed function, or avoid the function that binds `{name}`."
    )


def on_every_namespace(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The implementation of a primitive whose NumPy implementation `fn` only
    binds primitives or runs jaxprs (control flow, custom rules, effects): the
    same on every namespace, its equations computed by the trace of the
    library. Evaluation on NumPy calls `fn` itself (`numpy_form`)."""

    def impl(xp: Any, *args: Any, **params: Any) -> Any:
        return fn(*args, **params)

    impl.numpy_form = fn  # type: ignore[attr-defined]
    return impl


def numpy_only(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The implementation of a primitive `name` that only NumPy computes (`fn`,
    its NumPy function): NotImplementedError on another library."""

    def impl(xp: Any, *args: Any, **params: Any) -> Any:
        if xp is not np:
            raise not_implemented(name, xp)
        return fn(*args, **params)

    impl.numpy_form = fn  # type: ignore[attr-defined]
    return impl


def numpy_blockwise(
    name: str, fn: Callable[..., Any], abstract_eval: Callable[..., Any]
) -> Callable[..., Any]:
    """The implementation of an elementwise primitive `name` whose values only
    the NumPy function `fn` computes (SciPy's special functions): on a library
    that computes block by block (Dask), `fn` on each block, lazily;
    NotImplementedError on another."""

    def impl(xp: Any, *args: Any, **params: Any) -> Any:
        if xp is np:
            return fn(*args, **params)
        library = _by_namespace[xp]
        if library.blocks is None:
            raise not_implemented(name, xp)
        dtype = abstract_eval(*(get_aval(a) for a in args), **params).dtype
        return library.blocks(functools.partial(fn, **params), *args, dtype=dtype)

    impl.numpy_form = fn  # type: ignore[attr-defined]
    return impl


def _dask_blocks(fn: Callable[..., Any], *args: Any, dtype: np.dtype) -> Any:
    # Dask's elementwise application: it broadcasts, unifies the operands'
    # chunks and splits NumPy operands into matching blocks (map_blocks would
    # hand a NumPy operand whole to every block).
    from dask.array.core import elemwise

    return elemwise(fn, *args, dtype=dtype)


def is_library_array(x: Any) -> bool:
    """Whether `x` is an array of a library other than NumPy."""
    return library_of_value(x) is not None


def library_of(values: Iterable[Any]) -> Library | None:
    """The one library other than NumPy whose arrays are among `values`, or
    None; TypeError when arrays of two such libraries are mixed."""
    found: Library | None = None
    for v in values:
        if type(v) in NUMPY_VALUE_TYPES:
            continue
        lib = library_of_value(v)
        if lib is None or lib is found:
            continue
        if found is not None:
            raise TypeError(
                f"the arguments mix arrays of {found.name} and of {lib.name}; fgrad computes on one "
                f"array library at a time. Convert them to one library first."
            )
        found = lib
    return found


class LibraryTrace(Trace):
    """Evaluation on the arrays of `library`: the root trace of a transform
    whose inputs are that library's arrays. A new one is made for each call
    and made current in the calling thread (`on_library`)."""

    __slots__ = ("library",)

    def __init__(self, library: Library) -> None:
        super().__init__(None, f"evaluation on {library.name}")
        self.state = ctx.__dict__
        self.library = library

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        lib = self.library
        if any(type(a) is np.ndarray and a.dtype == object for a in args):
            return prim.impl(*args, **params)  # a loop's tape, NumPy's list of steps on any library
        return prim.xp_impl(lib.xp, *map(lib.take_in, args), **params)


#: Types of the values a transform meets most, none of them another library's array.
NUMPY_VALUE_TYPES = frozenset({
    np.ndarray, float, int, bool, complex, type(None), np.float64, np.float32, np.int64, np.int32,
    np.bool_, np.complex128, np.complex64,
})


class ForeignConstant(TypeError):
    """A transform computing on NumPy met an array of `library` that is not one
    of its arguments (a closure or a global). The transform's public function
    catches it and runs again on that library (`api/arguments.py`
    `on_the_arguments_library`), so that it computes where the data is; met
    anywhere else, it is the error its message says."""

    def __init__(self, message: str, library: Library) -> None:
        super().__init__(message)
        self.library = library


def check_constant(x: Any, trace: Trace) -> None:
    """Called by a transform on a value it meets that is not a tracer, when its
    type is not one of NUMPY_VALUE_TYPES: an array of another library must be
    an array of the library the transform runs on. One met while a jaxpr is
    being staged (jit, make_jaxpr) becomes one of its constants, and jit runs
    on the library of its constants. One met by a transform computing on NumPy
    raises ForeignConstant, and the transform runs again on that library; one
    of a third library raises a TypeError."""
    lib = library_of_value(x)
    if lib is None:
        return
    root = trace
    while root.parent is not None:
        if getattr(root, "stage_constants", False):  # a constant of the jaxpr being staged
            return
        root = root.parent
    running = root.library if isinstance(root, LibraryTrace) else None
    if running is lib:
        return
    if running is None:
        raise ForeignConstant(
            f"{trace.transform} met an array of {lib.name} that is not one of its arguments (a closure "
            "or a global?), while it computes on NumPy arrays. The transformations run again on that "
            "library when they meet such an array; this one was met where they cannot (inside a "
            "function of their results called later?): pass the array to the function as an "
            "argument (it need not be differentiated: leave it out of argnums).", lib)
    raise TypeError(
        f"{trace.transform} met an array of {lib.name} that is not one of its arguments (a closure "
        f"or a global?), while it computes on arrays of {running.name}. fgrad computes on one array "
        "library at a time and does not convert arrays behind your back: convert the arrays to one "
        "library first."
    )


_NO_LIBRARY = contextlib.nullcontext()  # reusable: it holds nothing


def on_library(
    values: Iterable[Any], library: Library | None = None
) -> contextlib.AbstractContextManager[Any]:
    """A context that makes the library of `values` (or `library`) the root of
    the transforms run inside it: when the current trace is evaluation and
    some value is an array of a library other than NumPy. Otherwise (NumPy
    values, or inside another transform, which already chose) it does nothing."""
    if library is None and not values:
        return _NO_LIBRARY
    if ctx.trace is not EVAL_TRACE and ctx.trace.parent is not None:
        return _NO_LIBRARY
    lib = library if library is not None else library_of(values)
    if lib is None or isinstance(ctx.trace, LibraryTrace):
        return _NO_LIBRARY
    return tracing(LibraryTrace(lib))


def current_library() -> Library | None:
    """The library at the root of the current trace, if not NumPy."""
    root = ctx.trace
    while root.parent is not None:
        root = root.parent
    return root.library if isinstance(root, LibraryTrace) else None
