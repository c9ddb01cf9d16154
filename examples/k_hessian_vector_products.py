"""(k) Hessian-vector products without forming the Hessian, and a Newton step.

hvp(f)(x, v) = d/de grad f(x + e v) at e = 0: forward mode (jvp) over reverse
mode (grad). It costs about two gradients, whatever the dimension; the full
Hessian (fgrad.hessian, vmapped over the basis) costs one hvp per dimension.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp

rng = np.random.default_rng(0)
A = rng.standard_normal((5, 5))
b = rng.standard_normal(5)


def f(x):  # a smooth, strictly convex function
    return fnp.sum(fnp.log(1 + fnp.exp(A @ x))) + 0.5 * fnp.sum(x * x) - b @ x


def hvp(f, x, v):
    return fgrad.jvp(fgrad.grad(f), (x,), (v,))[1]


x, v = rng.standard_normal(5), rng.standard_normal(5)
H = fgrad.hessian(f)(x)
print("hvp(f)(x, v) =", hvp(f, x, v))
print("H @ v        =", H @ v)

# Newton's method: solve H dx = -grad, here with the full Hessian (5x5).
x = np.zeros(5)
for step in range(6):
    g = fgrad.grad(f)(x)
    x = x - np.linalg.solve(fgrad.hessian(f)(x), g)
    print(f"Newton step {step + 1}: f(x) = {f(x):.12f}, |grad| = {np.linalg.norm(fgrad.grad(f)(x)):.2e}")
