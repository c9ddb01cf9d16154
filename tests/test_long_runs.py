"""Long runs: thousands of calls of the transforms keep the process's memory
flat and leave no tracer alive, and the caches stay within their bounds.

Memory is measured with tracemalloc between call WARM_UP (everything cached
that will be) and the last call: the blocks still allocated then that were
allocated in between. A leak of a few hundred bytes a call would show.

Each case is measured in a fresh interpreter, so that what other tests leave
does not count: in a worker that had run other tests first, CI once measured
421 KiB where the case alone keeps 3 bytes a call. (A likely cause: tracemalloc
counts a block allocated before it started as never freed, so a global table
other tests have grown, such as linecache's or weakref.finalize's registry,
counts whole when it is rebuilt during the measure.) For the same reason each
case is measured over two halves of its calls and the smaller growth counts:
a leak shows in both halves, a one-off in one.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.api.jit import CACHE_SIZE
from fgrad.core.trace import EVAL_TRACE, Tracer, ctx
from fgrad.transforms.reverse import linearize_jaxpr

WARM_UP = 300
CALLS = 1_200
MAX_GROWTH = 350 * (CALLS - WARM_UP)  # bytes over CALLS - WARM_UP calls: < 350 bytes a call

rng = np.random.default_rng(0)
W, X, Y = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal(5)


def loss(w: Any, x: Any, y: Any) -> Any:
    return fnp.mean((fnp.tanh(x @ w.T) @ np.ones(4) - y) ** 2)


@fgrad.jit
def sgd_step(w: Any, x: Any, y: Any) -> Any:
    return w - 0.01 * fgrad.grad(loss)(w, x, y)


@fgrad.custom_vjp
def clipped(x: Any) -> Any:
    return fnp.sin(x)


clipped.defvjp(lambda x: (fnp.sin(x), x), lambda x, g: (fnp.clip(g * fnp.cos(x), -0.5, 0.5),))


def scan_loss(w: Any) -> Any:
    carry, ys = lax.scan(lambda c, x: (c * 0.9 + fnp.sum(w * x), c), 0.0, X)
    return carry + fnp.sum(ys)


def while_loss(x: Any) -> Any:
    return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, fnp.sin(c[1]) * 1.1), (0, x))[1]


STEPS: dict[str, Callable[[], Any]] = {
    "grad": lambda: fgrad.grad(loss)(W, X, Y),
    "vjp": lambda: fgrad.vjp(lambda w: fnp.tanh(X @ w.T), W)[1](np.ones((5, 4))),
    "vmap": lambda: fgrad.vmap(lambda x: fnp.sin(x) @ W.T)(X),
    "jacrev": lambda: fgrad.jacrev(lambda w: fnp.tanh(X @ w.T).sum(axis=1))(W),
    "jitted step": lambda: sgd_step(W, X, Y),
    "vmap of grad": lambda: fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0, 0))(W, X[:, None], Y[:, None]),
    "custom_vjp": lambda: fgrad.grad(lambda x: fnp.sum(clipped(x)))(Y),
    "grad of lax.scan": lambda: fgrad.grad(scan_loss)(W[0]),
    "grad of lax.while_loop": lambda: fgrad.grad(while_loss)(0.3),
}


def live_tracers() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Tracer))


def memory_growth(step: Callable[[], Any], calls: int, warm_up: int) -> int:
    """Bytes allocated between call `warm_up` and call `calls` and still held at the end."""
    for _ in range(warm_up):
        step()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(calls - warm_up):
            step()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def measure(name: str) -> dict[str, Any]:
    """Case `name`'s growth, its number of calls measured and its bound, and
    whether it left tracers or a trace behind: what a fresh interpreter prints."""
    # The loops' cases make fewer calls (they are slower), with the same bound a call. (grad of
    # while_loop compiles its body at each call: a new file name each time kept 60 bytes for ever.)
    calls, warm_up = (CALLS, WARM_UP) if "lax" not in name else (1_000, 250)
    tracers = live_tracers()
    # Two halves, the smaller growth: a leak shows in both, a one-off in one (a global
    # table rebuilt, which tracemalloc counts whole when the old one predates it).
    half = (calls - warm_up) // 2
    growth = min(memory_growth(STEPS[name], warm_up + half, warm_up), memory_growth(STEPS[name], half, 0))
    return {"growth": growth, "calls": half, "bound": MAX_GROWTH * half // (CALLS - WARM_UP),
            "tracers_left": live_tracers() - tracers, "trace_left": ctx.trace is not EVAL_TRACE}


@pytest.mark.parametrize("name", list(STEPS))
def test_many_calls_keep_memory_flat_and_leave_no_tracer(name: str) -> None:
    root = Path(__file__).resolve().parent.parent
    script = f"import json, sys; sys.path.insert(0, {str(root)!r}); " \
             f"from tests.test_long_runs import measure; print(json.dumps(measure({name!r})))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["growth"] < result["bound"], (
        f"{name}: {result['growth'] / 1024:.0f} KiB more after {result['calls']} calls")
    assert result["tracers_left"] <= 0
    assert not result["trace_left"]


def test_memory_growth_would_be_seen() -> None:
    # The measure itself: a step that keeps 1 KiB a call is caught.
    kept: list[Any] = []
    growth = memory_growth(lambda: kept.append(bytearray(1024)), CALLS, WARM_UP)
    assert growth > MAX_GROWTH


def test_a_jit_cache_is_bounded() -> None:
    traces = []

    @fgrad.jit
    def f(x: Any) -> Any:
        traces.append(x)
        return fnp.sin(x) * 2.0

    for n in range(CACHE_SIZE + 20):  # a new shape each time: a new version each time
        f(np.ones(n))
    assert len(f._cache) == CACHE_SIZE and len(f._fast) <= CACHE_SIZE
    f(np.ones(CACHE_SIZE + 19))  # the most recent versions are kept
    assert len(traces) == CACHE_SIZE + 20
    f(np.ones(0))  # the oldest went first
    assert len(traces) == CACHE_SIZE + 21


def test_transforms_of_jaxprs_are_cached_per_jaxpr_and_go_with_it() -> None:
    # lax.scan's body is traced into a fresh jaxpr at each call of the function
    # using it; its reverse-mode split is cached as long as that jaxpr lives.
    # (Jaxprs other tests keep alive, in their jitted functions' caches, keep theirs.)
    gc.collect()
    before = linearize_jaxpr.cache_size()
    for _ in range(50):
        fgrad.grad(scan_loss)(W[0])
    gc.collect()
    assert linearize_jaxpr.cache_size() - before <= 2
