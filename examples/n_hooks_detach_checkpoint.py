"""(n) PyTorch's register_hook, no_grad/detach and checkpoint, functionally.

* tap_grad(x, fn): x unchanged, and fn sees the cotangent that reaches x in
  the backward pass (register_hook).
* stop_gradient(x): x as a constant for differentiation (detach / no_grad).
* checkpoint(f): f's internals are recomputed in the backward pass instead of
  kept (torch.utils.checkpoint).
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import debug

x = np.array([1.0, 2.0, 3.0])


def f(x):
    y = debug.tap_grad(x * x, lambda g: print("cotangent reaching y = x*x:", g))
    return fnp.sum(fnp.sin(y))


print("df/dx =", fgrad.grad(f)(x))  # the hook runs during the backward pass
print("with y detached, d sum(stop_gradient(x*x) * x)/dx =",
      fgrad.grad(lambda x: fnp.sum(fgrad.stop_gradient(x * x) * x))(x))

layer = fgrad.checkpoint(lambda h, W: fnp.tanh(h @ W))
W = np.random.default_rng(0).normal(size=(3, 3))
loss = lambda x: fnp.sum(layer(layer(x, W), W) ** 2)  # noqa: E731
print("gradient through checkpointed layers:", fgrad.grad(loss)(x))
print("the backward pass recomputes tanh:",
      str(fgrad.make_jaxpr(fgrad.grad(loss))(x)).count("tanh"), "tanh equations for 2 layers")
