"""Compile speed of fgrad.jit (issue 24): milliseconds per equation of each phase.

The first call of `jit(f)` and of `jit(grad(f))` traces the function into a
jaxpr, optimises it (the passes of `fgrad.compiler.optimize_jaxpr`) and
generates and compiles its Python code. Target: all of it in <= 0.1 ms per
traced equation, and linear in the size of the program, so the figure stays
flat from 1,000 to 10,000 operations. Four programs of N operations:

    scalar  W9 of A. Rogozhnikov's "Fastest Autograd in the West" (2023): N scalar
            operations over 100 inputs x[i], cycling through softplus of the node
            10 back, the sum of four earlier nodes (nodes[-30:-10:5]), the product
            of the nodes 20 and 10 back, and a softmax of the last four (written
            on scalars: max, exp, sum, division), which adds four nodes.
    w9      the same as the post writes it: the softmax of the four stacked into
            a vector (fgrad.nn.softmax), its entries appended.
    vector  the same kind of graph on vectors of 64: matrix-vector products,
            elementwise ops with broadcasting, means, `where`.
    loops   every fourth operation a loop (`lax.scan`, `lax.fori_loop`) or a
            `lax.cond` of a few operations, the others scalar operations between.

Each version is compiled once, in this process, after a small warm-up. The
phases: `trace` (staging the function, the transforms inside included),
each pass of `optimize_jaxpr` (its own time, the loop bodies it optimises
counted in their passes), `codegen` (writing the source) and `compile`
(Python's compile() of it). Run `python benchmarks/bench_compile.py [N ...]`
(default 1000 3000 10000); `--programs scalar,loops` and `--modes grad`
select what runs.
"""

from __future__ import annotations

import argparse
import builtins
import gc
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from harness import check

import fgrad
import fgrad.nn
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.compiler import pipeline
from fgrad.config import config
from fgrad.ir import codegen
from fgrad.ir.jaxpr import sub_jaxprs

jit_module = sys.modules["fgrad.api.jit"]  # (fgrad.api.jit is also the function's name)

TARGET_MS_PER_EQN = 0.1
N_INPUTS = 100


def softmax4(vs: list[Any]) -> list[Any]:
    m = fnp.maximum(fnp.maximum(vs[0], vs[1]), fnp.maximum(vs[2], vs[3]))
    es = [fnp.exp(v - m) for v in vs]
    total = es[0] + es[1] + es[2] + es[3]
    return [e / total for e in es]


def scalar_program(n_ops: int) -> tuple[Callable[[Any], Any], np.ndarray]:
    """W9: the function of the post, and its input."""

    def f(x: Any) -> Any:
        nodes = [x[i] for i in range(N_INPUTS)]
        for op in range(n_ops):
            k = op % 4
            if k == 0:
                nodes.append(fnp.logaddexp(nodes[-10], 0.0))  # softplus
            elif k == 1:
                nodes.append(sum(nodes[-30:-10:5]))
            elif k == 2:
                nodes.append(nodes[-20] * nodes[-10])
            else:
                nodes.extend(softmax4(nodes[-4:]))
        return nodes[-1]

    return f, np.arange(float(N_INPUTS)) / N_INPUTS


def w9_program(n_ops: int) -> tuple[Callable[[Any], Any], np.ndarray]:
    """W9 as the post writes it (and bench_w9_scalar_graph.py): the softmax of
    the last four nodes stacked into a vector, its four entries appended."""

    def f(x: Any) -> Any:
        nodes = [x[i] for i in range(N_INPUTS)]
        for op in range(n_ops):
            k = op % 4
            if k == 0:
                nodes.append(fgrad.nn.softplus(nodes[-10]))
            elif k == 1:
                nodes.append(sum(nodes[-30:-10:5]))
            elif k == 2:
                nodes.append(nodes[-20] * nodes[-10])
            else:
                nodes.extend(fgrad.nn.softmax(fnp.stack(nodes[-4:]), axis=0))
        return nodes[-1]

    return f, np.random.default_rng(0).standard_normal(N_INPUTS)


def vector_program(n_ops: int) -> tuple[Callable[[Any], Any], tuple[np.ndarray, np.ndarray]]:
    def f(args: Any) -> Any:
        x, A = args
        nodes = [x, fnp.sin(x), fnp.cos(x), x * 2.0]
        for op in range(n_ops):
            k = op % 5
            if k == 0:
                nodes.append(fnp.tanh(A @ nodes[-3]))
            elif k == 1:
                nodes.append(nodes[-1] * nodes[-4] + 1.0)
            elif k == 2:
                nodes.append(nodes[-2] - fnp.mean(nodes[-2]))
            elif k == 3:
                nodes.append(fnp.where(nodes[-1] > 0, nodes[-1], 0.1 * nodes[-1]))
            else:
                nodes.append(fnp.exp(-nodes[-1] ** 2) + nodes[-3][:, None].sum(axis=1))
        return fnp.sum(nodes[-1])

    rng = np.random.default_rng(0)
    return f, (rng.standard_normal(64), rng.standard_normal((64, 64)) / 8)


def loops_program(n_ops: int) -> tuple[Callable[[Any], Any], np.ndarray]:
    def f(x: Any) -> Any:
        nodes = [x[i] for i in range(10)]
        for op in range(n_ops):
            k = op % 8
            a, b = nodes[-1], nodes[-3]
            if k == 1:
                nodes.append(lax.scan(lambda c, t: (fnp.sin(c) * t + 0.5, c * t), a, x[:4])[0])
            elif k == 3:
                nodes.append(lax.fori_loop(0, 3, lambda i, c: fnp.tanh(c) + c * b, a))
            elif k == 5:
                nodes.append(lax.cond(b > 0.3, lambda u: fnp.exp(-u * u), lambda u: u * 0.5, a))
            elif k == 7:
                nodes.append(fnp.tanh(a * b))
            else:
                nodes.append(fnp.sin(a) + b * 0.5)
        return nodes[-1] + nodes[-2]

    return f, np.linspace(0.1, 0.9, 10)


PROGRAMS: dict[str, Callable[[int], tuple[Callable[[Any], Any], Any]]] = {
    "scalar": scalar_program, "w9": w9_program, "vector": vector_program, "loops": loops_program,
}
PASSES = [p for p in ["rewritten", "inline_calls", "unroll_small_arrays", "fold_constants", "simplify_jaxpr",
                      "identity_products", "summed_products", "sliced_products", "cse_jaxpr",
                      "dce_closed_jaxpr"] if hasattr(pipeline, p)]  # those optimize_jaxpr runs


class Timers:
    """Exclusive time per phase: a phase started inside another (a loop body's
    passes inside `optimized_bodies`) is counted in its own, not its parent's."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[list[float]] = []  # per running phase: [start, time of its children]

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            frame = [time.process_time(), 0.0]
            self._stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                self._stack.pop()
                elapsed = time.process_time() - frame[0]
                self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - frame[1]
                if self._stack:
                    self._stack[-1][1] += elapsed
        return timed


@contextmanager
def timed_phases(timers: Timers) -> Iterator[None]:
    """Wrap the passes, code generation and compile() in `timers` (module globals,
    put back after)."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(module: Any, attr: str, name: str) -> None:
        saved.append((module, attr, getattr(module, attr, None)))
        setattr(module, attr, timers.wrap(name, getattr(module, attr, None) or getattr(builtins, attr)))

    for p in PASSES:
        patch(pipeline, p, p)
    patch(jit_module, "compile_jaxpr", "codegen")
    patch(codegen, "compile", "compile")  # codegen's calls of the builtin
    try:
        yield
    finally:
        for module, attr, value in reversed(saved):
            if value is None:
                delattr(module, attr)
            else:
                setattr(module, attr, value)


def count_eqns(jaxpr: Any) -> int:
    """Equations of a jaxpr, those of the jaxprs in its equations' parameters included."""
    return sum(1 + sum(count_eqns(sub) for _, sub in sub_jaxprs(e)) for e in jaxpr.eqns)


def measure(program: str, mode: str, n_ops: int, repeat: int = 1) -> tuple[int, float, dict[str, float]]:
    """(traced equations, total seconds, seconds per phase) of the fastest of
    `repeat` first calls (each of a new jit of a new function)."""
    best: tuple[int, float, dict[str, float]] | None = None
    for _ in range(repeat):
        f, x = PROGRAMS[program](n_ops)
        g = fgrad.grad(f) if mode == "grad" else f
        n_eqns = count_eqns(fgrad.make_jaxpr(g)(x).jaxpr)
        fun = fgrad.jit(g)
        timers = Timers()
        gc.collect()
        with timed_phases(timers):
            start = time.process_time()
            fun(x)
            total = time.process_time() - start
        phases = {"trace": total - sum(timers.seconds.values()), **timers.seconds}
        if best is None or total < best[1]:
            best = n_eqns, total, phases
    assert best is not None
    return best


def main(sizes: tuple[int, ...] = (1000, 3000, 10000), programs: tuple[str, ...] = tuple(PROGRAMS),
         modes: tuple[str, ...] = ("jit", "grad"), repeat: int = 2) -> None:
    config.log_compiles_slower_than = float("inf")  # this prints its own figures
    print("\nCompile speed: first call of jit(f) and jit(grad(f)), ms per traced equation")
    for program in programs:  # warm-up: the rules' first uses, lazy imports
        for mode in modes:
            measure(program, mode, 40)
    columns = ["trace", *PASSES, "codegen", "compile"]
    short = {"rewritten": "rewrite", "inline_calls": "inline", "unroll_small_arrays": "unroll",
             "fold_constants": "fold", "simplify_jaxpr": "simplify", "identity_products": "ident",
             "summed_products": "summed", "sliced_products": "sliced", "cse_jaxpr": "cse",
             "dce_closed_jaxpr": "dce"}
    head = " ".join(f"{short.get(c, c):>8}" for c in columns)
    print(f"  {'program':<14} {'N':>6} {'eqns':>7} {'total s':>8} {'ms/eqn':>7} | {head}")
    worst = 0.0
    for program in programs:
        for mode in modes:
            for n in sizes:
                n_eqns, total, phases = measure(program, mode, n, repeat if n < 10000 else 1)
                per = total / n_eqns * 1e3
                worst = max(worst, per)
                cells = " ".join(f"{phases.get(c, 0.0) / n_eqns * 1e3:8.4f}" for c in columns)
                print(f"  {program + ' ' + mode:<14} {n:>6} {n_eqns:>7} {total:8.3f} {per:7.4f} | {cells}",
                      flush=True)
    check("compile: worst ms per equation", worst, TARGET_MS_PER_EQN)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 3000, 10000])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--modes", default="jit,grad")
    parser.add_argument("--repeat", type=int, default=2,
                        help="first calls per size below 10,000 (the fastest counts)")
    options = parser.parse_args()
    main(tuple(options.sizes), tuple(options.programs.split(",")), tuple(options.modes.split(",")),
         options.repeat)
