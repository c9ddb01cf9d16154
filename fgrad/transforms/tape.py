"""Eager reverse mode: a tape, as PyTorch's autograd and HIPS autograd keep one.

When reverse mode runs on concrete values (grad, value_and_grad and vjp with
no staging transform below: evaluation, or another eager grad), the linear
part need not be a jaxpr: nothing will print, check, cache or compile it. So
the JVP interpreter records its tangent equations on a `Tape` instead, as
entries `(primitive, operands, params, results, source)`: operands are the
tape's tangents (the linear inputs) or the residuals themselves, results are
new tangents, numbered. `backward` runs the entries backwards with each
linear primitive's transpose rule, cotangents in a list indexed by tangent
number. No variables, literals, equations, jaxpr or dead-code pass are made.
An elementwise primitive's tangent, a sum of products of tangents and
factors (`JVPFactors`), is one entry whose transpose is that of the products
and sums it stands for (`Tape.products`).

The rules are the same as linearize-and-transpose's (the jvp rules of
`core.rules` record the same equations in the same order, transposed by the
same transpose rules and summed in the same order), so the derivatives are
the same numbers (tests/transforms/test_tape.py compares them bit for bit).
What the jaxpr path does for speed is done here too: a
static index's cotangents are gathered and added once (`indexing.add_pieces`)
and large cotangents the pass made itself are written into (see reverse.py).

Everything that stages (make_jaxpr, jit, vmap, forward mode, linearize, a
jaxpr's transpose) keeps reverse.py's jaxpr: `records_on_tape` says where
the tape serves. Works on flat lists of values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval, is_inexact_dtype
from ..core.errors import ConcretizationTypeError, missing_rule_error
from ..core.rules import LARGE_ARRAY_BYTES, JVPFactors, transpose_rules
from ..core.trace import EVAL_TRACE, Primitive, Trace, Tracer, ctx, tracing
from ..primitives import elementwise, indexing
from . import forward, reverse
from .forward import JVPTrace, JVPTracer
from .reverse import (
    _NEW_OR_PASSED,
    _SAME_AVAL,
    _SELF_TRANSPOSED,
    LinearFunction,
    LinearizeTrace,
    _owned_kind,
    _read_only,
    _undefined,
    _undefined_primal,
    linearize_flat,
)

__all__ = ["Tape", "TapeTangent", "Pullback", "backward", "vjp_flat", "records_on_tape"]

getitem_p = indexing.getitem_p
_NO_PARAMS: dict[str, Any] = {}  # never mutated


class TapeTangent(Tracer):
    """A tangent being recorded on a tape: number `index` of its values."""

    __slots__ = ("aval", "index")

    def __init__(self, tape: Tape, aval: ShapedArray, index: int) -> None:
        self._trace = tape
        self.aval = aval  # type: ignore[misc]
        self.index = index

    def concrete_value(self, conversion: str) -> Any:
        raise ConcretizationTypeError(
            f"A tangent ({self.aval.str_short()}) of `{self._trace.transform}` was asked for its "
            f"concrete value ({conversion}): tangents are recorded as they are computed, for the "
            "backward pass, and have no value yet. Derivative rules must not branch on a tangent; "
            "use fgrad.numpy.where, or branch on the primal values instead."
        )


class Tape(Trace):
    """The tangent trace of eager reverse mode: records each primitive applied
    to its tangents; one that touches none is computed now, by the parent."""

    __slots__ = ("entries", "count", "source")

    def __init__(self, parent: Trace, transform: str) -> None:
        super().__init__(parent, transform)
        self.entries: list[tuple[Primitive, list[Any], dict[str, Any], Any, str | None]] = []
        self.count = 0
        self.source: str | None = None  # the primitive whose derivative is being recorded, for messages

    def new_arg(self, aval: ShapedArray) -> TapeTangent:
        t = TapeTangent(self, aval, self.count)
        self.count += 1
        return t

    def process_primitive(self, prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> Any:
        for x in args:
            if type(x) is TapeTangent and x._trace is self:
                break
        else:
            return self.parent.process_primitive(prim, args, params)  # type: ignore[union-attr, arg-type]
        return self.record(prim, args, params, None)

    def record(self, prim: Primitive, args: Sequence[Any], params: dict[str, Any], out_aval: Any) -> Any:
        """Append `prim` on `args` (at least one of them this tape's tangent);
        returns the tangent(s) of its result(s). `out_aval`, when the caller
        knows it, spares the shape rule."""
        operands = list(args)
        if out_aval is None:
            avals = []
            for x in operands:
                if isinstance(x, Tracer):
                    if x._trace is not self:
                        self.check_foreign(x)
                    avals.append(x.aval)
                else:
                    avals.append(get_aval(x))
            out_aval = prim.abstract_eval(*avals, **params) if params else prim.abstract_eval(*avals)
        else:
            for x in operands:
                if isinstance(x, Tracer) and x._trace is not self:
                    self.check_foreign(x)
        n = self.count
        if prim.multiple_results:
            out: Any = [TapeTangent(self, a, n + i) for i, a in enumerate(out_aval)]
            self.count = n + len(out)
        else:
            out = TapeTangent(self, out_aval, n)
            self.count = n + 1
        self.entries.append((prim, operands, params, out, self.source))
        return out

    def emit(self, trace: LinearizeTrace, prim: Primitive, args: Sequence[Any],
             params: dict[str, Any]) -> Any:
        """`trace.emit` (LinearizeTrace's, whose rule trace this tape is): one
        equation of a rule given as data, recorded here."""
        tape = self
        for x in args:
            if type(x) is TapeTangent and x._trace is tape:
                break
        else:  # constants alone: computed now, by the parent
            return tape.parent.process_primitive(prim, args, params)  # type: ignore[union-attr, arg-type]
        aval = None
        if prim in _SAME_AVAL:  # one or two operands: see LinearizeTrace.emit
            first = args[0].aval if type(args[0]) is TapeTangent else get_aval(args[0])
            if not first.weak_type and len(args) == 1:
                aval = first
            elif not first.weak_type:
                second = args[1].aval if type(args[1]) is TapeTangent else get_aval(args[1])
                if second is first:
                    aval = first
        return tape.record(prim, args, params, aval)

    def apply_factors(
        self, trace: LinearizeTrace, prim: Primitive, rule: JVPFactors, ans: Any, primals: list[Any],
        tangents: list[Any], params: dict[str, Any],
    ) -> Any:
        """JVPTrace's `sum_i tangent_i * factor_i`, recorded as one entry of
        products (`Tape.products`) in the common case: tangents of one small
        strongly typed aval that the factors and `ans` keep. Any other case
        emits the products and sums one by one."""
        tape = self
        aval = None
        for t in tangents:
            if t is not None:
                if type(t) is not TapeTangent or t._trace is not tape or t.aval is not (aval or t.aval):
                    return JVPTrace.apply_factors(trace, prim, rule, ans, primals, tangents, params)
                aval = t.aval
        if aval is None:
            return None
        want = get_aval(ans)
        if (aval.weak_type or want.shape != aval.shape or want.dtype != aval.dtype
                or aval.size * aval.dtype.itemsize >= LARGE_ARRAY_BYTES):  # large: see backward
            return JVPTrace.apply_factors(trace, prim, rule, ans, primals, tangents, params)
        # The factors first (on the parent trace), then the products: the
        # products only touch this tape, so their order against the factors' is free.
        pairs = []
        same = True
        state = trace.state
        prev = state["trace"]
        state["trace"] = trace.parent
        try:
            for factor, t in zip(rule.factors, tangents):
                if t is None or factor is None:
                    continue
                if callable(factor):
                    factor = factor(ans, *primals, **params) if params else factor(ans, *primals)
                if same and not (type(factor) is int and factor in (1, -1)):
                    # A product keeps the tangent's aval: a factor of that aval, or a Python
                    # number (weakly typed) times an inexact tangent.
                    kind = type(factor)
                    if kind in _PYTHON_SCALARS:
                        same = kind is float or kind is int
                    else:
                        same = get_aval(factor) is aval
                pairs.append((t, factor))
        finally:
            state["trace"] = prev
        if not same:
            out = None
            for t, factor in pairs:
                out = trace.add_product(out, t, factor)
            return trace.fit(out, ans)
        if len(pairs) == 1 and type(pairs[0][1]) is int and pairs[0][1] == 1:
            return pairs[0][0]  # the tangent itself, as emitted: no equation
        return tape.products(pairs, aval)

    def products(self, pairs: list[tuple[TapeTangent, Any]], aval: ShapedArray) -> TapeTangent:
        """Record `sum_i t_i * factor_i` over `pairs` (factors of +-1 are a
        tangent or its negation), all of `aval`, which the result keeps, as
        one entry: JVPTrace.add_product's equations, transposed as they
        would be (`_transpose_products`)."""
        out = TapeTangent(self, aval, self.count)
        self.count += 1
        self.entries.append((None, pairs, _NO_PARAMS, out, self.source))  # type: ignore[arg-type]
        return out


def _transpose_products(ct: Any, pairs: list[tuple[TapeTangent, Any]], aval: ShapedArray) -> list[Any]:
    """The cotangents of the tangents of `pairs`, last first, from `ct`, that of
    their sum of products (Tape.products): the transposes of the equations
    JVPTrace.add_product emits (`c_i = t_i * f_i`, or `t_i`, or `-t_i`;
    `s_i = s_(i-1) + c_i`), in the order the backward pass of their jaxpr takes."""
    u = _undefined.get(aval) or _undefined_primal(aval)
    n = len(pairs)
    mul_transpose = transpose_rules[_mul_p]  # looked up now: a table entry may change (tests inject faults)
    if n == 1:  # a unary primitive, or one differentiated operand: the common case
        factor = pairs[0][1]
        if type(factor) is int and factor in (1, -1):
            return [ct if factor == 1 else transpose_rules[_neg_p](ct, u)[0]]
        return [mul_transpose(ct, u, factor)[0]]
    cts_c = [ct] * n
    if n > 1:
        cur = ct
        for i in range(n - 1, 0, -1):  # s_i = s_(i-1) + c_i, last first
            cur, cts_c[i] = transpose_rules[_add_p](cur, u, u)
        cts_c[0] = cur
    out = []
    for i in range(n - 1, -1, -1):
        c, factor = cts_c[i], pairs[i][1]
        if type(factor) is int and factor in (1, -1):
            out.append(c if factor == 1 else transpose_rules[_neg_p](c, u)[0])
        else:
            out.append(mul_transpose(c, u, factor)[0])
    return out


_add_p, _neg_p, _mul_p = elementwise.add_p, elementwise.neg_p, elementwise.mul_p


def backward(entries: list[Any], count: int, outs: Sequence[Any], cts_out: Sequence[Any],
             ins: Sequence[Any], consume: bool = False) -> list[Any]:
    """Run a tape's `entries` (of `count` tangents) backwards: cotangents of
    the tangents `ins` (None where zero or not a tangent) from those of the
    tangents `outs` (an entry of either may be a value, not a tangent of the
    tape: a constant output, an integer input).
    A cotangent of None is zero, and entries whose results have only zero
    cotangents are skipped. With `consume`, the entries are used up: one
    holding a large (or traced) residual is dropped once transposed.

    As reverse.backward_pass: a large cotangent the pass owns is written
    into by its entry's transpose or by a sum; a static index's
    cotangents are gathered and added into its operand's once."""
    cts: list[Any] = [None] * count
    pieces: dict[int, list[tuple[Any, Any]]] = {}
    avals: dict[int, ShapedArray] = {}  # of the tangents in `pieces`
    owned: set[int] = set()
    owning = ctx.trace is EVAL_TRACE
    add = elementwise.add
    ndarray = np.ndarray
    undefined = _undefined

    for x, ct in zip(outs, cts_out):  # the caller's: never owned, but a sum of them is
        if ct is not None and type(x) is TapeTangent:
            i = x.index
            prev = cts[i]
            cts[i] = ct if prev is None else add(prev, ct)
            if prev is not None and owning and _owned_kind(cts[i]):
                owned.add(i)

    for k in range(len(entries) - 1, -1, -1):
        prim, args, params, out, source = entries[k]
        if prim is None:  # a sum of products (Tape.products)
            j = out.index
            if pieces and j in pieces:
                cts[j] = indexing.add_pieces(out.aval, cts[j], pieces.pop(j))
            ct = cts[j]
            if ct is None:
                continue
            cts[j] = None
            try:
                terms = _transpose_products(ct, args, out.aval)
            except FloatingPointError as e:  # from debug_nans: say where in the forward computation
                raise FloatingPointError(
                    f"{e}\n  in the backward pass, in the derivative of `{source}`"
                ) from None
            for (a, _), c in zip(reversed(args), terms):
                i = a.index
                prev = cts[i]
                if pieces and i in pieces:
                    prev = indexing.add_pieces(a.aval, prev, pieces.pop(i))
                cts[i] = c if prev is None else add(prev, c)
            continue
        if pieces:
            for t in (out if prim.multiple_results else (out,)):
                if t.index in pieces:  # their sum is new, but not claimed
                    j = t.index
                    cts[j] = indexing.add_pieces(t.aval, cts[j], pieces.pop(j))
                    owned.discard(j)
        if prim.multiple_results:
            ct = [cts[t.index] for t in out]
            for t in out:
                cts[t.index] = None
            if all(c is None for c in ct):
                continue
            ct_owned = False
        else:
            j = out.index
            ct = cts[j]
            if ct is None:
                continue
            cts[j] = None
            ct_owned = j in owned if owned else False
        if prim is getitem_p:
            x = args[0]
            idx = params["idx"]
            if type(x) is TapeTangent and not idx.has_arrays():
                pieces.setdefault(x.index, []).append((idx, ct))
                avals[x.index] = x.aval
                continue
        operands = []
        large = False
        for a in args:
            if type(a) is TapeTangent:
                a = undefined.get(a.aval) or _undefined_primal(a.aval)
            elif (type(a) is ndarray and a.nbytes >= LARGE_ARRAY_BYTES) or isinstance(a, Tracer):
                large = True
            operands.append(a)
        if consume and large:
            # Its large (or traced: maybe batched) residuals are dropped once used, lowering the
            # peak memory; small ones stay to the end, which costs less than dropping them.
            entries[k] = None
        rule = transpose_rules.get(prim)
        if rule is None:
            raise missing_rule_error(prim.name, "transpose", "reverse mode")
        try:
            cts_in = None
            if ct_owned and prim in _SELF_TRANSPOSED:
                cts_in = reverse._transpose_into(prim, ct, operands)
            if cts_in is None:
                cts_in = rule(ct, *operands, **params) if params else rule(ct, *operands)
        except FloatingPointError as e:  # from debug_nans: say where in the forward computation
            raise FloatingPointError(
                f"{e}\n  in the backward pass, in the derivative of `{source}`"
            ) from None
        makes = owning and prim in _NEW_OR_PASSED
        for a, c in zip(args, cts_in):
            if c is None:
                continue
            i = a.index
            mine = (makes and type(c) is ndarray and c.nbytes >= LARGE_ARRAY_BYTES
                    and (c is not ct or ct_owned) and sum(x is c for x in cts_in) == 1)
            prev = cts[i]
            if pieces and i in pieces:  # their sum is new, but not claimed
                prev = indexing.add_pieces(a.aval, prev, pieces.pop(i))
                owned.discard(i)
            if prev is None:
                cts[i] = c
                if mine:
                    owned.add(i)
                continue
            if owned and i in owned and reverse._add_into(prev, prev, c):
                cts[i] = prev
            elif mine and reverse._add_into(c, prev, c):
                cts[i] = c
                owned.add(i)
            else:
                cts[i] = total = add(prev, c)
                if owning and type(total) is ndarray and total.nbytes >= LARGE_ARRAY_BYTES:
                    owned.add(i)
                elif owned:
                    owned.discard(i)
        ct = cts_in = c = prev = total = operands = args = None  # type: ignore[assignment]  # free what is no longer needed
    for i, gathered in pieces.items():
        cts[i] = indexing.add_pieces(avals[i], cts[i], gathered)
    return [cts[x.index] if type(x) is TapeTangent else None for x in ins]


_PYTHON_SCALARS = (float, int, complex, bool)

forward.RECORDING_TRACES.add(Tape)


class Pullback:
    """The backward pass of one eager forward pass: the tape, and which
    outputs and inputs are tangents on it. `transpose` may be called any
    number of times (with `consume`, once: the tape is used up)."""

    __slots__ = ("entries", "count", "ins", "outs", "in_avals", "out_avals", "nonzero_outputs")

    def __init__(self, tape: Tape, ins: list[Any], outs: list[Any], in_avals: list[ShapedArray],
                 out_avals: list[ShapedArray]) -> None:
        # The entries move here: a tape held by its tangents, which its entries
        # hold, would be a reference cycle, freed (with its residuals) only by
        # the garbage collector.
        self.entries, self.count = tape.entries, tape.count
        tape.entries = []
        self.ins = ins
        self.outs = outs
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.nonzero_outputs = [t is not None for t in outs]

    def transpose(self, cts_out: Sequence[Any], consume: bool = False) -> list[Any]:
        """Cotangents of the inputs (None where zero) from those of the outputs."""
        entries = self.entries
        if consume:
            self.entries = []
        return backward(entries, self.count, self.outs, cts_out, self.ins, consume)


def records_on_tape(trace: Trace) -> bool:
    """Whether reverse mode under `trace` may record a tape: every trace below
    is evaluation or another tape's, so values are concrete and nothing
    stages (make_jaxpr, jit, vmap and forward mode keep linearization)."""
    while trace is not EVAL_TRACE:
        if type(trace) is not LinearizeTrace or type(trace.rule_trace) is not Tape:
            return False
        trace = trace.parent  # type: ignore[assignment]
    return True


def vjp_flat(
    fun: Callable[..., Any],
    primals: Sequence[Any],
    transform: str,
    has_aux: bool = False,
    keep: bool = True,
) -> tuple[list[Any], Pullback | LinearFunction, list[Any]]:
    """Evaluate `fun` at `primals`, ready to pull cotangents back: the outputs,
    the backward pass (`.transpose(cts)`) and, if `has_aux`, the aux values.

    On concrete values (`records_on_tape`) the backward pass is a tape;
    otherwise it is linearize_flat's linear jaxpr. With `keep` the backward
    pass may be run again later (vjp), so residuals are made read-only."""
    parent = ctx.trace
    if not records_on_tape(parent):
        return linearize_flat(fun, primals, transform, has_aux, keep)
    tape = Tape(parent, transform)
    trace = LinearizeTrace(parent, transform, rule_trace=tape)
    in_avals = [get_aval(p).strip_weak_type() for p in primals]
    ins: list[Any] = []
    tangents_in: list[Any] = []
    for p, aval in zip(primals, in_avals):
        if is_inexact_dtype(aval.dtype):  # an integer input has no tangent
            t = tape.new_arg(aval)
            ins.append(JVPTracer(trace, p, t))
            tangents_in.append(t)
        else:
            ins.append(p)
            tangents_in.append(None)
    try:
        with tracing(trace):
            outs = fun(*ins)
            outs, aux = outs if has_aux else (outs, [])
    finally:  # also when `fun` raises: no tangent may outlive the call
        tape.dead = True
    primals_out, tangents_out, out_avals = [], [], []
    for x in outs:
        p, t = trace.split(x)
        primals_out.append(p)
        tangents_out.append(t)
        out_avals.append(get_aval(p).strip_weak_type())
    aux = [trace.split(x)[0] for x in aux] if aux else aux
    if keep:  # shared by every call of the vjp function: no rule may change what a later one sees
        tape.entries = [(prim, [_read_only(a) for a in args], params, out, source)
                        for prim, args, params, out, source in tape.entries]
    return primals_out, Pullback(tape, tangents_in, tangents_out, in_avals, out_avals), aux
