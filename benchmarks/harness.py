"""Shared helpers for the benchmark scripts.

The machine these run on is noisy: timings swing by tens of percent between
runs. So a contender is never timed in one block and its baseline in
another: `interleaved` alternates each contender with its baseline, in an
order that changes from one repetition to the next, and reports medians. The
ratios (medians of per-repetition ratios) are much steadier than the
absolute times.

PyTorch's OpenMP threads spin after each parallel call by default, and on
two cores they halve the speed of whatever runs next (measured on W3: the
hand-written NumPy pass took 5.7 ms after a PyTorch call, 2.5 ms after any
other). Importing this module asks OpenMP to let idle threads sleep
(OMP_WAIT_POLICY=PASSIVE, unless set already), before any peer is imported.

Results are also collected in `TARGETS` so that `run_all.py` can print one
summary table at the end.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class Timing(float):
    """Median seconds per call (the float value), with the per-repetition times
    in `samples` and, when timed in pairs, the baseline's times of the same
    repetitions in `paired`."""

    samples: list[float]
    paired: list[float] | None = None

    def __new__(cls, samples: list[float]) -> Timing:
        self = super().__new__(cls, statistics.median(samples))
        self.samples = samples
        return self


@dataclass
class Target:
    """One target checked by a benchmark: `measured <= limit` passes."""

    name: str
    measured: float
    limit: float

    @property
    def passed(self) -> bool:
        return self.measured <= self.limit


TARGETS: list[Target] = []


def optional_import(name: str) -> ModuleType | None:
    """The module `name`, or None (with a note printed) when it is not installed
    or FGRAD_BENCH_PEERS (a comma-separated list, when set) leaves it out."""
    peers = os.environ.get("FGRAD_BENCH_PEERS")
    if peers is not None and name not in peers.split(",") and importlib.util.find_spec(name) is not None:
        print(f"{name} left out of this run (FGRAD_BENCH_PEERS={peers})")
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        print(f"{name} not installed: skipped")
        return None


def interleaved(
    contenders: dict[str, Callable[[], object]], repeats: int, number: int, baseline: str | None = None
) -> dict[str, Timing]:
    """Time each contender `number` calls at a time, `repeats` times, interleaved.

    Each repetition runs the contenders in a new (seeded) random order, so
    none is always first (warm caches) or last, and none always follows the
    same other one. Returns per contender the median time per call, a float
    that also carries the per-repetition times (for ratios).

    With `baseline`, each other contender is instead interleaved with the
    baseline alone, one pair after another, and its ratios are taken to the
    baseline's times of its own pair: a peer that leaves threads spinning or
    a heap to trim (JAX's and PyTorch's thread pools, glibc) then slows only
    its own pair, never fgrad's comparison with its baseline.
    """
    for fn in contenders.values():  # warm-up: first calls build caches, import lazily
        fn()
    if baseline is None:
        return _interleave(contenders, list(contenders), repeats, number)
    results: dict[str, Timing] = {}
    pooled: list[float] = []
    for name in contenders:
        if name == baseline:
            continue
        pair = _interleave(contenders, [baseline, name], repeats, number)
        results[name] = pair[name]
        results[name].paired = pair[baseline].samples
        pooled += pair[baseline].samples
    if not pooled:  # the baseline alone
        pooled = _interleave(contenders, [baseline], repeats, number)[baseline].samples
    results[baseline] = Timing(pooled)
    return {n: results[n] for n in contenders}


def _interleave(
    contenders: dict[str, Callable[[], object]], names: list[str], repeats: int, number: int
) -> dict[str, Timing]:
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[:]
        random.Random(r).shuffle(order)
        for name in order:
            fn = contenders[name]
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - t0) / number)
    return {n: Timing(s) for n, s in samples.items()}


def ratio(results: dict[str, Timing], name: str, baseline: str) -> float:
    """Median over repetitions of time(name) / time(baseline) in the same
    repetition (of the same pair, when timed in pairs)."""
    if name == baseline:
        return 1.0
    mine = results[name]
    theirs = mine.paired if mine.paired is not None else results[baseline].samples
    return statistics.median(a / b for a, b in zip(mine.samples, theirs))


def format_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.2f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:9.3f} ms"
    return f"{seconds:9.3f} s "


def report(
    title: str,
    results: dict[str, Timing],
    baseline: str,
    target: float | None = None,
    subject: str = "fgrad",
) -> float | None:
    """Print a table of median time per call and median ratio to `baseline`.

    With `target`, the ratio of `subject` to the baseline is checked against
    it (PASS when <=), recorded in TARGETS, and returned.
    """
    print(f"\n{title}")
    if any(r.paired is not None for r in results.values()):
        print(f"  (each contender timed in a pair with {baseline}: its ratio is to the baseline's times in")
        print("  that pair; the baseline's median is over all pairs)")
    print(f"  {'contender':<22} {'median/call':>12}  {'ratio':>7}  vs {baseline}")
    measured = None
    for name, res in results.items():
        r = ratio(results, name, baseline)
        verdict = ""
        if target is not None and name == subject:
            measured = r
            verdict = f"  target <= {target:g}: {'PASS' if r <= target else 'FAIL'}"
        print(f"  {name:<22} {format_time(res):>12}  {r:7.3f}{verdict}")
    if target is not None and measured is not None:
        TARGETS.append(Target(title, measured, target))
    return measured


def check(name: str, measured: float, limit: float) -> None:
    """Print and record a target that is not a time ratio from `report` (e.g. memory)."""
    TARGETS.append(Target(name, measured, limit))
    print(f"  {name}: {measured:.3f} (target <= {limit:g}): {'PASS' if measured <= limit else 'FAIL'}")


def check_agree(title: str, contenders: dict[str, Callable[[], object]], reference: str,
                rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Every contender's result must match `reference`'s, leaf by leaf (a pytree of
    arrays of any library), before anything is timed; the run stops otherwise."""
    import numpy as np

    from fgrad.tree_util import tree_leaves

    expected = [np.asarray(e) for e in tree_leaves(contenders[reference]())]
    for name, fn in contenders.items():
        got = [np.asarray(g) for g in tree_leaves(fn())]
        if len(got) != len(expected) or not all(
            np.allclose(g, e, rtol=rtol, atol=atol) for g, e in zip(got, expected)
        ):
            raise SystemExit(f"{title}: {name}'s result differs from {reference}'s")
