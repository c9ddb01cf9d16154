"""The public API: transformations of functions of pytrees."""

from .jit import jit
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
from .vectorize import hessian, jacfwd, jacobian, jacrev, vmap

__all__ = [
    "jit", "vmap", "jacfwd", "jacrev", "jacobian", "hessian",
    "ShapeDtypeStruct", "grad", "jvp", "linearize", "make_jaxpr", "stop_gradient",
    "value_and_grad", "vjp",
]
