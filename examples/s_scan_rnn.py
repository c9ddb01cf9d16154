"""(s) A recurrent network with fgrad.lax.scan, and reverse mode through while_loop.

(1) The RNN h_t = tanh(h_{t-1} @ W + x_t @ U), over T = 50 steps of a
3-dimensional input with an 8-dimensional state, is one `lax.scan`: one
traced body, however long the sequence. Its loss and gradient, eagerly and
under `jit(grad)`, are compared with the same RNN written as a Python loop,
then a few steps of gradient descent fit it to the target (the mean of
the input so far, in every state coordinate). (2) `lax.while_loop` runs until
a test holds, so its number of steps is known only when it runs; JAX cannot
take its reverse-mode derivative, fgrad can: Newton's iteration for sqrt(a),
differentiated in a, against the closed form 1 / (2 sqrt(a)).
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import lax

rng = np.random.default_rng(0)
T, n_in, n_h = 50, 3, 8
xs = rng.standard_normal((T, n_in))
targets = np.cumsum(xs.mean(axis=1)) / np.arange(1, T + 1)  # the running mean of the inputs
params = {"W": 0.3 * rng.standard_normal((n_h, n_h)), "U": 0.3 * rng.standard_normal((n_in, n_h))}


def loss_scan(params):
    def cell(h, x):
        h = fnp.tanh(h @ params["W"] + x @ params["U"])
        return h, h

    _, hs = lax.scan(cell, fnp.zeros(n_h), xs)
    return fnp.mean((hs - targets[:, None]) ** 2)


def loss_loop(params):
    h, total = fnp.zeros(n_h), 0.0
    for t in range(T):
        h = fnp.tanh(h @ params["W"] + xs[t] @ params["U"])
        total = total + fnp.sum((h - targets[t]) ** 2)
    return total / (T * n_h)


g_loop = fgrad.grad(loss_loop)(params)
for name, grad in (("grad", fgrad.grad(loss_scan)), ("jit(grad)", fgrad.jit(fgrad.grad(loss_scan)))):
    g = grad(params)
    diff = max(np.abs(g[k] - g_loop[k]).max() for k in g)
    print(f"scan vs Python loop, {name:9}: max |gradient difference| = {diff:.1e}")
print(f"loss: scan {loss_scan(params):.6f}, loop {loss_loop(params):.6f}")

value_and_grad = fgrad.jit(fgrad.value_and_grad(loss_scan))
for step in range(1, 201):
    value, g = value_and_grad(params)
    params = {k: params[k] - 0.5 * g[k] for k in params}
    if step in (1, 50, 100, 200):
        print(f"step {step:3d}: loss = {value:.5f}")


def newton_sqrt(a):
    def far(y):
        return fnp.abs(y * y - a) > 1e-12 * a

    return lax.while_loop(far, lambda y: 0.5 * (y + a / y), fnp.maximum(a, 1.0))


print("\nsqrt(a) by Newton's iteration in lax.while_loop, and its derivative in a:")
for a in (0.5, 2.0, 10.0):
    d, d_jit = fgrad.grad(newton_sqrt)(a), fgrad.jit(fgrad.grad(newton_sqrt))(a)
    print(f"a = {a:4}: sqrt = {newton_sqrt(a):.10f}, grad = {d:.10f}, jit(grad) = {d_jit:.10f},"
          f" 1/(2 sqrt a) = {0.5 / np.sqrt(a):.10f}")
