"""Eager overhead: what using fgrad costs when no transform is active.

1. fgrad.numpy.add on two 0-d arrays versus numpy.add on the same arrays.
   With no transform active, fgrad.numpy's functions are NumPy's own after
   one check, so on the smallest inputs (where NumPy itself is fastest) the
   check is all that shows. Target: fnp.add <= 2 x numpy.add.
2. The cost of `import fgrad` versus `import numpy` in a fresh interpreter:
   the wall clock of `python -c "import fgrad"` minus that of
   `python -c "pass"`, against the same for numpy, all three processes
   interleaved. fgrad imports numpy, so this counts numpy too: the target
   fgrad <= 1.5 x numpy says fgrad's own modules may add at most half of
   NumPy's import time. The child processes may cache bytecode (some
   environments set PYTHONDONTWRITEBYTECODE, which would make an editable
   fgrad recompile its sources on every import while NumPy, installed by pip,
   loads compiled files): the warm-up run writes the cache, as installing
   fgrad with pip would.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

import numpy as np
from harness import check, interleaved, report

import fgrad.numpy as fnp

ADD_TARGET = 2.0
IMPORT_TARGET = 1.5
IMPORT_REPEATS = 15


def bench_add() -> None:
    a, b = np.array(1.5), np.array(2.5)
    if fnp.add(a, b) != np.add(a, b):
        raise SystemExit("eager: fnp.add gives a different result from numpy.add")
    results = interleaved(
        {"numpy.add": lambda: np.add(a, b), "fnp.add": lambda: fnp.add(a, b)},
        repeats=60, number=20_000,
    )
    report("eager add of two 0-d arrays: fnp.add / numpy.add", results, "numpy.add",
           target=ADD_TARGET, subject="fnp.add")


def bench_import() -> None:
    commands = {"pass": "pass", "numpy": "import numpy", "fgrad": "import fgrad"}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results = interleaved(
        {name: lambda code=code: subprocess.run([sys.executable, "-c", code], check=True, env=env)
         for name, code in commands.items()},
        repeats=IMPORT_REPEATS, number=1,
    )
    base = results["pass"].samples
    cost = {n: [t - p for t, p in zip(results[n].samples, base)] for n in ("numpy", "fgrad")}
    print("\nimport in a fresh interpreter (process wall clock minus `python -c pass`)")
    print(f"  {'python -c pass':<22} {statistics.median(base) * 1e3:9.1f} ms (whole process)")
    for name, samples in cost.items():
        print(f"  {'import ' + name:<22} {statistics.median(samples) * 1e3:9.1f} ms")
    ratio = statistics.median(f / n for f, n in zip(cost["fgrad"], cost["numpy"]))
    check("import fgrad / import numpy", ratio, IMPORT_TARGET)


def main() -> None:
    print("=" * 72)
    print("Eager: no transform active")
    bench_add()
    bench_import()


if __name__ == "__main__":
    main()
