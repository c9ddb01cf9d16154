"""Code generation: a jaxpr as one Python function that calls NumPy directly.

The function's source has one line per equation, `c = f3(a, b)`, where `f3` is
the primitive's implementation: no tracer, no `bind`, no rule lookup when it
runs. Constants, literals, implementations and parameters reach it as globals
of its own namespace, named by fgrad (`v3`, `k0`, `f2`, `p2`), never from user
strings. A value is deleted after its last use (liveness), as `eval_jaxpr`
releases it. The source is compiled once per jaxpr and cached.

A primitive is emitted as a call of its implementation, unless its module
gives an emit rule (`core.rules.emit_rules`), an expression that computes the
same thing with less Python in between (`a * b` for mul). Rules that write
into a dead input's buffer will plug in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.rules import emit_rules
from .cache import cached_per_jaxpr
from .jaxpr import ClosedJaxpr, Literal, Var
from .passes import last_uses

__all__ = ["compile_jaxpr", "CompiledJaxpr"]


class CompiledJaxpr:
    """A jaxpr turned into a Python function: call it with the jaxpr's inputs
    (its constants are built in) for the list of its outputs; `source` is the
    text it was compiled from."""

    __slots__ = ("fun", "source")

    def __init__(self, fun: Callable[..., list[Any]], source: str) -> None:
        self.fun = fun
        self.source = source

    def __call__(self, *args: Any) -> list[Any]:
        return self.fun(*args)

    def __repr__(self) -> str:
        return self.source


@cached_per_jaxpr
def compile_jaxpr(closed: ClosedJaxpr) -> CompiledJaxpr:
    """`closed` as generated Python code (cached per jaxpr).

    >>> import fgrad, fgrad.numpy as fnp
    >>> compiled = compile_jaxpr(fgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0))
    >>> compiled(0.5)
    [np.float64(0.958851077208406)]
    >>> print(compiled.source)
    def jitted(v0):
        v1 = f0(v0)
        del v0
        v2 = v1 * k0
        del v1
        return [v2]
    """
    jaxpr = closed.jaxpr
    namespace: dict[str, Any] = {}
    names: dict[Var, str] = {}

    def name(v: Var) -> str:
        found = names.get(v)
        if found is None:
            found = names[v] = f"v{len(names)}"
        return found

    counts: dict[str, int] = {}
    seen: dict[tuple[str, int], str] = {}

    def glob(prefix: str, value: Any) -> str:
        """A global of the generated code holding `value` (one per object)."""
        key = seen.get((prefix, id(value)))
        if key is None:
            n = counts.get(prefix, 0)
            counts[prefix] = n + 1
            key = seen[(prefix, id(value))] = f"{prefix}{n}"
            namespace[key] = value
        return key

    for v, c in zip(jaxpr.constvars, closed.consts):
        namespace[name(v)] = c
    def atom(a: Any) -> str:
        return glob("k", a.val) if type(a) is Literal else name(a)

    lines = [f"def jitted({', '.join(name(v) for v in jaxpr.invars)}):"]
    release = last_uses(jaxpr)
    constvars = set(jaxpr.constvars)
    for i, eqn in enumerate(jaxpr.eqns):
        args = [atom(a) for a in eqn.invars]
        rule = emit_rules.get(eqn.primitive)
        call = rule(args, [a.aval for a in eqn.invars], **eqn.params) if rule is not None else None
        if call is None:
            call = f"{glob('f', eqn.primitive.impl)}({', '.join(args)}"
            if eqn.params:
                call += (", " if eqn.invars else "") + f"**{glob('p', eqn.params)}"
            call += ")"
        if not eqn.primitive.multiple_results:
            lines.append(f"    {name(eqn.outvars[0])} = {call}")
        elif eqn.outvars:
            lines.append(f"    {', '.join(name(v) for v in eqn.outvars)}, = {call}")
        else:
            lines.append(f"    {call}")
        dead = [name(v) for v in release.get(i, ()) if v not in constvars]
        if dead:
            lines.append(f"    del {', '.join(dead)}")
    lines.append(f"    return [{', '.join(atom(a) for a in jaxpr.outvars)}]")
    source = "\n".join(lines)
    exec(compile(source, "<fgrad.jit>", "exec"), namespace)
    return CompiledJaxpr(namespace["jitted"], source)
