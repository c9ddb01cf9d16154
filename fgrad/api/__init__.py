"""The public API: transformations of functions of pytrees."""

from .devices import (
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    local_devices,
)
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
    "value_and_grad", "vjp", "device_put", "device_get", "devices", "local_devices", "device_count",
    "default_backend", "block_until_ready",
]
