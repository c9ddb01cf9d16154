"""Dask: the gradient of sum(sin(x) * exp(-x**2)) for x of 2e8 float64 (1.6 GB)
on a cluster of two worker processes, each limited to 1 GB.

fgrad's gradient of a Dask array is a Dask array: grad builds the graph on
the client, chunk by chunk, with every Dask computation refused meanwhile,
and nothing runs until `.compute()`. So an x twice as large as the workers'
memory together, made lazily on the workers (`da.random`), is differentiated
there chunk by chunk, and only a float comes back: the sum of the gradient's
entries. For chunks of 1e7 elements (80 MB) and of 2.5e6, each on a new
cluster, printed:

* the wall time of that `.compute()` (graph building by fgrad.grad timed
  apart), beside the time of making x alone and summing it, which the
  gradient's time includes;
* each worker's peak resident memory (ru_maxrss, read on the workers; the
  cluster is new, so it covers this run and the worker's start), the
  client's, which never holds a chunk, and what the workers spilled to disk
  (Dask spills above 70% of the limit: a fused task of an 80 MB chunk keeps
  several temporaries alive at once, which takes a worker there);
* a check that the gradient matches the closed form
  (cos(x) - 2x sin(x)) e^(-x^2), computed by NumPy, on a slice of x;
* the ratio to plain NumPy on 1e7 elements, the largest x one worker's 1 GB
  holds with the gradient's temporaries: the hand-written gradient (the
  baseline) and fgrad.grad on NumPy arrays, in the client process, against
  fgrad.grad on the same x persisted on the two workers in 1e6-element
  chunks; every contender computes the gradient and its sum. Also the time
  per element of the large runs against the baseline's.

No target: this shows that the work scales out of one process's memory, not
how fast one core is. Not part of the suite (about a minute, clusters of
processes); run_all.py runs it when dask and distributed are installed.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import resource
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from bench_elementwise import loss_fn, manual_grad
from harness import format_time, interleaved, ratio, report

import fgrad
import fgrad.numpy as fnp

BIG = 200_000_000
CHUNKS = (10_000_000, 2_500_000)  # the chunks asked for, 80 MB, then a quarter of them
SMALL, SMALL_CHUNK = 10_000_000, 1_000_000
WORKERS, MEMORY_LIMIT = 2, "1GB"
ON_DASK = f"fgrad (dask, {WORKERS} workers)"


@contextlib.contextmanager
def cluster() -> Iterator[Any]:
    """A client of a new local cluster of WORKERS single-threaded processes,
    each of MEMORY_LIMIT, with the dashboard and the logs off."""
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=WORKERS, threads_per_worker=1, processes=True, memory_limit=MEMORY_LIMIT,
        dashboard_address=None, silence_logs=logging.CRITICAL,
    ) as local, Client(local) as client:
        client.run(importlib.import_module, "fgrad")  # the workers import it now, not in a timed run
        yield client


def _refuse(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    raise SystemExit("dask: fgrad.grad computed a Dask array while it built the gradient's graph")


def graph_of(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) with every Dask computation refused: fgrad must only build the graph."""
    import dask

    with dask.config.set(scheduler=_refuse):
        return fn(*args)


def _max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def _spilled_bytes(dask_worker: Any) -> float:
    """Bytes the worker has written to disk (spilled), over its life."""
    return dask_worker.data.cumulative_metrics.get(("disk-write", "bytes"), 0.0)


def _random(n: int, chunk: int) -> Any:
    import dask.array as da

    return da.random.default_rng(0).standard_normal(n, chunks=chunk)


def _per_worker(values: dict[str, float], unit: str = "MiB") -> str:
    return ", ".join(f"worker {i} {v / 2**20:.0f} {unit}" for i, v in enumerate(values.values()))


def big_run(client: Any, chunk: int) -> float:
    """Differentiate x of BIG elements in chunks of `chunk` on the cluster;
    print the figures and return the seconds per element."""
    import dask

    pids = client.run(os.getpid)
    x = _random(BIG, chunk)
    start = time.perf_counter()
    g = graph_of(fgrad.grad(loss_fn(fnp)), x)
    traced = time.perf_counter() - start
    start = time.perf_counter()
    total = float(g.sum().compute())
    computed = time.perf_counter() - start
    peaks, spilled = client.run(_max_rss), client.run(_spilled_bytes)
    restarted = client.run(os.getpid) != pids

    start = time.perf_counter()
    x.sum().compute()
    x_only = time.perf_counter() - start
    lo = BIG // 2 + 12_345  # a slice of a middle chunk
    x_part, g_part = dask.compute(x[lo : lo + 100_000], g[lo : lo + 100_000])
    if not np.allclose(g_part, manual_grad(x_part), rtol=1e-12, atol=1e-15):
        raise SystemExit("dask: the distributed gradient differs from the closed form")

    print(f"\n  x in {BIG // chunk} chunks of {chunk:.2g}, made on the workers:")
    print(f"  fgrad.grad (builds a graph of {len(g.__dask_graph__())} tasks): {format_time(traced)}")
    print(f"  g.sum().compute():                 {format_time(computed)}  (the sum: {total:.6f})")
    print(f"  x.sum().compute(), x alone:        {format_time(x_only)}  (making x, included above)")
    print(f"  peak resident memory: {_per_worker(peaks)}; client {_max_rss() / 2**20:.0f} MiB")
    print(f"  spilled to disk: {_per_worker(spilled)}")
    if restarted:
        print("  a worker was restarted during the run (it passed its memory limit)")
    print(f"  closed form on x[{lo}:{lo + 100_000}]: matches (rtol 1e-12)")
    return computed / BIG


def small_run(client: Any) -> float:
    """fgrad on the cluster against NumPy in this process, x of SMALL elements;
    print the table and return the baseline's seconds per element."""
    x_dask = client.persist(_random(SMALL, SMALL_CHUNK))
    x = x_dask.compute()
    f = loss_fn(fnp)
    expected = manual_grad(x).sum()
    contenders: dict[str, Callable[[], Any]] = {
        "hand-written numpy": lambda: manual_grad(x).sum(),
        "fgrad (numpy)": lambda: fgrad.grad(f)(x).sum(),
        ON_DASK: lambda: graph_of(fgrad.grad(f), x_dask).sum().compute(),
    }
    for name, fn in contenders.items():
        if not np.isclose(fn(), expected, rtol=1e-10):
            raise SystemExit(f"dask: {name} gradient differs from the hand-written one")
    results = interleaved(contenders, repeats=7, number=1, baseline="hand-written numpy")
    report(f"Dask {SMALL:.0e}: grad and its sum, time / hand-written numpy", results, "hand-written numpy")
    on_numpy = ratio(results, "fgrad (numpy)", "hand-written numpy")
    print(f"  {ON_DASK} / fgrad (numpy): {ratio(results, ON_DASK, 'hand-written numpy') / on_numpy:.3f}")
    return results["hand-written numpy"] / SMALL


def main() -> None:
    print("=" * 72)
    print(f"Dask: grad of sum(sin(x) * exp(-x**2)), x of {BIG:.0e} float64 ({BIG * 8 / 1e9:.1f} GB), "
          f"{WORKERS} worker processes of {MEMORY_LIMIT}, one thread each")
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        print("dask or distributed not installed: skipped")
        return
    per_element = {}
    for chunk in CHUNKS:  # a new cluster for each, so that the workers' peak memory is this run's
        with cluster() as client:
            per_element[chunk] = big_run(client, chunk)
    with cluster() as client:
        baseline = small_run(client)
    print(f"\n  time per element, {BIG:.0e} on the cluster / hand-written numpy on {SMALL:.0e} here:")
    for chunk, seconds in per_element.items():
        print(f"    chunks of {chunk:.2g}: {seconds / baseline:.3f}")


if __name__ == "__main__":
    main()
