"""fgrad.viz: the graph of a jaxpr, its forward values and backward cotangents,
as DOT (no Graphviz needed), text, and SVG/PNG/PDF through Graphviz's dot."""

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.lax as lax
import fgrad.numpy as fnp
from fgrad.viz import Graph, graph
from fgrad.viz.graph import summary
from tests.strategies import broadcast_pairs, seeds, values

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's `dot` is not on PATH (apt-get install graphviz)"
)


def tutorial(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.exp(x2)


TUTORIAL_EDGES = {
    ("a", "c"), ("a", "d"), ("b", "d"), ("c", "e"), ("d", "e"), ("b", "f"), ("e", "g"), ("f", "g"),
    ("g", "out0"),
}


# --- the tutorial's three pictures, as DOT ----------------------------------------------


def test_tutorial_graph_nodes_labels_and_edges():
    g = graph(tutorial, 2.0, 5.0, values=False, gradients=False)
    assert [n.id for n in g.nodes] == ["a", "b", "c", "d", "e", "f", "g", "out0"]
    assert [n.kind for n in g.nodes] == ["input"] * 2 + ["equation"] * 5 + ["output"]
    assert [n.text for n in g.nodes] == [
        "a = input x1", "b = input x2", "c = log a", "d = mul a b", "e = add c d", "f = exp b",
        "g = sub e f", "out0 = output g",
    ]
    assert set(g.edges) == TUTORIAL_EDGES and len(g.edges) == len(TUTORIAL_EDGES)
    dot = g.to_dot()
    assert dot.startswith('digraph "tutorial" {')
    for a, b in TUTORIAL_EDGES:
        assert f'"{a}" -> "{b}";' in dot
    assert dot.count("->") == len(TUTORIAL_EDGES)
    assert 'label=<c = log a<BR/><FONT POINT-SIZE="9" COLOR="#6b7280">f64[]</FONT>>' in dot
    assert "value" not in dot and "grad" not in dot


def test_tutorial_forward_values():
    g = graph(tutorial, 2.0, 5.0, gradients=False)
    shown = {n.id: n.value_text() for n in g.nodes}
    assert shown == {"a": "2", "b": "5", "c": "0.693", "d": "10", "e": "10.69", "f": "148.41",
                     "g": "-137.72", "out0": "-137.72"}
    assert g.node("f").value == pytest.approx(math.exp(5))
    assert g.node("g").value == pytest.approx(math.log(2) + 10 - math.exp(5))
    assert all(n.cotangent is None for n in g.nodes)
    dot = g.to_dot()
    for text in ["value 0.693", "value 10<", "value 148.41", "value -137.72"]:
        assert text in dot
    assert "grad" not in dot


def test_tutorial_backward_cotangents():
    g = graph(tutorial, 2.0, 5.0, argnums=(0, 1))
    assert g.node("a").cotangent == pytest.approx(1 / 2 + 5)            # dy/dx1 = 1/x1 + x2
    assert g.node("b").cotangent == pytest.approx(2 - math.exp(5))      # dy/dx2 = x1 - e^x2
    shown = {n.id: n.cotangent_text() for n in g.nodes}
    assert shown == {"a": "5.5", "b": "-146.41", "c": "1", "d": "1", "e": "1", "f": "-1", "g": "1",
                     "out0": "1"}
    dot = g.to_dot()
    assert '<FONT COLOR="#b91c1c">grad 5.5</FONT>' in dot
    assert '<FONT COLOR="#b91c1c">grad -146.41</FONT>' in dot


def test_tutorial_text_form():
    assert graph(tutorial, 2.0, 5.0, argnums=(0, 1)).to_text() == "\n".join([
        "a = input x1      value 2         grad 5.5",
        "b = input x2      value 5         grad -146.41",
        "c = log a         value 0.693     grad 1",
        "d = mul a b       value 10        grad 1",
        "e = add c d       value 10.69     grad 1",
        "f = exp b         value 148.41    grad -1",
        "g = sub e f       value -137.72   grad 1",
        "out0 = output g   value -137.72   grad 1",
    ])
    assert graph(tutorial, 2.0, 5.0, values=False, gradients=False).to_text().splitlines()[2] == (
        "c = log a         f64[]"
    )


def test_only_the_differentiated_inputs_and_what_depends_on_them_get_gradients():
    g = graph(tutorial, 2.0, 5.0)  # argnums=0: x2 is a constant of the backward pass
    assert g.node("a").cotangent == pytest.approx(5.5)
    assert {n.id for n in g.nodes if n.cotangent is not None} == {"a", "c", "d", "e", "g", "out0"}
    assert g.node("b").cotangent is None and g.node("f").cotangent is None
    g = graph(tutorial, 2.0, 5.0, argnums=1)
    assert g.node("b").cotangent == pytest.approx(2 - math.exp(5))
    assert g.node("a").cotangent is None and g.node("c").cotangent is None


def test_a_jaxpr_drawn_with_or_without_values():
    closed = fgrad.make_jaxpr(tutorial)(2.0, 5.0)
    g = graph(closed)
    assert [n.text for n in g.nodes][:3] == ["a = input", "b = input", "c = log a"]
    assert set(g.edges) == TUTORIAL_EDGES
    assert all(n.value is None and n.cotangent is None for n in g.nodes)
    with_values = graph(closed, 2.0, 5.0, argnums=(0, 1))
    assert with_values.node("g").value_text() == "-137.72"
    assert with_values.node("b").cotangent_text() == "-146.41"
    assert graph(closed.jaxpr).to_text() == g.to_text()


@pytest.mark.parametrize("transform", ["grad", "jit", "vmap"])
def test_jaxprs_of_transformed_functions(transform):
    f = {"grad": fgrad.grad(tutorial, argnums=(0, 1)), "jit": fgrad.jit(tutorial),
         "vmap": fgrad.vmap(tutorial)}[transform]
    args = (np.array([2.0, 3.0]), np.array([5.0, 1.0])) if transform == "vmap" else (2.0, 5.0)
    closed = fgrad.make_jaxpr(f)(*args)
    g = graph(closed)
    j = closed.jaxpr
    assert len(g.nodes) >= len(j.invars) + len(j.eqns) + len(j.outvars)
    assert [n.kind for n in g.nodes].count("output") >= len(j.outvars)
    dot = g.to_dot()
    assert dot.count("log a") == 1
    if transform == "jit":  # the staged call is a cluster holding the function's jaxpr
        assert 'subgraph "cluster_c"' in dot and 'subgraph "cluster_c/jaxpr"' in dot
        assert g.node("c/jaxpr/c").text == "c = log a"
    if transform == "vmap":
        assert "f64[2]" in dot


def test_literals_inline_and_closed_over_constants_as_nodes():
    c = np.array([0.1, 0.5, 0.9])
    g = graph(lambda x: fnp.sum(x * c) * 2.0, np.ones(3))
    assert [n.kind for n in g.nodes] == ["const", "input", "equation", "equation", "equation", "output"]
    assert g.node("a").text == "a = const" and g.node("a").value_text() == "f64[3] ∈ [0.1, 0.9]"
    assert g.node("e").text == "e = mul d 2.0"
    assert ("a", "c") in g.edges and ("b", "c") in g.edges
    assert g.node("b").cotangent_text() == "f64[3] ∈ [0.2, 1.8]"
    np.testing.assert_allclose(g.node("b").cotangent, 2 * c)
    assert "shape=note" in g.to_dot()


# --- layout ------------------------------------------------------------------------------


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.mean((h @ w2 + b2 - y) ** 2)


def mlp_arguments():
    rng = np.random.default_rng(0)
    params = (rng.normal(size=(4, 8)), rng.normal(size=8), rng.normal(size=(8, 1)), rng.normal(size=1))
    return params, rng.normal(size=(16, 4)), rng.normal(size=(16, 1))


def test_a_short_graph_is_drawn_left_to_right_and_a_long_one_top_to_bottom():
    short = graph(tutorial, 2.0, 5.0)  # longest path a c e g out0: 5 nodes
    assert short.rankdir == "LR" and "  rankdir=LR;\n" in short.to_dot()
    long = graph(mlp_loss, *mlp_arguments())  # a g h i j k l m n o out0: 11 nodes
    assert long.rankdir == "TB" and "  rankdir=TB;\n" in long.to_dot()
    assert short.to_dot().count("rankdir") == long.to_dot().count("rankdir") == 1
    chain = graph(lambda x: fnp.sin(fnp.sin(fnp.sin(fnp.sin(x)))), 1.0)  # 6 nodes
    assert chain.rankdir == "LR"
    assert graph(lambda x: fnp.sin(fnp.sin(fnp.sin(fnp.sin(fnp.sin(x))))), 1.0).rankdir == "TB"


@pytest.mark.parametrize("rankdir", ["TB", "LR", "BT", "RL"])
def test_the_direction_asked_for(rankdir):
    for g in [graph(tutorial, 2.0, 5.0, rankdir=rankdir), graph(mlp_loss, *mlp_arguments(), rankdir=rankdir),
              graph(fgrad.make_jaxpr(tutorial)(2.0, 5.0), rankdir=rankdir)]:
        assert g.rankdir == rankdir and f"  rankdir={rankdir};\n" in g.to_dot()


@pytest.mark.parametrize("rankdir", ["tb", "top-to-bottom", "", 1, True])
def test_a_bad_direction_is_a_value_error(rankdir):
    with pytest.raises(ValueError, match=r"rankdir is Graphviz's direction .*'TB' \(top to bottom\), "
                       r"'LR' \(left to right\), 'BT' or 'RL', or None .*; got " + re.escape(repr(rankdir))):
        graph(tutorial, 2.0, 5.0, rankdir=rankdir)


# --- nested jaxprs --------------------------------------------------------------------------


@fgrad.custom_vjp
def _custom_sin(x):
    return fnp.sin(x)


_custom_sin.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda cos_x, ct: (cos_x * ct,))


@fgrad.custom_jvp
def _custom_tanh(x):
    return fnp.tanh(x)


_custom_tanh.defjvp(lambda p, t: (fnp.tanh(p[0]), (1 - fnp.tanh(p[0]) ** 2) * t[0]))

NESTED = {  # kind: (function of x, equation's primitive, its sub-jaxpr clusters)
    "jit": (lambda x: fgrad.jit(fnp.sin)(x) * x, "jit", ["jaxpr"]),
    "checkpoint": (lambda x: fgrad.checkpoint(fnp.sin)(x) * x, "checkpoint", ["jaxpr"]),
    "custom_vjp": (lambda x: _custom_sin(x) * x, "custom_vjp_call", ["call_jaxpr", "fwd", "bwd"]),
    "custom_jvp": (lambda x: _custom_tanh(x) * x, "custom_jvp_call", ["call_jaxpr", "jvp"]),
    "cond": (lambda x: lax.cond(x > 0, fnp.sin, fnp.cos, x) * x, "cond", ["branches[0]", "branches[1]"]),
    "while": (lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x) * x, "while",
              ["cond_jaxpr", "body_jaxpr"]),
    "scan": (lambda x: lax.scan(lambda c, t: (c * t, c + t), x, fnp.arange(1.0, 4.0))[0] * x, "scan",
             ["jaxpr"]),
}


@pytest.mark.parametrize("kind", NESTED)
def test_nested_jaxprs_are_clusters(kind):
    fun, prim, params = NESTED[kind]
    closed = fgrad.make_jaxpr(fun)(0.7)
    g = graph(closed)
    eqn_node = next(n for n in g.nodes if n.kind == "equation" and n.text.split(" = ")[1].startswith(prim))
    outer = f"cluster_{eqn_node.id}"
    clusters = {c.id: c for c in g.clusters}
    assert clusters[outer].label == prim and not clusters[outer].jaxpr
    assert eqn_node.cluster == outer
    dot = g.to_dot()
    assert f'subgraph "{outer}" {{' in dot
    for p in params:
        sub = f"{outer}/{p}"
        assert clusters[sub].parent == outer and clusters[sub].jaxpr and clusters[sub].label == p
        assert f'subgraph "{sub}" {{' in dot
        inner = [n for n in g.nodes if n.cluster == sub]
        assert inner and all(n.id.startswith(f"{eqn_node.id}/{p}/") for n in inner)
        assert any(n.kind == "input" for n in inner) and any(n.kind == "output" for n in inner)
        # the sub-jaxpr's edges stay inside it
        ids = {n.id for n in inner}
        assert any(a in ids and b in ids for a, b in g.edges)
    # the equation is drawn once, fed by the outer variables
    assert any(b == eqn_node.id for _, b in g.edges)
    # with values: the equation shows its value and gradient, which are grad's
    g = graph(fun, 0.7)
    x = next(n for n in g.nodes if n.kind == "input")
    np.testing.assert_allclose(x.cotangent, fgrad.grad(fun)(0.7), rtol=1e-12)
    assert g.node(eqn_node.id).value is not None
    text = g.to_text()
    assert f"  {params[-1]} of {eqn_node.id}:" in text


def test_clusters_nest():
    def f(x):
        return lax.cond(x > 0, lambda y: fgrad.jit(fnp.sin)(y), fnp.cos, x)

    g = graph(fgrad.make_jaxpr(f)(1.0))
    ids = [c.id for c in g.clusters]
    assert ids == ["cluster_d", "cluster_d/branches[0]", "cluster_d/branches[1]",  # ids carry their path
                   "cluster_d/branches[1]/b", "cluster_d/branches[1]/b/jaxpr"]
    inner = [c for c in g.clusters if c.label == "jit"]
    assert len(inner) == 1 and inner[0].parent == "cluster_d/branches[1]" and inner[0].owner == "d/branches[1]/b"
    assert g.node("d/branches[1]/b/jaxpr/b").text == "b = sin a"
    dot = g.to_dot()
    assert dot.index('subgraph "cluster_d/branches[1]"') < dot.index(f'subgraph "{inner[0].id}"')
    assert "        b = sin a" in g.to_text()


# --- collapsed calls -------------------------------------------------------------------------


def dense(w, b, h):
    return fnp.tanh(h @ w + b)


def layered_loss(params, x, y):  # a two-layer network, a jit call per layer
    w1, b1, w2, b2 = params
    return fnp.mean((fgrad.jit(dense)(w2, b2, fgrad.jit(dense)(w1, b1, x)) - y) ** 2)


def assert_well_formed(g):
    ids = [n.id for n in g.nodes]
    assert len(set(ids)) == len(ids)
    assert all(a in ids and b in ids for a, b in g.edges)  # no dangling edge
    assert {n.cluster for n in g.nodes} - {None} <= {c.id for c in g.clusters}
    dot = g.to_dot()
    assert dot.count("->") == len(g.edges) and dot.count("label=<") == len(g.nodes)


def test_collapsed_layers_are_one_node_each_with_the_layers_values_and_gradients():
    params, x, y = mlp_arguments()
    g = graph(layered_loss, params, x, y, collapse=True)
    assert_well_formed(g)
    assert g.clusters == [] and not any("/" in n.id for n in g.nodes)
    assert [n.id for n in g.nodes] == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "out0"]
    first, second = g.node("g"), g.node("h")
    assert first.text == "g = jit[name=dense] a b e" and second.text == "h = jit[name=dense] c d g"
    assert first.inner == "f64[4,8] f64[8] f64[16,4] → f64[16,8], 3 equations"  # matmul, add, tanh
    assert second.inner == "f64[8,1] f64[1] f64[16,8] → f64[16,1], 3 equations"
    assert [n.id for n in g.nodes if n.inner] == ["g", "h"]
    # the calls' operands feed them, and the first layer feeds the second and nothing else
    assert {a for a, b in g.edges if b == "g"} == {"a", "b", "e"}
    assert {a for a, b in g.edges if b == "h"} == {"c", "d", "g"}
    assert {b for a, b in g.edges if a == "g"} == {"h"} and {b for a, b in g.edges if a == "h"} == {"i"}
    # values and cotangents, by hand in NumPy
    w1, b1, w2, b2 = params
    h1 = np.tanh(x @ w1 + b1)
    p = np.tanh(h1 @ w2 + b2)
    ct_p = 2 * (p - y) / y.size
    ct_z2 = ct_p * (1 - p**2)
    ct_h1 = ct_z2 @ w2.T
    ct_z1 = ct_h1 * (1 - h1**2)
    np.testing.assert_allclose(first.value, h1, rtol=1e-12)
    np.testing.assert_allclose(second.value, p, rtol=1e-12)
    np.testing.assert_allclose(second.cotangent, ct_p, rtol=1e-12)
    np.testing.assert_allclose(first.cotangent, ct_h1, rtol=1e-12, atol=1e-15)
    for node, expected in zip("abcd", [x.T @ ct_z1, ct_z1.sum(0), h1.T @ ct_z2, ct_z2.sum(0)]):
        np.testing.assert_allclose(g.node(node).cotangent, expected, rtol=1e-10, atol=1e-15)
    assert g.nodes[-1].value == pytest.approx(np.mean((p - y) ** 2))
    # the same values and cotangents as the graph drawn in full
    full = graph(layered_loss, params, x, y)
    assert len(full.clusters) == 4 and len(full.nodes) == len(g.nodes) + 2 * 7  # 3 inputs, 3 equations, 1 output
    for n in g.nodes:
        np.testing.assert_array_equal(full.node(n.id).value, n.value)
        np.testing.assert_array_equal(full.node(n.id).cotangent, n.cotangent)


def test_collapsed_calls_in_dot_and_text():
    g = graph(layered_loss, *mlp_arguments(), collapse=True)
    dot = g.to_dot()
    assert dot.count("shape=box3d") == 2 and "subgraph" not in dot
    assert ('"g" [shape=box3d, style=filled, fillcolor="#f9fafb", margin="0.16,0.1", label=<g = jit[name=dense] '
            'a b e<BR/><FONT POINT-SIZE="9" COLOR="#6b7280">f64[4,8] f64[8] f64[16,4] → f64[16,8], 3 equations'
            '</FONT><BR/><FONT COLOR="#1d4ed8">value f64[16,8] ∈ ') in dot
    lines = g.to_text().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("g = jit[name=dense] a b e "))
    assert lines[i + 1] == "  ⋯ f64[4,8] f64[8] f64[16,4] → f64[16,8], 3 equations"
    assert "jaxpr of" not in g.to_text()
    assert graph(layered_loss, *mlp_arguments()).node("g").inner is None


COLLAPSED = {  # kind: what the collapsed call's node says it stands for
    "jit": "f64[] → f64[], 1 equation",
    "checkpoint": "f64[] → f64[], 1 equation",
    "custom_vjp": "f64[] → f64[], equations: call_jaxpr 1, fwd 2, bwd 1",
    "custom_jvp": "f64[] → f64[], equations: call_jaxpr 1, jvp 5",
    "cond": "i32[] f64[] → f64[], equations: branches[0] 1, branches[1] 1",
    "while": "f64[] → f64[], equations: cond_jaxpr 1, body_jaxpr 1",
    "scan": "f64[] f64[3] → f64[] f64[3], 2 equations",
}


@pytest.mark.parametrize("kind", NESTED)
def test_every_kind_of_call_collapses(kind):
    fun, prim, _ = NESTED[kind]
    g = graph(fun, 0.7, collapse=True)
    assert_well_formed(g)
    assert g.clusters == [] and not any("/" in n.id for n in g.nodes)
    (call,) = [n for n in g.nodes if n.inner is not None]
    assert call.text.split(" = ")[1].startswith(prim) and call.inner == COLLAPSED[kind]
    assert any(b == call.id for _, b in g.edges) and any(a == call.id for a, _ in g.edges)
    full = graph(fun, 0.7)
    assert [n.id for n in full.nodes if "/" not in n.id] == [n.id for n in g.nodes]
    for n in g.nodes:
        assert (n.value_text(), n.cotangent_text()) == (full.node(n.id).value_text(), full.node(n.id).cotangent_text())
    x = next(n for n in g.nodes if n.kind == "input")
    np.testing.assert_allclose(x.cotangent, fgrad.grad(fun)(0.7), rtol=1e-12)
    assert graph(fgrad.make_jaxpr(fun)(0.7), collapse=True).clusters == []


def test_collapse_by_name_keeps_the_other_calls_clusters():
    def f(x):
        y = fgrad.jit(fnp.sin)(x)  # c = jit[name=sin] b
        return lax.scan(lambda c, t: (fgrad.jit(fnp.cos)(c) * t, c), y, fnp.arange(1.0, 3.0))[0]  # d e = scan

    full = graph(f, 0.5)
    assert [c.label for c in full.clusters if not c.jaxpr] == ["jit", "scan", "jit"]
    by_function = graph(f, 0.5, collapse="sin")  # the jit of sin only
    assert [n.id for n in by_function.nodes if n.inner] == ["c"]
    assert [c.label for c in by_function.clusters if not c.jaxpr] == ["scan", "jit"]
    by_inner_function = graph(f, 0.5, collapse=["cos"])
    assert [n.id for n in by_inner_function.nodes if n.inner] == ["d,e/jaxpr/c"]
    assert by_inner_function.node("d,e/jaxpr/c").inner == "f64[] → f64[], 1 equation"
    by_primitive = graph(f, 0.5, collapse={"scan"})
    assert [n.id for n in by_primitive.nodes if n.inner] == ["d,e"]
    assert [c.label for c in by_primitive.clusters if not c.jaxpr] == ["jit"]
    assert by_primitive.node("d,e").inner == "f64[] f64[2] → f64[] f64[2], 3 equations"  # the inner jit's 1 too
    assert [n.id for n in graph(f, 0.5, collapse=("jit",)).nodes if n.inner] == ["c", "d,e/jaxpr/c"]
    for g in [full, by_function, by_inner_function, by_primitive]:
        assert_well_formed(g)
        assert g.node("b").cotangent == pytest.approx(fgrad.grad(f)(0.5))
    assert graph(f, 0.5, collapse=()).to_dot() == full.to_dot() == graph(f, 0.5, collapse=False).to_dot()


@pytest.mark.parametrize("collapse", [1, None, ["jit", 2], {"jit": True}, b"jit"])
def test_collapse_of_a_wrong_type_is_a_type_error(collapse):
    with pytest.raises(TypeError, match=r"collapse is True, False, or the names of the calls .*; got "
                       + re.escape(repr(collapse))):
        graph(layered_loss, *mlp_arguments(), collapse=collapse)


def test_collapse_of_a_name_no_call_has_is_a_value_error():
    with pytest.raises(ValueError, match=r"collapse names 'dnse', 'sacn', which no call in the graph is named; "
                       r"the names its calls answer to are 'dense', 'jit'$"):
        graph(layered_loss, *mlp_arguments(), collapse=["sacn", "dense", "dnse"])
    with pytest.raises(ValueError, match="are none: it has no equation with sub-jaxprs"):
        graph(tutorial, 2.0, 5.0, collapse="jit")
    assert graph(tutorial, 2.0, 5.0, collapse=True).to_dot() == graph(tutorial, 2.0, 5.0).to_dot()


# --- cotangents are grad's --------------------------------------------------------------


UNARY = {
    "sin": fnp.sin, "tanh": fnp.tanh, "square": lambda u: u * u,
    "log1p_sq": lambda u: fnp.log(1.0 + u * u), "exp": lambda u: fnp.exp(0.3 * u),
}
BINARY = {
    "add": lambda u, v: u + v, "mul": lambda u, v: u * v, "sub": lambda u, v: u - v,
    "div": lambda u, v: u / (1.0 + v * v),
}


@st.composite
def programs(draw):
    """A random straight-line program of x and y: each step applies a unary or
    binary operation to earlier results, and the output is the sum of the last."""
    steps = []
    for n in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            steps.append(("1", draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, n + 1)), 0))
        else:
            steps.append(("2", draw(st.sampled_from(sorted(BINARY))), draw(st.integers(0, n + 1)),
                          draw(st.integers(0, n + 1))))
    return steps


def _program(steps):
    def f(x, y):
        vals = [x, y]
        for kind, op, i, j in steps:
            vals.append(UNARY[op](vals[i]) if kind == "1" else BINARY[op](vals[i], vals[j]))
        return fnp.sum(vals[-1])

    return f


@given(programs(), broadcast_pairs(2), seeds, st.sampled_from([0, 1, (0, 1)]))
def test_cotangents_of_the_inputs_are_grad(steps, shapes, seed, argnums):
    f = _program(steps)
    x, y = values(shapes[0], "real", seed), values(shapes[1], "real", seed + 1)
    g = graph(f, x, y, argnums=argnums)
    expected = fgrad.grad(f, argnums)(x, y)
    expected = expected if isinstance(argnums, tuple) else (expected,)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for i, e in zip(nums, expected):
        np.testing.assert_allclose(g.node("ab"[i]).cotangent, e, rtol=1e-10, atol=1e-12)
    for i in set(range(2)) - set(nums):
        assert g.node("ab"[i]).cotangent is None
    np.testing.assert_allclose(g.nodes[-1].value, f(x, y), rtol=1e-12)


@fgrad.custom_vjp
def _tripled_gradient(x):
    return x


_tripled_gradient.defvjp(lambda x: (x, None), lambda _, ct: (3.0 * ct,))


def test_custom_rules_give_the_cotangents():
    g = graph(lambda x: fnp.sin(_tripled_gradient(x)), 0.0)
    assert g.node("a").cotangent == pytest.approx(3.0)  # the custom rule's, not identity's 1
    assert g.node("b").cotangent == pytest.approx(1.0)
    assert fgrad.grad(lambda x: fnp.sin(_tripled_gradient(x)))(0.0) == pytest.approx(3.0)


def test_a_scalar_output_of_a_jaxpr_evaluated_at_arguments():
    closed = fgrad.make_jaxpr(lambda x, n: x * n)(1.0, 2)
    g = graph(closed, 1.5, 4)
    assert g.node("c").value_text() == "6" and g.node("a").cotangent == pytest.approx(4.0)
    with pytest.raises(TypeError, match="`argument 1` of ClosedJaxpr has dtype int64"):
        graph(closed, 1.5, 4, argnums=1)


def test_cotangents_of_pytree_arguments_and_a_given_cotangent():
    def f(params, x):
        return fnp.tanh(params["w"] * x + params["b"])

    params, x = {"b": 0.5, "w": np.array([1.0, -2.0])}, np.array([0.3, 0.4])
    ct = np.array([1.0, 2.0])
    g = graph(f, params, x, cotangent=ct)
    assert g.node("a").text == "a = input params['b']" and g.node("b").text == "b = input params['w']"
    _, vjp_fn = fgrad.vjp(f, params, x)
    expected = vjp_fn(ct)[0]
    np.testing.assert_allclose(g.node("a").cotangent, expected["b"], rtol=1e-12)
    np.testing.assert_allclose(g.node("b").cotangent, expected["w"], rtol=1e-12)
    assert g.node("c").cotangent is None  # x is not differentiated
    assert g.nodes[-1].cotangent_text() == "f64[2] ∈ [1, 2]"


def test_a_stopped_gradient_reaches_its_node_but_not_its_input():
    g = graph(lambda x: fgrad.stop_gradient(x * x) * x, 3.0)
    assert g.node("a").cotangent == pytest.approx(9.0)  # d(c x)/dx with c = x*x held constant
    assert g.node("c").text == "c = stop_gradient b" and g.node("c").cotangent == pytest.approx(3.0)
    assert g.node("b").cotangent == 0.0  # the cotangent that reaches x*x through stop_gradient


def test_several_outputs_and_an_unused_branch():
    def f(x):
        y = fnp.sin(x)
        unused = fnp.exp(x)
        return y, unused * 0.0

    g = graph(f, 1.0, cotangent=(1.0, 0.0))
    assert g.node("a").cotangent == pytest.approx(math.cos(1.0))
    assert [n.id for n in g.nodes if n.kind == "output"] == ["out0", "out1"]
    assert g.node("out1").value_text() == "0" and g.node("out1").cotangent_text() == "0"
    g = graph(lambda x: lax.scan(lambda c, t: (c * t, c + t), x, fnp.arange(1.0, 4.0)), 0.5,
              cotangent=(1.0, np.ones(3)))
    scan = g.node("c,d")
    assert scan.outvars == ("c", "d") and scan.value_text() == "c=3, d=f64[3] ∈ [1.5, 4]"
    assert scan.cotangent_text() == "c=1, d=f64[3] all 1"


# --- summaries ---------------------------------------------------------------------------


@pytest.mark.parametrize("x, text", [
    (math.log(2), "0.693"), (10.0, "10"), (math.exp(5), "148.41"), (math.log(2) + 10 - math.exp(5), "-137.72"),
    (5.5, "5.5"), (2 - math.exp(5), "-146.41"), (0.0, "0"), (1.0, "1"), (123456.0, "1.235e+05"),
    (1.5e-7, "1.5e-07"), (float("nan"), "nan"), (-float("inf"), "-inf"), (np.int32(3), "3"),
    (np.bool_(True), "True"), (np.complex128(1 - 2j), "1-2j"), (np.float32(0.25), "0.25"),
    (np.array([0.1, 0.5, 0.9]), "f64[3] ∈ [0.1, 0.9]"), (np.zeros((2, 3)), "f64[2,3] all 0"),
    (np.arange(4, dtype=np.int32), "i32[4] ∈ [0, 3]"), (np.array([1.0, np.nan, 3.0]), "f64[3] ∈ [1, 3] has NaN"),
    (np.array([-np.inf, 2.0]), "f64[2] all 2 has inf"), (np.array([1.0, 1.0001]), "f64[2] ∈ [1, 1]"),
    (np.zeros(0), "f64[0]"), (np.array([True, False, True]), "bool[3] 2 True"),
    (np.array([3 + 4j, 1j]), "c128[2] |z| ∈ [1, 5]"),
])
def test_summary(x, text):
    assert summary(x) == text


# --- errors ------------------------------------------------------------------------------


def _message(call):
    try:
        call()
    except (TypeError, ValueError) as error:
        return type(error), str(error)
    raise AssertionError("no error")


@pytest.mark.parametrize("argnums", [2, -3, (0, 0), (), "0"])
def test_bad_argnums_raise_as_grad(argnums):
    kind, message = _message(lambda: fgrad.grad(tutorial, argnums)(2.0, 5.0))
    with pytest.raises(kind, match="argnums") as info:
        graph(tutorial, 2.0, 5.0, argnums=argnums)
    assert str(info.value) == message


def test_non_scalar_output_without_cotangent_is_grads_type_error():
    f = lambda x: x * 2.0  # noqa: E731
    _, message = _message(lambda: fgrad.grad(f)(np.ones(3)))
    with pytest.raises(TypeError, match=r"return a scalar \(shape \(\)\)") as info:
        graph(f, np.ones(3))
    assert str(info.value).startswith(message) and "cotangent=" in str(info.value)
    graph(f, np.ones(3), gradients=False)  # values alone need no cotangent
    with pytest.raises(TypeError, match="return a single scalar"):
        graph(lambda x: (x, x), 1.0)


def test_integer_inputs_raise_as_grad():
    _, message = _message(lambda: fgrad.grad(lambda n: n * 1.0)(2))
    with pytest.raises(TypeError, match="requires float or complex inputs") as info:
        graph(lambda n: n * 1.0, 2)
    assert str(info.value) == message
    graph(lambda x, n: x * n, 2.0, 3)  # an integer argument outside argnums is a constant


def test_cotangent_errors():
    with pytest.raises(TypeError, match="structure"):
        graph(lambda x: (x, x), 1.0, cotangent=1.0)
    with pytest.raises(ValueError, match=r"cotangent has shape \(2,\).*\(3,\)"):
        graph(lambda x: x * 2.0, np.ones(3), cotangent=np.ones(2))


def test_other_errors():
    with pytest.raises(TypeError, match="takes a function .* or a ClosedJaxpr, got int"):
        graph(3)  # type: ignore[arg-type]
    closed = fgrad.make_jaxpr(tutorial)(2.0, 5.0)
    with pytest.raises(TypeError, match="the jaxpr takes 2 arguments .* got 1"):
        graph(closed, 2.0)
    with pytest.raises(KeyError, match="no node 'z'"):
        graph(closed).node("z")
    with pytest.raises(ValueError, match=r"\.svg, \.png or \.pdf.*to_dot"):
        graph(closed).render("picture.jpg")


# --- rendering ----------------------------------------------------------------------------


@needs_dot
def test_svg_holds_the_labels_and_edges(tmp_path):
    pytest.importorskip("graphviz")
    path = graph(tutorial, 2.0, 5.0, argnums=(0, 1)).render(tmp_path / "tutorial.svg")
    assert path == tmp_path / "tutorial.svg"
    svg = path.read_text("utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for a, b in TUTORIAL_EDGES:
        assert f"<title>{a}&#45;&gt;{b}</title>" in svg
    for label in ["a = input x1", "c = log a", "value 0.693", "value 10<", "value 148.41",
                  "value &#45;137.72", "grad 5.5", "grad &#45;146.41", "out0 = output g"]:
        assert label in svg, label
    assert svg.count('class="node"') == 8 and svg.count('class="edge"') == len(TUTORIAL_EDGES)


@needs_dot
def test_svg_of_nested_clusters(tmp_path):
    pytest.importorskip("graphviz")
    svg = graph(NESTED["cond"][0], 0.7).render(tmp_path / "cond.svg").read_text("utf-8")
    assert svg.count('class="cluster"') == 3  # the cond, and its two branches
    assert "branches[1]" in svg and "b = sin a" in svg and "b = cos a" in svg


@needs_dot
def test_png_and_pdf_files(tmp_path):
    pytest.importorskip("graphviz")
    g = graph(tutorial, 2.0, 5.0)
    assert g.render(tmp_path / "t.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert g.render(str(tmp_path / "t.PDF")).read_bytes().startswith(b"%PDF")


@needs_dot
def test_repr_svg_for_jupyter():
    pytest.importorskip("graphviz")
    svg = graph(tutorial, 2.0, 5.0)._repr_svg_()
    assert svg is not None and "<svg" in svg and "c = log a" in svg


@needs_dot
def test_the_picture_of_an_mlp_loss_is_not_a_strip(tmp_path):
    pytest.importorskip("graphviz")
    image = pytest.importorskip("PIL.Image")
    path = graph(mlp_loss, *mlp_arguments()).render(tmp_path / "mlp.png")
    width, height = image.open(path).size
    assert 1 / 3 < width / height < 3, (width, height)  # left to right it is about 3500 x 390
    width, height = image.open(graph(mlp_loss, *mlp_arguments(), rankdir="LR").render(tmp_path / "lr.png")).size
    assert width / height > 5


def test_without_the_graphviz_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    g = graph(tutorial, 2.0, 5.0)
    with pytest.raises(ImportError, match=r"pip install fgrad\[viz\]") as info:
        g.render(tmp_path / "t.svg")
    assert "apt-get install graphviz" in str(info.value) and "`dot`" in str(info.value)
    assert g._repr_svg_() is None
    assert '"a" -> "c";' in g.to_dot() and "grad 5.5" in g.to_text()  # these need nothing
    assert not (tmp_path / "t.svg").exists()


def test_without_the_dot_program(monkeypatch, tmp_path):
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` there
    with pytest.raises(ImportError, match=r"`dot` program, which is not on PATH.*apt-get install graphviz"):
        graph(tutorial, 2.0, 5.0).render(tmp_path / "t.svg")


def test_import_fgrad_imports_no_graphviz():
    code = (
        "import sys, fgrad; assert 'fgrad.viz' not in sys.modules\n"
        "g = fgrad.viz.graph(lambda x: x * 2.0, 1.0); g.to_dot(); g.to_text()\n"
        "print('graphviz' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert isinstance(fgrad.viz.graph(tutorial, 2.0, 5.0), Graph)


def test_the_example_prints_the_text_and_writes_the_pictures(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    example = repo / "examples" / "o_graph_pictures.py"
    path = os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "FGRAD_EXAMPLES_OUT": str(tmp_path), "PYTHONPATH": path}  # this checkout's fgrad
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, check=True,
                         env=env).stdout
    assert "b = input x2      value 5         grad -146.41" in out
    assert "g = sub e f       value -137.72" in out
    assert "graph.svg (LR):" in out and "mlp_loss.svg (TB):" in out  # the network's loss is long
    assert "  ⋯ f64[8,1] f64[1] f64[16,8] → f64[16,1], 3 equations" in out  # its second layer, one box
    names = ["graph.svg", "graph_values.svg", "graph_gradients.svg", "mlp_loss.svg"]
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return
    if shutil.which("dot") is None:
        assert "No pictures" in out and "apt-get install graphviz" in out
        return
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert "grad &#45;146.41" in (tmp_path / "graph_gradients.svg").read_text("utf-8")
    assert "value" not in (tmp_path / "graph.svg").read_text("utf-8")
    mlp = (tmp_path / "mlp_loss.svg").read_text("utf-8")
    assert mlp.count("g = jit[name=dense] a b e") == 1 and 'class="cluster"' not in mlp
