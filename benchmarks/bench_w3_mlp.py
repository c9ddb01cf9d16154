"""W3: loss and gradient of an MLP 784-256-256-10, the workload of a training step.

tanh hidden layers, softmax cross-entropy written stably with a log-sum-exp
(the max is differentiated through, no stop-gradient), batch 128, float64.
Parameters are a list of (W, b) tuples and the gradient is taken with respect
to the whole list. Here the arrays are large enough that the matrix products
dominate, so this measures what a transform adds on top of the NumPy work:
bookkeeping, extra temporaries, residuals kept for the backward pass.

Baseline: a hand-written NumPy forward and backward pass (checked against
fgrad's gradient at startup). Targets: fgrad time <= 1.3 x hand-written, and
fgrad peak memory of one gradient computation (tracemalloc, which NumPy
reports its array allocations to) <= 1.5 x hand-written. HIPS autograd,
PyTorch and JAX (no jit) are timed too when installed.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import check, interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp

SIZES = (784, 256, 256, 10)
BATCH = 128
TIME_TARGET = 1.3
MEMORY_TARGET = 1.5

Params = list[tuple[np.ndarray, np.ndarray]]


def make_problem(seed: int = 0) -> tuple[Params, np.ndarray, np.ndarray]:
    """Seeded parameters, inputs and one-hot labels."""
    rng = np.random.default_rng(seed)
    params = [
        (rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
        for m, n in zip(SIZES[:-1], SIZES[1:])
    ]
    inputs = rng.standard_normal((BATCH, SIZES[0]))
    onehot = np.eye(SIZES[-1])[rng.integers(0, SIZES[-1], BATCH)]
    return params, inputs, onehot


def loss_fn(np_like: Any) -> Callable[[Any, Any, Any], Any]:
    """The loss written against a NumPy-like module (fgrad.numpy, autograd.numpy, jax.numpy)."""

    def loss(params: Any, inputs: Any, onehot: Any) -> Any:
        h = inputs
        for W, b in params[:-1]:
            h = np_like.tanh(h @ W + b)
        W, b = params[-1]
        logits = h @ W + b
        m = np_like.max(logits, axis=1, keepdims=True)
        lse = m + np_like.log(np_like.sum(np_like.exp(logits - m), axis=1, keepdims=True))
        return -np_like.mean(np_like.sum(onehot * (logits - lse), axis=1))

    return loss


def manual_value_and_grad(params: Params, inputs: np.ndarray, onehot: np.ndarray) -> tuple[float, Params]:
    """The same loss and its gradient by hand-written backpropagation in NumPy."""
    hs = [inputs]  # the input of each layer
    for W, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ W + b))
    W, b = params[-1]
    logits = hs[-1] @ W + b
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum(onehot * (shifted - np.log(s)), axis=1))
    # d loss / d logits = (softmax - onehot) / batch; the max cancels out exactly.
    g = e / s
    g -= onehot
    g /= len(inputs)
    grads: Params = []
    for i in range(len(params) - 1, -1, -1):
        h = hs[i]
        grads.append((h.T @ g, g.sum(axis=0)))
        if i > 0:
            g = g @ params[i][0].T
            g *= 1.0 - h * h  # tanh' = 1 - tanh^2, h = tanh(previous pre-activation)
    grads.reverse()
    return loss, grads


def torch_value_and_grad(torch: Any, params: Params, inputs: np.ndarray,
                         onehot: np.ndarray) -> Callable[[], Any]:
    tx, ty = torch.from_numpy(inputs), torch.from_numpy(onehot)

    def run() -> Any:
        tp = [(torch.from_numpy(W).requires_grad_(True), torch.from_numpy(b).requires_grad_(True))
              for W, b in params]
        h = tx
        for W, b in tp[:-1]:
            h = torch.tanh(h @ W + b)
        W, b = tp[-1]
        logits = h @ W + b
        m = logits.amax(dim=1, keepdim=True)
        lse = m + torch.log(torch.exp(logits - m).sum(dim=1, keepdim=True))
        loss = -(ty * (logits - lse)).sum(dim=1).mean()
        loss.backward()
        return float(loss), [(W.grad, b.grad) for W, b in tp]

    return run


def peak_bytes(fn: Callable[[], Any], trials: int = 3) -> int:
    """Smallest tracemalloc peak, over a few calls, of the memory `fn` allocates."""
    peaks = []
    for _ in range(trials):
        gc.collect()
        tracemalloc.start()
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del out
        peaks.append(peak)
    return min(peaks)


def main() -> None:
    print("=" * 72)
    print(f"W3: value_and_grad of MLP {'-'.join(map(str, SIZES))}, tanh, softmax xent, batch {BATCH}")
    autograd = optional_import("autograd")
    torch = optional_import("torch")
    jax = optional_import("jax")

    params, inputs, onehot = make_problem()
    fg = fgrad.value_and_grad(loss_fn(fnp))

    # The hand-written baseline must compute exactly what fgrad does.
    value, grads = fg(params, inputs, onehot)
    m_value, m_grads = manual_value_and_grad(params, inputs, onehot)
    ok = np.allclose(value, m_value, rtol=1e-10) and all(
        np.allclose(a, b, rtol=1e-7, atol=1e-12)
        for ga, gb in zip(grads, m_grads) for a, b in zip(ga, gb)
    )
    if not ok:
        raise SystemExit("W3: the hand-written backprop does not match fgrad's gradient; aborting")

    contenders: dict[str, Callable[[], Any]] = {
        "hand-written numpy": lambda: manual_value_and_grad(params, inputs, onehot),
        "fgrad": lambda: fg(params, inputs, onehot),
    }
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.value_and_grad(loss_fn(anp))
        contenders["autograd"] = lambda: ag(params, inputs, onehot)
    if torch is not None:
        contenders["torch"] = torch_value_and_grad(torch, params, inputs, onehot)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jg = jax.value_and_grad(loss_fn(jax.numpy))
        contenders["jax (no jit)"] = lambda: jax.block_until_ready(jg(params, inputs, onehot))

    for name, fn in contenders.items():  # every contender must agree with the hand-written one
        v, gs = fn()
        if not np.allclose(float(v), m_value, rtol=1e-9) or not all(
            np.allclose(np.asarray(a), b, rtol=1e-6, atol=1e-12)
            for ga, gb in zip(gs, m_grads) for a, b in zip(ga, gb)
        ):
            raise SystemExit(f"W3: {name} gradient differs from the hand-written one")

    results = interleaved(contenders, repeats=80, number=2, baseline="hand-written numpy")
    report("W3 MLP time: fgrad / hand-written", results, "hand-written numpy", target=TIME_TARGET)

    print("\n  peak memory of one value_and_grad (tracemalloc):")
    peaks = {name: peak_bytes(fn) for name, fn in contenders.items() if name in
             ("hand-written numpy", "fgrad", "autograd")}
    for name, peak in peaks.items():
        print(f"    {name:<20} {peak / 2**20:8.2f} MiB   {peak / peaks['hand-written numpy']:6.3f}")
    check("W3 MLP peak memory: fgrad / hand-written",
          peaks["fgrad"] / peaks["hand-written numpy"], MEMORY_TARGET)


if __name__ == "__main__":
    main()
