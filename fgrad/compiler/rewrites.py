"""The algebraic rewrites jit makes, each about the primitives it names
(imported, so that renaming one cannot turn a rewrite off silently):
`simplify_jaxpr` (identities of arithmetic, negations moved out of the way),
`identity_products` (products by an identity matrix), `summed_products`
(sums of many products as one product of stacks) and `sliced_products`
(products of a matrix's slices as one product). The passes that know no
primitive (DCE, CSE, folding, liveness) are in `fgrad/ir/passes.py`.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.libraries import is_library_array
from ..core.trace import Primitive
from ..ir.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Var, sub_jaxprs
from ..ir.passes import has_effects, rebuilt, renamed
from ..primitives.elementwise import (
    add_p,
    convert_element_type_p,
    div_p,
    integer_pow_p,
    mul_p,
    neg_p,
    square_p,
    sub_p,
)
from ..primitives.indexing import getitem_p
from ..primitives.linalg import matmul_p
from ..primitives.reductions import reduce_sum_p
from ..primitives.shapes import broadcast_to_p, concatenate_p, reshape_p, transpose_p

__all__ = ["simplify_jaxpr", "identity_products", "summed_products", "sliced_products", "SUM_MIN_TERMS",
           "STACK_MAX_ELEMENTS"]


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
        if env and not env.keys().isdisjoint(eqn.invars):  # (renamed's test, without its call)
            eqn = renamed(eqn, env)
        prim = eqn.primitive
        rewrite = None
        ins = eqn.invars
        if (prim in _ARITHMETIC and len(ins) == 2 and type(ins[0]) is Var is type(ins[1])
                and producer.keys().isdisjoint(ins) and uniform.keys().isdisjoint(ins)):
            pass  # most equations: arithmetic on variables that are neither negations nor uniform
        elif prim in _SIMPLIFIED and not has_effects(eqn):
            rewrite = _simplified(eqn, uniform, producer)
            if rewrite is None and prim is mul_p and not producer.keys().isdisjoint(eqn.invars):
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
        prim = new.primitive
        if prim is neg_p:
            producer[new.outvars[0]] = new
        elif prim is broadcast_to_p:
            value = _uniform_value(new.invars[0], uniform)
            if value is not None:
                uniform[new.outvars[0]] = value
    for out in closed.jaxpr.outvars:
        if type(out) is Var and out in pending:
            _restore(out, env, pending, eqns, producer)
    changed = changed or bool(pending)  # those still pending are gone
    return rebuilt(closed, eqns, env) if changed else closed


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
    while dropped and not _same_avals(renamed(eqn, env), eqn.outvars):
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
    if eqn.primitive is neg_p:
        producer[v] = eqn


_ARITHMETIC = frozenset({mul_p, div_p, add_p, sub_p})
#: The primitives `_simplified` and `_negation_pushed_out` rewrite.
_SIMPLIFIED = frozenset({mul_p, div_p, add_p, sub_p, neg_p, convert_element_type_p, broadcast_to_p, reshape_p,
                         integer_pow_p})


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
    if inner is None or inner.primitive is not neg_p or inner.invars[0].aval is not inner.outvars[0].aval:
        return None
    return inner.invars[0]


def _negation_pushed_out(
    eqn: JaxprEqn, producer: dict[Var, JaxprEqn], uses: dict[Var, int]
) -> list[JaxprEqn] | None:
    """`mul (neg a) b` (or `mul b (neg a)`) as `t = mul a b; neg t`, when the
    negation is read there only and the dtype is inexact (None otherwise)."""
    if eqn.primitive is not mul_p or len(eqn.invars) != 2 or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0]
    if out.aval.dtype.kind not in "fc":
        return None
    for k, x in enumerate(eqn.invars):
        a = _negated(x, producer)
        if a is not None and type(x) is Var and uses.get(x) == 1:
            ins = list(eqn.invars)
            ins[k] = a
            t = Var(out.aval)
            return [JaxprEqn(eqn.primitive, ins, [t], eqn.params, eqn.source),
                    JaxprEqn(neg_p, [t], [out], {}, eqn.source)]
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
    prim, ins = eqn.primitive, eqn.invars
    if eqn.primitive.multiple_results or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0].aval
    candidates: list[Atom] = []
    if len(ins) == 2 and prim in _ARITHMETIC:
        x, y = ins
        vx, vy = _uniform_value(x, uniform), _uniform_value(y, uniform)
        numbers = vx is not None or vy is not None  # (most operands are neither literals nor uniform)
        if prim is mul_p:
            if numbers:
                candidates = [a for a, other in ((x, vy), (y, vx)) if _equals(other, 1)]
                if not candidates and out.dtype.kind in "ifc":
                    for a, other in ((x, vy), (y, vx)):
                        if a.aval is out and _equals(other, -1):
                            return JaxprEqn(neg_p, [a], eqn.outvars, {}, eqn.source)
        elif prim is div_p:
            if _equals(vy, 1):
                candidates = [x]
        elif prim is add_p:
            if numbers:
                candidates = [a for a, other in ((x, vy), (y, vx)) if _equals(other, 0)]
            if not candidates and out.dtype.kind in "fc" and (x in producer or y in producer):
                for a, b in ((x, y), (y, x)):
                    negated = _negated(b, producer)
                    if negated is not None:
                        return JaxprEqn(sub_p, [a, negated], eqn.outvars, {}, eqn.source)
        elif _equals(vy, 0):  # sub
            candidates = [x]
        elif out.dtype.kind in "fc" and y in producer:
            negated = _negated(y, producer)
            if negated is not None:
                return JaxprEqn(add_p, [x, negated], eqn.outvars, {}, eqn.source)
    elif prim is neg_p and len(ins) == 1 and type(ins[0]) is Var:
        inner = producer.get(ins[0])
        if inner is not None and inner.primitive is neg_p and not has_effects(inner):
            candidates = [inner.invars[0]]
    elif (prim in (convert_element_type_p, broadcast_to_p, reshape_p) and len(ins) == 1
          or prim is integer_pow_p and eqn.params.get("y") == 1):
        candidates = [ins[0]]  # an identity where the result has the operand's aval
    elif prim is integer_pow_p and eqn.params.get("y") == 2 and ins[0].aval is out:  # x * x: twice as fast
        return JaxprEqn(square_p, list(ins), eqn.outvars, {}, eqn.source)
    for a in candidates:
        if a.aval is out:  # avals are interned: the same shape, dtype and weak type
            return a
    for a in candidates:
        if a.aval is not out and a.aval.weak_type and a.aval.strip_weak_type() is out:
            return a  # weak where the result is not: simplify_jaxpr checks each use
    return None


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

    >>> from fgrad.ir.passes import dce_closed_jaxpr
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
    env: dict[Var, Atom] = {}
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        eqn = renamed(eqn, env)
        prim, ins = eqn.primitive, eqn.invars
        if has_effects(eqn) or len(eqn.outvars) != 1 or len(ins) not in (1, 2):
            eqns.append(eqn)
            continue
        out = eqn.outvars[0]
        known: list[Any] = [diagonal.get(a) if type(a) is Var else None for a in ins]
        if prim is transpose_p and known[0] is not None:
            diagonal[out] = known[0]
        elif prim is mul_p and len(ins) == 2 and sum(k is not None for k in known) == 1:
            d = 0 if known[0] is not None else 1
            matrix, v, before = ins[d], ins[1 - d], known[d]
            n = matrix.aval.shape[0]
            if out.aval is matrix.aval and v.aval.shape in ((n,), ()) and _same_inexact(matrix, v):
                if before is _IDENTITY:
                    diagonal[out] = v
                else:
                    product = Var(mul_p.abstract_eval(before.aval, v.aval))
                    eqns.append(JaxprEqn(mul_p, [before, v], [product], {}, eqn.source))
                    diagonal[out] = product
        elif prim is matmul_p and len(ins) == 2 and sum(k is not None for k in known) == 1:
            d = 0 if known[0] is not None else 1
            C, w = ins[1 - d], known[d]
            if _same_inexact(ins[d], C) and C.aval.ndim in (1, 2):
                if w is _IDENTITY:
                    if C.aval is out.aval:
                        env[out] = C
                        changed = True
                        continue
                elif d == 0 and C.aval.ndim == 2 and w.aval.ndim == 1:
                    column = Var(reshape_p.abstract_eval(w.aval, new_shape=(w.aval.shape[0], 1)))
                    reshaped = {"new_shape": (w.aval.shape[0], 1)}
                    new = [JaxprEqn(reshape_p, [w], [column], reshaped, eqn.source),
                           JaxprEqn(mul_p, [column, C], [out], {}, eqn.source)]
                    if mul_p.abstract_eval(column.aval, C.aval) is out.aval:
                        eqns.extend(new)
                        changed = True
                        continue
                elif mul_p.abstract_eval(C.aval, w.aval) is out.aval:  # C @ D, or D @ a vector
                    eqns.append(JaxprEqn(mul_p, [C, w], [out], {}, eqn.source))
                    changed = True
                    continue
        eqns.append(eqn)
    return rebuilt(closed, eqns, env) if changed else closed


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

    >>> from fgrad.ir.passes import dce_closed_jaxpr
    >>> f = lambda h, g: h[0].T @ g[0] + h[1].T @ g[1] + h[2].T @ g[2] + h[3].T @ g[3]
    >>> closed = fgrad.make_jaxpr(f)(np.ones((4, 2, 3)), np.ones((4, 2, 3)))
    >>> [e.primitive.name for e in dce_closed_jaxpr(summed_products(closed)).eqns][-4:]
    ['concatenate', 'concatenate', 'transpose', 'matmul']
    """
    eqns = closed.jaxpr.eqns
    used = {e.primitive for e in eqns}
    if add_p not in used or not used & {matmul_p, reduce_sum_p}:
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
        if e is None or e.primitive is not add_p or uses[a] != 1 or a.aval != aval or has_effects(e):
            return None
        return e

    linked = {a for e in eqns if e.primitive is add_p
              for a in e.invars if inner(a, e.outvars[0].aval) is not None}
    new_eqns: list[JaxprEqn] = []
    changed = False
    for eqn in eqns:
        out = eqn.outvars[0] if eqn.outvars else None
        if eqn.primitive is not add_p or out in linked or has_effects(eqn):
            new_eqns.append(eqn)
            continue
        rewritten = _stacked_sum(eqn, inner, producer, uses)
        if rewritten is None:
            new_eqns.append(eqn)
        else:
            new_eqns.extend(rewritten)
            changed = True
    return rebuilt(closed, new_eqns, {}) if changed else closed


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
    prim = e.primitive
    if prim is reduce_sum_p and tuple(e.params["axes"]) == (0,) and type(e.invars[0]) is Var:
        g = e.invars[0]
        if g.aval.dtype == a.aval.dtype:
            return ("sum", g.aval), (g,), 0
        return None
    if prim is not matmul_p or any(type(x) is not Var or x.aval.ndim != 2 or x.aval.dtype != a.aval.dtype
                               for x in e.invars):
        return None
    left, right = e.invars
    for side, axis in ((0, 0), (1, 1)):
        t = producer.get(e.invars[side])  # type: ignore[arg-type]  # a Var: checked above
        if t is not None and t.primitive is transpose_p and tuple(t.params["axes"]) == (1, 0):
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
    if not stackable:
        return None
    stacked_terms = {id(m[0]) for members in stackable for m in members}
    new: list[JaxprEqn] = []

    def emit(prim: Primitive, ins: Sequence[Atom], **params: Any) -> Var:
        out = Var(prim.abstract_eval(*[a.aval for a in ins], **params))
        new.append(JaxprEqn(prim, list(ins), [out], params, root.source))
        return out

    results: list[Atom] = [a for a in terms if id(a) not in stacked_terms]
    for members in stackable:
        term, operands, axis = members[0]
        summed = producer[term].primitive is reduce_sum_p  # type: ignore[index]
        stacked = [emit(concatenate_p, [m[1][i] for m in members], axis=axis) for i in range(len(operands))]
        if summed:
            results.append(emit(reduce_sum_p, stacked, axes=(0,)))
        else:
            stacked[axis] = emit(transpose_p, [stacked[axis]], axes=(1, 0))
            results.append(emit(matmul_p, stacked))
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

    >>> from fgrad.ir.passes import dce_closed_jaxpr
    >>> f = lambda xs, U: [x @ U for x in xs]
    >>> closed = fgrad.make_jaxpr(f)(np.ones((4, 2, 3)), np.ones((3, 5)))
    >>> print(sorted({e.primitive.name for e in dce_closed_jaxpr(sliced_products(closed)).eqns}))
    ['getitem', 'matmul', 'reshape']
    """
    eqns = closed.jaxpr.eqns
    if not any(e.primitive is matmul_p for e in eqns):
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
    for (x, r), members in groups.items():
        count = x.aval.shape[0]
        if (len({i for i, _ in members}) < max(SUM_MIN_TERMS, count / 2)
                or count * r.aval.shape[1] * math.prod(x.aval.shape[1:-1]) > STACK_MAX_ELEMENTS):
            continue
        first = members[0][1]
        new: list[JaxprEqn] = []

        def emit(prim: Primitive, ins: Sequence[Atom], **params: Any) -> Var:
            out = Var(prim.abstract_eval(*[a.aval for a in ins], **params))
            new.append(JaxprEqn(prim, list(ins), [out], params, first.source))
            return out

        rows = x if x.aval.ndim == 2 else emit(
            reshape_p, [x], new_shape=(x.aval.size // x.aval.shape[-1], x.aval.shape[-1]))
        product = emit(matmul_p, [rows, r])
        if x.aval.ndim != 2:
            product = emit(reshape_p, [product], new_shape=(*x.aval.shape[:-1], r.aval.shape[1]))
        hoisted[id(first)] = new
        idx_of = type(producer[first.invars[0]].params["idx"])  # type: ignore[index]
        for i, e in members:
            replaced[id(e)] = JaxprEqn(getitem_p, [product], list(e.outvars),
                                       {"idx": idx_of((i,))}, e.source)
    if not replaced:
        return closed
    out_eqns: list[JaxprEqn] = []
    for e in eqns:
        out_eqns.extend(hoisted.get(id(e), ()))
        out_eqns.append(replaced.get(id(e), e))
    return rebuilt(closed, out_eqns, {})


def _sliced_operand(e: JaxprEqn, producer: dict[Var, JaxprEqn]) -> int | None:
    """i, when `e` is `matmul x[i] R` for a matrix R of x's inexact dtype."""
    if e.primitive is not matmul_p or has_effects(e):
        return None
    left, right = e.invars
    g = producer.get(left) if type(left) is Var else None
    if (g is None or g.primitive is not getitem_p or type(right) is not Var or right.aval.ndim != 2
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
