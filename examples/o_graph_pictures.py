"""(o) The three pictures of autodiff tutorials, drawn from the jaxpr.

y = ln(x1) + x1*x2 - exp(x2) at (x1, x2) = (2, 5): its computational graph,
the same graph with each node's forward value, and again with the derivative
of y that reaches each node in the backward pass (5.5 for x1, -146.41 for x2).
The SVG files go to examples/figures/ (or to $FGRAD_EXAMPLES_OUT); without the
graphviz package and Graphviz's `dot`, only the text form is printed.
"""

import os
from pathlib import Path

import fgrad
import fgrad.numpy as fnp


def f(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.exp(x2)


pictures = {
    "graph.svg": fgrad.viz.graph(f, 2.0, 5.0, values=False, gradients=False),
    "graph_values.svg": fgrad.viz.graph(f, 2.0, 5.0, gradients=False),
    "graph_gradients.svg": fgrad.viz.graph(f, 2.0, 5.0, argnums=(0, 1)),
}
for name, picture in pictures.items():
    print(f"{name}:\n{picture.to_text()}\n")

out = os.environ.get("FGRAD_EXAMPLES_OUT")
directory = Path(out) if out else Path(__file__).resolve().parent / "figures"
try:
    for name, picture in pictures.items():
        directory.mkdir(parents=True, exist_ok=True)
        print("saved", picture.render(directory / name))
except ImportError as missing:  # no graphviz package, or no `dot` program
    print(f"No pictures: {missing}")
