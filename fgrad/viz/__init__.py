"""fgrad.viz: pictures of a computation. The graph of a jaxpr with each
variable's forward value and the cotangent reaching it in reverse mode, as
Graphviz DOT, SVG/PNG/PDF (with the optional extra `viz` and Graphviz's
`dot`) or text.

>>> import fgrad, fgrad.numpy as fnp
>>> print(fgrad.viz.graph(fnp.exp, 0.0).to_text())
a = input x       value 0   grad 1
b = exp a         value 1   grad 1
out0 = output b   value 1   grad 1
"""

from .graph import Cluster, Graph, Node, graph

__all__ = ["graph", "Graph", "Node", "Cluster"]
