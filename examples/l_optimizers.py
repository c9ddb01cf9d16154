"""(l) Optimizers: fgrad.optim's functional versions of torch.optim, on pytrees.

An optimizer is `init(params) -> state` and `update(grads, state, params) ->
(params, state)`; nothing is mutated. (1) ASGD with PyTorch's defaults and lr 0.1
on y = x^2 - 2x + 1 from x = 0 (the loss printed is the one before each step).
(2) Adam solving a complex least-squares problem: as in optax, squared gradients
are |g|^2, and fgrad.grad gives df/dx - i df/dy, so the step takes its conjugate.
Adam fitting a line to data, with params a dict, is q_least_squares.py; sgd,
adam and asgd compared on the Rosenbrock function, p_rosenbrock.py.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp
import fgrad.optim as optim


def loss(x):
    return x**2 - 2 * x + 1


opt = optim.asgd(lr=0.1)
x = 0.0
state = opt.init(x)
for epoch in range(1, 31):
    value, g = fgrad.value_and_grad(loss)(x)
    x, state = opt.update(g, state, x)
    print(f"epoch {epoch:2d}: x = {x:.5f}, loss = {value:.5f}")
print(f"averaged x (state.ax) = {float(state.ax):.5f}\n")

rng = np.random.default_rng(0)
a = rng.standard_normal((8, 3)) + 1j * rng.standard_normal((8, 3))
z_true = np.array([1 - 2j, 0.5j, -1.5])
b = a @ z_true


def residual(z):
    r = a @ z - b
    return fnp.sum(fnp.real(r * fnp.conj(r)))


opt = optim.adam(lr=0.1)
z = np.zeros(3, complex)
state = opt.init(z)
for _ in range(300):
    z, state = opt.update(np.conj(fgrad.grad(residual)(z)), state, z)
print(f"complex least squares: |r|^2 = {residual(z):.2e}, z = {np.round(z, 4)}")
