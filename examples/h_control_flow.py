"""(h) Python control flow is differentiated as written.

The function doubles b until its norm reaches 1000, then keeps it or scales
it by 100 depending on its sign. For each input it is linear (f(a) = k a),
so the gradient is f(a) / a.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp


def f(a):
    b = a * 2
    while fnp.linalg.norm(b) < 1000:
        b = b * 2
    c = b if fnp.sum(b) > 0 else 100 * b
    return c


for a in (0.3, -1.7):
    print(f"a = {a:5}: f(a) = {f(a):9.1f}, df/da = {fgrad.grad(f)(a):7.1f}, f(a)/a = {f(a) / a:7.1f}")

a = np.array([0.2, -0.4, 0.1])
c, f_vjp = fgrad.vjp(f, a)
print("vector a:", a)
print("  df/da (elementwise, via vjp) =", f_vjp(np.ones_like(c))[0])
print("  f(a)/a                        =", c / a)
