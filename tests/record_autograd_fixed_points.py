"""Records what HIPS autograd's examples/fixed_points.py computes (its `sqrt` as a fixed
point of an iteration, with autograd.misc.fixed_points.fixed_point, and that function's first
and second derivatives) in tests/data/autograd_fixed_points.json, which
tests/test_eager_calls.py compares fgrad's port of the example against without autograd
installed.

Run from the repository's root, with autograd installed:

    python -m tests.record_autograd_fixed_points

and commit the file. The example's settings are kept (guess 10, tolerance 1e-4), for both of
its iterations and a few values of `a`; JSON writes floats by repr, so they read back exactly.
"""

import json
from pathlib import Path

ITERATIONS = ("newton", "grad_descent")
POINTS = (2.0, 0.5, 9.0)
GUESS, TOL = 10.0, 1e-4
PATH = Path(__file__).parent / "data" / "autograd_fixed_points.json"


def record():
    """The recording, as the JSON object the file holds."""
    from importlib.metadata import version

    import autograd.numpy as np
    from autograd import grad
    from autograd.misc.fixed_points import fixed_point

    def newton_sqrt_iter(a):
        return lambda x: 0.5 * (x + a / x)

    def grad_descent_sqrt_iter(a):
        return lambda x: x - 0.05 * (x**2 - a)

    def distance(x, y):
        return np.abs(x - y)

    iterations = {"newton": newton_sqrt_iter, "grad_descent": grad_descent_sqrt_iter}
    out = {"autograd_version": version("autograd"), "guess": GUESS, "tol": TOL, "cases": {}}
    for name in ITERATIONS:
        def sqrt(a, it=iterations[name]):
            return fixed_point(it, a, GUESS, distance, TOL)

        out["cases"][name] = [
            {"a": a, "sqrt": float(sqrt(a)), "grad": float(grad(sqrt)(a)), "grad_grad": float(grad(grad(sqrt))(a))}
            for a in POINTS
        ]
    return out


if __name__ == "__main__":
    PATH.write_text(json.dumps(record(), indent=1) + "\n")
    print(f"wrote {PATH}")
