"""The staging trace: records primitives into a jaxpr instead of running them.

It has two uses, chosen by `stage_constants`:

* `make_jaxpr` (stage_constants=True): every primitive is recorded, even one
  whose inputs are all constants, as JAX does.
* the tangent half of `linearize` (stage_constants=False): a primitive that
  touches none of this trace's tracers is passed down to the parent trace and
  computed now. That is partial evaluation: primal values (the residuals) are
  computed eagerly and only the linear tangent equations are recorded.

Values that are not this trace's tracers become constant variables of the
jaxpr (arrays, tracers of enclosing transforms) or inline literals (scalars).
This module knows no derivative rules and no pytrees.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.errors import ConcretizationTypeError
from ..core.libraries import is_library_array
from ..core.trace import EVAL_TRACE, Primitive, Trace, Tracer, ctx, tracing
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var

__all__ = ["StagingTrace", "StagingTracer", "trace_to_jaxpr", "closure_convert"]

_SCALAR_TYPES = (float, int, bool, complex, np.generic)
_aval_of = operator.attrgetter("aval")


class StagingTracer(Tracer):
    """A value being staged: a variable of the jaxpr under construction."""

    __slots__ = ("var", "aval")

    def __init__(self, trace: StagingTrace, var: Var) -> None:
        self._trace = trace
        self.var = var
        self.aval = var.aval  # type: ignore[misc]

    def concrete_value(self, conversion: str) -> Any:
        trace = self._trace
        assert isinstance(trace, StagingTrace)
        raise trace.concretization_error(self, conversion)


class StagingTrace(Trace):
    __slots__ = ("invars", "eqns", "constvars", "consts", "_const_ids", "stage_constants",
                 "fun_name", "arg_names", "source", "advice", "_deps", "_deps_seen")

    def __init__(
        self,
        parent: Trace,
        transform: str,
        stage_constants: bool = True,
        fun_name: str = "the function",
        arg_names: Sequence[str] = (),
        advice: str | None = None,
    ) -> None:
        super().__init__(parent, transform)
        # The last fix a concretization error suggests: why this function is
        # traced abstractly, and what to do about it.
        self.advice = advice or (
            "differentiate with grad/jvp/vjp directly: they trace with concrete values, so "
            "Python control flow runs as written there."
        )
        self.invars: list[Var] = []
        self.eqns: list[JaxprEqn] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self.stage_constants = stage_constants
        self.fun_name = fun_name
        self.arg_names = list(arg_names)
        self.source: str | None = None  # recorded in each equation (see JaxprEqn.source)
        # For messages: the inputs each variable depends on, as far as the
        # inputs and equations counted in `_deps_seen` go (see _arguments_behind).
        self._deps: dict[Var, frozenset[int]] = {}
        self._deps_seen = (0, 0)

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return StagingTracer(self, var)

    def atom(self, x: Any) -> Atom:
        """The jaxpr atom standing for `x` in this trace."""
        if isinstance(x, _SCALAR_TYPES) or (type(x) is np.ndarray and x.ndim == 0):
            return Literal(x, get_aval(x))
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.var
            self.check_foreign(x)
        var = self._const_ids.get(id(x))
        if var is None:
            if not isinstance(x, (Tracer, np.ndarray)) and not is_library_array(x):
                x = np.asarray(x)  # another library's array stays one: a constant of the jaxpr
            var = self._const_ids[id(x)] = Var(get_aval(x))
            self.constvars.append(var)
            self.consts.append(x)  # also keeps id(x) from being reused
        return var

    def process_primitive(self, prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if not self.stage_constants:
            for x in args:
                if type(x) is StagingTracer and x._trace is self:
                    break
            else:
                return self.parent.process_primitive(prim, args, params)  # type: ignore[union-attr]
        invars = [x.var if type(x) is StagingTracer and x._trace is self else self.atom(x)
                  for x in args]
        out = self.add_eqn(prim, invars, params)
        if prim.multiple_results:
            return [StagingTracer(self, v) for v in out]
        return StagingTracer(self, out)

    def add_eqn(
        self, prim: Primitive, invars: list[Atom], params: dict[str, Any], out_aval: Any = None
    ) -> Any:
        """Record `prim` applied to atoms of this jaxpr; returns its output
        variable (a list of them if it has several results). `out_aval`, when
        the caller already knows it, spares the shape rule."""
        if out_aval is None:
            avals = map(_aval_of, invars)
            out_aval = prim.abstract_eval(*avals, **params) if params else prim.abstract_eval(*avals)
        if prim.multiple_results:
            outvars = [Var(a) for a in out_aval]
            self.eqns.append(JaxprEqn(prim, invars, outvars, params, self.source))
            return outvars
        outvar = Var(out_aval)
        self.eqns.append(JaxprEqn(prim, invars, [outvar], params, self.source))
        return outvar

    def to_jaxpr(self, outs: Sequence[Any]) -> ClosedJaxpr:
        outvars = [self.atom(x) for x in outs]
        jaxpr = Jaxpr(list(self.constvars), list(self.invars), outvars, list(self.eqns))
        return ClosedJaxpr(jaxpr, self.consts)

    # --- messages ----------------------------------------------------------
    def _arguments_behind(self, var: Var) -> list[str]:
        # Extended from where the last message left it (inputs and equations
        # are only ever appended): code that asks whether a value is concrete
        # and catches the error (`lax.cond` of a traced predicate) may build
        # one message per equation it stages, and each costs only the new ones.
        deps = self._deps
        n_invars, n_eqns = self._deps_seen
        for i in range(n_invars, len(self.invars)):
            deps[self.invars[i]] = frozenset([i])
        for eqn in self.eqns[n_eqns:]:
            d = frozenset().union(*(deps.get(a, frozenset()) for a in eqn.invars if isinstance(a, Var)))
            for v in eqn.outvars:
                deps[v] = d
        self._deps_seen = (len(self.invars), len(self.eqns))
        names = self.arg_names
        return [names[i] if i < len(names) else f"#{i}" for i in sorted(deps.get(var, ()))]

    def concretization_error(self, tracer: StagingTracer, conversion: str) -> ConcretizationTypeError:
        used = {
            "bool": "Python needed its truth value (an `if`, `while`, `and`, `or`, `not` or bool())",
            "index": "Python needed it as an integer index (int(), range(), list indexing)",
        }.get(conversion, f"Python needed its concrete value ({conversion}())")
        args = self._arguments_behind(tracer.var)
        if args:
            origin = (f"It depends on the argument{'s' if len(args) > 1 else ''} "
                      f"{', '.join(f'`{a}`' for a in args)} of {self.fun_name}")
        else:
            origin = f"It was computed inside {self.fun_name}"
        return ConcretizationTypeError(
            f"Abstract value encountered where a concrete one is required: a traced "
            f"{tracer.aval.str_short()} value while tracing {self.fun_name} for "
            f"`{self.transform}`, and {used}. {origin}, and `{self.transform}` only knows "
            "its shape and dtype, not its value.\n"
            "To fix this, do one of:\n"
            "  - select between values with fgrad.numpy.where(cond, x, y) instead of `if`;\n"
            "  - branch with fgrad.lax.cond(pred, true_fun, false_fun, *operands), or loop with "
            "fgrad.lax.while_loop / fori_loop, which trace both ways and decide when the function runs;\n"
            "  - compute the condition from values that are not traced (close over them, or "
            "pass them through functools.partial);\n"
            f"  - {self.advice}"
        )


def trace_to_jaxpr(
    fun: Callable[..., Sequence[Any]],
    in_avals: Sequence[ShapedArray],
    transform: str,
    fun_name: str = "the function",
    fresh: bool = False,
    advice: str | None = None,
) -> ClosedJaxpr:
    """Stage `fun` (flat lists in, a flat list out) on abstract inputs.

    Values it closes over become constants of the jaxpr, tracers of enclosing
    transforms included. With `fresh` it is staged in a context of its own,
    below evaluation rather than below the current trace: a jaxpr-to-jaxpr
    transform's result must not depend on its caller's transforms. `advice`
    ends the message of a concretization error (see StagingTrace).
    """
    trace = StagingTrace(EVAL_TRACE if fresh else ctx.trace, transform, fun_name=fun_name, advice=advice)
    with tracing(trace):
        outs = fun(*[trace.new_arg(a) for a in in_avals])
    return trace.to_jaxpr(outs)


def closure_convert(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """The jaxpr with its constants turned into leading inputs, and those
    constants. A higher-order primitive takes them as operands, so that every
    transform sees what its function closed over."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], [*j.constvars, *j.invars], j.outvars, j.eqns), []), list(closed.consts)
