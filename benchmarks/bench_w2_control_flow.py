"""W2: the gradient of d2l's control-flow function, Python `while` and `if` on traced values.

    def f(a):
        b = a * 2
        while norm(b) < 1000:
            b = b * 2
        c = b if sum(b) > 0 else 100 * b
        return sum(c)

From "Dive into Deep Learning", section 2.5.4 (Gradients and Python Control
Flow). There `a` is a random scalar, `f` returns `c` and `c.backward()` gives
the gradient; here `a` is a vector of 1000 seeded standard normals, so `f`
returns `sum(c)` to have a scalar to differentiate. `c` is `k * a` for a
`k` that depends on `a` (2 ** steps, times 100 if the sum is negative), so
the gradient is `k` everywhere: d2l's check `a.grad == d / a`. With n = 1000
the loop runs about five times, each step a norm and a comparison: this
measures per-operation overhead on small arrays, with the control flow
reading concrete values out of the tracers. Baseline: HIPS autograd. Target:
fgrad <= 1.0 x autograd. PyTorch and JAX (grad without jit) are timed too
when installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from harness import interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp

N = 1000
TARGET = 1.0


def control_flow(norm: Callable[[Any], Any], total: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """f(a) written with a NumPy-like library's norm and sum."""

    def f(a: Any) -> Any:
        b = a * 2
        while norm(b) < 1000:
            b = b * 2
        c = b if total(b) > 0 else 100 * b
        return total(c)

    return f


def closed_form(a: np.ndarray) -> tuple[np.ndarray, int]:
    """The gradient (f is linear in `a`, with a factor k fixed by the control
    flow) and the number of times the loop doubled b."""
    k, doublings = 2.0, 0
    while np.linalg.norm(k * a) < 1000:
        k, doublings = 2 * k, doublings + 1
    if np.sum(k * a) <= 0:
        k *= 100
    return np.full_like(a, k), doublings


def main() -> None:
    print("=" * 72)
    print(f"W2: grad of d2l's control-flow function (while norm(b) < 1000, if sum(b) > 0), a of {N} float64")
    autograd = optional_import("autograd")
    torch = optional_import("torch")
    jax = optional_import("jax")

    a = np.random.default_rng(0).standard_normal(N)
    expected, doublings = closed_form(a)

    fg = fgrad.grad(control_flow(fnp.linalg.norm, fnp.sum))
    contenders: dict[str, Callable[[], Any]] = {"fgrad": lambda: fg(a)}
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(control_flow(anp.linalg.norm, anp.sum))
        contenders["autograd"] = lambda: ag(a)
    if torch is not None:
        f_torch = control_flow(torch.linalg.norm, torch.sum)
        ta = torch.from_numpy(a)

        def torch_grad() -> Any:
            t = ta.detach().requires_grad_(True)
            f_torch(t).backward()
            return t.grad

        contenders["torch"] = torch_grad
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jg = jax.grad(control_flow(jax.numpy.linalg.norm, jax.numpy.sum))
        contenders["jax (no jit)"] = lambda: jax.block_until_ready(jg(a))

    for name, fn in contenders.items():  # every contender must compute the same gradient
        got = np.asarray(fn())
        if not np.allclose(got, expected, rtol=1e-12):
            raise SystemExit(f"W2: {name} gradient differs from the closed form {expected[0]:g} * ones")

    baseline = "autograd" if autograd is not None else "fgrad"
    results = interleaved(contenders, repeats=100, number=20, baseline=baseline)
    report("W2 control flow: fgrad / autograd", results, baseline,
           target=TARGET if autograd is not None else None)
    print(f"  ({doublings + 1} norms and {doublings} doublings in the loop; the gradient is {expected[0]:g} "
          "everywhere)")


if __name__ == "__main__":
    main()
