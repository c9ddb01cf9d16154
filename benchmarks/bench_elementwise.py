"""The gradient of a large elementwise function: sum(sin(x) * exp(-x**2)), x of 1e6 float64.

Every array here is 8 MB, so Python overhead is nothing and what counts is
the number of passes over memory and the fresh memory each pass fills: the
work a transform adds in its rules (unbroadcasts, zeros, temporaries). sin
and cos cost most of the time and both sides compute both.

Baseline: the gradient written by hand, (cos(x) - 2x sin(x)) exp(-x^2), with
the subexpressions shared as one would write it. fgrad also computes the
value (grad evaluates the function), which the baseline skips. Target: fgrad
<= 1.1 x hand-written. HIPS autograd, PyTorch and JAX (no jit) are timed too
when installed.

Then W6, `jit(grad)` of the same function: fgrad.jit with its elementwise
cluster fused (run in cache-sized blocks across threads, ir/fusion.py), the
same on one thread, and without fusion (one NumPy call per equation on the
whole arrays, `jit_fusion` off), beside the hand-written NumPy and
`jax.jit(grad)` (float64) when JAX is installed. Target: fused fgrad.jit <=
1.0 x jax.jit (without JAX, the pairs are with the hand-written NumPy and no
target is checked). Run with FGRAD_BENCH_PEERS=jax to keep PyTorch out of the
process (its threads slow what runs after it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from harness import interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp

SIZE = 1_000_000
TARGET = 1.1
JIT_TARGET = 1.0  # W6: fgrad.jit(grad) <= jax.jit(grad)


def loss_fn(np_like: Any) -> Callable[[Any], Any]:
    """The function written against a NumPy-like module."""

    def f(x: Any) -> Any:
        return np_like.sum(np_like.sin(x) * np_like.exp(-(x**2)))

    return f


def manual_grad(x: np.ndarray) -> np.ndarray:
    """The gradient by hand: d/dx sin(x) e^(-x^2) = (cos(x) - 2x sin(x)) e^(-x^2)."""
    s = np.sin(x)
    e = np.exp(-x * x)
    return (np.cos(x) - 2 * x * s) * e


def main() -> None:
    print("=" * 72)
    print(f"Elementwise: grad of sum(sin(x) * exp(-x**2)), x of {SIZE:.0e} float64")
    autograd = optional_import("autograd")
    torch = optional_import("torch")
    jax = optional_import("jax")

    x = np.random.default_rng(0).standard_normal(SIZE)
    expected = manual_grad(x)
    contenders: dict[str, Callable[[], Any]] = {
        "hand-written numpy": lambda: manual_grad(x),
        "fgrad": lambda: fgrad.grad(loss_fn(fnp))(x),
    }
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(loss_fn(anp))
        contenders["autograd"] = lambda: ag(x)
    if torch is not None:
        tx = torch.from_numpy(x)

        def torch_grad() -> Any:
            t = tx.detach().requires_grad_(True)
            (torch.sin(t) * torch.exp(-(t**2))).sum().backward()
            return t.grad

        contenders["torch"] = torch_grad
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jg = jax.grad(loss_fn(jax.numpy))
        contenders["jax (no jit)"] = lambda: jax.block_until_ready(jg(x))

    for name, fn in contenders.items():  # every contender computes the same gradient
        if not np.allclose(np.asarray(fn()), expected, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"elementwise: {name} gradient differs from the hand-written one")

    results = interleaved(contenders, repeats=30, number=2, baseline="hand-written numpy")
    report("Elementwise 1e6 grad: fgrad / hand-written", results, "hand-written numpy", target=TARGET)
    main_jit(x, expected, jax)


@contextlib.contextmanager
def options(**settings: Any) -> Iterator[None]:
    """fgrad.config's options set for a while."""
    saved = {name: getattr(fgrad.config, name) for name in settings}
    for name, value in settings.items():
        fgrad.config.update(name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            fgrad.config.update(name, value)


def main_jit(x: np.ndarray, expected: np.ndarray, jax: Any) -> None:
    """W6: fgrad.jit(grad) fused, fused on one thread, unfused; hand-written NumPy; jax.jit."""
    print("=" * 72)
    print(f"W6: jit(grad) of sum(sin(x) * exp(-x**2)), x of {SIZE:.0e} float64, fused or not")
    fused = fgrad.jit(fgrad.grad(loss_fn(fnp)))
    with options(jit_fusion=False):  # read when the code is generated: at the first call
        unfused = fgrad.jit(fgrad.grad(loss_fn(fnp)))
        unfused(x)

    def one_thread() -> Any:
        with options(jit_fusion_threads=1):  # read at each call
            return fused(x)

    contenders: dict[str, Callable[[], Any]] = {
        "fgrad.jit fused": lambda: fused(x), "fgrad.jit fused, 1 thread": one_thread,
        "fgrad.jit unfused": lambda: unfused(x), "hand-written numpy": lambda: manual_grad(x),
    }
    if jax is not None:
        jg = jax.jit(jax.grad(loss_fn(jax.numpy)))
        contenders["jax.jit"] = lambda: jax.block_until_ready(jg(x))
    for name, fn in contenders.items():
        if not np.allclose(np.asarray(fn()), expected, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"W6: {name} gradient differs from the hand-written one")
    if not np.array_equal(fused(x), unfused(x)):
        raise SystemExit("W6: the fused gradient's bits differ from the unfused one's")
    baseline = "jax.jit" if jax is not None else "hand-written numpy"
    results = interleaved(contenders, repeats=20, number=2, baseline=baseline)
    report(f"W6 jit(grad): fgrad.jit fused / {baseline}", results, baseline,
           target=JIT_TARGET if jax is not None else None, subject="fgrad.jit fused")


if __name__ == "__main__":
    main()
