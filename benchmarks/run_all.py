"""Run every benchmark in turn and print a summary of all targets.

    python benchmarks/run_all.py

fgrad's figures and targets come from a process that never imports PyTorch:
importing it changes how glibc's malloc serves large temporaries, which a
user's process would not see (fgrad's W4 Jacobian runs twice as fast beside
it). So the benchmarks run in a child process with every installed peer but
PyTorch, then, if PyTorch is installed, again in a second child for its
figures (with HIPS autograd, its baseline; FGRAD_BENCH_PEERS selects the
peers of a run). Within a
child, each benchmark module's main() runs in turn; one that fails (an
error, or a gradient that does not match) is reported and the rest still
run. Benchmarks are measurements, not tests: the exit code is 0 whatever
the results.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from harness import TARGETS  # noqa: E402

BENCHMARKS = [
    "bench_w1_scalar_chain", "bench_w2_control_flow", "bench_w7_small", "bench_w3_mlp", "bench_eager",
    "bench_w4_w5_jacobians", "bench_elementwise", "bench_checkpoint", "bench_scan_checkpoints", "bench_jit",
    "bench_w8_rnn", "bench_w10_long_rnn", "bench_w9_scalar_graph", "bench_compile", "bench_dask",
    "bench_sparse_linalg", "gpu_check",
]
PEERS = ["autograd", "jax", "torch"]


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def main() -> None:
    import fgrad

    print(f"fgrad {fgrad.__version__}, numpy {np.__version__}, Python {platform.python_version()}")
    print("peers: " + ", ".join(f"{p} {'installed' if installed(p) else 'not installed'}" for p in PEERS))
    start = time.perf_counter()
    errors: list[tuple[str, str]] = []
    for name in BENCHMARKS:
        try:
            importlib.import_module(name).main()
        except (Exception, SystemExit) as e:
            traceback.print_exc()
            errors.append((name, f"{type(e).__name__}: {e}"))
    # W4/W5 once more with a warm allocator (printed, not in the summary): see that module.
    importlib.import_module("bench_w4_w5_jacobians").main_warm_allocator()

    print("\n" + "=" * 72)
    print("Summary")
    print(f"  {'target':<50} {'measured':>9} {'limit':>7}  result")
    for t in TARGETS:
        print(f"  {t.name:<50} {t.measured:9.3f} {t.limit:7.2f}  {'PASS' if t.passed else 'FAIL'}")
    for name, message in errors:
        print(f"  {name:<50} ERROR  {message}")
    passed = sum(t.passed for t in TARGETS)
    print(f"  {passed}/{len(TARGETS)} targets met; total time {time.perf_counter() - start:.0f} s")


def run_children() -> None:
    """The benchmarks without PyTorch (fgrad's figures), then PyTorch's own."""
    here = Path(__file__).resolve()
    without_torch = [p for p in PEERS if p != "torch" and installed(p)]
    runs = [("fgrad and every peer but PyTorch", ",".join(without_torch) or "none")]
    if installed("torch"):  # with HIPS autograd, the baseline PyTorch is paired with where it is one
        with_torch = ",".join(p for p in ("autograd", "torch") if installed(p))
        runs.append(("PyTorch's figures: fgrad's below are not quoted, torch is imported", with_torch))
    for title, peers in runs:
        print(f"\n{'#' * 72}\n# {title} (FGRAD_BENCH_PEERS={peers})\n{'#' * 72}", flush=True)
        env = {**os.environ, "FGRAD_BENCH_PEERS": peers}
        subprocess.run([sys.executable, str(here)], env=env, check=False)


if __name__ == "__main__":
    if "FGRAD_BENCH_PEERS" in os.environ:
        main()
    else:
        run_children()
