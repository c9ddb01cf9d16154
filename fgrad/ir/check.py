"""The type checker of jaxprs: a jaxpr that passes is well formed.

Every variable is bound once, before it is used; each equation's output avals
are what its primitive's abstract evaluation gives for its input avals; sub-
jaxprs held in parameters are checked in turn. Tests run it over the jaxprs
they stage, so that a rule building a malformed jaxpr fails where it is built,
not later where it is run.
"""

from __future__ import annotations

from typing import Any

from ..core.avals import ShapedArray
from .jaxpr import ClosedJaxpr, Jaxpr, Literal, Var, _Namer, pp_eqn

__all__ = ["JaxprTypeError", "check_jaxpr"]


class JaxprTypeError(TypeError):
    """A jaxpr is malformed: a variable used before it is bound, bound twice, or of the wrong aval."""


def _same(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Raise JaxprTypeError, naming the equation, if `jaxpr` is malformed.

    >>> import fgrad, fgrad.numpy as fnp
    >>> check_jaxpr(fgrad.make_jaxpr(fnp.sin)(1.0))
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise JaxprTypeError(
                f"a closed jaxpr has {len(jaxpr.jaxpr.constvars)} constant variables but "
                f"{len(jaxpr.consts)} constants"
            )
        jaxpr = jaxpr.jaxpr
    names = _Namer()
    bound: set[Var] = set()

    def bind(v: Var, where: str) -> None:
        if v in bound:
            raise JaxprTypeError(f"variable {names(v)} is bound twice ({where})")
        bound.add(v)

    def read(a: Any, where: str) -> ShapedArray:
        if isinstance(a, Literal):
            return a.aval
        if a not in bound:
            raise JaxprTypeError(f"variable {names(a)} is used before it is bound ({where})")
        return a.aval

    for v in jaxpr.constvars:
        bind(v, "a constant")
    for v in jaxpr.invars:
        bind(v, "an input")
    for eqn in jaxpr.eqns:
        where = f"in `{pp_eqn(eqn, names)}`"
        in_avals = [read(a, where) for a in eqn.invars]
        for p in eqn.params.values():
            if isinstance(p, (Jaxpr, ClosedJaxpr)):
                check_jaxpr(p)
        expected = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        expected = list(expected) if eqn.primitive.multiple_results else [expected]
        if len(expected) != len(eqn.outvars) or not all(
            _same(v.aval, e) for v, e in zip(eqn.outvars, expected)
        ):
            got = ", ".join(v.aval.str_short() for v in eqn.outvars)
            want = ", ".join(e.str_short() for e in expected)
            raise JaxprTypeError(
                f"the outputs of `{eqn.primitive.name}` are typed ({got}), but its abstract "
                f"evaluation gives ({want}) for inputs "
                f"({', '.join(a.str_short() for a in in_avals)}) {where}"
            )
        for v in eqn.outvars:
            bind(v, where)
    for a in jaxpr.outvars:
        read(a, "an output")
