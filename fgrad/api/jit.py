"""`fgrad.jit`: trace a function once per kind of argument, then call its jaxpr.

A jitted function stages its Python function into a jaxpr on abstract values
the first time it sees a tree structure, shapes and dtypes (Python scalars
weakly typed, as in JAX) and static values, caches it (bounded, least recently
used first out, locked), and from then on binds the `jit` primitive on that
jaxpr: every transform sees one equation (higher_order/jit.py). The traced
jaxpr is optimised (folding, simplification, CSE, DCE) and runs as generated
Python code. What tracing cannot see is said where it can be: a bound
method's object is watched for rebound attributes (`_MethodJitted`), a trace
that draws from NumPy's random generators warns, and a slow compile logs.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import inspect
import operator
import os
import sys
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from ..compiler import optimize_jaxpr
from ..config import config
from ..core import fp_warnings
from ..core.avals import ShapedArray, get_aval
from ..core.fp_warnings import user_warnings
from ..core.libraries import library_of, on_library
from ..core.trace import EVAL_TRACE, Tracer, ctx, tracing
from ..higher_order.jit import jit_p
from ..ir.codegen import compile_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import StagingTrace, closure_convert
from .arguments import flatten_fun, fun_name, leaf_names, to_input, to_output
from .devices import check_backend, check_device
from .pytree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["jit"]

CACHE_SIZE = 64  # traced versions kept per jitted function (least recently used go first)


def _warn_log(message: str, *args: Any) -> None:
    """A warning on the logger "fgrad.jit" (logging imported here: `import fgrad` need not pay for it)."""
    import logging

    logging.getLogger("fgrad.jit").warning(message, *args)

_ABSTRACT_ADVICE = (
    "mark the argument static with jit's static_argnums (or static_argnames), so that its "
    "value is known while tracing and each value gets its own trace."
)


class _Entry:
    """One traced version: the closure-converted jaxpr, what it closed over
    (operands before the arguments) and the structure of its output."""

    __slots__ = ("jaxpr", "consts", "out_tree", "donated", "arg_names", "attrs", "run", "key")

    def __init__(self, jaxpr: ClosedJaxpr, consts: list[Any], out_tree: PyTreeDef,
                 donated: tuple[bool, ...], arg_names: list[str], attrs: dict[str, Any] | None) -> None:
        self.jaxpr = jaxpr
        self.consts = consts
        self.out_tree = out_tree
        self.donated = donated  # per input of the jaxpr, if any argument is donated; else ()
        self.arg_names = arg_names  # of the argument leaves, for messages
        self.attrs = attrs  # of the method's object when it was traced (see _MethodJitted)
        self.run: Callable[..., list[Any]] | None = None  # its generated code, once it ran eagerly
        # (tree, avals, static positions and values, static keywords and values)
        self.key: tuple[Any, ...] = ()


class Lowered:
    """A jitted function traced for some arguments: `.jaxpr` is the optimised
    jaxpr each call runs, `.as_text()` the Python source it runs as, and
    `.compile()` that code as a function of arguments of the same kinds."""

    def __init__(self, jitted: Jitted, entry: _Entry) -> None:
        self._jitted = jitted
        self._entry = entry
        self.jaxpr = entry.jaxpr
        self.out_tree = entry.out_tree

    def as_text(self) -> str:
        """The Python source each call runs, after a comment saying what its
        names are: each parameter (an argument's leaf, or a value the
        function closes over), constant, implementation and parameters."""
        compiled = compile_jaxpr(self.jaxpr)
        fun, entry = self._jitted.fun, self._entry
        inputs = [*_closed_over_names(fun, entry.consts),
                  *(f"argument `{n}`" if not n.startswith("argument ") else n for n in entry.arg_names)]
        return f"{compiled.header(inputs)}\n{compiled.source}"

    def compile(self) -> Compiled:
        return Compiled(self._jitted, self._entry)

    def __repr__(self) -> str:
        return f"Lowered({self.jaxpr})"


class Compiled:
    """The generated code of one traced version: call it as the jitted
    function, with arguments of the kinds it was traced for; others raise a
    TypeError (the jitted function itself traces a version for them)."""

    def __init__(self, jitted: Jitted, entry: _Entry) -> None:
        self._jitted = jitted
        self._entry = entry

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Called with the dynamic arguments only, as JAX's: its static ones were
        # fixed when it was lowered, and go back where the call had them.
        _, _, static_values, static_kw = self._entry.key
        names = self._jitted._positional_names
        both = [k for k in [*(names[i] for i, _ in static_values if i < len(names)), *dict(static_kw)]
                if k in kwargs]
        if both:
            raise TypeError(
                f"this compiled version of {self._jitted.name} was lowered with {self._statics()}, and "
                f"takes its dynamic arguments only, but was given {both[0]!r}. Leave the static "
                "arguments out, or call the jitted function itself for other values."
            )
        full, given = list(args), {**kwargs, **dict(static_kw)}
        for i, v in static_values:
            if i >= len(full) and i < len(names) and names[i] in self._jitted._static_names:
                given[names[i]] = v  # (a later argument, if any, came by keyword)
            else:
                full.insert(i, v)
        try:
            entry, operands = self._jitted._prepare(tuple(full), given, trace=False)
        except TypeError as e:
            if not (static_values or static_kw):
                raise
            raise TypeError(
                f"{e} (This compiled version was lowered with {self._statics()}, and takes its "
                "dynamic arguments only.)"
            ) from None
        if entry is None and self._jitted._stale(self._entry):
            raise TypeError(
                f"this compiled version of {self._jitted.name} was traced with other attributes of its "
                f"object: {self._jitted._why_stale(self._entry)}. Call the jitted function itself, which "
                "traces again when they change."
            )
        if entry is not self._entry:
            n = len(self._entry.consts)
            want = ", ".join(a.str_short() for a in self._entry.jaxpr.in_avals[n:])
            got = ", ".join(get_aval(x).str_short() for x in operands)
            too = ", or its static arguments too" if static_values or static_kw else ""
            raise TypeError(
                f"this compiled version of {self._jitted.name} takes arguments ({want}), but was called "
                f"with ({got}) (or another structure{too}). Call the jitted function itself, which "
                "traces a version for each kind of argument."
            )
        # another array library's: equation by equation
        with on_library([*entry.consts, *operands]), user_warnings():
            outs = jit_p.bind(*entry.consts, *operands, jaxpr=entry.jaxpr, name=self._jitted.name)
        return tree_unflatten(entry.out_tree, [to_output(o) for o in outs])

    def _statics(self) -> str:
        """Its static arguments, in words: `argument 1 = 3, 'mode' = 'sin'`."""
        _, _, static_values, static_kw = self._entry.key
        names = self._jitted._positional_names
        return "static " + ", ".join(
            [*(f"argument {i}{f' ({names[i]})' if i < len(names) else ''} = {v!r}" for i, v in static_values),
             *(f"{k} = {v!r}" for k, v in static_kw)])

    def __repr__(self) -> str:
        return f"Compiled({self._entry.jaxpr})"


class Jitted:
    """The function `jit` returns: call it like the function it wraps.

    It keeps at most CACHE_SIZE (64) traced versions, the least recently used
    going first (`clear_cache()` drops them all); a call whose trace raises
    keeps nothing. Threads may call it at once.
    """

    def __init__(self, fun: Callable[..., Any], static_argnums: tuple[int, ...],
                 static_argnames: tuple[str, ...], donate_argnums: tuple[int, ...]) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self.name = fun_name(fun)
        try:
            signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):  # some builtins have none: positions only, as given
            signature = None
        self._signature = signature
        params = list(signature.parameters.values()) if signature is not None else []
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._positional_names = [p.name for p in positional]  # for messages
        if signature is not None:
            _check_static(self.name, signature, positional, static_argnums, static_argnames)
        # Where the signature has them, a static position is static by name too,
        # and a static name by position (as in JAX): `n` of `f(x, n=2)` is one
        # argument, whether given positionally, by keyword, or left to its default.
        self._static_names = frozenset(static_argnames) | {
            p.name for i, p in enumerate(positional)
            if i in static_argnums and p.kind is p.POSITIONAL_OR_KEYWORD}
        self._named_positions = {i for i, p in enumerate(positional) if p.name in self._static_names}
        # A static parameter left out of a call takes its default, as its value
        # (a dynamic one does not: the function's own default is a constant of
        # the trace, and need not be a number).
        self._static_defaults = {
            p.name: p.default for i, p in enumerate(params) if p.default is not p.empty
            and (p.name in self._static_names or p.kind is p.POSITIONAL_ONLY and i in static_argnums)}
        # A call is bound to the signature where static or donated arguments
        # need finding by position and name.
        self._bind = signature is not None and bool(static_argnums or static_argnames or donate_argnums)
        self.donate_argnums = donate_argnums
        self._cache: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        # The common call, arrays and numbers (in tuples, lists and dicts, or
        # not) with no transform active, finds its entry by a cheaper key than
        # the full one (`_call_key`). At most CACHE_SIZE keys, then emptied;
        # read and written without the lock (a dict's get, set and clear are
        # atomic, and a lost entry is found again through `_cache`). With
        # static arguments, a call that gives every positional parameter
        # positionally is keyed as it is (binding would only add the defaults
        # of static keyword-only ones, the same on every such call), others
        # as they bind to the signature.
        static = bool(static_argnums or self._static_names)
        varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
        arity = len(positional) if signature is not None and not varargs else None
        self._fast_calls = not donate_argnums and (not static or arity is not None)
        self._fast_arity = arity if static else None
        self._fast_plain = self._fast_calls and not static  # positional leaves are the key's tokens
        self._fast_static = frozenset(
            {i + len(positional) if i < 0 else i for i in static_argnums} | self._named_positions
        ) if static else frozenset()
        self._fast: dict[tuple[Any, ...], _Entry] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key: Any  # the fast path's (None: none), and the operands it gives
        leaves: Any
        if self._fast_plain and ctx.trace is EVAL_TRACE:
            key = None if kwargs else _leaf_key(args)
            leaves = args
            if key is None:
                key, leaves = _call_key(args, kwargs, _NOTHING, _NOTHING) or (None, None)
        else:
            key, leaves = self._fast_key(args, kwargs)
        if key is not None:
            try:
                entry = self._fast.get(key)
            except TypeError:  # an unhashable static value: the full path says so
                key = entry = None
            if entry is not None and entry.run is not None:
                return _run(entry, leaves)
        with user_warnings():
            return self._call(key, args, kwargs)

    def _fast_key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        """The fast path's key (None if it has none) and the operands it gives,
        for a call that `__call__` does not key itself: with static arguments,
        bound to the signature when it needs to be."""
        if not self._fast_calls or ctx.trace is not EVAL_TRACE:
            return None, None
        if self._fast_arity is not None and (kwargs or len(args) != self._fast_arity):
            # Bound as the full path binds it; a call that does not bind goes
            # there to say why, as does one whose positions differ from the
            # signature's (negative static_argnums count from its end).
            try:
                args, kwargs = self._bound(args, kwargs)
            except TypeError:
                return None, None
            if len(args) != self._fast_arity:
                return None, None
        found = _call_key(args, kwargs, self._fast_static, self._static_names)
        return (None, None) if found is None else found

    def _call(self, key: tuple[Any, ...] | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call that the fast path (`key`: its key, if it has one) did not run."""
        entry, operands = self._prepare(args, kwargs)
        # Another array library's arrays (operands, or constants the function
        # closed over): run there, equation by equation, never the NumPy code.
        library = library_of([*entry.consts, *operands]) if ctx.trace is EVAL_TRACE else None
        if key is not None and library is None:
            entry.run = compile_jaxpr(entry.jaxpr).fun
            if len(self._fast) >= CACHE_SIZE:
                self._fast.clear()
            self._fast[key] = entry
        if library is not None:
            with on_library((), library):
                outs = jit_p.bind(*entry.consts, *operands, jaxpr=entry.jaxpr, name=self.name)
        elif entry.donated and ctx.trace is EVAL_TRACE:  # donation counts where nothing traces the call
            ins = _donatable([*entry.consts, *operands], entry.donated)
            outs = compile_jaxpr(entry.jaxpr, entry.donated)(*ins)
        else:
            outs = jit_p.bind(*entry.consts, *operands, jaxpr=entry.jaxpr, name=self.name)
        return tree_unflatten(entry.out_tree, [to_output(o) for o in outs])

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # As a method: `self` is the first argument (mark it static, or make it a pytree).
        return self if obj is None else functools.partial(self, obj)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The traced version these arguments select (tracing it if needed).

        >>> import fgrad.numpy as fnp
        >>> print(jit(lambda x: fnp.sin(x) * 2.0).lower(1.0).jaxpr)
        { lambda ; a:f64[]. let b:f64[] = sin a c:f64[] = mul b 2.0 in (c,) }
        """
        entry, _ = self._prepare(args, kwargs)
        assert entry is not None
        return Lowered(self, entry)

    def _snapshot(self) -> dict[str, Any] | None:
        """The attributes a version is traced with, for `_stale` (None: not watched)."""
        return None

    def _stale(self, entry: _Entry) -> bool:
        """Whether `entry` was traced with other attributes than its object has now."""
        return False

    def _why_stale(self, entry: _Entry) -> str:
        return ""

    def clear_cache(self) -> None:
        """Forget every traced version: the next call traces again."""
        with self._lock:
            self._cache.clear()
            self._fast.clear()

    # --- tracing and the cache ---------------------------------------------------
    @overload
    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_Entry, list[Any]]: ...

    @overload
    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                 trace: bool) -> tuple[_Entry | None, list[Any]]: ...

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                 trace: bool = True) -> tuple[_Entry | None, list[Any]]:
        """The traced version for these arguments (tracing it on a miss, unless
        not `trace`: then None), and the operands."""
        if self._bind:
            args, kwargs = self._bound(args, kwargs)
        nargs = len(args)
        given = {i + nargs if i < 0 else i for i in self.static_argnums}
        # (a static position that binding put among the keywords is found by its name)
        if any(not 0 <= i < nargs and i not in self._named_positions for i in given):
            raise ValueError(
                f"static_argnums={self.static_argnums!r} is out of range for {self.name} called "
                f"with {nargs} positional argument{'s' if nargs != 1 else ''}: static_argnums counts "
                f"positional arguments, so give at least {max(given) + 1}, or change static_argnums."
            )
        static = sorted({i for i in given | self._named_positions if 0 <= i < nargs})
        static_values = tuple((i, _hashable(args[i], f"argument {i}", self.name)) for i in static)
        static_kw = tuple(sorted(
            (k, _hashable(v, f"argument {k!r}", self.name))
            for k, v in kwargs.items() if k in self._static_names
        ))
        dyn_nums = tuple(i for i in range(nargs) if i not in static)
        dyn_kw = {k: v for k, v in sorted(kwargs.items()) if k not in self._static_names}
        leaves, in_tree = tree_flatten(((*(args[i] for i in dyn_nums),), dyn_kw))
        operands = [_operand(x, self.name) for x in leaves]
        avals = tuple(get_aval(x) for x in operands)
        key = (in_tree, avals, static_values, static_kw)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
                if entry.attrs is None:
                    return entry, operands
            last = next(reversed(self._cache), None)
        stale = entry is not None and self._stale(entry)
        if entry is not None and not stale:
            return entry, operands
        if not trace:
            return None, operands
        if stale and config.explain_cache_misses:
            assert entry is not None
            _warn_log("jit of %s traces again: %s", self.name, self._why_stale(entry))
        elif last is not None and config.explain_cache_misses:
            names = _arg_names(self.fun, args, dyn_nums, kwargs, list(dyn_kw))
            _warn_log("jit of %s traces again: %s", self.name, _difference(last, key, names))
        entry = self._trace(args, kwargs, dyn_nums, list(dyn_kw), in_tree, avals, operands)
        entry.key = key
        if not any(isinstance(c, Tracer) for c in entry.consts):  # tracers belong to this call only
            with self._lock:
                self._cache[key] = entry
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return entry, operands

    def _bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call as the signature binds it: each parameter positionally where
        it can be, by keyword otherwise, a static one left out with its default."""
        assert self._signature is not None
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            keywords = f" and keywords {', '.join(kwargs)}" if kwargs else ""
            raise TypeError(
                f"{self.name}{self._signature} cannot be called with {len(args)} positional "
                f"argument{'s' if len(args) != 1 else ''}{keywords}: {e}. Call it as its signature says."
            ) from None
        for k, default in self._static_defaults.items():
            bound.arguments.setdefault(k, default)
        return bound.args, bound.kwargs

    def _trace(self, args: tuple[Any, ...], kwargs: dict[str, Any], dyn_nums: tuple[int, ...],
               dyn_names: list[str], in_tree: PyTreeDef, avals: Sequence[ShapedArray],
               operands: list[Any]) -> _Entry:
        with _collection_paused():
            return self._compile(args, kwargs, dyn_nums, dyn_names, in_tree, avals, operands)

    def _compile(self, args: tuple[Any, ...], kwargs: dict[str, Any], dyn_nums: tuple[int, ...],
                 dyn_names: list[str], in_tree: PyTreeDef, avals: Sequence[ShapedArray],
                 operands: list[Any]) -> _Entry:
        """A new traced version: traced, optimised and its code generated."""
        start = time.perf_counter()
        fun, static_kw = self.fun, {k: v for k, v in kwargs.items() if k in self._static_names}

        def positional(dyn_args: tuple[Any, ...], dyn_kw: dict[str, Any]) -> Any:
            full, given = list(args), dict(static_kw)
            for i, x in zip(dyn_nums, dyn_args):
                full[i] = x
            given.update(dyn_kw)
            return fun(*full, **given)

        flat_fun, store = flatten_fun(positional, in_tree, name=self.name)
        # In a context of its own (below evaluation), so that the jaxpr does not
        # depend on the transforms around this call: their tracers it closes
        # over become operands.
        names = _arg_names(fun, args, dyn_nums, kwargs, dyn_names)
        trace = StagingTrace(EVAL_TRACE, f"jit of {self.name}", fun_name=self.name, arg_names=names,
                             advice=_ABSTRACT_ADVICE)
        generators = _random_states(self.fun)
        with tracing(trace):
            outs = flat_fun(*[trace.new_arg(a) for a in avals])
        closed = trace.to_jaxpr(outs)
        _warn_if_drawn(self.name, generators)
        traced = time.perf_counter()
        if any(isinstance(c, Tracer) for c in closed.consts):
            # What it closed over of a caller's transform becomes inputs first,
            # so that folding never computes with them.
            jaxpr, consts = closure_convert(closed)
            jaxpr = optimize_jaxpr(jaxpr)
        else:
            jaxpr, consts = closure_convert(optimize_jaxpr(closed))
        assert store.tree is not None
        donated: tuple[bool, ...] = ()
        if self.donate_argnums:  # the leaves of the positional arguments come first
            given = {i + len(args) if i < 0 else i for i in self.donate_argnums}
            flags = [i in given for i in dyn_nums for _ in tree_flatten(args[i])[0]]
            flags += [False] * (len(jaxpr.jaxpr.invars) - len(consts) - len(flags))
            donated = (False,) * len(consts) + tuple(flags)
        optimised = time.perf_counter()
        entry = _Entry(jaxpr, consts, store.tree, donated, names, self._snapshot())
        generated = None
        if ctx.trace is EVAL_TRACE and library_of([*consts, *operands]) is None:
            # The call runs this code now (its generation is cached per jaxpr):
            # generated here, so that the time it takes is counted too.
            if donated:
                compile_jaxpr(jaxpr, donated)
            else:
                compile_jaxpr(jaxpr)
            generated = time.perf_counter()
        total = (generated or optimised) - start
        if total > config.log_compiles_slower_than:
            steps = f"trace {traced - start:.3f} s, optimise {optimised - traced:.3f} s"
            if generated is not None:
                steps += f", generate code {generated - optimised:.3f} s"
            n_traced, n_now = len(closed.jaxpr.eqns), len(jaxpr.jaxpr.eqns)
            _warn_log("jit of %s took %.3f s to compile a version of %d equations (%d after "
                      "optimising): %s", self.name, total, n_traced, n_now, steps)
        return entry


class _MethodJitted(Jitted):
    """`jit` of a bound method, `jit(obj.method)`: its object's attributes are
    part of what a version is traced for. Each version keeps a copy of
    `vars(obj)` as it was when it traced, and a call whose attributes are no
    longer the same objects (or equal to them) traces again, as a call with
    new shapes does. Checked on every call, by one comparison of two dicts
    (identity first: about 0.1 µs for a few attributes); a change made in
    place to a value (an array's elements, a list's items) is not seen.
    """

    def __init__(self, fun: Callable[..., Any], *options: Any) -> None:
        super().__init__(fun, *options)
        self._owner = fun.__self__  # type: ignore[attr-defined]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = _leaf_key(args) if self._fast_plain and not kwargs and ctx.trace is EVAL_TRACE else None
        leaves = args
        if key is None:
            key, leaves = self._fast_key(args, kwargs)
        if key is not None:
            try:
                entry = self._fast.get(key)
            except TypeError:  # an unhashable static value: the full path says so
                key = entry = None
            if entry is not None and entry.run is not None:
                try:
                    same = self._owner.__dict__ == entry.attrs
                except Exception:  # an array rebound to another of more than one element
                    same = False
                if same:
                    return _run(entry, leaves)
        with user_warnings():
            return self._call(key, args, kwargs)

    def _snapshot(self) -> dict[str, Any] | None:
        return dict(vars(self._owner))

    def _stale(self, entry: _Entry) -> bool:
        try:
            return vars(self._owner) != entry.attrs
        except Exception:
            return True

    def _why_stale(self, entry: _Entry) -> str:
        """Which attribute differs from those `entry` was traced with, in words."""
        old, new, missing = entry.attrs or {}, vars(self._owner), object()
        for k in [*old, *(k for k in new if k not in old)]:
            a, b = old.get(k, missing), new.get(k, missing)
            if a is b:
                continue
            if a is missing:
                return f"the method's object has a new attribute `{k}`"
            if b is missing:
                return f"the method's object no longer has its attribute `{k}`"
            return f"attribute `{k}` of the method's object was rebound to another value"
        return "the attributes of the method's object changed"


def _check_static(name: str, signature: inspect.Signature, positional: list[inspect.Parameter],
                  nums: tuple[int, ...], names: tuple[str, ...]) -> None:
    """Raise, when `jit` is called, for static_argnums and static_argnames that
    the signature cannot take (as JAX does)."""
    kinds = {p.kind for p in signature.parameters.values()}
    n = len(positional)
    if nums and inspect.Parameter.VAR_POSITIONAL not in kinds and not all(-n <= i < n for i in nums):
        raise ValueError(
            f"static_argnums={nums!r} is out of range for {name}{signature}, which takes {n} positional "
            f"argument{'s' if n != 1 else ''}: give static_argnums between {-n} and {n - 1}."
        )
    only = {p.name for p in positional if p.kind is p.POSITIONAL_ONLY}
    if only & set(names):
        raise ValueError(
            f"static_argnames={names!r} names {sorted(only & set(names))}, positional-only parameters of "
            f"{name}{signature}, which no call gives by name: use static_argnums for them."
        )
    unknown = [k for k in names if k not in signature.parameters]
    if unknown and inspect.Parameter.VAR_KEYWORD not in kinds:
        raise ValueError(
            f"static_argnames={names!r} names {unknown}, which {name}{signature} does not take: give the "
            "names of its parameters."
        )


_paused = [0]  # compiles running with the cyclic garbage collector paused, and whether it ran before
_paused_lock = threading.Lock()
_collector_was_enabled = [False]


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a version compiles. Its
    full collections walk every object alive, and a large trace creates
    objects at a pace that sets one off each time the heap grows by a
    quarter: they took a third of the time of jit(grad(f)) on a scalar graph
    of 10^5 equations. Nested and concurrent compiles share one pause; the
    collector runs again after the last (if it ran before the first), and
    reference counting frees all but cycles meanwhile."""
    with _paused_lock:
        if _paused[0] == 0:
            _collector_was_enabled[0] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused[0] -= 1
            if _paused[0] == 0 and _collector_was_enabled[0]:
                gc.enable()


def _run(entry: _Entry, leaves: Sequence[Any]) -> Any:
    """A fast call: the version's generated code on `leaves`, NumPy's warnings from the caller's line."""
    token = fp_warnings.enter()
    try:
        outs = entry.run(*entry.consts, *leaves)  # type: ignore[misc]
    finally:
        fp_warnings.leave(token)
    return tree_unflatten(entry.out_tree, [to_output(o) for o in outs])


_SCALAR_TYPES = frozenset({float, int, bool, complex})


def _leaf_key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """`_call_key` of positional arguments that are all arrays or numbers (None
    otherwise), which are their own leaves: the common call, by the shortest
    road."""
    key: list[Any] = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.shape, a.dtype))
        elif t in _SCALAR_TYPES:
            key.append(t)
        elif isinstance(a, np.generic):
            key.append((t,))
        else:
            return None
    return tuple(key)


_STATIC, _KEYWORDS = object(), object()  # markers in a call's key
_NOTHING: frozenset[Any] = frozenset()  # no static positions or names
_ARRAY_TYPE = {np.ndarray}
_shape_dtype = operator.attrgetter("shape", "dtype")  # an array's token


def _call_key(args: tuple[Any, ...], kwargs: dict[str, Any], static: frozenset[int],
              static_names: frozenset[str]) -> tuple[tuple[Any, ...], Any] | None:
    """A key for a call whose arguments are arrays and numbers, in tuples,
    lists, dicts and None, and the leaves it gives the jaxpr (in the order of
    tree_flatten); None for any other call. The key tells apart what the
    full key does: the structure, each leaf's shape and dtype, Python scalars
    (weakly typed) from NumPy's, and the values at the `static` positions and
    of the keywords in `static_names`.
    It is a flat tuple of tokens: a leaf's `(shape, dtype)`, `(type,)` or
    type; a container's type and length (a dict's sorted keys), before its
    children; `_STATIC` and the value; `_KEYWORDS` and the names. Read left
    to right, each token's kind is known from those before it, so that equal
    keys mean equal calls."""
    key: list[Any] = []
    leaves: list[Any] = []
    for i, a in enumerate(args):
        if i in static:
            key.append(_STATIC)
            key.append(a)
        elif not _tree_key(a, key, leaves):
            return None
    if kwargs:
        names = sorted(kwargs)
        key.append(_KEYWORDS)
        key.append(tuple(names))
        for k in names:
            if k in static_names:
                key.append(_STATIC)
                key.append(kwargs[k])
            elif not _tree_key(kwargs[k], key, leaves):
                return None
    return tuple(key), leaves


def _tree_key(x: Any, key: list[Any], leaves: list[Any]) -> bool:
    """Add `x`'s tokens to `key` and its leaves to `leaves` (see `_call_key`);
    False if it holds anything else."""
    t = type(x)
    if t is np.ndarray:
        key.append((x.shape, x.dtype))
    elif t in _SCALAR_TYPES:
        key.append(t)
    elif t is list or t is tuple:
        key.append(t)
        key.append(len(x))
        if set(map(type, x)) == _ARRAY_TYPE:  # the common one, each child keyed in C
            key.extend(map(_shape_dtype, x))
            leaves.extend(x)
            return True
        return all(_tree_key(c, key, leaves) for c in x)
    elif t is dict:
        try:
            names = sorted(x)  # tree_flatten's order
        except TypeError:
            return False
        key.append(dict)
        key.append(tuple(names))
        return all(_tree_key(x[k], key, leaves) for k in names)
    elif x is None:
        key.append(None)
        return True
    elif isinstance(x, np.generic):
        key.append((t,))
    else:
        return False
    leaves.append(x)
    return True


def _donatable(ins: list[Any], donated: tuple[bool, ...]) -> list[Any]:
    """The inputs with each donated one as an array whose memory the generated
    code may overwrite: the caller's array if it may be written and shares no
    memory with another input; otherwise a copy, so that what the caller did
    not give up is never written."""
    out = list(ins)
    for i, (x, d) in enumerate(zip(ins, donated)):
        if not d or type(x) is not np.ndarray or not x.ndim:
            continue
        if not x.flags.writeable or any(
            j != i and isinstance(y, np.ndarray) and np.may_share_memory(x, y) for j, y in enumerate(ins)
        ):
            out[i] = x.copy()
    return out


def _difference(old: Any, new: Any, names: list[str]) -> str:
    """What differs between two cache keys (tree, avals, static values, static
    keywords), in words, for explain_cache_misses."""
    (old_tree, old_avals, old_static, old_kw), (tree, avals, static, kw) = old, new
    if old_tree != tree:
        return f"the structure of its arguments changed from {old_tree} to {tree}"
    for name, a, b in zip(names, old_avals, avals):
        if a is not b:
            if a.shape == b.shape and a.dtype == b.dtype:  # only the weak type differs
                kinds = ("a NumPy value", "a Python scalar (weakly typed)")
                was, now = kinds[a.weak_type], kinds[b.weak_type]
                return f"argument `{name}` ({a.str_short()}) changed from {was} to {now}"
            return f"argument `{name}` changed from {a.str_short()} to {b.str_short()}"
    for (i, a), (_, b) in zip(old_static, static):
        if a != b:
            return f"static argument {i} changed from {a!r} to {b!r}"
    return f"static keyword arguments changed from {dict(old_kw)!r} to {dict(kw)!r}"


def _hashable(value: Any, what: str, name: str) -> Any:
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{what} of {name} is static (static_argnums/static_argnames), so it must be hashable, "
            f"but it is an unhashable {type(value).__name__}: {value!r}. Pass a tuple instead of "
            "a list, or make the argument dynamic (an array)."
        ) from None
    return value


def _operand(x: Any, name: str) -> Any:
    """A leaf argument as jit's operand: Python scalars stay Python scalars (weakly
    typed, as in eager mode), other values become arrays; non-numbers raise."""
    t = type(x)
    if t in _SCALAR_TYPES or isinstance(x, Tracer) or t is np.ndarray and x.dtype.kind in "biufc":
        return x
    try:
        arr = to_input(x)
    except TypeError:
        arr = None
    if arr is None or get_aval(arr).dtype.kind not in "biufc":
        raise TypeError(
            f"an argument of {name} is a {type(x).__name__} ({x!r}), which jit cannot trace: it "
            "traces arrays and numbers. Mark the argument static (jit's static_argnums or "
            "static_argnames) to pass it as a Python value, or close over it."
        )
    return arr


def _arg_names(fun: Callable[..., Any], args: tuple[Any, ...], dyn_nums: tuple[int, ...],
               kwargs: dict[str, Any], dyn_names: list[str]) -> list[str]:
    names = leaf_names(fun, args, dyn_nums)
    for k in dyn_names:
        names.extend(k + path for path in _leaf_paths(kwargs[k]))
    return names


def _reachable(fun: Callable[..., Any]) -> list[tuple[str, Any]]:
    """The values a function reads that are not its arguments, as far as can be
    seen without running it, each with its description: the attributes of a
    bound method's object, the variables it closes over, and the globals its
    code (or a function defined in it) names."""
    found: list[tuple[str, Any]] = []
    while isinstance(fun, functools.partial):
        fun = fun.func
    if inspect.ismethod(fun):
        owner = getattr(fun.__self__, "__dict__", {})
        found += [(f"`self.{k}`, an attribute of the method's object", v) for k, v in owner.items()]
        fun = fun.__func__
    code = getattr(fun, "__code__", None)
    if code is not None:
        for k, cell in zip(code.co_freevars, getattr(fun, "__closure__", None) or ()):
            with contextlib.suppress(ValueError):  # an empty cell has no contents
                found.append((f"`{k}`, a variable the function closes over", cell.cell_contents))
        names, todo = set(), [code]
        while todo:
            c = todo.pop()
            names.update(c.co_names)
            todo.extend(x for x in c.co_consts if inspect.iscode(x))
        scope = getattr(fun, "__globals__", {})
        found += [(f"`{k}`, a global the function reads", scope[k]) for k in sorted(names & scope.keys())]
    return found


def _closed_over_names(fun: Callable[..., Any], consts: list[Any]) -> list[str]:
    """What each constant of a traced version is, in words, when it is one of
    the values `_reachable` finds (a value folded from them while tracing is
    none of these)."""
    places: dict[int, str] = {}
    for what, value in _reachable(fun):
        places.setdefault(id(value), what)
    return [places.get(id(c), "a constant of the trace (a value the function closes over, or made from one)")
            for c in consts]


def _random_states(fun: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """NumPy's random generators that a trace of `fun` could draw from (NumPy's
    global one, behind `np.random.*`, and those `fun` reads that `_reachable`
    sees), each with its description and its state now. A microsecond or
    two, once per trace."""
    # numpy.random is imported here, at the first trace, not by `import fgrad` (15 ms).
    kinds = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
    found: list[tuple[str, Any]] = [("NumPy's global random state (np.random.*)", np.random.mtrand._rand)]
    found += [(what, g) for what, g in _reachable(fun) if isinstance(g, kinds)]
    return [(what, g, _random_state(g)) for what, g in found]


_MT19937_BYTES = 624 * 4 + 4  # its C state: 624 words of key, then the position in them


def _random_state(g: Any) -> Any:
    legacy = isinstance(g, np.random.RandomState)
    bits: Any
    if isinstance(g, np.random.Generator):
        bits = g.bit_generator
    else:
        bits = getattr(g, "_bit_generator", None) if legacy else g
    if type(bits) is np.random.MT19937:
        # The bytes of its C state, read through NumPy's ctypes interface: its
        # `state` (30 µs) would cost more than a small trace. Any draw moves
        # the position (or renews the key), except one normal variate that
        # the legacy sampler had cached: that draw goes unseen.
        return ctypes.string_at(bits.ctypes.state_address, _MT19937_BYTES)
    return g.get_state(legacy=False) if legacy else bits.state


def _same_state(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return bool(a == b)


def _warn_if_drawn(name: str, generators: list[tuple[str, Any, Any]]) -> None:
    """Warn if a trace drew from one of `generators` (from `_random_states`):
    the numbers it drew are constants of the traced version, the same on
    every call, which is never what random numbers in a function are for."""
    drawn = [what for what, g, state in generators if not _same_state(state, _random_state(g))]
    if drawn:
        warnings.warn(
            f"jit of {name}: while it traced, the function drew random numbers from {' and '.join(drawn)}. "
            "They are now constants of the compiled function, the same on every call. Use fgrad.random "
            "with a key passed as an argument (key = fgrad.random.key(0); key, sub = "
            "fgrad.random.split(key); fgrad.random.normal(sub, shape)), so that each call can draw new "
            "numbers.",
            UserWarning, stacklevel=_outside_fgrad())


_FGRAD = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _outside_fgrad() -> int:
    """The stacklevel, for a warning issued by its caller, of the nearest
    frame not in fgrad's own code: the user's call."""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_FGRAD):
        frame, level = frame.f_back, level + 1
    return level


def _leaf_paths(x: Any) -> list[str]:
    return [keystr(p) for p, _ in tree_flatten_with_path(x)[0]]


def _check_placement(device: Any, backend: Any) -> None:
    """JAX's DeprecationWarning for jit's `device` and `backend`, and its
    errors: not both, and only what fgrad has (the CPU)."""
    warnings.warn(
        "jit's device and backend arguments are deprecated (as in JAX) and have no effect in fgrad, "
        "which runs on the CPU through NumPy: remove them. (JAX's own advice is "
        "device_put(x, local_devices(backend='cpu')[0]) on the inputs, which fgrad accepts too.)",
        DeprecationWarning, stacklevel=3,
    )
    if device is not None and backend is not None:
        raise ValueError(f"jit: give a device or a backend, not both; got device={device!r} and "
                         f"backend={backend!r}")
    check_backend(backend, "jit")
    check_device(device, "jit")


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    device: Any = None,
    backend: str | None = None,
) -> Any:
    """`fun`, traced once per tree structure, shapes and dtypes of its arguments
    and values of its static ones, then run from its jaxpr (JAX's `jit`).

    Inside, values are abstract: a Python `if` on one raises; mark such an
    argument static, or use `fnp.where`. Works as a call, a decorator, and
    through functools.partial; composes with every transformation.
    Static arguments are found through the signature, as in JAX: a parameter
    named by `static_argnums` or `static_argnames` is static whether a call
    gives it by position or by keyword, and one left out is its default;
    `f.lower(...).compile()` takes the dynamic arguments only.
    `donate_argnums` names arguments the caller gives up: the memory of their
    arrays (of an array they are views of, too) may hold results afterwards,
    so that large temporaries need no fresh memory. Called under a transform,
    nothing is donated.
    Python values it reads (globals, attributes, closed-over variables) are
    read once, when it traces, as in JAX; so are arrays it closes over, which
    are constants of the traced version: a later call may or may not see a
    change made to one in place (not where the trace computed with its values,
    e.g. `x * w` with `w` all ones is `x`). Pass what changes between calls as
    an argument. One exception: `jit(obj.method)` traces again when an
    attribute of `obj` (`vars(obj)`, any of them) is rebound to a value that
    is neither the same object nor equal to it (`obj.w = new_w`), at the cost
    of one comparison of two dicts per call; changes in place inside an
    attribute (its array's elements, its list's items, an attribute of an
    attribute) are not seen. Numbers drawn from NumPy's random generators
    while tracing (`np.random.*`, or a Generator the function reads) are
    constants too: it warns (UserWarning) and points to `fgrad.random`. A
    version that takes more than `config.log_compiles_slower_than` (1 s) to
    trace, optimise and generate logs so on "fgrad.jit"; while one does,
    Python's cyclic garbage collector is paused (reference counting still
    frees what the trace drops), which saves a third of the time a
    large program takes. Up to 64 traced
    versions are kept per jitted function; `clear_cache()` drops them.
    `device` and `backend` are deprecated in JAX, and warn so here
    (DeprecationWarning); fgrad runs on the CPU, so they may only name it
    (a device of `fgrad.devices()`, backend "cpu") and change nothing.

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = jit(lambda x, n: fnp.sum(x ** n), static_argnums=1)
    >>> f(np.arange(3.0), 2)
    np.float64(5.0)
    >>> fgrad.grad(f)(np.arange(3.0), 2)
    array([0., 2., 4.])
    """
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    if device is not None or backend is not None:
        _check_placement(device, backend)
    if fun is None:
        return lambda f: jit(f, static_argnums=nums, static_argnames=names, donate_argnums=donate)
    if not callable(fun):
        raise TypeError(f"jit expects a function, but got {type(fun).__name__}: {fun!r}")
    if inspect.ismethod(fun) and isinstance(getattr(fun.__self__, "__dict__", None), dict):
        return _MethodJitted(fun, nums, names, donate)
    return Jitted(fun, nums, names, donate)
