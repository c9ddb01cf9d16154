"""Threads: each thread has its own current trace, caches are shared safely,
and a traced value used in a thread other than its own raises.

The threads start together at a barrier and the interpreter switches between
them every few microseconds, so their transforms really interleave.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.core.trace import EVAL_TRACE, EvalTrace, ctx, transforming
from tests.threads import run_threads

THREADS = 8
CALLS = 100  # per thread, of each of the computations below


@pytest.fixture(autouse=True)
def fast_switching() -> Iterator[None]:
    """Switch threads every 5 microseconds instead of every 5 ms."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(5e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def loss(w: Any, x: Any) -> Any:
    return fnp.sum(fnp.tanh(x @ w) ** 2) + fnp.sum(fnp.sin(w) * w)


def loop_loss(w: Any, x: Any) -> Any:
    # Python control flow on concrete values, and lax loops, under the same grad.
    total = 0.0
    for i in range(3):
        if i % 2 == 0:
            total = total + fnp.sum(fnp.exp(-w * x[i]))
    carry = lax.fori_loop(0, 3, lambda j, c: c * 0.9 + fnp.sum(w), 0.0)
    return total + carry


shared_step = fgrad.jit(lambda w, x: w - 0.1 * fgrad.grad(loss)(w, x))  # traced by every thread


def computations(i: int) -> dict[str, Callable[[], Any]]:
    """Thread i's computations, each of its own shapes."""
    rng = np.random.default_rng(i)
    n = 2 + i
    w, x = rng.standard_normal(n), rng.standard_normal((3, n))
    batch = rng.standard_normal((4, n))
    own_jit = fgrad.jit(lambda w, x: fnp.cos(x @ w) * (i + 1))
    return {
        "grad": lambda: fgrad.grad(loss)(w, x),
        "grad of loops": lambda: fgrad.grad(loop_loss)(w, x),
        "vmap of grad": lambda: fgrad.vmap(fgrad.grad(loss), in_axes=(0, None))(batch, x),
        "vjp": lambda: fgrad.vjp(lambda w: fnp.tanh(x @ w), w)[1](np.ones(3)),
        "jvp": lambda: fgrad.jvp(lambda w: loss(w, x), (w,), (np.ones(n),)),
        "jit": lambda: own_jit(w, x),
        "shared jit": lambda: shared_step(w, x),
        "grad of jit": lambda: fgrad.grad(lambda w: fnp.sum(own_jit(w, x)))(w),
        "hessian": lambda: fgrad.hessian(lambda w: loss(w, x))(w),
    }


def test_transforms_in_eight_threads_agree_with_one_thread() -> None:
    expected = [{name: fn() for name, fn in computations(i).items()} for i in range(THREADS)]
    shared_step.clear_cache()

    def work(i: int) -> dict[str, list[Any]]:
        assert ctx.trace is EVAL_TRACE  # a new thread starts with no transform
        mine = computations(i)
        got: dict[str, list[Any]] = {name: [] for name in mine}
        for _ in range(CALLS):
            for name, fn in mine.items():
                got[name].append(fn())
        return got

    for i, got in enumerate(run_threads(work, THREADS)):
        for name, values in got.items():
            for value in values:
                for a, b in zip(fgrad.tree_util.tree_leaves(value),
                                fgrad.tree_util.tree_leaves(expected[i][name])):
                    np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=f"thread {i}: {name}")
    assert ctx.trace is EVAL_TRACE


def test_a_thread_inside_a_transform_does_not_change_another_threads_trace() -> None:
    inside, leave = threading.Event(), threading.Event()
    seen: list[Any] = []

    def slow(x: Any) -> Any:
        inside.set()
        leave.wait(10)
        return fnp.sin(x)

    thread = threading.Thread(target=lambda: seen.append(fgrad.grad(slow)(0.5)))
    thread.start()
    try:
        assert inside.wait(10)
        assert ctx.trace is EVAL_TRACE  # the other thread's grad is its own
        # Some thread transforms: fgrad.numpy reads this thread's trace, and computes eagerly.
        assert transforming.threads == {thread.ident}
        assert fgrad.grad(fnp.cos)(0.5) == pytest.approx(-np.sin(0.5))
        assert type(fnp.exp(np.float64(0.0))) is np.float64 and fnp.add(1.0, np.float64(2.0)) == 3.0
    finally:
        leave.set()
        thread.join()
    assert seen == [pytest.approx(np.cos(0.5))]
    assert not transforming.threads


def test_no_transform_anywhere_is_what_the_fast_path_assumes() -> None:
    # While no thread transforms, bind and fgrad.numpy's ufuncs skip the thread-local read:
    # the set is empty exactly when no thread has a current trace other than evaluation.
    assert not transforming.threads
    counts: list[int] = []
    fgrad.grad(lambda x: counts.append(len(transforming.threads)) or fnp.sin(x))(0.5)
    fgrad.jit(lambda x: counts.append(len(transforming.threads)) or x * 2.0)(np.ones(2))
    with fgrad.debug_nans():
        counts.append(len(transforming.threads))
    fgrad.grad(fgrad.grad(lambda x: counts.append(len(transforming.threads)) or x ** 3))(0.5)  # nested
    assert counts == [1, 1, 1, 1] and not transforming.threads


def test_a_new_thread_starts_with_the_initial_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    checking = EvalTrace(None, "evaluation with checks")
    monkeypatch.setattr(type(ctx), "initial", checking)
    seen: list[Any] = []
    thread = threading.Thread(target=lambda: seen.append(ctx.trace))
    thread.start()
    thread.join()
    assert seen == [checking]
    assert ctx.trace is EVAL_TRACE  # a thread that had started keeps its own


def test_a_tracer_used_in_another_thread_raises() -> None:
    box: list[Any] = []
    ready, done = threading.Event(), threading.Event()

    def f(x: Any) -> Any:
        box.append(x * 2.0)  # a live tracer of this thread's grad
        ready.set()
        done.wait(10)
        return fnp.sin(x)

    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(fgrad.grad(f)(1.0)))
    thread.start()
    try:
        assert ready.wait(10)
        tracer = box[0]
        uses: dict[str, Callable[[], Any]] = {
            "eager fnp": lambda: fnp.sin(tracer),
            "operator": lambda: tracer + 1.0,
            "numpy": lambda: np.exp(tracer),
            "bool": lambda: bool(tracer > 0),
            "indexing": lambda: tracer[None],
            "grad": lambda: fgrad.grad(lambda y: y * tracer)(3.0),
            "vmap": lambda: fgrad.vmap(lambda y: y + tracer)(np.ones(2)),
            "make_jaxpr": lambda: fgrad.make_jaxpr(lambda y: y * tracer)(3.0),
            "jit": lambda: fgrad.jit(lambda y: y * tracer)(3.0),
        }
        for name, use in uses.items():
            with pytest.raises(fgrad.UnexpectedTracerError, match="crossed threads") as info:
                use()
            assert "grad" in str(info.value), name
    finally:
        done.set()
        thread.join()
    assert results == [pytest.approx(np.cos(1.0))]  # the owner is unaffected
    with pytest.raises(fgrad.UnexpectedTracerError, match="after that transform had returned"):
        fnp.sin(box[0])  # now it is dead: that is the error
    assert ctx.trace is EVAL_TRACE


def test_a_thread_may_use_a_vjp_function_made_in_another() -> None:
    # A vjp function holds a jaxpr and residuals, no live tracer: it may be
    # shared, and called in many threads at once.
    x = np.linspace(0.1, 1.0, 5)
    _, vjp_fn = fgrad.vjp(lambda x: fnp.sin(x) * x, x)
    expected = np.cos(x) * x + np.sin(x)
    results = run_threads(lambda i: [vjp_fn(np.ones(5))[0] for _ in range(CALLS)], THREADS)
    for values in results:
        for value in values:
            np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_large_gradients_in_threads_at_once_share_inputs_globals_and_cotangents_untouched() -> None:
    # Arrays above the size where the backward pass writes into the cotangents
    # it owns: threads share the input, a closed-over array, a vjp function and
    # the cotangent they pass it, none of which may be written.
    n = 1 << 16
    x, shared = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 1.5, n)
    ct = np.linspace(1.0, 2.0, n)
    kept = [x.copy(), shared.copy(), ct.copy()]

    def f(x: Any) -> Any:
        return fnp.sum(-fnp.sin(x) * shared * 2.0) + fnp.sum(x * x)

    _, vjp_fn = fgrad.vjp(lambda x: -fnp.exp(x) * shared + x, x)
    expected = [fgrad.grad(f)(x), vjp_fn(ct)[0]]
    np.testing.assert_allclose(expected[0], -2.0 * np.cos(x) * shared + 2 * x, rtol=1e-12)
    results = run_threads(lambda i: [[fgrad.grad(f)(x), vjp_fn(ct)[0]] for _ in range(10)], 4)
    for values in results:
        for got in values:
            for a, b in zip(got, expected):
                np.testing.assert_array_equal(a, b)
    for a, b in zip((x, shared, ct), kept):
        np.testing.assert_array_equal(a, b)
