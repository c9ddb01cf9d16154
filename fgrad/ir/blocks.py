"""Running the blocks of a fused cluster (ir/fusion.py) on a few threads.

`run_blocks(work, n_blocks, args)` calls `work(claim, *args)` in the calling
thread and in up to `jit_fusion_threads - 1` helper threads, started when
first needed (as many as `os.cpu_count()` less one; a forked child starts
its own). `work` takes block numbers from `claim()` until it gives one past
the last, so a helper that starts late, or that another process slows down,
takes fewer blocks; the call returns when every block taken is done, without
waiting for a helper that has not started (it will find no block left).
Block code calls NumPy only: NumPy's ufuncs release the GIL, and no helper
ever reads or sets fgrad's current trace.

NumPy's floating-point error state is per thread. Every thread runs the
blocks under the caller's state, except that a mode that warns is collected
instead (`fp_warnings.for_threads`); after the blocks the caller warns once
per kind and operation, as the unfused code does, from the user's line. A
FloatingPointError ("raise") in any thread is raised in the caller. Under a
handler of the user's own ("call" or "log" with another function, "print")
the blocks run in the calling thread alone, under that state.

This module knows nothing about jaxprs; it imports only core and the config.
"""

from __future__ import annotations

import itertools
import os
import queue
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..config import config
from ..core import fp_warnings

__all__ = ["run_blocks", "thread_count"]

_CORES = os.cpu_count() or 1
_KIND_MODES = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
               "invalid value": "invalid"}

_jobs: queue.SimpleQueue[_Run] = queue.SimpleQueue()  # what the helpers take, one share each
_helpers: list[threading.Thread] = []
_helpers_lock = threading.Lock()
_sink = threading.local()  # `found`: the (kind, operation) pairs of the errors this thread's blocks met


def thread_count() -> int:
    """How many threads run a fused cluster's blocks: `jit_fusion_threads`, at most os.cpu_count()."""
    wanted = config.jit_fusion_threads
    return _CORES if wanted is None else max(1, min(wanted, _CORES))


def _start_helpers() -> None:
    with _helpers_lock:
        while len(_helpers) < _CORES - 1:
            helper = threading.Thread(target=_serve, name=f"fgrad-fusion-{len(_helpers)}", daemon=True)
            helper.start()
            _helpers.append(helper)


def _serve() -> None:
    while True:
        _jobs.get().help()


def _after_fork() -> None:
    global _jobs, _helpers_lock
    _jobs, _helpers_lock = queue.SimpleQueue(), threading.Lock()
    _helpers.clear()  # a forked child has none of its parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _collect(kind: str, flag: int) -> None:
    """NumPy's "call" handler in blocks: note the error and the operation that met it."""
    _sink.found.append((kind, fp_warnings.operation_of(sys._getframe(1))))


class _Run:
    """One call's blocks: the shared counter, the helpers still at work, the
    first exception and the errors collected."""

    __slots__ = ("work", "args", "claim", "state", "lock", "busy", "done", "error", "found")

    def __init__(self, work: Callable[..., None], args: Sequence[Any], state: Any) -> None:
        self.work = work
        self.args = args
        self.claim = itertools.count().__next__  # atomic under the GIL
        self.state = state
        self.lock = threading.Lock()
        self.busy = 0  # helpers in `help`
        self.done: threading.Lock | None = None  # released by the last helper, once the caller waits
        self.error: BaseException | None = None
        self.found: list[tuple[str, str | None]] = []

    def help(self) -> None:
        """A helper's share: the blocks it can still take."""
        with self.lock:
            self.busy += 1
        try:
            self.run()
        finally:
            with self.lock:
                self.busy -= 1
                if not self.busy and self.done is not None and self.done.locked():
                    self.done.release()

    def run(self) -> None:
        found: list[tuple[str, str | None]] = []
        previous = getattr(_sink, "found", None)
        _sink.found = found
        token = fp_warnings.enter_state(self.state)
        try:
            self.work(self.claim, *self.args)
        except BaseException as e:  # raised in the caller
            if self.error is None:
                self.error = e
        finally:
            fp_warnings.leave(token)
            _sink.found = previous
            self.found.extend(found)  # atomic

    def wait(self) -> None:
        """Until every helper that took part is done."""
        with self.lock:
            if not self.busy:
                return
            self.done = threading.Lock()
            self.done.acquire()
        self.done.acquire()  # released by the last helper


def run_blocks(work: Callable[..., None], n_blocks: int, args: Sequence[Any]) -> None:
    """`work(claim, *args)` in this thread and in helpers, until `claim()` has
    given every block number below `n_blocks`; then the floating-point
    warnings the blocks met, once each, and the first exception raised."""
    if n_blocks == 1:  # one block: in this thread, under its own error state
        work(itertools.count().__next__, *args)
        return
    modes, state = fp_warnings.for_threads(_collect)
    if state is None:
        work(itertools.count().__next__, *args)
        return
    job = _Run(work, args, state)
    helpers = min(thread_count() - 1, n_blocks - 1)
    if helpers > 0:
        if len(_helpers) < _CORES - 1:
            _start_helpers()
        for _ in range(helpers):
            _jobs.put(job)
    job.run()
    if helpers > 0:
        job.wait()
    if job.error is not None:
        raise job.error
    for kind, operation in dict.fromkeys(job.found):
        if modes.get(_KIND_MODES.get(kind, "invalid")) == "call":  # fgrad's handler: from the user's line
            fp_warnings.reissue(kind, 0, operation=operation)
        else:  # "warn", as NumPy words it
            text = f"{kind} encountered" + (f" in {operation}" if operation else "")
            warnings.warn(text, RuntimeWarning, stacklevel=3)
