"""(t) A damped oscillator solved by fgrad.scipy.integrate.odeint, and differentiated.

x'' = -w0^2 x - c x', from x = 1, x' = 0, with w0 = 2: as a first-order
system in y = (x, v). `odeint(func, y0, t, *args)` is JAX's odeint (not
SciPy's): `func(y, t, *args)`, adaptive Dormand-Prince, pure NumPy. Its
derivative in the damping c, by the adjoint method (reverse mode), is
compared with that of the closed-form solution
x(t) = exp(-c t / 2) (cos(w t) + c / (2 w) sin(w t)), w = sqrt(w0^2 - c^2 / 4).
Saves odeint.png, x(t) for three dampings (odeint under vmap over c), when
matplotlib is installed (in examples/figures/, or in $FGRAD_EXAMPLES_OUT);
prints a table otherwise.
"""

import numpy as np
from _plotting import NO_MATPLOTLIB, save

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy.integrate import odeint

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

W0 = 2.0
ts = np.linspace(0.0, 10.0, 101)
TOL = {"rtol": 1e-10, "atol": 1e-10}  # JAX's defaults are 1.4e-8


def oscillator(y, t, c):
    x, v = y[0], y[1]
    return fnp.stack([v, -(W0**2) * x - c * v])


def x_ode(c, t_end=3.0):
    return odeint(oscillator, np.array([1.0, 0.0]), np.array([0.0, t_end]), c, **TOL)[-1, 0]


def x_exact(c, t=3.0):
    w = fnp.sqrt(W0**2 - c**2 / 4)
    return fnp.exp(-c * t / 2) * (fnp.cos(w * t) + c / (2 * w) * fnp.sin(w * t))


c = 0.5
print(f"x(3) at c = {c}: odeint {x_ode(c):.10f}, closed form {x_exact(c):.10f}")
d_ode, d_jit, d_exact = fgrad.grad(x_ode)(c), fgrad.jit(fgrad.grad(x_ode))(c), fgrad.grad(x_exact)(c)
print(f"dx(3)/dc: grad(odeint) {d_ode:.10f}, jit(grad(odeint)) {d_jit:.10f}, closed form {d_exact:.10f}")

dampings = np.array([0.2, 0.5, 1.5])
xs = fgrad.vmap(lambda c: odeint(oscillator, np.array([1.0, 0.0]), ts, c, **TOL)[:, 0])(dampings)
error = np.abs(xs - x_exact(dampings[:, None], ts)).max()
print(f"vmap over c = {dampings}: max |odeint - closed form| for t in [0, 10] = {error:.1e}")

if plt is None:
    print(f"\n{'t':>5}" + "".join(f"{f'x, c = {c}':>12}" for c in dampings))
    for i in range(0, len(ts), 10):
        print(f"{ts[i]:5.1f}" + "".join(f"{x:12.5f}" for x in xs[:, i]))
    print(NO_MATPLOTLIB)
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    for c, x in zip(dampings, xs):
        ax.plot(ts, x, label=f"c = {c}")
    ax.set_xlabel("t")
    ax.set_ylabel("x(t)")
    ax.set_title("x'' = -4 x - c x', x(0) = 1, x'(0) = 0, by odeint")
    ax.legend()
    save(fig, "odeint.png")
