"""fgrad.jit: steady-state and first-call times of jitted gradients (issue 10).

The workloads of the other benchmarks, each as `fgrad.jit(transform(f))`,
timed after a warm-up call against eager fgrad, against the baseline that
benchmark uses (HIPS autograd, hand-written NumPy, the closed form) and, when
JAX is installed, against `jax.jit` of the same transform (float64 enabled):

    W1  grad of the 300-op scalar chain, argnums (0, 1)   target <= 2 x jax.jit
    W7  grad_W of sum(tanh(W @ x + b)), 8 x 8             target <= 1 x jax.jit
    W3  value_and_grad of the 784-256-256-10 MLP          target <= 1 x hand-written
    1e6 grad of sum(sin(x) * exp(-x**2))                  target <= 0.9 x hand-written
    W4  jit(jacrev) of tanh(A x) * x, A 256 x 256         target <= 1 x jax.jit
    W5  jit(hessian) of sum(tanh(A x)^2), A 64 x 64       target <= 1 x jax.jit

Each contender is timed in a pair with the reference of its target (jax.jit,
or the hand-written pass; without JAX the hand-written or closed form, and
no JAX target is checked), and every result is first checked against eager
fgrad's. Then the first call (trace, optimise, generate and compile code, run)
of W1, W3 and W7, each in a fresh interpreter since a first call is first only
once per process, against jax.jit's first call: target <= 0.25 x.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_elementwise import SIZE
from bench_elementwise import loss_fn as elementwise_fn
from bench_elementwise import manual_grad as elementwise_manual
from bench_w1_scalar_chain import STEPS, X0, Y0, chain
from bench_w3_mlp import loss_fn as mlp_loss
from bench_w3_mlp import make_problem, manual_value_and_grad
from bench_w4_w5_jacobians import w4, w4_closed, w5, w5_closed
from bench_w7_small import N, layer
from harness import Timing, check_agree, interleaved, optional_import, ratio, report

import fgrad
import fgrad.numpy as fnp

W1_TARGET, W7_TARGET, W3_TARGET, ELEMENTWISE_TARGET, W4_W5_TARGET = 2.0, 1.0, 1.0, 0.9, 1.0
FIRST_CALL_TARGET = 0.25
FIRST_CALL_REPEATS = 7
JIT = "fgrad.jit"
EAGER = "fgrad (eager)"


def w1_numpy(x: float, y: float) -> tuple[float, float]:
    """W1's gradient by a hand-written backward pass in NumPy (forward values kept, then reversed)."""
    saved = []
    for _ in range(STEPS):
        e = np.exp(x)
        u = e * y + 1.0
        saved.append((e, u))
        x = np.log(u)
    gx, gy = 1.0, 0.0
    for e, u in reversed(saved):  # x' = log(e^x y + 1): dx'/dx = e y / u, dx'/dy = e / u
        gy += gx * e / u
        gx = gx * e * y / u
    return gx, gy


def w7_numpy(W: np.ndarray, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    t = np.tanh(W @ x + b)
    return np.outer(1.0 - t * t, x)


def check_against_eager(title: str, contenders: dict[str, Callable[[], Any]], rtol: float = 1e-9,
                        atol: float = 1e-12) -> None:
    """Every contender's result must match eager fgrad's (leaf by leaf)."""
    check_agree(title, contenders, EAGER, rtol, atol)


def compare(title: str, contenders: dict[str, Callable[[], Any]], target_ref: str, target: float,
            fallback: str, repeats: int, number: int) -> None:
    """Time `contenders` in pairs with `target_ref` (or `fallback` when it is absent), print
    the table, the target, and fgrad.jit's ratio to every other contender."""
    baseline = target_ref if target_ref in contenders else fallback
    results = interleaved(contenders, repeats=repeats, number=number, baseline=baseline)
    report(f"{title}: {JIT} / {baseline}", results, baseline,
           target=target if baseline == target_ref else None, subject=JIT)
    if baseline != target_ref:
        print(f"  ({target_ref} not in this run: no target (<= {target:g} x {target_ref}) checked)")
    mine = ratio(results, JIT, baseline)
    for name in results:
        if name not in (JIT, baseline):
            derived = mine / ratio(results, name, baseline)
            print(f"  {JIT} / {name}: {derived:7.3f} (ratio of the pairs' ratios)")


def bench_w1(autograd: Any, jax: Any) -> None:
    print("=" * 72)
    print(f"W1 jit(grad) of {STEPS} x log(exp(x) * y + 1.0), argnums=(0, 1)")
    eager = fgrad.grad(chain(fnp), argnums=(0, 1))
    jitted = fgrad.jit(fgrad.grad(chain(fnp), argnums=(0, 1)))
    contenders: dict[str, Callable[[], Any]] = {
        JIT: lambda: jitted(X0, Y0), EAGER: lambda: eager(X0, Y0),
        "hand-written numpy": lambda: w1_numpy(X0, Y0),
    }
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(chain(anp), argnum=(0, 1))
        contenders["autograd"] = lambda: ag(X0, Y0)
    if jax is not None:
        jg = jax.jit(jax.grad(chain(jax.numpy), argnums=(0, 1)))
        contenders["jax.jit"] = lambda: jax.block_until_ready(jg(X0, Y0))
    check_against_eager("W1", contenders)
    compare("W1 jit(grad)", contenders, "jax.jit", W1_TARGET, "hand-written numpy", repeats=60, number=5)


def bench_w7(autograd: Any, jax: Any) -> None:
    print("=" * 72)
    print(f"W7 jit(grad_W) of sum(tanh(W @ x + b)), W {N}x{N}")
    rng = np.random.default_rng(0)
    W, x, b = rng.standard_normal((N, N)), rng.standard_normal(N), rng.standard_normal(N)
    eager = fgrad.grad(layer(fnp))
    jitted = fgrad.jit(fgrad.grad(layer(fnp)))
    contenders: dict[str, Callable[[], Any]] = {
        JIT: lambda: jitted(W, x, b), EAGER: lambda: eager(W, x, b),
        "hand-written numpy": lambda: w7_numpy(W, x, b),
    }
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(layer(anp), argnum=0)
        contenders["autograd"] = lambda: ag(W, x, b)
    if jax is not None:
        jg = jax.jit(jax.grad(layer(jax.numpy)))
        contenders["jax.jit"] = lambda: jax.block_until_ready(jg(W, x, b))
    check_against_eager("W7", contenders)
    compare("W7 jit(grad)", contenders, "jax.jit", W7_TARGET, "hand-written numpy", repeats=100, number=50)


def bench_w3(jax: Any) -> None:
    print("=" * 72)
    print("W3 jit(value_and_grad) of the MLP 784-256-256-10, batch 128")
    params, inputs, onehot = make_problem()
    eager = fgrad.value_and_grad(mlp_loss(fnp))
    jitted = fgrad.jit(fgrad.value_and_grad(mlp_loss(fnp)))
    contenders: dict[str, Callable[[], Any]] = {
        JIT: lambda: jitted(params, inputs, onehot), EAGER: lambda: eager(params, inputs, onehot),
        "hand-written numpy": lambda: manual_value_and_grad(params, inputs, onehot),
    }
    if jax is not None:
        jg = jax.jit(jax.value_and_grad(mlp_loss(jax.numpy)))
        contenders["jax.jit"] = lambda: jax.block_until_ready(jg(params, inputs, onehot))
    check_against_eager("W3", contenders, rtol=1e-7)
    compare("W3 jit(value_and_grad)", contenders, "hand-written numpy", W3_TARGET, "hand-written numpy",
            repeats=60, number=2)


def bench_elementwise(jax: Any) -> None:
    print("=" * 72)
    print(f"Elementwise jit(grad) of sum(sin(x) * exp(-x**2)), x of {SIZE:.0e} float64")
    x = np.random.default_rng(0).standard_normal(SIZE)
    eager = fgrad.grad(elementwise_fn(fnp))
    jitted = fgrad.jit(fgrad.grad(elementwise_fn(fnp)))
    contenders: dict[str, Callable[[], Any]] = {
        JIT: lambda: jitted(x), EAGER: lambda: eager(x), "hand-written numpy": lambda: elementwise_manual(x),
    }
    if jax is not None:
        jg = jax.jit(jax.grad(elementwise_fn(jax.numpy)))
        contenders["jax.jit"] = lambda: jax.block_until_ready(jg(x))
    check_against_eager("Elementwise", contenders)
    compare("Elementwise 1e6 jit(grad)", contenders, "hand-written numpy", ELEMENTWISE_TARGET,
            "hand-written numpy", repeats=30, number=2)


def bench_w4_w5(autograd: Any, jax: Any) -> None:
    rng = np.random.default_rng(0)
    for title, build, closed, transform, n, repeats, number in (
        ("W4 jit(jacrev)", w4, w4_closed, "jacrev", 256, 15, 2),
        ("W5 jit(hessian)", w5, w5_closed, "hessian", 64, 20, 3),
    ):
        print("=" * 72)
        print(f"{title}, A {n}x{n}")
        A, x = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)
        eager = getattr(fgrad, transform)(build(fnp, A))
        jitted = fgrad.jit(getattr(fgrad, transform)(build(fnp, A)))
        contenders: dict[str, Callable[[], Any]] = {
            JIT: lambda: jitted(x), EAGER: lambda: eager(x), "closed form (numpy)": lambda: closed(A, x),
        }
        if autograd is not None:
            import autograd.numpy as anp

            ag = (autograd.jacobian if transform == "jacrev" else autograd.hessian)(build(anp, A))
            contenders["autograd"] = lambda: ag(x)
        if jax is not None:
            jg = jax.jit(getattr(jax, transform)(build(jax.numpy, A)))
            contenders["jax.jit"] = lambda: jax.block_until_ready(jg(x))
        check_against_eager(title, contenders, rtol=1e-8, atol=1e-8)
        compare(title, contenders, "jax.jit", W4_W5_TARGET, "closed form (numpy)", repeats, number)


# --- first calls, each in a fresh interpreter ------------------------------------------------
def first_call(workload: str, contender: str) -> float:
    """Seconds of building and calling the jitted (or eager) gradient once, in this process."""
    if contender == "jax.jit":
        import jax

        jax.config.update("jax_enable_x64", True)
        np_like, wrap, grad, value_and_grad = jax.numpy, jax.jit, jax.grad, jax.value_and_grad
    else:
        np_like, grad, value_and_grad = fnp, fgrad.grad, fgrad.value_and_grad
        wrap = fgrad.jit if contender == JIT else (lambda f: f)
    rng = np.random.default_rng(0)
    if workload == "W1":
        args: tuple[Any, ...] = (X0, Y0)
        make = lambda: wrap(grad(chain(np_like), argnums=(0, 1)))  # noqa: E731
    elif workload == "W7":
        args = (rng.standard_normal((N, N)), rng.standard_normal(N), rng.standard_normal(N))
        make = lambda: wrap(grad(layer(np_like)))  # noqa: E731
    else:
        args = make_problem()
        make = lambda: wrap(value_and_grad(mlp_loss(np_like)))  # noqa: E731
    t0 = time.perf_counter()
    out = make()(*args)
    if contender == "jax.jit":
        jax.block_until_ready(out)
    return time.perf_counter() - t0


def bench_first_calls(jax: Any) -> None:
    print("=" * 72)
    print(f"First call (trace, optimise, generate, compile, run), each in a fresh interpreter, "
          f"{FIRST_CALL_REPEATS} times")
    names = [JIT, EAGER] + (["jax.jit"] if jax is not None else [])
    baseline = "jax.jit" if jax is not None else EAGER
    for workload in ("W1", "W7", "W3"):
        samples: dict[str, list[float]] = {n: [] for n in names}
        for r in range(FIRST_CALL_REPEATS):
            order = names[:]
            random.Random(r).shuffle(order)
            for name in order:
                child = subprocess.run([sys.executable, __file__, "--first-call", workload, name],
                                       capture_output=True, text=True, check=True)
                samples[name].append(float(child.stdout.split()[-1]))
        results = {n: Timing(s) for n, s in samples.items()}
        for name, res in results.items():
            if name != baseline:
                res.paired = samples[baseline]  # each repetition's children ran side by side
        report(f"{workload} first call: {JIT} / {baseline}", results, baseline,
               target=FIRST_CALL_TARGET if jax is not None else None, subject=JIT)
        print(f"  ({JIT} min {min(samples[JIT]) * 1e3:.1f} ms, max {max(samples[JIT]) * 1e3:.1f} ms)")
    if jax is None:
        print(f"  (jax not in this run: no first-call target (<= {FIRST_CALL_TARGET:g} x jax.jit) checked)")


def main() -> None:
    print("=" * 72)
    print("fgrad.jit: jitted transforms against eager fgrad, the usual baselines and jax.jit")
    autograd = optional_import("autograd")
    jax = optional_import("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    bench_w1(autograd, jax)
    bench_w7(autograd, jax)
    bench_w3(jax)
    bench_elementwise(jax)
    bench_w4_w5(autograd, jax)
    bench_first_calls(jax)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first-call"]:
        print(first_call(sys.argv[2], sys.argv[3]))
    else:
        main()
