"""Running the blocks of a fused cluster (ir/fusion.py) on a few threads.

`run_blocks(work, n_blocks, args)` calls `work(claim, *args)` in the calling
thread and in up to `jit_fusion_threads - 1` threads of a pool made when
first needed (as many as `os.cpu_count()` less the caller; none after a
fork until asked again). `work` takes block numbers from `claim()` until it
gives one past the last, so a thread that starts late, or that another
process slows down, takes fewer blocks; the call returns when every block
taken is done. Block code calls NumPy only: NumPy's ufuncs release the GIL,
and no thread of the pool ever reads or sets fgrad's current trace.

NumPy's floating-point error state is per thread. Each thread runs its
blocks under the caller's state, except that a mode that warns ("warn", or
fgrad's handler that warns from the user's line, core/fp_warnings.py) is
collected instead; after the blocks the caller warns once per kind and
operation, as the unfused code would, from its own frame. A FloatingPointError
("raise") in any thread is raised in the caller. A handler of the user's own
("call" or "log" with another function, "print") keeps the blocks in the
calling thread, under that state.

This module knows nothing about jaxprs; it imports only core.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..config import config
from ..core import fp_warnings

__all__ = ["run_blocks", "thread_count"]

_KIND_MODES = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
               "invalid value": "invalid"}

_pool: list[ThreadPoolExecutor] = []  # the pool, once made
_pool_lock = threading.Lock()
_sink = threading.local()  # `found`: the (kind, operation) pairs the running thread's blocks raised


def thread_count() -> int:
    """How many threads run a fused cluster's blocks: `jit_fusion_threads`, at most os.cpu_count()."""
    cores = os.cpu_count() or 1
    wanted = config.jit_fusion_threads
    return cores if wanted is None else max(1, min(wanted, cores))


def _helpers() -> ThreadPoolExecutor:
    with _pool_lock:
        if not _pool:
            workers = max(1, (os.cpu_count() or 1) - 1)
            _pool.append(ThreadPoolExecutor(workers, thread_name_prefix="fgrad-fusion"))
        return _pool[0]


def _forget_pool() -> None:
    _pool.clear()  # a forked child has none of its parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _collect(kind: str, flag: int) -> None:
    """NumPy's "call" handler in blocks: note the error and the operation that raised it."""
    _sink.found.append((kind, fp_warnings.operation_of(sys._getframe(1))))


def _worker_modes() -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The caller's modes, and the modes its blocks run under (warnings collected),
    or None where the user's own handler must see each error as it happens."""
    modes: dict[str, Any] = dict(np.geterr())
    handler = np.geterrcall()
    if "print" in modes.values() or "log" in modes.values():
        return modes, None
    if "call" in modes.values() and handler is not fp_warnings.reissue:
        return modes, None
    return modes, {k: "call" if m in ("warn", "call") else m for k, m in modes.items()}


class _Run:
    """One call's blocks: the shared counter, the threads still at work, the
    first exception and the errors collected."""

    __slots__ = ("work", "args", "claim", "modes", "busy", "idle", "error", "found")

    def __init__(self, work: Callable[..., None], args: Sequence[Any], modes: dict[str, Any] | None) -> None:
        self.work = work
        self.args = args
        self.claim = itertools.count().__next__  # atomic under the GIL
        self.modes = modes
        self.busy = 0
        self.idle = threading.Condition(threading.Lock())
        self.error: BaseException | None = None
        self.found: list[tuple[str, str | None]] = []

    def help(self) -> None:
        """A pool thread's share: the blocks it can still take."""
        with self.idle:
            self.busy += 1
        try:
            self.run()
        finally:
            with self.idle:
                self.busy -= 1
                if not self.busy:
                    self.idle.notify_all()

    def run(self) -> None:
        found: list[tuple[str, str | None]] = []
        previous = getattr(_sink, "found", None)
        _sink.found = found
        try:
            if self.modes is None:
                self.work(self.claim, *self.args)
            else:
                with np.errstate(call=_collect, **self.modes):
                    self.work(self.claim, *self.args)
        except BaseException as e:  # raised in the caller
            if self.error is None:
                self.error = e
        finally:
            _sink.found = previous
            self.found.extend(found)  # list.extend is atomic

    def wait(self) -> None:
        with self.idle:
            while self.busy:
                self.idle.wait()


def run_blocks(work: Callable[..., None], n_blocks: int, args: Sequence[Any]) -> None:
    """`work(claim, *args)` in this thread and in helpers from the pool, until
    `claim()` has given every block number below `n_blocks`; then NumPy's
    warnings the blocks collected, once each, and the first exception raised."""
    modes, worker_modes = _worker_modes()
    job = _Run(work, args, worker_modes)
    helpers = min(thread_count() - 1, n_blocks - 1) if worker_modes is not None else 0
    if helpers > 0:
        pool = _helpers()
        for _ in range(helpers):
            pool.submit(job.help)
    job.run()
    if helpers > 0:
        job.wait()
    if job.error is not None:
        raise job.error
    for kind, operation in dict.fromkeys(job.found):
        if modes.get(_KIND_MODES.get(kind, "invalid")) == "call":  # fgrad's handler: from the user's line
            fp_warnings.reissue(kind, 0, operation=operation)
        else:  # "warn": as NumPy words it
            text = f"{kind} encountered" + (f" in {operation}" if operation else "")
            warnings.warn(text, RuntimeWarning, stacklevel=3)
