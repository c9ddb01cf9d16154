"""(o) The three pictures of autodiff tutorials, drawn from the jaxpr, and a
network's loss with a box per layer.

y = ln(x1) + x1*x2 - exp(x2) at (x1, x2) = (2, 5): its computational graph,
the same graph with each node's forward value, and again with the derivative
of y that reaches each node in the backward pass (5.5 for x1, -146.41 for x2).
Then the mean squared error of a two-layer network, each layer a `jit` call
drawn as one node (`collapse=True`); the graph is long, so it is drawn top to
bottom. The SVG files go to examples/figures/ (or to $FGRAD_EXAMPLES_OUT);
without the graphviz package and Graphviz's `dot`, only the text form is printed.
"""

import os
from pathlib import Path

import numpy as np

import fgrad
import fgrad.numpy as fnp


def f(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.exp(x2)


@fgrad.jit
def dense(w, b, x):
    return fnp.tanh(x @ w + b)


def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    return fnp.mean((dense(w2, b2, dense(w1, b1, x)) - y) ** 2)


rng = np.random.default_rng(0)
params = [(rng.normal(size=(4, 8)), np.zeros(8)), (rng.normal(size=(8, 1)), np.zeros(1))]
x, y = rng.normal(size=(16, 4)), rng.normal(size=(16, 1))

pictures = {
    "graph.svg": fgrad.viz.graph(f, 2.0, 5.0, values=False, gradients=False),
    "graph_values.svg": fgrad.viz.graph(f, 2.0, 5.0, gradients=False),
    "graph_gradients.svg": fgrad.viz.graph(f, 2.0, 5.0, argnums=(0, 1)),
    "mlp_loss.svg": fgrad.viz.graph(loss, params, x, y, collapse=True),
}
for name, picture in pictures.items():
    print(f"{name} ({picture.rankdir}):\n{picture.to_text()}\n")

out = os.environ.get("FGRAD_EXAMPLES_OUT")
directory = Path(out) if out else Path(__file__).resolve().parent / "figures"
try:
    for name, picture in pictures.items():
        directory.mkdir(parents=True, exist_ok=True)
        print("saved", picture.render(directory / name))
except ImportError as missing:  # no graphviz package, or no `dot` program
    print(f"No pictures: {missing}")
