"""Running a custom function's Python code on the values at hand.

Under grad, jvp, vjp and vmap outside jit and make_jaxpr, custom_jvp,
custom_vjp and checkpoint run their functions and rules eagerly, as autograd
and PyTorch do, so Python control flow in them works (`custom.py` and
`checkpoint.py` say how each kind does). This module holds what the three share:

* `transform_of` finds the transform that applies the custom rule: the
  innermost one around the call with a tracer among its arguments (`None`:
  none has one, and the function is ordinary code to every transform), or
  `STAGED` when values are abstract (jit, make_jaxpr, a tangent being
  recorded) and the call is staged as before.
* `run_below` runs the rule's code a level below that transform, on the
  values underneath its tracers. What the code closes over is invisible
  there: a tracer of that transform (or of one between it and the call)
  would be met by a trace that cannot interpret it. So those transforms are
  hidden while the code runs (their `dead` holds a `core.trace.Hidden`): a
  use of one of their tracers raises, and `run_below` returns None, telling
  the caller to stage the call instead, which turns closed-over values into
  operands every transform sees. A rule that runs later (custom_vjp's bwd) is
  looked into beforehand (`closes_over_hidden`).

This module knows the transforms' trace types, not the custom primitives.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import types
from collections.abc import Callable, Sequence
from typing import Any

from ..core.errors import ConcretizationTypeError
from ..core.trace import Hidden, Trace, Tracer, ctx, tracing
from ..ir.staging import StagingTrace
from ..primitives import indexing
from ..primitives.batching import move_axis, with_batch_axis
from ..primitives.indexing import StaticIndex
from ..transforms.batching import BatchTrace, BatchTracer
from ..transforms.forward import JVPTrace
from ._common import stacked

__all__ = ["STAGED", "transform_of", "run_below", "closes_over_hidden", "unbatched",
           "vmapped"]

Flat = Callable[..., list[Any]]


class _Staged:
    def __repr__(self) -> str:
        return "STAGED"


STAGED: Any = _Staged()


def transform_of(leaves: Sequence[Any]) -> Any:
    """The transform whose custom rule applies to a call on `leaves`: the
    innermost trace around the call owning one of them (a JVPTrace, which
    includes linearization, or a BatchTrace); None if none owns one; STAGED if
    the call must be staged: some trace around it stages every value, a value
    is a tangent being recorded, or a tracer belongs to no trace around it."""
    traces = {x._trace for x in leaves if isinstance(x, Tracer)}
    owner = None
    trace = ctx.trace
    while trace.parent is not None:
        if type(trace) is StagingTrace and trace.stage_constants:  # abstract values below, or here
            return STAGED
        if owner is None and trace in traces:
            owner = trace
        trace = trace.parent
    if owner is None:
        return STAGED if traces else None
    return owner if isinstance(owner, (JVPTrace, BatchTrace)) else STAGED


def _hidden(owner: Trace) -> list[Trace]:
    """The traces from the current one down to `owner`, and the traces
    recording the tangents of those above it: what code run below `owner`
    must not meet."""
    hidden: list[Trace] = []
    trace: Trace = ctx.trace
    while True:
        hidden.append(trace)
        if trace is owner:
            return hidden
        if isinstance(trace, JVPTrace) and trace.rule_trace is not trace.parent:
            hidden.append(trace.rule_trace)
        assert trace.parent is not None, "the owner is a trace around the call"
        trace = trace.parent


def run_below(owner: Trace, level: Trace, run: Callable[[], list[Any]], where: str,
              later: Any = None) -> list[Any] | None:
    """`run()` with `level` current and the transforms from the current one
    down to `owner` hidden: its results, or None if the code used (or
    returned) a tracer of one of those, which it must have closed over, or if
    `later` (a function to run after the call) closes over one. `where` names
    the code for the error a hidden tracer raises."""
    hidden = _hidden(owner)
    mark = Hidden(where)
    saved = [(t, t.dead) for t in hidden]
    for t in hidden:
        if not t.dead:  # one hidden by an enclosing call stays hidden by it
            t.dead = mark
    prev = ctx.trace
    ctx.trace = level
    try:
        if later is not None and closes_over_hidden(later):
            return None
        out = run()
    except Exception:
        if mark.used:
            return None
        raise
    finally:
        ctx.trace = prev
        for t, dead in saved:
            t.dead = dead
    if mark.used or any(isinstance(x, Tracer) and x._trace in hidden for x in out):
        return None
    return out


# How many entries of a container closes_over_hidden looks at: a tracer further in a long
# list is missed here, and met (raising) when the rule runs.
_LOOKED_AT = 64


def closes_over_hidden(fn: Any, depth: int = 4) -> bool:
    """Whether the Python function `fn` closes over a tracer whose trace is
    hidden (or dead): looking into its closure's cells, its defaults, the
    globals it names, the arguments of a `functools.partial`, and the
    containers, functions and objects' attributes found there, `depth` levels
    deep. For a rule that runs after the call, whose code cannot be watched now."""
    seen: set[int] = set()

    def look(x: Any, d: int) -> bool:
        if isinstance(x, Tracer):
            return bool(x._trace.dead)
        if d == 0 or id(x) in seen:
            return False
        seen.add(id(x))
        if isinstance(x, (list, tuple, set, frozenset)):
            return any(look(v, d - 1) for v in itertools.islice(x, _LOOKED_AT))
        if isinstance(x, dict):
            return any(look(v, d - 1) for v in itertools.islice(x.values(), _LOOKED_AT))
        if isinstance(x, functools.partial):
            return look(x.func, d - 1) or look(x.args, d - 1) or look(x.keywords, d - 1)
        func = getattr(x, "__func__", x)  # a bound method: its function and its object's values
        code = getattr(func, "__code__", None)
        if code is None:  # an object of the user's: the values of its attributes
            attributes = getattr(x, "__dict__", None)
            if not isinstance(attributes, dict) or isinstance(x, (type, types.ModuleType)):
                return False
            return any(look(v, d - 1) for v in attributes.values())
        found: list[Any] = [*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()]
        for cell in func.__closure__ or ():
            with contextlib.suppress(ValueError):  # a cell not filled yet
                found.append(cell.cell_contents)
        names = func.__globals__
        found.extend(names[n] for n in code.co_names if n in names)
        owner = getattr(x, "__self__", None)
        if owner is not None:
            found.extend(getattr(owner, "__dict__", {}).values())
        return any(look(v, d - 1) for v in found)

    return look(fn, depth)


def unbatched(owner: BatchTrace, leaves: Sequence[Any]) -> tuple[list[Any], list[int | None]]:
    """The values underneath `owner`'s tracers among `leaves`, batched along
    axis 0 (to be run at `owner`'s parent), and their batch axes (None for a
    value the same for every example, left as it is)."""
    vals: list[Any] = []
    dims: list[int | None] = []
    for x in leaves:
        if type(x) is BatchTracer and x._trace is owner:
            vals.append(move_axis(x.val, x.batch_dim, 0))
            dims.append(0)
        else:
            vals.append(x)
            dims.append(None)
    return vals, dims


def vmapped(fn: Flat, size: int, name: str, in_dims: Sequence[int | None],
            out_dims: list[int | None] | None = None, force: Callable[[], int] | None = None) -> Flat:
    """`fn` (flat lists in and out) on batches of `size`, its inputs batched
    along `in_dims` (None: the same for every example). A result that varies
    across the batch comes batched along axis 0, and so do the leading ones
    `force()` counts (asked once `fn` has run; None: all of them); a list
    `out_dims` is filled with each result's batch axis (0, or None)."""

    def batched(*xs: Any) -> list[Any]:
        trace = BatchTrace(ctx.trace, f"vmap of {name}", size)
        try:
            with tracing(trace):
                outs = fn(*[x if d is None else BatchTracer(trace, x, d) for x, d in zip(xs, in_dims)])
        except ConcretizationTypeError as e:
            if e.trace is not trace:
                raise
            # Python control flow on a batched value: the examples one by one.
            return _one_by_one(fn, size, in_dims, out_dims, xs)
        forced = len(outs) if force is None else force()
        results: list[Any] = []
        dims: list[int | None] = []
        for i, x in enumerate(outs):
            val, dim = trace.split(x)
            if dim is None and i < forced:
                val, dim = with_batch_axis(val, None, size), 0
            results.append(val if dim is None else move_axis(val, dim, 0))
            dims.append(None if dim is None else 0)
        if out_dims is not None:
            out_dims[:] = dims
        return results

    return batched


def _one_by_one(fn: Flat, size: int, in_dims: Sequence[int | None], out_dims: list[int | None] | None,
                xs: Sequence[Any]) -> list[Any]:
    """`fn` run on each example in turn, its results stacked along axis 0: what
    `vmapped` does where `fn`'s Python code needs an example's own value (an
    `if` on it), as a Python loop over the examples would."""
    moved = [x if d is None else move_axis(x, d, 0) for x, d in zip(xs, in_dims)]
    runs = [fn(*[x if d is None else indexing.getitem(x, idx=StaticIndex((i,)))
                 for x, d in zip(moved, in_dims)]) for i in range(size)]
    results = [stacked([run[k] for run in runs]) for k in range(len(runs[0]))] if runs else []
    if out_dims is not None:
        out_dims[:] = [0] * len(results)
    return results
