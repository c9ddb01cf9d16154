"""(d) The Jacobian of Y = (x1*x2, x1 + x2) at (1, 2), one row per output.

Each row is a vector-Jacobian product with a one-hot cotangent; a single
vjp_fn serves every row. Summing the outputs first gives the column sums.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp


def Y(x):
    return fnp.stack([x[0] * x[1], x[0] + x[1]])


x = np.array([1.0, 2.0])
y, Y_vjp = fgrad.vjp(Y, x)
jacobian = np.stack([Y_vjp(row)[0] for row in np.eye(2)])
print("Y(x) =", y)
print("Jacobian dY/dx =\n", jacobian)
print("d(sum Y)/dx =", fgrad.grad(lambda x: fnp.sum(Y(x)))(x))
