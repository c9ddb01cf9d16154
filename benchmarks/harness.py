"""Shared helpers for the benchmark scripts.

The machine these run on is noisy: timings swing by tens of percent between
runs. So contenders are never timed one after the other in separate blocks;
`interleaved` runs every contender once per repetition, in an order that
rotates from one repetition to the next, and reports medians. The ratios
between contenders (medians of per-repetition ratios) are much steadier than
the absolute times.

Results are also collected in `TARGETS` so that `run_all.py` can print one
summary table at the end.
"""

from __future__ import annotations

import importlib
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType


class Timing(float):
    """Median seconds per call (the float value), with the per-repetition times in `samples`."""

    samples: list[float]

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
    """The module `name`, or None (with a note printed) when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        print(f"{name} not installed: skipped")
        return None


def interleaved(
    contenders: dict[str, Callable[[], object]], repeats: int, number: int
) -> dict[str, Timing]:
    """Time each contender `number` calls at a time, `repeats` times, interleaved.

    Each repetition runs the contenders in a new (seeded) random order, so
    none is always first (warm caches) or last, and none always follows the
    same other one: a contender that leaves threads spinning or memory to be
    trimmed (PyTorch's thread pool, glibc's heap) must not always slow down
    the same neighbour, as it did under a fixed rotation. Returns per
    contender the median time per call, a float that also carries the
    per-repetition times (for ratios).
    """
    names = list(contenders)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for fn in contenders.values():  # warm-up: first calls build caches, import lazily
        fn()
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
    """Median over repetitions of time(name) / time(baseline) in the same repetition."""
    return statistics.median(
        a / b for a, b in zip(results[name].samples, results[baseline].samples)
    )


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
