"""(r) A small MLP, 1-16-16-1, fitted to y = sin(3x) with jit and Adam.

The parameters are a dict of weight matrices and bias vectors (a pytree):
`fgrad.jit(fgrad.value_and_grad(loss))` is traced once, on the first call, and
every step after runs its generated NumPy code; `fgrad.optim.adam` updates
every leaf of the dict. The data are 64 points x in [-1, 1] from NumPy's
default_rng(0), with noise 0.05. Saves loss_curve.png (mean squared error
against step, log scale) when matplotlib is installed (in examples/figures/,
or in $FGRAD_EXAMPLES_OUT); prints a table otherwise.
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
xs = rng.uniform(-1, 1, (64, 1))
ys = np.sin(3 * xs) + 0.05 * rng.standard_normal((64, 1))
sizes = [1, 16, 16, 1]
params = {}
for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
    params[f"w{i}"] = rng.standard_normal((m, n)) / np.sqrt(m)
    params[f"b{i}"] = np.zeros(n)


def predict(params, x):
    h = fnp.tanh(x @ params["w0"] + params["b0"])
    h = fnp.tanh(h @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss(params):
    return fnp.mean((predict(params, xs) - ys) ** 2)


value_and_grad = fgrad.jit(fgrad.value_and_grad(loss))
opt = optim.adam(lr=0.01)
state = opt.init(params)
losses = []
for step in range(1001):
    value, grads = value_and_grad(params)
    losses.append(float(value))
    if step % 200 == 0:
        print(f"step {step:4d}: mse = {value:.5f}")
    params, state = opt.update(grads, state, params)
print(f"the noise alone has mse 0.05^2 = {0.05**2:.5f}; var(y) = {np.var(ys):.5f}")
jitted, eager = value_and_grad(params)[1], fgrad.value_and_grad(loss)(params)[1]
diff = max(np.abs(jitted[k] - eager[k]).max() for k in eager)
print(f"max |jit - eager| over the gradient's leaves: {diff:.1e}")

if plt is None:
    print(f"\n{'step':>5} {'mse':>9}")
    for step in (0, 10, 100, 300, 1000):
        print(f"{step:5d} {losses[step]:9.5f}")
    print(NO_MATPLOTLIB)
else:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.semilogy(losses)
    ax1.set_xlabel("step")
    ax1.set_ylabel("mean squared error")
    ax1.set_title("Adam(lr=0.01), jit(value_and_grad(loss))")
    grid = np.linspace(-1, 1, 200)[:, None]
    ax2.scatter(xs, ys, s=12, color="gray", label="data")
    ax2.plot(grid, predict(params, grid), label="MLP after 1000 steps")
    ax2.plot(grid, np.sin(3 * grid), "--", label="sin(3x)")
    ax2.legend()
    save(fig, "loss_curve.png")
