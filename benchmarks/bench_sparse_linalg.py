"""fgrad.scipy.sparse.linalg's cg and gmres against SciPy's, side by side.

fgrad runs SciPy's iterations itself, on fgrad.lax.while_loop, so that they
work under jit and vmap and without SciPy; this measures what that costs
against SciPy's own Python loop, on the same system, to the same tolerance
(the same number of iterations: the results are checked to agree first).

* a 1-d Poisson matrix (tridiagonal, n = 4000) as a SciPy CSR matrix: cg,
  and gmres on a non-symmetric variant; fgrad eagerly with the CSR matrix
  (every call stages the solve again), and jitted with the same operator
  written as a stencil in fgrad.numpy;
* a dense symmetric positive definite matrix, n = 300: cg, eager and jitted.

Baseline: SciPy. No target: these are figures (fgrad's eager call pays the
staging of its loops, about a millisecond; jit pays it once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from harness import interleaved, optional_import, report

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy.sparse import linalg as fsl

N_SPARSE = 4000
N_DENSE = 300
RTOL = 1e-8


def stencil(lower: float, diagonal: float, upper: float) -> Callable[[Any], Any]:
    """x -> T x for the tridiagonal T with these diagonals, in fgrad.numpy."""
    def matvec(x: Any) -> Any:
        zero = fnp.zeros(1, x.dtype)
        return (diagonal * x + lower * fnp.concatenate([zero, x[:-1]])
                + upper * fnp.concatenate([x[1:], zero]))

    return matvec


def main() -> None:
    print("=" * 72)
    print("fgrad.scipy.sparse.linalg against scipy.sparse.linalg")
    scipy_sparse = optional_import("scipy.sparse")
    if scipy_sparse is None:
        return
    import scipy.sparse.linalg as ssl

    rng = np.random.default_rng(0)
    b = rng.standard_normal(N_SPARSE)
    for solver, (lower, upper) in (("cg", (-1.0, -1.0)), ("gmres", (-1.3, -0.7))):
        T = scipy_sparse.diags([lower, 2.2, upper], [-1, 0, 1], shape=(N_SPARSE, N_SPARSE), format="csr")
        ours, theirs = getattr(fsl, solver), getattr(ssl, solver)
        jitted = fgrad.jit(lambda b, ours=ours, lower=lower, upper=upper: ours(stencil(lower, 2.2, upper), b,
                                                                               rtol=RTOL)[0])
        contenders: dict[str, Callable[[], Any]] = {
            "scipy": lambda: theirs(T, b, rtol=RTOL)[0],
            "fgrad (CSR, eager)": lambda: ours(T, b, rtol=RTOL)[0],
            "fgrad (stencil, jit)": lambda: jitted(b),
        }
        expected = contenders["scipy"]()
        for name, fn in contenders.items():
            if not np.allclose(fn(), expected, rtol=1e-9, atol=1e-9):
                raise SystemExit(f"{solver}: {name}'s solution differs from SciPy's")
        results = interleaved(contenders, repeats=15, number=3, baseline="scipy")
        report(f"{solver}, tridiagonal n = {N_SPARSE}, rtol {RTOL:g}", results, "scipy")

    Q = rng.standard_normal((N_DENSE, N_DENSE))
    A = Q @ Q.T / N_DENSE + np.eye(N_DENSE)
    d = rng.standard_normal(N_DENSE)
    jitted_dense = fgrad.jit(lambda d: fsl.cg(A, d, rtol=RTOL)[0])
    gradient = fgrad.jit(fgrad.grad(lambda d: fnp.sum(fsl.cg(A, d, rtol=RTOL)[0])))
    contenders = {
        "scipy": lambda: ssl.cg(A, d, rtol=RTOL)[0],
        "fgrad (eager)": lambda: fsl.cg(A, d, rtol=RTOL)[0],
        "fgrad (jit)": lambda: jitted_dense(d),
    }
    for name, fn in contenders.items():
        if not np.allclose(fn(), contenders["scipy"](), rtol=1e-9, atol=1e-9):
            raise SystemExit(f"dense cg: {name}'s solution differs from SciPy's")
    contenders["fgrad grad in b (jit; 2 solves)"] = lambda: gradient(d)
    results = interleaved(contenders, repeats=15, number=5, baseline="scipy")
    report(f"cg, dense SPD n = {N_DENSE}, rtol {RTOL:g}", results, "scipy")


if __name__ == "__main__":
    main()
