"""Pictures of a computation: the graph of a jaxpr, with each variable's
forward value and the cotangent that reaches it in reverse mode.

`graph` traces a function (`make_jaxpr`), evaluates the jaxpr equation by
equation, keeping every value, and then runs a backward pass over the same
equations: each equation's vector-Jacobian product is its own reverse mode
(`linearize_flat`, then transpose), so the cotangents of the inputs are those
`fgrad.grad` returns. Sub-jaxprs of higher-order primitives (`jit`, `cond`,
loops, custom rules, `checkpoint`) are drawn as nested clusters, without
values: a loop's body runs many times; `collapse` draws such a call as one
node instead, so that a network written a `jit` per layer shows a box per layer.

A `Graph` is plain data. `to_dot` and `to_text` need nothing; `render` and
`_repr_svg_` need the `graphviz` package and Graphviz's `dot` program (the
optional extra `viz`), imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..api.arguments import check_float_inputs, fun_name, leaf_names, normalize_argnums, to_input, to_output
from ..api.pytree import PyTreeDef, tree_flatten
from ..api.transformations import _check_like, _check_scalar_output, _leaf_position, make_jaxpr
from ..core.avals import ShapedArray, get_aval, is_inexact_dtype
from ..core.optional import require
from ..core.trace import Tracer
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, _Namer
from ..transforms.reverse import linearize_flat

__all__ = ["graph", "Graph", "Node", "Cluster"]


@dataclass(frozen=True)
class Node:
    """One node of a `Graph`: an input, a constant, an equation or an output.

    `text` is the equation as the jaxpr writes it (`c = log a`); `value` is the
    forward value and `cotangent` the cotangent that reaches the node (a tuple
    for an equation with several outputs), None where not computed. `inner`
    says what a collapsed call stands for (`graph(..., collapse=...)`): its
    operands' and results' types and how many equations it holds.
    """

    id: str
    kind: str  # "input", "const", "equation" or "output"
    text: str
    type: str  # the avals, e.g. "f64[3]"
    outvars: tuple[str, ...] = ()
    value: Any = None
    cotangent: Any = None
    cluster: str | None = None
    inner: str | None = None

    def value_text(self) -> str | None:
        """The value as the picture shows it, or None."""
        return None if self.value is None else self._describe(self.value)

    def cotangent_text(self) -> str | None:
        """The cotangent as the picture shows it, or None."""
        return None if self.cotangent is None else self._describe(self.cotangent)

    def _describe(self, x: Any) -> str:
        if len(self.outvars) > 1:
            return ", ".join(f"{n}={'-' if v is None else summary(v)}" for n, v in zip(self.outvars, x))
        return summary(x)


@dataclass(frozen=True)
class Cluster:
    """A group of nodes: an equation with its sub-jaxprs (`jaxpr=False`, labelled
    with the primitive), or one sub-jaxpr (`jaxpr=True`, labelled with the
    parameter that holds it, e.g. `branches[1]`). `owner` is the equation's node."""

    id: str
    label: str
    parent: str | None
    jaxpr: bool
    owner: str


@dataclass(frozen=True)
class Graph:
    """The graph of a jaxpr: nodes (in the jaxpr's order), edges between node
    ids, clusters for sub-jaxprs, and the direction the picture goes (`rankdir`,
    see `graph`). Draw it with `to_dot`, `to_text` or `render`; in Jupyter it
    shows as SVG.

    >>> import fgrad, fgrad.numpy as fnp
    >>> g = fgrad.viz.graph(fnp.sin, 0.0)
    >>> [n.id for n in g.nodes], g.edges
    (['a', 'b', 'out0'], [('a', 'b'), ('b', 'out0')])
    """

    nodes: list[Node]
    edges: list[tuple[str, str]]
    clusters: list[Cluster]
    title: str
    rankdir: str = "LR"  # Graphviz's direction of the edges: "LR", "TB", "RL" or "BT"

    def node(self, id: str) -> Node:
        """The node with this id.

        >>> import fgrad, fgrad.numpy as fnp
        >>> fgrad.viz.graph(fnp.sin, 0.0).node("b").text
        'b = sin a'
        """
        for n in self.nodes:
            if n.id == id:
                return n
        raise KeyError(f"the graph has no node {id!r}; its nodes are {[n.id for n in self.nodes]}")

    # --- text -------------------------------------------------------------------

    def to_text(self) -> str:
        """One line per node, `b = log a   value 0.693   grad 0.5`, sub-jaxprs
        indented under a line naming them.

        >>> import fgrad, fgrad.numpy as fnp
        >>> print(fgrad.viz.graph(fnp.log, 2.0).to_text())
        a = input x       value 2       grad 0.5
        b = log a         value 0.693   grad 1
        out0 = output b   value 0.693   grad 1
        """
        clusters = {c.id: c for c in self.clusters}

        def depth(cid: str | None) -> int:
            d = 0
            while cid is not None:
                d += clusters[cid].jaxpr
                cid = clusters[cid].parent
            return d

        rows: list[tuple[str, str, str]] = []
        shown: set[str] = set()
        for n in self.nodes:
            # Name each sub-jaxpr before its first node (and its enclosing ones).
            chain, cid = [], n.cluster
            while cid is not None and cid not in shown:
                chain.append(cid)
                cid = clusters[cid].parent
            for cid in reversed(chain):
                shown.add(cid)
                c = clusters[cid]
                if c.jaxpr:
                    rows.append(("  " * (2 * depth(cid) - 1) + f"{c.label} of {c.owner}:", "", ""))
            value, ct = n.value_text(), n.cotangent_text()
            rows.append((
                "    " * depth(n.cluster) + n.text,
                n.type if value is None else "value " + value,
                "" if ct is None else "grad " + ct,
            ))
            if n.inner is not None:
                rows.append(("    " * depth(n.cluster) + "  ⋯ " + n.inner, "", ""))
        width0 = min(48, max((len(r[0]) for r in rows if r[1]), default=0))
        width1 = min(40, max((len(r[1]) for r in rows), default=0))
        lines = []
        for text, value, ct in rows:
            if not value:  # a sub-jaxpr's name
                lines.append(text)
                continue
            line = text.ljust(width0) + "   " + (value.ljust(width1) + "   " if width1 else "") + ct
            lines.append(line.rstrip())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<Graph of {self.title}: {len(self.nodes)} nodes, {len(self.edges)} edges>\n{self.to_text()}"

    # --- Graphviz -----------------------------------------------------------------

    def to_dot(self) -> str:
        """The graph as Graphviz DOT text (needs no Graphviz).

        >>> import fgrad, fgrad.numpy as fnp
        >>> '"a" -> "b";' in fgrad.viz.graph(fnp.sin, 0.0).to_dot()
        True
        """
        children: dict[str | None, list[str]] = {}
        for c in self.clusters:
            children.setdefault(c.parent, []).append(c.id)
        members: dict[str | None, list[Node]] = {}
        for n in self.nodes:
            members.setdefault(n.cluster, []).append(n)
        clusters = {c.id: c for c in self.clusters}

        lines = [
            f"digraph {_quote(self.title)} {{",
            f"  rankdir={self.rankdir};",
            f"  label={_quote(self.title)}; labelloc=t; fontname=\"Helvetica\";",
            '  node [fontname="Helvetica", fontsize=11, margin="0.12,0.06"];',
            '  edge [color="#555555", arrowsize=0.7];',
        ]

        def emit(cid: str | None, indent: str) -> None:
            for n in members.get(cid, []):
                lines.append(f"{indent}{_quote(n.id)} [{_node_style(n)}, label=<{_html_label(n)}>];")
            for sub in children.get(cid, []):
                c = clusters[sub]
                lines.append(f"{indent}subgraph {_quote(sub)} {{")
                style = _JAXPR_CLUSTER if c.jaxpr else _EQUATION_CLUSTER
                lines.append(f"{indent}  label={_quote(c.label)}; {style}; fontsize=10;")
                emit(sub, indent + "  ")
                lines.append(f"{indent}}}")

        emit(None, "  ")
        lines.extend(f"  {_quote(a)} -> {_quote(b)};" for a, b in self.edges)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def render(self, path: str | Path) -> Path:
        """Write the picture to `path` as SVG, PNG or PDF (by its suffix), through
        Graphviz's `dot`; returns the path. Needs the `graphviz` package and the
        `dot` program (`pip install fgrad[viz]`, `apt-get install graphviz`).
        """
        path = Path(path)
        fmt = path.suffix.lower().lstrip(".")
        if fmt not in ("svg", "png", "pdf"):
            raise ValueError(
                f"render writes .svg, .png or .pdf files, got {str(path)!r}; give a path with one of "
                "those suffixes, or use to_dot() for the DOT text"
            )
        path.write_bytes(self._pipe(fmt))
        return path

    def _repr_svg_(self) -> str | None:
        """The picture as SVG, for Jupyter; None (the text form is shown) when
        Graphviz is not installed."""
        try:
            return self._pipe("svg").decode("utf-8")
        except ImportError:
            return None

    def _pipe(self, fmt: str) -> bytes:
        gv = _graphviz()
        try:
            data: bytes = gv.Source(self.to_dot()).pipe(format=fmt)
        except gv.ExecutableNotFound as error:
            raise ImportError(
                f"fgrad.viz rendering needs Graphviz's `dot` program, which is not on PATH: install "
                f"Graphviz (e.g. `apt-get install graphviz` or `brew install graphviz`). {_NEEDS_NOTHING}"
            ) from error
        return data


_NEEDS_NOTHING = "Graph.to_dot() and Graph.to_text() work without it."


def _graphviz() -> ModuleType:
    try:
        return require("graphviz", "viz", "fgrad.viz rendering")
    except ImportError as error:
        raise ImportError(
            f"{error}, and Graphviz's `dot` program (e.g. `apt-get install graphviz` or "
            f"`brew install graphviz`). {_NEEDS_NOTHING}"
        ) from error


# ----------------------------------------------------------------------------
# How values are written


def _number(x: float) -> str:
    """A real number in 4-5 significant digits: 0.693, 10, 148.41, -137.72."""
    if not np.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e5 or a < 1e-4:
        return f"{x:.4g}"
    if a >= 1:
        return f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{x:.3g}"


def _scalar(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (complex, np.complexfloating)):
        sign = "-" if x.imag < 0 else "+"
        return f"{_number(float(x.real))}{sign}{_number(abs(float(x.imag)))}j"
    return _number(float(x))


def summary(x: Any) -> str:
    """A value as a node shows it: a scalar as a number, an array as its type
    and range.

    >>> summary(np.log(2.0)), summary(np.array([0.1, 0.5, 0.9]))
    ('0.693', 'f64[3] ∈ [0.1, 0.9]')
    """
    if isinstance(x, Tracer):
        return x.aval.str_short()
    arr = np.asarray(x)
    if arr.ndim == 0:
        return _scalar(arr[()])
    kind = get_aval(arr).str_short()
    if arr.size == 0:
        return kind
    if arr.dtype.kind == "c":
        arr, kind = np.abs(arr), kind + " |z|"
    if arr.dtype.kind == "b":
        return f"{kind} {int(arr.sum())} True"
    finite, note = arr, ""
    if arr.dtype.kind == "f":
        finite = arr[np.isfinite(arr)]
        note = (" has NaN" if np.isnan(arr).any() else "") + (" has inf" if np.isinf(arr).any() else "")
    if finite.size == 0:
        return kind + note
    lo, hi = finite.min(), finite.max()
    return (f"{kind} all {_scalar(lo)}" if lo == hi else f"{kind} ∈ [{_scalar(lo)}, {_scalar(hi)}]") + note


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _html(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_JAXPR_CLUSTER = 'style="rounded,dashed"; color="#9ca3af"'
_EQUATION_CLUSTER = 'style=rounded; color="#6b7280"'
_STYLES = {
    "input": 'shape=ellipse, style=filled, fillcolor="#dbeafe"',
    "const": 'shape=note, style=filled, fillcolor="#f3f4f6", fontsize=9',
    "equation": 'shape=box, style="rounded,filled", fillcolor="#ffffff"',
    "output": 'shape=ellipse, style=filled, fillcolor="#dcfce7", peripheries=2',
}
_COLLAPSED = 'shape=box3d, style=filled, fillcolor="#f9fafb", margin="0.16,0.1"'


def _node_style(n: Node) -> str:
    return _COLLAPSED if n.inner is not None else _STYLES[n.kind]


def _html_label(n: Node) -> str:
    parts = [_html(n.text)]
    if n.inner is not None:
        parts.append(f'<FONT POINT-SIZE="9" COLOR="#6b7280">{_html(n.inner)}</FONT>')
    value, ct = n.value_text(), n.cotangent_text()
    if value is None:
        parts.append(f'<FONT POINT-SIZE="9" COLOR="#6b7280">{_html(n.type)}</FONT>')
    else:
        parts.append(f'<FONT COLOR="#1d4ed8">value {_html(value)}</FONT>')
    if ct is not None:
        parts.append(f'<FONT COLOR="#b91c1c">grad {_html(ct)}</FONT>')
    return "<BR/>".join(parts)


# ----------------------------------------------------------------------------
# Building the graph


def _param_text(v: Any) -> str:
    s = v.name if isinstance(v, np.dtype) else str(v)
    return s if len(s) <= 24 else s[:23] + "…"


def _atom_text(a: Var | Literal, name: _Namer) -> str:
    if isinstance(a, Var):
        return name(a)
    val = a.val
    if isinstance(val, (np.ndarray, np.generic)):
        val = np.asarray(val)[()].item() if np.ndim(val) == 0 else val
    return _param_text(val)


def _is_jaxpr(v: Any) -> bool:
    return isinstance(v, (Jaxpr, ClosedJaxpr))


def _is_jaxpr_param(v: Any) -> bool:
    return _is_jaxpr(v) or (isinstance(v, (tuple, list)) and any(_is_jaxpr(q) for q in v))


def _sub_jaxprs(eqn: JaxprEqn) -> list[tuple[str, Jaxpr | ClosedJaxpr]]:
    """The jaxprs in an equation's parameters, each with its name: `jaxpr`,
    `branches[1]`."""
    out: list[tuple[str, Jaxpr | ClosedJaxpr]] = []
    for k, p in eqn.params.items():
        if _is_jaxpr(p):
            out.append((k, p))
        elif isinstance(p, (tuple, list)):
            out.extend((f"{k}[{i}]", q) for i, q in enumerate(p) if _is_jaxpr(q))
    return out


def _of(env: dict[Var, Any], outvars: list[Var]) -> Any:
    """An equation's entry in `env`: one value, a tuple of several (None where
    missing), or None."""
    if len(outvars) == 1:
        return env.get(outvars[0])
    return tuple(env.get(v) for v in outvars) if any(v in env for v in outvars) else None


def _eqn_text(eqn: JaxprEqn, name: _Namer) -> str:
    lhs = " ".join(name(v) for v in eqn.outvars)
    items = sorted(eqn.params.items(), key=lambda kv: kv[0] != "name")  # a call's name first, as printed
    params = [f"{k}={_param_text(v)}" for k, v in items if not _is_jaxpr_param(v)]
    head = eqn.primitive.name + (f"[{' '.join(params)}]" if params else "")
    rhs = " ".join([head, *(_atom_text(a, name) for a in eqn.invars)])
    return f"{lhs} = {rhs}" if lhs else rhs


def _call_names(eqn: JaxprEqn) -> set[str]:
    """The names `collapse` knows an equation by: its primitive's, and the
    function's it calls (the `name` parameter of `jit`, `checkpoint`, custom rules)."""
    fun = eqn.params.get("name")
    return {eqn.primitive.name, fun} if isinstance(fun, str) else {eqn.primitive.name}


def _calls(closed: ClosedJaxpr | Jaxpr) -> set[str]:
    """The names of every equation with sub-jaxprs in `closed`, at any depth."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    names: set[str] = set()
    for eqn in jaxpr.eqns:
        subs = _sub_jaxprs(eqn)
        if subs:
            names |= _call_names(eqn)
        for _, sub in subs:
            names |= _calls(sub)
    return names


def _count(closed: ClosedJaxpr | Jaxpr) -> int:
    """The number of equations in `closed`, those of its sub-jaxprs included."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    return len(jaxpr.eqns) + sum(_count(sub) for eqn in jaxpr.eqns for _, sub in _sub_jaxprs(eqn))


def _inner_text(eqn: JaxprEqn, subs: list[tuple[str, Jaxpr | ClosedJaxpr]]) -> str:
    """What a collapsed call stands for: `f64[16,4] f64[4,8] → f64[16,8], 3 equations`."""
    ins = [a.aval.str_short() for a in eqn.invars]
    if len(ins) > 4:
        ins = [*ins[:3], f"and {len(ins) - 3} more"]
    outs = [v.aval.str_short() for v in eqn.outvars]
    counts = [(label, _count(sub)) for label, sub in subs]
    if len(counts) == 1:
        size = f"{counts[0][1]} equation" + ("" if counts[0][1] == 1 else "s")
    else:
        size = "equations: " + ", ".join(f"{label} {n}" for label, n in counts)
    return f"{' '.join(ins) or '()'} → {' '.join(outs) or '()'}, {size}"


def _collapse_rule(collapse: Any, closed: ClosedJaxpr | Jaxpr) -> Callable[[JaxprEqn], bool]:
    """Which equations with sub-jaxprs `collapse` draws as one node."""
    if isinstance(collapse, bool):
        return lambda eqn: collapse
    names = {collapse} if isinstance(collapse, str) else collapse
    if not isinstance(names, (tuple, list, set, frozenset)) or not all(isinstance(n, str) for n in names):
        raise TypeError(
            f"collapse is True, False, or the names of the calls to draw as one node each (a primitive "
            f"such as 'jit' or 'scan', or a jit/checkpoint/custom rule's function name); got {collapse!r}"
        )
    calls = _calls(closed)
    missing = sorted(set(names) - calls)
    if missing:
        known = ", ".join(map(repr, sorted(calls))) if calls else "none: it has no equation with sub-jaxprs"
        raise ValueError(
            f"collapse names {', '.join(map(repr, missing))}, which no call in the graph is named; "
            f"the names its calls answer to are {known}"
        )
    wanted = set(names)
    return lambda eqn: bool(_call_names(eqn) & wanted)


class _Builder:
    """Walks a jaxpr (and its sub-jaxprs), making nodes, edges and clusters;
    an equation that `collapse` picks is one node, its sub-jaxprs not drawn."""

    def __init__(self, collapse: Callable[[JaxprEqn], bool] = lambda eqn: False) -> None:
        self.nodes: list[Node] = []
        self.edges: list[tuple[str, str]] = []
        self.clusters: list[Cluster] = []
        self.collapse = collapse

    def edge(self, a: str, b: str) -> None:
        if (a, b) not in self.edges:
            self.edges.append((a, b))

    def draw(
        self,
        closed: ClosedJaxpr | Jaxpr,
        prefix: str = "",
        cluster: str | None = None,
        input_names: Sequence[str] | None = None,
        values: dict[Var, Any] | None = None,
        cts: dict[Var, Any] | None = None,
        out_cts: Sequence[Any] | None = None,
    ) -> None:
        jaxpr, consts = (closed.jaxpr, closed.consts) if isinstance(closed, ClosedJaxpr) else (closed, None)
        values, cts = values or {}, cts or {}
        name = _Namer()  # the names the printed jaxpr gives
        node_of: dict[Var, str] = {}

        def add(n: Node) -> None:
            self.nodes.append(n)

        for i, v in enumerate(jaxpr.constvars):
            node_of[v] = prefix + name(v)
            value = consts[i] if consts is not None and i < len(consts) else None
            add(Node(node_of[v], "const", f"{name(v)} = const", v.aval.str_short(),
                     value=_shown(value), cluster=cluster))
        for i, v in enumerate(jaxpr.invars):
            node_of[v] = prefix + name(v)
            label = f" {input_names[i]}" if input_names else ""
            add(Node(node_of[v], "input", f"{name(v)} = input{label}", v.aval.str_short(),
                     value=_shown(values.get(v)), cotangent=_shown(cts.get(v)), cluster=cluster))
        for i, eqn in enumerate(jaxpr.eqns):
            outs = [name(v) for v in eqn.outvars]
            nid = prefix + (",".join(outs) if outs else f"eqn{i}")
            subs = _sub_jaxprs(eqn)
            own, inner = cluster, None
            if subs and self.collapse(eqn):  # one node standing for the call
                inner, subs = _inner_text(eqn, subs), []
            elif subs:  # the equation and its sub-jaxprs, together
                own = "cluster_" + nid
                self.clusters.append(Cluster(own, eqn.primitive.name, cluster, False, nid))
            add(Node(nid, "equation", _eqn_text(eqn, name), " ".join(v.aval.str_short() for v in eqn.outvars),
                     tuple(outs), _shown(_of(values, eqn.outvars)), _shown(_of(cts, eqn.outvars)), own,
                     inner))
            for a in eqn.invars:
                if isinstance(a, Var):
                    self.edge(node_of[a], nid)
            for v in eqn.outvars:
                node_of[v] = nid
            for label, sub in subs:
                sub_id = f"{own}/{label}"
                self.clusters.append(Cluster(sub_id, label, own, True, nid))
                self.draw(sub, f"{nid}/{label}/", sub_id)
        for i, a in enumerate(jaxpr.outvars):
            oid = f"{prefix}out{i}"
            text = f"out{i} = output {_atom_text(a, name)}"
            value = a.val if isinstance(a, Literal) else values.get(a)
            ct = out_cts[i] if out_cts is not None else None
            add(Node(oid, "output", text, a.aval.str_short(), value=_shown(value), cotangent=_shown(ct),
                     cluster=cluster))
            if isinstance(a, Var):
                self.edge(node_of[a], oid)


def _shown(x: Any) -> Any:
    """A value as the graph keeps it: leaving fgrad (NumPy), tuples entry by entry."""
    if x is None:
        return None
    if isinstance(x, tuple):
        return tuple(_shown(v) for v in x)
    return to_output(x)


def _forward(closed: ClosedJaxpr, args: Sequence[Any]) -> dict[Var, Any]:
    """Every variable's value, evaluating `closed` at `args` equation by equation."""
    jaxpr = closed.jaxpr
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        ins = [a.val if isinstance(a, Literal) else env[a] for a in eqn.invars]
        outs = eqn.primitive.bind(*ins, **eqn.params)
        env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return env


def _add(a: Any, b: Any) -> Any:
    return b if a is None else a + b


def _backward(
    closed: ClosedJaxpr, env: dict[Var, Any], wrt: Sequence[bool], out_cts: Sequence[Any], transform: str
) -> dict[Var, Any]:
    """The cotangent reaching every variable that depends on the inputs marked
    in `wrt` (zeros where none arrives): each equation's own vjp, from the
    last equation to the first."""
    jaxpr = closed.jaxpr
    active = {v for v, w in zip(jaxpr.invars, wrt) if w and is_inexact_dtype(v.aval.dtype)}
    for eqn in jaxpr.eqns:
        if any(isinstance(a, Var) and a in active for a in eqn.invars):
            active.update(v for v in eqn.outvars if is_inexact_dtype(v.aval.dtype))
    cts: dict[Var, Any] = {}
    for a, ct in zip(jaxpr.outvars, out_cts):
        if isinstance(a, Var) and a in active:
            cts[a] = _add(cts.get(a), ct)
    for eqn in reversed(jaxpr.eqns):
        ct_out = [cts.get(v) for v in eqn.outvars]
        linear = [i for i, a in enumerate(eqn.invars) if isinstance(a, Var) and a in active]
        if not linear or all(c is None for c in ct_out):
            continue
        ins = [a.val if isinstance(a, Literal) else env[a] for a in eqn.invars]
        fun = _applied(eqn, ins, linear)
        _, lin, _ = linearize_flat(fun, [ins[i] for i in linear], transform, keep=False)
        for i, c in zip(linear, lin.transpose(ct_out, consume=True)):
            v = eqn.invars[i]
            if c is not None and isinstance(v, Var):
                cts[v] = _add(cts.get(v), c)
    return {v: cts[v] if v in cts else _zeros(v.aval) for v in active}


def _applied(eqn: JaxprEqn, ins: list[Any], linear: list[int]) -> Callable[..., list[Any]]:
    """The equation as a function of its operands at `linear`, the others fixed to `ins`."""

    def apply(*xs: Any) -> list[Any]:
        full = list(ins)
        for i, x in zip(linear, xs):
            full[i] = x
        out = eqn.primitive.bind(*full, **eqn.params)
        return list(out) if eqn.primitive.multiple_results else [out]

    return apply


def _zeros(aval: ShapedArray) -> Any:
    return np.zeros(aval.shape, aval.dtype)[()]


def _seeds(fun: Callable[..., Any], outs: list[Any], out_tree: PyTreeDef, cotangent: Any) -> list[Any]:
    """The output cotangents: 1 for a scalar output, else `cotangent`, checked
    as grad and vjp check them."""
    avals = [get_aval(x).strip_weak_type() for x in outs]
    if cotangent is None:
        try:
            aval = _check_scalar_output(fun, out_tree, outs)
        except TypeError as error:
            raise TypeError(
                f"{error} Or give fgrad.viz.graph the output's cotangent: cotangent=..."
            ) from None
        return [aval.dtype.type(1)]
    ct_leaves, ct_tree = tree_flatten(cotangent)
    if ct_tree != out_tree:
        raise TypeError(
            f"the cotangent given to fgrad.viz.graph has structure {ct_tree}, but the function's "
            f"output has structure {out_tree}; they must be the same"
        )
    return [_check_like(ct, aval, "cotangent", _leaf_position(out_tree, i), ValueError)
            for i, (ct, aval) in enumerate(zip(ct_leaves, avals))]


RANKDIRS = ("TB", "LR", "BT", "RL")
_LONG = 6  # nodes on the longest path beyond which the default is top to bottom


def _longest_path(nodes: list[Node], edges: list[tuple[str, str]]) -> int:
    """The number of nodes on the longest path (`nodes` are in the jaxpr's order,
    so every edge goes forward)."""
    preds: dict[str, list[str]] = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    depth: dict[str, int] = {}
    for n in nodes:
        depth[n.id] = 1 + max((depth[a] for a in preds.get(n.id, ())), default=0)
    return max(depth.values(), default=0)


def _check_rankdir(rankdir: Any) -> None:
    if rankdir is not None and rankdir not in RANKDIRS:
        raise ValueError(
            f"rankdir is Graphviz's direction of the graph: 'TB' (top to bottom), 'LR' (left to right), "
            f"'BT' or 'RL', or None to choose by the graph's length; got {rankdir!r}"
        )


def _made(builder: _Builder, title: str, rankdir: str | None) -> Graph:
    if rankdir is None:
        rankdir = "TB" if _longest_path(builder.nodes, builder.edges) > _LONG else "LR"
    return Graph(builder.nodes, builder.edges, builder.clusters, title, rankdir)


def graph(
    fun: Callable[..., Any] | ClosedJaxpr | Jaxpr,
    *args: Any,
    argnums: int | Sequence[int] = 0,
    values: bool = True,
    gradients: bool = True,
    cotangent: Any = None,
    rankdir: str | None = None,
    collapse: bool | str | Collection[str] = False,
) -> Graph:
    """The graph of `fun` at `args`: one node per input, equation and output
    of its jaxpr, each with its forward value (`values`) and the cotangent that
    reaches it in reverse mode with respect to the arguments `argnums`
    (`gradients`), seeded with 1 for a scalar output or with `cotangent`.

    Scalars show as numbers (0.693, -137.72), arrays as type and range
    (`f64[3] ∈ [0.1, 0.9]`). Given a jaxpr (e.g. `make_jaxpr(grad(f))(x)`)
    and no arguments, draws it without values. Sub-jaxprs of `jit`, `cond`,
    loops, custom rules and `checkpoint` are nested clusters.

    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x1, x2: fnp.log(x1) + x1 * x2 - fnp.exp(x2)
    >>> g = fgrad.viz.graph(f, 2.0, 5.0, argnums=(0, 1))
    >>> g.node("a").cotangent_text(), g.node("b").cotangent_text(), g.node("g").value_text()
    ('5.5', '-146.41', '-137.72')

    `rankdir` is the picture's direction, in Graphviz's names: "LR" (left to
    right), "TB" (top to bottom), "RL", "BT". None (the default) draws a short
    graph left to right and one whose longest path has more than 6 nodes top
    to bottom, as a column rather than a strip: `graph(f, x).rankdir`.

    `collapse=True` draws every call with sub-jaxprs (`jit`, `checkpoint`,
    custom rules, `lax` control flow) as one node, with its operands' and
    results' types and its number of equations, instead of a cluster of its
    insides; `collapse` may instead name the calls to collapse, by primitive
    (`"scan"`) or by function (`"dense"`, for `jit(dense)`). Write each layer
    as a `jit` function and a deep network draws as a box per layer:

    >>> import numpy as np
    >>> def dense(w, x):
    ...     return fnp.tanh(x @ w)
    >>> def net(w, x):
    ...     return fnp.sum(fgrad.jit(dense)(w, fgrad.jit(dense)(w, x)))
    >>> g = fgrad.viz.graph(net, np.eye(2), np.ones(2), collapse="dense")
    >>> print(g.node("c").text, "|", g.node("c").inner, "|", g.node("c").value_text())
    c = jit[name=dense] a b | f64[2,2] f64[2] → f64[2], 2 equations | f64[2] all 0.762
    >>> g.clusters
    []
    """
    _check_rankdir(rankdir)
    if isinstance(fun, Jaxpr):
        fun = ClosedJaxpr(fun, [])  # constants without values
    out_tree: PyTreeDef | None = None
    if isinstance(fun, ClosedJaxpr):
        closed, title, names = fun, "jaxpr", None
        if not args:
            values = gradients = False
        elif len(args) != len(closed.jaxpr.invars):
            raise TypeError(f"the jaxpr takes {len(closed.jaxpr.invars)} arguments (arrays), got {len(args)}")
        elif len(closed.jaxpr.constvars) != len(closed.consts):
            raise ValueError("the jaxpr's constants have no values: give a ClosedJaxpr to evaluate it")
        arg_leaves = [[to_input(x)] for x in args]
    elif callable(fun):
        closed, shapes = make_jaxpr(fun, return_shape=True)(*args)
        title, names = fun_name(fun), leaf_names(fun, args, range(len(args)))
        out_tree = tree_flatten(shapes)[1]
        arg_leaves = [[to_input(x) for x in tree_flatten(a)[0]] for a in args]
    else:
        raise TypeError(
            f"fgrad.viz.graph takes a function (and its arguments) or a ClosedJaxpr, got {type(fun).__name__}"
        )
    builder = _Builder(_collapse_rule(collapse, closed))
    if not (values or gradients):
        builder.draw(closed, input_names=names)
        return _made(builder, title, rankdir)
    leaves = [x for a in arg_leaves for x in a]
    env = _forward(closed, leaves)
    cts: dict[Var, Any] = {}
    seeds = None
    if gradients:
        named: Any = fun  # a ClosedJaxpr is named in messages by its type
        nums = normalize_argnums(argnums, len(args), named)
        wrt = [i in nums for i, a in enumerate(arg_leaves) for _ in a]
        check_float_inputs("grad", named, args, nums, [x for x, w in zip(leaves, wrt) if w], "fc")
        outs = [a.val if isinstance(a, Literal) else env[a] for a in closed.jaxpr.outvars]
        if out_tree is None:
            out_tree = tree_flatten(outs[0] if len(outs) == 1 else outs)[1]
        seeds = _seeds(named, outs, out_tree, cotangent)
        cts = _backward(closed, env, wrt, seeds, f"fgrad.viz.graph of {title}")
    builder.draw(closed, input_names=names, values=env if values else None, cts=cts, out_cts=seeds)
    return _made(builder, title, rankdir)
