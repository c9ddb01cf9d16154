"""Checkpointing: memory for time, on a 20-layer tanh MLP (width 1024, batch 256).

Each layer h -> tanh(h @ W + b) is wrapped in fgrad.checkpoint, so reverse mode
keeps only each layer's input and recomputes the rest during the backward pass.
Measured with tracemalloc (NumPy reports its allocations to it), side by side
with the unchecked version:

* the residuals: peak memory of `fgrad.vjp(loss, params)`, the forward pass
  plus everything it keeps for the backward pass (what checkpointing trades);
* the whole gradient, `fgrad.grad(loss)(params, x)`: this also allocates the
  gradient of every weight (160 MiB here), the same in both versions, which
  bounds how much any checkpointing can save on this measure;
* the time of the gradient.

Target: peak memory of the checkpointed gradient < 0.5 x the unchecked one,
time <= 1.5 x.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import check, interleaved, report

import fgrad
import fgrad.numpy as fnp

LAYERS, WIDTH, BATCH = 20, 1024, 256


def layer(h: Any, W: Any, b: Any) -> Any:
    return fnp.tanh(h @ W + b)


checkpointed_layer = fgrad.checkpoint(layer)


def make_loss(block: Callable[..., Any]) -> Callable[..., Any]:
    def loss(params: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> Any:
        h = x
        for W, b in params:
            h = block(h, W, b)
        return fnp.mean(h**2)

    return loss


def peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    out = fn()
    result = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del out
    return result


def main() -> None:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH), np.zeros(WIDTH)) for _ in range(LAYERS)]
    x = rng.standard_normal((BATCH, WIDTH))
    plain, saved = make_loss(layer), make_loss(checkpointed_layer)
    print("=" * 72)
    print(f"checkpoint: {LAYERS}-layer tanh MLP, width {WIDTH}, batch {BATCH}, float64")
    g_plain, g_saved = fgrad.grad(plain)(params, x), fgrad.grad(saved)(params, x)
    for (a, b), (c, d) in zip(g_plain, g_saved):
        if not (np.allclose(a, c) and np.allclose(b, d)):
            raise SystemExit("checkpoint: the checkpointed gradient differs")

    mib = 2.0**20
    res_plain = peak(lambda: fgrad.vjp(plain, params, x))
    res_saved = peak(lambda: fgrad.vjp(saved, params, x))
    grad_plain = peak(lambda: fgrad.grad(plain)(params, x))
    grad_saved = peak(lambda: fgrad.grad(saved)(params, x))
    print(f"  residuals (peak of vjp):    unchecked {res_plain / mib:7.1f} MiB, "
          f"checkpointed {res_saved / mib:7.1f} MiB, ratio {res_saved / res_plain:.3f}")
    print(f"  whole gradient (peak):      unchecked {grad_plain / mib:7.1f} MiB, "
          f"checkpointed {grad_saved / mib:7.1f} MiB, ratio {grad_saved / grad_plain:.3f}")
    check("checkpoint: residual memory, checkpointed / unchecked", res_saved / res_plain, 0.5)
    check("checkpoint: gradient peak memory, checkpointed / unchecked", grad_saved / grad_plain, 0.5)

    results = interleaved({"unchecked": lambda: fgrad.grad(plain)(params, x),
                           "checkpointed": lambda: fgrad.grad(saved)(params, x)}, repeats=7, number=1)
    report("checkpoint: gradient time, checkpointed / unchecked", results, "unchecked",
           target=1.5, subject="checkpointed")


if __name__ == "__main__":
    main()
