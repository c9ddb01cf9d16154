"""Running work in several threads at once, for the tests of thread safety."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_threads(work: Callable[[int], Any], n: int) -> list[Any]:
    """`work(i)` in thread i for i < n, started together; their results, or the
    first exception any of them raised."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as e:  # handed to the main thread
            errors.append(e)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
