"""Primitives, `bind`, traces, tracers and the current-trace context.

Dispatch is "stackless" (JAX's autodidax2): there is one *current trace*. A
primitive's `bind` hands the call to it. A transform makes a new trace whose
parent is the trace that was current, makes it current while the user's
function runs, and evaluates its rules with the parent current again, so the
simpler primitives those rules bind go one level down. A value belongs to a
trace only if it is a tracer whose `_trace` is that very trace object; any
other value, including a tracer of an enclosing transform, is a constant to
it. No levels are compared, so nested transforms cannot confuse their
perturbations.

With no transform active the current trace is `EVAL_TRACE`, which calls the
primitive's NumPy implementation. Functions in `fgrad.numpy` test for it first
and call NumPy directly; the hottest (`bind`, the ufuncs) first ask
`transforming`, the threads that have a transform open, and while there are
none do not read the thread-local current trace at all.

This module knows nothing about jaxprs, derivatives or NumPy's API; the
NumPy layer installs the array operators of `Tracer` and fills `array_ops`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from threading import get_ident
from typing import TYPE_CHECKING, Any

import numpy as np

from .avals import ShapedArray
from .errors import TracerArrayConversionError, UnexpectedTracerError, scipy_hint

__all__ = [
    "Primitive",
    "Trace",
    "Tracer",
    "EvalTrace",
    "EVAL_TRACE",
    "ctx",
    "array_ops",
    "passthrough_types",
    "LARGE_ARRAY_BYTES",
    "transforming",
    "Hidden",
]

# Arrays at least this large are worth checking whether their buffer can be
# reused (below it, the check costs more than a new array).
LARGE_ARRAY_BYTES = 1 << 18


class Primitive:
    """The unit every transform understands: a name, its implementation and a
    shape rule. Transform rules live in the tables below, keyed by primitive.

    The implementation is one function, `xp_impl(xp, *args, **params)`, written
    against an array namespace `xp` of the Python Array API standard: NumPy
    (whose namespace follows the standard since NumPy 2) or another library's
    (core/libraries.py), found once per transform call. `impl(*args, **params)`
    is evaluation on NumPy, what `bind` calls with no transform active: a
    NumPy-specific fast path given as `numpy` where measurement says it pays,
    else the implementation with `xp` bound to NumPy (or the NumPy function an
    implementation was made from, its `numpy_form`).

    >>> sin_p = Primitive("sin", lambda xp, x: xp.sin(x), lambda x: x)
    >>> sin_p.bind(0.0)
    np.float64(0.0)
    """

    __slots__ = ("name", "impl", "xp_impl", "abstract_eval", "multiple_results")

    def __init__(
        self,
        name: str,
        xp_impl: Callable[..., Any],
        abstract_eval: Callable[..., Any],
        multiple_results: bool = False,
        *,
        numpy: Callable[..., Any] | None = None,
    ) -> None:
        self.name = name
        self.xp_impl = xp_impl
        if numpy is None:  # an implementation made from a NumPy function carries it (core/libraries.py)
            numpy = getattr(xp_impl, "numpy_form", None) or functools.partial(xp_impl, np)
        self.impl = numpy
        self.abstract_eval = abstract_eval
        self.multiple_results = multiple_results

    def bind(self, *args: Any, **params: Any) -> Any:
        if not transforming.threads:  # no transform in any thread: just compute, no thread-local read
            return self.impl(*args, **params)
        trace = ctx.trace
        if trace is EVAL_TRACE:  # none in this thread
            return self.impl(*args, **params)
        return trace.process_primitive(self, args, params)

    def bind_on(self, trace: Trace, *args: Any) -> Any:
        """`bind(*args)` (no params) for a caller that has read the current
        trace already and found it is not evaluation: fgrad.numpy's ufuncs, the
        hottest callers, which test for evaluation first, read it once, not twice."""
        return trace.process_primitive(self, args, _NO_PARAMS)

    def __repr__(self) -> str:
        return self.name


_NO_PARAMS: dict[str, Any] = {}  # shared by bind_on's calls: never mutated


class Trace:
    """An interpreter of primitives. `parent` is the trace that was current when
    this one was made; `dead` is set when its transform returns, after which any
    of its tracers that is used raises `UnexpectedTracerError`, as does one used
    in a thread other than `thread`, the one that made the trace.

    While a custom rule's Python code runs below this trace (higher_order/custom.py),
    `dead` holds a `Hidden` instead: its tracers may not be used then either.

    A trace runs in the thread that made it, so `state` holds that thread's
    current-trace storage, `ctx.__dict__` there: rules that make another trace
    current for a moment (`state["trace"] = ...`) switch it there without the
    cost of a thread-local lookup. A root trace (evaluation, no parent) is
    shared by all threads and has no `state`.
    """

    __slots__ = ("parent", "transform", "dead", "thread", "state")

    def __init__(self, parent: Trace | None, transform: str) -> None:
        self.parent = parent
        self.transform = transform  # for messages: "grad of f", "make_jaxpr of f"
        self.dead: bool | Hidden = False
        self.thread = get_ident()
        self.state: dict[str, Any] = None if parent is None else ctx.__dict__  # type: ignore[assignment]

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def check_foreign(self, x: Tracer) -> None:
        """Called on a tracer of another trace: fine if that trace is still
        running, in this thread (then it is one of this trace's ancestors).
        This trace is one of the current thread's, so its `thread` says which."""
        trace = x._trace
        if trace.dead or trace.thread != self.thread:
            raise escaped_tracer_error(x)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.transform})"


class EvalTrace(Trace):
    """Evaluation: the root trace, calling each primitive's NumPy implementation.

    It does not look for tracers among the arguments: only a tracer whose
    transform has returned can reach it, and NumPy hands such a tracer to its
    `__array_ufunc__`, `__array_function__` or `__array__`, which raise
    `UnexpectedTracerError`.
    """

    __slots__ = ()

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        return prim.impl(*args, **params)


EVAL_TRACE = EvalTrace(None, "evaluation")


class _Context(threading.local):
    """The current trace, one per thread: `ctx.trace`. Each thread starts with
    the class's `initial` (evaluation; set it on the class, `type(ctx).initial`,
    to change what new threads start with) and its transforms nest on it
    independently of other threads. No `__slots__`: a slot would be one value
    shared by all threads. Reading `ctx.trace` costs about 20 ns more than an
    attribute of a plain object: the hot paths skip it while no thread
    transforms (`transforming`), read it once per operation otherwise, and
    transforms switch the current trace through `Trace.state` instead, this
    thread's `ctx.__dict__`, a plain dict."""

    initial: Trace = EVAL_TRACE

    def __init__(self) -> None:
        self.trace: Trace = self.initial


ctx = _Context()


class _Transforming:
    """The threads that may have a current trace other than evaluation: those
    inside a `tracing` block, or whose evaluation debug_nans replaced. While
    there are none, no thread transforms anything, and the hot paths (`bind`,
    fgrad.numpy's ufuncs) skip reading the thread-local `ctx.trace`: a plain
    attribute costs about 7 ns, the thread-local 26 ns.

    Whoever makes a trace other than EVAL_TRACE current in a thread enters
    first and leaves after (`enter`, `leave`, given the thread's `ctx.__dict__`,
    which counts how deep it is). A thread's id is added at its first entry and
    discarded at its last exit: one set operation, atomic, so no lock."""

    __slots__ = ("threads",)

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def enter(self, state: dict[str, Any]) -> None:
        depth = state.get("depth", 0)
        if not depth:
            self.threads.add(get_ident())  # before the depth: an interruption leaves it in, the safe side
        state["depth"] = depth + 1

    def leave(self, state: dict[str, Any]) -> None:
        depth = state["depth"] - 1
        state["depth"] = depth
        if not depth:
            self.threads.discard(get_ident())

    def hold_forever(self) -> None:
        """No thread evaluates plainly from now on (FGRAD_DEBUG_NANS)."""
        self.threads.add(-1)


transforming = _Transforming()


class tracing:
    """Make `trace` current for the duration of a `with` block, and mark it dead
    afterwards: its tracers must not be used once its transform has returned."""

    __slots__ = ("trace", "prev")

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def __enter__(self) -> Trace:
        state = self.trace.state  # a new trace, made in this thread
        transforming.enter(state)  # before the trace is current
        self.prev = state["trace"]
        state["trace"] = self.trace
        return self.trace

    def __exit__(self, *exc: object) -> None:
        state = self.trace.state
        state["trace"] = self.prev
        self.trace.dead = True
        transforming.leave(state)  # after it is not


class Hidden:
    """What a trace's `dead` holds while a custom function's Python code runs
    below it, on the values underneath its tracers (higher_order/custom.py):
    a tracer of it used there is a value that code closed over, which that
    trace cannot see. Using one raises, as a dead trace's do, and sets `used`,
    so that the caller can run the function another way."""

    __slots__ = ("used", "where")

    def __init__(self, where: str) -> None:
        self.used = False
        self.where = where  # for the message: "the jvp rule of f"

    def __bool__(self) -> bool:
        return True


def escaped_tracer_error(x: Tracer) -> UnexpectedTracerError:
    """The error for using `x` after its transform returned, or in another thread."""
    trace = x._trace
    if isinstance(trace.dead, Hidden):
        trace.dead.used = True
        return UnexpectedTracerError(
            f"A traced value ({x.aval.str_short()}) of `{trace.transform}` was used by "
            f"{trace.dead.where}, which closes over it and runs below that transform, on the values "
            "underneath its traced arguments. Pass the value to the function as an argument instead "
            "of closing over it."
        )
    if not trace.dead:
        return UnexpectedTracerError(
            f"A traced value ({x.aval.str_short()}) created by `{trace.transform}` in thread "
            f"{trace.thread} was used in thread {get_ident()}: a traced value crossed threads. "
            "Each thread runs its own transforms, and a value traced by one means nothing to "
            "another (it was probably shared through a global, an attribute or a queue). Pass "
            "plain arrays between threads: return the value from the transformed function first, "
            "or compute it inside the thread that uses it."
        )
    return UnexpectedTracerError(
        f"A traced value ({x.aval.str_short()}) created by `{trace.transform}` was used after "
        "that transform had returned: it escaped, for instance by being stored in a global, an "
        "attribute or a list outside the function. Its value at that point is meaningless. "
        "Return the value from the function instead (use has_aux=True to return extra values "
        "from grad), or compute it outside the transformed function."
    )


# Filled by fgrad.numpy: "add", "multiply", "getitem", "sum", ... -> function.
# Tracer's operators look their implementation up here, so that this layer
# does not import the NumPy layer above it.
array_ops: dict[str, Callable[..., Any]] = {}

# The exact types fgrad.numpy hands to primitives without conversion: every
# Tracer subclass (added as it is defined) and the NumPy and Python scalar and
# array types (added by the NumPy layer). `type(x) in passthrough_types` is the
# hot path's cheap test.
passthrough_types: set[type] = set()


# How `Tracer.__array__` names the conversion in its error.
_NUMPY_CONVERSION = (
    "Conversion to a NumPy array or scalar (numpy.asarray, numpy.array, numpy.float64(...) or "
    "another NumPy scalar type, or y[...] = v into a NumPy array y)"
)


class Tracer:
    """A value flowing through a transform. Subclasses say what they carry
    (a primal and a tangent, a jaxpr variable) and give `aval`."""

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    _trace: Trace

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        passthrough_types.add(cls)

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    def concrete_value(self, conversion: str) -> Any:
        """The value underneath, for Python control flow; abstract traces raise."""
        raise NotImplementedError

    # --- array attributes -------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    @property
    def size(self) -> int:
        return self.aval.size

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    # --- Python conversions: need a concrete value ---------------------------
    def _concrete(self, conversion: str) -> Any:
        if self._trace.dead or self._trace.thread != get_ident():
            raise escaped_tracer_error(self)
        return self.concrete_value(conversion)

    def __bool__(self) -> bool:
        return bool(self._concrete("bool"))

    def __float__(self) -> float:
        return float(self._concrete("float"))

    def __int__(self) -> int:
        return int(self._concrete("int"))

    def __complex__(self) -> complex:
        return complex(self._concrete("complex"))

    def __index__(self) -> int:
        return self._concrete("index").__index__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # NumPy asks for this in np.asarray, np.array, np.float64(...) (after
        # __float__) and the other scalar types, and `y[...] = x` into an array.
        if self._trace.dead or self._trace.thread != get_ident():
            raise escaped_tracer_error(self)
        error = self.conversion_error(_NUMPY_CONVERSION)
        hint = scipy_hint()
        if hint:
            error.args = (f"{hint} In detail: {error.args[0]}",)
        raise error

    def conversion_error(self, conversion: str) -> TypeError:
        """The error for handing this value to NumPy as a plain array or number
        (`conversion` names how); subclasses whose values carry something NumPy
        would drop say what."""
        return TracerArrayConversionError(
            f"{conversion} of a traced value ({self.aval.str_short()}, traced by "
            f"`{self._trace.transform}`): NumPy cannot follow it, and it has no plain array to "
            "give (that would silently drop its derivative under grad, jvp or vjp, and it has no "
            "single value under vmap, make_jaxpr or jit). Use the function from fgrad.numpy "
            "instead (import fgrad.numpy as fnp); to put it into a NumPy array y, write "
            "y = fnp.at(y)[i].set(v) rather than y[i] = v; to index a NumPy array y with it, "
            "write fnp.at(y)[i].get() or fnp.take(y, i, axis=0) rather than y[i]."
        )

    def __setitem__(self, idx: Any, value: Any) -> None:
        raise TypeError(
            f"fgrad's traced arrays are immutable: t[i] = v cannot change a traced value "
            f"({self.aval.str_short()}, traced by `{self._trace.transform}`). Write "
            "t = t.at[i].set(v) instead, or t = fnp.at(t)[i].set(v), which also takes NumPy arrays "
            "(import fgrad.numpy as fnp); .add(v), .multiply(v), .min(v), .max(v) update the same way."
        )

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if self._trace.dead or self._trace.thread != get_ident():
            raise escaped_tracer_error(self)
        return array_ops["__array_ufunc__"](ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if self._trace.dead or self._trace.thread != get_ident():
            raise escaped_tracer_error(self)
        return array_ops["__array_function__"](func, args, kwargs)

    __hash__ = None  # type: ignore[assignment]  # tracers compare elementwise

    # --- operators: installed on the class by the NumPy layer -----------------
    # (fgrad/numpy/dispatch.py), as its functions themselves: no extra call.
    if TYPE_CHECKING:
        def __neg__(self) -> Any: ...
        def __pos__(self) -> Any: ...
        def __abs__(self) -> Any: ...
        def __add__(self, other: Any) -> Any: ...
        def __radd__(self, other: Any) -> Any: ...
        def __sub__(self, other: Any) -> Any: ...
        def __rsub__(self, other: Any) -> Any: ...
        def __mul__(self, other: Any) -> Any: ...
        def __rmul__(self, other: Any) -> Any: ...
        def __truediv__(self, other: Any) -> Any: ...
        def __rtruediv__(self, other: Any) -> Any: ...
        def __pow__(self, other: Any) -> Any: ...
        def __rpow__(self, other: Any) -> Any: ...
        def __matmul__(self, other: Any) -> Any: ...
        def __rmatmul__(self, other: Any) -> Any: ...
        def __lt__(self, other: Any) -> Any: ...
        def __le__(self, other: Any) -> Any: ...
        def __gt__(self, other: Any) -> Any: ...
        def __ge__(self, other: Any) -> Any: ...
        def __floordiv__(self, other: Any) -> Any: ...
        def __rfloordiv__(self, other: Any) -> Any: ...
        def __mod__(self, other: Any) -> Any: ...
        def __rmod__(self, other: Any) -> Any: ...
        def __divmod__(self, other: Any) -> Any: ...
        def __rdivmod__(self, other: Any) -> Any: ...
        def __and__(self, other: Any) -> Any: ...
        def __rand__(self, other: Any) -> Any: ...
        def __or__(self, other: Any) -> Any: ...
        def __ror__(self, other: Any) -> Any: ...
        def __xor__(self, other: Any) -> Any: ...
        def __rxor__(self, other: Any) -> Any: ...
        def __invert__(self) -> Any: ...

    def __eq__(self, other: Any) -> Any:
        return array_ops["equal"](self, other)

    def __ne__(self, other: Any) -> Any:
        return array_ops["not_equal"](self, other)

    def __getitem__(self, idx: Any) -> Any:
        trace = self._trace
        if trace.dead or trace.thread != get_ident():  # NumPy would index it as an object, never checking
            raise escaped_tracer_error(self)
        return array_ops["getitem"](self, idx)

    @property
    def T(self) -> Any:
        return array_ops["transpose"](self)

    @property
    def real(self) -> Any:
        return array_ops["real"](self)

    @property
    def imag(self) -> Any:
        return array_ops["imag"](self)

    @property
    def at(self) -> Any:
        """Functional updates, `x.at[idx].set(v)` (installed by the NumPy layer)."""
        return array_ops["at"](self)

    def __getattr__(self, name: str) -> Any:
        # Array methods (x.sum(), x.reshape(...), ...) are the NumPy layer's functions.
        method = array_ops.get("method:" + name)
        if method is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return lambda *args, **kwargs: method(self, *args, **kwargs)

    def __repr__(self) -> str:
        state = ", dead" if self._trace.dead else ""
        return f"{type(self).__name__}<{self.aval.str_short()}>({self._trace.transform}{state})"

    def __str__(self) -> str:
        # print(x) inside a transformed function: say how to see the value itself.
        return (f"{self!r}, a traced value: fgrad.debug.print(\"{{}}\", x) prints its value "
                "each time the computation runs")

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        raise TypeError(
            f"The format {spec!r} asks for a number, but this is a traced value "
            f"({self.aval.str_short()}, traced by `{self._trace.transform}`), which Python cannot "
            f"format. To see its value as it is computed, write fgrad.debug.print(\"{{:{spec}}}\", x) "
            "(or fgrad.debug.print(\"{x:" + spec + "}\", x=x)); or return the value and format it "
            "after the transformation."
        )
