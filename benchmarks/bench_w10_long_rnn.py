"""W10: the gradient with respect to (W, U) of a long tanh RNN, width 32 over
1000 steps (float64), written with `lax.scan` (issue 23):

    h_{t+1} = tanh(h_t @ W + x_t @ U),   loss = sum(h_T ** 2)

What a long scan must not cost: its jaxpr, and so its trace and compile
time, may not grow with the number of steps, and each call of the compiled
gradient is a loop of 1000 small steps in both directions. Targets:

    equations of make_jaxpr(grad) at T=1000 (all levels, scan bodies included)
                                          equal to those at T=10, and < 200
    first call of fgrad.jit(grad)         target <= 0.25 x jax.jit(grad)'s first call
    each later call of fgrad.jit(grad)    target <= 3.0 x jax.jit(grad) of jax.lax.scan

A first call here is that of a freshly built function in a warm process
(new closures, a new `fgrad.jit` / `jax.jit` object: trace, optimise or
lower, compile, run), timed five times, alternated with JAX's; that JAX
compiled anew at each is checked (jax.monitoring's backend-compile events).
bench_jit.py times first calls in fresh interpreters instead. Eager
fgrad.grad of the scan and HIPS autograd's grad of a Python loop are timed
for reference (no target). Without JAX the timings are paired with eager
fgrad and no timing target is checked; the equation counts are fgrad's
alone and always checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from harness import check as check_target
from harness import check_agree, interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.ir.jaxpr import sub_jaxprs

STEPS, SHORT, HIDDEN = 1000, 10, 32
EQN_LIMIT, FIRST_TARGET, JIT_TARGET = 199, 0.25, 3.0
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def problem(steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    W = rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)
    U = rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)
    return W, U, rng.standard_normal(HIDDEN) * 0.1, rng.standard_normal((steps, HIDDEN))


def scan_loss(np_like: Any, scan: Callable[..., Any]) -> Callable[..., Any]:
    """A new loss (new closures) at each call, so that no cache keyed on the function is reused."""

    def loss(W: Any, U: Any, h0: Any, xs: Any) -> Any:
        def step(h: Any, x: Any) -> Any:
            return np_like.tanh(h @ W + x @ U), None

        h, _ = scan(step, h0, xs)
        return np_like.sum(h ** 2)

    return loss


def loop_loss(np_like: Any) -> Callable[..., Any]:
    def loss(W: Any, U: Any, h0: Any, xs: Any) -> Any:
        h = h0
        for x in xs:
            h = np_like.tanh(h @ W + x @ U)
        return np_like.sum(h ** 2)

    return loss


def n_eqns(jaxpr: Any) -> int:
    """Equations of a jaxpr, those of the jaxprs its equations hold (scan bodies) included."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    return sum(1 + sum(n_eqns(sub) for _, sub in sub_jaxprs(e)) for e in jaxpr.eqns)


def main() -> None:
    print("=" * 72)
    print(f"W10: grad of a {STEPS}-step tanh RNN (width {HIDDEN}, float64) written with lax.scan")
    autograd = optional_import("autograd")
    jax = optional_import("jax")
    args = problem(STEPS)

    counts = {}
    for steps in (SHORT, STEPS):
        closed = fgrad.make_jaxpr(fgrad.grad(scan_loss(fnp, lax.scan), argnums=(0, 1)))(*problem(steps))
        counts[steps] = n_eqns(closed)
        print(f"  make_jaxpr(grad) at T={steps:<5}: {len(closed.eqns)} equations at the top level, "
              f"{counts[steps]} in all")
    check_target(f"W10 jaxpr equations at T={STEPS}", counts[STEPS], EQN_LIMIT)
    check_target(f"W10 jaxpr equations T={STEPS} / T={SHORT}", counts[STEPS] / counts[SHORT], 1.0)

    def fgrad_jit() -> Callable[..., Any]:
        return fgrad.jit(fgrad.grad(scan_loss(fnp, lax.scan), argnums=(0, 1)))

    eager = fgrad.grad(scan_loss(fnp, lax.scan), argnums=(0, 1))
    jitted = fgrad_jit()
    contenders: dict[str, Callable[[], Any]] = {
        "fgrad.jit": lambda: jitted(*args), "fgrad (eager)": lambda: eager(*args),
    }
    first: dict[str, Callable[[], Any]] = {"fgrad.jit": lambda: fgrad_jit()(*args)}
    compiles = {"n": 0}
    if jax is not None:
        jax.config.update("jax_enable_x64", True)

        def jax_jit() -> Callable[..., Any]:
            return jax.jit(jax.grad(scan_loss(jax.numpy, jax.lax.scan), argnums=(0, 1)))

        def jax_first() -> Any:
            before = compiles["n"]
            out = jax.block_until_ready(jax_jit()(*args))
            if compiles["n"] == before:
                raise SystemExit("W10: jax.jit's first call of a new function compiled nothing (a cache hit)")
            return out

        jg = jax_jit()
        contenders["jax.jit"] = lambda: tuple(np.asarray(g) for g in jax.block_until_ready(jg(*args)))
        first["jax.jit"] = jax_first
    else:
        first["fgrad (eager)"] = lambda: fgrad.grad(scan_loss(fnp, lax.scan), argnums=(0, 1))(*args)
    if autograd is not None:
        import autograd.numpy as anp

        ag = autograd.grad(loop_loss(anp), argnum=(0, 1))
        contenders["autograd (loop)"] = lambda: ag(*args)
    check_agree("W10", contenders, "fgrad (eager)")

    base = "jax.jit" if jax is not None else "fgrad (eager)"

    def count(name: str, duration: float, **kwargs: Any) -> None:
        if name == COMPILE_EVENT:
            compiles["n"] += 1

    if jax is not None:
        jax.monitoring.register_event_duration_secs_listener(count)
    try:
        timed = interleaved(first, repeats=5, number=1, baseline=base)
    finally:
        if jax is not None:
            jax.monitoring.unregister_event_duration_listener(count)
    report(f"W10 first call (fresh function, warm process): fgrad.jit / {base}", timed, base,
           target=FIRST_TARGET if jax is not None else None, subject="fgrad.jit")
    if jax is not None:
        calls = len(timed["jax.jit"].samples) + 1
        print(f"  (jax.jit compiled {compiles['n']} times in {calls} first calls, the warm-up's included)")

    pair = {n: contenders[n] for n in ("fgrad.jit", base)}
    report(f"W10 each later call: fgrad.jit / {base}", interleaved(pair, repeats=15, number=3, baseline=base),
           base, target=JIT_TARGET if jax is not None else None, subject="fgrad.jit")

    eager_base = "autograd (loop)" if autograd is not None else "fgrad.jit"
    others = {n: contenders[n] for n in ("fgrad (eager)", eager_base)}
    report(f"W10 eager grad (reference, no target): fgrad / {eager_base}",
           interleaved(others, repeats=5, number=1, baseline=eager_base), eager_base)


if __name__ == "__main__":
    main()
