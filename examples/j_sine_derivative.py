"""(j) sin and its derivative on [-2 pi, 2 pi], without ever writing cos.

The derivative of the elementwise sin is taken with a vjp and an all-ones
cotangent. Saves sine_derivative.png when matplotlib is installed
(pip install -e ".[examples]"); prints a table otherwise.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp

x = np.linspace(-2 * np.pi, 2 * np.pi, 101)
y, sin_vjp = fgrad.vjp(fnp.sin, x)
(dy,) = sin_vjp(np.ones_like(x))
print("max |dsin/dx - cos x| =", np.max(np.abs(dy - np.cos(x))))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"{'x':>8} {'sin x':>8} {'d/dx':>8}")
    for xi, yi, di in list(zip(x, y, dy))[::10]:
        print(f"{xi:8.3f} {yi:8.3f} {di:8.3f}")
else:
    plt.plot(x, y, label="sin(x)")
    plt.plot(x, dy, label="d sin(x) / dx (fgrad)")
    plt.legend()
    plt.grid(True)
    plt.savefig("sine_derivative.png", dpi=100)
    print("saved sine_derivative.png")
