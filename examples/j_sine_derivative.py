"""(j) sin and its derivative on [-2 pi, 2 pi], without ever writing cos.

The derivative of the elementwise sin is taken with a vjp and an all-ones
cotangent. Saves sine_derivative.png (in examples/figures/, or in
$FGRAD_EXAMPLES_OUT) when matplotlib is installed; prints a table otherwise.
"""

import numpy as np
from _plotting import NO_MATPLOTLIB, save

import fgrad
import fgrad.numpy as fnp

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

x = np.linspace(-2 * np.pi, 2 * np.pi, 101)
y, sin_vjp = fgrad.vjp(fnp.sin, x)
(dy,) = sin_vjp(np.ones_like(x))
print("max |dsin/dx - cos x| =", np.max(np.abs(dy - np.cos(x))))

if plt is None:
    print(f"{'x':>8} {'sin x':>8} {'d/dx':>8}")
    for xi, yi, di in list(zip(x, y, dy))[::10]:
        print(f"{xi:8.3f} {yi:8.3f} {di:8.3f}")
    print(NO_MATPLOTLIB)
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, y, label="sin(x)")
    ax.plot(x, dy, label="d sin(x) / dx (fgrad)")
    ax.set_xlabel("x")
    ax.set_ylim(-1.1, 1.45)
    ax.legend(loc="upper center", ncol=2)
    ax.grid(True)
    save(fig, "sine_derivative.png")
