"""Rewrites of jaxprs. Each pass takes a jaxpr and returns a new one. DCE and
liveness work on a `Jaxpr`; the optimisations jit runs (constant folding,
simplification, CSE, and `optimize_jaxpr`, which chains them with DCE) on a
`ClosedJaxpr`, since folding needs the constants' values.

Primitives are pure unless listed in `core.rules.effectful` (printing,
callbacks); an equation with an effect, or with a sub-jaxpr that has one, is
never dropped.
"""

from __future__ import annotations

import itertools
import math
import operator
import struct
import threading
import weakref
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..core.avals import get_aval
from ..core.libraries import is_library_array
from ..core.rules import effectful, jit_rewrites, jvp_rules
from ..core.trace import Primitive
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, sub_jaxprs
from .unroll import unroll_small_arrays

__all__ = [
    "dce_jaxpr", "dce_closed_jaxpr", "has_effects", "last_uses",
    "fold_constants", "simplify_jaxpr", "identity_products", "summed_products", "sliced_products",
    "cse_jaxpr",
    "optimize_jaxpr",
]


def has_effects(eqn: JaxprEqn) -> bool:
    """Whether `eqn` does anything besides computing its outputs."""
    if eqn.primitive in effectful:
        return True
    if not eqn.params:  # most equations: no parameter can hold a jaxpr
        return False
    for p in eqn.params.values():
        if isinstance(p, (Jaxpr, ClosedJaxpr)):
            if _jaxpr_has_effects(p):
                return True
        elif isinstance(p, (tuple, list)) and any(
                isinstance(q, (Jaxpr, ClosedJaxpr)) and _jaxpr_has_effects(q) for q in p):
            return True
    return False


def _jaxpr_has_effects(jaxpr: Jaxpr | ClosedJaxpr) -> bool:
    """Whether an equation of `jaxpr` has effects; cached per jaxpr (never changed
    once built), so that each pass asking about a loop pays for its body once."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    with _lock:
        found = _effects.get(jaxpr)
    if found is None:
        found = any(has_effects(e) for e in jaxpr.eqns)
        with _lock:
            _effects[jaxpr] = found
    return found


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> Jaxpr:
    """Drop equations no output depends on, except those with effects.

    With `used_outputs`, only the outputs marked True are kept. Constant
    variables that only dead equations used are dropped too, so the arrays
    behind them can be freed; the kept ones keep their order.
    """
    outvars = jaxpr.outvars if used_outputs is None else [a for a, u in zip(jaxpr.outvars, used_outputs) if u]
    # Literals go in `live` too (they compare by identity, so no variable is one).
    live: set[Atom] = set(outvars)
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if not live.isdisjoint(eqn.outvars) or has_effects(eqn):
            kept.append(eqn)
            live.update(eqn.invars)
    kept.reverse()
    constvars = [v for v in jaxpr.constvars if v in live]
    return Jaxpr(constvars, jaxpr.invars, outvars, kept)


def dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs: Sequence[bool] | None = None) -> ClosedJaxpr:
    """`dce_jaxpr` of a closed jaxpr, keeping only the constants still used."""
    jaxpr = dce_jaxpr(closed.jaxpr, used_outputs)
    const_of = dict(zip(closed.jaxpr.constvars, closed.consts))
    return ClosedJaxpr(jaxpr, [const_of[v] for v in jaxpr.constvars])


def last_uses(jaxpr: Jaxpr, reverse: bool = False) -> dict[int, list[Var]]:
    """Liveness: for each equation index, the variables whose last use is that
    equation, so that an interpreter can release them right after it. Inputs
    and constants are included. With `reverse`, for an interpreter that runs
    the equations backwards (the backward pass), the last use is the first in
    order; otherwise a variable the jaxpr outputs is never released.
    Cached per jaxpr, which is never changed once built.

    >>> import fgrad, fgrad.numpy as fnp
    >>> jaxpr = fgrad.make_jaxpr(lambda x: fnp.sin(x) * x)(1.0).jaxpr
    >>> {i: len(vs) for i, vs in last_uses(jaxpr).items()}
    {1: 2}
    """
    with _lock:
        found = _last_uses.get(jaxpr, {}).get(reverse)
    if found is not None:
        return found
    last: dict[Var, int] = {}
    eqns = jaxpr.eqns
    order = range(len(eqns) - 1, -1, -1) if reverse else range(len(eqns))
    for i in order:
        for a in eqns[i].invars:
            if type(a) is Var:
                last[a] = i
    if not reverse:
        for a in jaxpr.outvars:
            if type(a) is Var:
                last.pop(a, None)
    out: dict[int, list[Var]] = {}
    for v, i in last.items():
        out.setdefault(i, []).append(v)
    with _lock:
        _last_uses.setdefault(jaxpr, {})[reverse] = out
    return out


# Cache of last_uses: at most two entries (forward, reverse) per jaxpr alive,
# going with their jaxpr (weak keys); locked.
_last_uses: weakref.WeakKeyDictionary[Jaxpr, dict[bool, dict[int, list[Var]]]] = weakref.WeakKeyDictionary()
# Cache of _jaxpr_has_effects: one flag per jaxpr alive (weak keys); locked.
_effects: weakref.WeakKeyDictionary[Jaxpr, bool] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


# ----------------------------------------------------------------------------
# Optimisation: constant folding, algebraic simplification, CSE, and the
# pipeline jit runs. Each takes a ClosedJaxpr (folding needs the constants'
# values) and returns one with the same inputs and outputs, or `closed`
# itself when it finds nothing to do. None of them changes its input, looks
# inside a sub-jaxpr, or drops, merges, duplicates or reorders an equation
# with effects. This layer sits below the primitives: the ones a rewrite is
# about are known by name.


def _renamed(eqn: JaxprEqn, env: dict[Var, Atom]) -> JaxprEqn:
    """`eqn` reading `env[v]` for each input `v` renamed; `eqn` itself if none is."""
    # (A literal is never a key of `env`: it compares by identity.)
    if not env or env.keys().isdisjoint(eqn.invars):
        return eqn
    invars = [env.get(a, a) for a in eqn.invars]  # type: ignore[arg-type]
    return JaxprEqn(eqn.primitive, invars, eqn.outvars, eqn.params, eqn.source)


def _rebuilt(
    closed: ClosedJaxpr, eqns: list[JaxprEqn], env: dict[Var, Atom],
    constvars: list[Var] | None = None, consts: list[Any] | None = None,
) -> ClosedJaxpr:
    """`closed` with `eqns` for its equations, its outputs renamed by `env`,
    and other constants if given."""
    jaxpr = closed.jaxpr
    outvars = [env.get(a, a) if isinstance(a, Var) else a for a in jaxpr.outvars]
    constvars = jaxpr.constvars if constvars is None else constvars
    consts = closed.consts if consts is None else consts
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, outvars, eqns), consts)


# --- fold_constants -------------------------------------------------------------------

#: An equation whose results hold more elements than this, and more than its
#: inputs together (a broadcast of a scalar), is left to run: folding it would
#: keep the whole array alive in the jaxpr to save a cheap fill.
FOLD_MAX_NEW_ELEMENTS = 1 << 12


def fold_constants(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Evaluate now the equations whose inputs are all literals or constants.

    Each is computed with its primitive's impl (no trace involved) and its
    results become constants: a 0-d result a `Literal` of its variable's
    aval, an array a new constant variable (after the existing ones). Left
    alone: equations with effects or sub-jaxprs, ones whose impl raises (the
    error belongs to the run) or gives another shape or dtype than the
    jaxpr says, and large results built from small inputs.

    >>> import fgrad, fgrad.numpy as fnp
    >>> print(fold_constants(fgrad.make_jaxpr(lambda x: x * fnp.negative(fnp.float64(2.0)))(1.0)))
    { lambda ; a:f64[]. let b:f64[] = mul a -2.0:f64[] in (b,) }
    """
    known: dict[Var, Any] = dict(zip(closed.jaxpr.constvars, closed.consts))
    env: dict[Var, Atom] = {}
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    eqns: list[JaxprEqn] = []
    for eqn in closed.jaxpr.eqns:
        eqn = _renamed(eqn, env)
        outs = _fold(eqn, known)
        if outs is None:
            eqns.append(eqn)
            continue
        for v, out in zip(eqn.outvars, outs):
            if v.aval.shape == ():
                env[v] = Literal(out, v.aval)
            else:
                known[v] = out
                constvars.append(v)
                consts.append(out)
    if len(eqns) == len(closed.jaxpr.eqns):
        return closed
    return _rebuilt(closed, eqns, env, constvars, consts)


def _fold(eqn: JaxprEqn, known: dict[Var, Any]) -> list[Any] | None:
    """The results of `eqn`, computed now, or None if it is not to be folded."""
    for a in eqn.invars:
        if type(a) is not Literal and a not in known:
            return None
    if has_effects(eqn) or sub_jaxprs(eqn):
        return None
    args = [a.val if isinstance(a, Literal) else known[a] for a in eqn.invars]
    if any(is_library_array(x) for x in args):  # the impl is NumPy's: it would convert them
        return None
    in_size = sum(int(np.size(x)) for x in args)
    if sum(v.aval.size for v in eqn.outvars) > max(in_size, FOLD_MAX_NEW_ELEMENTS):
        return None
    try:
        with np.errstate(all="ignore"):
            out = eqn.primitive.impl(*args, **eqn.params)
    except Exception:  # noqa: BLE001 - it raises again when the jaxpr runs, where it belongs
        return None
    outs = list(out) if eqn.primitive.multiple_results else [out]
    if len(outs) != len(eqn.outvars):
        return None
    for i, (v, x) in enumerate(zip(eqn.outvars, outs)):
        if v.aval.shape == ():
            x = outs[i] = np.asarray(x)[()]
        aval = get_aval(x)
        if aval.shape != v.aval.shape or aval.dtype != v.aval.dtype:
            return None
    return outs


# --- simplify_jaxpr -------------------------------------------------------------------


def simplify_jaxpr(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Algebraic simplification, each rewrite only where the result has the
    very aval (shape, dtype and weak type) of the operand it keeps:

    * `mul x 1`, `mul 1 x`, `div x 1`, `add x 0`, `add 0 x`, `sub x 0`,
      `neg (neg x)`, `convert_element_type` to x's dtype and `broadcast_to`
      x's shape are `x`: each use of the result, outputs included, reads
      `x` instead and the equation goes;
    * `mul x -1` and `mul -1 x` become `neg x` (signed and inexact dtypes);
    * negations move out of the way (inexact dtypes, where each rewrite is
      exact in IEEE arithmetic): `add x (neg y)` and `add (neg y) x` become
      `sub x y`, `sub x (neg y)` becomes `add x y`, and `mul (neg a) b`
      whose negation nothing else reads becomes `neg (mul a b)`, so that a
      sum it feeds absorbs it (reverse mode leaves such chains).

    A 1, 0 or -1 is a literal, a constant whose entries all are that
    number, or a `broadcast_to` of one. `mul x:f32[] 1.0:f64[]` is left
    alone (it promotes), and so is `add x:f64[3] 0.0:f64[2,3]` (it
    broadcasts). `mul x 1.0:f64[]` of a weak x (a Python float given to
    jit) is strong, x is not: its uses read x where that types each of
    their results as before, and it stays for the others and as an output.
    `x + 0.0` is `x` but for the sign of a zero (-0.0 + 0.0 is 0.0), as in
    XLA's simplifier.

    >>> import fgrad
    >>> print(simplify_jaxpr(fgrad.make_jaxpr(lambda x: (x * 1.0 + 0.0) * 3.0)(2.0)))
    { lambda ; a:f64[]. let b:f64[] = mul a 3.0 in (b,) }
    """
    const_of = dict(zip(closed.jaxpr.constvars, closed.consts))
    uniform: dict[Var, Any] = {}  # the value every entry of a variable has, where known
    for v, c in const_of.items():
        if is_library_array(c):  # reading its entries would convert it (compute it, for Dask)
            continue
        arr = np.asarray(c)
        if not arr.size or arr.dtype == object or arr.dtype.kind in "SUV":
            continue
        first = arr.flat[0]
        # Only the numbers a rewrite is about are worth a look at every entry.
        if (first == 0 or first == 1 or first == -1) and bool(np.all(arr == first)):
            uniform[v] = first
    # The negations among the equations so far, by result: the rewrites look
    # for nothing else in the equations that produced their operands.
    producer: dict[Var, JaxprEqn] = {}
    env: dict[Var, Atom] = {}
    eqns: list[JaxprEqn] = []
    changed = False
    uses: dict[Var, int] = {}  # of each variable in `closed`, counted when first needed
    # Results dropped as identities of an operand that differs from them in weak type only (`mul
    # 1.0:f64[] a` with a weak a: grad's seed times a jit argument given as a Python float). Their uses
    # read the operand where that leaves every aval as it was; elsewhere, and as outputs, the equation
    # is put back.
    pending: dict[Var, JaxprEqn] = {}
    for eqn in closed.jaxpr.eqns:
        if pending and not pending.keys().isdisjoint(eqn.invars):
            _restore_where_types_change(eqn, env, pending, eqns, producer)
        eqn = _renamed(eqn, env)
        name = eqn.primitive.name
        rewrite = None
        if name in _SIMPLIFIED and not has_effects(eqn):
            rewrite = _simplified(eqn, uniform, producer)
            if rewrite is None and name == "mul" and not producer.keys().isdisjoint(eqn.invars):
                if not uses:
                    uses = _use_counts(closed.jaxpr)
                pushed = _negation_pushed_out(eqn, producer, uses)
                if pushed is not None:
                    eqns.extend(pushed)
                    producer[pushed[-1].outvars[0]] = pushed[-1]
                    changed = True
                    continue
        if rewrite is None:
            new = eqn
        elif isinstance(rewrite, JaxprEqn):
            new = rewrite
        else:
            env[eqn.outvars[0]] = rewrite
            if rewrite.aval is eqn.outvars[0].aval:
                changed = True
            else:
                pending[eqn.outvars[0]] = eqn
            continue
        changed = changed or new is not eqn
        eqns.append(new)
        name = new.primitive.name
        if name == "neg":
            producer[new.outvars[0]] = new
        elif name == "broadcast_to":
            value = _uniform_value(new.invars[0], uniform)
            if value is not None:
                uniform[new.outvars[0]] = value
    for out in closed.jaxpr.outvars:
        if type(out) is Var and out in pending:
            _restore(out, env, pending, eqns, producer)
    changed = changed or bool(pending)  # those still pending are gone
    return _rebuilt(closed, eqns, env) if changed else closed


def _restore_where_types_change(
    eqn: JaxprEqn, env: dict[Var, Atom], pending: dict[Var, JaxprEqn], eqns: list[JaxprEqn],
    producer: dict[Var, JaxprEqn],
) -> None:
    """Put back the pending equations whose results `eqn` reads, if reading
    their operands instead would change the avals of `eqn`'s results (a weak
    operand with no strong one beside it keeps a result weak), or `eqn` has
    jaxprs of its own (whose input avals are fixed)."""
    dropped = list(dict.fromkeys(a for a in eqn.invars if type(a) is Var and a in pending))  # `mul a a`: once
    if not dropped:
        return
    if sub_jaxprs(eqn):
        for v in dropped:
            _restore(v, env, pending, eqns, producer)
        return
    # Put back as few as keep the avals: one strong operand beside weak ones is enough.
    while dropped and not _same_avals(_renamed(eqn, env), eqn.outvars):
        _restore(dropped.pop(0), env, pending, eqns, producer)


def _same_avals(eqn: JaxprEqn, outvars: list[Var]) -> bool:
    """Whether `eqn`, on its operands' avals, gives those of `outvars`."""
    try:
        avals = eqn.primitive.abstract_eval(*[a.aval for a in eqn.invars], **eqn.params)
    except Exception:  # noqa: BLE001 - any failure means: keep the equations as they were
        return False
    avals = list(avals) if eqn.primitive.multiple_results else [avals]
    return len(avals) == len(outvars) and all(a is v.aval for a, v in zip(avals, outvars))


def _restore(
    v: Var, env: dict[Var, Atom], pending: dict[Var, JaxprEqn], eqns: list[JaxprEqn],
    producer: dict[Var, JaxprEqn],
) -> None:
    """The pending equation of `v` back in `eqns` (its inputs come earlier), and `v` read again."""
    eqn = pending.pop(v)
    del env[v]
    eqns.append(eqn)
    if eqn.primitive.name == "neg":
        producer[v] = eqn


_ARITHMETIC = frozenset({"mul", "div", "add", "sub"})
#: The primitives `_simplified` and `_negation_pushed_out` rewrite, by name.
_SIMPLIFIED = frozenset({"mul", "div", "add", "sub", "neg", "convert_element_type", "broadcast_to",
                         "reshape", "integer_pow"})


_invars_of = operator.attrgetter("invars")


def _use_counts(jaxpr: Jaxpr) -> dict[Var, int]:
    """How many times each variable is read, by an equation or as an output
    (literals are counted too: nothing asks for them)."""
    uses = Counter(itertools.chain.from_iterable(map(_invars_of, jaxpr.eqns)))
    uses.update(jaxpr.outvars)
    return uses


def _negated(a: Atom, producer: dict[Var, JaxprEqn]) -> Atom | None:
    """y, if `a` is `neg y` (None otherwise)."""
    inner = producer.get(a) if type(a) is Var else None
    if inner is None or inner.primitive.name != "neg" or inner.invars[0].aval is not inner.outvars[0].aval:
        return None
    return inner.invars[0]


def _negation_pushed_out(
    eqn: JaxprEqn, producer: dict[Var, JaxprEqn], uses: dict[Var, int]
) -> list[JaxprEqn] | None:
    """`mul (neg a) b` (or `mul b (neg a)`) as `t = mul a b; neg t`, when the
    negation is read there only and the dtype is inexact (None otherwise)."""
    if eqn.primitive.name != "mul" or len(eqn.invars) != 2 or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0]
    neg = _primitive_named("neg")
    if neg is None or out.aval.dtype.kind not in "fc":
        return None
    for k, x in enumerate(eqn.invars):
        a = _negated(x, producer)
        if a is not None and type(x) is Var and uses.get(x) == 1:
            ins = list(eqn.invars)
            ins[k] = a
            t = Var(out.aval)
            return [JaxprEqn(eqn.primitive, ins, [t], eqn.params, eqn.source),
                    JaxprEqn(neg, [t], [out], {}, eqn.source)]
    return None


def _uniform_value(a: Atom, uniform: dict[Var, Any]) -> Any:
    """The number every entry of `a` is, if known (None otherwise)."""
    if isinstance(a, Var):
        return uniform.get(a) if uniform else None
    return a.val if getattr(a.val, "ndim", 0) == 0 else None


def _equals(value: Any, number: int) -> bool:
    """Whether `value` (a `_uniform_value`) is known to be `number`."""
    if value is None or isinstance(value, (str, bytes)):
        return False
    try:
        return bool(value == number)
    except (TypeError, ValueError):
        return False


def _simplified(
    eqn: JaxprEqn, uniform: dict[Var, Any], producer: dict[Var, JaxprEqn]
) -> Atom | JaxprEqn | None:
    """What `eqn` simplifies to: the atom its result is, an equation computing
    it more cheaply, or None. `producer` holds the negations seen so far."""
    name, ins = eqn.primitive.name, eqn.invars
    if eqn.primitive.multiple_results or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0].aval
    candidates: list[Atom] = []
    if len(ins) == 2 and name in _ARITHMETIC:
        x, y = ins
        vx, vy = _uniform_value(x, uniform), _uniform_value(y, uniform)
        numbers = vx is not None or vy is not None  # (most operands are neither literals nor uniform)
        if name == "mul":
            if numbers:
                candidates = [a for a, other in ((x, vy), (y, vx)) if _equals(other, 1)]
                if not candidates and out.dtype.kind in "ifc":
                    for a, other in ((x, vy), (y, vx)):
                        neg = _primitive_named("neg")
                        if a.aval is out and neg is not None and _equals(other, -1):
                            return JaxprEqn(neg, [a], eqn.outvars, {}, eqn.source)
        elif name == "div":
            if _equals(vy, 1):
                candidates = [x]
        elif name == "add":
            if numbers:
                candidates = [a for a, other in ((x, vy), (y, vx)) if _equals(other, 0)]
            if not candidates and out.dtype.kind in "fc" and (x in producer or y in producer):
                sub = _primitive_named("sub")
                for a, b in ((x, y), (y, x)):
                    negated = _negated(b, producer)
                    if sub is not None and negated is not None:
                        return JaxprEqn(sub, [a, negated], eqn.outvars, {}, eqn.source)
        elif _equals(vy, 0):  # sub
            candidates = [x]
        elif out.dtype.kind in "fc" and y in producer:
            negated, add = _negated(y, producer), _primitive_named("add")
            if negated is not None and add is not None:
                return JaxprEqn(add, [x, negated], eqn.outvars, {}, eqn.source)
    elif name == "neg" and len(ins) == 1 and type(ins[0]) is Var:
        inner = producer.get(ins[0])
        if inner is not None and inner.primitive.name == "neg" and not has_effects(inner):
            candidates = [inner.invars[0]]
    elif (name in ("convert_element_type", "broadcast_to", "reshape") and len(ins) == 1
          or name == "integer_pow" and eqn.params.get("y") == 1):
        candidates = [ins[0]]  # an identity where the result has the operand's aval
    elif name == "integer_pow" and eqn.params.get("y") == 2:  # x * x: twice as fast as power
        square = _primitive_named("square")
        if square is not None and ins[0].aval is out:
            return JaxprEqn(square, list(ins), eqn.outvars, {}, eqn.source)
    for a in candidates:
        if a.aval is out:  # avals are interned: the same shape, dtype and weak type
            return a
    for a in candidates:
        if a.aval is not out and a.aval.weak_type and a.aval.strip_weak_type() is out:
            return a  # weak where the result is not: simplify_jaxpr checks each use
    return None


def _primitive_named(name: str) -> Primitive | None:
    """The primitive called `name`, found in the jvp table (every
    differentiable primitive is there); the IR does not import primitives."""
    found = _by_name.get(name)
    if found is None:
        found = next((p for p in list(jvp_rules) if p.name == name), None)
        if found is not None:
            _by_name[name] = found
    return found


# Cache of _primitive_named: at most one entry per primitive. Filled without a
# lock: a dict's get and set are atomic, and two threads that miss together
# store the same primitive.
_by_name: dict[str, Primitive] = {}


# --- identity_products ----------------------------------------------------------------

_IDENTITY = "identity"  # the diagonal of an identity matrix, in identity_products


def identity_products(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Products with diagonal matrices built from an identity constant, as
    what they are. Jacobians built over the standard basis (`jacrev`,
    `jacfwd`, `hessian`) multiply the identity by vectors and then multiply
    the result into matrices: `matmul (mul eye v) C` costs n^3 operations
    where `mul v[:, None] C` costs n^2.

    A variable is known to be diagonal, `eye(n) * w` for a vector `w` of
    length n (or a scalar), when it is a constant equal to the identity, a
    `mul` of a known diagonal by a vector or a scalar (`w * v` is computed on
    its own), or a `transpose` of one. Then `matmul D C` becomes `mul
    w[:, None] C`, `matmul C D` becomes `mul C w` (for a vector `C`, `mul C
    w`), or just `C` when D is the identity itself. The dense equations stay
    until DCE finds them unused. Only for inexact dtypes all alike, where
    the result is the dense product's (the zeros add nothing), unless an
    entry of C is inf or nan: the dense product then spreads a nan over
    its row or column, this one does not.

    >>> import fgrad, fgrad.numpy as fnp
    >>> closed = fgrad.make_jaxpr(lambda v, C: (np.eye(3) * v) @ C)(np.ones(3), np.ones((3, 2)))
    >>> print(dce_closed_jaxpr(identity_products(closed)))
    { lambda ; a:f64[3] b:f64[3,2]. let
        c:f64[3,1] = reshape[new_shape=(3, 1)] a
        d:f64[3,2] = mul c b
      in (d,) }
    """
    diagonal: dict[Var, Any] = {}  # variable -> its diagonal: an atom, or _IDENTITY
    for constvar, c in zip(closed.jaxpr.constvars, closed.consts):
        if _is_identity(c):
            diagonal[constvar] = _IDENTITY
    if not diagonal:
        return closed
    mul, reshape = _primitive_named("mul"), _primitive_named("reshape")
    if mul is None or reshape is None:
        return closed
    env: dict[Var, Atom] = {}
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        eqn = _renamed(eqn, env)
        name, ins = eqn.primitive.name, eqn.invars
        if has_effects(eqn) or len(eqn.outvars) != 1 or len(ins) not in (1, 2):
            eqns.append(eqn)
            continue
        out = eqn.outvars[0]
        known: list[Any] = [diagonal.get(a) if type(a) is Var else None for a in ins]
        if name == "transpose" and known[0] is not None:
            diagonal[out] = known[0]
        elif name == "mul" and len(ins) == 2 and sum(k is not None for k in known) == 1:
            d = 0 if known[0] is not None else 1
            matrix, v, before = ins[d], ins[1 - d], known[d]
            n = matrix.aval.shape[0]
            if out.aval is matrix.aval and v.aval.shape in ((n,), ()) and _same_inexact(matrix, v):
                if before is _IDENTITY:
                    diagonal[out] = v
                else:
                    product = Var(mul.abstract_eval(before.aval, v.aval))
                    eqns.append(JaxprEqn(mul, [before, v], [product], {}, eqn.source))
                    diagonal[out] = product
        elif name == "matmul" and len(ins) == 2 and sum(k is not None for k in known) == 1:
            d = 0 if known[0] is not None else 1
            C, w = ins[1 - d], known[d]
            if _same_inexact(ins[d], C) and C.aval.ndim in (1, 2):
                if w is _IDENTITY:
                    if C.aval is out.aval:
                        env[out] = C
                        changed = True
                        continue
                elif d == 0 and C.aval.ndim == 2 and w.aval.ndim == 1:
                    column = Var(reshape.abstract_eval(w.aval, new_shape=(w.aval.shape[0], 1)))
                    new = [JaxprEqn(reshape, [w], [column], {"new_shape": (w.aval.shape[0], 1)}, eqn.source),
                           JaxprEqn(mul, [column, C], [out], {}, eqn.source)]
                    if mul.abstract_eval(column.aval, C.aval) is out.aval:
                        eqns.extend(new)
                        changed = True
                        continue
                elif mul.abstract_eval(C.aval, w.aval) is out.aval:  # C @ D, or D @ a vector
                    eqns.append(JaxprEqn(mul, [C, w], [out], {}, eqn.source))
                    changed = True
                    continue
        eqns.append(eqn)
    return _rebuilt(closed, eqns, env) if changed else closed


def _is_identity(c: Any) -> bool:
    arr = np.asarray(c) if isinstance(c, np.ndarray) else None
    if arr is None or arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.dtype.kind not in "fc":
        return False
    return bool(np.array_equal(arr, np.eye(arr.shape[0], dtype=arr.dtype)))


def _same_inexact(a: Atom, b: Atom) -> bool:
    """Both of one inexact dtype (b may be a weak scalar of its kind)."""
    kind = a.aval.dtype.kind
    return kind in "fc" and (b.aval.dtype == a.aval.dtype or b.aval.weak_type and b.aval.dtype.kind == kind)


# --- summed_products ------------------------------------------------------------------

#: A sum needs this many products of one form before they are stacked into one.
SUM_MIN_TERMS = 4
#: ... and its stacked operands together hold at most this many elements.
STACK_MAX_ELEMENTS = 1 << 22


def summed_products(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A sum of many products that contract the same leading axis, as one
    product of the stacked operands. Reverse mode through a loop leaves such
    sums, one term per iteration, for the cotangent of a weight the loop reads
    each time: `ct_W = h_1.T @ g_1 + h_2.T @ g_2 + ...` costs one small
    matrix product and one addition per step, where `concatenate(h).T @
    concatenate(g)` is one large product that BLAS runs at full speed.

    A sum is a chain of `add`s whose inner results nothing else reads, all of
    one aval; its terms, each read by the sum only, are stacked by form:
    `matmul (transpose a) b` (concatenating the a's and the b's along axis 0),
    `matmul a (transpose b)` (along axis 1) and `reduce_sum[axes=(0,)] g`
    (along axis 0), for inexact operands of one dtype and shape. The result
    is the sum's up to rounding (the additions run in another order), as in
    a compiler that reassociates floating-point sums.

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda h, g: h[0].T @ g[0] + h[1].T @ g[1] + h[2].T @ g[2] + h[3].T @ g[3]
    >>> closed = fgrad.make_jaxpr(f)(np.ones((4, 2, 3)), np.ones((4, 2, 3)))
    >>> [e.primitive.name for e in dce_closed_jaxpr(summed_products(closed)).eqns][-4:]
    ['concatenate', 'concatenate', 'transpose', 'matmul']
    """
    eqns = closed.jaxpr.eqns
    names = {e.primitive.name for e in eqns}
    if "add" not in names or not names & {"matmul", "reduce_sum"}:
        return closed
    producer = {v: e for e in eqns for v in e.outvars}
    uses: dict[Var, int] = {}
    for a in [a for e in eqns for a in e.invars] + list(closed.jaxpr.outvars):
        if type(a) is Var:
            uses[a] = uses.get(a, 0) + 1

    def inner(a: Atom, aval: Any) -> JaxprEqn | None:
        """The add that computes `a`, when it is a link of a sum of aval `aval`."""
        if not isinstance(a, Var):
            return None
        e = producer.get(a)
        if e is None or e.primitive.name != "add" or uses[a] != 1 or a.aval != aval or has_effects(e):
            return None
        return e

    linked = {a for e in eqns if e.primitive.name == "add"
              for a in e.invars if inner(a, e.outvars[0].aval) is not None}
    new_eqns: list[JaxprEqn] = []
    changed = False
    for eqn in eqns:
        out = eqn.outvars[0] if eqn.outvars else None
        if eqn.primitive.name != "add" or out in linked or has_effects(eqn):
            new_eqns.append(eqn)
            continue
        rewritten = _stacked_sum(eqn, inner, producer, uses)
        if rewritten is None:
            new_eqns.append(eqn)
        else:
            new_eqns.extend(rewritten)
            changed = True
    return _rebuilt(closed, new_eqns, {}) if changed else closed


def _terms(root: JaxprEqn, inner: Any) -> list[Atom]:
    """The terms of the sum that `root` completes, in order (iteratively: a
    loop of 10^5 steps makes a chain that long)."""
    aval = root.outvars[0].aval
    terms: list[Atom] = []
    stack: list[Atom] = list(reversed(root.invars))
    while stack:
        a = stack.pop()
        link = inner(a, aval)
        if link is None:
            terms.append(a)
        else:
            stack.extend(reversed(link.invars))
    return terms


def _product_form(a: Atom, producer: dict[Var, JaxprEqn], uses: dict[Var, int]) -> tuple[Any, ...] | None:
    """(key, stacked operands, axis) of a term that can be stacked, or None."""
    if not isinstance(a, Var):
        return None
    e = producer.get(a)
    if e is None or uses[a] != 1 or has_effects(e) or a.aval.dtype.kind not in "fc":
        return None
    name = e.primitive.name
    if name == "reduce_sum" and tuple(e.params["axes"]) == (0,) and type(e.invars[0]) is Var:
        g = e.invars[0]
        if g.aval.dtype == a.aval.dtype:
            return ("sum", g.aval), (g,), 0
        return None
    if name != "matmul" or any(type(x) is not Var or x.aval.ndim != 2 or x.aval.dtype != a.aval.dtype
                               for x in e.invars):
        return None
    left, right = e.invars
    for side, axis in ((0, 0), (1, 1)):
        t = producer.get(e.invars[side])  # type: ignore[arg-type]  # a Var: checked above
        if t is not None and t.primitive.name == "transpose" and tuple(t.params["axes"]) == (1, 0):
            source = t.invars[0]
            if type(source) is Var and source.aval.dtype == a.aval.dtype:
                operands = (source, right) if side == 0 else (left, source)
                return ("matmul", side, operands[0].aval, operands[1].aval), operands, axis
    return None


def _stacked_sum(
    root: JaxprEqn, inner: Any, producer: dict[Var, JaxprEqn], uses: dict[Var, int],
) -> list[JaxprEqn] | None:
    """The equations that compute `root`'s sum with its products stacked, or None."""
    terms = _terms(root, inner)
    if len(terms) < SUM_MIN_TERMS:
        return None
    groups: dict[Any, list[tuple[Atom, tuple[Var, ...], int]]] = {}
    for a in terms:
        form = _product_form(a, producer, uses)
        if form is None:
            groups[("other", id(a))] = [(a, (), 0)]
        else:
            groups.setdefault(form[0], []).append((a, form[1], form[2]))
    stackable = [
        members for key, members in groups.items()
        if key[0] != "other" and len(members) >= SUM_MIN_TERMS
        and len(members) * sum(v.aval.size for v in members[0][1]) <= STACK_MAX_ELEMENTS
    ]
    prims = {n: _primitive_named(n) for n in ("concatenate", "transpose", "matmul", "reduce_sum")}
    if not stackable or any(p is None for p in prims.values()):
        return None
    stacked_terms = {id(m[0]) for members in stackable for m in members}
    new: list[JaxprEqn] = []

    def emit(prim: Primitive, ins: list[Atom], **params: Any) -> Var:
        out = Var(prim.abstract_eval(*[a.aval for a in ins], **params))
        new.append(JaxprEqn(prim, ins, [out], params, root.source))
        return out

    results: list[Atom] = [a for a in terms if id(a) not in stacked_terms]
    for members in stackable:
        term, operands, axis = members[0]
        kind = producer[term].primitive.name  # type: ignore[index]
        stacked = [emit(prims["concatenate"], [m[1][i] for m in members], axis=axis)  # type: ignore[arg-type]
                   for i in range(len(operands))]
        if kind == "reduce_sum":
            results.append(emit(prims["reduce_sum"], stacked, axes=(0,)))  # type: ignore[arg-type]
        else:
            stacked[axis] = emit(prims["transpose"], [stacked[axis]], axes=(1, 0))  # type: ignore[arg-type]
            results.append(emit(prims["matmul"], stacked))  # type: ignore[arg-type]
    total = results[0]
    for a in results[1:]:
        total = emit(root.primitive, [total, a])
    if total.aval != root.outvars[0].aval:
        return None
    last = new[-1]
    new[-1] = JaxprEqn(last.primitive, last.invars, list(root.outvars), last.params, last.source)
    return new


def sliced_products(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Many products `matmul x[i] R` of slices of one array by one matrix, as
    slices of one product `matmul x R`. A loop over `xs` leaves them, one per
    iteration (`x_t @ U` in a recurrent network): each is a small product whose
    cost is NumPy's call, where one large product runs at BLAS's speed. The
    slices must be whole entries `x[i]` of the leading axis, at least
    SUM_MIN_TERMS of them and half of the axis, of one inexact dtype with R.
    The one product is computed where the first one was; the values are the
    small products' up to rounding (BLAS may block the large one otherwise).

    >>> import fgrad
    >>> f = lambda xs, U: [x @ U for x in xs]
    >>> closed = fgrad.make_jaxpr(f)(np.ones((4, 2, 3)), np.ones((3, 5)))
    >>> print(sorted({e.primitive.name for e in dce_closed_jaxpr(sliced_products(closed)).eqns}))
    ['getitem', 'matmul', 'reshape']
    """
    eqns = closed.jaxpr.eqns
    if not any(e.primitive.name == "matmul" for e in eqns):
        return closed
    producer = {v: e for e in eqns for v in e.outvars}
    groups: dict[tuple[Var, Var], list[tuple[int, JaxprEqn]]] = {}
    for e in eqns:
        index = _sliced_operand(e, producer)
        if index is not None:
            source = producer[e.invars[0]].invars[0]  # type: ignore[index]
            groups.setdefault((source, e.invars[1]), []).append((index, e))  # type: ignore[arg-type]
    hoisted: dict[int, list[JaxprEqn]] = {}  # id of the first member -> the equations before it
    replaced: dict[int, JaxprEqn] = {}
    prims = {n: _primitive_named(n) for n in ("matmul", "reshape", "getitem")}
    if any(p is None for p in prims.values()):
        return closed
    for (x, r), members in groups.items():
        count = x.aval.shape[0]
        if (len({i for i, _ in members}) < max(SUM_MIN_TERMS, count / 2)
                or count * r.aval.shape[1] * math.prod(x.aval.shape[1:-1]) > STACK_MAX_ELEMENTS):
            continue
        first = members[0][1]
        new: list[JaxprEqn] = []

        def emit(name: str, ins: list[Atom], **params: Any) -> Var:
            prim = prims[name]
            assert prim is not None
            out = Var(prim.abstract_eval(*[a.aval for a in ins], **params))
            new.append(JaxprEqn(prim, ins, [out], params, first.source))
            return out

        rows = x if x.aval.ndim == 2 else emit(
            "reshape", [x], new_shape=(x.aval.size // x.aval.shape[-1], x.aval.shape[-1]))
        product = emit("matmul", [rows, r])
        if x.aval.ndim != 2:
            product = emit("reshape", [product], new_shape=(*x.aval.shape[:-1], r.aval.shape[1]))
        hoisted[id(first)] = new
        idx_of = type(producer[first.invars[0]].params["idx"])  # type: ignore[index]
        for i, e in members:
            replaced[id(e)] = JaxprEqn(prims["getitem"], [product], list(e.outvars),  # type: ignore[arg-type]
                                       {"idx": idx_of((i,))}, e.source)
    if not replaced:
        return closed
    out_eqns: list[JaxprEqn] = []
    for e in eqns:
        out_eqns.extend(hoisted.get(id(e), ()))
        out_eqns.append(replaced.get(id(e), e))
    return _rebuilt(closed, out_eqns, {})


def _sliced_operand(e: JaxprEqn, producer: dict[Var, JaxprEqn]) -> int | None:
    """i, when `e` is `matmul x[i] R` for a matrix R of x's inexact dtype."""
    if e.primitive.name != "matmul" or has_effects(e):
        return None
    left, right = e.invars
    g = producer.get(left) if type(left) is Var else None
    if (g is None or g.primitive.name != "getitem" or type(right) is not Var or right.aval.ndim != 2
            or left.aval.ndim not in (1, 2) or left.aval.dtype.kind not in "fc"
            or right.aval.dtype != left.aval.dtype):
        return None
    idx = tuple(g.params["idx"])
    x = g.invars[0]
    if (len(idx) != 1 or not isinstance(idx[0], (int, np.integer)) or isinstance(idx[0], bool)
            or type(x) is not Var or x.aval.ndim != left.aval.ndim + 1 or x.aval.dtype != left.aval.dtype):
        return None
    return int(idx[0]) % x.aval.shape[0]


# --- cse_jaxpr ------------------------------------------------------------------------

#: Primitives whose two operands may be swapped (exactly, in floating point too).
_COMMUTATIVE = frozenset({"add", "mul"})


class _NoKey(Exception):
    """A parameter that cannot be compared: its equation is never merged."""


def _param_key(value: Any) -> Hashable:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        return ("jaxpr", id(value))
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_param_key(v) for v in value))
    if isinstance(value, (float, complex, np.inexact)):
        return (type(value), repr(value))  # 0.0 and -0.0 are equal but not the same parameter
    try:
        hash(value)
    except TypeError:
        raise _NoKey from None
    return (type(value), value)


def _atom_key(a: Atom) -> Hashable:
    if isinstance(a, Var):
        return a
    val = a.val
    if type(val) is float or type(val) is np.float64:  # most literals: np.asarray's key, sooner
        return ("literal", a.aval, _F64_STR, (), _pack_double(val))
    arr = np.asarray(val)
    if arr.dtype == object:
        return ("literal", id(a))
    # By bits, not by ==: 0.0 and -0.0 differ, a NaN is itself.
    return ("literal", a.aval, arr.dtype.str, arr.shape, arr.tobytes())


_F64_STR = np.dtype(np.float64).str
_pack_double = struct.Struct("=d").pack  # a float64's bytes, as ndarray.tobytes() gives them


def _eqn_key(eqn: JaxprEqn) -> Hashable | None:
    """What makes `eqn` the same as another (see cse_jaxpr), or None if it has
    a parameter that cannot be compared. The key may still be unhashable."""
    try:
        params = tuple(sorted((k, _param_key(v)) for k, v in eqn.params.items())) if eqn.params else ()
    except (_NoKey, TypeError):
        return None
    invars = eqn.invars
    if len(invars) == 2:  # most equations, spelt out
        a, b = invars
        ka = a if type(a) is Var else _atom_key(a)
        kb = b if type(b) is Var else _atom_key(b)
        if eqn.primitive.name in _COMMUTATIVE and hash(kb) < hash(ka):
            return (eqn.primitive, params, (kb, ka))
        return (eqn.primitive, params, (ka, kb))
    if len(invars) == 1:
        a = invars[0]
        return (eqn.primitive, params, (a if type(a) is Var else _atom_key(a),))
    return (eqn.primitive, params, tuple(a if type(a) is Var else _atom_key(a) for a in invars))


def cse_jaxpr(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Common-subexpression elimination: an equation with the primitive,
    parameters and inputs of an earlier one is dropped, and its results are
    read from the earlier one's. Inputs compare as variables by identity,
    literals by aval and bits; parameters by equality (a sub-jaxpr by
    identity; an unhashable parameter keeps its equation). `add` and `mul`
    match with their operands swapped. Equations with effects are never
    merged: two identical prints both print, in their order.

    >>> import fgrad, fgrad.numpy as fnp
    >>> print(cse_jaxpr(fgrad.make_jaxpr(lambda x: fnp.sin(x) * fnp.sin(x))(1.0)))
    { lambda ; a:f64[]. let b:f64[] = sin a c:f64[] = mul b b in (c,) }
    """
    seen: dict[Hashable, list[Var]] = {}
    env: dict[Var, Atom] = {}
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        eqn = _renamed(eqn, env)
        key = None if has_effects(eqn) else _eqn_key(eqn)
        if key is not None:
            try:
                earlier = seen.setdefault(key, eqn.outvars)
            except TypeError:  # an unhashable parameter: never merged
                earlier = eqn.outvars
            if earlier is not eqn.outvars:
                env.update(zip(eqn.outvars, earlier))
                changed = True
                continue
        eqns.append(eqn)
    return _rebuilt(closed, eqns, env) if changed else closed


# --- the pipeline ---------------------------------------------------------------------


# --- inline_calls ---------------------------------------------------------------------

#: Call primitives whose equations are only a call: `jit` of `jit` is the inner
#: jaxpr's equations (checkpoint is not: its equation is what tells reverse mode
#: to recompute).
INLINED_CALLS = frozenset({"jit"})


def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Replace each call equation (`INLINED_CALLS`, matched by name: the IR does
    not import primitives) by the equations of its jaxpr, its variables renamed
    to fresh ones, its constants made constants of `closed`. Returns `closed`
    itself when there is none.

    >>> import fgrad, fgrad.numpy as fnp
    >>> inner = fgrad.jit(lambda x: fnp.sin(x) * 2.0)
    >>> print(inline_calls(fgrad.make_jaxpr(lambda x: inner(x) + 1.0)(1.0)))
    { lambda ; a:f64[]. let
        b:f64[] = sin a
        c:f64[] = mul b 2.0
        d:f64[] = add c 1.0
      in (d,) }
    """
    if not any(e.primitive.name in INLINED_CALLS for e in closed.eqns):
        return closed
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    eqns: list[JaxprEqn] = []
    env: dict[Var, Atom] = {}

    def splice(eqn: JaxprEqn, rename: dict[Var, Atom], fresh: bool) -> None:
        """`eqn` of some level, its variables renamed by `rename` into the
        result's, or its call's equations. Below the top level every variable
        is new (one jaxpr may be inlined twice)."""
        invars = [rename.get(a, a) if type(a) is Var else a for a in eqn.invars]
        sub = eqn.params.get("jaxpr")
        if eqn.primitive.name not in INLINED_CALLS or not isinstance(sub, ClosedJaxpr):
            outvars = eqn.outvars
            if fresh:
                outvars = [Var(v.aval) for v in eqn.outvars]
                rename.update(zip(eqn.outvars, outvars))
            eqns.append(JaxprEqn(eqn.primitive, invars, outvars, eqn.params, eqn.source))
            return
        inner: dict[Var, Atom] = dict(zip(sub.jaxpr.invars, invars))
        for v, c in zip(sub.jaxpr.constvars, sub.consts):
            inner[v] = new = Var(v.aval)
            constvars.append(new)
            consts.append(c)
        for e in sub.jaxpr.eqns:
            splice(e, inner, True)
        for v, a in zip(eqn.outvars, sub.jaxpr.outvars):
            rename[v] = inner.get(a, a) if type(a) is Var else a

    for eqn in closed.eqns:
        splice(eqn, env, False)
    return _rebuilt(closed, eqns, env, constvars, consts)


# The higher-order primitives whose jaxprs run once per step, by name (this layer
# does not import them): their bodies are optimized as programs of their own.
LOOP_BODIES = frozenset({"scan", "while", "cond"})


def rewritten(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with each equation that its primitive's `jit_rewrites` rule rewrites
    replaced by the equations the rule gives (`closed` itself when none is)."""
    eqns, changed = [], False
    for eqn in closed.jaxpr.eqns:
        rule = jit_rewrites.get(eqn.primitive)
        new = None if rule is None or has_effects(eqn) else rule(eqn)
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)


def optimized_bodies(closed: ClosedJaxpr, max_rounds: int = 8) -> ClosedJaxpr:
    """`closed` with the jaxprs of its loops and conds optimized (`optimize_jaxpr`),
    each keeping its inputs and outputs; `closed` itself when none changes."""
    eqns, changed = [], False
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name in LOOP_BODIES:
            params = {k: _optimized_param(v, max_rounds) for k, v in eqn.params.items()}
            if any(params[k] is not v for k, v in eqn.params.items()):
                eqn = JaxprEqn(eqn.primitive, eqn.invars, eqn.outvars, params, eqn.source)
                changed = True
        eqns.append(eqn)
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)


def _optimized_param(value: Any, max_rounds: int) -> Any:
    if isinstance(value, ClosedJaxpr):
        new = optimize_jaxpr(value, max_rounds)
        same = new.in_avals == value.in_avals and new.out_avals == value.out_avals
        return new if same else value
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        new_values = tuple(_optimized_param(v, max_rounds) for v in value)
        return value if all(a is b for a, b in zip(new_values, value)) else new_values
    return value


def optimize_jaxpr(closed: ClosedJaxpr, max_rounds: int = 8) -> ClosedJaxpr:
    """What `jit` runs on a staged jaxpr: nested calls inlined, then constant
    folding, simplification, identity products, summed and sliced products,
    CSE and DCE, again until a round changes nothing (at most `max_rounds`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sin(x) * fnp.negative(-1.0) + fnp.sin(x) / 1.0
    >>> print(optimize_jaxpr(fgrad.make_jaxpr(f)(1.0)))
    { lambda ; a:f64[]. let b:f64[] = sin a c:f64[] = add b b in (c,) }
    """
    closed = unroll_small_arrays(optimized_bodies(inline_calls(rewritten(closed)), max_rounds))
    for _ in range(max_rounds):
        folded = fold_constants(closed)
        simplified = sliced_products(summed_products(identity_products(simplify_jaxpr(folded))))
        merged = cse_jaxpr(simplified)
        pruned = dce_closed_jaxpr(merged)
        if (
            merged is closed
            and len(pruned.eqns) == len(closed.eqns)
            and len(pruned.consts) == len(closed.consts)
        ):
            return closed
        closed = pruned
    return closed
