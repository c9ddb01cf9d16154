"""(g) "Detaching" a value: stop_gradient makes it a constant for differentiation.

z = stop_gradient(x*x) * x has dz/dx = x*x (the product rule sees u = x*x as
a constant), while y = x*x alone has dy/dx = 2x.
"""

import fgrad
import fgrad.numpy as fnp

x = fnp.arange(4.0)
print("x =", x)
print("d sum(stop_gradient(x*x) * x)/dx =", fgrad.grad(lambda x: fnp.sum(fgrad.stop_gradient(x * x) * x))(x))
print("d sum(x*x)/dx                    =", fgrad.grad(lambda x: fnp.sum(x * x))(x))
