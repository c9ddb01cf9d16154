"""A cache for jaxpr-to-jaxpr transforms, keyed weakly on the jaxpr.

A transform of a higher-order primitive's jaxpr (its jvp, its batched form,
its partial evaluation) is asked for again at every call of the primitive;
tracing it once per (jaxpr, arguments) makes those calls cheap. Entries go
when their jaxpr does. Thread-safe: a lock guards the table; two threads that
miss together both compute the result, and both get the one stored first.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from .jaxpr import ClosedJaxpr

__all__ = ["cached_per_jaxpr"]

R = TypeVar("R")


def cached_per_jaxpr(fn: Callable[..., R]) -> Callable[..., R]:
    """Cache `fn(closed, *args)` for each ClosedJaxpr `closed` and hashable `args`.

    Bounded by the jaxprs alive: an entry lives as long as its jaxpr (a weak
    key), and a jaxpr has at most one entry for each combination of `args`,
    which are flags over its inputs and outputs (which are batched, which have
    tangents), so finitely many. A call that raises stores nothing.
    `cached.cache_size()` counts the entries.

    >>> calls = []
    >>> @cached_per_jaxpr
    ... def n_eqns(closed, extra):
    ...     calls.append(extra)
    ...     return len(closed.jaxpr.eqns) + extra
    >>> import fgrad, fgrad.numpy as fnp
    >>> closed = fgrad.make_jaxpr(fnp.sin)(1.0)
    >>> n_eqns(closed, 1), n_eqns(closed, 1), calls, n_eqns.cache_size()
    (2, 2, [1], 1)
    """
    table: weakref.WeakKeyDictionary[ClosedJaxpr, dict[tuple[Hashable, ...], Any]]
    table = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    @functools.wraps(fn)
    def cached(closed: ClosedJaxpr, *args: Hashable) -> R:
        with lock:
            entries = table.get(closed)
            if entries is not None and args in entries:
                return entries[args]
        result = fn(closed, *args)
        with lock:  # the first result stored wins, so that every caller holds the same object
            return table.setdefault(closed, {}).setdefault(args, result)

    def cache_size() -> int:
        with lock:
            return sum(len(entries) for entries in table.values())

    cached.cache_size = cache_size  # type: ignore[attr-defined]
    return cached
