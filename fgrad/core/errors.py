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
]


class ConcretizationTypeError(TypeError):
    """Python needed a concrete value (`if`, `bool`, `int`, `float`) from an abstract one."""


class UnexpectedTracerError(TypeError):
    """A tracer was used after the transform that created it had returned."""


class TracerArrayConversionError(TypeError):
    """A traced value was handed to NumPy as a plain array, which would drop its derivative."""


def missing_rule_error(primitive_name: str, transform: str) -> NotImplementedError:
    return NotImplementedError(
        f"The primitive `{primitive_name}` has no {transform} rule, so it cannot be used under "
        f"{transform}. Register one in the primitive's module (next to its definition), or "
        "rewrite the function with operations that support this transform."
    )
