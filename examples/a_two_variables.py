"""(a) A function of two variables, its value, its gradient, and their jaxprs.

y = ln(x1) + x1*x2 - exp(x2) at (x1, x2) = (2, 5).
"""

import fgrad
import fgrad.numpy as fnp


def f(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.exp(x2)


y = f(2.0, 5.0)
dy_dx1, dy_dx2 = fgrad.grad(f, argnums=(0, 1))(2.0, 5.0)
print(f"y       = {y:.5f}")
print(f"dy/dx1  = {dy_dx1:.5f}")
print(f"dy/dx2  = {dy_dx2:.5f}")
print()
print("The jaxpr of f:")
print(fgrad.make_jaxpr(f)(2.0, 5.0))
print()
print("The jaxpr of its gradient (forward, then backward equations):")
print(fgrad.make_jaxpr(fgrad.grad(f, argnums=(0, 1)))(2.0, 5.0))
