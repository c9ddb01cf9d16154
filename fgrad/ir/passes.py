"""Rewrites of jaxprs that know no particular primitive. Each pass takes a
jaxpr and returns a new one. DCE and liveness work on a `Jaxpr`; constant
folding and CSE on a `ClosedJaxpr`, since folding needs the constants'
values. The rewrites about particular primitives, and the pipeline jit runs
(`optimize_jaxpr`), are in `fgrad/compiler/`.

Primitives are pure unless listed in `core.rules.effectful` (printing,
callbacks); an equation with an effect, or with a sub-jaxpr that has one, is
never dropped. CSE takes the operands of a primitive in `core.rules.commutative`
in either order.
"""

from __future__ import annotations

import struct
import threading
import weakref
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..core.avals import get_aval
from ..core.libraries import is_library_array
from ..core.rules import commutative, effectful
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, sub_jaxprs

__all__ = ["dce_jaxpr", "dce_closed_jaxpr", "has_effects", "last_uses", "fold_constants", "cse_jaxpr",
           "renamed", "rebuilt"]


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


def renamed(eqn: JaxprEqn, env: dict[Var, Atom]) -> JaxprEqn:
    """`eqn` reading `env[v]` for each input `v` renamed; `eqn` itself if none is."""
    # (A literal is never a key of `env`: it compares by identity.)
    if not env or env.keys().isdisjoint(eqn.invars):
        return eqn
    invars = [env.get(a, a) for a in eqn.invars]  # type: ignore[arg-type]
    return JaxprEqn(eqn.primitive, invars, eqn.outvars, eqn.params, eqn.source)


def rebuilt(
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
        if env and not env.keys().isdisjoint(eqn.invars):  # (renamed's test, without its call)
            eqn = renamed(eqn, env)
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
    return rebuilt(closed, eqns, env, constvars, consts)


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
        if eqn.primitive in commutative and hash(kb) < hash(ka):
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
        if env and not env.keys().isdisjoint(eqn.invars):  # (renamed's test, without its call)
            eqn = renamed(eqn, env)
        key: Hashable | None = None
        if eqn.primitive in effectful or eqn.params and has_effects(eqn):
            pass
        elif not eqn.params and len(eqn.invars) == 2 and type(eqn.invars[0]) is Var is type(eqn.invars[1]):
            a, b = eqn.invars  # most equations: a binary operation on two variables
            swap = eqn.primitive in commutative and hash(b) < hash(a)
            key = (eqn.primitive, (), (b, a) if swap else (a, b))
        else:
            key = _eqn_key(eqn)
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
    return rebuilt(closed, eqns, env) if changed else closed


# --- the pipeline ---------------------------------------------------------------------


# --- inline_calls ---------------------------------------------------------------------

#: Call primitives whose equations are only a call: `jit` of `jit` is the inner
#: jaxpr's equations (checkpoint is not: its equation is what tells reverse mode
#: to recompute).
