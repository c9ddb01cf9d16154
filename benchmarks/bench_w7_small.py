"""W7: gradient of a tiny dense layer, sum(tanh(W @ x + b)), with respect to W.

W is 8 x 8, x and b have length 8 (float64, seeded). With arrays this small
the arithmetic costs next to nothing, so this measures the fixed cost of a
gradient call on a handful of array primitives: argument handling, tracing,
the backward pass. Baseline: HIPS autograd. Target: fgrad <= 0.5 x autograd.
PyTorch and JAX (grad without jit) are timed too when installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from harness import interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp

N = 8
TARGET = 0.5


def layer(np_like: Any) -> Callable[[Any, Any, Any], Any]:
    """sum(tanh(W @ x + b)) written against a NumPy-like module."""

    def f(W: Any, x: Any, b: Any) -> Any:
        return np_like.sum(np_like.tanh(W @ x + b))

    return f


def main() -> None:
    print("=" * 72)
    print(f"W7: grad_W of sum(tanh(W @ x + b)), W {N}x{N}, float64")
    autograd = optional_import("autograd")
    torch = optional_import("torch")
    jax = optional_import("jax")

    rng = np.random.default_rng(0)
    W, x, b = rng.standard_normal((N, N)), rng.standard_normal(N), rng.standard_normal(N)

    fg = fgrad.grad(layer(fnp), argnums=0)
    expected = 1.0 - np.tanh(W @ x + b) ** 2  # d/dW = outer(sech^2(W x + b), x)
    expected = np.outer(expected, x)
    contenders: dict[str, Callable[[], Any]] = {"fgrad": lambda: fg(W, x, b)}
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(layer(anp), argnum=0)
        contenders["autograd"] = lambda: ag(W, x, b)
    if torch is not None:
        f_torch = layer(torch)
        tx, tb = torch.from_numpy(x), torch.from_numpy(b)

        def torch_grad() -> Any:
            tW = torch.from_numpy(W).requires_grad_(True)
            f_torch(tW, tx, tb).backward()
            return tW.grad

        contenders["torch"] = torch_grad
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jg = jax.grad(layer(jax.numpy), argnums=0)
        contenders["jax (no jit)"] = lambda: jg(W, x, b)

    for name, fn in contenders.items():  # every contender must compute the same gradient
        got = np.asarray(fn())
        if not np.allclose(got, expected, rtol=1e-9):
            raise SystemExit(f"W7: {name} gradient differs from the closed form:\n{got}\n{expected}")

    baseline = "autograd" if autograd is not None else "fgrad"
    results = interleaved(contenders, repeats=100, number=50, baseline=baseline)
    report("W7 small layer: fgrad / autograd", results, baseline,
           target=TARGET if autograd is not None else None)


if __name__ == "__main__":
    main()
