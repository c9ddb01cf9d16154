"""Run every benchmark in turn and print a summary of all targets.

    python benchmarks/run_all.py

Each benchmark module's main() runs in this one process; a benchmark that
fails (an error, or a gradient that does not match) is reported and the rest
still run. Benchmarks are measurements, not tests: the exit code is 0 whatever
the results.
"""

from __future__ import annotations

import importlib
import importlib.util
import platform
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from harness import TARGETS  # noqa: E402

BENCHMARKS = [
    "bench_w1_scalar_chain", "bench_w2_control_flow", "bench_w7_small", "bench_w3_mlp", "bench_eager",
    "bench_w4_w5_jacobians", "bench_elementwise", "bench_checkpoint",
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


if __name__ == "__main__":
    main()
