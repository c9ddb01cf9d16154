"""The public API: transformations of functions of pytrees."""

from .transformations import (
    ShapeDtypeStruct,
    grad,
    jvp,
    linearize,
    make_jaxpr,
    stop_gradient,
    value_and_grad,
    vjp,
)

__all__ = [
    "ShapeDtypeStruct", "grad", "jvp", "linearize", "make_jaxpr", "stop_gradient",
    "value_and_grad", "vjp",
]
