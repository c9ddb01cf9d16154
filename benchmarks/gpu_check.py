"""fgrad on a GPU through CuPy: W3 (value_and_grad of the 784-256-256-10 MLP,
batch 128) and the gradient of sum(sin(x) * exp(-x**2)) for x of 1e6 float64,
with every array a CuPy array, so that fgrad's transforms run on CuPy
(fgrad/core/libraries.py) and nothing leaves the device until the check.

Each result is checked against NumPy's; the times (the device synchronised
after each call) are printed in pairs with the hand-written NumPy pass on
the CPU, the baseline of bench_w3_mlp.py and bench_elementwise.py, beside
fgrad on NumPy. No target: this shows that the GPU path works and what it
gives. Without CuPy or a CUDA device it prints why and skips (exit code 0),
and so does a workload fgrad cannot compute on CuPy (the error is printed:
a primitive without a rule for CuPy, or an operator such as
`cupy_array @ tracer` that the library refuses instead of deferring to the
tracer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import bench_elementwise
import bench_w3_mlp
import numpy as np
from harness import interleaved, report

import fgrad
import fgrad.numpy as fnp


def cuda_cupy() -> Any | None:
    """CuPy, if it is installed and sees a CUDA device; else None, with the reason printed."""
    try:
        import cupy
    except ImportError:
        print("GPU check skipped: cupy is not installed")
        return None
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CuPy raises its own errors when there is no driver
        print(f"GPU check skipped: CuPy finds no CUDA device ({type(e).__name__}: {e})")
        return None
    if devices == 0:
        print("GPU check skipped: CuPy finds no CUDA device")
        return None
    return cupy


def synchronised(cupy: Any, fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn`, returning only once the device has finished its work."""

    def run() -> Any:
        out = fn()
        cupy.cuda.get_current_stream().synchronize()
        return out

    return run


def w3(cupy: Any) -> None:
    params, inputs, onehot = bench_w3_mlp.make_problem()
    on_gpu = cupy.asarray
    gpu_params = [(on_gpu(W), on_gpu(b)) for W, b in params]
    gpu_inputs, gpu_onehot = on_gpu(inputs), on_gpu(onehot)
    fg = fgrad.value_and_grad(bench_w3_mlp.loss_fn(fnp))

    value, grads = fg(gpu_params, gpu_inputs, gpu_onehot)
    m_value, m_grads = bench_w3_mlp.manual_value_and_grad(params, inputs, onehot)
    if not np.allclose(cupy.asnumpy(value), m_value, rtol=1e-9) or not all(
        np.allclose(cupy.asnumpy(a), b, rtol=1e-6, atol=1e-12)
        for ga, gb in zip(grads, m_grads) for a, b in zip(ga, gb)
    ):
        raise SystemExit("GPU check: W3's gradient on CuPy differs from the hand-written NumPy one")
    contenders = {
        "hand-written numpy": lambda: bench_w3_mlp.manual_value_and_grad(params, inputs, onehot),
        "fgrad (numpy)": lambda: fg(params, inputs, onehot),
        "fgrad (cupy)": synchronised(cupy, lambda: fg(gpu_params, gpu_inputs, gpu_onehot)),
    }
    results = interleaved(contenders, repeats=30, number=2, baseline="hand-written numpy")
    report("W3 MLP on CuPy: time / hand-written numpy (CPU)", results, "hand-written numpy")


def elementwise(cupy: Any) -> None:
    x = np.random.default_rng(0).standard_normal(bench_elementwise.SIZE)
    gpu_x = cupy.asarray(x)
    fg = fgrad.grad(bench_elementwise.loss_fn(fnp))
    if not np.allclose(cupy.asnumpy(fg(gpu_x)), bench_elementwise.manual_grad(x), rtol=1e-9, atol=1e-12):
        raise SystemExit("GPU check: the elementwise gradient on CuPy differs from the hand-written one")
    contenders = {
        "hand-written numpy": lambda: bench_elementwise.manual_grad(x),
        "fgrad (numpy)": lambda: fg(x),
        "fgrad (cupy)": synchronised(cupy, lambda: fg(gpu_x)),
    }
    results = interleaved(contenders, repeats=30, number=2, baseline="hand-written numpy")
    report(f"Elementwise {bench_elementwise.SIZE:.0e} grad on CuPy: time / hand-written numpy (CPU)",
           results, "hand-written numpy")


def main() -> None:
    print("=" * 72)
    print("GPU check: W3 and the 1e6-element gradient on CuPy arrays")
    cupy = cuda_cupy()
    if cupy is None:
        return
    for workload in (w3, elementwise):
        try:
            workload(cupy)
        except (NotImplementedError, TypeError) as e:  # a missing rule; an operator CuPy refuses
            print(f"\n{workload.__name__} skipped: fgrad cannot compute it on CuPy: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
