"""(b) y = x^2 - 2x + 1: its derivative at a point, and elementwise on an array.

For an array input the output is an array, so we ask for a vector-Jacobian
product: with an all-ones cotangent each entry gets its own derivative.
"""

import numpy as np

import fgrad


def f(x):
    return x**2 - 2 * x + 1


print("f'(0) =", fgrad.grad(f)(0.0))

x = np.array([[0.0, 0.0], [1.0, 2.0]])
y, f_vjp = fgrad.vjp(f, x)
(dx,) = f_vjp(np.ones_like(y))
print("x =\n", x)
print("f'(x) elementwise =\n", dx)
