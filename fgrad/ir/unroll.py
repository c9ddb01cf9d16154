"""Small arrays as their elements: jit's rewrite of array code on a few numbers.

An operation on an array of a few elements (a softmax over four scalars
stacked together, the cotangent of that stack) costs a NumPy call, about a
microsecond; on its elements, each a 0-d value, it costs one operation per
element, which jit's code runs on Python floats in about 30 ns each
(codegen's float code). `unroll_small_arrays` follows the arrays of at most
`UNROLL_SIZE` elements whose elements it knows (0-d values reshaped,
broadcast and concatenated, small constants, results of equations it
unrolled) and writes each equation on them as equations on the elements, by
the primitive's `unroll_rules` (core/rules.py). A 0-d result (an element
taken out, a sum) becomes the element itself. The array equation stays
beside its elements: DCE then drops it unless something that has no rule
(or an output) needs the array, so an array is computed as an array only
where it is used as one.

Elements are 0-d atoms of float64, int64 or bool, the dtypes jit's code
holds as Python numbers; other dtypes stay arrays. The rules compute what
NumPy computes, in its order: data movement picks elements, elementwise
operations apply to each, reductions combine in NumPy's order (a sum of at
most seven elements is sequential in NumPy, from 0), scatters combine in the
order of their index.

This module knows primitives only through the rule table; the helpers below
build the rules of whole families (`elementwise_rule`, `movement_rule`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes
from ..core.rules import unroll_rules
from ..core.trace import Primitive
from . import passes
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var

__all__ = ["UNROLL_SIZE", "UNROLLED_DTYPES", "unroll_small_arrays", "elementwise_rule", "movement_rule",
           "positions"]

#: The largest array written element by element: beyond it a NumPy call costs less.
UNROLL_SIZE = 16
#: The dtypes whose elements jit's code holds as Python numbers.
UNROLLED_DTYPES = frozenset({np.dtype(np.float64), np.dtype(np.int64), np.dtype(bool)})

Emit = Callable[..., Atom]


@functools.lru_cache(maxsize=1024)
def positions(shape: tuple[int, ...]) -> np.ndarray:
    """The flat (C order) position of each element of an array of `shape`: what
    the movement rules move instead of values (read-only, cached)."""
    out = np.arange(math.prod(shape)).reshape(shape)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=1024)
def _broadcast_picks(shapes: tuple[tuple[int, ...], ...]) -> tuple[list[int], ...]:
    shape = broadcast_shapes(*shapes)
    return tuple(np.broadcast_to(positions(s), shape).ravel().tolist() for s in shapes)


def elementwise_rule(prim: Primitive) -> Callable[..., list[list[Atom]]]:
    """The unroll rule of an elementwise primitive: the primitive on each
    element of the result, its operands' elements broadcast (NumPy's rules)."""

    def rule(elements: list[list[Atom]], avals: list[ShapedArray], emit: Emit,
             **params: Any) -> list[list[Atom]]:
        if len(elements) == 1:
            (els,) = elements
            return [[emit(prim, e, **params) for e in els]]
        picks = _broadcast_picks(tuple(a.shape for a in avals))
        if len(elements) == 2:  # (most: spelt out)
            (xs, ys), (px, py) = elements, picks
            return [[emit(prim, xs[i], ys[j], **params) for i, j in zip(px, py)]]
        return [[emit(prim, *(els[p[k]] for els, p in zip(elements, picks)), **params)
                 for k in range(len(picks[0]))]]

    return rule


def movement_rule(prim: Primitive) -> Callable[..., list[list[Atom]] | None]:
    """The unroll rule of a primitive that moves elements (reshape, transpose,
    broadcast_to, concatenate, getitem): its implementation, run on the
    operands' positions, says where each element of the result comes from
    (worked out once per avals and parameters). Operands of another dtype than
    the result's (a concatenation that promotes) are cast, not moved: no rule then."""
    moves: dict[Any, list[int] | None] = {}

    def move(avals: list[ShapedArray], params: dict[str, Any]) -> list[int] | None:
        dtype = prim.abstract_eval(*avals, **params).dtype
        if any(a.dtype != dtype for a in avals):
            return None
        offsets = np.cumsum([0, *(a.size for a in avals)]).tolist()
        moved = prim.impl(*(positions(a.shape) + start for a, start in zip(avals, offsets)), **params)
        return np.ravel(moved).tolist()

    def rule(elements: list[list[Atom]], avals: list[ShapedArray], emit: Emit,
             **params: Any) -> list[list[Atom]] | None:
        key: Any = (*avals, *params.items())
        try:
            hash(key)
        except TypeError:  # a slice (unhashable before Python 3.12) or an array in an index
            key = _key(key)
        picked = moves.get(key) if key is not None else None
        if picked is None:
            picked = move(avals, params)
            if key is not None:
                if len(moves) > 4096:
                    moves.clear()
                moves[key] = picked
        if picked is None:
            return None
        flat = elements[0] if len(elements) == 1 else [e for els in elements for e in els]
        return [[flat[k] for k in picked]]

    return rule


def _key(value: Any) -> Any:
    """`value` as a dict key (slices as tuples: unhashable before Python 3.12),
    or None when it holds an array."""
    if isinstance(value, tuple):
        parts = tuple(_key(v) for v in value)
        if any(p is None and v is not None for p, v in zip(parts, value)):
            return None
        return (type(value), parts)
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, np.ndarray):
        return None
    try:
        hash(value)
    except TypeError:
        return None
    return value


def unroll_small_arrays(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with its equations on small arrays of known elements written on
    the elements (see the module docstring); `closed` itself when there are none.

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda a, b: fnp.sum(fnp.exp(fnp.stack([a, b])))
    >>> print(unroll_small_arrays(fgrad.make_jaxpr(f)(1.0, 2.0)))
    { lambda ; a:f64[] b:f64[]. let
        c:f64[] = exp a
        d:f64[] = exp b
        e:f64[] = add 0.0:f64[] c
        f:f64[] = add e d
      in (f,) }
    """
    jaxpr = closed.jaxpr
    if not any(e.primitive in unroll_rules for e in jaxpr.eqns):
        return closed
    elements: dict[Any, list[Atom]] = {}
    for v, c in zip(jaxpr.constvars, closed.consts):
        if _unrollable(v.aval) and type(c) is np.ndarray:
            elements[v] = [Literal(x, ShapedArray((), c.dtype)) for x in c.ravel()]
    env: dict[Any, Atom] = {}  # 0-d results that are an element of some array
    eqns: list[JaxprEqn] = []

    def emit(prim: Primitive, *atoms: Atom, **params: Any) -> Atom:
        avals = [a.aval for a in atoms]
        out = Var(prim.abstract_eval(*avals, **params) if params else prim.abstract_eval(*avals))
        eqns.append(JaxprEqn(prim, list(atoms), [out], params, source))
        return out

    changed = False
    for eqn in jaxpr.eqns:
        invars = eqn.invars
        if env and not env.keys().isdisjoint(invars):
            invars = [env.get(a, a) for a in invars]
            eqn = JaxprEqn(eqn.primitive, invars, eqn.outvars, eqn.params, eqn.source)
        results = eqn.outvars
        if len(results) == 1 and not results[0].aval.shape and elements.keys().isdisjoint(invars):
            eqns.append(eqn)  # a 0-d result of no array of known elements (most equations)
            continue
        rule = unroll_rules.get(eqn.primitive)
        if rule is None or not _worth_unrolling(invars, results):
            eqns.append(eqn)
            continue
        ins = [elements.get(a) if a.aval.shape else [a] for a in invars]
        if None in ins:
            eqns.append(eqn)
            continue
        source = eqn.source
        start = len(eqns)
        outs = rule(ins, [a.aval for a in invars], emit, **eqn.params)
        if outs is None or not all(
            len(els) == v.aval.size and (not els or els[0].aval.dtype == v.aval.dtype)
        for v, els in zip(eqn.outvars, outs)
        ):
            del eqns[start:]
            eqns.append(eqn)
            continue
        changed = changed or len(eqns) > start
        array = False
        for v, els in zip(eqn.outvars, outs):
            if v.aval.shape:
                elements[v] = [_typed(e, v.aval) for e in els]
                array = True
            else:
                env[v] = _typed(els[0], v.aval)
                changed = True
        if array:
            eqns.append(eqn)  # for uses that need the array (DCE drops it otherwise)
    if not changed:
        return closed
    outvars = [env.get(a, a) for a in jaxpr.outvars]
    new = ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns), closed.consts)
    return passes.dce_closed_jaxpr(new)


def _unrollable(aval: ShapedArray) -> bool:
    found = _unrollable_avals.get(aval)
    if found is None:
        found = _unrollable_avals[aval] = aval.dtype in UNROLLED_DTYPES and aval.size <= UNROLL_SIZE
    return found


# Cache of _unrollable: avals are interned, one per shape and dtype a program uses.
_unrollable_avals: dict[ShapedArray, bool] = {}


def _worth_unrolling(invars: list[Atom], outvars: list[Var]) -> bool:
    """An equation with a small array among its operands or results (all of
    dtypes held as Python numbers): 0-d values alone are written as they are."""
    array = False
    for atoms in (invars, outvars):
        for a in atoms:
            aval = a.aval
            if aval.shape:
                if not _unrollable(aval):
                    return False
                array = True
            elif aval.dtype not in UNROLLED_DTYPES:
                return False
    return array


def _typed(element: Atom, aval: ShapedArray) -> Atom:
    """An element of an array of `aval`: a Python number written in the jaxpr
    (weakly typed) becomes a number of the array's dtype."""
    if type(element) is Literal and element.aval.weak_type:
        return Literal(aval.dtype.type(element.val), ShapedArray((), aval.dtype))
    return element
