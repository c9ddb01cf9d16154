"""(p) sgd, adam and asgd from fgrad.optim on the Rosenbrock function.

f(x, y) = (1 - x)^2 + 100 (y - x^2)^2 has its minimum 0 at (1, 1), at the end
of a long, curved, flat-bottomed valley: hard for first-order methods. From
(-1.2, 1), 3000 steps each, with one jitted value_and_grad. SGD with momentum
runs down the valley; Adam's steps of about lr per coordinate follow it more
slowly; ASGD with PyTorch's defaults only starts averaging after t0 = 1e6
steps, so here it is plain SGD with a slowly decaying rate. Saves
rosenbrock.png (loss against step, log scale) when matplotlib is installed
(in examples/figures/, or in $FGRAD_EXAMPLES_OUT); prints a table otherwise.
"""

import numpy as np
from _plotting import NO_MATPLOTLIB, save

import fgrad
import fgrad.optim as optim

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


value_and_grad = fgrad.jit(fgrad.value_and_grad(rosenbrock))
optimizers = {
    "sgd(lr=1e-3, momentum=0.9)": optim.sgd(lr=1e-3, momentum=0.9),
    "adam(lr=2e-2)": optim.adam(lr=2e-2),
    "asgd(lr=1e-3)": optim.asgd(lr=1e-3),
}
losses = {}
for name, opt in optimizers.items():
    p = np.array([-1.2, 1.0])
    state = opt.init(p)
    losses[name] = []
    for _ in range(3000):
        value, g = value_and_grad(p)
        p, state = opt.update(g, state, p)
        losses[name].append(float(value))
    print(f"{name:27}: f = {rosenbrock(p):.2e} at ({p[0]:.4f}, {p[1]:.4f}) after 3000 steps")

if plt is None:
    steps = (1, 10, 100, 1000, 3000)
    print(f"\n{'loss at step':27}" + "".join(f"{s:>10}" for s in steps))
    for name, ls in losses.items():
        print(f"{name:27}" + "".join(f"{ls[s - 1]:10.2e}" for s in steps))
    print(NO_MATPLOTLIB)
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, ls in losses.items():
        ax.semilogy(np.arange(1, len(ls) + 1), ls, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("f(x, y) before the step")
    ax.set_title("Rosenbrock function from (-1.2, 1)")
    ax.legend(loc="upper right")
    ax.grid(True)
    save(fig, "rosenbrock.png")
