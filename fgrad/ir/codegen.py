"""Code generation: a jaxpr as one Python function that calls NumPy directly.

The function's source has one line per equation, `c = f3(a, b)`, where `f3` is
the primitive's implementation: no tracer, no `bind`, no rule lookup when it
runs. Constants, literals, implementations and parameters reach it as globals
of its own namespace, named by fgrad (`v3`, `k0`, `f2`, `p2`), never from user
strings. A value is deleted after its last use (liveness), as `eval_jaxpr`
releases it. The source is compiled once per jaxpr and cached.

Each primitive says how it is written, beside its other rules
(`core.rules`); three rules can apply, all optional:

* `emit_rules`: an expression that computes the same thing with less Python
  in between than the implementation's call (`a * b` for mul).
* `out_rules`: a ufunc that can write the result into a buffer. When an
  operand of the same shape and dtype is dead after the equation, large, and
  its buffer is the generated code's own (the result of an earlier such
  equation that nothing else has seen, or an argument the caller donated),
  the code writes the result there, `f1(v3, v4, out=v3)`, instead of
  asking for fresh memory. This is decided here, statically, from liveness.
* Clusters of elementwise equations on large arrays (and reductions of their
  results) run fused, in blocks across threads (`ir/fusion.py`): the code
  calls one function per cluster, `v9, = f2(v0)`, whose block function is
  written below the main one. `fgrad.config`'s `jit_fusion` options say
  whether and from which size; the code is cached per those settings too.
* `block_rules`: Python statements for a control-flow primitive (`if`,
  `while`, `for`), its sub-jaxprs written inline (`_Writer.inline`).
* `float_rules`: an expression over Python scalars, for 0-d values: a float
  for a float64, a bool for a bool, an int for an int64. NumPy's scalars cost
  about 50 ns an operation, Python's a third of that, and a chain of scalar
  operations (a gradient of scalar code) is all such operations. When some
  equations have float rules, the function runs them on Python scalars
  (`v2 = math.exp(v1)`, `v5 = (v3 if v4 else 0.0)`), converting at its edges;
  a value read once is written where it is read, not on a line of its own
  (`w5 = math.exp(w1 - w2) * w3`), and an identity (stop_gradient) takes
  its operand's name, which halves what CPython compiles.
  Where Python's arithmetic would disagree with NumPy's (1.0 / 0.0, log(-1.0),
  exp(1000.0), an int past int64) it raises instead (ZeroDivisionError,
  ValueError, OverflowError), and the function then runs again on NumPy's
  scalars, which give NumPy's inf, nan or wrapped int. Only a jaxpr without
  effects runs twice, and the float version never writes into a donated
  argument, so the second run sees the arguments as they were.
"""

from __future__ import annotations

import itertools
import linecache
import math
import re
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..config import config
from ..core.avals import ShapedArray, dtype_name
from ..core.libraries import Library, LibraryTrace
from ..core.rules import block_rules, checked_int64, emit_rules, float_rules, out_rules, packing
from ..core.trace import EVAL_TRACE, LARGE_ARRAY_BYTES
from .cache import cached_per_jaxpr
from .evaluate import eval_closed_now, evaluation_trace
from .fusion import Cluster, fuse_clusters, fused_p
from .jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from .passes import has_effects, last_uses

__all__ = ["compile_jaxpr", "CompiledJaxpr", "runner"]

_FLOAT64 = np.dtype(np.float64)
# How deep the expressions of float code nest, when each value read once is
# written where it is read (CPython's parser allows 200 parentheses).
_MAX_DEPTH = 8
_MAX_LENGTH = 160  # characters of an expression taking another in: each copies the string
# An expression that is one call or one parenthesis, `math.exp(w1 - w2)`, is an operand as it is
# (with `(` once in it: the plain cases, told in C).
_CALL = re.compile(r"[\w.]*\(")
# The Python type standing for a 0-d value of each dtype in float code, with the
# names (in the generated code's namespace) of its conversion from and to NumPy.
_PYTHON_FORMS = {_FLOAT64: ("float", "f64"), np.dtype(bool): ("bool", "b1"),
                 np.dtype(np.int64): ("int", "i64")}


class CompiledJaxpr:
    """A jaxpr turned into a Python function: call it with the jaxpr's inputs
    (its constants are built in) for the list of its outputs; `source` is the
    text it was compiled from."""

    __slots__ = ("fun", "_source", "_legend", "_rest", "_blocks", "__weakref__")

    def __init__(self, fun: Callable[..., list[Any]], source: str,
                 legend: dict[str, tuple[Any, ...]] | None = None,
                 rest: Callable[[], str] | None = None, blocks: str = "") -> None:
        self.fun = fun
        self._source = source
        self._legend = legend or {}
        self._rest = rest  # compiles the function's second part, when first needed, and gives its text
        self._blocks = blocks  # the block functions of fused clusters

    @property
    def source(self) -> str:
        self.complete()
        return self._source + self._blocks

    def complete(self) -> None:
        """Compile the part of the function generated when first needed (the
        version on NumPy's scalars that float code falls back to), if not yet."""
        if self._rest is not None:
            with _completing:
                if self._rest is not None:
                    self._source += "\n\n\n" + self._rest()
                    self._rest = None

    def header(self, inputs: Sequence[str] = ()) -> str:
        """Comment lines saying what each name of `source` stands for: the
        function's parameters (`inputs[i]` says what input i is, e.g.
        "argument `x`"), and the globals fgrad gave it: constants `k`,
        implementations `f`, parameters `p`, buffers `s`.

        >>> import fgrad, fgrad.numpy as fnp
        >>> compiled = compile_jaxpr(fgrad.make_jaxpr(lambda x: fnp.sum(fnp.sin(x) + 2.0))(np.ones(3)))
        >>> print(compiled.header(["argument `x`"]))
        # v0: argument `x`, f64[3]
        # f0: sin's implementation
        # k0: 2.0, f64[] (a Python scalar)
        # f1: reduce_sum's implementation
        # p0: reduce_sum's parameters: axes=(0,)
        """
        self.complete()
        used = set(re.findall(r"\b[a-z]+\d+\b", self._source))
        lines = []
        for name, about in self._legend.items():
            if name not in used:  # a float version that was not kept
                continue
            kind = about[0]
            if kind == "input":
                _, i, aval = about
                lines.append(f"{name}: {inputs[i] if i < len(inputs) else f'input {i}'}, {aval.str_short()}")
            elif kind == "const":
                lines.append(f"{name}: {_summary(about[1])}{_within(about[2])}")
            elif kind == "cluster":
                lines.append(f"{name}: {about[1].describe()}; its block function `fused` is below"
                             f"{_within(about[2])}")
            elif kind == "fun":
                _, prims, fun, where = about
                how = "'s implementation" if fun is None else f" as {_qualname(fun)} (into a buffer)"
                lines.append(f"{name}: {' or '.join(prims)}{how}{_within(where)}")
            elif kind == "params":
                _, eqn, where = about
                shown = ", ".join(f"{k}={_param(v)}" for k, v in eqn.params.items())
                lines.append(f"{name}: {eqn.primitive.name}'s parameters: {shown}{_within(where)}")
            else:  # a scratch buffer
                lines.append(f"{name}: a buffer {about[1].str_short()} kept between calls for a value "
                             "that never leaves the call")
        if any(n[0] == "w" for n in used):
            lines.append("wN: values as Python numbers (a name is taken again once its value is dead)")
        if any(n[0] == "t" for n in used):
            lines.append("tN: a loop's step")
        return "\n".join("# " + line.replace("\n", " ") for line in lines)

    def __call__(self, *args: Any) -> list[Any]:
        return self.fun(*args)

    def __repr__(self) -> str:
        return self.source


def compile_jaxpr(closed: ClosedJaxpr, donated: tuple[bool, ...] = (),
                  library: Library | None = None) -> CompiledJaxpr:
    """`closed` as generated Python code (cached per jaxpr, `donated`, the
    fusion settings of `fgrad.config` and `library`).

    On the arrays of another `library` than NumPy (core/libraries.py), the
    code binds that library's namespace once, as its global `xp`, and calls
    each primitive's implementation with it, `v1 = f0(xp, v0)`: the jaxpr's
    NumPy constants become the library's arrays once, NumPy inputs are
    converted on entry, and nothing NumPy-specific is written (no float
    code, buffers, fusion, emit or block rules).

    `donated[i]` says that the caller gives up input i, so that the code may
    write results into its buffer (only a writeable array that owns its
    memory, and that no other input shares, may be donated).

    >>> import fgrad, fgrad.numpy as fnp
    >>> compiled = compile_jaxpr(fgrad.make_jaxpr(lambda x: fnp.sin(x) * x)(np.ones(2)))
    >>> compiled(np.array([0.5, 1.0]))
    [array([0.23971277, 0.84147098])]
    >>> print(compiled.source)
    def jitted(v0):
        v1 = f0(v0)
        v2 = v1 * v0
        del v0, v1
        return [v2]
    >>> scalar = compile_jaxpr(fgrad.make_jaxpr(lambda x: fnp.log(fnp.sin(x) * x + 1.0))(0.5))
    >>> print(scalar.source.split("except")[0])
    def jitted(v0):
        try:
            w0 = float(v0)
            v4 = f64(math.log(((math.sin(w0) * w0) + 1.0)))
            return [v4]
    <BLANKLINE>
    """
    if library is not None:
        return _compiled(closed, (), None, library)
    fusion = (config.jit_fusion_min_size, config.jit_fusion_block_size) if config.jit_fusion else None
    return _compiled(closed, donated, fusion)


@cached_per_jaxpr
def _compiled(closed: ClosedJaxpr, donated: tuple[bool, ...],
              fusion: tuple[int, int] | None, library: Library | None = None) -> CompiledJaxpr:
    writer = _Writer(closed, donated, fusion, library)
    jaxpr = closed.jaxpr
    params = ", ".join(writer.name(v) for v in jaxpr.invars)
    body = None
    if library is None and not any(has_effects(e) for e in jaxpr.eqns) and any(writer.on_floats):
        body = writer.body(floats=True)
        if writer.float_ops < 2 * writer.conversions:  # converting would cost more than it saves
            body = None
    if library is not None:  # the inputs become the library's arrays on entry
        lines = [f"def jitted({params}):", *(f"    {writer.name(v)} = to_library({writer.name(v)})"
                                             for v in jaxpr.invars), *writer.body(floats=False)]
    elif body is not None:
        lines = [f"def jitted({params}):", "    try:", *("    " + line for line in body),
                 "    except (ArithmeticError, ValueError):  # where NumPy gives inf or nan",
                 f"        return on_numpy_scalars({params})"]
    else:
        lines = [f"def jitted({params}):", *writer.body(floats=False)]
    source = "\n".join(lines)
    filename = _source_file(source, "" if library is None else f" on {library.name}")
    exec(compile(source, filename, "exec"), writer.namespace)
    blocks, files = "", [filename]
    for cluster in writer.clusters:  # each block function in a file of its own, for tracebacks and warnings
        files.append(_source_file(cluster.source, " fused"))
        cluster.compile(files[-1])
        blocks += "\n\n\n" + cluster.source
    if body is None:
        compiled = CompiledJaxpr(writer.namespace["jitted"], source, writer.legend, blocks=blocks)
    else:
        # The version on NumPy's scalars runs only where Python's numbers raise:
        # generated and compiled then (compiling costs as much as generating, and
        # more than linearly in a long function's length), or when its text is read.
        def numpy_version() -> str:
            text = "\n".join([f"def on_numpy_scalars({params}):", *writer.body(floats=False)])
            name = _source_file(text)
            exec(compile(text, name, "exec"), writer.namespace)  # replaces the stub below
            weakref.finalize(compiled, _released.append, name)
            return text

        def on_numpy_scalars(*args: Any) -> list[Any]:
            compiled.complete()
            return writer.namespace["on_numpy_scalars"](*args)

        writer.namespace["on_numpy_scalars"] = on_numpy_scalars
        compiled = CompiledJaxpr(writer.namespace["jitted"], source, writer.legend, numpy_version, blocks)
    for name in files:
        weakref.finalize(compiled, _released.append, name)
    return compiled


_completing = threading.Lock()


def runner(closed: ClosedJaxpr) -> Callable[..., list[Any]]:
    """A function running `closed` now: its generated code (for NumPy, or for
    the array library the computation runs on), or equation by equation when
    evaluation checks each primitive (debug_nans), so that the check names the
    primitive."""
    root = evaluation_trace()
    if root is EVAL_TRACE:
        return compile_jaxpr(closed).fun
    if isinstance(root, LibraryTrace):
        return compile_jaxpr(closed, library=root.library).fun
    return lambda *args: eval_closed_now(closed, args)


_numbers = itertools.count()
# The files of compiled functions that are gone, taken out of linecache at the next
# compile: not by the finalizer itself, which the garbage collector may run while
# linecache.checkcache walks the cache (doctest and pdb call it), whose lookup of a
# name it listed would then fail.
_released: list[str] = []
# Those names, free for the next source of their kind: `compile` interns its file name
# (CPython 3.11 never frees it), so a new name for each compile would keep 60 bytes
# for ever, and a loop whose body is traced anew at each call compiles at each call.
_free: dict[str, list[str]] = {}


def _source_file(source: str, suffix: str = "") -> str:
    """A file name of its own for generated `source`, which linecache then knows (until the
    compiled function goes): tracebacks show its lines, and NumPy's warnings from it can be
    told which operation they come from. The name of a compiled function that is gone
    is taken again."""
    while _released:
        try:
            gone = _released.pop()
        except IndexError:  # another thread took the last one
            break
        linecache.cache.pop(gone, None)
        _free.setdefault(gone[:gone.index("#") + 1], []).append(gone)
    prefix = f"<fgrad.jit{suffix} #"
    try:
        filename = _free.get(prefix, []).pop()
    except IndexError:
        filename = f"{prefix}{next(_numbers)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename


def _summary(value: Any) -> str:
    """A constant in a few words: its value when small, else its range."""
    arr = np.asarray(value)
    aval = f"{dtype_name(arr.dtype)}[{','.join(map(str, arr.shape))}]"
    if type(value) in (bool, int, float, complex):
        return f"{value!r}, {aval} (a Python scalar)"
    if arr.size <= 6:
        shown = np.array2string(arr, separator=", ", threshold=6) if arr.ndim else repr(arr[()].item())
        return f"{shown}, {aval}"
    if arr.dtype.kind in "biuf":
        return f"{aval}, from {arr.min().item()!r} to {arr.max().item()!r}"
    return aval


def _qualname(fun: Any) -> str:
    module = getattr(fun, "__module__", None) or "numpy"
    return f"{module}.{getattr(fun, '__name__', type(fun).__name__)}"


def _param(value: Any) -> str:
    if isinstance(value, ClosedJaxpr):
        n = len(value.jaxpr.eqns)
        return f"<a jaxpr of {n} equation{'s' if n != 1 else ''}>"
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return f"<{len(value)} jaxprs>"
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _within(where: tuple[str, ...]) -> str:
    return f", in {', in '.join(reversed(where))}" if where else ""


def _python_form(aval: ShapedArray) -> tuple[str, str] | None:
    """For a 0-d value that float code holds as a Python scalar, the names of
    its conversions from NumPy and back; None for any other."""
    return _PYTHON_FORMS.get(aval.dtype) if aval.shape == () else None


def _runs_on_floats(eqn: Any) -> bool:
    if eqn.primitive not in float_rules or len(eqn.outvars) != 1:
        return False
    for a in (eqn.outvars[0], *eqn.invars):  # (a loop, not _python_form: once per equation)
        aval = a.aval
        if aval.shape or aval.dtype not in _PYTHON_FORMS:
            return False
    return True


def _on_floats(eqn: Any) -> bool:
    """Whether the equation computes in floats (a float64 operand or result):
    then a Python int written in the jaxpr is written as a float, as NumPy
    turns it into a float64 beside one."""
    if eqn.outvars[0].aval.dtype == _FLOAT64:
        return True
    return any(a.aval.dtype == _FLOAT64 and not (type(a) is Literal and a.aval.weak_type) for a in eqn.invars)


def _statement(eqn: Any, outs: list[str], call: str) -> str:
    """The line binding an equation's results (`outs`) to `call`."""
    if not eqn.primitive.multiple_results:
        return f"{outs[0]} = {call}"
    return f"{', '.join(outs)}, = {call}" if outs else call


def _buffer_candidates(jaxpr: Jaxpr, donated: Sequence[bool]) -> set[Var]:
    """The variables whose buffer only the generated code can see: results of
    equations with an out rule (fresh arrays) and donated inputs, as long as no
    other equation (one that might return a view of them) takes them."""
    owned = {v for v, d in zip(jaxpr.invars, donated) if d}
    for eqn in jaxpr.eqns:
        if eqn.primitive in out_rules or eqn.primitive is fused_p:  # fresh arrays; views of none
            owned.update(eqn.outvars)
        else:
            owned.difference_update(a for a in eqn.invars if type(a) is Var)
    owned.difference_update(jaxpr.outvars)
    return owned


def _writes_out(eqn: Any) -> bool:
    """Whether the equation's one result can be written into a buffer given to it (`out=`)."""
    if eqn.primitive is fused_p:
        return bool(eqn.params["cluster"].takes_out)
    return eqn.primitive in out_rules and len(eqn.outvars) == 1


def _large(aval: ShapedArray) -> bool:
    return bool(aval.shape) and aval.dtype.itemsize * math.prod(aval.shape) >= LARGE_ARRAY_BYTES


class _BufferPlan:
    """Where each large result of an equation with an out rule goes.

    `into[i]` is the variable whose buffer equation i's result takes: a dead
    operand, or a value that died earlier and whose name is kept until then
    (`held[v]` is the equation that takes v's buffer). Otherwise the result
    needs memory of its own: `scratch[i]` is a slot of buffers the function
    keeps between calls, for a result whose memory never leaves the call (no
    output, nothing that may view it, is ever written into it); other results
    get fresh memory, as the caller will hold them.
    """

    def __init__(self, jaxpr: Jaxpr, owned: set[Var], release: dict[int, list[Var]],
                 large: bool = True) -> None:
        self.into: dict[int, Var] = {}
        self.held: dict[Var, int] = {}
        self.scratch: dict[int, int] = {}
        self.slots: list[ShapedArray] = []
        if not large:  # no large value: nothing to plan
            return
        buffer_of = {v: n for n, v in enumerate(v for v in jaxpr.invars if v in owned and _large(v.aval))}
        origin: dict[int, int] = {}  # buffer -> the equation that asks for its memory
        leaves: set[int] = set()  # buffers that reach an output or a view
        free: dict[tuple[Any, ...], list[Var]] = {}
        count = len(buffer_of)
        for i, eqn in enumerate(jaxpr.eqns):
            dead = release.get(i, ())
            if _writes_out(eqn) and _large(eqn.outvars[0].aval):
                out = eqn.outvars[0]
                kind = (out.aval.shape, out.aval.dtype)
                taken = next((v for v in dead if v in buffer_of and (v.aval.shape, v.aval.dtype) == kind),
                             None)
                if taken is None and free.get(kind):
                    taken = free[kind].pop()
                    self.held[taken] = i
                if taken is not None:
                    self.into[i] = taken
                    buffer = buffer_of[taken]
                else:
                    buffer, count = count, count + 1
                    origin[buffer] = i
                if out in owned:
                    buffer_of[out] = buffer
                else:
                    leaves.add(buffer)
                dead = [v for v in dead if v is not taken]
            elif eqn.primitive is fused_p:  # its other results: fresh buffers, which later results may take
                for out in eqn.outvars:
                    if out in owned and _large(out.aval):
                        buffer_of[out], count = count, count + 1
            for v in dead:
                if v in buffer_of:
                    free.setdefault((v.aval.shape, v.aval.dtype), []).append(v)
        for buffer, i in sorted(origin.items(), key=lambda item: item[1]):
            if buffer not in leaves:
                self.scratch[i] = len(self.slots)
                self.slots.append(jaxpr.eqns[i].outvars[0].aval)


def _scratch_pool(avals: list[ShapedArray]) -> tuple[Callable[[], list[Any]], Callable[[list[Any]], None]]:
    """`take()` a list of buffers for `avals` that no running call holds, and
    `give(buffers)` them back when the call is done: threads and nested calls
    each get their own. The pool holds at most as many lists as calls ever
    ran at once; a call that raises does not give its list back. Safe
    without a lock: `list.pop` and `list.append` are atomic."""
    pool: list[list[Any]] = []

    def take() -> list[Any]:
        try:
            return pool.pop()
        except IndexError:
            return [np.empty(a.shape, a.dtype) for a in avals]

    return take, pool.append


def _uses(jaxpr: Jaxpr) -> dict[Var, int]:
    """How many times each variable is read (by an equation, or as an output)."""
    uses: dict[Var, int] = {}
    for eqn in jaxpr.eqns:
        for a in eqn.invars:
            if type(a) is Var:
                uses[a] = uses.get(a, 0) + 1
    for a in jaxpr.outvars:
        if type(a) is Var:
            uses[a] = uses.get(a, 0) + 1
    return uses


def _packs(jaxpr: Jaxpr, uses: dict[Var, int]) -> tuple[dict[int, list[Any]], dict[int, int], dict[Var, int]]:
    """The concatenations of 0-d float64 values (a gradient put together from
    the cotangents of its elements, a stack of scalars) to write as one
    `np.array([...])` of those values (with any array among them, one
    `np.concatenate` of the arrays and such runs of values), rather than a
    reshape of each value and a concatenation: `packs[i]` lists the parts
    of equation i's result (a 0-d atom, or a list holding a 1-d operand),
    and `folded[j] = i` says that reshape j is written there and nowhere else;
    `used_until[v]` is the last pack that takes the 0-d value v (used there,
    not at its reshape). The two primitives are those of the `packing` table."""
    reshaped: dict[Var, int] = {}  # (1,) arrays made from a 0-d float64 value, by equation
    packs: dict[int, list[Any]] = {}
    folded: dict[int, int] = {}
    for i, eqn in enumerate(jaxpr.eqns):
        role = packing.get(eqn.primitive)
        if (role == "reshape" and eqn.params.get("new_shape") == (1,) and eqn.invars[0].aval.shape == ()
                and eqn.invars[0].aval.dtype == _FLOAT64):
            reshaped[eqn.outvars[0]] = i
            continue
        out = eqn.outvars[0].aval if len(eqn.outvars) == 1 else None
        if role != "concatenate" or out is None or out.ndim != 1 or out.dtype != _FLOAT64:
            continue
        mine: dict[Var, int] = {}
        for a in eqn.invars:
            if type(a) is Var:
                mine[a] = mine.get(a, 0) + 1
        parts: list[Any] = []
        for a in eqn.invars:
            if type(a) is Var and a in reshaped and uses[a] == mine[a]:
                parts.append(jaxpr.eqns[reshaped[a]].invars[0])
            else:
                parts.append([a])
        if sum(type(p) is not list for p in parts) >= 2:
            packs[i] = parts
            folded.update((reshaped[a], i) for a in eqn.invars if type(a) is Var and a in reshaped
                          and uses[a] == mine[a])
    used_until: dict[Var, int] = {}
    for i, parts in packs.items():
        for p in parts:
            if type(p) is Var:
                used_until[p] = max(used_until.get(p, i), i)
    return packs, folded, used_until


class _Writer:
    """The source text of one jaxpr's function, and the namespace it runs in."""

    def __init__(self, closed: ClosedJaxpr, donated: tuple[bool, ...],
                 fusion: tuple[int, int] | None = None, library: Library | None = None) -> None:
        jaxpr = closed.jaxpr
        self.library = library
        fused = fuse_clusters(jaxpr, *fusion) if fusion is not None else None
        self.jaxpr = jaxpr = fused or jaxpr
        self.clusters: list[Cluster] = [e.params["cluster"] for e in jaxpr.eqns if e.primitive is fused_p]
        self.donated = donated
        self.namespace: dict[str, Any] = {"math": math, "f64": np.float64, "b1": np.bool_, "i64": np.int64,
                                          "checked_int64": checked_int64, "np": np}
        self.temps = 0
        self.names: dict[Var, str] = {}
        self.counts: dict[str, int] = {}
        self.seen: dict[tuple[str, int], str] = {}
        # What each name stands for, for `CompiledJaxpr.header`; `within` says
        # which sub-jaxpr (a loop's body, a branch) is being written.
        self.legend: dict[str, tuple[Any, ...]] = {}
        self.within: tuple[str, ...] = ()
        for i, v in enumerate(jaxpr.invars):
            self.legend[self.name(v)] = ("input", i, v.aval)
        if library is not None:
            self.namespace.update(xp=library.xp, to_library=library.take_in)
        for v, c in zip(jaxpr.constvars, closed.consts):
            self.namespace[self.name(v)] = self.take_in(c)
            self.legend[self.names[v]] = ("const", c, ())
        self.release = last_uses(jaxpr)
        self.uses = _uses(jaxpr)
        self.on_floats = [_runs_on_floats(e) for e in jaxpr.eqns]
        if library is None:
            # Buffers are planned for large values only: a program with none (a scalar graph) has no plan.
            self.large = any(_large(v.aval) for v in jaxpr.invars) or any(
                _large(v.aval) for e in jaxpr.eqns for v in e.outvars)
            self.owned = _buffer_candidates(jaxpr, donated) if self.large else set()
            self.packs, self.folded, self.used_until = _packs(jaxpr, self.uses)
        else:
            self.large = False
            self.owned, self.packs, self.folded, self.used_until = set(), {}, {}, {}

    def take_in(self, value: Any) -> Any:
        """A constant as the code holds it: an array of the library it runs on."""
        return value if self.library is None else self.library.take_in(value)

    def name(self, v: Var) -> str:
        found = self.names.get(v)
        if found is None:
            found = self.names[v] = f"v{len(self.names)}"
        return found

    def glob(self, prefix: str, value: Any, eqn: Any = None) -> str:
        """A global of the generated code holding `value` (one per object):
        a constant (prefix "k"), or for the equation `eqn`, the function that
        computes it ("f") or its parameters ("p")."""
        key = self.seen.get((prefix, id(value)))
        if key is None:
            n = self.counts.get(prefix, 0)
            self.counts[prefix] = n + 1
            key = self.seen[(prefix, id(value))] = f"{prefix}{n}"
            self.namespace[key] = value
            if prefix == "k":
                self.legend[key] = ("const", value, self.within)
            elif prefix == "f":
                prim = eqn.primitive
                own = value is prim.impl or (self.library is not None and value is prim.xp_impl)
                ufunc = None if own else value
                self.legend[key] = ("fun", [eqn.primitive.name], ufunc, self.within)
            elif prefix == "p":
                self.legend[key] = ("params", eqn, self.within)
        elif key in self.legend:
            about = self.legend[key]
            if about[-1] and about[-1] != self.within:  # used in several places
                self.legend[key] = about = (*about[:-1], ())
            if prefix == "f" and eqn.primitive.name not in about[1]:
                about[1].append(eqn.primitive.name)  # one implementation of several primitives
        return key

    def body(self, floats: bool) -> list[str]:
        """The function's lines. With `floats`, equations that have a float rule
        run on Python floats; a variable then has a float form (`w3`), a NumPy
        form (`v3`) or both, each made where it is first needed."""
        jaxpr = self.jaxpr
        lines: list[str] = []
        self.float_ops = self.conversions = 0
        as_float: dict[Var, str] = {}  # variables whose value is held as a Python float
        as_numpy: set[Var] = set(jaxpr.invars) | set(jaxpr.constvars)
        keep = set(jaxpr.constvars) | (set(jaxpr.invars) if floats else set())
        plan = _BufferPlan(jaxpr, self.owned - set(jaxpr.invars) if floats else self.owned, self.release,
                           self.large)
        if plan.slots:
            take, give = _scratch_pool(plan.slots)
            names = ", ".join(f"s{k}" for k in range(len(plan.slots)))
            for k, aval in enumerate(plan.slots):
                self.legend[f"s{k}"] = ("scratch", aval)
            lines.append(f"    {names}, = scratch = {self.glob('take', take)}()")

        def numpy_form(a: Any) -> str:
            if type(a) is Literal:
                return self.glob("k", self.take_in(a.val))
            if a not in as_numpy:
                lines.append(f"    {self.name(a)} = {_PYTHON_FORMS[a.aval.dtype][1]}({float_text(a)})")
                self.conversions += 1
                as_numpy.add(a)
            return self.name(a)

        def float_text(a: Var) -> str:
            """The float form of `a` to write where it is read: its name, or
            the expression it stands for, if it is written where it is used."""
            found = pending.pop(a, None)
            if found is None:
                return as_float[a]
            let_go(found[2])
            return found[3]  # (read as an argument: no parentheses needed)

        def float_form(a: Any, in_floats: bool) -> str | None:
            """The Python scalar's expression (made by `convert` when first needed)."""
            if type(a) is Literal:
                if a.aval.dtype == bool:
                    return repr(bool(a.val))
                if a.aval.dtype.kind in "iu" and not in_floats:
                    return repr(int(a.val))
                if a.aval.dtype.kind in "iu" and abs(int(a.val)) > 2**53:
                    return None  # not a float exactly
                value = float(a.val)
                return repr(value) if math.isfinite(value) else self.glob("k", value)
            return as_float.get(a) or "w" + self.name(a)[1:]

        # The names of floats no longer needed, for new ones: a function with fewer
        # names compiles faster (CPython's compiler takes more than linear time in them).
        # `holders[name]` counts the variables a name holds (several, for an identity).
        spare: list[str] = []
        holders: dict[str, int] = {}
        # A float read once (not an output) is not given a line of its own: its
        # expression is written where it is read, `w7 = math.exp(w3 - w5)`,
        # which halves the lines CPython compiles and the names the code
        # stores. Until then `as_float` holds a placeholder (its own name, never
        # assigned) and `pending` its expression, nesting depth and the names
        # it reads, which are held (not taken again) until it is written.
        pending: dict[Var, tuple[str, int, list[str], str]] = {}

        def let_go(names: Sequence[str]) -> None:
            for name in names:
                holders[name] -= 1
                if not holders[name]:
                    del holders[name]
                    spare.append(name)

        def release(dead: Sequence[Var]) -> None:
            for v in dead:
                if v not in keep:
                    found = as_float.pop(v, None)
                    if found is not None and found in holders:
                        let_go((found,))

        def convert(a: Any) -> None:
            if type(a) is not Literal and a not in as_float:
                found = as_float[a] = "w" + self.name(a)[1:]
                holders[found] = 1
                lines.append(f"    {found} = {_PYTHON_FORMS[a.aval.dtype][0]}({self.name(a)})")
                self.conversions += 1

        def written(a: Var) -> None:
            """Give the pending `a` a line of its own (where its reader cannot take its expression)."""
            _, _, held, text = pending.pop(a)
            lines.append(f"    {as_float[a]} = {text}")
            holders[as_float[a]] = 1
            let_go(held)

        def inlined(call: str, invars: list[Any]) -> tuple[str, int, list[str]]:
            """`call` with the expressions of its pending operands written in
            (each read once there; one read more often, or nested too deep, is
            written on a line of its own first), the depth of the deepest, and
            the names they hold."""
            depth, held = 0, []
            for a in invars:
                if type(a) is not Var or a not in pending:
                    continue
                placeholder = as_float[a]
                if call.count(placeholder) != 1 or pending[a][1] >= _MAX_DEPTH or len(call) > _MAX_LENGTH:
                    written(a)
                    continue
                text, d, names, _ = pending.pop(a)
                call = call.replace(placeholder, text)
                depth = max(depth, d)
                held += names
            return call, depth, held

        later: dict[int, list[Var]] = {}  # deaths moved to the pack that takes a folded reshape's place
        for i, eqn in enumerate(jaxpr.eqns):
            # A value whose buffer a later equation takes keeps its name until then.
            dead = self.release.get(i, [])
            if plan.held:
                dead = [v for v in dead if plan.held.get(v, i) <= i]
            if self.used_until and dead:
                kept = []
                for v in dead:  # a value a later pack takes dies there
                    until = self.used_until.get(v, i)
                    if until > i:
                        later.setdefault(until, []).append(v)
                    else:
                        kept.append(v)
                dead = kept
            if i in self.folded:
                later.setdefault(self.folded[i], []).extend(dead)
                continue
            if i in later:
                dead = [*dead, *later.pop(i)]
            if i in self.packs:
                pieces: list[str] = []  # the arrays to concatenate
                values: list[str] = []  # a run of values to make one of them
                if pending:  # a value concatenated twice (reshaped once) is written first
                    parts = Counter(a for a in self.packs[i] if type(a) is Var)
                    for a, n in parts.items():
                        if n > 1 and a in pending:
                            written(a)
                for a in self.packs[i]:
                    if type(a) is list:
                        if values:
                            pieces.append(f"np.array([{', '.join(values)}])")
                            values = []
                        pieces.append(numpy_form(a[0]))
                    elif type(a) is Literal:
                        values.append(float_form(a, True) or self.glob("k", a.val))
                    else:
                        values.append(float_text(a) if a in as_float else numpy_form(a))
                if values:
                    pieces.append(f"np.array([{', '.join(values)}])")
                joined = pieces[0] if len(pieces) == 1 else f"np.concatenate(({', '.join(pieces)}))"
                lines.append(f"    {self.name(eqn.outvars[0])} = {joined}")
                as_numpy.update(eqn.outvars)
                self._delete(lines, dead, keep, as_numpy)
                release(dead)
                continue
            if floats and self.on_floats[i]:
                in_floats = _on_floats(eqn)
                operands = [float_form(a, in_floats) for a in eqn.invars]
                call = None
                if None not in operands:
                    rule = float_rules[eqn.primitive]
                    call = rule(operands, [a.aval for a in eqn.invars], **eqn.params)
                if call is not None:
                    for x in eqn.invars:
                        convert(x)
                    out = eqn.outvars[0]
                    single = self.uses.get(out) == 1
                    first = eqn.invars[0]
                    if call == operands[0] and type(first) is Var and first.aval.dtype == out.aval.dtype:
                        # An identity (stop_gradient): its operand's value, under the same name.
                        as_float[out] = as_float[first]
                        if first in pending:  # (read here only)
                            pending[out] = pending.pop(first)
                            if not single:
                                written(out)
                        else:
                            holders[as_float[first]] += 1
                        release(dead)
                        self._delete(lines, dead, keep, as_numpy)
                        continue
                    depth = 0
                    held: list[str] = []  # the names the expression reads, held until it is written
                    if not pending.keys().isdisjoint(eqn.invars):
                        call, depth, held = inlined(call, eqn.invars)
                    if single:  # written where it is read
                        for x in eqn.invars:
                            name = as_float.get(x)  # type: ignore[arg-type]
                            if name in holders:
                                holders[name] += 1
                                held.append(name)
                        release(dead)
                        as_float[out] = f"w{self.name(out)[1:]}_"  # a name of its own, part of no other
                        enclosed = call[-1] == ")" and call.count("(") == 1 and _CALL.match(call) is not None
                        pending[out] = (call if enclosed else f"({call})", depth + 1, held, call)
                    else:
                        release(dead)
                        let_go(held)
                        as_float[out] = name = spare.pop() if spare else "w" + self.name(out)[1:]
                        holders[name] = 1
                        lines.append(f"    {name} = {call}")
                    self.float_ops += 1
                    self._delete(lines, dead, keep, as_numpy)
                    continue
            args = [numpy_form(a) for a in eqn.invars]
            block = block_rules.get(eqn.primitive) if self.library is None else None
            statements = block(self, eqn, args) if block is not None else None
            if statements is not None:
                lines.extend("    " + line for line in statements)
                as_numpy.update(eqn.outvars)
                self._delete(lines, dead, keep, as_numpy)
                release(dead)
                continue
            into = plan.into.get(i)
            if into is not None:
                call = f"{self._out_function(eqn)}({', '.join(args)}, out={self.name(into)})"
                if plan.held.get(into) == i:
                    dead = [*dead, into]
            elif i in plan.scratch:
                buffer = f"s{plan.scratch[i]}"
                call = f"{self._out_function(eqn)}({', '.join(args)}, out={buffer})"
            else:
                call = self._numpy_call(eqn, args)
            lines.append("    " + _statement(eqn, [self.name(v) for v in eqn.outvars], call))
            as_numpy.update(eqn.outvars)
            self._delete(lines, dead, keep, as_numpy)
            release(dead)
        outs = ", ".join(numpy_form(a) for a in jaxpr.outvars)
        if plan.slots:
            lines.append(f"    {self.glob('give', give)}(scratch)")
        lines.append(f"    return [{outs}]")
        return lines

    def temp(self) -> str:
        """A fresh local name for a block rule's own variables (a loop counter)."""
        self.temps += 1
        return f"t{self.temps}"

    def inline(self, closed: ClosedJaxpr, args: Sequence[str], what: str = "a sub-jaxpr",
               into: Mapping[int, str] | None = None) -> tuple[list[str], list[str]]:
        """Lines computing `closed`'s outputs from the expressions `args`, and the
        expressions of its outputs: a sub-jaxpr written in place (no float
        chains, no buffer reuse, nothing deleted: its values are the block's).
        `what` names it in the source's header ("the body of scan").

        `into[k]` is an expression of a buffer of output k's shape and dtype (a
        row of a loop's stacked outputs) to compute that output into: those
        outputs that `written_into` chooses go there, the others are the
        caller's to copy."""
        outer = self.within
        self.within = (*outer, what)
        try:
            return self._inline(closed, args, into or {})
        finally:
            self.within = outer

    def written_into(self, closed: ClosedJaxpr, wanted: Sequence[int]) -> dict[Var, int]:
        """Of the outputs `wanted` of `closed`, those that an equation with an out
        rule makes (no view of anything), each output variable once: they can
        be computed straight into a buffer given for them (`inline`'s `into`)."""
        jaxpr = closed.jaxpr
        made = {eqn.outvars[0] for eqn in jaxpr.eqns if eqn.primitive in out_rules and len(eqn.outvars) == 1}
        chosen: dict[Var, int] = {}
        for k in wanted:
            v = jaxpr.outvars[k]
            if type(v) is Var and v in made and v not in chosen:
                chosen[v] = k
        return chosen

    def _inline(self, closed: ClosedJaxpr, args: Sequence[str],
                into: Mapping[int, str]) -> tuple[list[str], list[str]]:
        jaxpr = closed.jaxpr
        targets = {v: into[k] for v, k in self.written_into(closed, list(into)).items()}
        env: dict[Var, str] = {}
        for v, c in zip(jaxpr.constvars, closed.consts):
            env[v] = self.name(v)
            self.namespace[env[v]] = c
            self.legend[env[v]] = ("const", c, self.within)
        env.update(zip(jaxpr.invars, args))

        def atom(a: Any) -> str:
            return self.glob("k", a.val) if type(a) is Literal else env[a]

        lines: list[str] = []
        for eqn in jaxpr.eqns:
            ins = [atom(a) for a in eqn.invars]
            for v in eqn.outvars:
                env[v] = self.name(v)
            block = block_rules.get(eqn.primitive)
            statements = block(self, eqn, ins) if block is not None else None
            if statements is not None:
                lines.extend(statements)
                continue
            target = targets.get(eqn.outvars[0]) if len(eqn.outvars) == 1 else None
            if target is not None:
                call = f"{self._out_function(eqn)}({', '.join(ins)}, out={target})"
            else:
                call = self._numpy_call(eqn, ins)
            lines.append(_statement(eqn, [env[v] for v in eqn.outvars], call))
        return lines, [atom(a) for a in jaxpr.outvars]

    def _out_function(self, eqn: Any) -> str:
        """The global computing `eqn` into a buffer `out=`."""
        if eqn.primitive is fused_p:
            return self._cluster(eqn)
        return self.glob("f", out_rules[eqn.primitive], eqn)

    def _cluster(self, eqn: Any) -> str:
        cluster = eqn.params["cluster"]
        name = self.seen.get(("f", id(cluster)))
        if name is None:  # (the function's float version and its version on NumPy's scalars share it)
            name = self.glob("f", cluster, eqn)
            self.legend[name] = ("cluster", cluster, self.within)
        return name

    def _numpy_call(self, eqn: Any, args: list[str]) -> str:
        """The expression for `eqn` on NumPy values, in memory of its own."""
        prim = eqn.primitive
        if self.library is not None:
            return self._library_call(eqn, args)
        if prim is fused_p:
            return f"{self._cluster(eqn)}({', '.join(args)})"
        rule = emit_rules.get(prim)
        call = rule(args, [a.aval for a in eqn.invars], **eqn.params) if rule is not None else None
        if call is None:
            call = f"{self.glob('f', prim.impl, eqn)}({', '.join(args)}"
            if eqn.params:
                call += (", " if eqn.invars else "") + f"**{self.glob('p', eqn.params, eqn)}"
            call += ")"
        return call

    def _library_call(self, eqn: Any, args: list[str]) -> str:
        """The expression for `eqn` on the arrays of another library: its
        implementation called with the namespace `xp`."""
        prim = eqn.primitive
        if any(a.aval.dtype == object for a in eqn.invars):  # a loop's tape, NumPy's list of steps
            call = f"{self.glob('f', prim.impl, eqn)}({', '.join(args)}"
        else:
            call = f"{self.glob('f', prim.xp_impl, eqn)}({', '.join(['xp', *args])}"
        if eqn.params:
            call += f", **{self.glob('p', eqn.params, eqn)}"
        return call + ")"

    def _delete(self, lines: list[str], dead: Sequence[Var], keep: set[Var], as_numpy: set[Var]) -> None:
        names = []
        for v in dead:
            if v in keep:
                continue
            if v in as_numpy:  # a float is not worth the time a `del` takes
                names.append(self.name(v))
        if names:
            lines.append(f"    del {', '.join(names)}")
