"""W8: the gradient of a 200-step tanh RNN (hidden 64, batch 16, float64) with
respect to its weights, written with `lax.scan`:

    h_{t+1} = tanh(h_t @ W + x_t @ U + b),   loss = sum(h_T ** 2)

Two comparisons, each timed in alternated pairs:

    fgrad.jit(grad) of the scan      target <= 1.5 x jax.jit(grad) of jax.lax.scan
    eager fgrad.grad of the scan     target <= 1.0 x HIPS autograd's grad of a Python loop

Without JAX (or autograd) the pair is timed against eager fgrad and no
target is checked. PyTorch eager (a Python loop, backward()) is timed for
reference when it is in the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from harness import check_agree, interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp
from fgrad import lax

STEPS, HIDDEN, BATCH, INPUT = 200, 64, 16, 8
JIT_TARGET, EAGER_TARGET = 1.5, 1.0


def problem() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    params = {"W": rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN),
              "U": rng.standard_normal((INPUT, HIDDEN)) / np.sqrt(INPUT), "b": np.zeros(HIDDEN)}
    return params, rng.standard_normal((BATCH, HIDDEN)) * 0.1, rng.standard_normal((STEPS, BATCH, INPUT))


def scan_loss(np_like: Any, scan: Callable[..., Any]) -> Callable[..., Any]:
    def loss(params: Any, h0: Any, xs: Any) -> Any:
        def step(h: Any, x: Any) -> Any:
            return np_like.tanh(h @ params["W"] + x @ params["U"] + params["b"]), None

        h, _ = scan(step, h0, xs)
        return np_like.sum(h ** 2)

    return loss


def loop_loss(np_like: Any) -> Callable[..., Any]:
    def loss(params: Any, h0: Any, xs: Any) -> Any:
        h = h0
        for x in xs:
            h = np_like.tanh(h @ params["W"] + x @ params["U"] + params["b"])
        return np_like.sum(h ** 2)

    return loss


def main() -> None:
    print("=" * 72)
    print(f"W8: grad of a {STEPS}-step tanh RNN (hidden {HIDDEN}, batch {BATCH}) written with lax.scan")
    autograd = optional_import("autograd")
    jax = optional_import("jax")
    torch = optional_import("torch")
    params, h0, xs = problem()
    eager = fgrad.grad(scan_loss(fnp, lax.scan))
    jitted = fgrad.jit(fgrad.grad(scan_loss(fnp, lax.scan)))
    contenders: dict[str, Callable[[], Any]] = {
        "fgrad.jit": lambda: jitted(params, h0, xs), "fgrad (eager)": lambda: eager(params, h0, xs),
    }
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(loop_loss(anp))
        contenders["autograd (loop)"] = lambda: ag(params, h0, xs)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jg = jax.jit(jax.grad(scan_loss(jax.numpy, jax.lax.scan)))
        contenders["jax.jit"] = lambda: {k: np.asarray(v) for k, v in jax.block_until_ready(
            jg(params, h0, xs)).items()}
    if torch is not None:
        tx, th = torch.from_numpy(xs), torch.from_numpy(h0)

        def torch_grad() -> Any:
            tp = {k: torch.from_numpy(v).requires_grad_(True) for k, v in params.items()}
            loop_loss(torch)(tp, th, tx).backward()
            return {k: v.grad.numpy() for k, v in tp.items()}

        contenders["torch (loop)"] = torch_grad
    check_agree("W8", contenders, "fgrad (eager)")
    jit_base = "jax.jit" if jax is not None else "fgrad (eager)"
    pair = {n: contenders[n] for n in ("fgrad.jit", jit_base)}
    timed = interleaved(pair, repeats=15, number=3, baseline=jit_base)
    report("W8 jit(grad): fgrad.jit / " + jit_base, timed, jit_base,
           target=JIT_TARGET if jax is not None else None, subject="fgrad.jit")
    eager_base = "autograd (loop)" if autograd is not None else "fgrad.jit"
    others = {n: f for n, f in contenders.items() if n not in ("fgrad.jit", "jax.jit")}
    report("W8 eager grad: fgrad / " + eager_base,
           interleaved({**others, **({} if autograd else {"fgrad.jit": contenders["fgrad.jit"]})},
                       repeats=9, number=2, baseline=eager_base),
           eager_base, target=EAGER_TARGET if autograd is not None else None, subject="fgrad (eager)")


if __name__ == "__main__":
    main()
