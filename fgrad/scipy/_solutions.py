"""Solutions that may not be ones: the primitives through which fgrad.scipy's
solvers (optimize, sparse.linalg) hand out a solution whose derivative is
only right if the solver converged.

* `scipy_solution` (x, success) is x unchanged; its tangent goes through
  `scipy_solution_tangent`.
* `scipy_solution_tangent` (t, success) is t unchanged, and warns
  (RuntimeWarning) when it is computed and success is False: a derivative
  taken at a point that is not a solution is the derivative of nothing.
  It is linear in t, so it survives reverse mode (its transpose is itself).

Whether the solver converged is known only when the computation runs (under
jit, vmap: at run time), so this warns rather than raises. The message is a
parameter, `Convergence`, printed by the function's name in jaxprs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.avals import ShapedArray
from ..core.libraries import on_every_namespace
from ..core.rules import UndefinedPrimal, batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive
from ..primitives import batching

__all__ = ["Convergence", "solution_p", "tangent_check_p"]


@dataclass(frozen=True)
class Convergence:
    """What warns (`name`, a public function) and what it says (`message`)."""

    name: str
    message: str

    def __repr__(self) -> str:
        return self.name


def _solution_aval(x: ShapedArray, success: ShapedArray, *, check: Convergence) -> ShapedArray:
    return x


solution_p = Primitive("scipy_solution", on_every_namespace(lambda x, success, *, check: x), _solution_aval)


def _tangent_check_impl(t: Any, success: Any, *, check: Convergence) -> Any:
    if not np.all(success):
        warnings.warn(f"{check.name}: {check.message}", RuntimeWarning, stacklevel=2)
    return t


tangent_check_p = Primitive("scipy_solution_tangent", on_every_namespace(_tangent_check_impl), _solution_aval)


def _solution_jvp(primals: list[Any], tangents: list[Any], *, check: Convergence) -> tuple[Any, Any]:
    x, success = primals
    t = tangents[0]
    return solution_p.bind(x, success, check=check), None if t is None else tangent_check_p.bind(
        t, success, check=check)


def _tangent_check_jvp(primals: list[Any], tangents: list[Any], *, check: Convergence) -> tuple[Any, Any]:
    t, success = primals
    dt = tangents[0]
    return tangent_check_p.bind(t, success, check=check), None if dt is None else tangent_check_p.bind(
        dt, success, check=check)


def _tangent_check_transpose(ct: Any, t: Any, success: Any, *, check: Convergence) -> list[Any]:
    if type(success) is UndefinedPrimal:
        raise TypeError("scipy_solution_tangent is linear in its first operand only")
    return [tangent_check_p.bind(ct, success, check=check), None]


def _pass_through_batch(prim: Primitive) -> Callable[..., tuple[Any, Any]]:
    def rule(args: list[Any], dims: list[Any], **params: Any) -> tuple[Any, Any]:
        x, success = args
        if dims[0] is None and dims[1] is not None:  # success of each example, x of all: x for each
            x = batching.with_batch_axis(x, None, batching.batch_size(args, dims))
            return prim.bind(x, success, **params), 0
        return prim.bind(x, success, **params), dims[0]

    return rule


jvp_rules[solution_p] = _solution_jvp
jvp_rules[tangent_check_p] = _tangent_check_jvp
transpose_rules[tangent_check_p] = _tangent_check_transpose
batch_rules[solution_p] = _pass_through_batch(solution_p)
batch_rules[tangent_check_p] = _pass_through_batch(tangent_check_p)
# SciPy solves on NumPy's arrays: another library's raises NotImplementedError (no rule for it).
