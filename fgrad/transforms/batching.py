"""Batching (vmap): the interpreter that runs a function on a batch of examples.

A `BatchTracer` carries a value holding every example along one axis, its
batch dimension. For each primitive touching one, the trace calls the
primitive's batch rule with the parent trace current: the rule applies the
primitive to whole batches at once, moving batch dimensions only when it
must. A value without a batch dimension is the same for every example and
leaves the trace as a plain value, so Python control flow on it works.

Works on flat lists of values: pytrees and in_axes/out_axes belong to the API layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.avals import ShapedArray, get_aval
from ..core.errors import ConcretizationTypeError, missing_rule_error
from ..core.libraries import NUMPY_VALUE_TYPES, check_constant
from ..core.rules import batch_rules
from ..core.trace import Primitive, Trace, Tracer, ctx, tracing
from ..ir.cache import cached_per_jaxpr
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import trace_to_jaxpr
from ..primitives.batching import move_axis, with_batch_axis

__all__ = ["BatchTrace", "BatchTracer", "batch_flat", "batch_jaxpr"]


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")
    _trace: BatchTrace

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: int) -> None:
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        """The aval of one example: the value's, without the batch dimension."""
        aval = get_aval(self.val)
        shape = aval.shape[: self.batch_dim] + aval.shape[self.batch_dim + 1:]
        return ShapedArray(shape, aval.dtype)

    def concrete_value(self, conversion: str) -> Any:
        use = "an `if`, `while`, `and`, `or`, `not` or bool()" if conversion == "bool" else f"{conversion}()"
        names = self._trace.batched_names()
        if names:
            many = len(names) > 1
            origin = (f" It comes from {'one or more of ' if many else ''}the batched "
                      f"argument{'s' if many else ''} {', '.join(f'`{n}`' for n in names)}.")
        else:
            origin = ""
        error = ConcretizationTypeError(
            f"A batched value ({self.aval.str_short()} per example, traced by "
            f"`{self._trace.transform}`) was used where Python needs one concrete value "
            f"({use}).{origin} "
            "Under vmap it holds one value per example, and each example may need a different "
            "branch. Compute both branches and select with fgrad.numpy.where(cond, x, y), or "
            "branch with fgrad.lax.cond(pred, true_fun, false_fun, *operands), which vmap turns "
            "into a selection; or move the decision outside the vmapped function, or leave the "
            "value out of the mapped arguments (in_axes=None)."
        )
        error.trace = self._trace  # the vmap that met it, which may run the examples one by one
        raise error


class BatchTrace(Trace):
    """`batched_names()` names the mapped arguments, for messages (asked only then)."""

    __slots__ = ("axis_size", "batched_names")

    def __init__(self, parent: Trace, transform: str, axis_size: int,
                 batched_names: Callable[[], list[str]] = list) -> None:
        super().__init__(parent, transform)
        self.axis_size = axis_size
        self.batched_names = batched_names

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        vals = list(args)
        dims: list[int | None] = [None] * len(args)
        batched = False
        for i, x in enumerate(args):
            if type(x) is BatchTracer and x._trace is self:
                vals[i] = x.val
                dims[i] = x.batch_dim
                batched = True
            elif isinstance(x, Tracer):
                self.check_foreign(x)
            elif type(x) not in NUMPY_VALUE_TYPES:
                check_constant(x, self)
        if not batched:
            return self.parent.process_primitive(prim, vals, params)  # type: ignore[union-attr, arg-type]
        rule = batch_rules.get(prim)
        if rule is None:
            raise missing_rule_error(prim.name, "batching", self.transform)
        state = self.state
        prev = state["trace"]
        state["trace"] = self.parent
        try:
            out, out_dim = rule(vals, dims, **params)
        finally:
            state["trace"] = prev
        if prim.multiple_results:
            return [o if d is None else BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return out if out_dim is None else BatchTracer(self, out, out_dim)

    def split(self, x: Any) -> tuple[Any, int | None]:
        """(value, batch dimension) of an output; None if it is the same for every example."""
        if type(x) is BatchTracer and x._trace is self:
            return x.val, x.batch_dim
        if isinstance(x, Tracer) and x._trace is not self:
            self.check_foreign(x)
        return x, None


def batch_flat(
    fun: Callable[..., Sequence[Any]],
    args: Sequence[Any],
    in_dims: Sequence[int | None],
    out_dims: Callable[[], Sequence[int | None]],
    axis_size: int,
    transform: str = "vmap",
    arg_names: Callable[[], list[str]] = list,
) -> list[Any]:
    """Run `fun` on batches: `args[i]` holds the examples along `in_dims[i]`
    (None: the same for all). Outputs come back with their examples along
    `out_dims()` (asked for after `fun` has run, when the output's structure is
    known; None: an output that must not vary across examples). `arg_names()`
    names each of `args`, for messages."""

    def batched_names() -> list[str]:
        return [name for name, d in zip(arg_names(), in_dims) if d is not None]

    trace = BatchTrace(ctx.trace, transform, axis_size, batched_names)
    with tracing(trace):
        ins = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, in_dims)]
        outs = fun(*ins)
    results = []
    for x, want in zip(outs, out_dims()):
        val, dim = trace.split(x)
        if want is None:
            if dim is not None:
                raise ValueError(
                    f"vmap has out_axes=None for an output that varies across the batch "
                    f"(shape {get_aval(val).str_short()} with the batch at axis {dim}); give it an "
                    "integer out_axes, or make it independent of the mapped inputs"
                )
            results.append(val)
        else:
            if dim is None:  # the same for every example: repeat it along a new axis
                val, dim = with_batch_axis(val, None, axis_size), 0
            results.append(move_axis(val, dim, want))
    return results


@cached_per_jaxpr
def batch_jaxpr(
    closed: ClosedJaxpr,
    axis_size: int,
    in_dims: tuple[int | None, ...],
    out_instantiate: bool | tuple[bool, ...],
) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """`closed` on batches, as a jaxpr (cached): input i holds `axis_size`
    examples along `in_dims[i]` (None: the same for all). An output that
    varies across examples, or is marked in `out_instantiate`, holds them along
    axis 0; the others are unbatched. Returns the jaxpr and which outputs are
    batched. A loop's carry is batched to a fixpoint by calling it again with
    `out_instantiate` set to the carries found batched so far.
    """
    n_out = len(closed.out_avals)
    inst = (out_instantiate,) * n_out if isinstance(out_instantiate, bool) else out_instantiate
    out_batched: list[bool] = []
    # A negative axis counts from the end of the batched value, as vmap's in_axes do.
    in_dims = tuple(d if d is None or d >= 0 else d + a.ndim + 1 for a, d in zip(closed.in_avals, in_dims))

    def batched(*args: Any) -> list[Any]:
        trace = BatchTrace(ctx.trace, "vmap of a jaxpr", axis_size)
        with tracing(trace):
            ins = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, in_dims)]
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
        results = []
        out_batched.clear()
        for x, want in zip(outs, inst):
            val, dim = trace.split(x)
            if dim is None and want:
                val, dim = with_batch_axis(val, None, axis_size), 0
            results.append(val if dim is None else move_axis(val, dim, 0))
            out_batched.append(dim is not None)
        return results

    in_avals = [
        a if d is None else ShapedArray((*a.shape[:d], axis_size, *a.shape[d:]), a.dtype)
        for a, d in zip(closed.in_avals, in_dims)
    ]
    jaxpr = trace_to_jaxpr(batched, in_avals, "vmap of a jaxpr", fresh=True)
    return jaxpr, tuple(out_batched)
