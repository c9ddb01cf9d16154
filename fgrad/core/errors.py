"""The exceptions fgrad raises for misuse of traced values.

Each is a subclass of the built-in type a Python user would expect (TypeError),
so `except TypeError` keeps working; the subclass names the precise problem.
"""

from __future__ import annotations

__all__ = [
    "ConcretizationTypeError",
    "UnexpectedTracerError",
    "TracerArrayConversionError",
    "missing_rule_error",
    "derivative_dropped_error",
    "scipy_hint",
]

import sys
from typing import Any


class ConcretizationTypeError(TypeError):
    """Python needed a concrete value (`if`, `bool`, `int`, `float`) from an abstract one,
    or from one whose derivative it would drop (TracerArrayConversionError)."""

    trace: Any = None  # the trace whose tracer it was, where that is known (vmap's)


class UnexpectedTracerError(TypeError):
    """A tracer was used after the transform that created it had returned."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value was turned into a NumPy array or a Python or NumPy number
    (`numpy.asarray`, `float()`, `.item()`, assignment into a NumPy array), which
    would drop what its transform tracks. A ConcretizationTypeError too: a
    concrete value was asked for and cannot be given."""


def derivative_dropped_error(conversion: str, aval: str, transform: str) -> TracerArrayConversionError:
    """The error for `conversion` of a value (of type `aval`) that carries a
    derivative of `transform`: the plain number it would give has none."""
    return TracerArrayConversionError(
        f"{conversion} of a traced value ({aval}, differentiated by `{transform}`) would silently "
        f"drop its derivative: the result is a plain NumPy or Python value, which `{transform}` cannot "
        "follow, so the derivative through it would come out as zero. Keep the value in fgrad.numpy "
        "operations (import fgrad.numpy as fnp) instead. If a constant is really meant, convert "
        "fgrad.stop_gradient(x), which has no derivative. To put the value into a NumPy array y, "
        "write y = fnp.at(y)[i].set(v): NumPy's own y[i] = v converts v to a plain number."
    )


def missing_rule_error(primitive_name: str, rule: str, needed_by: str) -> NotImplementedError:
    """The error for a primitive without the `rule` (jvp, transpose, batching)
    that the transform `needed_by` (e.g. "grad of f") applies to it."""
    return NotImplementedError(
        f"The primitive `{primitive_name}` has no {rule} rule, which `{needed_by}` needs, so it cannot "
        f"be used there. Register one in the primitive's module (next to its definition), or "
        "rewrite the function with operations that support this transform."
    )


def scipy_hint() -> str:
    """Advice for a traced value that SciPy's own code met (scipy.stats.norm.logpdf(x)
    converting it, a scipy.special ufunc called on it): the fgrad.scipy module of the same
    name computes SciPy's values with derivatives. Empty when no SciPy code is running."""
    frame = sys._getframe(1)
    function = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("scipy."):
            function = frame.f_code.co_name  # the outermost SciPy function is the one the user called
            public = ".".join(part for part in module.split(".")[:2])
        frame = frame.f_back  # type: ignore[assignment]
    if function is None:
        return ""
    return (f"{public}'s {function} was called on a traced value, and SciPy computes on plain arrays. "
            f"Use fgrad.{public} instead (import fgrad.{public}), which has SciPy's names and values and "
            "fgrad's derivatives.")
