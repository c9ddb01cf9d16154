"""The type checker of jaxprs: a jaxpr that passes is well formed.

Every variable is bound once, before it is used; constants and literals have
the avals of their variables; each equation's output avals are what its
primitive's abstract evaluation gives for its input avals (a higher-order
primitive's abstract evaluation checks its operands against its sub-jaxpr);
sub-jaxprs held in parameters are checked in turn. Tests run it over the
jaxprs they stage, so that a rule building a malformed jaxpr fails where it is
built, not later where it is run.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ..core.avals import ShapedArray, get_aval
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, _Namer, pp_eqn, sub_jaxprs

__all__ = ["JaxprTypeError", "check_jaxpr", "check_operands"]


class JaxprTypeError(TypeError):
    """A jaxpr is malformed: a variable used before it is bound, bound twice, or of the wrong aval."""


def _same(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Raise JaxprTypeError, naming the equation, if `jaxpr` is malformed.

    A jaxpr that passed is not checked again (jaxprs never change once built):
    one nested in many places, as a checkpointed scan's segments are, costs
    one check, not one per place.

    >>> import fgrad, fgrad.numpy as fnp
    >>> check_jaxpr(fgrad.make_jaxpr(fnp.sin)(1.0))
    """
    with _lock:
        if jaxpr in _passed:
            return
    _check(jaxpr)
    with _lock:
        _passed.add(jaxpr)


_passed: weakref.WeakSet[Jaxpr | ClosedJaxpr] = weakref.WeakSet()
_lock = threading.Lock()


def _check(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    consts = None
    if isinstance(jaxpr, ClosedJaxpr):
        consts = jaxpr.consts
        jaxpr = jaxpr.jaxpr
        if len(consts) != len(jaxpr.constvars):
            raise JaxprTypeError(
                f"a closed jaxpr has {len(jaxpr.constvars)} constant variables but {len(consts)} constants"
            )
    bound: set[Var] = set()
    printed: list[_Namer] = []

    def namer() -> _Namer:
        """Names as the printed jaxpr gives them, worked out for a message only
        (printing is not free)."""
        if not printed:
            printed.append(_Namer())
            for v in [*jaxpr.constvars, *jaxpr.invars]:
                printed[0](v)
            for e in jaxpr.eqns:
                pp_eqn(e, printed[0])
        return printed[0]

    def names(v: Var) -> str:
        return namer()(v)

    def where(eqn: JaxprEqn) -> str:
        return f"in `{pp_eqn(eqn, namer())}`"

    def bind(v: Var, eqn: JaxprEqn | None, what: str) -> None:
        if v in bound:
            raise JaxprTypeError(f"variable {names(v)} is bound twice ({where(eqn) if eqn else what})")
        bound.add(v)

    def read(a: Any, eqn: JaxprEqn | None) -> ShapedArray:
        if isinstance(a, Literal):
            if not _same(get_aval(a.val), a.aval):
                raise JaxprTypeError(
                    f"the literal {a.val!r} is typed {a.aval.str_short()} but is a "
                    f"{get_aval(a.val).str_short()} ({where(eqn) if eqn else 'an output'})"
                )
            return a.aval
        if a not in bound:
            raise JaxprTypeError(
                f"variable {names(a)} is used before it is bound ({where(eqn) if eqn else 'an output'})"
            )
        return a.aval

    for i, v in enumerate(jaxpr.constvars):
        bind(v, None, "a constant")
        if consts is not None and not _same(get_aval(consts[i]), v.aval):
            raise JaxprTypeError(
                f"constant {names(v)} is typed {v.aval.str_short()} but its value is a "
                f"{get_aval(consts[i]).str_short()}"
            )
    for v in jaxpr.invars:
        bind(v, None, "an input")
    for eqn in jaxpr.eqns:
        in_avals = [read(a, eqn) for a in eqn.invars]
        for name, sub in sub_jaxprs(eqn):
            try:
                check_jaxpr(sub)
            except JaxprTypeError as e:
                raise JaxprTypeError(
                    f"{e}\n  in the parameter `{name}` of the equation `{pp_eqn(eqn, namer())}`"
                ) from None
        try:
            expected = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        except TypeError as e:
            raise JaxprTypeError(f"{e} ({where(eqn)})") from None
        expected = list(expected) if eqn.primitive.multiple_results else [expected]
        if len(expected) != len(eqn.outvars) or not all(
            _same(v.aval, e) for v, e in zip(eqn.outvars, expected)
        ):
            got = ", ".join(v.aval.str_short() for v in eqn.outvars)
            want = ", ".join(e.str_short() for e in expected)
            raise JaxprTypeError(
                f"the outputs of `{eqn.primitive.name}` are typed ({got}), but its abstract "
                f"evaluation gives ({want}) for inputs "
                f"({', '.join(a.str_short() for a in in_avals)}) {where(eqn)}"
            )
        for v in eqn.outvars:
            bind(v, eqn, "")
    for a in jaxpr.outvars:
        read(a, None)


def check_operands(primitive: str, avals: list[ShapedArray], jaxpr: ClosedJaxpr) -> None:
    """A higher-order primitive's operands have the avals its jaxpr takes
    (part of its abstract evaluation); a TypeError naming both otherwise."""
    if len(avals) != len(jaxpr.in_avals) or not all(_same(a, b) for a, b in zip(avals, jaxpr.in_avals)):
        raise TypeError(
            f"the operands of `{primitive}` are ({', '.join(a.str_short() for a in avals)}), but its "
            f"jaxpr takes ({', '.join(a.str_short() for a in jaxpr.in_avals)})"
        )
