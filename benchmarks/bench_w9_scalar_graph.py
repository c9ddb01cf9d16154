"""W9: the scalar graph of A. Rogozhnikov's "Fastest Autograd in the West" (2023).

A graph of N scalar operations over 100 inputs x[i], built by a Python loop
over the list of nodes (the post's `run_graph`, op by op in turn):

    op % 4 == 0: softplus of the node 10 back        nodes[-10]
    op % 4 == 1: the sum of four earlier nodes       nodes[-30:-10:5]
    op % 4 == 2: a product of two                    nodes[-20] * nodes[-10]
    op % 4 == 3: a softmax of the last four          softmax(stack(nodes[-4:])), all four appended

The gradient of the last node with respect to x, at 100 seeded standard
normals (float64), is computed again and again: the post runs 10k operations
10k times. Each library writes the graph with its own softplus, softmax and
stack (HIPS autograd has no softmax: exp(s - max s) / sum, as the others
compute it). Contenders: fgrad eager `grad`, `fgrad.jit(grad)`, torch eager
(`backward`), `jax.jit(jax.grad)` and HIPS autograd, at 1,000 and 10,000
operations, each checked against fgrad eager's gradient:

- first call (build, trace, compile, run once), each in a fresh interpreter,
  repeated, the contenders in turn;
- time per iteration after a warm-up, in pairs with jax.jit (alternated,
  medians; see harness.py). PyTorch is never imported in this process (it
  changes how glibc serves memory; see run_all.py): its time per iteration
  comes from a child process of its own, as does jax.jit's at 10,000
  operations, whose compile takes minutes (timed once, in its first-call child).

Ratios are printed against torch eager and against jax.jit. Targets (issue 24):
at 1,000 operations fgrad.jit per iteration <= 0.05 x torch eager, first call
<= 0.25 x jax.jit's first call; at 10,000 operations fgrad.jit's first call
under 5 s. FGRAD_W9_SIZES (e.g. "1000") chooses the sizes of a run.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import Timing, check, format_time, interleaved, optional_import, ratio, report

INPUTS = 100
SEED = 0
SIZES = tuple(int(n) for n in os.environ.get("FGRAD_W9_SIZES", "1000,10000").split(","))
PER_ITERATION_TARGET = 0.05  # x torch eager, at 1,000 operations
FIRST_CALL_TARGET = 0.25  # x jax.jit, at 1,000 operations
FIRST_CALL_LIMIT = 5.0  # seconds, at 10,000 operations
JIT, EAGER, TORCH, JAX, AUTOGRAD = "fgrad.jit", "fgrad (eager)", "torch (eager)", "jax.jit", "autograd"
CONTENDERS = (JIT, EAGER, TORCH, JAX, AUTOGRAD)


def inputs() -> np.ndarray:
    return np.random.default_rng(SEED).standard_normal(INPUTS)


def run_graph(x: Any, n_operations: int, softplus: Callable[[Any], Any],
              softmax_of: Callable[[list[Any]], Any]) -> Any:
    """The post's graph on the elements of `x`, with a library's softplus and
    softmax of a list of scalars; returns the last node."""
    nodes = [*x]
    for op in range(n_operations):
        kind = op % 4
        if kind == 0:
            nodes.append(softplus(nodes[-10]))
        elif kind == 1:
            nodes.append(sum(nodes[-30:-10:5]))
        elif kind == 2:
            nodes.append(nodes[-20] * nodes[-10])
        else:
            nodes.extend(softmax_of(nodes[-4:]))
    return nodes[-1]


def make(contender: str, n: int) -> Callable[[], Any]:
    """A call computing the gradient for `contender` (its imports done here),
    returning it as a NumPy array; it has not run yet."""
    x = inputs()
    if contender in (JIT, EAGER):
        import fgrad
        import fgrad.nn as fnn
        import fgrad.numpy as fnp

        def f(x: Any) -> Any:
            return run_graph(x, n, fnn.softplus, lambda xs: fnn.softmax(fnp.stack(xs), axis=0))

        g = fgrad.jit(fgrad.grad(f)) if contender == JIT else fgrad.grad(f)
        return lambda: g(x)
    if contender == JAX:
        import jax

        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy

        def jf(x: Any) -> Any:
            return run_graph(x, n, jax.nn.softplus, lambda xs: jax.nn.softmax(jnp.stack(xs), axis=0))

        jg = jax.jit(jax.grad(jf))
        return lambda: np.asarray(jax.block_until_ready(jg(x)))
    if contender == TORCH:
        import torch
        import torch.nn.functional as F  # noqa: N812

        def tg() -> Any:
            xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
            run_graph(xt, n, F.softplus, lambda xs: F.softmax(torch.stack(xs), dim=0)).backward()
            return xt.grad.numpy()

        return tg
    import autograd
    import autograd.numpy as anp

    def softmax_of(xs: list[Any]) -> Any:
        s = anp.stack(xs)
        e = anp.exp(s - anp.max(s))
        return e / anp.sum(e)

    ag = autograd.grad(lambda x: run_graph(x, n, lambda v: anp.logaddexp(v, 0.0), softmax_of))
    return lambda: ag(x)


def agrees(got: Any, want: np.ndarray) -> bool:
    # The gradients are tiny (a long chain of softmaxes): compared relative to their largest.
    scale = float(np.max(np.abs(want))) or 1.0
    return bool(np.allclose(np.asarray(got), want, rtol=1e-7, atol=1e-9 * scale))


# --- children: a first call, or the steady state of a peer kept out of this process ---------------

def child(mode: str, contender: str, n: int) -> dict[str, Any]:
    """Run in a fresh interpreter: the first call's time (`first`), then for
    `steady` the median time per iteration over a few more calls, and the
    gradient (for the check against fgrad's)."""
    import importlib

    for module in {JIT: ["fgrad", "fgrad.nn"], EAGER: ["fgrad", "fgrad.nn"], JAX: ["jax"],
                   TORCH: ["torch"], AUTOGRAD: ["autograd"]}[contender]:
        importlib.import_module(module)  # imports are not part of a first call
    start = time.perf_counter()
    call = make(contender, n)
    grad = call()
    result: dict[str, Any] = {"first": time.perf_counter() - start, "grad": np.asarray(grad).tolist()}
    if mode == "steady":
        repeats = 5 if n >= 10_000 else 15
        number = 1 if n >= 10_000 else 5
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(number):
                call()
            times.append((time.perf_counter() - t0) / number)
        result["steady"] = statistics.median(times)
    return result


def run_child(mode: str, contender: str, n: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", mode, contender, str(n)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def allowed(name: str) -> bool:
    """Whether a peer is installed and FGRAD_BENCH_PEERS (when set) lets it in."""
    import importlib.util

    peers = os.environ.get("FGRAD_BENCH_PEERS")
    if peers is not None and name not in peers.split(","):
        print(f"{name} left out of this run (FGRAD_BENCH_PEERS={peers})")
        return False
    if importlib.util.find_spec(name) is None:
        print(f"{name} not installed: skipped")
        return False
    return True


# --- the benchmark ----------------------------------------------------------------------------------

def bench_size(n: int, peers: dict[str, bool]) -> None:
    print("=" * 72)
    print(f"W9 scalar graph, {n:,} operations over {INPUTS} inputs: gradient of the last node")
    reference = np.asarray(make(EAGER, n)())
    names = [JIT, EAGER] + [p for p in (TORCH, JAX, AUTOGRAD) if peers[p]]

    # First calls, each in a fresh interpreter; the contenders in a new order each round.
    repeats = 3 if n <= 1_000 else 1
    first: dict[str, list[float]] = {name: [] for name in names}
    steady_elsewhere: dict[str, float] = {}
    for r in range(repeats):
        order = names[:]
        random.Random(r).shuffle(order)
        for name in order:
            # jax.jit at 10k operations compiles for minutes: its steady state is timed in this child.
            mode = "steady" if (name == TORCH or (name == JAX and n >= 10_000)) and r == 0 else "first"
            found = run_child(mode, name, n)
            if not agrees(found["grad"], reference):
                raise SystemExit(f"W9 ({n} operations): {name}'s gradient differs from fgrad eager's")
            first[name].append(found["first"])
            if "steady" in found:
                steady_elsewhere[name] = found["steady"]
    first_results = {name: Timing(s) for name, s in first.items()}
    if JAX in first_results:
        for name, res in first_results.items():
            if name != JAX:
                res.paired = first[JAX]  # each round's children ran side by side
    baseline = JAX if JAX in first_results else JIT
    report(f"W9 {n:,} ops first call: {JIT} / {baseline}", first_results, baseline,
           target=FIRST_CALL_TARGET if n == 1_000 and baseline == JAX else None, subject=JIT)
    if n >= 10_000:
        check(f"W9 {n:,} ops first call of {JIT} (s)", float(first_results[JIT]), FIRST_CALL_LIMIT)

    # Time per iteration, side by side in this process (no PyTorch here).
    contenders = {name: make(name, n) for name in names if name not in steady_elsewhere}
    for name, call in contenders.items():
        if not agrees(call(), reference):
            raise SystemExit(f"W9 ({n} operations): {name}'s gradient differs from fgrad eager's")
    big = n >= 10_000
    baseline = JAX if JAX in contenders else JIT
    results = interleaved(contenders, repeats=5 if big else 15, number=1 if big else 5, baseline=baseline)
    report(f"W9 {n:,} ops per iteration: {JIT} / {baseline}", results, baseline, subject=JIT)
    for name, seconds in steady_elsewhere.items():
        print(f"  {name:<22} {format_time(seconds):>12}  (in a process of its own)")
    medians = {**{k: float(v) for k, v in results.items()}, **steady_elsewhere}
    for against in (TORCH, JAX):
        if against not in medians:
            continue
        print(f"  per iteration / {against} (ratio of medians):")
        for name, seconds in medians.items():
            if name != against:
                print(f"    {name:<22} {seconds / medians[against]:9.3f}")
    if TORCH in medians and n == 1_000:
        check(f"W9 {n:,} ops per iteration: {JIT} / {TORCH}", medians[JIT] / medians[TORCH],
              PER_ITERATION_TARGET)
    if JAX in results:
        print(f"  ({JIT} / {JAX} in pairs: {ratio(results, JIT, JAX):.3f})")


def main() -> None:
    print("=" * 72)
    print("W9: 'Fastest Autograd in the West' scalar graph: first call and time per iteration")
    peers = {TORCH: allowed("torch"), JAX: allowed("jax"), AUTOGRAD: allowed("autograd")}
    if peers[JAX]:
        optional_import("jax")
    for n in SIZES:
        bench_size(n, peers)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
