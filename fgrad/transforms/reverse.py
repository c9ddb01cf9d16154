"""Reverse mode, JAX's way: linearize, then transpose.

`linearize_flat` runs the JVP interpreter with a tangent-staging trace as its
rule trace: primal values (and everything the rules compute from them, the
residuals) are computed now, while the tangent equations are recorded into a
linear jaxpr whose constants are those residuals. `backward_pass` runs that
jaxpr backwards with each linear primitive's transpose rule, binding on the
current trace, so reverse mode is itself traceable: under make_jaxpr it
stages the backward equations, under another grad it is differentiated.

On concrete values, with nothing staging below, grad and vjp record the
same tangent equations on a tape instead of a jaxpr (tape.py), and run it
backwards with the same transpose rules.

Works on flat lists of values: pytrees belong to the API layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval, is_inexact_dtype
from ..core.errors import missing_rule_error
from ..core.rules import (
    LARGE_ARRAY_BYTES,
    JVPFactors,
    Linearization,
    UndefinedPrimal,
    transpose_rules,
)
from ..core.trace import EVAL_TRACE, Primitive, Tracer, ctx, tracing
from ..ir.cache import cached_per_jaxpr
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ..ir.passes import dce_closed_jaxpr, dce_jaxpr, last_uses
from ..ir.staging import StagingTrace, StagingTracer, trace_to_jaxpr
from ..primitives import elementwise, indexing, linalg
from ..primitives.derivatives import zeros
from .forward import JVPTrace, JVPTracer
from .partial_eval import partial_eval_jaxpr

__all__ = ["LinearFunction", "linearize_flat", "linearize_jaxpr", "backward_pass", "transpose_jaxpr"]


class LinearFunction:
    """The linear map from input tangents to output tangents at a point, as a
    jaxpr over tangents whose constants are the residuals. `nonzero_outputs`
    says which outputs depend on the inputs at all; the jaxpr has one output
    for each of those."""

    __slots__ = ("jaxpr", "in_avals", "out_avals", "nonzero_outputs")

    def __init__(
        self,
        jaxpr: ClosedJaxpr,
        in_avals: list[ShapedArray],
        out_avals: list[ShapedArray],
        nonzero_outputs: list[bool],
    ) -> None:
        self.jaxpr = jaxpr
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.nonzero_outputs = nonzero_outputs

    def transpose(self, cts_out: Sequence[Any], consume: bool = False) -> list[Any]:
        """Cotangents of the inputs (None where zero) from those of the outputs.

        With `consume`, this is the last use: the residuals are released one by
        one as the backward pass no longer needs them, lowering its peak memory.
        """
        cts = [ct for ct, nz in zip(cts_out, self.nonzero_outputs) if nz]
        consts = self.jaxpr.consts
        if consume:
            self.jaxpr.consts = []
        return backward_pass(self.jaxpr.jaxpr, consts, cts, consume)


class LinearizeTrace(JVPTrace):
    """The JVP interpreter with its tangents staged into a linear jaxpr (its
    rule trace is a non-constant-staging `StagingTrace`), or recorded on a
    tape on concrete values (a `tape.Tape`, which then does the recording:
    `stage`, `emit` and `apply_factors` hand it over). Elementwise factors
    are recorded straight into that jaxpr as `mul` equations, skipping the
    dispatch a bound `mul` would go through: the hot path of reverse mode."""

    __slots__ = ()

    def apply_linearization(
        self, prim: Primitive, rule: Linearization, primals: list[Any], tangents: list[Any],
        params: dict[str, Any],
    ) -> tuple[Any, Any]:
        """Reverse mode of a primitive with its own: its linearize rule, run
        with the primal trace current, staging through `self.stage`."""
        self.rule_trace.source = prim.name  # type: ignore[attr-defined]
        state = self.state
        prev = state["trace"]
        state["trace"] = self.parent
        try:
            return rule.linearize(self, primals, tangents, **params)
        finally:
            state["trace"] = prev

    def stage(self, prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> Any:
        """Record `prim` on `args` in the linear jaxpr: tangents (this trace's
        staged values) become its linear inputs, anything else a constant.
        Returns the tangent(s) of its result."""
        builder: StagingTrace = self.rule_trace  # type: ignore[assignment]
        if type(builder) is not StagingTrace:  # a tape (tape.py)
            return builder.record(prim, args, params, None)  # type: ignore[attr-defined]
        atoms = []  # a loop, not a comprehension: this is the hot path, and a comprehension is a call
        for x in args:
            atoms.append(x.var if type(x) is StagingTracer and x._trace is builder else builder.atom(x))
        out = builder.add_eqn(prim, atoms, params)
        if prim.multiple_results:
            return [StagingTracer(builder, v) for v in out]
        return StagingTracer(builder, out)

    def emit(self, prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> Any:
        """Record `prim` in the linear jaxpr straight away, skipping the
        dispatch a bound primitive goes through (the hot path of reverse
        mode); on constants alone it is computed now, as the parent would.
        An elementwise product, sum or negation of operands of one strongly
        typed aval has that aval: no need for the shape rule."""
        builder: StagingTrace = self.rule_trace  # type: ignore[assignment]
        if type(builder) is not StagingTrace:  # a tape (tape.py)
            return builder.emit(self, prim, args, params)  # type: ignore[attr-defined]
        for x in args:
            if type(x) is StagingTracer and x._trace is builder:
                break
        else:  # constants alone
            return super().emit(prim, args, params)
        atoms = []  # a loop, not a comprehension: this is the hot path, and a comprehension is a call
        for x in args:
            atoms.append(x.var if type(x) is StagingTracer and x._trace is builder else builder.atom(x))
        aval = None
        if prim in _SAME_AVAL:  # one or two operands
            first = atoms[0].aval
            if not first.weak_type and (len(atoms) == 1 or atoms[1].aval is first):
                aval = first
        out = builder.add_eqn(prim, atoms, params, aval)
        if prim.multiple_results:
            return [StagingTracer(builder, v) for v in out]
        return StagingTracer(builder, out)


    def apply_factors(
        self, prim: Primitive, rule: JVPFactors, ans: Any, primals: list[Any], tangents: list[Any],
        params: dict[str, Any],
    ) -> Any:
        if type(self.rule_trace) is not StagingTrace:  # a tape, which records the products as one entry
            return self.rule_trace.apply_factors(  # type: ignore[attr-defined]
                self, prim, rule, ans, primals, tangents, params)
        return super().apply_factors(prim, rule, ans, primals, tangents, params)


_SAME_AVAL = {elementwise.mul_p, elementwise.add_p, elementwise.neg_p, elementwise.sub_p}


def _read_only(x: Any) -> Any:
    # Residuals are shared by every call of a vjp function: hand rules
    # read-only views, so that no rule can change what a later call sees.
    if type(x) is np.ndarray and x.flags.writeable:
        x = x.view()
        x.flags.writeable = False
    return x


def linearize_flat(
    fun: Callable[..., Any],
    primals: Sequence[Any],
    transform: str,
    has_aux: bool = False,
    keep: bool = True,
) -> tuple[list[Any], LinearFunction, list[Any]]:
    """Evaluate `fun` at `primals` and record its linear (tangent) part.

    Returns the outputs, the linear function and, if `has_aux` (then `fun`
    returns `(outs, aux)`), the aux values without tangents. With `keep`, the
    linear function is pruned of dead equations (and the residuals only they
    used), as befits one that is kept and called later; `keep=False` skips
    that for one that is transposed once, right away (grad).
    """
    parent = ctx.trace
    tangent_trace = StagingTrace(parent, transform, stage_constants=False)
    trace = LinearizeTrace(parent, transform, rule_trace=tangent_trace)
    in_avals = [get_aval(p).strip_weak_type() for p in primals]
    ins = []
    for p, aval in zip(primals, in_avals):
        tangent = tangent_trace.new_arg(aval)
        # An integer input has no tangent; its jaxpr input is simply unused.
        ins.append(JVPTracer(trace, p, tangent) if is_inexact_dtype(aval.dtype) else p)
    try:
        with tracing(trace):
            outs = fun(*ins)
            outs, aux = outs if has_aux else (outs, [])
    finally:  # also when `fun` raises: no tangent may outlive the call
        tangent_trace.dead = True
    primals_out, tangents_out, nonzero, out_avals = [], [], [], []
    for x in outs:
        p, t = trace.split(x)
        primals_out.append(p)
        nonzero.append(t is not None)
        if t is not None:
            tangents_out.append(t)
        out_avals.append(get_aval(p).strip_weak_type())
    aux = [trace.split(x)[0] for x in aux] if aux else aux
    closed = tangent_trace.to_jaxpr(tangents_out)
    if keep:
        jaxpr = dce_jaxpr(closed.jaxpr)
        const_of = dict(zip(closed.jaxpr.constvars, closed.consts))
        closed = ClosedJaxpr(jaxpr, [_read_only(const_of[v]) for v in jaxpr.constvars])
    return primals_out, LinearFunction(closed, in_avals, out_avals, nonzero), aux


@cached_per_jaxpr
def linearize_jaxpr(
    closed: ClosedJaxpr, nonzeros: tuple[bool, ...], instantiate: bool | tuple[bool, ...]
) -> tuple[ClosedJaxpr, ClosedJaxpr, tuple[bool, ...], int]:
    """Reverse mode's split of `closed` (cached), as `partial_eval_jaxpr` of its
    jvp returns it, but made by linearizing: every equation goes through its
    own linearize rule, so a `cond`, loop, `checkpoint` or custom rule inside
    `closed` is split too, where partial evaluation would keep it whole.

    Returns `(known, linear, out_nonzeros, num_res)`: `known` takes `closed`'s
    inputs and returns its outputs, then `num_res` residuals; `linear` takes
    the residuals, then the tangents of the inputs marked in `nonzeros`, and
    returns the tangents of the outputs marked in `out_nonzeros`: those that
    depend on a nonzero tangent, and those in `instantiate` (zeros).

    >>> import fgrad, fgrad.numpy as fnp
    >>> closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0)
    >>> known, linear, out_nonzeros, num_res = linearize_jaxpr(closed, (True,), False)
    >>> print(linear)
    { lambda ; a:f64[] b:f64[]. let c:f64[] = mul b a d:f64[] = mul c 2.0 in (d,) }
    """
    n_out = len(closed.out_avals)
    inst = (instantiate,) * n_out if isinstance(instantiate, bool) else instantiate
    found: dict[str, Any] = {}

    def known_part(*primals: Any) -> list[Any]:
        parent = ctx.trace
        tangent_trace = StagingTrace(parent, "linearize of a jaxpr", stage_constants=False)
        trace = LinearizeTrace(parent, "linearize of a jaxpr", rule_trace=tangent_trace)
        ins = [JVPTracer(trace, p, tangent_trace.new_arg(a.strip_weak_type())) if nz else p
               for p, a, nz in zip(primals, closed.in_avals, nonzeros)]
        try:
            with tracing(trace):
                outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
        finally:
            tangent_trace.dead = True
        primals_out, tangents_out, out_nonzeros = [], [], []
        for x, a, i in zip(outs, closed.out_avals, inst):
            p, t = trace.split(x)
            primals_out.append(p)
            if t is None and i:
                t = zeros(a.strip_weak_type())
            out_nonzeros.append(t is not None)
            if t is not None:
                tangents_out.append(t)
        found["out_nonzeros"] = tuple(out_nonzeros)
        found["linear"] = lin = tangent_trace.to_jaxpr(tangents_out)
        return [*primals_out, *(c for c in lin.consts if isinstance(c, Tracer))]

    known = trace_to_jaxpr(known_part, closed.in_avals, "linearize of a jaxpr", fresh=True)
    lin = found["linear"]
    j = lin.jaxpr
    residual = [isinstance(c, Tracer) for c in lin.consts]
    linear = dce_closed_jaxpr(ClosedJaxpr(
        Jaxpr([v for v, r in zip(j.constvars, residual) if not r],
              [*(v for v, r in zip(j.constvars, residual) if r), *j.invars], j.outvars, j.eqns),
        [c for c, r in zip(lin.consts, residual) if not r],
    ))
    return known, linear, found["out_nonzeros"], sum(residual)


# One UndefinedPrimal per aval, as ShapedArray interns one aval per (shape,
# dtype, weak type): bounded by the shapes the program uses. No lock: two
# threads that miss together make two equal placeholders, and one is kept.
_undefined: dict[ShapedArray, UndefinedPrimal] = {}


def _undefined_primal(aval: ShapedArray) -> UndefinedPrimal:
    u = _undefined.get(aval)
    if u is None:
        u = _undefined[aval] = UndefinedPrimal(aval)
    return u


# Cotangents the backward pass owns: arrays it computed itself, that nothing but
# its table of cotangents holds (not a caller's cotangent, a residual, a
# constant, nor an array a rule of unknown make may have kept or shared). It
# writes into those instead of filling fresh memory, which for arrays of
# megabytes costs more than the arithmetic. Ownership is decided from what
# the pass did, never from reference counts:
#
# * a rule of `_NEW_OR_PASSED` gives each linear operand either the
#   cotangent it was given, unchanged (then the operand's is owned if that
#   one was, and goes to that operand alone), or an array it has just
#   computed from it (a product, a negation, a sum over broadcast axes, a
#   cast): never a view of it or a value held elsewhere. Any other rule's
#   results are not owned (a reshape's view, a broadcast, whatever a
#   custom_vjp's bwd or tap_grad's callback returns or keeps).
# * a sum of two cotangents is owned: computed into one of the two if the
#   pass owns it, else into a new array.
#
# Only when the pass computes now (evaluation current: a trace stages or
# checks each operation instead), and only large NumPy arrays: below
# LARGE_ARRAY_BYTES a new array costs less than the bookkeeping.
_NEW_OR_PASSED = frozenset({
    elementwise.add_p, elementwise.sub_p, elementwise.neg_p, elementwise.mul_p, elementwise.div_p,
    linalg.matmul_p,
})

# Those of them whose transpose in their linear operand is the primitive's own
# ufunc with the cotangent in that operand's place: computed into the
# cotangent's buffer when the pass owns it (`_transpose_into`).
_SELF_TRANSPOSED: dict[Primitive, np.ufunc] = {
    elementwise.neg_p: np.negative, elementwise.mul_p: np.multiply, elementwise.div_p: np.true_divide,
}


def _owned_kind(x: Any) -> bool:
    """Whether cotangent `x` is of the kind the pass writes into when it owns it."""
    return type(x) is np.ndarray and x.nbytes >= LARGE_ARRAY_BYTES


def _transpose_into(prim: Primitive, ct: np.ndarray, args: list[Any]) -> list[Any] | None:
    """The transpose of `prim` (of `_SELF_TRANSPOSED`), computed into the buffer of
    `ct`, which the backward pass owns: its ufunc on the operands with `ct` in
    the linear one's place, in their order, so the same numbers as the rule's.
    None where the result does not fit `ct` (another shape or dtype: the rule
    sums or casts)."""
    operands = []
    linear = -1
    for i, x in enumerate(args):
        if type(x) is UndefinedPrimal:
            if x.aval.shape != ct.shape or x.aval.dtype != ct.dtype:
                return None
            linear = i
            x = ct
        operands.append(x)
    if np.result_type(*operands) != ct.dtype:
        return None
    _SELF_TRANSPOSED[prim](*operands, out=ct)
    cts_in: list[Any] = [None] * len(args)
    cts_in[linear] = ct
    return cts_in


def _add_into(out: np.ndarray, prev: Any, c: Any) -> bool:
    """`prev + c` computed into `out` (one of the two, owned by the backward pass),
    if the sum fits it (its shape and dtype); whether it did."""
    if np.shape(prev) != np.shape(c) or np.result_type(prev, c) != out.dtype:
        return False
    np.add(prev, c, out=out)
    return True


def backward_pass(
    jaxpr: Jaxpr, consts: list[Any], cts_out: Sequence[Any], consume: bool = False
) -> list[Any]:
    """Transpose a linear jaxpr: cotangents of its inputs from those of its
    outputs. Constants are the non-linear operands; every other variable is
    linear. A cotangent of None is zero, and equations whose outputs have only
    zero cotangents are skipped. With `consume`, `consts` is emptied and each
    large (or traced) constant dropped after the last equation (in backward
    order) that uses it.

    A large cotangent the pass owns (made itself, held nowhere else: see
    `_NEW_OR_PASSED`) is written into by its equation's transpose
    (`_SELF_TRANSPOSED`) or by a sum of cotangents, instead of filling fresh
    memory; a caller's cotangent, a residual or a constant never is."""
    known: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    release: dict[int, list[Var]] = {}
    if consume:
        consts.clear()
        # Only large constants (or traced ones, which may stand for large
        # batches) are worth dropping early; finding their last use costs a
        # scan of the equations, which a chain of scalars should not pay.
        large = {
            v for v, c in known.items()
            if (type(c) is np.ndarray and c.nbytes >= LARGE_ARRAY_BYTES) or isinstance(c, Tracer)
        }
        if large:  # liveness, for a pass that runs backwards
            for i, dead in last_uses(jaxpr, reverse=True).items():
                dead = [v for v in dead if v in large]
                if dead:
                    release[i] = dead
    cts: dict[Any, Any] = {}
    # The cotangents of getitems at basic indices, per indexed variable, not yet
    # added into its cotangent: added all at once (indexing.add_pieces) when
    # something else needs it, rather than each scattered into a fresh array.
    pieces: dict[Var, list[tuple[Any, Any]]] = {}
    # The variables whose cotangent in `cts` the pass owns (see _NEW_OR_PASSED).
    # Each cotangent is read once, by the transpose of the equation that
    # defines its variable (or returned, for an input), so ownership passes
    # from a cotangent to what its transpose makes of it.
    owned: set[Any] = set()
    owning = ctx.trace is EVAL_TRACE
    add = elementwise.add
    ndarray = np.ndarray
    missing = object()
    undefined = _undefined

    for v, ct in zip(jaxpr.outvars, cts_out):  # the caller's: never owned, but a sum of them is
        if ct is not None and type(v) is Var and v not in known:
            prev = cts.get(v)
            cts[v] = ct if prev is None else add(prev, ct)
            if prev is not None and owning and _owned_kind(cts[v]):
                owned.add(v)

    eqns = jaxpr.eqns
    for i in range(len(eqns) - 1, -1, -1):
        if release:  # constants whose last use was the equation just done
            for v in release.pop(i + 1, ()):
                del known[v]
        eqn = eqns[i]
        prim = eqn.primitive
        if pieces:
            for v in eqn.outvars:
                if v in pieces:  # their sum is new, but not claimed
                    cts[v] = indexing.add_pieces(v.aval, cts.pop(v, None), pieces.pop(v))
                    owned.discard(v)
        if prim.multiple_results:
            ct = [cts.pop(v, None) for v in eqn.outvars]
            if all(c is None for c in ct):
                continue
            ct_owned = False
        else:
            ct = cts.pop(eqn.outvars[0], None)
            if ct is None:
                continue
            ct_owned = eqn.outvars[0] in owned if owned else False
        if prim is getitem_p:
            x = eqn.invars[0]
            idx = eqn.params["idx"]
            if type(x) is Var and x not in known and not idx.has_arrays():
                pieces.setdefault(x, []).append((idx, ct))
                continue
        args = []
        for a in eqn.invars:
            if type(a) is Literal:
                args.append(a.val)
            else:
                value = known.get(a, missing)  # type: ignore[arg-type]
                if value is missing:
                    value = undefined.get(a.aval) or _undefined_primal(a.aval)
                args.append(value)
        rule = transpose_rules.get(prim)
        if rule is None:
            raise missing_rule_error(prim.name, "transpose", "reverse mode")
        try:
            cts_in = None
            if ct_owned and prim in _SELF_TRANSPOSED:
                cts_in = _transpose_into(prim, ct, args)
            if cts_in is None:
                cts_in = rule(ct, *args, **eqn.params) if eqn.params else rule(ct, *args)
        except FloatingPointError as e:  # from debug_nans: say where in the forward computation
            raise FloatingPointError(
                f"{e}\n  in the backward pass, in the derivative of `{eqn.source}`"
            ) from None
        makes = owning and prim in _NEW_OR_PASSED
        # A rule returns None for the non-linear operands, so any cotangent
        # it returns belongs to a linear variable.
        for a, c in zip(eqn.invars, cts_in):
            if c is None:
                continue
            # Owned: new, or the owned ct, and handed to this operand alone
            # (the kind test inlined: this is the hot path).
            mine = (makes and type(c) is ndarray and c.nbytes >= LARGE_ARRAY_BYTES
                    and (c is not ct or ct_owned) and sum(x is c for x in cts_in) == 1)
            prev = cts.pop(a, None)
            if pieces and a in pieces:  # their sum is new, but not claimed
                prev = indexing.add_pieces(a.aval, prev, pieces.pop(a))
                owned.discard(a)
            if prev is None:
                cts[a] = c
                if mine:
                    owned.add(a)
                continue
            if owned and a in owned and _add_into(prev, prev, c):
                cts[a] = prev
            elif mine and _add_into(c, prev, c):
                cts[a] = c
                owned.add(a)
            else:
                cts[a] = total = add(prev, c)
                if owning and type(total) is ndarray and total.nbytes >= LARGE_ARRAY_BYTES:
                    owned.add(a)
                elif owned:
                    owned.discard(a)
        # Drop this iteration's references, so that a cotangent no longer
        # needed is freed before the next equation fills new memory.
        ct = cts_in = c = prev = total = None
    for v, gathered in pieces.items():
        cts[v] = indexing.add_pieces(v.aval, cts.pop(v, None), gathered)
    return [cts.pop(v, None) for v in jaxpr.invars]


getitem_p = indexing.getitem_p


@cached_per_jaxpr
def transpose_jaxpr(closed: ClosedJaxpr, linear: tuple[bool, ...]) -> ClosedJaxpr:
    """The transpose of `closed` in its inputs marked `linear`, as a jaxpr (cached).

    Its inputs are the non-linear inputs, then one cotangent per output; its
    outputs are the cotangents of the linear inputs (zeros where none
    arrives). The part that needs only the non-linear inputs is evaluated
    forward first (partial evaluation), the rest transposed: so the
    transpose of a jvp jaxpr recomputes its residuals, which is what
    checkpointing needs.
    """
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, linear, False)
    n_known_in = linear.count(False)
    # Of the known part only the residuals are needed: the known outputs get no cotangent here.
    known = dce_closed_jaxpr(known, [False] * out_unknowns.count(False) + [True] * num_res)
    uj = unknown.jaxpr
    # Residuals are the transposed jaxpr's constants, the linear inputs its variables.
    body = Jaxpr([*uj.constvars, *uj.invars[:num_res]], uj.invars[num_res:], uj.outvars, uj.eqns)
    linear_avals = [a for a, lin in zip(closed.in_avals, linear) if lin]

    def transposed(*args: Any) -> list[Any]:
        res = eval_jaxpr(known.jaxpr, known.consts, *args[:n_known_in])
        cts = [ct for ct, u in zip(args[n_known_in:], out_unknowns) if u]
        cts_in = backward_pass(body, [*unknown.consts, *res], cts)
        return [zeros(a) if ct is None else ct for ct, a in zip(cts_in, linear_avals)]

    in_avals = [*(a for a, lin in zip(closed.in_avals, linear) if not lin), *closed.out_avals]
    return trace_to_jaxpr(transposed, in_avals, "transpose of a jaxpr", fresh=True)
