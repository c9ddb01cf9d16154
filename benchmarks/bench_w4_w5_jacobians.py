"""W4 and W5: full Jacobians and Hessians, vectorised with vmap.

W4: the Jacobian of f(x) = tanh(A x) * x, A 256x256 (a 256x256 Jacobian).
W5: the Hessian of g(x) = sum(tanh(A x)^2), A 64x64.

HIPS autograd builds these with one backward pass per output element in a
Python loop; fgrad vmaps a jvp (jacfwd) or the pullback of one vjp (jacrev)
over the standard basis, and hessian is jacfwd of jacrev. Baseline: HIPS
autograd's jacobian/hessian. Targets: fgrad <= 0.1 x autograd. The closed
forms written in NumPy are timed as the floor, and every result is checked
against them first.

Vectorised Jacobians allocate a few batch-sized temporaries (256x256 here)
where autograd's loop allocates only vectors. On machines where the first
touch of fresh memory is slow (on this VM a new 512 KB array costs ~270 us of
page faults, ten times the arithmetic), that dominates. With --warm-allocator
the script re-runs itself with glibc told to keep freed memory
(MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_), as a long-running numerical
process would be configured; both figures are worth quoting.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp

TARGET = 0.1


def w4(np_like: Any, A: np.ndarray) -> Callable[[Any], Any]:
    return lambda x: np_like.tanh(A @ x) * x


def w4_closed(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(A @ x)
    return (1 - t**2)[:, None] * A * x[:, None] + np.diag(t)


def w5(np_like: Any, A: np.ndarray) -> Callable[[Any], Any]:
    return lambda x: np_like.sum(np_like.tanh(A @ x) ** 2)


def w5_closed(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(A @ x)
    return (A.T * (2 * (1 - t**2) * (1 - 3 * t**2))) @ A


def run(title: str, contenders: dict[str, Callable[[], Any]], expected: np.ndarray,
        subjects: list[str], repeats: int, number: int) -> None:
    for name, fn in contenders.items():
        if not np.allclose(fn(), expected, atol=1e-8):
            raise SystemExit(f"{title}: {name} differs from the closed form")
    baseline = "autograd" if "autograd" in contenders else "closed form (numpy)"
    results = interleaved(contenders, repeats=repeats, number=number, baseline=baseline)
    for subject in subjects:
        report(f"{title}: {subject} / {baseline}", results, baseline,
               target=TARGET if baseline == "autograd" else None, subject=subject)


def main() -> None:
    rng = np.random.default_rng(0)
    autograd = optional_import("autograd")
    torch = optional_import("torch")

    print("=" * 72)
    n = 256
    A, x = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)
    print(f"W4: Jacobian of tanh(A x) * x, A {n}x{n}")
    contenders: dict[str, Callable[[], Any]] = {
        "fgrad.jacrev": lambda: fgrad.jacrev(w4(fnp, A))(x),
        "fgrad.jacfwd": lambda: fgrad.jacfwd(w4(fnp, A))(x),
        "closed form (numpy)": lambda: w4_closed(A, x),
    }
    if autograd is not None:
        import autograd.numpy as anp

        contenders["autograd"] = lambda: autograd.jacobian(w4(anp, A))(x)
    if torch is not None:
        from torch.func import jacfwd, jacrev

        tA, tx = torch.from_numpy(A), torch.from_numpy(x)
        contenders["torch.func.jacrev"] = lambda: jacrev(w4(torch, tA))(tx).numpy()
        contenders["torch.func.jacfwd"] = lambda: jacfwd(w4(torch, tA))(tx).numpy()
    run("W4 jacobian", contenders, w4_closed(A, x), ["fgrad.jacrev", "fgrad.jacfwd"], repeats=15, number=2)

    print("=" * 72)
    n = 64
    A, x = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)
    print(f"W5: Hessian of sum(tanh(A x)^2), A {n}x{n}")
    contenders = {
        "fgrad.hessian": lambda: fgrad.hessian(w5(fnp, A))(x),
        "closed form (numpy)": lambda: w5_closed(A, x),
    }
    if autograd is not None:
        import autograd.numpy as anp

        contenders["autograd"] = lambda: autograd.hessian(w5(anp, A))(x)
    if torch is not None:
        from torch.func import hessian

        tA, tx = torch.from_numpy(A), torch.from_numpy(x)
        contenders["torch.func.hessian"] = lambda: hessian(w5(torch, tA))(tx).numpy()
    run("W5 hessian", contenders, w5_closed(A, x), ["fgrad.hessian"], repeats=20, number=3)


WARM = {"MALLOC_TRIM_THRESHOLD_": str(2**28), "MALLOC_MMAP_THRESHOLD_": str(2**28)}


def main_warm_allocator() -> None:
    print("=" * 72)
    print("W4/W5 again with a warm allocator (" + ", ".join(f"{k}={v}" for k, v in WARM.items()) + ")")
    subprocess.run([sys.executable, __file__], env={**os.environ, **WARM}, check=True)


if __name__ == "__main__":
    main()
    if "--warm-allocator" in sys.argv:
        main_warm_allocator()
