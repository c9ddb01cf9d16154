"""Forward mode: the JVP interpreter.

A `JVPTracer` carries a primal and its tangent. For each primitive touching
one, the trace calls the primitive's jvp rule with the *rule trace* current:
the parent trace for plain `jvp`, or a tangent-staging trace for `linearize`
(reverse.py), which then records the tangent equations into a linear jaxpr
while the primal work still runs now. This is the only place jvp rules run.

A tangent of None is a symbolic zero; a result whose tangent is zero leaves
the trace as its bare primal, so constants never pay for differentiation.
Works on flat lists of values: pytrees belong to the API layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.errors import derivative_dropped_error, missing_rule_error
from ..core.libraries import NUMPY_VALUE_TYPES, check_constant, is_library_array
from ..core.rules import LINEAR, JVPFactors, JVPStructure, Linearization, jvp_rules
from ..core.trace import EVAL_TRACE, Primitive, Trace, Tracer, ctx, tracing
from ..ir.cache import cached_per_jaxpr
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import StagingTrace, trace_to_jaxpr
from ..primitives.derivatives import zeros_like_value
from ..primitives.elementwise import add_p, convert_element_type_p, mul_p, neg_p
from ..primitives.shapes import broadcast_to_p

__all__ = ["JVPTrace", "JVPTracer", "jvp_flat", "jvp_jaxpr"]


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any) -> None:
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self.primal)

    def concrete_value(self, conversion: str) -> Any:
        # Tracers of differentiation carry concrete primals: Python control
        # flow on them works (bool() recurses if the primal is itself traced).
        # A conversion to a number that keeps its value would drop its tangent.
        shown = _DROPS_TANGENT.get(conversion)
        if shown is not None:
            raise self.conversion_error(shown)
        return self.primal

    def conversion_error(self, conversion: str) -> TypeError:
        return derivative_dropped_error(conversion, self.aval.str_short(), self._trace.transform)


# The conversions whose result would keep the value but not its tangent, as the
# message names them. int(), bool() and indices are zero-derivative anyway, and
# control flow needs them.
_DROPS_TANGENT = {"float": "float()", "complex": "complex()", "item": ".item()", "tolist": ".tolist()"}


# The rule traces that record tangent equations (linearization's jaxpr, the
# eager tape): each is told the primitive whose derivative it records (`source`).
RECORDING_TRACES: set[type] = {StagingTrace}

_NO_PARAMS: dict[str, Any] = {}  # shared by the parameterless equations emitted here: never mutated


class JVPTrace(Trace):
    __slots__ = ("rule_trace",)

    def __init__(self, parent: Trace, transform: str, rule_trace: Trace | None = None) -> None:
        super().__init__(parent, transform)
        self.rule_trace = parent if rule_trace is None else rule_trace

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        primals = list(args)
        tangents = [None] * len(args)
        active = False
        for i, x in enumerate(args):
            if type(x) is JVPTracer and x._trace is self:
                primals[i] = x.primal
                tangents[i] = x.tangent
                active = True
            elif isinstance(x, Tracer):
                self.check_foreign(x)
            elif type(x) not in NUMPY_VALUE_TYPES:
                check_constant(x, self)
        if not active:
            return self.parent.process_primitive(prim, primals, params)  # type: ignore[union-attr, arg-type]
        rule = jvp_rules.get(prim)
        if rule is None:
            raise missing_rule_error(prim.name, "jvp", self.transform)
        kind = type(rule)
        if kind is JVPFactors or kind is JVPStructure:
            # A rule given as data: the primal goes straight to the parent.
            parent = self.parent
            if parent is EVAL_TRACE:
                primal_out = prim.impl(*primals, **params) if params else prim.impl(*primals)
            else:
                primal_out = parent.process_primitive(prim, primals, params)  # type: ignore[union-attr, arg-type]
            if type(self.rule_trace) in RECORDING_TRACES:  # tell the record where its equations come from
                self.rule_trace.source = prim.name  # type: ignore[attr-defined]
            if kind is JVPFactors:
                tangent_out = None if rule.none else self.apply_factors(  # type: ignore[union-attr]
                    prim, rule, primal_out, primals, tangents, params)  # type: ignore[arg-type]
            elif rule is LINEAR:
                tangent_out = self.apply_linear(prim, primals, tangents, params)
            else:
                tangent_out = self.apply_bilinear(prim, primals, tangents, params)
        elif kind is Linearization:
            primal_out, tangent_out = self.apply_linearization(prim, rule, primals, tangents, params)  # type: ignore[arg-type]
        else:
            state = self.state
            prev = state["trace"]
            state["trace"] = rule_trace = self.rule_trace
            if type(rule_trace) in RECORDING_TRACES:  # linearizing: say where its equations come from
                rule_trace.source = prim.name  # type: ignore[attr-defined]
            try:
                primal_out, tangent_out = rule(primals, tangents, **params)  # type: ignore[operator]
            finally:
                state["trace"] = prev
        if prim.multiple_results:
            if tangent_out is None:
                tangent_out = [None] * len(primal_out)
            return [self.without_tangent(p) if t is None else JVPTracer(self, p, t)
                    for p, t in zip(primal_out, tangent_out)]
        if tangent_out is None:
            return self.without_tangent(primal_out)
        return JVPTracer(self, primal_out, tangent_out)

    def without_tangent(self, primal: Any) -> Any:
        """A result without a derivative: the value itself, or for another
        library's array a tracer with a zero tangent, since such an array may not
        take a tracer as an operand (array_api_strict's `*` raises TypeError)."""
        if type(primal) not in NUMPY_VALUE_TYPES and is_library_array(primal):
            return JVPTracer(self, primal, None)
        return primal

    def apply_linearization(
        self, prim: Primitive, rule: Linearization, primals: list[Any], tangents: list[Any],
        params: dict[str, Any],
    ) -> tuple[Any, Any]:
        """Forward mode of a primitive with its own reverse mode: its jvp."""
        state = self.state
        prev = state["trace"]
        state["trace"] = self.rule_trace
        try:
            return rule.jvp(primals, tangents, **params)
        finally:
            state["trace"] = prev

    def emit(self, prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> Any:
        """One equation of the tangent computation, `prim` on tangents (and
        primal values): bound on the rule trace. Linearization records it into
        its linear jaxpr instead (`LinearizeTrace.emit`); that is the only
        difference between applying a rule given as data in the two modes."""
        state = self.state
        prev = state["trace"]
        state["trace"] = self.rule_trace
        try:
            return prim.bind(*args, **params) if params else prim.bind(*args)
        finally:
            state["trace"] = prev

    def apply_factors(
        self, prim: Primitive, rule: JVPFactors, ans: Any, primals: list[Any], tangents: list[Any],
        params: dict[str, Any],
    ) -> Any:
        """The output tangent `sum_i tangent_i * factor_i`, fitted to `ans`. The
        factors are primal values, computed on the parent trace (reverse mode
        keeps them as residuals); the products and sums are emitted."""
        out = None
        for factor, t in zip(rule.factors, tangents):
            if t is None or factor is None:
                continue
            if callable(factor):
                state = self.state
                prev = state["trace"]
                state["trace"] = self.parent
                try:
                    factor = factor(ans, *primals, **params) if params else factor(ans, *primals)
                finally:
                    state["trace"] = prev
            out = self.add_product(out, t, factor)
        return None if out is None else self.fit(out, ans)

    def add_product(self, out: Any, t: Any, factor: Any) -> Any:
        """`out + t * factor` (`t * factor` if `out` is None), emitted."""
        if type(factor) is int and factor in (1, -1):  # a constant +-1: no product
            c = t if factor == 1 else self.emit(neg_p, (t,), _NO_PARAMS)
        else:
            c = self.emit(mul_p, (t, factor), _NO_PARAMS)
        return c if out is None else self.emit(add_p, (out, c), _NO_PARAMS)

    def fit(self, out: Any, ans: Any) -> Any:
        """Tangent `out` broadcast and cast to the shape and dtype of `ans`, where they differ."""
        want = get_aval(ans)
        aval = out.aval if isinstance(out, Tracer) else get_aval(out)  # the common case, directly
        if aval is not want:
            if aval.shape != want.shape:
                out = self.emit(broadcast_to_p, (out,), {"shape": want.shape})
            if aval.dtype != want.dtype:
                out = self.emit(convert_element_type_p, (out,), {"new_dtype": want.dtype})
        return out

    def apply_linear(
        self, prim: Primitive, primals: list[Any], tangents: list[Any], params: dict[str, Any]
    ) -> Any:
        """The primitive on the tangents (zeros where a tangent is symbolic)."""
        filled = [self.zeros(p) if t is None else t for p, t in zip(primals, tangents)]
        return self.emit(prim, filled, params)

    def apply_bilinear(
        self, prim: Primitive, primals: list[Any], tangents: list[Any], params: dict[str, Any]
    ) -> Any:
        """Sum over differentiated arguments i of the primitive with argument i
        replaced by its tangent (the product rule)."""
        out = None
        for i, t in enumerate(tangents):
            if t is not None:
                args = list(primals)
                args[i] = t
                c = self.emit(prim, args, params)
                out = c if out is None else self.emit(add_p, (out, c), _NO_PARAMS)
        return out

    def zeros(self, x: Any) -> Any:
        """A zero tangent for `x`, as an emitted equation."""
        aval = get_aval(x).strip_weak_type()
        return self.emit(broadcast_to_p, (np.zeros((), aval.dtype),), {"shape": aval.shape})

    def split(self, x: Any) -> tuple[Any, Any]:
        """(primal, tangent) of an output; tangent None if it does not depend on the inputs."""
        if type(x) is JVPTracer and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer) and x._trace is not self:
            self.check_foreign(x)
        return x, None


def jvp_flat(
    fun: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    transform: str = "jvp",
    has_aux: bool = False,
) -> tuple[list[Any], list[Any], list[Any]]:
    """Push `tangents` (None: zero) forward through `fun` at `primals`.

    Returns the output primals, their tangents (None where exactly zero) and,
    if `has_aux` (then `fun` returns `(outs, aux)`), the aux values without tangents.
    """
    trace = JVPTrace(ctx.trace, transform)
    with tracing(trace):
        ins = [p if t is None else JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = fun(*ins)
        outs, aux = outs if has_aux else (outs, [])
    pairs = [trace.split(x) for x in outs]
    aux = [trace.split(x)[0] for x in aux]
    return [p for p, _ in pairs], [t for _, t in pairs], aux


@cached_per_jaxpr
def jvp_jaxpr(
    closed: ClosedJaxpr, nonzeros: tuple[bool, ...], instantiate: bool | tuple[bool, ...]
) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """The jvp of `closed`, as a jaxpr (cached).

    Its inputs are `closed`'s, then the tangents of those marked in `nonzeros`;
    its outputs are `closed`'s, then the tangents of the outputs that depend on
    a nonzero tangent or are marked in `instantiate` (those get zeros). Returns
    the jaxpr and, for each output, whether it has a tangent there.
    """
    n_in, n_out = len(nonzeros), len(closed.out_avals)
    inst = (instantiate,) * n_out if isinstance(instantiate, bool) else instantiate
    out_nonzeros: list[bool] = []

    def jvp_of_jaxpr(*args: Any) -> list[Any]:
        it = iter(args[n_in:])
        tangents = [next(it) if nz else None for nz in nonzeros]
        outs, t_outs, _ = jvp_flat(
            lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), args[:n_in], tangents, "jvp of a jaxpr"
        )
        t_outs = [zeros_like_value(o) if t is None and i else t for o, t, i in zip(outs, t_outs, inst)]
        out_nonzeros[:] = [t is not None for t in t_outs]
        return [*outs, *(t for t in t_outs if t is not None)]

    avals = closed.in_avals
    in_avals = [*avals, *(a.strip_weak_type() for a, nz in zip(avals, nonzeros) if nz)]
    jaxpr = trace_to_jaxpr(jvp_of_jaxpr, in_avals, "jvp of a jaxpr", fresh=True)
    return jaxpr, tuple(out_nonzeros)
