"""(e) Gradient descent on y = x^2 - 2x + 1 from x = 0 with learning rate 0.1.

The minimum is at x = 1; after 20 epochs x = 1 - 0.8^20 = 0.98847... Each step
shrinks the distance to 1 by the same factor 0.8, so the iterates bunch up near
the minimum. Saves gradient_descent.png, the iterates on the curve, when
matplotlib is installed (in examples/figures/, or in $FGRAD_EXAMPLES_OUT).
"""

import numpy as np
from _plotting import NO_MATPLOTLIB, save

import fgrad

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None


def loss(x):
    return x**2 - 2 * x + 1


x, lr = 0.0, 0.1
xs = [x]
for epoch in range(1, 21):
    value, g = fgrad.value_and_grad(loss)(x)
    x = x - lr * g
    xs.append(x)
    print(f"epoch {epoch:2d}: x = {x:.5f}, loss before the step = {value:.5f}")

if plt is None:
    print(NO_MATPLOTLIB)
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    curve = np.linspace(-0.5, 2.5, 200)
    ax.plot(curve, loss(curve), color="gray", label="loss(x) = x^2 - 2x + 1")
    xs = np.array(xs)
    points = ax.scatter(xs, loss(xs), c=np.arange(len(xs)), cmap="viridis", zorder=3, label="iterates")
    fig.colorbar(points, label="epoch")
    ax.set_xlabel("x")
    ax.set_ylabel("loss")
    ax.set_title(f"gradient descent, lr = {lr}: x_20 = {xs[-1]:.5f}")
    ax.legend()
    save(fig, "gradient_descent.png")
