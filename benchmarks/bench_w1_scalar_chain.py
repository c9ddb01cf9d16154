"""W1: gradient of a long chain of scalar operations in a Python loop.

    f(x, y): repeat 75 times x = log(exp(x) * y + 1.0); return x

That is 300 primitive operations (exp, mul, add, log) on 0-d values, so the
time is almost all per-operation overhead of the tracing machinery, not
arithmetic. The gradient is taken with respect to both x and y, called with
Python floats 0.5 and 1.2. Baseline: HIPS autograd. Target: fgrad <= 0.5 x
autograd. PyTorch (eager autograd) and JAX (grad without jit) are timed too
when installed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp

STEPS = 75
PRIMITIVES = 4 * STEPS
X0, Y0 = 0.5, 1.2
TARGET = 0.5


def chain(np_like: Any) -> Callable[[Any, Any], Any]:
    """f(x, y) written against a NumPy-like module (fgrad.numpy, autograd.numpy, torch, jax.numpy)."""
    log, exp = np_like.log, np_like.exp

    def f(x: Any, y: Any) -> Any:
        for _ in range(STEPS):
            x = log(exp(x) * y + 1.0)
        return x

    return f


def reference_grad(x: float, y: float) -> tuple[float, float]:
    """The gradient by forward-mode differentiation written out in plain Python."""
    dx_dx0, dx_dy = 1.0, 0.0
    for _ in range(STEPS):
        e = math.exp(x)
        u = e * y + 1.0
        dx_dx0, dx_dy = e * y / u * dx_dx0, (e * y * dx_dy + e) / u
        x = math.log(u)
    return dx_dx0, dx_dy


def torch_grad(torch: Any) -> Callable[[], tuple[float, float]]:
    f = chain(torch)

    def run() -> tuple[float, float]:
        x = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
        y = torch.tensor(Y0, dtype=torch.float64, requires_grad=True)
        f(x, y).backward()
        return float(x.grad), float(y.grad)

    return run


def main() -> None:
    print("=" * 72)
    print(f"W1: grad of {STEPS} x log(exp(x) * y + 1.0) ({PRIMITIVES} scalar primitives), argnums=(0, 1)")
    autograd = optional_import("autograd")
    torch = optional_import("torch")
    jax = optional_import("jax")

    fg = fgrad.grad(chain(fnp), argnums=(0, 1))
    contenders: dict[str, Callable[[], object]] = {"fgrad": lambda: fg(X0, Y0)}
    expected = np.array(reference_grad(X0, Y0))
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(chain(anp), argnum=(0, 1))
        contenders["autograd"] = lambda: ag(X0, Y0)
    if torch is not None:
        contenders["torch"] = torch_grad(torch)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jg = jax.grad(chain(jax.numpy), argnums=(0, 1))
        contenders["jax (no jit)"] = lambda: jg(X0, Y0)

    for name, fn in contenders.items():  # every contender must compute the same gradient
        got = np.array([float(g) for g in fn()])
        if not np.allclose(got, expected, rtol=1e-9):
            raise SystemExit(f"W1: {name} gradient {got} differs from the reference {expected}")

    repeats = 100 if len(contenders) <= 2 else 60
    baseline = "autograd" if autograd is not None else "fgrad"
    results = interleaved(contenders, repeats=repeats, number=5, baseline=baseline)
    report("W1 scalar chain: fgrad / autograd", results, baseline,
           target=TARGET if autograd is not None else None)
    print("  per primitive (total / 300):")
    for name, t in results.items():
        print(f"    {name:<20} {t / PRIMITIVES * 1e6:8.2f} µs")


if __name__ == "__main__":
    main()
