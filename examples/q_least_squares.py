"""(q) Least squares with Adam: fit y = a x + b to 100 noisy points.

The parameters are a dict, a pytree: fgrad.grad returns the gradient as a dict
of the same shape and fgrad.optim.adam updates each leaf. The answer is
compared with NumPy's closed-form least-squares fit. Saves least_squares.png,
the data points and the fitted line, when matplotlib is installed (in
examples/figures/, or in $FGRAD_EXAMPLES_OUT); prints a table otherwise.
"""

import numpy as np
from _plotting import NO_MATPLOTLIB, save

import fgrad
import fgrad.numpy as fnp
import fgrad.optim as optim

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

rng = np.random.default_rng(0)
xs = rng.uniform(-1, 1, 100)
ys = 2.5 * xs - 0.7 + 0.1 * rng.standard_normal(100)


def mse(params):
    return fnp.mean((params["a"] * xs + params["b"] - ys) ** 2)


opt = optim.adam(lr=0.05)
params = {"a": 0.0, "b": 0.0}
state = opt.init(params)
for step in range(1, 201):
    value, grads = fgrad.value_and_grad(mse)(params)
    params, state = opt.update(grads, state, params)
    if step % 50 == 0:
        print(f"step {step:3d}: mse = {value:.5f}")
a, b = float(params["a"]), float(params["b"])
a_exact, b_exact = np.polyfit(xs, ys, 1)
print(f"Adam:       a = {a:.4f}, b = {b:.4f}, mse = {mse(params):.5f}")
print(f"np.polyfit: a = {a_exact:.4f}, b = {b_exact:.4f} (the data: a = 2.5, b = -0.7, noise 0.1)")

if plt is None:
    print(f"\n{'x':>7} {'y (data)':>9} {'a x + b':>8}")
    for i in np.argsort(xs)[::12]:
        print(f"{xs[i]:7.3f} {ys[i]:9.3f} {a * xs[i] + b:8.3f}")
    print(NO_MATPLOTLIB)
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.scatter(xs, ys, s=12, color="gray", label="data")
    line = np.array([-1.0, 1.0])
    ax.plot(line, a * line + b, label=f"Adam's fit y = a x + b: a = {a:.3f}, b = {b:.3f}")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend()
    save(fig, "least_squares.png")
