"""The jaxpr: a typed, printable, evaluable record of a traced function.

A `Jaxpr` has constant variables (arrays it closed over), input variables, a
list of equations `outvars = primitive[params] invars`, and output atoms. An
atom is a `Var` or a `Literal` (a scalar written inline). A `ClosedJaxpr`
pairs a jaxpr with the values of its constants.

The printed form is JAX's:

    { lambda ; a:f64[3]. let b:f64[3] = sin a in (b,) }

This module defines the data and its text; building jaxprs is `staging.py`,
running them is `evaluate.py`, rewriting them is `passes.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, get_aval
from ..core.trace import Primitive

__all__ = ["Var", "Literal", "Atom", "JaxprEqn", "Jaxpr", "ClosedJaxpr", "pp_jaxpr", "sub_jaxprs"]


class Var:
    """A variable of a jaxpr; identity is its name (names are given when printing)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in the jaxpr."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray | None = None) -> None:
        self.val = val
        self.aval = get_aval(val) if aval is None else aval

    def __repr__(self) -> str:
        return f"Literal({self.val!r})"


Atom = Var | Literal


class JaxprEqn:
    """One equation: `outvars = primitive[params] invars`. `source` names the
    primitive whose derivative produced it, in a linear jaxpr (for messages)."""

    __slots__ = ("primitive", "invars", "outvars", "params", "source")

    def __init__(
        self, primitive: Primitive, invars: list[Atom], outvars: list[Var], params: dict[str, Any],
        source: str | None = None,
    ) -> None:
        self.primitive = primitive
        self.invars = invars
        self.outvars = outvars
        self.params = params
        self.source = source

    def __repr__(self) -> str:
        return pp_eqn(self, _Namer())


class Jaxpr:
    """A function as a list of equations over variables."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "__weakref__")

    def __init__(
        self,
        constvars: list[Var],
        invars: list[Var],
        outvars: list[Atom],
        eqns: list[JaxprEqn],
    ) -> None:
        self.constvars = constvars
        self.invars = invars
        self.outvars = outvars
        self.eqns = eqns

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constant variables.

    >>> import fgrad, fgrad.numpy as fnp
    >>> print(fgrad.make_jaxpr(fnp.sin)(1.0))
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    """

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]) -> None:
        self.jaxpr = jaxpr
        self.consts = list(consts)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list[JaxprEqn]:
        return self.jaxpr.eqns

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


def sub_jaxprs(eqn: JaxprEqn) -> list[tuple[str, Jaxpr | ClosedJaxpr]]:
    """The jaxprs an equation holds in its parameters (a higher-order
    primitive's), directly or in a tuple or list (the branches of a cond),
    with the name of the parameter each is in."""
    out: list[tuple[str, Jaxpr | ClosedJaxpr]] = []
    for k, p in eqn.params.items():
        if isinstance(p, (Jaxpr, ClosedJaxpr)):
            out.append((k, p))
        elif isinstance(p, (tuple, list)):
            out.extend((k, q) for q in p if isinstance(q, (Jaxpr, ClosedJaxpr)))
    return out


# ----------------------------------------------------------------------------
# Printing


class _Namer:
    """Names variables a, b, ..., z, ba, bb, ... in order of first appearance."""

    def __init__(self) -> None:
        self.names: dict[Var, str] = {}

    def __call__(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            n = len(self.names)
            name = ""
            while True:
                n, r = divmod(n, 26)
                name = chr(ord("a") + r) + name
                if n == 0:
                    break
            self.names[v] = name
        return name


def _pp_literal(lit: Literal) -> str:
    val = lit.val
    if isinstance(val, np.ndarray):
        val = val[()] if val.ndim == 0 else val
    if isinstance(val, np.generic):
        val = val.item()
    if lit.aval.weak_type:  # a Python scalar: its dtype is the other operand's
        return repr(val)
    return f"{val!r}:{lit.aval.str_short()}"


def _pp_atom(a: Atom, name: _Namer) -> str:
    return _pp_literal(a) if isinstance(a, Literal) else name(a)


def _pp_binder(v: Var, name: _Namer) -> str:
    return f"{name(v)}:{v.aval.str_short()}"


def _pp_param(value: Any) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, (Jaxpr, ClosedJaxpr)):  # a sub-jaxpr: indented under its equation
        return str(value).replace("\n", "\n    ")
    if isinstance(value, tuple) and value and all(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
        return "(" + " ".join(_pp_param(v) for v in value) + ")"  # a cond's branches
    return str(value)


def pp_eqn(eqn: JaxprEqn, name: _Namer) -> str:
    lhs = " ".join(_pp_binder(v, name) for v in eqn.outvars)
    params = ""
    if eqn.params:  # a call's name first, then its jaxpr, as JAX prints them
        items = sorted(eqn.params.items(), key=lambda kv: kv[0] != "name")
        params = "[" + " ".join(f"{k}={_pp_param(v)}" for k, v in items) + "]"
    args = " ".join(_pp_atom(a, name) for a in eqn.invars)
    rhs = f"{eqn.primitive.name}{params} {args}".rstrip()
    return f"{lhs} = {rhs}" if lhs else rhs


def pp_jaxpr(jaxpr: Jaxpr, width: int = 80) -> str:
    """JAX's text for a jaxpr: one line if it fits in `width` columns, else one
    equation per line."""
    name = _Namer()
    consts = " ".join(_pp_binder(v, name) for v in jaxpr.constvars)
    ins = " ".join(_pp_binder(v, name) for v in jaxpr.invars)
    eqns = [pp_eqn(e, name) for e in jaxpr.eqns]
    outs = "(" + ", ".join(_pp_atom(a, name) for a in jaxpr.outvars)
    outs += ",)" if len(jaxpr.outvars) == 1 else ")"
    head = f"{{ lambda {consts}; {ins}. let"
    one_line = " ".join([head, *eqns, "in", outs, "}"])
    if len(one_line) <= width and "\n" not in one_line:
        return one_line
    body = "".join(f"\n    {e}" for e in eqns)
    return f"{head}{body}\n  in {outs} }}"
