"""(f) Gradients of functions of a vector x = [0, 1, 2, 3]:
y = 2 x.x has gradient 4x; sum(x) has gradient ones; sum(x*x) has gradient 2x."""

import fgrad
import fgrad.numpy as fnp

x = fnp.arange(4.0)
print("x                =", x)
print("grad of 2 x.x    =", fgrad.grad(lambda x: 2 * fnp.dot(x, x))(x))
print("grad of sum(x)   =", fgrad.grad(fnp.sum)(x))
print("grad of sum(x*x) =", fgrad.grad(lambda x: fnp.sum(x * x))(x))
