"""Checkpointed loops: `lax.scan(..., checkpoints=k)` on the binomial schedule,
side by side with the scan without checkpoints and with the two-level scheme
fgrad had before (k checkpointed segments of length/k in an outer scan, written
here with `lax.scan` and `fgrad.checkpoint`), for k = 8 and k = 45 (about
sqrt(length)):

* an RNN, h -> tanh(h @ W + x_t), 2048 steps of width 256, float64: the peak
  memory (tracemalloc) of the gradient and its time, eagerly and under jit.
  Here the carry (2 KiB) is small beside the weight (512 KiB), whose cotangent
  each level of checkpoints holds once;
* a loop whose carry is large (c -> sin(c * w + x_t), 512 steps of 8192
  floats, 64 KiB, and a scalar weight): the peak memory in carries, where the
  carries kept are what counts;
* the schedule: how many times a step may be recomputed (r, the least with
  k * C(k + r, k) >= steps), and the size of make_jaxpr(grad) at 10, 1000 and
  2048 steps: equations at the top, distinct jaxprs, equations in all of them.

Target: the RNN's peak memory with checkpoints=8 <= 0.25 x without.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import check, check_agree, interleaved, report

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.ir.jaxpr import ClosedJaxpr, sub_jaxprs
from fgrad.lax.scan import _repetitions

STEPS, WIDTH = 2048, 256
SCHEDULES = ["unchecked", "two-level k=8", "binomial k=8", "two-level k=45", "binomial k=45"]


def two_level(f: Callable[[Any, Any], Any], init: Any, xs: np.ndarray, k: int) -> Any:
    """fgrad's former `checkpoints=k`: k checkpointed segments of ceil(length/k)
    steps in an outer scan, then the rest."""
    n = xs.shape[0]
    size = -(-n // k)
    full = n // size
    segment = fgrad.checkpoint(lambda c, seg: lax.scan(f, c, seg))
    c, _ = lax.scan(segment, init, xs[:full * size].reshape(full, size, *xs.shape[1:]))
    if n > full * size:
        c, _ = lax.scan(f, c, xs[full * size:])
    return c


def run(f: Callable[[Any, Any], Any], init: Any, xs: np.ndarray, schedule: str) -> Any:
    if schedule == "unchecked":
        return lax.scan(f, init, xs)[0]
    how, k = schedule.split(" k=")
    if how == "two-level":
        return two_level(f, init, xs, int(k))
    return lax.scan(f, init, xs, checkpoints=int(k))[0]


def peak(fn: Callable[[], Any]) -> int:
    fn()  # warm: what a call stages the first time is not what it keeps
    gc.collect()
    tracemalloc.start()
    out = fn()
    result = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del out
    return result


def sizes(closed: ClosedJaxpr) -> tuple[int, int, int]:
    """(equations at the top, distinct jaxprs, equations in all of them)."""
    seen: dict[int, int] = {}

    def walk(j: Any) -> None:
        j = j.jaxpr if isinstance(j, ClosedJaxpr) else j
        if id(j) not in seen:
            seen[id(j)] = len(j.eqns)
            for e in j.eqns:
                for _, sub in sub_jaxprs(e):
                    walk(sub)

    walk(closed)
    return len(closed.jaxpr.eqns), len(seen), sum(seen.values())


def rnn() -> None:
    rng = np.random.default_rng(0)
    W = rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)
    xs = rng.standard_normal((STEPS, WIDTH)) * 0.1

    def loss(W: Any, schedule: str) -> Any:
        return fnp.sum(run(lambda h, x: (fnp.tanh(h @ W + x), None), fnp.zeros(WIDTH), xs, schedule) ** 2)

    grad = fgrad.grad(loss)
    jitted = fgrad.jit(grad, static_argnums=1)
    print("=" * 72)
    print(f"checkpointed scan: RNN of {STEPS} steps, width {WIDTH}, float64, gradient in W")
    eager = {s: (lambda s=s: grad(W, s)) for s in SCHEDULES}
    under_jit = {s: (lambda s=s: jitted(W, s)) for s in SCHEDULES}
    check_agree("checkpointed scan (RNN)", {**eager, **{f"jit {s}": f for s, f in under_jit.items()}},
                "unchecked", rtol=1e-10, atol=1e-13)
    mib = 2.0**20
    peaks = {s: peak(f) for s, f in eager.items()}
    print(f"  {'schedule':<16} {'r':>3} {'peak of grad':>13} {'ratio':>7}")
    for s in SCHEDULES:
        k = int(s.split("=")[1]) if "=" in s else None
        r = "0" if k is None else ("1" if s.startswith("two") else str(_repetitions(STEPS, k, k)))
        print(f"  {s:<16} {r:>3} {peaks[s] / mib:9.2f} MiB {peaks[s] / peaks['unchecked']:7.3f}")
    check("checkpointed scan: RNN peak memory, binomial k=8 / unchecked",
          peaks["binomial k=8"] / peaks["unchecked"], 0.25)
    report("checkpointed scan: RNN gradient, eager", interleaved(eager, repeats=5, number=1), "unchecked")
    report("checkpointed scan: RNN gradient, jit", interleaved(under_jit, repeats=5, number=1), "unchecked")


def large_carry() -> None:
    steps, size = 512, 8192
    rng = np.random.default_rng(1)
    init, xs = rng.standard_normal(size), rng.standard_normal((steps, size)) * 0.1

    def loss(w: Any, schedule: str) -> Any:
        return fnp.sum(run(lambda c, x: (fnp.sin(c * w + x), None), init, xs, schedule))

    grad = fgrad.grad(loss)
    print(f"\ncheckpointed scan: a carry of {size} floats ({size * 8 // 1024} KiB), {steps} steps, "
          "a scalar weight")
    check_agree("checkpointed scan (large carry)", {s: (lambda s=s: grad(0.9, s)) for s in SCHEDULES},
                "unchecked", rtol=1e-10, atol=1e-13)
    print(f"  {'schedule':<16} {'peak of grad, in carries':>25}")
    for s in SCHEDULES:
        print(f"  {s:<16} {peak(lambda s=s: grad(0.9, s)) / init.nbytes:25.1f}")


def jaxpr_sizes() -> None:
    W = np.full((4, 4), 0.1)
    print("\ncheckpointed scan: make_jaxpr(grad) of the RNN at width 4: "
          "(equations at the top, distinct jaxprs, all their equations)")
    for s in SCHEDULES:
        row = []
        for steps in (10, 1000, 2048):
            xs = np.ones((steps, 4))
            loss = lambda W, xs=xs, s=s: fnp.sum(run(lambda h, x: (fnp.tanh(h @ W + x), None),  # noqa: E731
                                                     fnp.zeros(4), xs, s) ** 2)
            row.append(f"{steps}: {sizes(fgrad.make_jaxpr(fgrad.grad(loss))(W))}")
        print(f"  {s:<16} " + "  ".join(row))


def main() -> None:
    rnn()
    large_carry()
    jaxpr_sizes()


if __name__ == "__main__":
    main()
